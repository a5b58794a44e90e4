/*
 * A session whose ops wait (compensate.c, "sessions whose ops wait"): once
 * a visit of it was found blocked, its next visit begins counted blocked,
 * so that its worker's place goes on at once instead of a monitor tick or
 * two into each wait; a visit of it that computes clears the mark, and a
 * visit that ran no op keeps it.
 *
 * Counts, not times: each step checks which of the runtime's counters
 * moved (blocked_detected: the monitor found the wait; blocked_presumed:
 * the visit began counted). The monitor's tick is 20 ms and the waits
 * are its to find only where a step says so; a wait the monitor could
 * find but must not (the presumed one) ends as soon as another session's
 * op ran beside it, which only a worker sent in its place can run while
 * it waits (one worker, a CPU-bound op holds nothing else). A watchdog
 * names the step a hang is stuck in.
 *
 * Promises: 7
 */
#define _GNU_SOURCE /* nanosleep, CLOCK_THREAD_CPUTIME_ID */
#include <criterion/criterion.h>

#include <stdio.h>
#include <time.h>

#include <pthread.h>

#include <accel/accel.h>
#include <accel/host.h>

#include "core_util.h"
#include "cotenants.h"
#include "presume.h"       /* the white-box tests at the end */
#include "runtime_types.h" /* the host worker's marks (the last test) */
#include "unit_watchdog.h"

UNIT_WATCHDOG_SUITE(presume);

#define TICK_NS UINT64_C(20000000) /* block_detect_ns */

static accel_runtime_stats stats_of(accel_runtime *rt)
{
    accel_runtime_stats st;
    cr_assert_eq(accel_runtime_get_stats(rt, &st, sizeof(st)), ACCEL_OK);
    return st;
}

static accel_session *open_prio(accel_runtime *rt, const char *id,
                                uint32_t priority)
{
    accel_session_config c = {.id = id, .priority = priority};
    accel_session *s = NULL;
    cr_assert_eq(accel_session_open(rt, &c, &s), ACCEL_OK);
    return s;
}

static accel_session *open_s(accel_runtime *rt, const char *id)
{
    return open_prio(rt, id, 0);
}

/* Waits until every worker of rt is parked: the visits before have ended
 * (a sync returns at the op's done, before its visit's end judges it). */
static void settle(accel_runtime *rt)
{
    accel_runtime_stats st = stats_of(rt);
    while (st.parked < st.workers) {
        tu_nap_us(1000);
        st = stats_of(rt);
    }
}

/* Waits until no worker counts blocked: a presumed visit's count ends at
 * its end's judge, after its last op, so an op submitted from here on
 * runs in a visit of its own. A sync returns at the op's done, before its
 * visit ends: an op submitted then may still join that visit (one visit
 * counted, not two). */
static void until_judged(accel_runtime *rt)
{
    accel_runtime_stats st = stats_of(rt);
    while (st.blocked != 0) {
        tu_nap_us(1000);
        st = stats_of(rt);
    }
}

/* Runs one op of fn(arg) on s and waits for it. */
static void run_one(accel_session *s, accel_op_fn fn, void *arg)
{
    accel_op op = {.fn = fn, .arg = arg};
    cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
}

/* An unannounced wait of 10 ticks, once *arg is set: the monitor finds it
 * while work waits (1 to 3 ticks in, and late by up to 7 ticks). */
static int nap(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    atomic_store((_Atomic int *)arg, 1); /* begun */
    struct timespec ts = {0, (long)(TICK_NS * 10)};
    while (nanosleep(&ts, &ts) != 0)
        ;
    return 0;
}

/* An unannounced wait until *arg is set (by another session's op), then
 * a tick more: a visit mostly off a CPU, however soon the flag came. */
struct gate {
    _Atomic int in, flag;
    _Atomic int order; /* open_gate_after: 1 if the waiter's visit had
                          begun, 2 if not */
    /* open_gate_after: the waiter's visit has begun once the op is in,
     * or once rt's presumed count passed presumed0 (its begin counts
     * before it hands the worker's place on, so a worker sent in its
     * place may run b's op before the waiter's thread reaches the op). */
    accel_runtime *rt;
    uint64_t presumed0;
};

static int wait_for(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    struct gate *g = arg;
    atomic_store(&g->in, 1);
    while (!atomic_load(&g->flag))
        tu_nap_us(200);
    tu_nap_us((long)(TICK_NS / 1000));
    return 0;
}

/* open_gate, noting whether the waiter's visit had begun. */
static int open_gate_after(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    struct gate *g = arg;
    accel_runtime_stats st;
    bool begun = atomic_load(&g->in) ||
                 (accel_runtime_get_stats(g->rt, &st, sizeof(st)) == ACCEL_OK &&
                  st.blocked_presumed > g->presumed0);
    atomic_store(&g->order, begun ? 1 : 2);
    atomic_store(&g->flag, 1);
    return 0;
}

static int open_gate(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    atomic_store(&((struct gate *)arg)->flag, 1);
    return 0;
}

static _Atomic uint64_t sink;

/* 20 ms of this thread's CPU and no wait. */
static int compute(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    tu_burn_cpu_ns(20000000u);
    return 0;
}

static int quick(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    return 0;
}

/* h's op takes the one worker and holds it on its CPU until g->rel
 * (tu_spin_gated: nothing the monitor counts); returns once it runs. */
static void hold_the_worker(accel_session *h, tu_spin_gate *g)
{
    accel_op oh = {.fn = tu_spin_gated, .arg = g};
    cr_assert_eq(accel_submit(h, &oh, ACCEL_FOREVER), ACCEL_OK);
    while (!atomic_load(&g->in))
        tu_nap_us(100);
}

/* One worker, extras allowed, the tick TICK_NS. */
static accel_runtime *make_rt(void)
{
    accel_runtime_config c = {.workers = 1, .struct_size = sizeof(c),
                              .max_extra_workers = 2,
                              .block_detect_ns = TICK_NS};
    accel_runtime *rt = NULL;
    cr_assert_eq(accel_runtime_create(&c, &rt), ACCEL_OK);
    return rt;
}

/* Marks a: its op naps while h's op waits for the one worker, so the
 * monitor finds the nap; then waits until the monitor has dropped the
 * count and the extra worker it sent has retired, so that nothing but a
 * presumed visit can send one again. Returns the stats then. */
static accel_runtime_stats mark_by_a_found_wait(accel_runtime *rt,
                                                accel_session *a,
                                                accel_session *h)
{
    unit_step("a's first wait, with work queued: the monitor finds it");
    /* A monitor kept off a CPU for the whole wait (a loaded machine) finds
     * nothing, or finds it after the visit's end, which marks nothing:
     * a's next wait is another chance. */
    for (int i = 0; i < 20 && !atomic_load(&a->blocks); i++) {
        _Atomic int in = 0;
        accel_op on = {.fn = nap, .arg = &in}, oq = {.fn = quick};
        cr_assert_eq(accel_submit(a, &on, ACCEL_FOREVER), ACCEL_OK);
        while (!atomic_load(&in))
            tu_nap_us(100);
        cr_assert_eq(accel_submit(h, &oq, ACCEL_FOREVER), ACCEL_OK);
        cr_assert_eq(accel_session_sync(a, ACCEL_FOREVER), ACCEL_OK);
        cr_assert_eq(accel_session_sync(h, ACCEL_FOREVER), ACCEL_OK);
    }
    cr_assert_geq(stats_of(rt).blocked_detected, 1,
                  "the monitor found none of 20 waits of a's of 10 ticks");
    cr_assert(atomic_load(&a->blocks),
              "none of 20 waits of a's that the monitor found marked a");
    unit_step("the monitor drops a's count, the extra worker retires");
    accel_runtime_stats q = stats_of(rt);
    while (q.blocked != 0 || q.extra_workers != 0) {
        tu_nap_us(1000);
        q = stats_of(rt);
    }
    return q;
}

/* One worker, extras allowed. Session a waits once (found by the monitor);
 * its next op waits for b's op, queued behind it: with a's visit counted
 * at its begin, a worker runs b at once and the monitor finds nothing.
 * Planted (no visit presumed), b waits for the monitor to find a's wait:
 * blocked_detected moves, and the test fails on it. */
Test(presume, a_session_that_waited_begins_its_next_visit_counted,
     .timeout = 60)
{
    accel_runtime *rt = make_rt();
    accel_session *a = open_s(rt, "a"), *b = open_s(rt, "b");
    accel_session *h = open_s(rt, "h");
    accel_runtime_stats s1 = mark_by_a_found_wait(rt, a, h);

    unit_step("a's next op waits for b's, queued once a's began");
    struct gate g = {0};
    accel_op ow = {.fn = wait_for, .arg = &g};
    accel_op ob = {.fn = open_gate, .arg = &g};
    cr_assert_eq(accel_submit(a, &ow, ACCEL_FOREVER), ACCEL_OK);
    while (!atomic_load(&g.in))
        tu_nap_us(100);
    cr_assert_eq(accel_submit(b, &ob, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_session_sync(a, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_session_sync(b, ACCEL_FOREVER), ACCEL_OK);
    until_judged(rt); /* a's visit ends before its next op */
    accel_runtime_stats s2 = stats_of(rt);
    cr_expect_eq(s2.blocked_presumed, s1.blocked_presumed + 1,
                 "a's visit after a wait was not begun counted blocked "
                 "(%llu presumed before, %llu after)",
                 (unsigned long long)s1.blocked_presumed,
                 (unsigned long long)s2.blocked_presumed);
    cr_expect_eq(s2.blocked_detected, s1.blocked_detected,
                 "a's second wait was left for the monitor to find");

    unit_step("a computes: its visit, begun counted, clears the mark");
    run_one(a, compute, NULL);
    accel_runtime_stats s3 = stats_of(rt);
    cr_expect_eq(s3.blocked_presumed, s2.blocked_presumed + 1,
                 "a's visit after a second wait was not begun counted");
    unit_step("a's next visit begins as any other");
    run_one(a, quick, NULL);
    cr_expect_eq(stats_of(rt).blocked_presumed, s3.blocked_presumed,
                 "a's visit after one that computed was begun counted");

    unit_step("destroy");
    accel_session_release(a);
    accel_session_release(b);
    accel_session_release(h);
    cr_expect_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* The mark stays through a visit that ran no op: a's marked op is
 * canceled while another session's CPU-bound op holds the one worker, so
 * a's visit only completes it unrun; a's next op is still presumed.
 * Planted (any visit judged), the empty visit clears the mark and the
 * next op's visit is not presumed. */
Test(presume, a_visit_that_ran_no_op_keeps_the_mark, .timeout = 60)
{
    accel_runtime *rt = make_rt();
    accel_session *a = open_s(rt, "a"), *h = open_s(rt, "h");
    mark_by_a_found_wait(rt, a, h);

    unit_step("h holds the one worker on its CPU; a's op is canceled queued");
    tu_spin_gate g = {0};
    hold_the_worker(h, &g);
    accel_runtime_stats s1 = stats_of(rt);
    accel_ticket t;
    accel_op ox = {.fn = quick};
    cr_assert_eq(accel_submit_ex(a, &ox, 0, ACCEL_FOREVER, &t), ACCEL_OK);
    cr_assert_eq(accel_cancel(&t), ACCEL_OK);
    atomic_store(&g.rel, 1);
    cr_assert_eq(accel_session_sync(h, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_session_sync(a, ACCEL_FOREVER), ACCEL_OK);
    until_judged(rt); /* the empty visit ends before a's next op */

    unit_step("a's next op: still presumed");
    run_one(a, quick, NULL);
    accel_runtime_stats s2 = stats_of(rt);
    cr_expect_eq(s2.blocked_presumed, s1.blocked_presumed + 2,
                 "%llu visits of a begun counted after the empty one "
                 "(2: the empty one and the next)",
                 (unsigned long long)(s2.blocked_presumed -
                                      s1.blocked_presumed));

    unit_step("destroy");
    accel_session_release(a);
    accel_session_release(h);
    cr_expect_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* The hand-off at a presumed visit's begin: b's op is queued before a's
 * marked visit begins (both wait behind h's CPU-bound op on the one
 * worker), so no submit comes after the begin to send an extra worker;
 * a's op waits, unannounced, for b's. The begin itself must send one (a
 * weight of 1000 against b's 1, b's visits known to cost 20 ms, puts
 * a's visit first; b's op checks that a's had begun). Planted (the begin counting the worker blocked without
 * handing its place on), b's op never runs: the watchdog names the
 * step. */
Test(presume, a_presumed_visit_hands_its_place_on_at_its_begin,
     .timeout = 60)
{
    accel_runtime *rt = make_rt();
    accel_session *a = open_prio(rt, "a", 1000), *b = open_prio(rt, "b", 1);
    accel_session *h = open_s(rt, "h");
    unit_step("b computes once: its visits cost 20 ms at weight 1");
    run_one(b, compute, NULL);
    mark_by_a_found_wait(rt, a, h);

    unit_step("h holds the one worker; a's op and then b's are queued");
    tu_spin_gate g = {0};
    hold_the_worker(h, &g);
    accel_runtime_stats s1 = stats_of(rt);
    struct gate gt = {.rt = rt, .presumed0 = s1.blocked_presumed};
    accel_op ow = {.fn = wait_for, .arg = &gt};
    accel_op ob = {.fn = open_gate_after, .arg = &gt};
    cr_assert_eq(accel_submit(a, &ow, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_submit(b, &ob, ACCEL_FOREVER), ACCEL_OK);

    unit_step("h's op ends: a's visit begins counted, and b's op runs");
    atomic_store(&g.rel, 1);
    cr_assert_eq(accel_session_sync(a, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_session_sync(b, ACCEL_FOREVER), ACCEL_OK);
    cr_expect_eq(atomic_load(&gt.order), 1,
                 "b's op ran before a's visit began");
    accel_runtime_stats s2 = stats_of(rt);
    cr_expect_eq(s2.blocked_presumed, s1.blocked_presumed + 1,
                 "a's visit was not begun counted");
    cr_expect_eq(s2.blocked_detected, s1.blocked_detected,
                 "a's wait was left for the monitor to find");

    unit_step("destroy");
    accel_session_release(a);
    accel_session_release(b);
    accel_session_release(h);
    cr_expect_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* 20 ms asleep, then 10 ms of this thread's CPU. */
static int nap_then_compute(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    tu_nap_us(20000);
    tu_burn_cpu_ns(10000000u);
    return 0;
}

/* accel's own worker, beside three spinners on its one CPU. A marked
 * visit that computes 20 ms clears the mark. A marked visit asleep 20
 * ms, then computing 10 ms that wait about 30 ms more for the CPU, keeps
 * it: the judge weighs time asleep against time on a CPU, and the wait
 * for the CPU (schedstat's run-queue time) against neither. Planted: the
 * judge before (asleep under half the wall time clears the mark), or the
 * run-queue time weighed as work, or the first visit's CPU time left in
 * the second's (no reset at a presumed visit's begin): the second visit
 * clears the mark. */
Test(presume, a_wait_then_work_that_waits_for_a_cpu_keeps_its_mark,
     .timeout = 60)
{
    struct cotenants co;
    cr_assert(cotenants_start(&co, 3), "the spinners on one CPU did not start");
    accel_runtime *rt = make_rt();
    accel_session *a = open_s(rt, "a");
    uint64_t p0 = stats_of(rt).blocked_presumed;
    unit_step("a marked visit computes 20 ms: the mark goes");
    settle(rt);
    atomic_store(&a->blocks, 1); /* as a found wait leaves it */
    run_one(a, compute, NULL);
    settle(rt);
    cr_expect_eq(stats_of(rt).blocked_presumed, p0 + 1,
                 "the marked visit was not begun counted");
    cr_expect_eq(atomic_load(&a->blocks), 0,
                 "a visit that computed kept its mark");
    unit_step("a marked visit sleeps 20 ms, then computes 10 ms: it stays");
    atomic_store(&a->blocks, 1);
    run_one(a, nap_then_compute, NULL);
    settle(rt);
    cr_expect_eq(stats_of(rt).blocked_presumed, p0 + 2,
                 "the marked visit was not begun counted");
    cr_expect_eq(atomic_load(&a->blocks), 1,
                 "a visit asleep twice as long as it computed (and waiting "
                 "for the CPU three times as long) lost its mark");
    unit_step("spinners stop; destroy");
    cotenants_stop(&co);
    accel_session_release(a);
    cr_expect_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* 200 us of spinning and no wait, timed by the monotonic clock: an op
 * that reads its thread's CPU clock brings the kernel's count of its CPU
 * time up to date, and real op bodies do not. */
static int compute_short(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    volatile uint64_t x = 0;
    do {
        for (int i = 0; i < 100; i++)
            x += (uint64_t)i;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) <
             200000);
    atomic_fetch_add(&sink, x);
    return 0;
}

/* A marked visit of 200 us of CPU work clears the mark, each of 16 times:
 * its time on a CPU is read from the thread's CPU clock, which is up to
 * date. Planted (the CPU time from schedstat's first field, which the
 * kernel brings up to date for a running thread only at its ticks and
 * switches and at reads of its CPU clock), most such visits read as
 * asleep and keep the mark. */
Test(presume, a_short_visit_that_computes_clears_the_mark, .timeout = 60)
{
    accel_runtime *rt = make_rt();
    accel_session *a = open_s(rt, "a");
    uint64_t p0 = stats_of(rt).blocked_presumed;
    int kept = 0;
    unit_step("16 marked visits of 200 us of CPU work");
    for (int i = 0; i < 16; i++) {
        settle(rt);
        atomic_store(&a->blocks, 1); /* as a found wait leaves it */
        run_one(a, compute_short, NULL);
        settle(rt);
        kept += atomic_load(&a->blocks) != 0;
    }
    cr_expect_eq(stats_of(rt).blocked_presumed, p0 + 16,
                 "the marked visits were not all begun counted");
    cr_expect_eq(kept, 0, "%d of 16 visits that only computed kept the mark",
                 kept);
    unit_step("destroy");
    accel_session_release(a);
    cr_expect_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* White-box (presume.h): the judge at a visit's end marks its session
 * only for a detection of that visit. The monitor notes the visit it
 * found; one that lands after its visit ended (here: visit 6's, noted
 * while visit 7 runs) marks nothing, and one of the running visit marks
 * its session. Planted (the judge taking any detection noted since the
 * begin, as a count of detections did), visit 7 marks its session for
 * visit 6's wait. */
Test(presume, a_late_detection_marks_no_other_session, .timeout = 60)
{
    static accel__worker w;
    static struct accel_session s; /* blocks 0: the begin stays inline */
    unit_step("visit 7 begins; visit 6's detection lands; visit 7 ends");
    atomic_store(&w.visits, 7);
    accel__presume_begin(&w, &s);
    atomic_store(&w.detected_visit, 6);
    accel__presume_judge(&w, &s);
    cr_expect_eq(atomic_load(&s.blocks), 0,
                 "visit 7's session was marked for visit 6's wait");
    unit_step("visit 8 begins and is found; it ends");
    atomic_store(&s.blocks, 0); /* unmarked, whatever visit 7 left: the
                                   begin stays inline (w has no runtime) */
    atomic_store(&w.visits, 8);
    accel__presume_begin(&w, &s);
    atomic_store(&w.detected_visit, 8);
    accel__presume_judge(&w, &s);
    cr_expect_eq(atomic_load(&s.blocks), 1,
                 "visit 8's session was not marked for its own wait");
}

/* Host-driven, one host worker, driven by the test itself; the monitor's
 * tick long enough that only the presumption counts the worker. */
static void wake_nothing(void *arg, unsigned lane)
{
    (void)arg;
    (void)lane;
}

static accel_runtime *host_rt(void)
{
    accel_runtime_config c = {.workers = 1, .struct_size = sizeof(c),
                              .flags = ACCEL_RUNTIME_HOST_WORKERS,
                              .host_wake = wake_nothing,
                              .block_detect_ns = UINT64_C(1000000000)};
    accel_runtime *rt = NULL;
    cr_assert_eq(accel_runtime_create(&c, &rt), ACCEL_OK);
    return rt;
}

/* Submits one quick op to s and begins its visit on host worker 0 here:
 * the op handed out in ops[0]. */
static void begin_one(accel_runtime *rt, accel_session *s, accel_op *ops)
{
    accel_op op = {.fn = quick};
    unsigned n = 0;
    cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    cr_assert_eq(accel_host_visit_begin(rt, 0, ops, 1, &n), ACCEL_OK);
    cr_assert_eq(n, 1);
}

/* begin_one, s marked: the visit counted at its begin. */
static void begin_marked(accel_runtime *rt, accel_session *s, accel_op *ops)
{
    atomic_store(&s->blocks, 1); /* as a found wait leaves it */
    uint64_t p0 = stats_of(rt).blocked_presumed;
    begin_one(rt, s, ops);
    cr_assert_eq(stats_of(rt).blocked_presumed, p0 + 1,
                 "a marked session's visit did not begin counted");
}

struct moved {
    accel_runtime *rt;
    accel_op op;
    unsigned nap_us; /* asleep this long before the op */
    int attach, end;
};

/* The visit's second thread: attaches it, sleeps nap_us, runs its op and
 * ends it. */
static void *go_on_here(void *arg)
{
    struct moved *m = arg;
    m->attach = accel_host_visit_attach(m->rt, 0);
    if (m->nap_us)
        tu_nap_us(m->nap_us);
    int st = m->op.fn(NULL, m->op.arg);
    m->end = accel_host_visit_end(m->rt, 0, &st, 1);
    return NULL;
}

/* The visit, detached here, goes on and ends on a fresh thread. */
static void move_and_end(struct moved *m)
{
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, go_on_here, m), 0);
    pthread_join(t, NULL);
    cr_assert_eq(m->attach, ACCEL_OK);
    cr_assert_eq(m->end, ACCEL_OK);
}

/* A presumed host visit that moves to another thread (a host worker
 * ended inside an op and another took the visit over) is judged on each
 * thread's own clock. Here the first thread has spent 100 ms on its CPU,
 * the second is fresh and sleeps: the visit was off a CPU nearly all its
 * time and its session stays marked. Planted (the attach keeps the first
 * thread's mark), the judge subtracts the first thread's CPU time from
 * the second's, wraps, and takes the mark back. */
Test(presume, a_presumed_host_visit_moved_between_threads_keeps_its_wait,
     .timeout = 60)
{
    accel_runtime *rt = host_rt();
    accel_session *s = open_s(rt, "s");
    unit_step("this thread spends 100 ms on its CPU");
    tu_burn_cpu_ns(100000000u);
    unit_step("a marked visit begins here and is detached");
    struct moved m = {.rt = rt, .nap_us = 30000};
    begin_marked(rt, s, &m.op);
    cr_assert_eq(accel_host_visit_detach(rt, 0), ACCEL_OK);
    unit_step("a fresh thread attaches it, sleeps 30 ms, ends it");
    move_and_end(&m);
    cr_expect_eq(atomic_load(&s->blocks), 1,
                 "a visit asleep but for its begin lost its mark");
    unit_step("a marked visit sleeps 30 ms here, then moves and ends");
    struct moved m2 = {.rt = rt};
    begin_marked(rt, s, &m2.op);
    tu_nap_us(30000);
    cr_assert_eq(accel_host_visit_detach(rt, 0), ACCEL_OK);
    move_and_end(&m2);
    cr_expect_eq(atomic_load(&s->blocks), 1,
                 "the first thread's sleep was not banked at the detach");
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* A presumed host visit that sits on no thread a long time between its
 * detach and its attach (a host slow to move it, or a loaded machine's
 * run queue) waited no less: the judge weighs its time asleep against
 * its time on a CPU, not against its wall time, and the mark stays.
 * Planted (asleep under half the wall time clears the mark, the judge
 * before), the 30 ms asleep of a 130 ms visit takes the mark back. (That
 * a visit that computes clears the mark is the first test's: a host's
 * thread, with its CPU clock alone, takes a wait for a CPU for sleep.) */
Test(presume, a_visit_slow_to_move_keeps_its_mark, .timeout = 60)
{
    accel_runtime *rt = host_rt();
    accel_session *s = open_s(rt, "s");
    unit_step("a marked visit begins here and is detached");
    struct moved m = {.rt = rt, .nap_us = 30000};
    begin_marked(rt, s, &m.op);
    cr_assert_eq(accel_host_visit_detach(rt, 0), ACCEL_OK);
    unit_step("100 ms on no thread; a fresh one attaches, sleeps 30 ms, ends");
    tu_nap_us(100000);
    move_and_end(&m);
    cr_expect_eq(atomic_load(&s->blocks), 1,
                 "a visit asleep but for its move lost its mark");
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* A host announcement left open past its visit's end (host.h allows it)
 * and a marked visit begun after a gap: the visit's wait is measured from
 * its own begin, not from the earlier visit's end, or the gap between
 * the visits (in which this thread may have computed anything) would
 * count as the new visit's time off a CPU. White-box: the mark the
 * visit's wait is measured from. Planted (no re-mark at the begin), the
 * mark is the earlier visit's end. */
Test(presume, a_visit_after_an_open_announcement_measures_from_its_begin,
     .timeout = 60)
{
    accel_runtime *rt = host_rt();
    accel_session *s = open_s(rt, "s");
    accel_op ops[1];
    int st = 0;
    unit_step("visit 1 announces a wait and ends with it open");
    begin_one(rt, s, ops);
    cr_assert_eq(accel_host_blocking_begin(rt, 0), ACCEL_OK);
    cr_assert_eq(accel_host_visit_end(rt, 0, &st, 1), ACCEL_OK);
    unit_step("a gap of 10 ms; visit 2, marked, begins");
    tu_nap_us(10000);
    uint64_t before = (uint64_t)accel_now_ns(); /* accel__now_ns's clock */
    begin_marked(rt, s, ops);
    cr_expect_geq(rt->workers[0].own_t0, before,
                  "visit 2's wait is measured from %llu ns before its begin",
                  (unsigned long long)(before - rt->workers[0].own_t0));
    unit_step("visit 2 ends (the announcement stays open); destroy");
    cr_assert_eq(accel_host_visit_end(rt, 0, &st, 1), ACCEL_OK);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* A host that ends an announcement on the thread it detached the visit
 * from (out of host.h's order, which nothing refuses): the detach banked
 * that thread's part of the wait, and the end must not count it again.
 * White-box: the time credited as off a CPU never exceeds the time that
 * passed. Planted (the detach leaves its mark), the end adds the banked
 * part a second time: about 60 ms credited after 30 ms. */
Test(presume, a_detached_wait_is_not_counted_twice, .timeout = 60)
{
    accel_runtime *rt = host_rt();
    accel_session *s = open_s(rt, "s");
    accel_op op = {.fn = quick}, ops[1];
    unsigned n = 0;
    unit_step("a visit announces a wait, sleeps 30 ms, is detached");
    cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    uint64_t t0 = (uint64_t)accel_now_ns();
    cr_assert_eq(accel_host_visit_begin(rt, 0, ops, 1, &n), ACCEL_OK);
    cr_assert_eq(accel_host_blocking_begin(rt, 0), ACCEL_OK);
    tu_nap_us(30000);
    cr_assert_eq(accel_host_visit_detach(rt, 0), ACCEL_OK);
    unit_step("the announcement ends here, detached");
    (void)accel_host_blocking_end(rt, 0);
    uint64_t passed = (uint64_t)accel_now_ns() - t0;
    cr_expect_leq(rt->workers[0].own_ns, passed,
                  "%llu ns credited off a CPU after %llu ns",
                  (unsigned long long)rt->workers[0].own_ns,
                  (unsigned long long)passed);
    unit_step("attached again here, the visit ends; destroy");
    cr_assert_eq(accel_host_visit_attach(rt, 0), ACCEL_OK);
    int st = ops[0].fn(NULL, ops[0].arg);
    cr_assert_eq(accel_host_visit_end(rt, 0, &st, 1), ACCEL_OK);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* Host worker 0's visit, open on this thread, detached with flags, nap_us
 * on no thread, attached again here: the credit (own_ns) it gained. */
static uint64_t credit_of_move(accel_runtime *rt, unsigned flags,
                               unsigned nap_us)
{
    uint64_t c0 = rt->workers[0].own_ns;
    cr_assert_eq(accel_host_visit_detach_ex(rt, 0, flags), ACCEL_OK);
    if (flags & ACCEL_HOST_DETACH_PARKED)
        cr_expect_null(accel_current_session(),
                       "a detached visit's session is still this thread's");
    tu_nap_us(nap_us);
    cr_assert_eq(accel_host_visit_attach(rt, 0), ACCEL_OK);
    return rt->workers[0].own_ns - c0;
}

/* A parked detach (ACCEL_HOST_DETACH_PARKED: the host vouches that none
 * of the visit's code runs until the attach, as the Go binding's
 * goroutine waiting for a nested Submit's result, unlocked from its
 * thread) credits the time to the attach as off a CPU, with a wait open
 * or not; a plain detach's time on no thread is charged; an unknown flag
 * is refused and changes nothing.
 * A parked detach whose wait ended while detached leaves nothing for a
 * later attach to credit. White-box: the worker's credit (own_ns).
 * Planted (the attach credits nothing), the parked 50 ms read as 0;
 * (every detach parked), the plain 200 ms is credited; (an attach that
 * keeps the park's time when no wait is open), a later attach credits
 * the 200 ms in between. */
Test(presume, a_parked_detach_credits_its_time_and_a_plain_one_does_not,
     .timeout = 60)
{
    accel_runtime *rt = host_rt();
    accel_session *s = open_s(rt, "s");
    accel_op ops[1];
    begin_one(rt, s, ops);
    unit_step("refused: a flag not defined, and parked and lent both");
    cr_expect_eq(accel_host_visit_detach_ex(rt, 0, 0x4u), ACCEL_EINVAL);
    cr_expect_eq(accel_host_visit_detach_ex(rt, 0, ACCEL_HOST_DETACH_PARKED |
                                                       ACCEL_HOST_DETACH_LENT),
                 ACCEL_EINVAL);
    cr_expect_eq(accel_current_session(), s,
                 "a refused detach left the visit's thread");
    unit_step("no wait open: detached parked, 50 ms, attached");
    uint64_t bare = credit_of_move(rt, ACCEL_HOST_DETACH_PARKED, 50000);
    cr_expect_geq(bare, UINT64_C(50000000),
                  "%llu ns of a 50 ms parked detach, no wait open, credited",
                  (unsigned long long)bare);
    unit_step("a wait announced, detached parked, 50 ms, attached");
    cr_assert_eq(accel_host_blocking_begin(rt, 0), ACCEL_OK);
    uint64_t parked = credit_of_move(rt, ACCEL_HOST_DETACH_PARKED, 50000);
    cr_expect_geq(parked, UINT64_C(50000000),
                  "%llu ns of a 50 ms parked detach credited",
                  (unsigned long long)parked);
    unit_step("detached plain, 200 ms, attached");
    uint64_t plain = credit_of_move(rt, 0, 200000);
    cr_expect_lt(plain, UINT64_C(200000000),
                 "%llu ns of a plain detach's 200 ms on no thread credited",
                 (unsigned long long)plain);
    unit_step("detached parked, the wait ended detached, attached");
    cr_assert_eq(accel_host_visit_detach_ex(rt, 0, ACCEL_HOST_DETACH_PARKED),
                 ACCEL_OK);
    cr_assert_eq(accel_host_blocking_end(rt, 0), ACCEL_OK);
    cr_assert_eq(accel_host_visit_attach(rt, 0), ACCEL_OK);
    unit_step("200 ms here, then a wait detached plain and attached");
    tu_nap_us(200000);
    cr_assert_eq(accel_host_blocking_begin(rt, 0), ACCEL_OK);
    uint64_t stale = credit_of_move(rt, 0, 0);
    cr_expect_lt(stale, UINT64_C(200000000),
                 "%llu ns credited: a parked detach whose wait ended "
                 "detached was credited at a later attach",
                 (unsigned long long)stale);
    unit_step("the wait ends, the visit ends; destroy");
    cr_assert_eq(accel_host_blocking_end(rt, 0), ACCEL_OK);
    int st = ops[0].fn(NULL, ops[0].arg);
    cr_assert_eq(accel_host_visit_end(rt, 0, &st, 1), ACCEL_OK);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* A lent detach (ACCEL_HOST_DETACH_LENT: the thread runs another
 * session's visit meanwhile, as the Go binding's nested Submit running
 * its own op by the direct hand-off) is not charged to the visit, and is
 * no wait: its time goes to lent_ns, none of it to the time off a CPU
 * (own_ns) that a presumed visit's judge weighs, where a parked detach
 * as long adds all of it there and keeps the mark. White-box: the
 * credits across the move, and the parked visit's mark. Planted (lent
 * time counted as parked), the lend adds 50 ms to own_ns.
 * The lent visit's mark is not checked: a host's thread has no
 * schedstat, so its 5 ms of CPU work's wait for a CPU on a loaded
 * machine reads as asleep, and the judge may keep the mark for that;
 * the lend's part is the credit, checked exactly. */
struct moved_credit {
    uint64_t own; /* own_ns added from the detach's return to the attach */
    uint64_t lent; /* lent_ns at the visit's end */
};

/* A marked visit of s computes 5 ms, is detached with flags 50 ms, and
 * ends. */
static struct moved_credit computed_then_moved(accel_runtime *rt,
                                               accel_session *s,
                                               unsigned flags)
{
    accel_op ops[1];
    begin_marked(rt, s, ops);
    tu_burn_cpu_ns(5000000u);
    cr_assert_eq(accel_host_visit_detach_ex(rt, 0, flags), ACCEL_OK);
    uint64_t c0 = rt->workers[0].own_ns; /* the 5 ms part folded in */
    tu_nap_us(50000);
    cr_assert_eq(accel_host_visit_attach(rt, 0), ACCEL_OK);
    struct moved_credit m = {.own = rt->workers[0].own_ns - c0,
                             .lent = rt->workers[0].lent_ns};
    int st = ops[0].fn(NULL, ops[0].arg);
    cr_assert_eq(accel_host_visit_end(rt, 0, &st, 1), ACCEL_OK);
    return m;
}

Test(presume, a_lent_detach_is_not_charged_and_is_no_wait, .timeout = 60)
{
    accel_runtime *rt = host_rt();
    accel_session *s = open_s(rt, "s");
    unit_step("a marked visit computes 5 ms, lends its thread 50 ms, ends");
    struct moved_credit lent = computed_then_moved(rt, s, ACCEL_HOST_DETACH_LENT);
    cr_expect_geq(lent.lent, UINT64_C(50000000),
                  "%llu ns of a 50 ms lend not charged",
                  (unsigned long long)lent.lent);
    cr_expect_eq(lent.own, 0,
                 "%llu ns of a 50 ms lend weighed as time off a CPU",
                 (unsigned long long)lent.own);
    unit_step("the same with the 50 ms parked: off a CPU, the mark stays");
    struct moved_credit parked =
        computed_then_moved(rt, s, ACCEL_HOST_DETACH_PARKED);
    cr_expect_geq(parked.own, UINT64_C(50000000),
                  "%llu ns of a 50 ms park weighed as time off a CPU",
                  (unsigned long long)parked.own);
    cr_expect_eq(parked.lent, 0, "a park counted %llu ns lent",
                 (unsigned long long)parked.lent);
    cr_expect_eq(atomic_load(&s->blocks), 1,
                 "a visit parked 50 ms after 5 ms of CPU lost its mark");
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* accel_host_visit_watch: a visit the direct hand-off began (not
 * watched) is watched from the call on, on the calling thread (the
 * monitor's in_visit and thread id), until its end; refused (EINVAL,
 * nothing changed) with no visit open, on a visit watched already, and
 * from a thread that does not run the visit. White-box: the worker's
 * in_visit. Planted (the call a no-op that says ACCEL_OK), in_visit stays
 * 0. */
static void *watch_elsewhere(void *arg)
{
    accel_runtime *rt = arg;
    return (void *)(intptr_t)accel_host_visit_watch(rt, 0);
}

Test(presume, an_own_visit_is_watched_from_the_call_on, .timeout = 60)
{
    accel_runtime *rt = host_rt();
    accel_session *s = open_s(rt, "s");
    accel_op op = {.fn = quick}, ops[1];
    unsigned n = 0;
    int begun = ACCEL_EAGAIN;
    unit_step("refused with no visit open");
    cr_expect_eq(accel_host_visit_watch(rt, 0), ACCEL_EINVAL);
    unit_step("a visit by the direct hand-off, not watched");
    cr_assert_eq(accel_host_submit_own(rt, 0, s, &op, ACCEL_NO_WAIT, ops, 1,
                                       &n, &begun),
                 ACCEL_OK);
    cr_assert_eq(begun, ACCEL_OK);
    cr_expect_eq(atomic_load(&rt->workers[0].in_visit), 0);
    unit_step("refused from a thread that does not run it");
    pthread_t t;
    void *rc = NULL;
    cr_assert_eq(pthread_create(&t, NULL, watch_elsewhere, rt), 0);
    pthread_join(t, &rc);
    cr_expect_eq((int)(intptr_t)rc, ACCEL_EINVAL);
    cr_expect_eq(atomic_load(&rt->workers[0].in_visit), 0);
    unit_step("watched here, then refused as watched already");
    cr_assert_eq(accel_host_visit_watch(rt, 0), ACCEL_OK);
    cr_expect_eq(atomic_load(&rt->workers[0].in_visit), 1,
                 "the visit is not watched after accel_host_visit_watch");
    cr_expect_eq(accel_host_visit_watch(rt, 0), ACCEL_EINVAL);
    unit_step("the visit ends: no longer watched");
    int st = ops[0].fn(NULL, ops[0].arg);
    cr_assert_eq(accel_host_visit_end(rt, 0, &st, 1), ACCEL_OK);
    cr_expect_eq(atomic_load(&rt->workers[0].in_visit), 0);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}
