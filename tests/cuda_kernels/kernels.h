/*
 * Tiny kernels for the CUDA tests and scripts/gpu-check.sh (never part of
 * the library). C interface; streams as void * (cudaStream_t). Each launcher
 * returns the cudaError_t of the launch as an int (0: launched).
 */
#ifndef ACCEL_CUDA_TESTING_KERNELS_H
#define ACCEL_CUDA_TESTING_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* <<<1,1>>>, does nothing. */
int accel_k_empty(void *stream);
/* <<<1,1>>>: log[atomicAdd(count, 1)] = value (dropped past cap). count and
 * log may be mapped host memory. */
int accel_k_log_append(void *stream, unsigned *count, uint32_t *log,
                       unsigned cap, uint32_t value);
/* <<<1,1>>>, one launch for a batch: waits until *gate != 0 (gate NULL:
 * at once; gives up after about 15 s), adds 1 to *launches, then appends
 * first, first + 1, ..., first + n - 1 to log as accel_k_log_append does.
 * gate and launches may be mapped host memory. */
int accel_k_log_append_batch(void *stream, unsigned *count, uint32_t *log,
                             unsigned cap, uint32_t first, unsigned n,
                             unsigned *launches, const unsigned *gate);
/* A launch that fails at once, leaving the context usable: an empty
 * kernel on a grid of 0 blocks (cudaErrorInvalidConfiguration). */
int accel_k_bad_launch(void *stream);
/* blocks x threads, each block busy for about ns nanoseconds (globaltimer). */
int accel_k_spin(void *stream, unsigned blocks, unsigned threads, uint64_t ns);
/* Writes to an invalid address: a sticky cudaErrorIllegalAddress. */
int accel_k_fault(void *stream);
/* Blocks of `threads` the spin kernel keeps resident on the whole device. */
unsigned accel_k_spin_resident_blocks(unsigned threads);

#ifdef __cplusplus
}
#endif
#endif
