/*
 * Session lifecycle: open, lookup, close, sync, release, reclamation,
 * getters, budget reservations.
 * See session.h for the SCHED bit and the lifetime rules.
 *
 * Close protocol (the submit-vs-close handshake):
 *   1. fetch_or CLOSED into the ring tail. LP of close: a reservation CAS
 *      ordered before it in tail's modification order was accepted, any
 *      after it fails with ACCEL_ECLOSED; the value below the bit is the
 *      final count of accepted ops.
 *   2. wakes producers waiting for room. (Before step 1 every closer
 *      unpublishes the id from the table, so that it is free for reuse
 *      as soon as close is seen to have begun; a scrape lists a
 *      session only while its id is published, metrics.c.)
 *   3. every closer waits until `finished` reaches that count (the worker's
 *      [R5] release of finished pairs with [A5] in waiters.c), unless it runs
 *      inside one of the session's own ops.
 */

#include "session.h"

#include <limits.h>
#include <string.h>

#include "abi.h"
#include "alloc.h"
#include "backend_registry.h"
#include "batch_types.h"
#include "clock.h"
#include "defaults.h"
#include "futex.h"
#include "waiters.h"
#include "rcu.h"
#include "runtime_types.h"
#include "table.h"
#include "trace.h"

_Thread_local accel_session *accel__tls_current;
_Atomic uint64_t accel__sessions_reclaimed;
void (*_Atomic accel__close_window_hook)(accel_session *s);
void (*_Atomic accel__release_window_hook)(accel_session *s);

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

/* What a session's reclamation gives back: the object and its ring. */
static size_t session_bytes(const accel_session *s)
{
    return sizeof(*s) + accel__ring_bytes((uint32_t)(s->rp.mask + 1));
}

/* Frees s, a grace period after its last reference went, and ends the
 * reclamation; the caller began it (accel__rcu_reclaim_begin: TSan's
 * edge from the readers) before its first read of s. */
static void reclaim_now(accel_session *s)
{
    accel__session_free_now(s);
    /* relaxed: a statistic. */
    atomic_fetch_add_explicit(&accel__sessions_reclaimed, 1,
                              memory_order_relaxed);
    accel__rcu_reclaim_end();
}

static void session_reclaim(struct rcu_head *head)
{
    accel_session *s = caa_container_of(head, accel_session, rcu);
    accel__rcu_reclaim_begin(); /* before the first read of s (TSan) */
    /* A reclamation the parent queued, run by liburcu in a fork child:
     * the parent's arena (and its backend's state) may be locked by a
     * thread the child does not have. The copy is left as it is. */
    if (accel__fork_stale(s->rt->fork_gen)) {
        accel__rcu_reclaim_end();
        return;
    }
    /* relaxed: a count that only paces releases (accel_session_release);
     * no memory is handed over through it. Before reclaim_now's end of
     * the reclamation: destroy's barrier frees rt after that end. */
    atomic_fetch_sub_explicit(&s->rt->reclaim_pending, session_bytes(s),
                              memory_order_relaxed);
    reclaim_now(s);
}

void accel__session_free_now(accel_session *s)
{
    if (s->bops && s->bops->session_free && s->bstate)
        s->bops->session_free(s->rt->backends[s->backend].state, s,
                              s->bstate);
    /* the batch state (batch.h), a plain allocation; relaxed: no visit
     * and no handle are left */
    accel__free(atomic_load_explicit(accel__session_batch_word(s),
                                     memory_order_relaxed));
    accel__waitstat_fini(&s->wait);
    /* the ring's slots follow the session; the stamps open its tail */
    accel__arena_free(&s->rt->arena, s, s->stamps, s->arena_units);
}

/* Cold path: the runtime's list of session objects (destroy walks it,
 * a scrape copies it). A session is counted first (list_reserve), linked
 * only once its id is in the table (list_link): a session whose insert
 * fails is never seen in the list, so a scrape never shows its id twice.
 * *grow: the bucket count the id table should now have, 0 if it has
 * enough: once the sessions outnumber the buckets, the next power of two
 * (a chain of at most one node on average; 16 bytes a bucket, so at most
 * 32 bytes a session). */
static int list_reserve(accel_runtime *rt, unsigned long *grow)
{
    pthread_mutex_lock(&rt->list_lock); /* cold: session open */
    if (rt->nsessions >= ACCEL__SESSIONS_MAX) {
        pthread_mutex_unlock(&rt->list_lock);
        return ACCEL_ENOMEM;
    }
    rt->nsessions++;
    *grow = 0;
    if (rt->nsessions > rt->table_want) {
        while (rt->table_want < rt->nsessions)
            rt->table_want *= 2;
        *grow = rt->table_want;
    }
    pthread_mutex_unlock(&rt->list_lock);
    return ACCEL_OK;
}

static void list_link(accel_runtime *rt, accel_session *s)
{
    pthread_mutex_lock(&rt->list_lock); /* cold: session open */
    cds_list_add(&s->rt_link, &rt->sessions);
    pthread_mutex_unlock(&rt->list_lock);
}

static void list_unreserve(accel_runtime *rt)
{
    pthread_mutex_lock(&rt->list_lock); /* cold: failed session open */
    rt->nsessions--;
    pthread_mutex_unlock(&rt->list_lock);
}

/* Cold path: resizes the id table for list_reserve's request, in the opening
 * thread (outside the read-side section; lookups go on meanwhile). */
static void table_grow(accel_runtime *rt, unsigned long buckets)
{
    pthread_mutex_lock(&rt->table_lock); /* cold: 1 open in 2^k */
    if (buckets > rt->table_buckets) {
        accel__table_resize(rt->table, buckets);
        rt->table_buckets = buckets;
    }
    pthread_mutex_unlock(&rt->table_lock);
}

static void list_del(accel_runtime *rt, accel_session *s)
{
    pthread_mutex_lock(&rt->list_lock); /* cold: session teardown */
    cds_list_del(&s->rt_link);
    rt->nsessions--;
    pthread_mutex_unlock(&rt->list_lock);
}

/* Drops a reference; true: it was the last (the caller reclaims s). */
static bool unref_last(accel_session *s)
{
    /* acq_rel: every user's last accesses happen before the reclamation
     * that the final decrement starts. */
    return accel__session_refs_of(atomic_fetch_sub_explicit(
               &s->refs, ACCEL__SESSION_REF, memory_order_acq_rel)) == 1;
}

/* Reclaims s after a grace period, on liburcu's thread. */
static void reclaim_deferred(accel_session *s)
{
    list_del(s->rt, s);
    /* relaxed: see session_reclaim. */
    atomic_fetch_add_explicit(&s->rt->reclaim_pending, session_bytes(s),
                              memory_order_relaxed);
    accel__rcu_defer(&s->rcu, session_reclaim);
}

void accel__session_unref(accel_session *s)
{
    if (unref_last(s))
        reclaim_deferred(s);
}

/* Checks a config; fills the id length, the priority and the ring depth
 * (rounded up to a power of two). */
static int check_config(const accel_session_config *cfg, size_t *idlen,
                        uint32_t *prio, uint32_t *depth)
{
    if (check_id(cfg->id, idlen) != ACCEL_OK)
        return ACCEL_EINVAL;
    *prio = cfg->priority ? cfg->priority : ACCEL_PRIORITY_NORMAL;
    if (*prio > ACCEL_PRIORITY_MAX || cfg->memory_budget < 0 ||
        (cfg->flags & ~ACCEL_SESSION_SHARED_DEVICE) ||
        (unsigned)cfg->backend >= ACCEL__BACKEND_KINDS)
        return ACCEL_EINVAL;
    uint32_t d = cfg->queue_depth ? cfg->queue_depth
                                  : ACCEL_QUEUE_DEPTH_DEFAULT;
    if (d > ACCEL_QUEUE_DEPTH_MAX)
        return ACCEL_EINVAL;
    *depth = round_pow2(d);
    return ACCEL_OK;
}

/* The session and its ring slots, then its tail: the wait stamps, the
 * batch state's word and the id (session.h); every field set but the
 * backend state. NULL: no memory. */
static accel_session *session_alloc(accel_runtime *rt,
                                    const accel_session_config *cfg,
                                    size_t idlen, uint32_t prio,
                                    uint32_t depth,
                                    const accel__backend_ops *bops)
{
    size_t slots_bytes = accel__ring_bytes(depth); /* + EX side array */
    size_t nstamps = depth >= ACCEL__WAIT_SAMPLE ? depth / ACCEL__WAIT_SAMPLE
                                                 : 1;
    size_t stamps_bytes = nstamps * sizeof(uint64_t);
    uint32_t units;
    void *tail;
    accel_session *s =
        accel__arena_calloc(&rt->arena, sizeof(*s) + slots_bytes,
                            stamps_bytes + sizeof(void *) + idlen + 1,
                            &tail, &units);
    if (!s)
        return NULL;
    s->arena_units = units;
    accel__ring_slot *slots = (accel__ring_slot *)(s + 1);
    accel__ring_init(ACCEL__RING(s), slots, depth);
    s->stamps = tail;
    s->stamp_mask = (uint32_t)(nstamps - 1);
    /* the batch state's word, then the id (session.h) */
    atomic_init(accel__session_batch_word(s), NULL);
    s->id = (char *)s->stamps + stamps_bytes + sizeof(void *);
    s->rt = rt;
    s->bops = bops;
    s->backend = bops->kind;
    s->budget.cap = cfg->memory_budget;
    atomic_init(&s->priority, prio);
    /* the handle we return, and its reference */
    atomic_init(&s->refs, ACCEL__SESSION_HANDLE | ACCEL__SESSION_REF);
    accel__waiters_init(&s->waiters);
    /* relaxed: only uniqueness matters. */
    s->serial = atomic_fetch_add_explicit(&session_serials, 1,
                                          memory_order_relaxed);
    memcpy(s->id, cfg->id, idlen);
    accel__table_node_init(&s->table_node, s->id, idlen);
    accel__sched_entity_init(rt->sched, &s->se, prio, s);
    return s;
}

/* Opens the backend's side of the session; AUTO falls back to the next
 * backend in rank (the CPU last) when the device failed or vanished since
 * the runtime probed it. */
static int backend_open(accel_runtime *rt, accel_session *s,
                        const accel_session_config *cfg,
                        const accel__backend_entry *entry, uint32_t prio)
{
    accel__backend_open_args oa = {
        .device = cfg->device,
        .weight = prio,
        .shared = !!(cfg->flags & ACCEL_SESSION_SHARED_DEVICE),
        .budget_cap = cfg->memory_budget,
    };
    int rc = s->bops->session_open(entry->state, s, &oa, &s->bstate);
    while (rc == ACCEL_ENOBACKEND && cfg->backend == ACCEL_BACKEND_AUTO) {
        int err;
        entry = accel__backend_registry_choose(rt->backends,
                                              ACCEL_BACKEND_AUTO, s->bops,
                                              &err);
        if (!entry)
            break;
        s->bops = entry->ops;
        s->backend = s->bops->kind;
        oa.shared = 0;
        rc = s->bops->session_open(entry->state, s, &oa, &s->bstate);
    }
    if (rc != ACCEL_OK)
        s->bstate = NULL;
    return rc;
}

/* Makes the session known: counted, in the id table, then listed. */
static int session_register(accel_runtime *rt, accel_session *s)
{
    unsigned long grow;
    if (list_reserve(rt, &grow) != ACCEL_OK)
        return ACCEL_ENOMEM;
    accel__rcu_read_lock();
    int rc = accel__table_insert(rt->table, &s->table_node);
    accel__rcu_read_unlock();
    /* Not before the insert: a lookup finds s only once it is in the
     * table, and the handle the opener holds keeps the last release (the
     * list_del) from running before list_link. */
    if (rc == ACCEL_OK)
        list_link(rt, s);
    else
        list_unreserve(rt);
    /* Even when the insert failed: table_want has already moved, and a
     * request dropped here would leave the table at half its size until
     * the count doubled again. */
    if (grow)
        table_grow(rt, grow);
    return rc;
}

int accel_session_open(accel_runtime *rt, const accel_session_config *ucfg,
                       accel_session **out)
{
    size_t idlen;
    uint32_t prio, depth;
    accel_session_config c; /* the caller's layout read by its size */
    if (!rt || !ucfg || !out ||
        accel__config_copy(&c, sizeof(c), ucfg, ucfg->struct_size,
                           ACCEL__BASE_SIZE(accel_session_config)) != 0 ||
        check_config(&c, &idlen, &prio, &depth) != ACCEL_OK)
        return ACCEL_EINVAL;
    if (accel__fork_stale(rt->fork_gen))
        return ACCEL_ECLOSED; /* the parent's runtime (fork.c) */
    /* Inside the host's own read-side section: a table resize (any open
     * may ask for one) is not allowed there. Refused whatever the table's
     * size, so the answer does not depend on the session count. */
    if (accel__rcu_read_ongoing())
        return ACCEL_EDEADLK;
    int rc;
    const accel__backend_entry *entry =
        accel__backend_registry_choose(rt->backends, c.backend, NULL, &rc);
    if (!entry)
        return rc;
    accel_session *s = session_alloc(rt, &c, idlen, prio, depth, entry->ops);
    if (!s)
        return ACCEL_ENOMEM;
    rc = backend_open(rt, s, &c, entry, prio);
    if (rc == ACCEL_OK)
        rc = session_register(rt, s);
    if (rc != ACCEL_OK) {
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
    if (accel__fork_stale(rt->fork_gen))
        return ACCEL_ECLOSED;
    int rc = ACCEL_ENOENT;
    accel__rcu_read_lock();
    accel__table_node *n = accel__table_find(rt->table, id, len,
                                             accel__table_hash(id, len));
    accel_session *s =
        n ? caa_container_of(n, accel_session, table_node) : NULL;
    /* The handle and its reference: one RMW. */
    if (s && accel__session_tryhandle(s)) {
        *out = s;
        rc = ACCEL_OK;
    }
    accel__rcu_read_unlock();
    return rc;
}

void accel__session_kick_hold(accel_session *s)
{
    /* The caller's store (close's CLOSED, a cancel's CAS) before the look
     * at the batch word, as before the kick's look at the hold (a holder
     * read the word after its set_batch, then marked and fenced: one of
     * us sees the other). */
    atomic_thread_fence(memory_order_seq_cst);
    /* acquire: pairs with set_batch's release CAS of the word. */
    struct accel__batch *b = atomic_load_explicit(
        accel__session_batch_word(s), memory_order_acquire);
    if (b)
        b->kick(s, ACCEL__BATCH_KICK_FORCE); /* batch.c, through its hook */
}

int accel_session_close(accel_session *s, unsigned flags)
{
    if (!s || (flags & ~ACCEL_CLOSE_CANCEL))
        return ACCEL_EINVAL;
    if (accel__fork_stale(s->rt->fork_gen))
        return ACCEL_ECLOSED; /* the parent's session (fork.c) */
    if (flags & ACCEL_CLOSE_CANCEL)
        atomic_store_explicit(&s->close_cancels, 1, memory_order_relaxed);
    /* Unpublish the id before the LP, so that once close has begun
     * (is_closed() true) lookups get ENOENT and the id can be opened again.
     * Every closer does it: cds_lfht_del is idempotent (-ENOENT for a node
     * already removed), and no closer may set CLOSED while the id is still
     * in the table. The fetch_or below is a release, which orders the
     * removal before CLOSED for readers that acquire it. */
    accel__rcu_read_lock();
    accel__table_remove(s->rt->table, &s->table_node);
    accel__rcu_read_unlock();
    /* relaxed: a test sets it before its threads start. */
    void (*hook)(accel_session *) =
        atomic_load_explicit(&accel__close_window_hook, memory_order_relaxed);
    if (__builtin_expect(hook != NULL, 0))
        hook(s);
    /* LP of close (see the top of this file). release: the table removal
     * above happens before a reader that sees CLOSED with the acquire load
     * in accel_session_is_closed(). Producers only need tail's
     * modification order; waiting orders itself with [A5]. */
    uint64_t final = accel__ring_close(ACCEL__RING(s));
    /* close(session, id, flags, accepted ops): every closer fires it */
    ACCEL_TRACE4(close, s, s->id, flags, final);
    accel__waiters_wake(&s->waiters); /* producers blocked on a full ring */
    /* A session held back to fill a batch runs its ops now. */
    accel__session_kick_hold(s);
    if (accel__tls_current == s)
        return ACCEL_OK;
    return accel__waiters_wait_finished(&s->waiters, final, UINT64_MAX);
}

/* The wait of close's step 3, for the ops accepted before the call. */
int accel_session_sync(accel_session *s, int64_t timeout_ns)
{
    if (!s || timeout_ns < ACCEL_FOREVER)
        return ACCEL_EINVAL;
    if (accel__tls_current == s)
        return ACCEL_EDEADLK;
    if (accel__fork_stale(s->rt->fork_gen))
        return ACCEL_ECLOSED;
    uint64_t target = accel__ring_submitted(ACCEL__RING(s));
    return accel__waiters_wait_finished(&s->waiters, target,
                                         accel__deadline(timeout_ns));
}

void accel_session_release(accel_session *s)
{
    if (!s || accel__fork_stale(s->rt->fork_gen))
        return; /* a parent's session in a fork child: left as it is */
    uint64_t w = atomic_load_explicit(&s->refs, memory_order_relaxed);
    /* Not the last handle: drop it and its reference with one RMW. The
     * references are at least the handles (2 or more here), so this never
     * drops the last one. release (acq_rel): as accel__session_unref's
     * decrement, whose acquire the release sequence of this word reaches;
     * failure relaxed: w is reloaded. */
    for (;;) {
        if ((w >> 32) > 1) {
            if (atomic_compare_exchange_weak_explicit(
                    &s->refs, &w, w - ACCEL__SESSION_HANDLE - ACCEL__SESSION_REF,
                    memory_order_acq_rel, memory_order_relaxed))
                return;
            continue;
        }
        /* The last handle, 1 -> 0 in one CAS: a lookup's handle taken
         * before it makes this one not the last (the CAS fails, w is
         * reloaded), and a lookup after it finds none
         * (accel__session_tryhandle). relaxed: a count; close and unref
         * order themselves. */
        if (atomic_compare_exchange_weak_explicit(
                &s->refs, &w, w - ACCEL__SESSION_HANDLE, memory_order_relaxed,
                memory_order_relaxed))
            break;
    }
    /* Gone: close (drain) unless closed, then drop the reference. */
    /* relaxed: a test sets it before its threads start. */
    void (*hook)(accel_session *) =
        atomic_load_explicit(&accel__release_window_hook, memory_order_relaxed);
    if (__builtin_expect(hook != NULL, 0))
        hook(s);
    if (!accel_session_is_closed(s))
        accel_session_close(s, ACCEL_CLOSE_DRAIN);
    if (!unref_last(s))
        return;
    /* Closed sessions wait for a grace period on liburcu's thread, which
     * frees a batch every few milliseconds: under open/close churn they
     * pile up there (tens of MB at the default depth). Past the backlog
     * bound the releasing thread waits for the grace period and frees
     * its session itself, where it may: not inside an op (a tenant's
     * worker does not wait on others' grace periods), not inside a
     * read-side section (the grace period would wait for itself).
     * relaxed: an estimate that only picks the path; the grace period
     * orders the free. */
    accel_runtime *rt = s->rt;
    if (atomic_load_explicit(&rt->reclaim_pending, memory_order_relaxed) <=
            ACCEL__RECLAIM_BACKLOG_BYTES ||
        accel__tls_current || accel__rcu_read_ongoing()) {
        reclaim_deferred(s);
        return;
    }
    list_del(rt, s);
    accel__rcu_synchronize(); /* readers that found s in the table are done */
    accel__rcu_reclaim_begin();
    reclaim_now(s);
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

int accel_session_reserve(accel_session *s, int64_t bytes)
{
    if (!s || bytes < 0)
        return ACCEL_EINVAL;
    if (accel_session_is_closed(s))
        return ACCEL_ECLOSED;
    int rc = accel__budget_charge(&s->budget, bytes);
    if (rc == ACCEL_EBUDGET)
        ACCEL_TRACE3(budget_refused, s, s->id, bytes);
    return rc;
}

int accel_session_unreserve(accel_session *s, int64_t bytes)
{
    if (!s)
        return ACCEL_EINVAL;
    return accel__budget_refund(&s->budget, bytes);
}

int64_t accel_session_memory_used(const accel_session *s)
{
    return s ? accel__budget_used(&s->budget) : 0;
}

accel_backend accel_session_backend(const accel_session *s)
{
    return s ? s->backend : ACCEL_BACKEND_AUTO;
}

bool accel_session_is_closed(const accel_session *s)
{
    if (!s || accel__fork_stale(s->rt->fork_gen))
        return true;
    /* acquire (in the ring): a caller that sees CLOSED also sees the id
     * gone from the table (see accel_session_close). */
    return accel__ring_is_closed(ACCEL__RING(s));
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
    out->cancelled = ld(&s->canceled);
    out->expired = ld(&s->expired);
    out->dispatched = ld(&s->dispatched);
    out->queued = accel__ring_count(ACCEL__RING(s));
    out->submitted = accel__ring_submitted(ACCEL__RING(s));
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
    /* acquire: pairs with set_batch's release CAS of the batch word (the
     * state's init). */
    const struct accel__batch *b = atomic_load_explicit(
        accel__session_batch_word(s), memory_order_acquire);
    if (b) {
        /* relaxed: counters, as above */
        out->batches = ld(&b->batches);
        out->batch_ops = ld(&b->ops);
        out->batch_held_ns = ld(&b->held_ns);
        for (unsigned i = 0; i < ACCEL_BATCH_HIST_BUCKETS; i++)
            out->batch_size_hist[i] = ld(&b->hist[i]);
    }
}

/* Written by size (docs/abi.md): an older caller gets its prefix. */
int accel_session_get_stats_ex(const accel_session *s,
                               accel_session_stats *out, size_t size)
{
    if (!s || !out || size < ACCEL_SESSION_STATS_SIZE_0_1)
        return ACCEL_EINVAL;
    accel_session_stats full;
    accel__session_fill_stats(s, &full);
    memcpy(out, &full, size < sizeof(full) ? size : sizeof(full));
    return ACCEL_OK;
}

int accel_session_get_stats(const accel_session *s, accel_session_stats *out)
{
    return accel_session_get_stats_ex(s, out, ACCEL_SESSION_STATS_SIZE_0_1);
}
