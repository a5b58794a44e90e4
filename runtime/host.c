/*
 * Host-driven workers (ACCEL_RUNTIME_HOST_WORKERS, accel.h): the host's
 * own threads drive the worker indexes. A host worker's visit is the C worker's
 * visit (visit.h: the same pick, takes, claims, charge and leave), cut
 * in two around the host running the ops: accel_host_visit_begin takes
 * one run of ops and claims each (canceled, expired and closed ops are
 * kept back and completed unrun), accel_host_visit_end completes them
 * all in FIFO order and ends the visit. Idle host workers use the C workers'
 * parking counts (park.c), with the host's sleep in place of the futex:
 *
 *   host worker: parked++ (relaxed); seq_cst fence; pick (begin);
 *                nothing: sleep until host_wake; unpark
 *   submitter:   publish op, enqueue session (seq_cst RMWs);
 *                seq_cst load: if (parked > claimed) { claimed++;
 *                host_wake(lane) }
 *
 * Either the host worker's pick sees the session, or the submitter's load
 * sees the parked count (park.c: the parking pair) and calls
 * host_wake, which the host's sleep keeps (a semaphore: a wake before the
 * sleep is not lost). That is the futex protocol of park.c with the
 * host's primitive for the futex word; models/host.pml checks it.
 *
 * The host worker's state is written only by the host thread driving the host worker
 * (one at a time, accel.h), so it needs no atomics; `idle` and `open`
 * catch misuse on one host worker, not races between threads.
 */

#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "accel/host.h"
#include "alloc.h"
#include "batch.h"
#include "clock.h"
#include "compensate.h"
#include "cpu_limits.h"
#include "host.h"
#include "park.h"
#include "presume.h"
#include "waiters.h"
#include "rcu.h"
#include "runtime_types.h"
#include "session.h"
#include "submit.h"
#include "trace.h"
#include "visit.h"
#include "worker_types.h"

/* pre[i] of a taken op: handed to the host, or its unrun status (< 0). */
#define HANDED 1

/* A batch visit's run (a session with a batch function, batch.c): up to
 * ACCEL_BATCH_MAX ops, in a host worker's buffer allocated by its first. */
typedef struct accel__host_batch {
    accel_op ops[ACCEL_BATCH_MAX];
    int pre[ACCEL_BATCH_MAX];
} accel__host_batch;

typedef struct accel__host_worker {
    alignas(64) accel__visit v;
    accel_op ops[ACCEL_HOST_VISIT_MAX]; /* the run, in FIFO order */
    int pre[ACCEL_HOST_VISIT_MAX];
    uint32_t k;      /* ops taken */
    uint32_t handed; /* of which handed to the host */
    bool open;       /* a visit is open */
    bool in_line;    /* the host runs the ops (else begin ran them) */
    bool idle;       /* between idle_begin and idle_end */
    bool watched;    /* the monitor watches the open visit (not an own
                        visit of accel_host_submit_own) */
    bool batch;      /* the open visit is a batch: its run is in big */
    accel__host_batch *big; /* NULL until the worker's first batch */
    uint64_t batch_t0;      /* when the batch was handed out */
} accel__host_worker;

accel_session *accel_current_session(void) { return accel__tls_current; }

unsigned accel_host_default_workers(void) { return accel__default_workers(); }

accel_session *accel_host_set_current_session(accel_session *s)
{
    accel_session *prev = accel__tls_current;
    accel__tls_current = s;
    return prev;
}

/* The calling thread's kernel id: a syscall once per thread. */
static _Thread_local int host_tid;

static int self_tid(void)
{
    if (__builtin_expect(host_tid == 0, 0))
        host_tid = (int)syscall(SYS_gettid);
    return host_tid;
}

/* The monitor watches host worker `worker`'s visit on the calling thread from
 * here (compensate.c reads in_visit, visits and tid of the host worker's accel__worker
 * record, as of accel's own workers). relaxed: the monitor's heuristic
 * view, as worker.c's stores; the tid before the flag so that a monitor
 * that sees the flag mostly finds this thread (a stale one only costs a
 * sample: the monitor samples again when the tid changes). */
static void watch_here(accel_runtime *rt, unsigned worker)
{
    accel__worker *w = &rt->workers[worker];
    atomic_store_explicit(&w->tid, self_tid(), memory_order_relaxed);
    atomic_store_explicit(&w->in_visit, 1, memory_order_relaxed);
}

int accel__host_create(accel_runtime *rt)
{
    /* the base host workers, then the extra ones (accel_host_worker_add) */
    rt->host = accel__calloc_aligned(
        64, ((size_t)rt->nworkers + rt->comp.extra_max) *
                sizeof(accel__host_worker));
    /* No thread of accel's sets a host worker's runtime: the visits'
     * charge reads it (accel__compensate_visit_blocked_ns). */
    for (unsigned i = 0; i < rt->nworkers + rt->comp.extra_max; i++)
        rt->workers[i].rt = rt;
    return rt->host ? ACCEL_OK : ACCEL_ENOMEM;
}

void accel__host_free(accel_runtime *rt)
{
    if (!rt->host)
        return;
    for (unsigned i = 0; i < rt->nworkers + rt->comp.extra_max; i++)
        accel__free(rt->host[i].big);
    accel__free(rt->host);
}

static accel__host_worker *host_worker_of(accel_runtime *rt, unsigned worker)
{
    if (!rt || !(rt->cfg.flags & ACCEL_RUNTIME_HOST_WORKERS))
        return NULL;
    if (worker < rt->nworkers)
        return &rt->host[worker];
    /* An extra worker while it is added (the driving thread added it:
     * accel_host_worker_add). */
    if (worker - rt->nworkers < rt->comp.extra_max &&
        rt->workers[worker].extra_state == ACCEL__EXTRA_RUN)
        return &rt->host[worker];
    return NULL;
}

/* Takes one run into the host worker and claims each op: the host's ops are
 * compacted into out[]. */
static void take_ops(accel__host_worker *h, accel_op *out, unsigned cap)
{
    accel__visit *v = &h->v;
    accel_session *s = v->s;
    uint32_t max = v->quota < v->run_max ? v->quota : v->run_max;
    if (max > cap)
        max = cap;
    uint32_t ex;
    uint32_t k = accel__visit_take(v, h->ops, max, &ex);
    uint64_t h0 = v->h - k;
    uint32_t m = 0;
    for (uint32_t i = 0; i < k; i++) {
        int status = 0;
        /* As run_ops (visit.c): an EX op is claimed against cancellers
         * here, when it is handed out; relaxed: close(CANCEL)'s flag. */
        if (ex & (UINT32_C(1) << i))
            status = accel__visit_claim(v, h0, i, &ex, k);
        else if (atomic_load_explicit(&s->close_cancels, memory_order_relaxed))
            status = ACCEL_ECLOSED;
        if (status) {
            h->pre[i] = status;
            accel__bump(status == ACCEL_EEXPIRED ? &s->expired : &s->canceled,
                        1);
            continue;
        }
        h->pre[i] = HANDED;
        accel__bump(&s->dispatched, 1);
        /* op_start(session, position, arg) */
        ACCEL_TRACE3(op_start, s, h0 + i, h->ops[i].arg);
        out[m++] = h->ops[i];
    }
    v->n = k;
    h->k = k;
    h->handed = m;
}

/* A visit of a batched session (batch.c): one batch, formed as accel's
 * own worker forms one, of up to cap (at most ACCEL_BATCH_MAX) ops; the
 * ops that run are compacted into out[]. False: the session has no batch
 * function now (or the host worker's buffer could not be had): nothing taken. */
static bool take_batch(accel__host_worker *h, accel_op *out, unsigned cap)
{
    if (!h->big) {
        h->big = accel__calloc_aligned(64, sizeof(*h->big));
        if (!h->big)
            return false; /* one by one, as without a batch function */
    }
    uint32_t k, m;
    if (!accel__batch_host_form(&h->v, cap, h->big->ops, h->big->pre, &k, &m,
                                &h->batch_t0))
        return false;
    uint32_t j = 0;
    for (uint32_t i = 0; i < k; i++) {
        if (h->big->pre[i])
            continue; /* completed unrun in end */
        h->big->pre[i] = HANDED;
        out[j++] = h->big->ops[i];
    }
    h->batch = true;
    h->k = k;
    h->handed = m;
    return true;
}

static int begin_session(accel_runtime *rt, unsigned worker,
                         accel__host_worker *h, accel_session *s,
                         accel_op *ops, unsigned cap, unsigned *n,
                         bool watched);

int accel_host_visit_begin(accel_runtime *rt, unsigned worker, accel_op *ops,
                           unsigned cap, unsigned *n)
{
    accel__host_worker *h = host_worker_of(rt, worker);
    if (!h || !n || cap == 0 || !ops || h->open)
        return ACCEL_EINVAL;
    if (accel__fork_stale(rt->fork_gen))
        return ACCEL_ECLOSED;
    accel__lane lane = accel__lane_of_worker(worker, rt->cfg.short_lane_workers);
    accel__sched_entity *e = accel__sched_pick(rt->sched, lane);
    accel__bump(&rt->workers[worker].picks, 1);
    if (!e)
        return ACCEL_EAGAIN;
    return begin_session(rt, worker, h, e->owner, ops, cap, n, true);
}

/* Opens the host worker's visit of s, which the host worker holds as picked (the
 * scheduler's reference with it); watched: the monitor watches it (on
 * this thread). */
static int begin_session(accel_runtime *rt, unsigned worker,
                         accel__host_worker *h, accel_session *s,
                         accel_op *ops, unsigned cap, unsigned *n,
                         bool watched)
{
    accel__worker *w = &rt->workers[worker];
    accel__bump(&w->visits, 1);
    w->own_ns = 0; /* this visit's announced waits */
    w->parked_t0 = 0; /* a parked detach of an earlier visit never attached */
    w->lent_ns = 0;
    /* An announcement of an earlier visit still open (host.h lets the
     * host end it with none open): this visit is credited its part from
     * here on, not the time since that visit's end. */
    if (__builtin_expect(w->block_depth != 0, 0))
        accel__compensate_visit_attach(w);
    h->watched = watched;
    if (watched)
        watch_here(rt, worker);
    accel__visit_begin(&h->v, rt, s, accel__now_ns());
    if (watched) /* a submitter's own visit holds no worker */
        accel__presume_begin(w, s);
    h->open = true;
    h->in_line = (s->bops->flags & ACCEL__BACKEND_RUNS_INLINE) != 0;
    if (!h->in_line) {
        /* A device session: its backend runs the ops, here, as a C
         * worker would. */
        accel__visit_run(&h->v);
        h->k = h->handed = 0;
        *n = 0;
        return ACCEL_OK;
    }
    h->batch = false;
    /* relaxed: a hint, as in accel__visit_run; the batch's form reads the
     * configuration itself. */
    if (!atomic_load_explicit(&s->batched, memory_order_relaxed) ||
        !take_batch(h, ops, cap < ACCEL_BATCH_MAX ? cap : ACCEL_BATCH_MAX))
        take_ops(h, ops,
                 cap < ACCEL_HOST_VISIT_MAX ? cap : ACCEL_HOST_VISIT_MAX);
    *n = h->handed;
    return ACCEL_OK;
}

/* Direct hand-off: a submit that makes s runnable while its caller is
 * about to begin on host worker `worker` gives s to that begin when the host worker's
 * pick would return s anyway (accel__sched_enqueue_or_take): the same
 * order, without the calendar's push and pop. No wake is asked for s
 * then: the host worker runs it, and whatever its visit leaves re-queued is the
 * end's to wake for (a helper that stops ends with _end_stop). Otherwise
 * the submit enqueues and wakes as accel_submit, and the begin picks. */
/* own_only: a visit is begun only by the direct hand-off, never by the
 * host worker's own pick (accel_host_submit_own). deadline_ns, ticket: the op's
 * as accel_submit_ex's (0, NULL: a plain op). */
static int submit_begin(accel_runtime *rt, unsigned worker, accel_session *s,
                        const accel_op *op, int64_t deadline_ns,
                        int64_t timeout_ns, accel_ticket *ticket,
                        accel_op *ops, unsigned cap, unsigned *n, int *begun,
                        bool own_only)
{
    if (ticket)
        *ticket = (accel_ticket){0}; /* a failed submit leaves no ticket */
    accel__host_worker *h = host_worker_of(rt, worker);
    if (!h || !s || s->rt != rt || !op || !op->fn ||
        timeout_ns < ACCEL_FOREVER || deadline_ns < 0 || !n || !begun ||
        cap == 0 || !ops || h->open || h->idle)
        return ACCEL_EINVAL;
    *n = 0;
    *begun = ACCEL_EAGAIN;
    accel__submit_take t = {
        .lane = accel__lane_of_worker(worker, rt->cfg.short_lane_workers)};
    int rc = accel__submit_take_one_ex(s, op, deadline_ns, timeout_ns, ticket,
                                       &t);
    if (rc != ACCEL_OK)
        return rc;
    if (t.taken) {
        accel__bump(&rt->workers[worker].picks, 1);
        *begun = begin_session(rt, worker, h, s, ops, cap, n, !own_only);
    } else if (!own_only) {
        *begun = accel_host_visit_begin(rt, worker, ops, cap, n);
    }
    /* else: queued and woken for as accel_submit; no visit. */
    return ACCEL_OK;
}

int accel_host_submit_begin(accel_runtime *rt, unsigned worker,
                            accel_session *s, const accel_op *op,
                            int64_t timeout_ns, accel_op *ops, unsigned cap,
                            unsigned *n, int *begun)
{
    return submit_begin(rt, worker, s, op, 0, timeout_ns, NULL, ops, cap, n,
                        begun, false);
}

int accel_host_submit_own(accel_runtime *rt, unsigned worker,
                          accel_session *s, const accel_op *op,
                          int64_t timeout_ns, accel_op *ops, unsigned cap,
                          unsigned *n, int *begun)
{
    return submit_begin(rt, worker, s, op, 0, timeout_ns, NULL, ops, cap, n,
                        begun, true);
}

int accel_host_submit_own_ex(accel_runtime *rt, unsigned worker,
                             accel_session *s, const accel_op *op,
                             int64_t deadline_ns, int64_t timeout_ns,
                             accel_ticket *ticket, accel_op *ops, unsigned cap,
                             unsigned *n, int *begun)
{
    return submit_begin(rt, worker, s, op, deadline_ns, timeout_ns, ticket,
                        ops, cap, n, begun, true);
}

/* stop: the host worker will not begin again soon (accel_host_visit_end_stop).
 * *now: when the visit ended (its charge's clock read). */
static int visit_end(accel_runtime *rt, unsigned worker, const int *status,
                     unsigned n, bool stop, uint64_t *now)
{
    accel__host_worker *h = host_worker_of(rt, worker);
    if (!h || !h->open || n != h->handed || (n && !status))
        return ACCEL_EINVAL;
    accel__visit *v = &h->v;
    accel_session *s = v->s;
    const accel_op *ops = h->ops;
    const int *pre = h->pre;
    if (h->batch) {
        accel__batch_host_ran(v, h->handed, h->batch_t0);
        ops = h->big->ops;
        pre = h->big->pre;
        h->batch = false;
    }
    for (uint32_t i = 0, j = 0; i < h->k; i++) {
        int st = pre[i];
        bool ran = st == HANDED;
        if (ran)
            st = status[j++];
        accel__visit_op_done(s, &ops[i], st, ran);
    }
    if (h->k)
        accel__waiters_finished(&s->waiters, h->k);
    h->open = false;
    /* The time the host worker sat in its announced waits off a CPU while
     * another could run in its place is not charged, as for accel's own
     * workers (worker.c); a detected wait is (compensate.h). */
    accel__worker *w = &rt->workers[worker];
    if (h->watched)
        accel__presume_judge(w, s);
    if (__builtin_expect((w->own_ns | w->lent_ns | w->block_depth) != 0, 0))
        v->blocked_ns = accel__compensate_visit_announced_ns(w, v->t0);
    unsigned lanes = accel__visit_end(v, now);
    if (h->watched) /* relaxed: as watch_here */
        atomic_store_explicit(&rt->workers[worker].in_visit, 0,
                              memory_order_relaxed);
    accel__lane lane = accel__lane_of_worker(worker, rt->cfg.short_lane_workers);
    /* Re-queued for lanes this host worker is not in (a short-lane host worker's session
     * turned long): a worker that may run it must not stay parked. A
     * host worker that stops does not begin again: then any re-queue wakes one
     * (the submitter's side of the parking protocol, after the re-queue
     * published the session: a worker either sees it in its pick after
     * announcing, or is seen parked here). */
    if (lanes && (stop || !(lanes & accel__lane_mask(lane))))
        accel__park_wake_lanes(rt, lanes);
    return ACCEL_OK;
}

int accel_host_visit_end(accel_runtime *rt, unsigned worker,
                         const int *status, unsigned n)
{
    uint64_t now;
    return visit_end(rt, worker, status, n, false, &now);
}

int accel_host_visit_end_stop(accel_runtime *rt, unsigned worker,
                              const int *status, unsigned n)
{
    uint64_t now;
    return visit_end(rt, worker, status, n, true, &now);
}

int accel_host_visit_end_ex(accel_runtime *rt, unsigned worker,
                            const int *status, unsigned n, unsigned flags,
                            int64_t *end_ns)
{
    uint64_t now;
    if (flags & ~ACCEL_HOST_END_STOP)
        return ACCEL_EINVAL;
    int rc = visit_end(rt, worker, status, n, flags & ACCEL_HOST_END_STOP,
                       &now);
    if (rc == ACCEL_OK && end_ns)
        *end_ns = (int64_t)now;
    return rc;
}

int accel_host_visit_attach(accel_runtime *rt, unsigned worker)
{
    accel__host_worker *h = host_worker_of(rt, worker);
    /* A thread that runs the visit already (began or attached it) keeps
     * the outer session it has: an attach here would make the visit's
     * end put back the visit's own session. */
    if (!h || !h->open || accel__tls_current == h->v.s)
        return ACCEL_EINVAL;
    /* The visit's end puts back what this thread had before it. */
    h->v.outer = accel__tls_current;
    accel__tls_current = h->v.s;
    if (h->watched)
        watch_here(rt, worker);
    /* a parked detach's time is credited; a wait open: this thread's clock */
    accel__compensate_visit_attach(&rt->workers[worker]);
    return ACCEL_OK;
}

int accel_host_visit_detach_ex(accel_runtime *rt, unsigned worker,
                                unsigned flags)
{
    accel__host_worker *h = host_worker_of(rt, worker);
    bool parked = (flags & ACCEL_HOST_DETACH_PARKED) != 0;
    bool lent = (flags & ACCEL_HOST_DETACH_LENT) != 0;
    if (!h || !h->open || accel__tls_current != h->v.s ||
        (flags & ~(ACCEL_HOST_DETACH_PARKED | ACCEL_HOST_DETACH_LENT)) ||
        (parked && lent))
        return ACCEL_EINVAL;
    accel__tls_current = h->v.outer;
    /* parked or lent: from here; a wait open: bank this thread's part */
    accel__compensate_visit_detach(&rt->workers[worker], parked, lent);
    /* No thread runs the visit until an attach: the monitor leaves it
     * (relaxed: as watch_here). */
    if (h->watched)
        atomic_store_explicit(&rt->workers[worker].in_visit, 0,
                              memory_order_relaxed);
    return ACCEL_OK;
}

int accel_host_visit_detach(accel_runtime *rt, unsigned worker)
{
    return accel_host_visit_detach_ex(rt, worker, 0);
}

int accel_host_visit_watch(accel_runtime *rt, unsigned worker)
{
    accel__host_worker *h = host_worker_of(rt, worker);
    if (!h || !h->open || h->watched || accel__tls_current != h->v.s)
        return ACCEL_EINVAL;
    /* As a watched begin, from here: the monitor samples this thread for
     * the visit, and its end judges it (visit_end). */
    h->watched = true;
    watch_here(rt, worker);
    return ACCEL_OK;
}

int accel_host_idle_begin(accel_runtime *rt, unsigned worker)
{
    accel__host_worker *h = host_worker_of(rt, worker);
    if (!h || h->idle || h->open)
        return ACCEL_EINVAL;
    h->idle = true;
    accel__bump(&rt->workers[worker].parks, 1);
    /* parked++ then a seq_cst fence: pairs with the submitter's seq_cst
     * push and load of the count (park.c). */
    accel__park_announce(
        rt, accel__lane_of_worker(worker, rt->cfg.short_lane_workers));
    return ACCEL_OK;
}

int accel_host_idle_end(accel_runtime *rt, unsigned worker, bool found_work)
{
    accel__host_worker *h = host_worker_of(rt, worker);
    if (!h || !h->idle)
        return ACCEL_EINVAL;
    h->idle = false;
    accel__park_leave(
        rt, accel__lane_of_worker(worker, rt->cfg.short_lane_workers),
        found_work);
    return ACCEL_OK;
}

int accel_host_blocking_begin(accel_runtime *rt, unsigned worker)
{
    accel__host_worker *h = host_worker_of(rt, worker);
    if (!h || !h->open)
        return ACCEL_EINVAL;
    return accel__compensate_host_block(rt, &rt->workers[worker], true);
}

int accel_host_blocking_end(accel_runtime *rt, unsigned worker)
{
    accel__host_worker *h = host_worker_of(rt, worker);
    if (!h)
        return ACCEL_EINVAL;
    return accel__compensate_host_block(rt, &rt->workers[worker], false);
}

int accel_host_worker_add(accel_runtime *rt, unsigned *worker)
{
    if (!rt || !worker || !(rt->cfg.flags & ACCEL_RUNTIME_HOST_WORKERS))
        return ACCEL_EINVAL;
    if (accel__fork_stale(rt->fork_gen))
        return ACCEL_ECLOSED;
    return accel__compensate_host_add(rt, worker);
}

int accel_host_worker_leave(accel_runtime *rt, unsigned worker, unsigned flags)
{
    accel__host_worker *h = host_worker_of(rt, worker);
    if (!h || worker < rt->nworkers || h->open || h->idle ||
        (flags & ~ACCEL_HOST_LEAVE_IF_SURPLUS))
        return ACCEL_EINVAL;
    return accel__compensate_host_leave(rt, &rt->workers[worker],
                                  flags & ACCEL_HOST_LEAVE_IF_SURPLUS);
}

/* The cast drops _Atomic from the word: the host's atomic stores and the
 * monitor's atomic loads see one 8-byte aligned word (asserted). */
_Static_assert(sizeof(_Atomic uint64_t) == sizeof(uint64_t) &&
                   _Alignof(_Atomic uint64_t) == _Alignof(uint64_t),
               "the op word is a plain 64-bit word");

uint64_t *accel_host_op_word(accel_runtime *rt, unsigned worker)
{
    if (!rt || !(rt->cfg.flags & ACCEL_RUNTIME_HOST_WORKERS) ||
        worker >= rt->nworkers + rt->comp.extra_max)
        return NULL;
    return (uint64_t *)&rt->workers[worker].ops;
}
