/* The public CUDA accessors (include/accel/cuda.h) and the white-box
 * measurement knobs. */
#include "accel/cuda.h"

#include "../../runtime/runtime.h"
#include "../../runtime/session.h"
#include "cuda_internal.h"

static accel__cuda_session *cuda_state_of(accel_ctx *ctx)
{
    if (!ctx || !ctx->session || ctx->session->bops != &accel__backend_cuda)
        return NULL;
    return ctx->session->bstate;
}

void *accel_ctx_cuda_stream(accel_ctx *ctx)
{
    accel__cuda_session *cs = cuda_state_of(ctx);
    return cs ? (void *)cs->stream : NULL;
}

int accel_ctx_cuda_device(accel_ctx *ctx)
{
    accel__cuda_session *cs = cuda_state_of(ctx);
    return cs ? cs->device : -1;
}

size_t accel_cuda_alloc_granularity(void)
{
    return ACCEL_CUDA_ALLOC_GRANULARITY;
}

int accel_runtime_cuda_status(accel_runtime *rt)
{
    if (!rt)
        return ACCEL_EINVAL;
    if (accel__cuda_failed())
        return ACCEL_EBACKEND;
    return rt->cuda_probe == ACCEL_OK && rt->cuda_state ? ACCEL_OK
                                                        : ACCEL_ENOBACKEND;
}

int accel__cuda_set_priorities(accel_runtime *rt, int on)
{
    if (!rt || !rt->cuda_state)
        return ACCEL_ENOBACKEND;
    accel__cuda_rt *c = rt->cuda_state;
    atomic_store_explicit(&c->priorities, !!on, memory_order_relaxed);
    return ACCEL_OK;
}

int accel__cuda_set_inflight_cap(accel_runtime *rt, uint32_t cap)
{
    if (!rt || !rt->cuda_state)
        return ACCEL_ENOBACKEND;
    if (cap < 1)
        cap = 1;
    if (cap > ACCEL__CUDA_INFLIGHT_MAX)
        cap = ACCEL__CUDA_INFLIGHT_MAX;
    accel__cuda_rt *c = rt->cuda_state;
    atomic_store_explicit(&c->inflight_cap, cap, memory_order_relaxed);
    return ACCEL_OK;
}
