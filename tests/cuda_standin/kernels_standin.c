/*
 * tests/cuda_kernels/kernels.h over the stand-in device (standin.c). Like
 * kernels.cu, each launcher reports cudaGetLastError() as its result, so a
 * stale error left by the backend shows up in the op's status.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "kernels.h"
#include "standin.h"

int accel__standin_launch_owned(void *stream, void (*fn)(void *), void *arg);
int accel__standin_fault(void *stream);
int accel__standin_launch_owned_gated(void *stream, void (*fn)(void *),
                                      void *arg, const _Atomic int *gate);
int accel__standin_bad_launch(void *stream);

static void k_empty(void *arg)
{
    (void)arg;
}

int accel_k_empty(void *stream)
{
    (void)accel_standin_launch(stream, k_empty, NULL, NULL);
    return (int)cudaGetLastError();
}

typedef struct log_args {
    unsigned *count;
    uint32_t *log;
    unsigned cap;
    uint32_t value;
} log_args;

static void k_log_append(void *arg)
{
    log_args *a = arg;
    /* relaxed: only the device thread writes the log, and the host reads
     * it in done callbacks after the op's event fired; the stand-in's
     * mutex (the event fires and is queried under it) orders this write
     * before them. Atomic as atomicAdd is in kernels.cu. */
    unsigned i = atomic_fetch_add_explicit((_Atomic unsigned *)a->count, 1,
                                           memory_order_relaxed);
    if (i < a->cap)
        a->log[i] = a->value;
}

int accel_k_log_append(void *stream, unsigned *count, uint32_t *log,
                       unsigned cap, uint32_t value)
{
    log_args *a = malloc(sizeof(*a));
    if (!a)
        return (int)cudaErrorMemoryAllocation;
    *a = (log_args){count, log, cap, value};
    (void)accel__standin_launch_owned(stream, k_log_append, a);
    return (int)cudaGetLastError();
}

typedef struct batch_args {
    unsigned *count, *launches;
    uint32_t *log;
    unsigned cap, n;
    uint32_t first;
} batch_args;

static void k_log_append_batch(void *arg)
{
    batch_args *a = arg;
    /* relaxed: as k_log_append */
    atomic_fetch_add_explicit((_Atomic unsigned *)a->launches, 1,
                              memory_order_relaxed);
    for (unsigned k = 0; k < a->n; k++) {
        unsigned i = atomic_fetch_add_explicit((_Atomic unsigned *)a->count,
                                               1, memory_order_relaxed);
        if (i < a->cap)
            a->log[i] = a->first + k;
    }
}

int accel_k_log_append_batch(void *stream, unsigned *count, uint32_t *log,
                             unsigned cap, uint32_t first, unsigned n,
                             unsigned *launches, const unsigned *gate)
{
    batch_args *a = malloc(sizeof(*a));
    if (!a)
        return (int)cudaErrorMemoryAllocation;
    *a = (batch_args){count, launches, log, cap, n, first};
    /* The gate: the device's [G2] acquire load; the test opens it with a
     * release store. */
    (void)accel__standin_launch_owned_gated(stream, k_log_append_batch, a,
                                            (const _Atomic int *)gate);
    return (int)cudaGetLastError();
}

int accel_k_bad_launch(void *stream)
{
    (void)accel__standin_bad_launch(stream);
    return (int)cudaGetLastError();
}

static void k_spin(void *arg)
{
    uint64_t ns = *(uint64_t *)arg;
    struct timespec ts = {(time_t)(ns / 1000000000u),
                          (long)(ns % 1000000000u)};
    nanosleep(&ts, NULL);
}

int accel_k_spin(void *stream, unsigned blocks, unsigned threads, uint64_t ns)
{
    (void)blocks, (void)threads;
    uint64_t *a = malloc(sizeof(*a));
    if (!a)
        return (int)cudaErrorMemoryAllocation;
    *a = ns;
    (void)accel__standin_launch_owned(stream, k_spin, a);
    return (int)cudaGetLastError();
}

int accel_k_fault(void *stream)
{
    (void)accel__standin_fault(stream);
    return (int)cudaGetLastError();
}

unsigned accel_k_spin_resident_blocks(unsigned threads)
{
    (void)threads;
    return 1;
}
