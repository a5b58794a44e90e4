/*
 * Session lifecycle: open, lookup, close, release, reclamation, getters.
 * See session.h for the state word and the lifetime rules.
 *
 * Close protocol (the submit-vs-close handshake):
 *   1. fetch_or CLOSED into the ring tail. LP of close: a reservation CAS
 *      ordered before it in tail's modification order was accepted, any
 *      after it fails with ACCEL_ECLOSED; the value below the bit is the
 *      final count of accepted ops.
 *   2. wakes producers waiting for room. (Before step 1 every closer
 *      unpublishes the id from the table, so that it is free for reuse
 *      as soon as close is seen to have begun.)
 *   3. every closer waits until `finished` reaches that count (the worker's
 *      [R5] release of finished pairs with [A5] here), unless it runs
 *      inside one of the session's own ops.
 */

#include "session.h"

#include <limits.h>
#include <string.h>

#include "abi.h"
#include "alloc.h"
#include "clock.h"
#include "futex.h"
#include "rcu.h"
#include "runtime.h"
#include "table.h"
#include "trace.h"

_Thread_local accel_session *accel__tls_current;
_Atomic uint64_t accel__sessions_reclaimed;

/* Session serial numbers, from 1: a ticket names its session by pointer
 * and serial, so a ticket whose session's memory now holds another
 * session does not match it. */
static _Atomic uint64_t session_serials = 1;

static uint32_t round_pow2(uint32_t v)
{
    uint32_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

static int check_id(const char *id, size_t *len)
{
    if (!id)
        return ACCEL_EINVAL;
    size_t n = strnlen(id, ACCEL_ID_MAX + 1);
    if (n == 0 || n > ACCEL_ID_MAX)
        return ACCEL_EINVAL;
    *len = n;
    return ACCEL_OK;
}

static void session_reclaim(struct rcu_head *head)
{
    accel_session *s = caa_container_of(head, accel_session, rcu);
    accel__rcu_reclaim_begin();
    accel__session_free_now(s);
    /* relaxed: a statistic. */
    atomic_fetch_add_explicit(&accel__sessions_reclaimed, 1,
                              memory_order_relaxed);
    accel__rcu_reclaim_end();
}

void accel__session_free_now(accel_session *s)
{
    if (s->bops && s->bops->session_free && s->bstate)
        s->bops->session_free(s->rt->backends[s->backend].state, s,
                              s->bstate);
    accel__waitstat_fini(&s->wait);
    accel__free(s); /* ring slots and id live in the same allocation */
}

void accel__session_unref(accel_session *s)
{
    /* acq_rel: every user's last accesses happen before the reclamation
     * that the final decrement starts. */
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
        return;
    accel__runtime_unlink_session(s->rt, s);
    accel__rcu_defer(&s->rcu, session_reclaim);
}

void accel__session_notify(accel_session *s)
{
    /* release: pairs with the acquire load of event in waiters, so that
     * what changed before the bump is seen after the wake. */
    atomic_fetch_add_explicit(&s->event, 1, memory_order_release);
    accel__futex_wake(&s->event, INT_MAX);
}

void accel__session_kick(accel_session *s)
{
    ACCEL__YIELD_POINT();
    /* [RMW1] acq_rel: orders our published slots before the bit; pairs
     * with the worker's clear [RMW2] (worker.c). */
    uint32_t prev = atomic_fetch_or_explicit(&s->state, ACCEL__S_SCHEDULED,
                                             memory_order_acq_rel);
    if (prev & ACCEL__S_SCHEDULED)
        return; /* queued or running: its holder will see our slot */
    accel__session_ref(s); /* the scheduler's reference */
    accel__runtime_wake_lanes(s->rt,
                              accel__sched_enqueue(s->rt->sched, &s->se, true));
}

int accel_session_open(accel_runtime *rt, const accel_session_config *ucfg,
                       accel_session **out)
{
    size_t idlen;
    accel_session_config c; /* the caller's layout read by its size */
    if (!rt || !ucfg || !out ||
        accel__config_copy(&c, sizeof(c), ucfg, ucfg->struct_size,
                           ACCEL__BASE_SIZE(accel_session_config)) != 0)
        return ACCEL_EINVAL;
    const accel_session_config *cfg = &c;
    if (check_id(cfg->id, &idlen) != ACCEL_OK)
        return ACCEL_EINVAL;
    uint32_t prio = cfg->priority ? cfg->priority : ACCEL_PRIORITY_NORMAL;
    if (prio > ACCEL_PRIORITY_MAX || cfg->memory_budget < 0 ||
        (cfg->flags & ~ACCEL_SESSION_SHARED_DEVICE) ||
        (unsigned)cfg->backend >= ACCEL__BACKEND_KINDS)
        return ACCEL_EINVAL;
    uint32_t depth = cfg->queue_depth ? cfg->queue_depth
                                      : ACCEL_QUEUE_DEPTH_DEFAULT;
    if (depth > ACCEL_QUEUE_DEPTH_MAX)
        return ACCEL_EINVAL;
    depth = round_pow2(depth);
    if (accel__runtime_forked(rt))
        return ACCEL_ECLOSED;

    int rc;
    const accel__backend_slot *slot =
        accel__backend_choose(rt->backends, cfg->backend, NULL, &rc);
    if (!slot)
        return rc;
    const accel__backend_ops *bops = slot->ops;

    size_t slots_bytes = accel__ring_bytes(depth); /* + EX side array */
    size_t nstamps = depth >= ACCEL__WAIT_SAMPLE ? depth / ACCEL__WAIT_SAMPLE
                                                 : 1;
    size_t stamps_bytes = nstamps * sizeof(uint64_t);
    accel_session *s = accel__calloc_aligned(
        128, sizeof(*s) + slots_bytes + stamps_bytes + idlen + 1);
    if (!s)
        return ACCEL_ENOMEM;
    accel__ring_slot *slots = (accel__ring_slot *)(s + 1);
    accel__ring_init_at(&s->ring, slots, depth);
    s->stamps = (uint64_t *)((char *)slots + slots_bytes);
    s->stamp_mask = (uint32_t)(nstamps - 1);
    s->id = (char *)s->stamps + stamps_bytes;
    s->rt = rt;
    s->bops = bops;
    s->backend = bops->kind;
    s->budget.cap = cfg->memory_budget;
    accel__backend_open_args oa = {
        .device = cfg->device,
        .weight = prio,
        .shared = !!(cfg->flags & ACCEL_SESSION_SHARED_DEVICE),
        .budget_cap = cfg->memory_budget,
    };
    atomic_init(&s->priority, prio);
    atomic_init(&s->refs, 1); /* the handle we return */
    atomic_init(&s->handles, 1);
    atomic_init(&s->wake_at, UINT64_MAX);
    /* relaxed: only uniqueness matters. */
    s->serial = atomic_fetch_add_explicit(&session_serials, 1,
                                          memory_order_relaxed);
    memcpy(s->id, cfg->id, idlen);
    s->id_len = (uint32_t)idlen;
    s->hash = (uint32_t)accel__table_hash(s->id, idlen);
    cds_lfht_node_init(&s->table_node);
    accel__sched_entity_init(rt->sched, &s->se, prio, s);

    rc = bops->session_open(slot->state, s, &oa, &s->bstate);
    /* The device failed or vanished since the runtime probed it: AUTO
     * falls back to the next backend in rank (the CPU last). */
    while (rc == ACCEL_ENOBACKEND && cfg->backend == ACCEL_BACKEND_AUTO) {
        int err;
        slot = accel__backend_choose(rt->backends, ACCEL_BACKEND_AUTO, bops,
                                     &err);
        if (!slot)
            break;
        s->bops = bops = slot->ops;
        s->backend = bops->kind;
        oa.shared = 0;
        rc = bops->session_open(slot->state, s, &oa, &s->bstate);
    }
    if (rc != ACCEL_OK) {
        s->bstate = NULL;
        accel__session_free_now(s);
        return rc;
    }

    /* Cold path: the runtime's list of session objects. */
    pthread_mutex_lock(&rt->list_lock); /* cold: session open */
    if (rt->nsessions >= ACCEL__SESSIONS_MAX) {
        pthread_mutex_unlock(&rt->list_lock);
        accel__session_free_now(s);
        return ACCEL_ENOMEM;
    }
    cds_list_add(&s->rt_link, &rt->sessions);
    rt->nsessions++;
    pthread_mutex_unlock(&rt->list_lock);

    accel__rcu_read_lock();
    rc = accel__table_insert(rt->table, s);
    accel__rcu_read_unlock();
    if (rc != ACCEL_OK) {
        accel__runtime_unlink_session(rt, s);
        accel__session_free_now(s);
        return rc;
    }
    *out = s;
    return ACCEL_OK;
}

int accel_session_lookup(accel_runtime *rt, const char *id,
                         accel_session **out)
{
    size_t len;
    if (!rt || !out || check_id(id, &len) != ACCEL_OK)
        return ACCEL_EINVAL;
    if (accel__runtime_forked(rt))
        return ACCEL_ECLOSED;
    int rc = ACCEL_ENOENT;
    accel__rcu_read_lock();
    accel_session *s = accel__table_find(rt->table, id, len,
                                         accel__table_hash(id, len));
    if (s) {
        /* Take a ref unless it already dropped to 0 (then the object is
         * waiting for its grace period). relaxed: the read-side section
         * keeps the object alive while we try. */
        uint32_t r = atomic_load_explicit(&s->refs, memory_order_relaxed);
        while (r != 0 &&
               !atomic_compare_exchange_weak_explicit(
                   &s->refs, &r, r + 1, memory_order_relaxed,
                   memory_order_relaxed))
            ;
        if (r != 0) {
            atomic_fetch_add_explicit(&s->handles, 1, memory_order_relaxed);
            *out = s;
            rc = ACCEL_OK;
        }
    }
    accel__rcu_read_unlock();
    return rc;
}

/*
 * Sleeping. A sleeper announces what it waits for, then re-checks after
 * the cold fence; the worker stores its progress ([R5] finished, [R2]
 * head), then after a hot fence loads the announcement (futex.h: one of
 * the two sees the other). The futex word `event` is read before the
 * announcement, so a notify in between makes futex_wait return at once.
 *
 * Completion sleepers (sync, close) announce by lowering `wake_at` to
 * their target: the worker wakes them once, when finished reaches it, not
 * on every op. Room sleepers raise the flag `space_waiters`; the take
 * that next frees a slot sees it, clears it and wakes them all (the flag,
 * not a count: one wake per announcement, not a futex wake per take while
 * producers sleep, which collapses throughput). A sleeper that timed out
 * leaves the flag raised: one spare wake later.
 */
static bool finished_reached(accel_session *s, uint64_t target)
{
    /* [A5] acquire: pairs with [R5] in the worker; the done callbacks of
     * the counted ops happen before our return. */
    return atomic_load_explicit(&s->finished, memory_order_acquire) >= target;
}

int accel__session_wait_finished(accel_session *s, uint64_t target,
                                 uint64_t deadline)
{
    for (;;) {
        if (finished_reached(s, target))
            return ACCEL_OK;
        /* acquire: pairs with the release bump in accel__session_notify. */
        uint32_t ev = atomic_load_explicit(&s->event, memory_order_acquire);
        uint64_t w = atomic_load_explicit(&s->wake_at, memory_order_relaxed);
        /* relaxed CAS-min: the fence below orders it against the worker. */
        while (target < w &&
               !atomic_compare_exchange_weak_explicit(
                   &s->wake_at, &w, target, memory_order_relaxed,
                   memory_order_relaxed))
            ;
        accel__fence_cold();
        if (finished_reached(s, target))
            return ACCEL_OK;
        int64_t rem = accel__remaining(deadline);
        if (rem == 0)
            return ACCEL_ETIMEDOUT;
        accel__futex_wait(&s->event, ev, rem);
    }
}

static bool has_room_or_closed(accel_session *s)
{
    uint64_t t = atomic_load_explicit(&s->tail, memory_order_relaxed);
    if (t & ACCEL__RING_CLOSED)
        return true;
    uint64_t h = atomic_load_explicit(&s->head, memory_order_relaxed);
    return t - h <= s->ring.mask;
}

int accel__session_wait_room(accel_session *s, uint64_t deadline)
{
    /* acquire: pairs with the release bump in accel__session_notify. */
    uint32_t ev = atomic_load_explicit(&s->event, memory_order_acquire);
    /* relaxed: the cold fence orders it against the consumer's head store
     * and flag load (notify_room in worker.c). */
    atomic_store_explicit(&s->space_waiters, 1, memory_order_relaxed);
    accel__fence_cold();
    int rc = ACCEL_OK;
    if (!has_room_or_closed(s)) {
        int64_t rem = accel__remaining(deadline);
        if (rem == 0)
            rc = ACCEL_ETIMEDOUT;
        else
            accel__futex_wait(&s->event, ev, rem);
    }
    return rc;
}

int accel_session_close(accel_session *s, unsigned flags)
{
    if (!s || (flags & ~ACCEL_CLOSE_CANCEL))
        return ACCEL_EINVAL;
    if (accel__runtime_forked(s->rt))
        return ACCEL_ECLOSED; /* the parent's session (fork.c) */
    if (flags & ACCEL_CLOSE_CANCEL)
        atomic_store_explicit(&s->cancel, 1, memory_order_relaxed);
    /* Unpublish the id before the LP, so that once close has begun
     * (is_closed() true) lookups get ENOENT and the id can be opened again.
     * Every closer does it: cds_lfht_del is idempotent (-ENOENT for a node
     * already removed), and no closer may set CLOSED while the id is still
     * in the table. The fetch_or below is a release, which orders the
     * removal before CLOSED for readers that acquire it. */
    accel__rcu_read_lock();
    accel__table_remove(s->rt->table, s);
    accel__rcu_read_unlock();
    /* LP of close (see the top of this file). release: the table removal
     * above happens before a reader that sees CLOSED with the acquire load
     * in accel_session_is_closed(). Producers only need tail's
     * modification order; waiting orders itself with [A5]. */
    uint64_t prev = atomic_fetch_or_explicit(&s->tail, ACCEL__RING_CLOSED,
                                             memory_order_release);
    uint64_t final = prev & ~ACCEL__RING_CLOSED;
    /* close(session, id, flags, accepted ops): every closer fires it */
    ACCEL_TRACE4(close, s, s->id, flags, final);
    accel__session_notify(s); /* producers blocked on a full ring */
    if (accel__tls_current == s)
        return ACCEL_OK;
    return accel__session_wait_finished(s, final, UINT64_MAX);
}

void accel_session_release(accel_session *s)
{
    if (!s || accel__runtime_forked(s->rt))
        return; /* a parent's session in a fork child: left as it is */
    /* relaxed: a count only; close and unref order themselves. */
    if (atomic_fetch_sub_explicit(&s->handles, 1, memory_order_relaxed) == 1 &&
        !accel_session_is_closed(s))
        accel_session_close(s, ACCEL_CLOSE_DRAIN);
    accel__session_unref(s);
}

const char *accel_session_id(const accel_session *s)
{
    return s ? s->id : NULL;
}

uint32_t accel_session_priority(const accel_session *s)
{
    return s ? atomic_load_explicit(&((accel_session *)s)->priority,
                                    memory_order_relaxed)
             : 0;
}

int accel_session_set_priority(accel_session *s, uint32_t priority)
{
    if (!s || priority > ACCEL_PRIORITY_MAX)
        return ACCEL_EINVAL;
    if (accel_session_is_closed(s))
        return ACCEL_ECLOSED;
    if (priority == 0)
        priority = ACCEL_PRIORITY_NORMAL;
    /* relaxed: "from the next visit"; a visit reads the weight once. */
    atomic_store_explicit(&s->priority, priority, memory_order_relaxed);
    atomic_store_explicit(&s->se.weight, priority, memory_order_relaxed);
    if (s->bops->set_priority)
        s->bops->set_priority(s->bstate, priority);
    return ACCEL_OK;
}

accel_backend accel_session_backend(const accel_session *s)
{
    return s ? s->backend : ACCEL_BACKEND_AUTO;
}

bool accel_session_is_closed(const accel_session *s)
{
    if (!s || accel__runtime_forked(s->rt))
        return true;
    /* acquire: a caller that sees CLOSED also sees the id gone from the
     * table (see accel_session_close). */
    return (atomic_load_explicit(&((accel_session *)s)->tail,
                                 memory_order_acquire) &
            ACCEL__RING_CLOSED) != 0;
}

static uint64_t ld(const _Atomic uint64_t *p)
{
    return atomic_load_explicit((_Atomic uint64_t *)p, memory_order_relaxed);
}

void accel__session_fill_stats(const accel_session *cs,
                               accel_session_stats *out)
{
    accel_session *s = (accel_session *)cs;
    memset(out, 0, sizeof(*out));
    /* Relaxed snapshots: each counter is exact, the set is not atomic.
     * Read the completion side first so that queued never underflows. */
    out->completed = ld(&s->completed);
    out->failed = ld(&s->failed);
    out->cancelled = ld(&s->cancelled);
    out->expired = ld(&s->expired);
    out->dispatched = ld(&s->dispatched);
    uint64_t head = ld(&s->head);
    uint64_t tail = ld(&s->tail) & ~ACCEL__RING_CLOSED;
    out->submitted = tail;
    out->queued = tail > head ? tail - head : 0;
    out->memory_used = accel__budget_used(&s->budget);
    out->memory_budget = s->budget.cap;
    out->service_ns = ld(&s->service_ns);
    out->visits = ld(&s->visits);
    out->priority = accel_session_priority(s);
    out->vtime_ns = accel__sched_vtime_of(s->rt->sched, &s->se);
    out->lag_ns = accel__sched_lag(s->rt->sched, &s->se);
    out->wait_samples = ld(&s->wait.samples);
    out->wait_p50_ns = accel__waitstat_quantile(&s->wait, 0.50);
    out->wait_p99_ns = accel__waitstat_quantile(&s->wait, 0.99);
    out->wait_p999_ns = accel__waitstat_quantile(&s->wait, 0.999);
    out->wait_max_ns = ld(&s->wait.max_ns);
}
