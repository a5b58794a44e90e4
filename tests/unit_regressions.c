/*
 * Regression tests of runtime bugs, one per bug (docs/reliability.md lists
 * each with the promise it protects). Each one failed before its fix.
 *
 * No timing thresholds: where the broken code would hang, the test waits
 * for a condition it controls with a generous bound (tu_wait_for), so that
 * the failing case fails with a message instead of hanging; the correct
 * code meets the condition at once.
 *
 * Promises: 1, 4, 5, 6
 */
#define _GNU_SOURCE /* gettid, nanosleep */
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core_util.h"
#include "futex.h"
#include "park.h"
#include "runtime.h"
#include "session.h"
#include "unit_watchdog.h"

/* Each wait that can hang names its step (unit_watchdog.h): a hang fails
 * the test with the step, not on Criterion's .timeout. */
UNIT_WATCHDOG_SUITE(regressions);

/* Marks one worker of lane as parked (white-box, no thread). */
#define TEST_PARK(rt, lane)                                                   \
    atomic_fetch_add((lane) ? &(rt)->idle_short : &(rt)->idle_workers,     \
                     ACCEL__PARKED)

/* Bound on a wait that only the bug would make long (a hang converter). */
#define HANG_S 20.0

/* Polls until *f >= v or HANG_S passed; true if reached. */
static bool tu_wait_for(_Atomic int *f, int v)
{
    double end = tu_now_s() + HANG_S;
    while (atomic_load_explicit(f, memory_order_acquire) < v) {
        if (tu_now_s() > end)
            return false;
        tu_nap_us(100);
    }
    return true;
}

static int op_noop(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    return 0;
}

/* ---- an op submitting to its own full session -------------------- */

typedef struct self_sub {
    accel_session *s;
    int64_t timeout;
    bool batch;
    int filled, fill_rc, rc;
    size_t accepted;
    _Atomic int returned;
} self_sub;

static int op_self_submit(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    self_sub *a = arg;
    accel_op op = {.fn = op_noop};
    int rc;
    while ((rc = accel_submit(a->s, &op, ACCEL_NO_WAIT)) == ACCEL_OK)
        a->filled++;
    a->fill_rc = rc;
    if (a->batch) {
        accel_op two[2] = {op, op};
        a->rc = accel_submit_batch(a->s, two, 2, a->timeout, &a->accepted);
    } else {
        a->rc = accel_submit(a->s, &op, a->timeout);
    }
    atomic_store_explicit(&a->returned, 1, memory_order_release);
    return 0;
}

static void self_submit_case(int64_t timeout, bool batch)
{
    accel_runtime *rt = tu_runtime(1);
    cr_assert_not_null(rt);
    accel_session *s = tu_open(rt, "self", 4, 0);
    cr_assert_not_null(s);
    self_sub a = {.s = s, .timeout = timeout, .batch = batch};
    accel_op op = {.fn = op_self_submit, .arg = &a};
    cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    unit_step("the op's submit to its own full ring returns");
    bool returned = tu_wait_for(&a.returned, 1);
    if (!returned) /* the broken code: free the worker, then fail */
        accel_session_close(s, ACCEL_CLOSE_CANCEL);
    unit_step("sync of the self-submitting session");
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert(returned, "self-submit with a wait on a full ring hung");
    cr_assert_eq(a.filled, 4);
    cr_assert_eq(a.fill_rc, ACCEL_EAGAIN);
    cr_assert_eq(a.rc, ACCEL_EDEADLK, "got %d (%s)", a.rc,
                 accel_strerror(a.rc));
    cr_assert_eq(a.accepted, 0);
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats(s, &st), ACCEL_OK);
    cr_assert_eq(st.submitted, 5); /* nothing accepted by the failed call */
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(regressions, self_submit_full_ring_forever_is_edeadlk, .timeout = 60)
{
    self_submit_case(ACCEL_FOREVER, false);
}

Test(regressions, self_submit_full_ring_timeout_is_edeadlk, .timeout = 60)
{
    /* A timeout far beyond HANG_S: the broken code times out the test's
     * wait, not the submit. */
    self_submit_case(600ll * 1000000000ll, false);
    self_submit_case(ACCEL_FOREVER, true);
}

/* ---- a producer waiting for room is woken by the take that makes it -- */

typedef struct room_prod {
    accel_session *s;
    _Atomic int tid;
    _Atomic int returned;
    int rc;
} room_prod;

static void *room_producer(void *p)
{
    room_prod *a = p;
    atomic_store_explicit(&a->tid, (int)gettid(), memory_order_release);
    accel_op op = {.fn = op_noop};
    a->rc = accel_submit(a->s, &op, ACCEL_FOREVER);
    atomic_store_explicit(&a->returned, 1, memory_order_release);
    return NULL;
}

/* The op at the head of the full ring: it waits for the producer's submit
 * to return, which needs the slot this op's take freed. */
typedef struct long_op {
    room_prod *prod;
    _Atomic int signalled;
} long_op;

static int op_wait_producer(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    long_op *l = arg;
    if (tu_wait_for(&l->prod->returned, 1))
        atomic_store_explicit(&l->signalled, 1, memory_order_release);
    return 0;
}


/* What the room-waiter tests saw, printed when a wait of theirs fails:
 * each change of (room_waiters, producer state, producer returned) with
 * its time since the producer started, and the runtime's counters. */
typedef struct room_trace {
    double t0;
    int n;
    struct {
        double t;
        unsigned waiters;
        char state;
        int returned;
    } ev[48];
} room_trace;

static void room_trace_note(room_trace *tr, unsigned w, char st, int ret)
{
    if (tr->n > 0) {
        __typeof__(tr->ev[0]) *e = &tr->ev[tr->n - 1];
        if (e->waiters == w && e->state == st && e->returned == ret)
            return;
    }
    if (tr->n == (int)(sizeof(tr->ev) / sizeof(tr->ev[0])))
        return;
    tr->ev[tr->n].t = tu_now_s() - tr->t0;
    tr->ev[tr->n].waiters = w;
    tr->ev[tr->n].state = st;
    tr->ev[tr->n].returned = ret;
    tr->n++;
}

static void room_trace_print(const room_trace *tr, const char *step,
                             accel_session *s, room_prod *prod, long_op *l,
                             tu_blocker *b)
{
    accel_runtime_stats rs = {0};
    accel_runtime_get_stats(s->rt, &rs, sizeof(rs));
    fprintf(stderr,
            "room-waiter trace: stuck in \"%s\"\n"
            "  producer returned=%d rc=%d; op signalled=%d; blocker "
            "started=%d finished=%d\n"
            "  ring head=%llu tail=%llu; runtime workers=%u blocked=%u "
            "extra_workers=%u extra_started=%llu blocked_detected=%llu\n",
            step, atomic_load(&prod->returned), prod->rc,
            atomic_load(&l->signalled), atomic_load(&b->started),
            atomic_load(&b->finished),
            (unsigned long long)atomic_load(&s->rc.head),
            (unsigned long long)(atomic_load(&s->rp.tail) &
                                 ~(ACCEL__RING_SCHED | ACCEL__RING_CLOSED)),
            rs.workers, rs.blocked, rs.extra_workers,
            (unsigned long long)rs.extra_started,
            (unsigned long long)rs.blocked_detected);
    for (int i = 0; i < tr->n; i++)
        fprintf(stderr,
                "  +%.6fs room_waiters=%u producer state=%c returned=%d\n",
                tr->ev[i].t, tr->ev[i].waiters, tr->ev[i].state,
                tr->ev[i].returned);
}

/* The second half of both room-waiter tests: s's ring is full, its op l
 * waits for prod's submit, and the blocker b holds the only worker. Starts
 * the producer, waits until it sleeps for room (counted as a waiter, then
 * asleep: the futex; its re-check saw the ring full), lets the worker move
 * on to s, and checks that the producer was woken in time (msg if not).
 * Each wait is bounded (HANG_S) and prints the trace when it fails. */
static void producer_sleeps_then_run(accel_session *s, room_prod *prod,
                                     long_op *l, tu_blocker *b,
                                     const char *msg)
{
    room_trace tr = {.t0 = tu_now_s()};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, room_producer, prod), 0);
    unit_step("the producer thread starts");
    tu_wait_at_least(&prod->tid, 1);
    unit_step("the producer sleeps for room");
    int tid = atomic_load(&prod->tid);
    double end = tu_now_s() + HANG_S;
    for (;;) {
        unsigned w = atomic_load_explicit(&s->waiters.room_waiters,
                                          memory_order_relaxed);
        char st = tu_thread_state(tid);
        int ret = atomic_load(&prod->returned);
        room_trace_note(&tr, w, st, ret);
        if (w && st == 'S')
            break;
        if (ret) { /* it can no longer sleep: say why, do not wait on */
            room_trace_print(&tr, "the producer sleeps for room", s, prod, l,
                             b);
            cr_assert_fail("the producer found room before it slept: s was "
                           "taken from while the blocker held the only "
                           "worker (trace above)");
        }
        if (tu_now_s() > end) {
            room_trace_print(&tr, "the producer sleeps for room", s, prod, l,
                             b);
            cr_assert_fail("the producer never slept for room (trace above)");
        }
        tu_nap_us(100);
    }

    tu_latch_open(&b->gate); /* the worker moves on to s */
    unit_step("the producer's submit returns");
    if (!tu_wait_for(&prod->returned, 1)) {
        room_trace_print(&tr, "the producer's submit returns", s, prod, l, b);
        cr_assert_fail("%s; the producer never returned (trace above)", msg);
    }
    pthread_join(th, NULL);
    unit_step("sync of s");
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(prod->rc, ACCEL_OK);
    if (!atomic_load(&l->signalled))
        room_trace_print(&tr, "the op sees the producer return", s, prod, l,
                         b);
    cr_assert(atomic_load(&l->signalled), "%s", msg);
}

Test(regressions, room_waiter_woken_by_the_take_that_frees_a_slot,
     .timeout = 60)
{
    /* The blocker must hold the only worker until the producer sleeps:
     * the monitor must not count it blocked and start an extra worker,
     * which would take from s first (the producer then finds room). */
    accel_runtime *rt = tu_runtime_nodetect(1);
    cr_assert_not_null(rt);
    /* A blocker on another session holds the only worker while the ring
     * of s fills and the producer goes to sleep. */
    accel_session *other = tu_open(rt, "other", 4, 0);
    accel_session *s = tu_open(rt, "s", 8, 0);
    cr_assert(other && s);
    tu_blocker b = {0};
    accel_op bop = tu_blocker_op(&b);
    cr_assert_eq(accel_submit(other, &bop, ACCEL_FOREVER), ACCEL_OK);
    unit_step("the blocker starts");
    tu_wait_at_least(&b.started, 1);

    room_prod prod = {.s = s};
    long_op l = {.prod = &prod};
    accel_op lop = {.fn = op_wait_producer, .arg = &l};
    accel_op q = {.fn = op_noop};
    /* Position 0: the long op (a new session's first visit runs one op,
     * so the take of position 0 is the only one before it runs); 1..7:
     * quick ops. The ring (8) is full. */
    cr_assert_eq(accel_submit(s, &lop, ACCEL_NO_WAIT), ACCEL_OK);
    for (int i = 0; i < 7; i++)
        cr_assert_eq(accel_submit(s, &q, ACCEL_NO_WAIT), ACCEL_OK);
    cr_assert_eq(accel_submit(s, &q, ACCEL_NO_WAIT), ACCEL_EAGAIN);

    producer_sleeps_then_run(s, &prod, &l, &b,
                             "the producer slept through the op whose take "
                             "made room");
    accel_session_release(s);
    accel_session_release(other);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* The same inside a run of takes: a worker copies up to 32 published ops
 * out at once and runs them in turn. The session's ops are known to be
 * short, so the visit takes the whole full ring (8) as one run; the op
 * waiting for the producer is the 4th of the run, behind an op with a
 * deadline (whose slot is claimed, and released, only at its turn). The
 * producer must be woken by the release of the run's slots, before the
 * run's ops run, not after the run. */
Test(regressions, room_waiter_woken_inside_a_run_of_takes, .timeout = 60)
{
    accel_runtime *rt = tu_runtime_nodetect(1); /* as above */
    cr_assert_not_null(rt);
    accel_session *other = tu_open(rt, "other", 4, 0);
    accel_session *s = tu_open(rt, "s", 8, 0);
    cr_assert(other && s);
    accel_op q = {.fn = op_noop};
    unit_step("2000 short ops on s and their sync");
    for (int i = 0; i < 2000; i++) /* short ops: runs of many */
        cr_assert_eq(accel_submit(s, &q, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    tu_blocker b = {0};
    accel_op bop = tu_blocker_op(&b);
    cr_assert_eq(accel_submit(other, &bop, ACCEL_FOREVER), ACCEL_OK);
    unit_step("the blocker starts");
    tu_wait_at_least(&b.started, 1);

    room_prod prod = {.s = s};
    long_op l = {.prod = &prod};
    accel_op lop = {.fn = op_wait_producer, .arg = &l};
    int64_t far = accel_now_ns() + INT64_C(3600) * 1000000000;
    for (int i = 0; i < 8; i++) {
        if (i == 3)
            cr_assert_eq(accel_submit(s, &lop, ACCEL_NO_WAIT), ACCEL_OK);
        else if (i == 1)
            cr_assert_eq(accel_submit_ex(s, &q, far, ACCEL_NO_WAIT, NULL),
                         ACCEL_OK);
        else
            cr_assert_eq(accel_submit(s, &q, ACCEL_NO_WAIT), ACCEL_OK);
    }
    cr_assert_eq(accel_submit(s, &q, ACCEL_NO_WAIT), ACCEL_EAGAIN);

    producer_sleeps_then_run(s, &prod, &l, &b,
                             "the producer slept through the op of the run "
                             "it waited on");
    accel_session_release(s);
    accel_session_release(other);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---- reclamation goes on while an op runs --------------------------- */

typedef struct reclaim_wait {
    _Atomic int started;
    _Atomic int go;
    uint64_t base;
    _Atomic int reclaimed;
} reclaim_wait;

static int op_wait_reclaim(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    reclaim_wait *r = arg;
    atomic_store_explicit(&r->started, 1, memory_order_release);
    tu_wait_at_least(&r->go, 1);
    double end = tu_now_s() + HANG_S;
    while (tu_now_s() < end) {
        if (atomic_load(&accel__sessions_reclaimed) > r->base) {
            atomic_store(&r->reclaimed, 1);
            break;
        }
        tu_nap_us(100);
    }
    return 0;
}

Test(regressions, closed_session_reclaimed_while_an_op_runs, .timeout = 60)
{
    accel_runtime *rt = tu_runtime(2);
    cr_assert_not_null(rt);
    accel_session *s = tu_open(rt, "runner", 4, 0);
    cr_assert_not_null(s);
    reclaim_wait r = {0};
    accel_op op = {.fn = op_wait_reclaim, .arg = &r};
    cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    unit_step("the op starts");
    tu_wait_at_least(&r.started, 1);
    /* While the op runs: a session is closed and its last handle dropped,
     * which queues its reclamation after a grace period. */
    accel_session *gone = tu_open(rt, "gone", 4, 0);
    cr_assert_not_null(gone);
    cr_assert_eq(accel_submit(gone, &(accel_op){.fn = op_noop}, ACCEL_FOREVER),
                 ACCEL_OK);
    cr_assert_eq(accel_session_close(gone, ACCEL_CLOSE_DRAIN), ACCEL_OK);
    r.base = atomic_load(&accel__sessions_reclaimed);
    accel_session_release(gone);
    atomic_store_explicit(&r.go, 1, memory_order_release);
    unit_step("sync of s: its op sees the reclamation or gives up");
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert(atomic_load(&r.reclaimed),
              "a running op held back the reclamation of a closed session");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---- destroy from inside an op: EDEADLK only for its own runtime ---- */

typedef struct destroy_arg {
    accel_runtime *own, *other;
    int rc_own, rc_other;
} destroy_arg;

static int op_destroy(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    destroy_arg *d = arg;
    d->rc_own = accel_runtime_destroy(d->own);
    d->rc_other = accel_runtime_destroy(d->other);
    return 0;
}

Test(regressions, destroy_inside_an_op_edeadlk_only_for_its_runtime,
     .timeout = 30)
{
    accel_runtime *rt = tu_runtime(1), *rt2 = tu_runtime(1);
    cr_assert(rt && rt2);
    accel_session *s = tu_open(rt, "d", 4, 0);
    accel_session *s2 = tu_open(rt2, "d2", 4, 0);
    cr_assert(s && s2);
    destroy_arg d = {.own = rt, .other = rt2};
    unit_step("the op destroys its own runtime, then the other");
    cr_assert_eq(accel_submit_wait(s, op_destroy, &d, ACCEL_FOREVER), 0);
    cr_assert_eq(d.rc_own, ACCEL_EDEADLK);
    cr_assert_eq(d.rc_other, ACCEL_OK, "destroying another runtime: %s",
                 accel_strerror(d.rc_other));
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---- a burst of wakes reaches as many parked workers ---------------- */

/* Two wakes while one worker of each lane is parked: each must go to a
 * different worker (the first claims the short-lane one, so the second
 * falls to the general one). White-box over a runtime with no threads:
 * the wake's futex words count the wakes sent to each lane. */
Test(regressions, two_wakes_claim_two_parked_workers, .timeout = 10)
{
    accel_runtime *rt = calloc(1, sizeof(*rt));
    cr_assert_not_null(rt);
    accel__fence_init();
    TEST_PARK(rt, 1);
    TEST_PARK(rt, 0);
    unsigned both = ACCEL__SCHED_LANE_GENERAL | ACCEL__SCHED_LANE_SHORT;
    accel__park_wake_lanes(rt, both);
    accel__park_wake_lanes(rt, both);
    cr_assert_eq(atomic_load(&rt->park_seq_short), 1,
                 "wakes sent to the short lane's one parked worker: %u",
                 atomic_load(&rt->park_seq_short));
    cr_assert_eq(atomic_load(&rt->park_seq), 1,
                 "wakes sent to the general lane's one parked worker: %u",
                 atomic_load(&rt->park_seq));
    /* A third wake finds no unclaimed parked worker: nothing to send. */
    accel__park_wake_lanes(rt, both);
    cr_assert_eq(atomic_load(&rt->park_seq_short) + atomic_load(&rt->park_seq),
                 2);
    free(rt);
}


typedef struct pair_run {
    _Atomic int running;
    _Atomic int both;
} pair_run;

static int op_meet(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    pair_run *p = arg;
    atomic_fetch_add_explicit(&p->running, 1, memory_order_acq_rel);
    if (tu_wait_for(&p->running, 2))
        atomic_fetch_add_explicit(&p->both, 1, memory_order_relaxed);
    return 0;
}

/* Two ops that each wait until both run: a burst of two submits onto
 * parked workers must start both (end to end). */
Test(regressions, burst_of_two_starts_both_parked_workers, .timeout = 60)
{
    /* short_op_ns of 1 s: the meeting ops stay short-class, so either
     * lane may run either session. */
    /* No blocked-op detection: an op waiting for its partner would be
     * counted blocked and a parked worker woken in its place, which would
     * hide a lost wake. */
    accel_runtime_config c = {.workers = 2, .short_lane_workers = 1,
                              .short_op_ns = 1000000000ull,
                              .struct_size = sizeof(c),
                              .block_detect_ns = TU_NO_DETECT_NS};
    accel_runtime *rt = NULL;
    cr_assert_eq(accel_runtime_create(&c, &rt), ACCEL_OK);
    accel_session *a = tu_open(rt, "a", 4, 0), *b = tu_open(rt, "b", 4, 0);
    cr_assert(a && b);
    for (int round = 0; round < 3; round++) {
        int tids[2];
        cr_assert_eq(tu_accel_tids(tids, 2, false), 2);
        /* both workers asleep in their park */
        unit_step("both workers park");
        while (tu_thread_state(tids[0]) != 'S' || tu_thread_state(tids[1]) != 'S')
            tu_nap_us(200);
        pair_run p = {0};
        accel_op op = {.fn = op_meet, .arg = &p};
        cr_assert_eq(accel_submit(a, &op, ACCEL_FOREVER), ACCEL_OK);
        cr_assert_eq(accel_submit(b, &op, ACCEL_FOREVER), ACCEL_OK);
        unit_step("sync of a and b: their ops meet or give up");
        cr_assert_eq(accel_session_sync(a, ACCEL_FOREVER), ACCEL_OK);
        cr_assert_eq(accel_session_sync(b, ACCEL_FOREVER), ACCEL_OK);
        cr_assert_eq(atomic_load(&p.both), 2,
                     "round %d: the two ops never ran at once", round);
    }
    accel_session_release(a);
    accel_session_release(b);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* A waker preempted between its claim and its wake. Three workers (2
 * general, 1 short-lane) all parked, a burst of two short-class sessions
 * from one submitting thread; the seam stops that thread inside its second
 * wake, after it claimed a parked worker and before it bumps park_seq and
 * wakes it (a preemption there, made deterministic). While it is stopped:
 * the first wake went to the short-lane worker, which runs a's op; the
 * second claimed a general worker (not the short one again); that worker
 * and the other general one stay parked, so b waits for the stopped
 * thread: a delay, bounded by the preemption. Once the thread goes on, the
 * claimed wake is delivered and the ops meet: no wake is lost. A wake
 * that is never sent (the bump or the futex wake dropped) fails the
 * meeting after the op's 20 s watchdog. */
static struct {
    _Atomic int armed, calls, paused, release;
    _Atomic unsigned lane;
} ww;
static _Thread_local bool ww_submitter;

static void pause_in_wake_window(accel_runtime *rt, unsigned lane)
{
    (void)rt;
    if (!ww_submitter || !atomic_load(&ww.armed))
        return;
    if (atomic_fetch_add(&ww.calls, 1) != 1)
        return; /* a's wake goes through; b's is stopped */
    atomic_store(&ww.lane, lane);
    atomic_store(&ww.paused, 1);
    tu_wait_for(&ww.release, 1); /* bounded: HANG_S */
}

typedef struct burst_arg {
    accel_session *a, *b;
    accel_op op;
    int rc_a, rc_b;
} burst_arg;

static void *burst_main(void *p)
{
    burst_arg *ba = p;
    ww_submitter = true;
    ba->rc_a = accel_submit(ba->a, &ba->op, ACCEL_FOREVER);
    ba->rc_b = accel_submit(ba->b, &ba->op, ACCEL_FOREVER);
    return NULL;
}

Test(regressions, waker_stopped_between_claim_and_wake_delays_not_loses,
     .timeout = 60)
{
    memset(&ww, 0, sizeof(ww));
    atomic_store(&accel__wake_window_hook, pause_in_wake_window);
    /* No blocked-op detection: a's op, waiting for b's, must not be
     * counted blocked (a parked general worker would be woken for b, the
     * stopped waker's work, and would hide a lost wake). */
    accel_runtime_config c = {.workers = 3, .short_lane_workers = 1,
                              .short_op_ns = 1000000000ull,
                              .struct_size = sizeof(c),
                              .block_detect_ns = TU_NO_DETECT_NS};
    accel_runtime *rt = NULL;
    cr_assert_eq(accel_runtime_create(&c, &rt), ACCEL_OK);
    accel_session *a = tu_open(rt, "wa", 4, 0), *b = tu_open(rt, "wb", 4, 0);
    cr_assert(a && b);
    int tids[3];
    cr_assert_eq(tu_accel_tids(tids, 3, false), 3);
    /* all three asleep in their park */
    unit_step("the three workers park");
    while (tu_thread_state(tids[0]) != 'S' || tu_thread_state(tids[1]) != 'S' ||
           tu_thread_state(tids[2]) != 'S' ||
           (uint32_t)atomic_load(&rt->idle_workers) != 2 ||
           (uint32_t)atomic_load(&rt->idle_short) != 1)
        tu_nap_us(200);

    pair_run p = {0};
    burst_arg ba = {.a = a, .b = b, .op = {.fn = op_meet, .arg = &p}};
    atomic_store(&ww.armed, 1);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, burst_main, &ba), 0);
    unit_step("the seam stops b's waker; a's op starts");
    cr_assert(tu_wait_for(&ww.paused, 1), "the seam stopped b's waker");
    cr_assert(tu_wait_for(&p.running, 1), "a's op started (its wake sent)");
    cr_assert_eq(atomic_load(&ww.lane), ACCEL_HOST_LANE_GENERAL,
                 "b's wake claimed a general worker, not the short one "
                 "again");
    uint64_t gen = atomic_load(&rt->idle_workers);
    cr_assert_eq((uint32_t)gen, 2, "both general workers still parked");
    cr_assert_eq((uint32_t)(gen >> 32), 1, "one of them claimed, unsent");
    cr_assert_eq(atomic_load(&p.running), 1,
                 "b waits for its stopped waker (a runs alone)");

    atomic_store(&ww.release, 1); /* the waker goes on */
    unit_step("the waker's submits return; a and b sync");
    pthread_join(th, NULL);
    cr_assert_eq(ba.rc_a, ACCEL_OK);
    cr_assert_eq(ba.rc_b, ACCEL_OK);
    cr_assert_eq(accel_session_sync(a, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_session_sync(b, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(atomic_load(&p.both), 2,
                 "the claimed wake was delivered after the stop: the ops "
                 "met (a lost wake leaves a's op alone until its watchdog)");
    atomic_store(&ww.armed, 0);
    atomic_store(&accel__wake_window_hook, NULL);
    accel_session_release(a);
    accel_session_release(b);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---- a CANCEL close never completes an op before earlier device ops -- */

/* A test backend over the CPU one whose run() leaves the op "on the
 * device" (ACCEL__PENDING) until the test opens its gate; poll() then
 * completes it, as the CUDA backend does. capacity() 0 while `hold`. It
 * holds one op: a second run while one is on it is counted (`doubles`)
 * and would overwrite it. */
static struct {
    accel_op op;
    _Atomic int pending, gate, hold, polls, doubles;
} dev;

static int dev_run(void *state, accel_ctx *ctx, const accel_op *op,
                   int *status)
{
    (void)state, (void)ctx, (void)status;
    if (atomic_load(&dev.pending))
        atomic_fetch_add(&dev.doubles, 1);
    dev.op = *op;
    atomic_store(&dev.pending, 1);
    return ACCEL__PENDING;
}

static uint32_t dev_poll(void *state, accel_session *s)
{
    (void)state;
    atomic_fetch_add(&dev.polls, 1);
    if (atomic_load(&dev.pending) && atomic_load(&dev.gate)) {
        accel__op_complete(s, &dev.op, 0);
        atomic_store(&dev.pending, 0);
    }
    return (uint32_t)atomic_load(&dev.pending);
}

static uint32_t dev_capacity(void *state)
{
    (void)state;
    return atomic_load(&dev.hold) ? 0 : 8;
}

typedef struct dev_op {
    _Atomic int done_calls;
    _Atomic int status;
} dev_op;

static void dev_done(void *arg, int status)
{
    dev_op *d = arg;
    atomic_store(&d->status, status);
    atomic_fetch_add(&d->done_calls, 1);
}

typedef struct sync_watch {
    accel_session *s;
    dev_op *first;
    int rc;
    int first_done_at_return;
} sync_watch;

static void *sync_main(void *p)
{
    sync_watch *w = p;
    w->rc = accel_session_sync(w->s, ACCEL_FOREVER);
    w->first_done_at_return = atomic_load(&w->first->done_calls);
    return NULL;
}

Test(regressions, cancel_close_keeps_sync_after_earlier_device_ops,
     .timeout = 60)
{
    static accel__backend_ops fake;
    accel_runtime *rt = tu_runtime(1);
    cr_assert_not_null(rt);
    accel_session *s = tu_open(rt, "dev", 8, 0);
    cr_assert_not_null(s);
    fake = *s->bops; /* the CPU backend, with run/poll/capacity replaced */
    fake.flags &= ~ACCEL__BACKEND_RUNS_INLINE;
    fake.run = dev_run;
    fake.poll = dev_poll;
    fake.capacity = dev_capacity;
    s->bops = &fake; /* before any op: the worker reads it per visit */

    dev_op p = {0}, c = {0};
    accel_op pop = {.fn = op_noop, .done = dev_done, .arg = &p};
    accel_op cop = {.fn = op_noop, .done = dev_done, .arg = &c};
    cr_assert_eq(accel_submit(s, &pop, ACCEL_FOREVER), ACCEL_OK);
    unit_step("p goes to the device");
    while (!atomic_load(&dev.pending)) /* p is on the "device" */
        tu_nap_us(100);
    atomic_store(&dev.hold, 1); /* visits take nothing for now */
    /* ... visits begun from here. One begun before read room for 8 (the
     * session is polled while p is on the device); a worker preempted
     * between that read and its take would take c, next, and put it on
     * the device over p, and the close would wait for p for ever (seen
     * once under ASan on a loaded machine; a 50 ms stall planted there
     * makes it every time). Each visit's end polls: a poll counted after
     * the store of hold ends the visit in progress, and every later
     * visit reads hold. */
    unit_step("the visit in progress ends");
    int polls0 = atomic_load(&dev.polls);
    while (atomic_load(&dev.polls) <= polls0)
        tu_nap_us(100);

    /* A sync for everything accepted so far (p): it announces target 1. */
    sync_watch w = {.s = s, .first = &p};
    pthread_t st;
    cr_assert_eq(pthread_create(&st, NULL, sync_main, &w), 0);
    unit_step("the sync announces its target");
    while (atomic_load_explicit(&s->waiters.wake_at,
                                memory_order_relaxed) != 1)
        tu_nap_us(100);

    /* c queued behind p, then a CANCEL close; then visits may take again */
    cr_assert_eq(accel_submit(s, &cop, ACCEL_NO_WAIT), ACCEL_OK);
    closer_arg ca = {.s = s, .flags = ACCEL_CLOSE_CANCEL};
    pthread_t ct;
    cr_assert_eq(pthread_create(&ct, NULL, closer_main, &ca), 0);
    unit_step("the CANCEL close marks the session");
    while (!atomic_load_explicit(&s->close_cancels, memory_order_relaxed))
        tu_nap_us(100);
    atomic_store(&dev.hold, 0);
    /* Let the worker run some visits while p is still on the device. */
    unit_step("visits poll the device while p is on it");
    int polls = atomic_load(&dev.polls);
    while (atomic_load(&dev.polls) < polls + 5)
        tu_nap_us(100);
    atomic_store(&dev.gate, 1); /* p completes */
    unit_step("the sync returns once p completed");
    pthread_join(st, NULL);
    cr_assert_eq(atomic_load(&dev.doubles), 0,
                 "c went to the device while p was on it: the test's "
                 "hold came too late, and the close would wait for p");
    unit_step("the close returns");
    pthread_join(ct, NULL);
    unit_step("release and destroy");
    cr_assert_eq(w.rc, ACCEL_OK);
    cr_assert_eq(w.first_done_at_return, 1,
                 "sync returned before the earlier op's done ran");
    cr_assert_eq(atomic_load(&p.done_calls), 1);
    cr_assert_eq(atomic_load(&p.status), 0);
    cr_assert_eq(atomic_load(&c.done_calls), 1);
    cr_assert_eq(atomic_load(&c.status), ACCEL_ECLOSED);
    cr_assert_eq(ca.rc, ACCEL_OK);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* park(): a submit that lands after the worker's last pick and before it
 * announces itself finds no parked worker to wake; the pick after the
 * announcement is what finds it. The seam runs that submit in exactly
 * that window, on the worker's own thread, so the schedule does not
 * depend on luck. Without the second pick the worker sleeps on the op;
 * the wait for it has a 10 s watchdog. */
static _Atomic(accel_session *) window_s;
static _Atomic int window_fired;
static tu_rec window_rec;

static void submit_in_park_window(accel_runtime *rt, unsigned lane)
{
    (void)rt, (void)lane;
    accel_session *s = atomic_load(&window_s);
    if (!s || atomic_exchange(&window_fired, 1))
        return;
    accel_op op = tu_rec_op(&window_rec);
    if (accel_submit(s, &op, ACCEL_NO_WAIT) != ACCEL_OK)
        atomic_store(&window_fired, 2); /* reported below */
}

Test(regressions, submit_in_the_park_window_is_not_lost, .timeout = 60)
{
    memset(&window_rec, 0, sizeof(window_rec));
    atomic_store(&window_fired, 0);
    atomic_store(&accel__park_window_hook, submit_in_park_window);
    accel_runtime *rt = tu_runtime(1);
    accel_session *s = tu_open(rt, "window", 16, 0);
    atomic_store(&window_s, s);
    /* one op to wake the worker: after it, the worker parks again, and
     * the seam submits in its window */
    tu_rec first = {0};
    accel_op op = tu_rec_op(&first);
    cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    unit_step("the op submitted in the park window runs");
    for (int i = 0; i < 10000 && !atomic_load(&window_rec.done_calls); i++)
        tu_nap_us(1000);
    cr_assert_eq(atomic_load(&window_fired), 1, "the seam submitted");
    cr_assert_eq(atomic_load(&window_rec.done_calls), 1,
                 "the op submitted in the park window ran (worker parked "
                 "on it otherwise)");
    atomic_store(&window_s, NULL);
    atomic_store(&accel__park_window_hook, NULL);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}
