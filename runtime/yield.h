/*
 * Random-yield points. In an ACCEL_RANDOM_YIELD build each point yields the
 * CPU (or spins a little) at random, so that a 2-core machine explores
 * interleavings of the lock-free steps it would otherwise rarely hit
 * (between reserve and publish, between state transitions). In a normal
 * build the points compile to nothing.
 */
#ifndef ACCEL_RUNTIME_YIELD_H
#define ACCEL_RUNTIME_YIELD_H

#ifdef ACCEL_RANDOM_YIELD
void accel__yield_point(void);
#define ACCEL__YIELD_POINT() accel__yield_point()
#else
#define ACCEL__YIELD_POINT() ((void)0)
#endif

#endif
