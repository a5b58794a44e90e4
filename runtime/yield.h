/*
 * Random-yield points. In an ACCEL_RANDOM_YIELD build each point yields the
 * CPU (or spins a little) at random, so that a 2-core machine explores
 * interleavings of the lock-free steps it would otherwise rarely hit
 * (between reserve and publish, between state transitions). In a normal
 * build the points compile to nothing.
 *
 * Replay: each thread draws from its own stream, derived from
 * ACCEL_YIELD_SEED and a thread index that does not depend on the run
 * (never an address, which ASLR moves): workers are numbered by the
 * runtime, test threads may number themselves, any other thread gets the
 * next number in the order of its first yield point.
 */
#ifndef ACCEL_RUNTIME_YIELD_H
#define ACCEL_RUNTIME_YIELD_H

#include <stdint.h>

/* Names the calling thread's stream (before its first yield point; a no-op
 * in builds without random yields). Indexes below 2^32 are the caller's to
 * choose; workers use 2^32 + their index. */
void accel__yield_thread_index(uint64_t index);

#ifdef ACCEL_RANDOM_YIELD
void accel__yield_point(void);
#define ACCEL__YIELD_POINT() accel__yield_point()
#else
#define ACCEL__YIELD_POINT() ((void)0)
#endif

#endif
