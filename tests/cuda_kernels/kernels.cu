#include "kernels.h"

#include <cuda_runtime.h>

__global__ void k_empty(void) {}

__global__ void k_log_append(unsigned *count, uint32_t *log, unsigned cap,
                             uint32_t value)
{
    unsigned i = atomicAdd(count, 1u);
    if (i < cap)
        ((volatile uint32_t *)log)[i] = value;
    __threadfence_system(); /* visible to the host before the event fires */
}

__device__ static uint64_t now_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void k_log_append_batch(unsigned *count, uint32_t *log,
                                   unsigned cap, uint32_t first, unsigned n,
                                   unsigned *launches, const unsigned *gate)
{
    if (gate) {
        uint64_t t0 = now_ns();
        while (!*(volatile const unsigned *)gate &&
               now_ns() - t0 < 15000000000ull)
            ;
    }
    atomicAdd(launches, 1u);
    for (unsigned k = 0; k < n; k++) {
        unsigned i = atomicAdd(count, 1u);
        if (i < cap)
            ((volatile uint32_t *)log)[i] = first + k;
    }
    __threadfence_system(); /* visible to the host before the event fires */
}

__global__ void k_spin(uint64_t ns)
{
    uint64_t t0 = now_ns();
    while (now_ns() - t0 < ns)
        ;
}

__global__ void k_fault(void)
{
    *(volatile int *)(uintptr_t)0x10 = 1;
}

extern "C" int accel_k_empty(void *stream)
{
    k_empty<<<1, 1, 0, (cudaStream_t)stream>>>();
    return (int)cudaGetLastError();
}

extern "C" int accel_k_log_append(void *stream, unsigned *count,
                                  uint32_t *log, unsigned cap, uint32_t value)
{
    k_log_append<<<1, 1, 0, (cudaStream_t)stream>>>(count, log, cap, value);
    return (int)cudaGetLastError();
}

extern "C" int accel_k_log_append_batch(void *stream, unsigned *count,
                                        uint32_t *log, unsigned cap,
                                        uint32_t first, unsigned n,
                                        unsigned *launches,
                                        const unsigned *gate)
{
    k_log_append_batch<<<1, 1, 0, (cudaStream_t)stream>>>(count, log, cap,
                                                          first, n, launches,
                                                          gate);
    return (int)cudaGetLastError();
}

extern "C" int accel_k_bad_launch(void *stream)
{
    k_empty<<<0, 1, 0, (cudaStream_t)stream>>>();
    return (int)cudaGetLastError();
}

extern "C" int accel_k_spin(void *stream, unsigned blocks, unsigned threads,
                            uint64_t ns)
{
    k_spin<<<blocks, threads, 0, (cudaStream_t)stream>>>(ns);
    return (int)cudaGetLastError();
}

extern "C" int accel_k_fault(void *stream)
{
    k_fault<<<1, 1, 0, (cudaStream_t)stream>>>();
    return (int)cudaGetLastError();
}

extern "C" unsigned accel_k_spin_resident_blocks(unsigned threads)
{
    int per_sm = 0, sms = 0, dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k_spin,
                                                      (int)threads, 0) !=
            cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) !=
            cudaSuccess)
        return 0;
    return (unsigned)(per_sm * sms);
}
