/*
 * Worker pool: each worker picks a runnable session from the scheduler,
 * runs a bounded visit of its ops (it is the ring's only consumer while it
 * holds SCHED), charges the measured service, and either re-queues the
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
 * A visit's ops run outside any RCU read-side section: the scheduler's
 * reference (taken with SCHED, dropped by the worker's unref, or handed to
 * a producer with a deferral) keeps the session alive, so one long op does
 * not hold back the grace periods every reclamation and table resize
 * waits for. Only the end of a visit, which may hand the session (and that
 * reference) to another thread and still look at the ring after, runs in
 * a short read-side section (visit_end).
 *
 * The visit code (accel__visit_*) and the parking counts are shared with
 * host-driven workers (host.c), whose visits the host's threads drive.
 */

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>

#include "clock.h"
#include "compensate.h"
#include "cpu_limits.h"
#include "fault.h"
#include "futex.h"
#include "progress.h"
#include "rcu.h"
#include "runtime.h"
#include "session.h"
#include "trace.h"
#include "worker.h"
#include "yield.h"

void accel__op_complete(accel_session *s, const accel_op *op, int status)
{
    accel__bump(status == 0 ? &s->completed : &s->failed, 1);
    /* op_done(session, arg, status) */
    ACCEL_TRACE3(op_done, s, op->arg, status);
    if (op->done)
        op->done(op->arg, status);
    accel__progress_finished(s, 1);
}

/* A visit that empties the ring polls it a little before giving the
 * session up: under a stream of submits the next op is usually being
 * published right now, and going idle costs a CAS on the producers' line,
 * a scheduler round trip and, for the producer, an enqueue. Bounded (about
 * a microsecond), so a sparse session costs little. (Skipping it after a
 * visit's first and only op while other sessions waited saved CPU with
 * 100k sparse sessions but cost 4 producers -> 4 sessions ~5%; skipping
 * it per session while its lingers missed made those 100k sessions'
 * visits 1.7x as many, each finding fewer ops, and slower per op: both
 * dropped, docs/ring.md.) */
#define ACCEL__LINGER_POLLS 32
/* Ops this long or longer read the clock after each op (see visit_begin). */
#define ACCEL__CLOCK_CHECK_NS 1000u
_Static_assert(ACCEL_HOST_VISIT_MAX <= ACCEL__TAKE_MAX,
               "a host visit's ops are one run of takes");

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
        if (accel__ring_sc_ready(ACCEL__RING(s), h))
            return true;
        cpu_relax();
    }
    return accel__ring_sc_ready(ACCEL__RING(s), h);
}

void accel__visit_begin(accel__visit *v, accel_runtime *rt, accel_session *s,
                        uint64_t now)
{
    *v = (accel__visit){.rt = rt, .s = s, .t0 = now,
                        .outer = accel__tls_current};
    v->quota = accel__sched_visit_ops(rt->sched, &s->se);
    if (s->bops->capacity) {
        uint32_t room = s->bops->capacity(s->bstate);
        v->quota = room < v->quota ? room : v->quota;
    }
    /* The ops quota comes from the session's predicted op cost; if its
     * ops suddenly got longer, the clock ends the visit at quantum_ns. It
     * is read every `every` ops, chosen so that checking costs ~1/20 of
     * the predicted work (a clock read is ~40 ns here). */
    uint64_t cost = s->se.op_cost_ns;
    v->every = cost >= ACCEL__CLOCK_CHECK_NS ? 1
               : cost ? (uint32_t)(ACCEL__CLOCK_CHECK_NS / cost)
                      : 1;
    v->until_check = v->every;
    /* A run is taken out of the ring before it runs, so the clock can end
     * the visit only between runs: a run is kept to about a quarter of
     * the quantum at the predicted cost (ops of unknown cost: one). */
    uint64_t quarter = rt->cfg.quantum_ns / 4;
    v->run_max = !cost || cost >= quarter ? 1
                 : quarter / cost >= ACCEL__TAKE_MAX ? ACCEL__TAKE_MAX
                                                     : (uint32_t)(quarter / cost);
    v->h = atomic_load_explicit(&s->rc.head, memory_order_relaxed);
    /* visit_start(session, id, ops allowed) */
    ACCEL_TRACE3(visit_start, s, s->id, v->quota);
    accel__tls_current = s; /* ops and done callbacks of s run here */
}

/* How many ops of a run of k may have their positions released: up to
 * the first EX op not yet claimed (bit j of ex: ops[j] is one, unclaimed),
 * else all k. */
static inline uint32_t release_bound(uint32_t ex, uint32_t k)
{
    return ex ? (uint32_t)__builtin_ctz(ex) : k;
}

/* Takes a run of up to max published ops into ops[]: one acquire per
 * slot, one release of head for the run (one more per EX op in it).
 * Returns how many; *ex has a bit per EX op of the run (ring.h). An EX op
 * is copied but not taken: its position, and those after it, are released
 * only when run_ops claims it right before it would run, so a cancel still
 * wins until then; the plain ops before the first one are released here,
 * before any op of the run runs. */
uint32_t accel__visit_take(accel__visit *v, accel_op *ops, uint32_t max,
                           uint32_t *ex)
{
    accel_session *s = v->s;
    uint32_t k = accel__ring_sc_peek_ex(ACCEL__RING(s), v->h, max, ops, ex);
    if (k == 0)
        return 0;
    /* Stamps of sampled positions are read before the release frees the
     * positions (a producer of h + depth may reuse the entry after). */
    uint64_t first = (v->h + ACCEL__WAIT_SAMPLE - 1) & ~(uint64_t)(ACCEL__WAIT_SAMPLE - 1);
    uint64_t stamp = 0;
    if (first < v->h + k)
        stamp = s->stamps[(first / ACCEL__WAIT_SAMPLE) & s->stamp_mask];
    uint32_t rel = release_bound(*ex, k);
    if (rel) {
        accel__ring_sc_release(ACCEL__RING(s), v->h + rel);
        accel__progress_room(s);
    }
    v->h += k;
    /* A run holds at most one sampled position: ACCEL__TAKE_MAX is no
     * more than ACCEL__WAIT_SAMPLE. */
    if (stamp)
        accel__waitstat_record(&s->wait, accel__now_ns() - stamp);
    return k;
}

_Static_assert(ACCEL__TAKE_MAX <= ACCEL__WAIT_SAMPLE,
               "one sampled position per run of takes");

/* Cold: the EX op ops[i] of the run at h0 (ring.h): claims it against
 * cancellers right before it would run, releases the positions up to the
 * next unclaimed EX op (waking room sleepers), and returns the status it
 * completes with unrun, else 0. A won cancel first, then close(CANCEL),
 * then its deadline (read per op, here: earlier ops of the run took
 * time). */
__attribute__((noinline)) int accel__visit_claim(accel__visit *v, uint64_t h0,
                                                 uint32_t i, uint32_t *ex,
                                                 uint32_t k)
{
    accel_session *s = v->s;
    int64_t deadline;
    accel__claim claim = accel__ring_sc_claim(ACCEL__RING(s), h0 + i,
                                              &deadline);
    *ex &= *ex - 1; /* ops[i] claimed: it was the lowest bit */
    accel__ring_sc_release(ACCEL__RING(s), h0 + release_bound(*ex, k));
    accel__progress_room(s);
    if (claim == ACCEL__CLAIM_CANCELED)
        return ACCEL_ECANCELED;
    /* relaxed: a flag, as in run_ops. */
    if (atomic_load_explicit(&s->close_cancels, memory_order_relaxed))
        return ACCEL_ECLOSED;
    if (deadline && (int64_t)accel__now_ns() >= deadline)
        return ACCEL_EEXPIRED;
    return 0;
}

/* Cold: before an op completes unrun (cancelled, expired, or under a
 * CANCEL close), the earlier ops still on the device complete first:
 * waiters count completions, not positions (sync's target is a count of
 * accepted ops), so a done out of order would let a sync for those
 * earlier ops return before their done ran. Device sessions only (the CPU
 * backend has no poll). */
__attribute__((noinline)) static void device_drain(accel_session *s)
{
    while (s->bops->poll(s->bstate, s) > 0)
        sched_yield();
}

/* Runs ops[0..k) (positions h0..) in order; ex: a bit per EX op, claimed
 * one by one as it comes up (accel__visit_claim). The counters are bumped
 * per op before the op runs (dispatched) and before its done (completed, failed,
 * cancelled, expired), so that whoever a done callback wakes sees them:
 * plain stores to the consumer's own line. `finished`, which sleepers
 * read, is stored once for the run. */
static void run_ops(accel__visit *v, const accel_op *ops, uint32_t k,
                    uint32_t ex)
{
    accel_session *s = v->s;
    accel_ctx ctx = {.session = s};
    uint64_t h0 = v->h - k;
    uint32_t finished = 0;
    for (uint32_t i = 0; i < k; i++) {
        const accel_op *op = &ops[i];
        int status = 0;
        /* Per op: the cancel-vs-take decision of an EX op, its deadline,
         * and close(CANCEL), which an op of this run may begin (the rest
         * of the run is then cancelled). relaxed: a flag. A plain op pays
         * a bit test and the flag's load. */
        if (ex & (UINT32_C(1) << i))
            status = accel__visit_claim(v, h0, i, &ex, k);
        else if (atomic_load_explicit(&s->close_cancels, memory_order_relaxed))
            status = ACCEL_ECLOSED;
        if (status) {
            if (s->bops->poll)
                device_drain(s);
            accel__bump(status == ACCEL_EEXPIRED ? &s->expired : &s->cancelled,
                        1);
        } else {
            accel__bump(&s->dispatched, 1);
            /* op_start(session, position, arg) */
            ACCEL_TRACE3(op_start, s, h0 + i, op->arg);
            /* A backend whose run is fn itself: call fn directly. */
            if (s->bops->flags & ACCEL__BACKEND_RUNS_INLINE) {
                status = op->fn(&ctx, op->arg);
            } else if (s->bops->run(s->bstate, &ctx, op, &status) != 0) {
                continue; /* deferred: the backend completes it later */
            }
            accel__bump(status == 0 ? &s->completed : &s->failed, 1);
        }
        /* op_done(session, arg, status) */
        ACCEL_TRACE3(op_done, s, op->arg, status);
        if (op->done)
            op->done(op->arg, status);
        finished++;
    }
    if (finished)
        accel__progress_finished(s, finished);
}

/* The visit's loop: runs of takes until the quota, the clock or the ring
 * (after a short linger) ends it. */
void accel__visit_run(accel__visit *v)
{
    accel_op ops[ACCEL__TAKE_MAX];
    while (v->n < v->quota) {
        uint32_t max = v->quota - v->n;
        if (max > v->run_max)
            max = v->run_max;
        /* Under a CANCEL close, ops still on the device go first (see
         * device_drain): take nothing while there are any; the visit's
         * poll re-queues the session until they are done. relaxed: close's
         * flag; an op taken as it lands may still run (accel.h). */
        if (atomic_load_explicit(&v->s->close_cancels, memory_order_relaxed) &&
            v->s->bops->poll && v->s->bops->poll(v->s->bstate, v->s) > 0)
            break;
        uint32_t ex;
        uint32_t k = accel__visit_take(v, ops, max, &ex);
        if (k == 0) {
            if (v->n > 0 && ring_ready_soon(v->s, v->h))
                continue;
            break;
        }
        run_ops(v, ops, k, ex);
        v->n += k;
        if (k < v->until_check) {
            v->until_check -= k;
            continue;
        }
        v->until_check = v->every;
        if (accel__now_ns() - v->t0 >= v->rt->cfg.quantum_ns)
            break;
    }
}

/* Re-queues s, leaves it idle or hands it to a producer (ring.h).
 * Returns the lanes that may run it if re-queued, else 0. */
static unsigned visit_leave(accel_runtime *rt, accel_session *s, uint64_t h,
                            uint32_t pending)
{
    /* More to do: back into the scheduler, still SCHED, keeping the
     * scheduler's reference. */
    accel__session_set_next(s, h, s->rc.mask);
    if (pending || accel__ring_sc_ready(ACCEL__RING(s), h))
        return accel__sched_enqueue(rt->sched, &s->se, false);
    switch (accel__ring_sc_leave(ACCEL__RING(s), h)) {
    case ACCEL__RING_MORE:
        return accel__sched_enqueue(rt->sched, &s->se, false);
    case ACCEL__RING_IDLE:
        accel__session_unref(s); /* drop the scheduler's reference */
        return 0;
    default:
        return 0; /* deferred: its producer enqueues it (the ref goes too);
                     s must not be touched any more */
    }
}

/* Ends the visit at *now: stores the counters, charges the service and
 * re-queues the session, leaves it idle or hands it to a producer
 * (ring.h). Returns the lanes that may run it if re-queued, else 0. */
unsigned accel__visit_end(accel__visit *v, uint64_t *now)
{
    accel_runtime *rt = v->rt;
    accel_session *s = v->s;
    uint32_t pending = 0;
    if (s->bops->poll)
        pending = s->bops->poll(s->bstate, s);
    accel__tls_current = v->outer;
    *now = accel__now_ns();
    uint64_t service = *now - v->t0;
    /* visit_end(session, ops run, service ns, ops pending on a device) */
    ACCEL_TRACE4(visit_end, s, v->n, service, pending);
    accel__bump(&s->service_ns, service);
    accel__bump(&s->visits, 1);
    accel__sched_charge(rt->sched, &s->se, service, v->n);

    /* From here the session (and the scheduler's reference) may pass to
     * another thread while this one still touches it: the enqueue's last
     * steps, or the look at the slot and the take-back after a deferral
     * (ring.h). A short read-side section keeps it from being reclaimed
     * under us; no op runs inside it. */
    accel__rcu_read_lock();
    unsigned lanes = visit_leave(rt, s, v->h, pending);
    accel__rcu_read_unlock();
    return lanes;
}

/* Runs one visit of s starting at *now (the clock read when the visit
 * began: the end of the previous visit when the worker went straight on),
 * and leaves the visit's end time in *now. Returns the lanes that may run s
 * if it was re-queued, else 0. */
__attribute__((noinline)) /* a frame of its own: profiles (callgrind,
                             perf) count a visit apart from pick and park */
static unsigned run_visit(accel_runtime *rt, accel_session *s, uint64_t *now)
{
    accel__visit v;
    accel__visit_begin(&v, rt, s, *now);
    accel__visit_run(&v);
    return accel__visit_end(&v, now);
}

void accel__workers_enqueue(accel_session *s, bool new_claim)
{
    if (new_claim)
        accel__session_ref(s); /* the scheduler's reference */
    accel__worker_wake_lanes(
        s->rt, accel__sched_enqueue(s->rt->sched, &s->se, new_claim));
}

bool accel__workers_enqueue_or_take(accel_session *s, accel__lane lane)
{
    accel__session_ref(s); /* the scheduler's reference: the taker holds
                              it as a picker would */
    bool taken = false;
    unsigned lanes =
        accel__sched_enqueue_or_take(s->rt->sched, &s->se, true, lane, &taken);
    if (!taken)
        accel__worker_wake_lanes(s->rt, lanes);
    return taken;
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

void accel__worker_wake_lanes(accel_runtime *rt, unsigned lanes)
{
    accel__fence_hot();
    if ((lanes & ACCEL__SCHED_LANE_SHORT) && claim_parked(&rt->idle_short))
        wake_claimed(rt, &rt->park_seq_short, ACCEL__LANE_SHORT);
    else if (lanes & ACCEL__SCHED_LANE_GENERAL) {
        if (claim_parked(&rt->idle_workers))
            wake_claimed(rt, &rt->park_seq, ACCEL__LANE_GENERAL);
        /* No parked worker for it: blocked workers may be owed an extra,
         * or the monitor may need arming (compensate.c: the submitter's
         * half of its fence pairs, the seq_cst fence here for `blocked`,
         * the fence_hot above for the monitor's flag).
         * relaxed: two loads of this line, 0 and 1 unless so. */
        else {
            atomic_thread_fence(memory_order_seq_cst);
            if (__builtin_expect(
                    atomic_load_explicit(&rt->blocked,
                                         memory_order_relaxed) != 0 ||
                        !atomic_load_explicit(&rt->monitor_armed,
                                              memory_order_relaxed),
                    0))
                accel__comp_starved(rt);
        }
    }
}

/* The compensation's hook (compensate.h): one parked general worker. */
static bool wake_parked_general(accel_runtime *rt)
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
 * not in pauses: a pause is ~10 cycles on some CPUs and ~140 on others,
 * where 64 x 8 of them spun 10 us per idle spell and took, on a loaded
 * 2-core machine, 5-20% of the CPU from the threads that had work. */
#define ACCEL__SPIN_NS 1000u
#define ACCEL__SPIN_YIELDS 2

static accel__sched_entity *spin_pick(accel_runtime *rt, accel__lane lane)
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

void (*_Atomic accel__park_window_hook)(accel_runtime *rt, unsigned lane);

/* *timed_out: an extra worker's park (timeout_ns >= 0) ran out. */
static accel__sched_entity *park(accel_runtime *rt, accel__worker *w,
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
    /* acquire: pairs with accel__workers_stop's release store of stopping. */
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
        accel__comp_retire_idle(rt);
    accel__park_leave(rt, lane, e != NULL || *timed_out);
    return e;
}

void accel__park_announce(accel_runtime *rt, accel__lane lane)
{
    _Atomic uint64_t *idle =
        lane == ACCEL__LANE_SHORT ? &rt->idle_short : &rt->idle_workers;
    /* relaxed: the count is ordered against the pick that follows by the
     * fence pair (the top of this file; a waker's fence_hot). */
    atomic_fetch_add_explicit(idle, ACCEL__PARKED, memory_order_relaxed);
    accel__fence_cold();
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
        accel__worker_wake_lanes(rt, lane == ACCEL__LANE_SHORT
                                         ? ACCEL__SCHED_LANE_SHORT |
                                               ACCEL__SCHED_LANE_GENERAL
                                         : ACCEL__SCHED_LANE_GENERAL);
}

/* Sessions prefetched ahead of the visits: the next one, and the one
 * after it (with 100k sessions a visit is shorter than a miss to memory
 * on a loaded host; the next one's lines, prefetched a visit ago as the
 * one after, are then mostly in). */
#define ACCEL__PEEK_AHEAD 2

/* Prefetches what a visit of the peeked entity's session touches: pair B
 * (the consumer's line and the entity's line), line A1 (read-only for the
 * visit), the producers' line A0 (for write: the visit's leave CAS, or a
 * resubmit from a done callback, writes it), the slot where the visit
 * begins and the slot after it, which the visit's look for more reads
 * (the entity's hint, an offset from the session: session.h). Only
 * addresses are computed from the peek: the entity may be picked by
 * another worker or its session freed by now, and a prefetch never
 * faults. */
static inline void prefetch_session(const accel__sched_entity *e,
                                    uint32_t hint)
{
    if (!e)
        return;
    const char *s = (const char *)e - offsetof(accel_session, se);
    __builtin_prefetch(s + offsetof(accel_session, rc), 1);
    __builtin_prefetch(s + offsetof(accel_session, se), 1);
    __builtin_prefetch(s + offsetof(accel_session, rt), 0);
    __builtin_prefetch(s + offsetof(accel_session, rp), 1);
    uint32_t slot = hint & ~ACCEL__HINT_WRAPS;
    __builtin_prefetch(s + slot, 0);
    __builtin_prefetch(s + (hint & ACCEL__HINT_WRAPS
                                ? (uint32_t)sizeof(accel_session)
                                : slot + (uint32_t)sizeof(accel__ring_slot)),
                       0);
}

/* The loop of a base worker (until the runtime stops) and of an extra
 * one (compensate.c: until it is surplus or idle a while). */
static void worker_loop(accel__worker *w)
{
    accel_runtime *rt = w->rt;
    accel__fault_thread_is_worker();
    accel__yield_thread_index((UINT64_C(1) << 32) + w->index);
    accel__rcu_register();
    accel__comp_thread_begin(w);
    uint64_t now = 0; /* end of the last visit; 0: read the clock */
    for (;;) {
        accel__sched_entity *e = accel__sched_pick(rt->sched, w->lane);
        accel__bump(&w->picks, 1);
        if (!e) {
            /* acquire: pairs with the release store in workers_stop. */
            if (atomic_load_explicit(&rt->stopping, memory_order_acquire))
                break;
            now = 0;
            bool timed_out = false;
            e = park(rt, w, w->extra ? ACCEL__EXTRA_IDLE_NS : -1, &timed_out);
            if (!e && timed_out)
                break; /* an idle extra retired (park) */
            if (!e)
                continue;
        }
        accel__bump(&w->visits, 1);
        if (!now)
            now = accel__now_ns();
        /* While this visit runs, bring in the lines the next one will
         * touch: with many sessions each visit's are cold. */
        accel__sched_entity *next[ACCEL__PEEK_AHEAD];
        uint32_t hint[ACCEL__PEEK_AHEAD];
        unsigned ahead = accel__sched_peek(rt->sched, w->lane, next, hint,
                                           ACCEL__PEEK_AHEAD);
        for (unsigned i = 0; i < ahead; i++)
            prefetch_session(next[i], hint[i]);
        /* relaxed: the monitor's heuristic view (compensate.c); this
         * worker's own line. */
        atomic_store_explicit(&w->in_visit, 1, memory_order_relaxed);
        unsigned lanes = run_visit(rt, e->owner, &now);
        atomic_store_explicit(&w->in_visit, 0, memory_order_relaxed);
        if (__builtin_expect(w->block_depth != 0, 0))
            accel__comp_visit_done(w); /* a hint left open by the op */
        /* An extra worker more than the blocked ones need leaves after
         * its visit (not after a wake: it may hold a wake's claim). It
         * will not pick again, so a session it re-queued wakes a worker
         * (as accel_host_visit_end_stop). */
        if (w->extra && accel__comp_surplus(rt)) {
            if (lanes)
                accel__worker_wake_lanes(rt, lanes);
            break;
        }
        /* Re-queued for lanes we are not in (a short-lane worker's session
         * turned long): a worker that may run it must not stay parked. */
        if (lanes && !(lanes & accel__lane_mask(w->lane)))
            accel__worker_wake_lanes(rt, lanes);
    }
}

/* Names a started worker's thread (accel-w<k>, accel-short<k>) and pins it
 * when the config has worker_cpus. */
static void setup_thread(accel_runtime *rt, accel__worker *w)
{
    /* The k-th worker of its lane: short-lane workers come first. */
    unsigned nshort = rt->cfg.short_lane_workers;
    char name[16];
    if (w->lane == ACCEL__LANE_SHORT)
        snprintf(name, sizeof(name), "accel-short%u", w->index % 10000u);
    else
        snprintf(name, sizeof(name), "accel-w%u",
                 (w->index - nshort) % 10000u);
    pthread_setname_np(w->thread, name);
    w->cpu = -1;
    if (rt->cfg.worker_cpus_count) {
        unsigned cpu = rt->cfg.worker_cpus[w->index % rt->cfg.worker_cpus_count];
        /* The CPUs were checked against the affinity mask at create; a
         * later failure (the mask shrank since) leaves the worker free. */
        if (accel__thread_pin(w->thread, cpu) == ACCEL_OK)
            w->cpu = (int)cpu;
    }
}

static void *worker_main(void *arg)
{
    worker_loop(arg);
    return NULL;
}

void accel__workers_run_queued(accel_runtime *rt)
{
    uint64_t now = 0;
    for (accel__lane lane = ACCEL__LANE_GENERAL; lane < ACCEL__LANES; lane++) {
        accel__sched_entity *e;
        while ((e = accel__sched_pick(rt->sched, lane)) != NULL) {
            now = accel__now_ns();
            run_visit(rt, e->owner, &now);
        }
    }
}

static const accel__comp_ops comp_ops = {.run_extra = worker_loop,
                                         .wake_parked = wake_parked_general};

int accel__workers_start(accel_runtime *rt)
{
    if (rt->cfg.flags & ACCEL_RUNTIME_HOST_WORKERS) {
        accel__comp_set_ops(rt, &comp_ops); /* no monitor: host threads */
        return ACCEL_OK; /* the host drives the slots (host.c) */
    }
    for (unsigned i = 0; i < rt->nworkers; i++) {
        accel__worker *w = &rt->workers[i];
        w->rt = rt;
        w->index = i;
        w->lane = accel__lane_of_slot(i, rt->cfg.short_lane_workers);
        if (ACCEL__FAULT("pthread_create") ||
            pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            rt->nworkers = i;
            accel__workers_stop(rt);
            return ACCEL_ENOMEM;
        }
        setup_thread(rt, w);
    }
    if (accel__comp_start(rt, &comp_ops) != ACCEL_OK) {
        accel__workers_stop(rt);
        return ACCEL_ENOMEM;
    }
    return ACCEL_OK;
}

void accel__workers_stop(accel_runtime *rt)
{
    /* release: pairs with the acquire loads in worker_main/park. */
    atomic_store_explicit(&rt->stopping, 1, memory_order_release);
    if (rt->cfg.flags & ACCEL_RUNTIME_HOST_WORKERS)
        return; /* no threads; the host stopped its workers (accel.h) */
    atomic_fetch_add_explicit(&rt->park_seq, 1, memory_order_release);
    accel__futex_wake(&rt->park_seq, INT_MAX);
    atomic_fetch_add_explicit(&rt->park_seq_short, 1, memory_order_release);
    accel__futex_wake(&rt->park_seq_short, INT_MAX);
    for (unsigned i = 0; i < rt->nworkers; i++)
        pthread_join(rt->workers[i].thread, NULL);
    accel__comp_stop(rt); /* the monitor, then the extra workers */
}
