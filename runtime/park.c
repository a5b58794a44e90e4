/*
 * Parking and waking workers: a worker with nothing runnable parks on a
 * futex; an enqueue wakes a parked worker of a lane that may run the
 * session. Host-driven workers (host.c) use the same counts, with the
 * host's sleep and wake in place of the futex.
 *
 * Parking without lost wake-ups (Dekker over C11's single total order S):
 *   parker: seq = park_seq; parked++; seq_cst fence; pick again;
 *           futex_wait(park_seq, seq); parked--, claimed-- if > 0
 *   waker:  enqueue (its seq_cst RMWs on the calendar, sched_calendar.c);
 *           seq_cst load of parked; if (parked > claimed) { claimed++;
 *           park_seq++; wake 1 }
 * If the parker's fence precedes the waker's load in S, the load sees the
 * parker counted (C11 7.17.3: a seq_cst load that follows a seq_cst fence
 * in S sees what was sequenced before the fence); else the enqueue's RMWs
 * precede the fence too, and the second pick, sequenced after it, sees
 * them. Either way the session is picked or the waker's park_seq bump
 * makes the futex_wait return. A pick's repair of the calendar can hide
 * a completed push from the second pick for a moment (a bit cleared,
 * then set back); the repairer then wakes as a waker would
 * (accel__park_restored; sched_calendar.c). On x86 the waker's half is the locked
 * RMWs the enqueue does anyway and a plain load; the parker pays one
 * fence. (The asymmetric pair of futex.h, a membarrier on the parker's
 * side, cost a parking worker 10-15 us under load on a 2-vCPU VM: an
 * IPI to every CPU running a thread of the process, at each park.)
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
 */

#include <sched.h>

#include "clock.h"
#include "compensate.h"
#include "futex.h"
#include "park.h"
#include "runtime_types.h"
#include "session.h"
#include "trace.h"
#include "visit.h"
#include "worker_types.h"

void accel__park_enqueue(accel_session *s, bool new_claim)
{
    if (new_claim)
        accel__session_ref(s); /* the scheduler's reference */
    accel__park_wake_lanes(
        s->rt, accel__sched_enqueue(s->rt->sched, &s->se, new_claim));
}

bool accel__park_enqueue_or_take(accel_session *s, accel__lane lane)
{
    accel__session_ref(s); /* the scheduler's reference: the taker holds
                              it as a picker would */
    bool taken = false;
    unsigned lanes =
        accel__sched_enqueue_or_take(s->rt->sched, &s->se, true, lane, &taken);
    if (!taken)
        accel__park_wake_lanes(s->rt, lanes);
    return taken;
}

static inline uint32_t unclaimed(uint64_t v)
{
    return (uint32_t)v - (uint32_t)(v >> 32);
}

/* Claims one parked worker that no waker has claimed yet: true if done. */
static inline bool claim_parked(_Atomic uint64_t *idle)
{
    /* seq_cst: the waker's half of the parking pair (the top of this
     * file), after the enqueue's seq_cst RMWs or a seq_cst fence. The CAS
     * is relaxed: the claim publishes nothing (the session went through
     * the calendar). */
    uint64_t v = atomic_load_explicit(idle, memory_order_seq_cst);
    while (unclaimed(v)) {
        if (atomic_compare_exchange_weak_explicit(idle, &v,
                                                  v + ACCEL__CLAIMED,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed))
            return true;
    }
    return false;
}

/* Wakes the claimed parked worker: a futex wake of the lane's word, or,
 * with host-driven workers, the host's callback (the host's own sleep
 * keeps the wake: accel.h). */
void (*_Atomic accel__wake_window_hook)(accel_runtime *rt, unsigned lane);

static void wake_claimed(accel_runtime *rt, _Atomic uint32_t *word,
                         accel__lane lane)
{
    /* relaxed: a test sets it before it creates the runtime. Loaded only
     * after a claim, on the way to a futex wake (a syscall). */
    void (*hook)(accel_runtime *, unsigned) =
        atomic_load_explicit(&accel__wake_window_hook, memory_order_relaxed);
    if (__builtin_expect(hook != NULL, 0))
        hook(rt, lane);
    if (rt->cfg.host_wake) {
        rt->cfg.host_wake(rt->cfg.host_wake_arg, lane);
        return;
    }
    /* release: pairs with the parker's acquire load of the word. */
    atomic_fetch_add_explicit(word, 1, memory_order_release);
    accel__futex_wake(word, 1);
}

/* The wake path. pushed: this thread has just pushed the session into the
 * scheduler (accel__sched_enqueue), and the push's seq_cst RMWs (the
 * calendar's head CAS [R1] and bit set [SC1], sched_calendar.c) stand
 * where a seq_cst fence would, against the parker's fence (the top of
 * this file) and in the blocked hand-off (compensate.c: the submitter's
 * half), so the path with no parked worker is a compiler barrier and
 * three plain loads (on x86). A caller that pushed nothing (a parked
 * worker passing its claim on) fences instead: fence to fence with the
 * parker's, and with the blocker's. */
static inline void wake_lanes(accel_runtime *rt, unsigned lanes, bool pushed)
{
    /* The monitor's flag's pair (compensate.c), loaded below. */
    accel__fence_hot();
    if (!pushed)
        atomic_thread_fence(memory_order_seq_cst);
    if ((lanes & ACCEL__SCHED_LANE_SHORT) && claim_parked(&rt->idle_short))
        wake_claimed(rt, &rt->park_seq_short, ACCEL__LANE_SHORT);
    else if (lanes & ACCEL__SCHED_LANE_GENERAL) {
        if (claim_parked(&rt->idle_workers))
            wake_claimed(rt, &rt->park_seq, ACCEL__LANE_GENERAL);
        /* No parked worker for it: blocked workers may be owed an extra,
         * or the monitor may need arming (compensate.c: the submitter's
         * half of its pairs; for the monitor's flag, the fence_hot
         * above). */
        else {
            /* seq_cst load of `blocked`: pairs with the blocker's seq_cst
             * fence (hand_on, compensate.c). The push's seq_cst RMWs
             * precede this load in the single total order S. If the
             * blocker's fence precedes it too, this load sees the
             * blocker counted (C11 7.17.3: a seq_cst load after a
             * seq_cst fence in S sees what was sequenced before the
             * fence); else the fence follows this load, so the push too,
             * and the blocker's look at the scheduler after its fence
             * sees the push (a load sequenced after a seq_cst fence sees
             * the seq_cst writes before the fence in S). Not pushed: the
             * fence at the top pairs with the blocker's, fence to fence.
             * On x86 a plain load. relaxed: the monitor's flag (0 and 1
             * unless so; the same line). */
            if (__builtin_expect(
                    atomic_load_explicit(&rt->blocked,
                                         memory_order_seq_cst) != 0 ||
                        !atomic_load_explicit(&rt->monitor_armed,
                                              memory_order_relaxed),
                    0))
                accel__compensate_starved(rt);
        }
    }
}

void accel__park_wake_lanes(accel_runtime *rt, unsigned lanes)
{
    wake_lanes(rt, lanes, true);
}

void accel__park_restored(void *arg, unsigned lanes)
{
    /* The whole wake path, the set back's seq_cst RMW standing for the
     * push: a parker's look, a blocker's look at the calendar (the
     * blocked hand-off) and the monitor's look before it sleeps may each
     * have fallen between the clear and the set back. */
    wake_lanes(arg, lanes, true);
}

bool accel__park_wake_general(accel_runtime *rt)
{
    if (!claim_parked(&rt->idle_workers))
        return false;
    wake_claimed(rt, &rt->park_seq, ACCEL__LANE_GENERAL);
    return true;
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
 * bounded by the clock, not by a count of pauses: a pause costs an order
 * of magnitude more cycles on some CPUs than on others, and a count
 * tuned on one spins far longer on the other, taking CPU from the
 * threads that have work (docs/experiments/2026-ring-variants.md). */
#define ACCEL__SPIN_NS 1000u
#define ACCEL__SPIN_YIELDS 2

static accel__sched_entity *spin_pick(accel_runtime *rt, accel__lane lane)
{
    uint64_t t0 = accel__now_ns();
    for (unsigned i = 1;; i++) {
        for (int k = 0; k < 8; k++)
            accel__cpu_relax();
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

void (*_Atomic accel__park_window_hook)(accel_runtime *rt, unsigned lane);

accel__sched_entity *accel__park_worker(accel_runtime *rt, accel__worker *w,
                                       int64_t timeout_ns, bool *timed_out)
{
    accel__lane lane = w->lane;
    accel__sched_entity *e = spin_pick(rt, lane);
    if (e)
        return e;
    /* Short-lane workers park apart: a wake-up for work they may not run
     * must reach a general worker. */
    _Atomic uint32_t *word =
        lane == ACCEL__LANE_SHORT ? &rt->park_seq_short : &rt->park_seq;
    uint32_t seq = atomic_load_explicit(word, memory_order_acquire);
    /* relaxed: a test sets it before it creates the runtime. */
    void (*hook)(accel_runtime *, unsigned) =
        atomic_load_explicit(&accel__park_window_hook, memory_order_relaxed);
    if (__builtin_expect(hook != NULL, 0))
        hook(rt, lane);
    accel__park_announce(rt, lane);
    e = accel__sched_pick(rt->sched, lane);
    /* acquire: pairs with accel__worker_stop's release store of stopping. */
    if (!e && !atomic_load_explicit(&rt->stopping, memory_order_acquire)) {
        accel__bump(&w->parks, 1);
        ACCEL_TRACE2(park, w->index, lane); /* park(worker, lane) */
        *timed_out = accel__futex_wait(word, seq, timeout_ns) != 0;
        ACCEL_TRACE2(wake, w->index, lane); /* wake(worker, lane) */
    }
    /* An extra that timed out retires: uncounted first, so that the
     * claim it may take, passed on as for found work (it does not pick
     * again), can start a new extra if one is owed (compensate.c). */
    if (*timed_out)
        accel__compensate_retire_idle(rt);
    accel__park_leave(rt, lane, e != NULL || *timed_out);
    return e;
}

void accel__park_announce(accel_runtime *rt, accel__lane lane)
{
    _Atomic uint64_t *idle =
        lane == ACCEL__LANE_SHORT ? &rt->idle_short : &rt->idle_workers;
    /* relaxed: the count is ordered against the pick that follows by the
     * seq_cst fence: the parker's half of the parking pair (the top of
     * this file; the waker's seq_cst load of the count in claim_parked). */
    atomic_fetch_add_explicit(idle, ACCEL__PARKED, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
}

void accel__park_leave(accel_runtime *rt, accel__lane lane, bool found)
{
    _Atomic uint64_t *idle =
        lane == ACCEL__LANE_SHORT ? &rt->idle_short : &rt->idle_workers;
    /* A worker that leaves with work from its second pick did not need the
     * claim it takes: the claim may be for work queued after that pick,
     * so pass the wake on to another parked worker (a claim on the short
     * lane was for work both lanes may run). models/lanes.pml */
    if (unpark(idle) && found)
        wake_lanes(rt,
                   lane == ACCEL__LANE_SHORT
                       ? ACCEL__SCHED_LANE_SHORT | ACCEL__SCHED_LANE_GENERAL
                       : ACCEL__SCHED_LANE_GENERAL,
                   false);
}
