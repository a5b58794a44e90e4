/*
 * Worker pool: each worker picks a runnable session from the scheduler,
 * runs a bounded visit of its ops (it is the ring's only consumer while it
 * holds SCHEDULED), charges the measured service, and either re-queues the
 * session or turns it idle. With nothing runnable it parks on a futex.
 *
 * Parking without lost wake-ups (asymmetric Dekker, futex.h):
 *   parker: seq = park_seq; parked++; fence_cold; pick again;
 *           futex_wait(park_seq, seq); parked--, claimed-- if > 0
 *   waker:  enqueue; fence_hot; if (parked > claimed) { claimed++;
 *           park_seq++; wake 1 }
 * Either the parker's second pick sees the enqueued session, or the waker
 * sees a parked worker and its park_seq bump makes the futex_wait return.
 * An idle runtime's workers sleep in futex_wait: no CPU.
 *
 * Claims: a wake counts itself in `claimed` until a parked worker leaves,
 * so a burst of wakes inside one worker's wake-up window reaches as many
 * parked workers (of the short lane first, then of the general one), not
 * the same one again while the others stay parked. Every claim is followed
 * by a park_seq bump and a futex wake, so at least one parked worker leaves
 * after it; a leaving worker takes one claim, and passes its wake on if it
 * leaves with work its own second pick found (that claim was for other
 * work). models/lanes.pml checks this with its broken variants.
 *
 * A visit runs outside any RCU read-side section: the scheduler's
 * reference (taken with SCHEDULED, dropped by the worker's unref as its
 * last touch of the session) keeps the session alive, so one long op does
 * not hold back the grace periods every reclamation and table resize
 * waits for.
 */

#include <limits.h>
#include <pthread.h>
#include <sched.h>

#include "clock.h"
#include "fault.h"
#include "futex.h"
#include "rcu.h"
#include "runtime.h"
#include "session.h"
#include "trace.h"
#include "yield.h"

/* After [R2] (each take): wake the producers sleeping for room, if one
 * announced itself since the last wake. The take that frees a slot must
 * wake them (an op may wait for a producer the ring holds back). When no
 * one waits: a compiler barrier and a relaxed load; when someone does: one
 * exchange and one wake per announcement, not one per take. */
static inline void notify_room(accel_session *s)
{
    accel__fence_hot();
    /* relaxed load and exchange: the sleeper's cold fence orders its
     * announcement against our head store (futex.h); the notify's release
     * bump of `event` publishes the head to the woken. Only the consumer
     * clears the flag, so one announcement gets one wake. */
    if (atomic_load_explicit(&s->space_waiters, memory_order_relaxed) &&
        atomic_exchange_explicit(&s->space_waiters, 0, memory_order_relaxed))
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
        /* relaxed: close's store; an op taken as it lands may still run
         * (accel.h). */
        bool cancel = atomic_load_explicit(&s->cancel, memory_order_relaxed);
        /* Waiters count completions, not positions (sync's target is a
         * count of accepted ops): a cancelled op must not complete while
         * earlier ops are still on the device, or a sync for those would
         * return before their done ran. Leave it queued; the visit's poll
         * re-queues the session until the device work is done. */
        if (cancel && s->bops->poll && s->bops->poll(s->bstate, s) > 0)
            break;
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
        notify_room(s);
        if (stamp)
            accel__waitstat_record(&s->wait, accel__now_ns() - stamp);
        /* The status of an op completed without running, else 0. A plain
         * op pays a compare here (the close flag was loaded above). */
        int unrun = 0;
        if (claim != ACCEL__CLAIM_PLAIN || cancel)
            unrun = unrun_status(s, claim, deadline);
        if (unrun) {
            /* Completion order, as above: an op cancelled on its own or
             * expired is known only once taken, so the earlier ops still
             * on the device are completed first (rare: device sessions
             * only; the CPU backend has no poll). */
            if (s->bops->poll)
                while (s->bops->poll(s->bstate, s) > 0)
                    sched_yield();
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

static inline uint32_t unclaimed(uint64_t v)
{
    return (uint32_t)v - (uint32_t)(v >> 32);
}

/* Claims one parked worker that no waker has claimed yet: true if done. */
static inline bool claim_parked(_Atomic uint64_t *idle)
{
    /* relaxed: ordered against the parker by the fence pair (above); the
     * claim publishes nothing (the session went through the calendar). */
    uint64_t v = atomic_load_explicit(idle, memory_order_relaxed);
    while (unclaimed(v)) {
        if (atomic_compare_exchange_weak_explicit(idle, &v,
                                                  v + ACCEL__CLAIMED,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed))
            return true;
    }
    return false;
}

void accel__runtime_wake_lanes(accel_runtime *rt, unsigned lanes)
{
    accel__fence_hot();
    if ((lanes & ACCEL__SCHED_LANE_SHORT) && claim_parked(&rt->idle_short)) {
        /* release: pairs with the parker's acquire load of the word. */
        atomic_fetch_add_explicit(&rt->park_seq_short, 1,
                                  memory_order_release);
        accel__futex_wake(&rt->park_seq_short, 1);
    } else if ((lanes & ACCEL__SCHED_LANE_GENERAL) &&
               claim_parked(&rt->idle_workers)) {
        atomic_fetch_add_explicit(&rt->park_seq, 1, memory_order_release);
        accel__futex_wake(&rt->park_seq, 1);
    }
}

/* A parked worker leaves: one parked fewer, and one claim fewer if any.
 * Returns whether it took a claim. */
static inline bool unpark(_Atomic uint64_t *idle)
{
    uint64_t v = atomic_load_explicit(idle, memory_order_relaxed);
    uint64_t nv;
    do {
        nv = v - ACCEL__PARKED - ((v >> 32) ? ACCEL__CLAIMED : 0);
        /* relaxed: a count; the calendar publishes the work. */
    } while (!atomic_compare_exchange_weak_explicit(
        idle, &v, nv, memory_order_relaxed, memory_order_relaxed));
    return (v >> 32) != 0;
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
    _Atomic uint64_t *idle = lane ? &rt->idle_short : &rt->idle_workers;
    uint32_t seq = atomic_load_explicit(word, memory_order_acquire);
    atomic_fetch_add_explicit(idle, ACCEL__PARKED, memory_order_relaxed);
    accel__fence_cold();
    e = accel__sched_pick(rt->sched, lane);
    if (!e && !atomic_load_explicit(&rt->stopping, memory_order_acquire)) {
        bump(&w->parks, 1);
        ACCEL_TRACE2(park, w->index, lane); /* park(worker, lane) */
        accel__futex_wait(word, seq, -1);
        ACCEL_TRACE2(wake, w->index, lane); /* wake(worker, lane) */
    }
    /* A worker that leaves with work from its second pick did not need the
     * claim it takes: the claim may be for work queued after that pick,
     * so pass the wake on to another parked worker (a claim on the short
     * lane was for work both lanes may run). models/lanes.pml */
    if (unpark(idle) && e)
        accel__runtime_wake_lanes(rt, lane ? ACCEL__SCHED_LANE_SHORT |
                                                 ACCEL__SCHED_LANE_GENERAL
                                           : ACCEL__SCHED_LANE_GENERAL);
    return e;
}

static void *worker_main(void *arg)
{
    accel__worker *w = arg;
    accel_runtime *rt = w->rt;
    accel__fault_thread_is_worker();
    accel__yield_thread_index((UINT64_C(1) << 32) + w->index);
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
        unsigned lanes = run_visit(rt, e->owner, &now);
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
        if (ACCEL__FAULT("pthread_create") ||
            pthread_create(&w->thread, NULL, worker_main, w) != 0) {
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
