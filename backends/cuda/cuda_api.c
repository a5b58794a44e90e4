/*
 * The public CUDA accessors (include/accel/cuda.h). Always part of
 * libaccel and free of CUDA headers: they ask the runtime for the running
 * op's CUDA session state through the backend's query() (built in or
 * loaded as a module), so a CPU-only library or program links no CUDA and
 * gets NULL / -1 / ACCEL_ENOBACKEND.
 */
#include "accel/cuda.h"

#include "backend_registry.h"

void *accel_ctx_cuda_stream(accel_ctx *ctx)
{
    void *stream = NULL;
    if (accel__ctx_backend_query(ctx, ACCEL_BACKEND_CUDA, ACCEL__Q_STREAM,
                                 &stream) != ACCEL_OK)
        return NULL;
    return stream;
}

int accel_ctx_cuda_device(accel_ctx *ctx)
{
    int device = -1;
    if (accel__ctx_backend_query(ctx, ACCEL_BACKEND_CUDA, ACCEL__Q_DEVICE,
                                 &device) != ACCEL_OK)
        return -1;
    return device;
}

size_t accel_cuda_alloc_granularity(void)
{
    return ACCEL_CUDA_ALLOC_GRANULARITY;
}

int accel_runtime_cuda_status(accel_runtime *rt)
{
    if (!rt)
        return ACCEL_EINVAL;
    return accel__backend_registry_status(rt, ACCEL_BACKEND_CUDA);
}
