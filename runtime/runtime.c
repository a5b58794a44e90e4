/*
 * Runtime lifecycle: create, destroy, the process-wide default runtime.
 * Create and destroy are cold paths and may take the list mutex.
 */

#include "defaults.h"
#include "runtime.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abi.h"
#include "alloc.h"
#include "batch.h"
#include "cpu_limits.h"
#include "futex.h"
#include "park.h"
#include "waiters.h"
#include "rcu.h"
#include "session.h"
#include "table.h"
#include "worker.h"

static void runtime_free(accel_runtime *rt)
{
    accel__table_destroy(rt->table);
    accel__sched_destroy(rt->sched);
    accel__backends_fini(rt->backends);
    pthread_mutex_destroy(&rt->list_lock);
    pthread_mutex_destroy(&rt->table_lock);
    accel__arena_fini(&rt->arena);
    accel__host_free(rt);
    accel__compensate_fini(rt);
    accel__free(rt->worker_cpus);
    accel__free(rt->workers);
    accel__free(rt);
}

int accel_runtime_create(const accel_runtime_config *cfg, accel_runtime **out)
{
    if (!out)
        return ACCEL_EINVAL;
    accel_runtime_config c = {0};
    /* the caller's layout, read by its size (abi.h) */
    if (cfg && accel__config_copy(&c, sizeof(c), cfg, cfg->struct_size,
                                  ACCEL__BASE_SIZE(accel_runtime_config)) != 0)
        return ACCEL_EINVAL;
    if (c.workers > ACCEL__WORKERS_MAX)
        return ACCEL_EINVAL;
    if (c.worker_cpus_count && !c.worker_cpus)
        return ACCEL_EINVAL;
    if (!c.worker_cpus)
        c.worker_cpus_count = 0;
    if (c.worker_cpus_count &&
        (c.worker_cpus_count > ACCEL__WORKERS_MAX ||
         accel__cpus_allowed(c.worker_cpus, c.worker_cpus_count) != ACCEL_OK))
        return ACCEL_EINVAL;
    if (c.workers == 0)
        c.workers = c.worker_cpus_count ? c.worker_cpus_count
                                        : accel__default_workers();
    if (c.workers > ACCEL__WORKERS_MAX)
        c.workers = ACCEL__WORKERS_MAX;
    if (c.short_lane_workers >= c.workers && c.short_lane_workers != 0)
        return ACCEL_EINVAL;
    if (c.short_op_ns == 0)
        c.short_op_ns = ACCEL_DEFAULT_SHORT_OP_NS;
    if (c.quantum_ops == 0)
        c.quantum_ops = ACCEL_DEFAULT_QUANTUM_OPS;
    if (c.quantum_ns == 0)
        c.quantum_ns = ACCEL_DEFAULT_QUANTUM_NS;
    if (c.cuda_device < 0)
        return ACCEL_EINVAL;
    if (c.max_extra_workers > ACCEL__EXTRA_MAX)
        return ACCEL_EINVAL;
    /* A chain of ops each waiting on the next needs a thread per level:
     * a floor, so that small pools still nest to a useful depth. */
    if (c.max_extra_workers == 0)
        c.max_extra_workers = c.workers * 4 < ACCEL__EXTRA_DEFAULT_MIN
                                  ? ACCEL__EXTRA_DEFAULT_MIN
                                  : c.workers * 4;
    /* Host-driven workers: the host's wake callback, no threads to pin;
     * the callback only with them. */
    if (c.flags & ~ACCEL_RUNTIME_HOST_WORKERS)
        return ACCEL_EINVAL;
    if ((c.flags & ACCEL_RUNTIME_HOST_WORKERS)
            ? !c.host_wake || c.worker_cpus_count
            : c.host_wake != NULL || c.host_wake_arg != NULL ||
                  c.host_grow != NULL || c.host_cpus != 0)
        return ACCEL_EINVAL;

    accel__fence_init();
    accel__fork_init();
    accel__rcu_register();
    accel_runtime *rt = accel__calloc_aligned(64, sizeof(*rt));
    if (!rt)
        return ACCEL_ENOMEM;
    rt->cfg = c;
    accel__compensate_init(rt, c.max_extra_workers, c.block_detect_ns);
    /* The monitor disarms itself once it runs (compensate.c); with no
     * monitor (host-driven workers) the wake path never asks for it. */
    atomic_init(&rt->monitor_armed, 1);
    rt->fork_gen = accel__fork_generation();
    pthread_mutex_init(&rt->list_lock, NULL);
    pthread_mutex_init(&rt->table_lock, NULL);
    accel__arena_init(&rt->arena);
    rt->table_want = rt->table_buckets = ACCEL__TABLE_INIT_BUCKETS;
    CDS_INIT_LIST_HEAD(&rt->sessions);
    rt->workers = accel__calloc_aligned(
        64, ((size_t)c.workers + c.max_extra_workers) * sizeof(accel__worker));
    if (c.worker_cpus_count) {
        rt->worker_cpus = accel__calloc(c.worker_cpus_count, sizeof(unsigned));
        if (rt->worker_cpus)
            memcpy(rt->worker_cpus, c.worker_cpus,
                   c.worker_cpus_count * sizeof(unsigned));
        rt->cfg.worker_cpus = rt->worker_cpus;
    }
    rt->table = accel__table_create();
    accel__sched_config sc = {
        .workers = c.workers,
        .short_lane_workers = c.short_lane_workers,
        .short_op_ns = c.short_op_ns,
        .quantum_ops = c.quantum_ops,
        .quantum_ns = c.quantum_ns,
        .max_entities = ACCEL__SESSIONS_MAX,
        .restored = accel__park_restored,
        .restored_arg = rt,
    };
    if (!rt->workers || !rt->table ||
        (c.worker_cpus_count && !rt->worker_cpus) ||
        accel__sched_create(&sc, &rt->sched) != ACCEL_OK) {
        runtime_free(rt);
        return ACCEL_ENOMEM;
    }
    accel__backend_probe_args pa = {.device = c.cuda_device};
    accel__backends_probe(rt->backends, &pa);
    rt->nworkers = c.workers;
    if (((c.flags & ACCEL_RUNTIME_HOST_WORKERS) &&
         accel__host_create(rt) != ACCEL_OK) ||
        accel__worker_start(rt) != ACCEL_OK) {
        runtime_free(rt);
        return ACCEL_ENOMEM;
    }
    *out = rt;
    return ACCEL_OK;
}

/* The live session after `from` in the runtime's list (from NULL: the
 * first), with a reference taken, or NULL. A session whose refs already
 * dropped to 0 is being reclaimed and is skipped. Cold path: list lock. */
static accel_session *next_live_session(accel_runtime *rt, accel_session *from)
{
    accel_session *found = NULL;
    pthread_mutex_lock(&rt->list_lock); /* cold: runtime destroy */
    struct cds_list_head *pos = from ? from->rt_link.next : rt->sessions.next;
    /* Not cds_list_for_each_entry: its end test forms a session pointer
     * from the list head itself, a misaligned access UBSan rejects. */
    for (; pos != &rt->sessions; pos = pos->next) {
        accel_session *s = caa_container_of(pos, accel_session, rt_link);
        if (accel__session_tryref(s)) {
            found = s;
            break;
        }
    }
    pthread_mutex_unlock(&rt->list_lock);
    return found;
}

/* Calls fn on each live session of rt in list order, walking the list
 * with a reference on the current one (so it stays linked while fn waits
 * on it); returns whether any call returned true. */
static bool each_live_session(accel_runtime *rt, bool (*fn)(accel_session *s))
{
    bool any = false;
    accel_session *cur = NULL;
    for (;;) {
        accel_session *next = next_live_session(rt, cur);
        if (cur)
            accel__session_unref(cur);
        if (!next)
            return any;
        any |= fn(next);
        cur = next;
    }
}

/* A held session (a batch hold-back) goes back to the queue. */
static bool release_hold(accel_session *s)
{
    accel__batch_kick(s, ACCEL__BATCH_KICK_FORCE);
    return false;
}

/* Closes s, draining; true if it was still open. */
static bool close_draining(accel_session *s)
{
    bool open = !accel_session_is_closed(s);
    accel_session_close(s, ACCEL_CLOSE_DRAIN);
    return open;
}

int accel_runtime_destroy(accel_runtime *rt)
{
    if (!rt)
        return ACCEL_EINVAL;
    if (accel__fork_stale(rt->fork_gen))
        return ACCEL_ECLOSED; /* the parent's: its threads are not here */
    /* Only an op of this runtime would wait for itself (its session's
     * close waits for it). */
    if (accel__tls_current && accel__tls_current->rt == rt)
        return ACCEL_EDEADLK;
    /* Inside the host's own read-side section liburcu refuses the
     * rcu_barrier below and returns at once: the sessions' queued
     * reclamations would then run on a freed runtime. Refuse before
     * changing anything. */
    if (accel__rcu_read_ongoing())
        return ACCEL_EDEADLK;

    /* Host-driven: the host's workers have stopped (accel.h); run what
     * is still queued here, so the closes below find nothing to wait
     * for. Held sessions (a batch hold-back) go back to the queue first,
     * and `stopping` keeps any from being held again (batch.c,
     * hold_decide): no worker would come for them. The hold-back's timer
     * stops before that: a release of its in flight (its CAS won, the
     * enqueue to come) is then done, and the session queued, before the
     * look below, which would not find it held any more. */
    if (rt->cfg.flags & ACCEL_RUNTIME_HOST_WORKERS) {
        /* relaxed: read by hold_decide on this thread, or by a host
         * thread out of contract (the host stopped calling). */
        atomic_store_explicit(&rt->stopping, 1, memory_order_relaxed);
        accel__batch_timer_stop(rt);
        each_live_session(rt, release_hold);
        accel__worker_run_queued(rt);
    }

    /* Close every session. No allocation: destroy cannot fail half-way.
     * An op drained meanwhile may open a session, which is linked at the
     * head, behind the walk: walk again until a pass finds every session
     * already closed. */
    while (each_live_session(rt, close_draining))
        ;
    accel__block_begin(); /* inside an op of another runtime: joins */
    accel__worker_stop(rt);
    accel__batch_timer_stop(rt); /* no hold is left: every session closed
                                    (host-driven: stopped above) */
    accel__block_end();
    /* Every accepted op has completed and no worker runs: wait for the
     * reclamations already queued, then free what is left, handles or
     * not. */
    accel__rcu_barrier();
    pthread_mutex_lock(&rt->list_lock); /* cold: runtime destroy */
    while (rt->sessions.next != &rt->sessions) {
        accel_session *s =
            caa_container_of(rt->sessions.next, accel_session, rt_link);
        cds_list_del(&s->rt_link);
        rt->nsessions--;
        accel__session_free_now(s);
    }
    pthread_mutex_unlock(&rt->list_lock);
    runtime_free(rt);
    return ACCEL_OK;
}

/* The default runtime is never destroyed, not even at exit: exit handlers
 * run while other threads may still be calling into it (destroying it
 * there freed sessions under them). The process's exit reclaims it; it
 * stays reachable from default_rt, so leak checkers do not report it. */
static accel_runtime *default_rt;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void default_forget_in_child(void)
{
    /* The child is single-threaded here: plain resets are safe. A fresh
     * default runtime is created on first use in the child. */
    default_rt = NULL;
    default_once = (pthread_once_t)PTHREAD_ONCE_INIT;
}

static void default_create(void)
{
    accel__fork_set_child_hook(default_forget_in_child);
    if (accel_runtime_create(NULL, &default_rt) != ACCEL_OK)
        default_rt = NULL;
}


accel_runtime *accel_runtime_default(void)
{
    pthread_once(&default_once, default_create);
    return default_rt;
}
