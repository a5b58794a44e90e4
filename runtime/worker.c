/*
 * Worker pool: each worker picks a runnable session from the scheduler,
 * runs a bounded visit of its ops (it is the ring's only consumer while it
 * holds SCHEDULED), charges the measured service, and either re-queues the
 * session or turns it idle. With nothing runnable it parks on a futex.
 *
 * Parking without lost wake-ups (asymmetric Dekker, futex.h):
 *   parker: seq = park_seq; idle_workers++; fence_cold; pick again;
 *           futex_wait(park_seq, seq)
 *   waker:  enqueue; fence_hot; if (idle_workers) { park_seq++; wake 1 }
 * Either the parker's second pick sees the enqueued session, or the waker
 * sees idle_workers > 0 and its park_seq bump makes the futex_wait return.
 * An idle runtime's workers sleep in futex_wait: no CPU.
 *
 * Each visit runs inside an RCU read-side section, so the session cannot be
 * reclaimed under a worker that still touches it after its last op.
 */

#include <limits.h>
#include <pthread.h>
#include <sched.h>

#include "clock.h"
#include "futex.h"
#include "rcu.h"
#include "runtime.h"
#include "session.h"
#include "trace.h"

/* After [R2]: wake producers sleeping for room, every half ring of takes
 * (and at the end of the visit, force). */
static inline void notify_room(accel_session *s, uint64_t h, bool force)
{
    accel__fence_hot();
    /* relaxed: the cold fence on the sleeper's side orders it (futex.h). */
    if (atomic_load_explicit(&s->space_waiters, memory_order_relaxed) &&
        (force || (h & s->space_wake_mask) == 0))
        accel__session_notify(s);
}

/* Counters of the consumer side have one writer at a time: the worker
 * holding SCHEDULED (deferred completions run in its poll too), handed
 * over with [RMW1]/[RMW2]; a worker's own picks/visits/parks have one
 * writer, the worker. So a plain load and store, no locked RMW;
 * relaxed, they order nothing by themselves (finished does, [R5]). */
static inline void bump(_Atomic uint64_t *c, uint64_t by)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + by,
                          memory_order_relaxed);
}

static inline void finish_one(accel_session *s)
{
    uint64_t f = atomic_load_explicit(&s->finished, memory_order_relaxed) + 1;
    /* [R5] release: the done callback (and the counters above) happen
     * before a closer or syncer that sees the count; pairs with [A5] in
     * session.c. Single writer, so a store. */
    atomic_store_explicit(&s->finished, f, memory_order_release);
    accel__fence_hot();
    /* relaxed: the sleeper's cold fence orders it (session.c). */
    if (f >= atomic_load_explicit(&s->wake_at, memory_order_relaxed)) {
        atomic_store_explicit(&s->wake_at, UINT64_MAX, memory_order_relaxed);
        accel__session_notify(s);
    }
}

void accel__op_complete(accel_session *s, const accel_op *op, int status)
{
    /* op_done(session, arg, status) */
    ACCEL_TRACE3(op_done, s, op->arg, status);
    bump(status == 0 ? &s->completed : &s->failed, 1);
    if (op->done)
        op->done(op->arg, status);
    finish_one(s);
}

/* Whether an op that reached the consumer runs: 0, or the status it
 * completes with unrun. A won cancel first, then close(CANCEL), then the
 * deadline (only ops with one read the clock). */
static int unrun_status(accel_session *s, accel__claim claim,
                        int64_t deadline)
{
    if (claim == ACCEL__CLAIM_CANCELED)
        return ACCEL_ECANCELED;
    if (atomic_load_explicit(&s->cancel, memory_order_relaxed))
        return ACCEL_ECLOSED;
    if (deadline && (int64_t)accel__now_ns() >= deadline)
        return ACCEL_EEXPIRED;
    return 0;
}

/* A visit that empties the ring polls it a little before giving the
 * session up: under a stream of submits the next op is usually being
 * published right now, and going idle costs two RMWs on the producers'
 * line, a scheduler round trip and, for the producer, a kick. Bounded
 * (about a microsecond), so a sparse session costs little. */
#define ACCEL__LINGER_POLLS 32
/* Ops this long or longer read the clock after each op (see run_visit). */
#define ACCEL__CLOCK_CHECK_NS 1000u

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline bool ring_ready_soon(accel_session *s, uint64_t h)
{
    for (int i = 0; i < ACCEL__LINGER_POLLS; i++) {
        if (accel__ring_ready(&s->ring, h))
            return true;
        cpu_relax();
    }
    return accel__ring_ready(&s->ring, h);
}

/* Runs one visit of s starting at *now (the clock read when the visit
 * began: the end of the previous visit when the worker went straight on),
 * and leaves the visit's end time in *now. Returns the lanes that may run s
 * if it was re-queued, else 0. */
static unsigned run_visit(accel_runtime *rt, accel_session *s, uint64_t *now)
{
    accel_ctx ctx = {.session = s};
    uint32_t budget = accel__sched_visit_ops(rt->sched, &s->se);
    if (s->bops->capacity) {
        uint32_t room = s->bops->capacity(s->bstate);
        budget = room < budget ? room : budget;
    }
    uint64_t h = atomic_load_explicit(&s->head, memory_order_relaxed);
    uint32_t n = 0;
    uint64_t t0 = *now;
    /* The ops budget comes from the session's predicted op cost; if its
     * ops suddenly got longer, the clock ends the visit at quantum_ns. It
     * is read every `every` ops, chosen so that checking costs ~1/20 of
     * the predicted work (a clock read is ~40 ns here). */
    uint64_t cost = s->se.op_cost_ns;
    uint32_t every = cost >= ACCEL__CLOCK_CHECK_NS ? 1
                     : cost ? (uint32_t)(ACCEL__CLOCK_CHECK_NS / cost)
                            : 1;
    uint32_t until_check = every;
    accel__tls_current = s; /* ops and done callbacks of s run here */
    /* visit_start(session, id, ops allowed) */
    ACCEL_TRACE3(visit_start, s, s->id, budget);

    while (n < budget && (accel__ring_ready(&s->ring, h) ||
                          (n > 0 && ring_ready_soon(s, h)))) {
        accel_op op;
        /* The stamp of a sampled position is read before take frees the
         * position (a producer of h + depth may reuse the entry after). */
        uint64_t stamp =
            (h % ACCEL__WAIT_SAMPLE) == 0
                ? s->stamps[(h / ACCEL__WAIT_SAMPLE) & s->stamp_mask]
                : 0;
        int64_t deadline = 0;
        accel__claim claim =
            accel__ring_take_claim(&s->ring, &s->head, h, &op, &deadline);
        h++;
        notify_room(s, h, false);
        if (stamp)
            accel__waitstat_record(&s->wait, accel__now_ns() - stamp);
        /* The status of an op completed without running, else 0. A plain
         * op pays a compare and the close flag's load here. */
        int unrun = 0;
        if (claim != ACCEL__CLAIM_PLAIN ||
            atomic_load_explicit(&s->cancel, memory_order_relaxed))
            unrun = unrun_status(s, claim, deadline);
        if (unrun) {
            ACCEL_TRACE3(op_done, s, op.arg, unrun);
            bump(unrun == ACCEL_EEXPIRED ? &s->expired : &s->cancelled, 1);
            if (op.done)
                op.done(op.arg, unrun);
            finish_one(s);
        } else {
            int status;
            bump(&s->dispatched, 1);
            /* op_start(session, position, arg) */
            ACCEL_TRACE3(op_start, s, h - 1, op.arg);
            /* A backend whose run is fn itself: call fn directly. */
            if (s->bops->flags & ACCEL__BACKEND_RUNS_INLINE) {
                accel__op_complete(s, &op, op.fn(&ctx, op.arg));
            } else if (s->bops->run(s->bstate, &ctx, &op, &status) == 0) {
                accel__op_complete(s, &op, status);
            }
        }
        n++;
        if (--until_check == 0) {
            until_check = every;
            if (accel__now_ns() - t0 >= rt->cfg.quantum_ns)
                break;
        }
    }
    uint32_t pending = 0;
    if (s->bops->poll)
        pending = s->bops->poll(s->bstate, s);
    accel__tls_current = NULL;
    notify_room(s, h, true);
    *now = accel__now_ns();
    uint64_t service = *now - t0;
    /* visit_end(session, ops run, service ns, ops pending on a device) */
    ACCEL_TRACE4(visit_end, s, n, service, pending);
    bump(&s->service_ns, service);
    bump(&s->visits, 1);
    accel__sched_charge(rt->sched, &s->se, service, n);

    if (pending || accel__ring_ready(&s->ring, h)) {
        /* More to do: back into the scheduler, still SCHEDULED, keeping
         * the scheduler's reference. */
        return accel__sched_enqueue(rt->sched, &s->se, false);
    }
    ACCEL__YIELD_POINT();
    /* [RMW2] acq_rel: clears SCHEDULED; pairs with [RMW1] (session.h). */
    atomic_fetch_and_explicit(&s->state, ~ACCEL__S_SCHEDULED,
                              memory_order_acq_rel);
    ACCEL__YIELD_POINT();
    if (accel__ring_ready(&s->ring, h) &&
        !(atomic_fetch_or_explicit(&s->state, ACCEL__S_SCHEDULED,
                                   memory_order_acq_rel) &
          ACCEL__S_SCHEDULED)) {
        /* A producer published between our last look and the clear, and
         * we won the bit back: keep our reference and re-queue. */
        return accel__sched_enqueue(rt->sched, &s->se, true);
    }
    accel__session_unref(s); /* drop the scheduler's reference */
    return 0;
}

void accel__runtime_wake_lanes(accel_runtime *rt, unsigned lanes)
{
    accel__fence_hot();
    /* relaxed: ordered against the parker by the fence pair (above). */
    if ((lanes & ACCEL__SCHED_LANE_SHORT) &&
        atomic_load_explicit(&rt->idle_short, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&rt->park_seq_short, 1,
                                  memory_order_release);
        accel__futex_wake(&rt->park_seq_short, 1);
    } else if ((lanes & ACCEL__SCHED_LANE_GENERAL) &&
               atomic_load_explicit(&rt->idle_workers,
                                    memory_order_relaxed)) {
        atomic_fetch_add_explicit(&rt->park_seq, 1, memory_order_release);
        accel__futex_wake(&rt->park_seq, 1);
    }
}

/* Before parking, poll the scheduler a little: a futex sleep and wake
 * costs microseconds, and under a stream of submits the next session is
 * usually a few hundred ns away. Bounded in time (ACCEL__SPIN_NS of polls
 * with a pause, then a few yields), so an idle runtime still sleeps, and
 * not in pauses: a pause is ~10 cycles on some CPUs and ~140 on others,
 * where 64 x 8 of them spun 10 us per idle spell and took, on a loaded
 * 2-core machine, 5-20% of the CPU from the threads that had work. */
#define ACCEL__SPIN_NS 1000u
#define ACCEL__SPIN_YIELDS 2

static accel__sched_entity *spin_pick(accel_runtime *rt, unsigned lane)
{
    uint64_t t0 = accel__now_ns();
    for (unsigned i = 1;; i++) {
        for (int k = 0; k < 8; k++)
            cpu_relax();
        accel__sched_entity *e = accel__sched_pick(rt->sched, lane);
        if (e)
            return e;
        if ((i & 3) == 0 && accel__now_ns() - t0 >= ACCEL__SPIN_NS)
            break;
    }
    for (int i = 0; i < ACCEL__SPIN_YIELDS; i++) {
        sched_yield();
        accel__sched_entity *e = accel__sched_pick(rt->sched, lane);
        if (e)
            return e;
    }
    return NULL;
}

static accel__sched_entity *park(accel_runtime *rt, accel__worker *w)
{
    unsigned lane = w->lane;
    accel__sched_entity *e = spin_pick(rt, lane);
    if (e)
        return e;
    /* Short-lane workers park apart: a wake-up for work they may not run
     * must reach a general worker. */
    _Atomic uint32_t *word = lane ? &rt->park_seq_short : &rt->park_seq;
    _Atomic uint32_t *idle = lane ? &rt->idle_short : &rt->idle_workers;
    uint32_t seq = atomic_load_explicit(word, memory_order_acquire);
    atomic_fetch_add_explicit(idle, 1, memory_order_relaxed);
    accel__fence_cold();
    e = accel__sched_pick(rt->sched, lane);
    if (!e && !atomic_load_explicit(&rt->stopping, memory_order_acquire)) {
        bump(&w->parks, 1);
        ACCEL_TRACE2(park, w->index, lane); /* park(worker, lane) */
        accel__futex_wait(word, seq, -1);
        ACCEL_TRACE2(wake, w->index, lane); /* wake(worker, lane) */
    }
    atomic_fetch_sub_explicit(idle, 1, memory_order_relaxed);
    return e;
}

static void *worker_main(void *arg)
{
    accel__worker *w = arg;
    accel_runtime *rt = w->rt;
    accel__rcu_register();
    uint64_t now = 0; /* end of the last visit; 0: read the clock */
    for (;;) {
        accel__sched_entity *e = accel__sched_pick(rt->sched, w->lane);
        bump(&w->picks, 1);
        if (!e) {
            /* acquire: pairs with the release store in workers_stop. */
            if (atomic_load_explicit(&rt->stopping, memory_order_acquire))
                break;
            now = 0;
            e = park(rt, w);
            if (!e)
                continue;
        }
        bump(&w->visits, 1);
        if (!now)
            now = accel__now_ns();
        accel__rcu_read_lock();
        unsigned lanes = run_visit(rt, e->owner, &now);
        accel__rcu_read_unlock();
        /* Re-queued for lanes we are not in (a short-lane worker's session
         * turned long): a worker that may run it must not stay parked. */
        if (lanes && !(lanes & (1u << w->lane)))
            accel__runtime_wake_lanes(rt, lanes);
    }
    return NULL;
}

int accel__workers_start(accel_runtime *rt)
{
    for (unsigned i = 0; i < rt->nworkers; i++) {
        accel__worker *w = &rt->workers[i];
        w->rt = rt;
        w->index = i;
        w->lane = i < rt->cfg.short_lane_workers ? 1 : 0;
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            rt->nworkers = i;
            accel__workers_stop(rt);
            return ACCEL_ENOMEM;
        }
        accel__worker_setup_thread(rt, w);
    }
    return ACCEL_OK;
}

void accel__workers_stop(accel_runtime *rt)
{
    /* release: pairs with the acquire loads in worker_main/park. */
    atomic_store_explicit(&rt->stopping, 1, memory_order_release);
    atomic_fetch_add_explicit(&rt->park_seq, 1, memory_order_release);
    accel__futex_wake(&rt->park_seq, INT_MAX);
    atomic_fetch_add_explicit(&rt->park_seq_short, 1, memory_order_release);
    accel__futex_wake(&rt->park_seq_short, INT_MAX);
    for (unsigned i = 0; i < rt->nworkers; i++)
        pthread_join(rt->workers[i].thread, NULL);
}
