/*
 * Runtime-level counters: the resolved worker count and the per-worker
 * pick/visit/park counters summed (each written only by its worker, see
 * worker_types.h; read here relaxed, so the sum is approximate while
 * workers run).
 */
#include "runtime_types.h"

#include <string.h>

#include "fork.h"

unsigned accel_runtime_workers(const accel_runtime *rt)
{
    return rt ? rt->nworkers : 0;
}

/* Fields are only ever appended; 0.1's layout ends at parks. */
#define RUNTIME_STATS_SIZE_0_1                                                 \
    (offsetof(accel_runtime_stats, parks) + sizeof(uint64_t))

int accel_runtime_get_stats(accel_runtime *rt, accel_runtime_stats *out,
                            size_t size)
{
    if (!rt || !out || size < RUNTIME_STATS_SIZE_0_1)
        return ACCEL_EINVAL;
    if (accel__fork_stale(rt->fork_gen))
        return ACCEL_ECLOSED; /* the parent's list lock may be held (fork.c) */
    accel_runtime_stats st = {0};
    st.workers = rt->nworkers;
    st.short_lane_workers = rt->cfg.short_lane_workers;
    /* relaxed: a gauge; the parking protocol orders itself (park.c). */
    /* idle_*: parked workers in the low 32 bits (runtime_types.h). */
    st.parked =
        (uint32_t)atomic_load_explicit(&rt->idle_workers,
                                       memory_order_relaxed) +
        (uint32_t)atomic_load_explicit(&rt->idle_short, memory_order_relaxed);
    /* extra workers too: a retired extra's counters stay in its entry */
    for (unsigned i = 0; i < rt->nworkers + rt->comp.extra_max; i++) {
        accel__worker *w = &rt->workers[i];
        st.picks += atomic_load_explicit(&w->picks, memory_order_relaxed);
        st.visits += atomic_load_explicit(&w->visits, memory_order_relaxed);
        st.parks += atomic_load_explicit(&w->parks, memory_order_relaxed);
    }
    /* relaxed: gauges and counters (compensate.c). */
    st.blocked = atomic_load_explicit(&rt->blocked, memory_order_relaxed);
    st.extra_workers =
        atomic_load_explicit(&rt->extra_active, memory_order_relaxed);
    st.extra_started =
        atomic_load_explicit(&rt->comp.started, memory_order_relaxed);
    st.blocked_detected =
        atomic_load_explicit(&rt->comp.detected, memory_order_relaxed);
    st.blocked_presumed =
        atomic_load_explicit(&rt->comp.presumed, memory_order_relaxed);
    pthread_mutex_lock(&rt->list_lock); /* cold path: stats */
    st.sessions = (uint32_t)rt->nsessions;
    pthread_mutex_unlock(&rt->list_lock);
    memcpy(out, &st, size < sizeof(st) ? size : sizeof(st));
    return ACCEL_OK;
}
