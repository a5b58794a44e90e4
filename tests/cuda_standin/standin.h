/*
 * The stand-in CUDA runtime (tests only; never linked outside tests/).
 *
 * standin.c implements the CUDA runtime calls the backend and the tests
 * use, over an emulated device: one thread that runs the queued work of a
 * randomly chosen ready stream, honouring only what CUDA promises (each
 * stream's order, event waits) and nothing it does not (no priority, no
 * fairness). It aborts, naming the call, on the use of a destroyed stream,
 * event or pool, on a double or unknown free, on a call from a thread that
 * never set the device and on an object used while another device is
 * current, and on any call in a fork child of the process that initialised
 * it (CUDA cannot be used there). At exit it reports what was never
 * destroyed or freed (exit 3), unless a sticky fault lost the context. It proves the backend's logic
 * against the API's contract, not anything about real CUDA.
 *
 * Environment: ACCEL_STANDIN_DEVICES (1..4, default 1),
 * ACCEL_STANDIN_SEED (the device's choices; default from the clock, printed
 * at the first call so a failing run can be replayed).
 */
#ifndef ACCEL_TESTS_STANDIN_H
#define ACCEL_TESTS_STANDIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Device work of a test: fn(arg) runs on the emulated device, in stream
 * order, once *gate is non-zero (gate NULL: at once). */
int accel_standin_launch(void *stream, void (*fn)(void *), void *arg,
                         const _Atomic int *gate);

/* The next n calls named `call` (e.g. "cudaStreamCreateWithPriority")
 * fail with error e; n = 0 disarms. One call name at a time. */
void accel_standin_fail_next(const char *call, int n, int e);

/* maxSize of the last pool created (bytes; 0: none). */
size_t accel_standin_last_pool_max(void);
/* Live objects now: streams, events, pools, allocations. */
void accel_standin_live(long *streams, long *events, long *pools,
                        long *allocs);
/* Total device memory the stand-in reports (cudaMemGetInfo). */
size_t accel_standin_total_mem(void);
/* Kernel launches queued so far (the test kernels and
 * accel_standin_launch; not copies, sets, frees or event work). */
long accel_standin_launches(void);
/* Wakes the device to re-check gates (call after opening one). */
void accel_standin_kick(void);

#ifdef __cplusplus
}
#endif
#endif
