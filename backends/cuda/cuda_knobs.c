/* White-box measurement knobs of the CUDA backend (cuda_internal.h), for
 * the tests and bench/gpu_check.c, which link the backend statically. */
#include "cuda_internal.h"

#include "backend_registry.h"

static accel__cuda_rt *cuda_rt_of(accel_runtime *rt)
{
    return rt ? accel__backend_registry_state(rt, ACCEL_BACKEND_CUDA) : NULL;
}

int accel__cuda_set_priorities(accel_runtime *rt, int on)
{
    accel__cuda_rt *c = cuda_rt_of(rt);
    if (!c)
        return ACCEL_ENOBACKEND;
    atomic_store_explicit(&c->priorities, !!on, memory_order_relaxed);
    return ACCEL_OK;
}

int accel__cuda_set_inflight_cap(accel_runtime *rt, uint32_t cap)
{
    accel__cuda_rt *c = cuda_rt_of(rt);
    if (!c)
        return ACCEL_ENOBACKEND;
    if (cap < 1)
        cap = 1;
    if (cap > ACCEL__CUDA_INFLIGHT_MAX)
        cap = ACCEL__CUDA_INFLIGHT_MAX;
    atomic_store_explicit(&c->inflight_cap, cap, memory_order_relaxed);
    return ACCEL_OK;
}
