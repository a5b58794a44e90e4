/*
 * The visit engine: a worker that picked a session runs a bounded visit
 * of its ops (it is the ring's only consumer while it holds SCHED),
 * charges the measured service, and either re-queues the session or
 * turns it idle (ring.h). accel's worker threads (worker.c) and
 * host-driven workers (host.c) share it.
 *
 * A visit's ops run outside any RCU read-side section: the scheduler's
 * reference (taken with SCHED, dropped by the worker's unref, or handed to
 * a producer with a deferral) keeps the session alive, so one long op does
 * not hold back the grace periods every reclamation and table resize
 * waits for. Only the end of a visit, which may hand the session (and that
 * reference) to another thread and still look at the ring after, runs in
 * a short read-side section (visit_end).
 */

#include <sched.h>

#include "accel/host.h"
#include "batch_types.h"
#include "clock.h"
#include "futex.h"
#include "waiters.h"
#include "rcu.h"
#include "runtime_types.h"
#include "session.h"
#include "trace.h"
#include "visit.h"

void accel__op_complete(accel_session *s, const accel_op *op, int status)
{
    accel__visit_op_done(s, op, status, true);
    accel__waiters_finished(&s->waiters, 1);
}

void accel__op_complete_unrun(accel_session *s, const accel_op *op,
                              int status)
{
    accel__visit_op_done(s, op, status, false);
    accel__waiters_finished(&s->waiters, 1);
}

/* A visit that empties the ring polls it a little before giving the
 * session up: under a stream of submits the next op is usually being
 * published right now, and going idle costs a CAS on the producers' line,
 * a scheduler round trip and, for the producer, an enqueue. Bounded (about
 * a microsecond), so a sparse session costs little. (Skipping it after a
 * visit's first and only op, or per session while its lingers missed,
 * were tried and dropped: the first slowed a few busy sessions, the
 * second split sparse sessions' work into more, smaller visits; the
 * measurements are in docs/experiments/.) */
#define ACCEL__LINGER_POLLS 32
/* Ops this long or longer read the clock after each op (see visit_begin). */
#define ACCEL__CLOCK_CHECK_NS 1000u
_Static_assert(ACCEL_HOST_VISIT_MAX <= ACCEL__TAKE_MAX,
               "a host visit's ops are one run of takes");

static inline bool ring_ready_soon(accel_session *s, uint64_t h)
{
    for (int i = 0; i < ACCEL__LINGER_POLLS; i++) {
        if (accel__ring_sc_ready(ACCEL__RING(s), h))
            return true;
        accel__cpu_relax();
    }
    return accel__ring_sc_ready(ACCEL__RING(s), h);
}

void accel__visit_begin(accel__visit *v, accel_runtime *rt, accel_session *s,
                        uint64_t now)
{
    *v = (accel__visit){.rt = rt, .s = s, .t0 = now};
    v->quota = accel__sched_visit_ops(rt->sched, &s->se);
    if (s->bops->capacity) {
        uint32_t room = s->bops->capacity(s->bstate);
        v->quota = room < v->quota ? room : v->quota;
    }
    /* The ops quota comes from the session's predicted op cost; if its
     * ops suddenly got longer, the clock ends the visit at quantum_ns (of
     * served time for a session whose ops wait: served_short). It
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
    /* Both accesses of this thread's current session together, with no
     * call between them: one look-up of its address (in a shared library
     * a _Thread_local's address is a __tls_get_addr call). */
    accel_session **current = &accel__tls_current;
    v->outer = *current;
    *current = s; /* ops and done callbacks of s run here */
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
        accel__waiters_room(&s->waiters);
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
    accel__waiters_room(&s->waiters);
    if (claim == ACCEL__CLAIM_CANCELED)
        return ACCEL_ECANCELED;
    /* relaxed: a flag, as in run_ops. */
    if (atomic_load_explicit(&s->close_cancels, memory_order_relaxed))
        return ACCEL_ECLOSED;
    if (deadline && (int64_t)accel__now_ns() >= deadline)
        return ACCEL_EEXPIRED;
    return 0;
}

/* Cold: before an op completes unrun (canceled, expired, or under a
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
 * canceled, expired), so that whoever a done callback wakes sees them:
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
        bool ran = false;
        /* Per op: the cancel-vs-take decision of an EX op, its deadline,
         * and close(CANCEL), which an op of this run may begin (the rest
         * of the run is then canceled). relaxed: a flag. A plain op pays
         * a bit test and the flag's load. */
        if (ex & (UINT32_C(1) << i))
            status = accel__visit_claim(v, h0, i, &ex, k);
        else if (atomic_load_explicit(&s->close_cancels, memory_order_relaxed))
            status = ACCEL_ECLOSED;
        if (status) {
            if (s->bops->poll)
                device_drain(s);
            accel__bump(status == ACCEL_EEXPIRED ? &s->expired : &s->canceled,
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
            ran = true;
        }
        accel__visit_op_done(s, op, status, ran);
        finished++;
    }
    if (finished)
        accel__waiters_finished(&s->waiters, finished);
}

/* At the clock check past quantum_ns + extend_ns of wall time: whether
 * the visit has been served less than a quantum (its worker's blocked
 * time taken off its wall time), and so runs on; extend_ns then moves to
 * where it could first reach one. Read only past a quantum of wall time,
 * so a visit that computes reads its worker's blocked time at most once.
 * Out of line: the common path must not pay for it. */
__attribute__((noinline, cold)) static bool served_short(accel__visit *v,
                                                         uint64_t wall)
{
    uint64_t quantum = v->rt->cfg.quantum_ns;
    uint64_t off = v->blocked(v->blocked_arg, v->t0);
    uint64_t served = off < wall ? wall - off : 0;
    if (served >= quantum)
        return false;
    v->extend_ns = wall - served; /* its blocked time so far */
    return true;
}

/* The visit's loop: runs of takes until the quota, the clock or the ring
 * (after a short linger) ends it. */
void accel__visit_run(accel__visit *v)
{
    /* Batching (batch.c): the visit's one look, a flag on the line of the
     * ring's consumer half it has loaded already. relaxed: a hint; the
     * batch visit reads the configuration itself (false: none, the ops
     * run one by one). */
    if (__builtin_expect(
            atomic_load_explicit(&v->s->batched, memory_order_relaxed), 0)) {
        /* acquire: pairs with set_batch's release CAS of the batch word (the
         * state's init). Through the state's pointer: batch.c calls into
         * this file (docs/layers.md). */
        struct accel__batch *b = atomic_load_explicit(
            accel__session_batch_word(v->s), memory_order_acquire);
        if (b && b->run(v))
            return;
    }
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
        uint64_t wall = accel__now_ns() - v->t0;
        if (wall >= v->rt->cfg.quantum_ns + v->extend_ns &&
            !(v->blocked && served_short(v, wall)))
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
    /* A batch visit that holds its session back ends there (batch.c). */
    if (__builtin_expect(v->hold_end != NULL, 0))
        return v->hold_end(v, service);
    accel__sched_charge(rt->sched, &s->se, service, v->blocked_ns, v->n);

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
