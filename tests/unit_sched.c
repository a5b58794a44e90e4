/*
 * Threaded scheduler tests through the public API: behaviour only, no
 * timing thresholds (a hang fails at its named watchdog step).
 *
 * Promises: 1, 2, 3
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include <accel/accel.h>

#include "core_util.h"
#include "unit_watchdog.h"
#include "runtime.h"
#include "sched_core.h"
#include "session.h"

/* A wait that hangs names its step (unit_watchdog.h). */
UNIT_WATCHDOG_SUITE(sched);

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void spin_ns(uint64_t ns)
{
    uint64_t end = now_ns() + ns;
    while (now_ns() < end)
        ;
}

/* ------------------------------------------------ progress, FIFO */

#define NS 8
typedef struct sess {
    accel_session *s;
    uint64_t op_ns;
    _Atomic uint64_t accepted, done, next_seq, fifo_bad;
} sess;

static sess S[NS];
static _Atomic int stop;

typedef struct seq_arg {
    sess *x;
    uint64_t seq;
} seq_arg;

static int seq_op(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    seq_arg *a = arg;
    /* Only the session's current worker runs its ops: FIFO means seq
     * arrives in order. */
    uint64_t want = atomic_load(&a->x->next_seq);
    if (a->seq != want)
        atomic_fetch_add(&a->x->fifo_bad, 1);
    atomic_store(&a->x->next_seq, a->seq + 1);
    spin_ns(a->x->op_ns);
    return 0;
}

static void seq_done(void *arg, int status)
{
    seq_arg *a = arg;
    (void)status;
    atomic_fetch_add(&a->x->done, 1);
    free(a);
}

static void *producer(void *arg)
{
    sess *x = arg;
    uint64_t seq = 0;
    while (!atomic_load(&stop)) {
        seq_arg *a = malloc(sizeof(*a));
        a->x = x;
        a->seq = seq;
        accel_op op = {seq_op, seq_done, a};
        if (accel_submit(x->s, &op, 1000000) == ACCEL_OK) {
            seq++;
            atomic_fetch_add(&x->accepted, 1);
        } else {
            free(a);
        }
    }
    return NULL;
}

static void saturate(unsigned workers, unsigned short_lane,
                     const uint32_t *prio, const uint64_t *op_ns)
{
    accel_runtime *rt;
    accel_runtime_config rc = {.workers = workers,
                               .short_lane_workers = short_lane,
                               .short_op_ns = 100000};
    cr_assert_eq(accel_runtime_create(&rc, &rt), ACCEL_OK);
    atomic_store(&stop, 0);
    pthread_t t[NS];
    for (int i = 0; i < NS; i++) {
        memset(&S[i], 0, sizeof(S[i]));
        S[i].op_ns = op_ns[i];
        char id[16];
        snprintf(id, sizeof(id), "sat%d", i);
        accel_session_config c = {.id = id, .priority = prio[i],
                                  .queue_depth = 64};
        cr_assert_eq(accel_session_open(rt, &c, &S[i].s), ACCEL_OK);
        pthread_create(&t[i], NULL, producer, &S[i]);
    }
    /* Every session makes progress in every interval while all are
     * backlogged. */
    uint64_t last[NS] = {0};
    for (int round = 0; round < 4; round++) {
        uint64_t seen[NS];
        unit_step("every backlogged session completes an op in the round");
        for (;;) {
            tu_nap_us(50000);
            int stuck = 0;
            for (int i = 0; i < NS; i++) {
                seen[i] = atomic_load(&S[i].done);
                stuck += seen[i] == last[i];
            }
            if (!stuck)
                break; /* otherwise wait longer: the step's watchdog
                          fails a stall */
        }
        memcpy(last, seen, sizeof(last));
    }
    atomic_store(&stop, 1);
    unit_step("the producers return; sync of every session");
    for (int i = 0; i < NS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < NS; i++) {
        cr_assert_eq(accel_session_sync(S[i].s, ACCEL_FOREVER), ACCEL_OK);
        cr_assert_eq(atomic_load(&S[i].done), atomic_load(&S[i].accepted));
        cr_assert_eq(atomic_load(&S[i].fifo_bad), 0, "session %d out of order",
                     i);
        accel_session_stats st;
        cr_assert_eq(accel_session_get_stats(S[i].s, &st), ACCEL_OK);
        cr_assert_gt(st.visits, 0);
        cr_assert_gt(st.vtime_ns, 0);
        accel_session_release(S[i].s);
    }
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

static const uint32_t PRIO[NS] = {1, 1, 5, 5, 10, 10, 100, 1000};

Test(sched, all_progress_fifo_holds, .timeout = 120)
{
    const uint64_t ns[NS] = {20000, 20000, 20000, 20000,
                             20000, 20000, 20000, 20000};
    saturate(2, 0, PRIO, ns);
}

Test(sched, all_progress_mixed_costs_short_lane, .timeout = 120)
{
    const uint64_t ns[NS] = {300000, 1000, 300000, 1000,
                             300000, 1000, 300000, 1000};
    saturate(3, 1, PRIO, ns);
}

/* ------------------------------------------------ lanes never strand */

static _Atomic uint64_t lane_done;

static int lane_op(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    spin_ns((uint64_t)(uintptr_t)arg);
    return 0;
}

static void lane_cb(void *arg, int status)
{
    (void)arg;
    (void)status;
    atomic_fetch_add(&lane_done, 1);
}

/* A session that alternates short and long phases moves between the
 * short-lane class and the general one, often while the general workers
 * are parked: each phase must finish (a stranded session hangs sync). */
Test(sched, lane_switch_never_strands, .timeout = 120)
{
    for (unsigned workers = 2; workers <= 3; workers++) {
        accel_runtime *rt;
        accel_runtime_config rc = {.workers = workers,
                                   .short_lane_workers = 1,
                                   .short_op_ns = 50000};
        cr_assert_eq(accel_runtime_create(&rc, &rt), ACCEL_OK);
        accel_session *s;
        accel_session_config c = {.id = "lanes", .priority = 10};
        cr_assert_eq(accel_session_open(rt, &c, &s), ACCEL_OK);
        atomic_store(&lane_done, 0);
        uint64_t n = 0;
        for (int phase = 0; phase < 60; phase++) {
            uint64_t ns = phase % 2 ? 400000 : 2000;
            int k = phase % 2 ? 3 : 40;
            for (int i = 0; i < k; i++, n++) {
                accel_op op = {lane_op, lane_cb, (void *)(uintptr_t)ns};
                cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
            }
            unit_step("sync of the phase's ops (the lane switches)");
            cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
            cr_assert_eq(atomic_load(&lane_done), n);
        }
        accel_session_release(s);
        cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    }
}

/* ------------------------------------------------ exactly once, close */

#define CN 6
#define CMAX 200000
static _Atomic uint8_t calls[CMAX];
static _Atomic uint64_t cidx, caccepted, cdup;
static accel_session *CS[CN];

static int c_op(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    spin_ns(2000);
    return 0;
}

static void c_done(void *arg, int status)
{
    (void)status;
    if (atomic_fetch_add(&calls[(uintptr_t)arg], 1) != 0)
        atomic_fetch_add(&cdup, 1);
}

static void *c_producer(void *arg)
{
    uintptr_t me = (uintptr_t)arg;
    uint64_t r = me + 1;
    while (!atomic_load(&stop)) {
        uint64_t i = atomic_fetch_add(&cidx, 1);
        if (i >= CMAX)
            break;
        r = r * 6364136223846793005ull + 1;
        accel_op op = {c_op, c_done, (void *)(uintptr_t)i};
        if (accel_submit(CS[(r >> 33) % CN], &op, 100000) == ACCEL_OK)
            atomic_fetch_add(&caccepted, 1);
    }
    return NULL;
}

Test(sched, exactly_once_under_close, .timeout = 120)
{
    accel_runtime *rt;
    accel_runtime_config rc = {.workers = 2};
    cr_assert_eq(accel_runtime_create(&rc, &rt), ACCEL_OK);
    atomic_store(&stop, 0);
    for (int i = 0; i < CN; i++) {
        char id[16];
        snprintf(id, sizeof(id), "close%d", i);
        accel_session_config c = {.id = id, .priority = (uint32_t)(1 + i * 50),
                                  .queue_depth = 32};
        cr_assert_eq(accel_session_open(rt, &c, &CS[i]), ACCEL_OK);
    }
    pthread_t t[3];
    for (uintptr_t i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, c_producer, (void *)i);
    unit_step("the sessions' closes while producers submit");
    for (int i = 0; i < CN; i++) {
        tu_nap_us(20000);
        cr_assert_eq(accel_session_close(CS[i], i % 2 ? ACCEL_CLOSE_CANCEL : 0),
                     ACCEL_OK, "close of session %d", i);
    }
    atomic_store(&stop, 1);
    unit_step("the producers return; sync of the closed sessions");
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < CN; i++) {
        cr_assert_eq(accel_session_sync(CS[i], ACCEL_FOREVER), ACCEL_OK,
                     "sync of closed session %d", i);
        accel_session_release(CS[i]);
    }
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    uint64_t sum = 0;
    for (uint64_t i = 0; i < CMAX; i++)
        sum += atomic_load(&calls[i]);
    cr_assert_eq(atomic_load(&cdup), 0);
    cr_assert_eq(sum, atomic_load(&caccepted));
}

/* accel_session_set_priority reaches the scheduler, not just the getter:
 * two backlogged sessions driven through the scheduler itself (pick,
 * charge a fixed 1 ms, re-queue; no clock, no threads) get picks in the
 * ratio of their weights after one is raised from 5 to 20 (1:4). Before
 * the change they alternate 1:1. */
static void no_wake(void *arg, unsigned lane)
{
    (void)arg, (void)lane;
}

/* A host-driven runtime that is never driven (only this thread touches
 * its scheduler) with sessions a and b of equal priority, both queued. */
static void two_queued(accel_runtime **rt, accel_session **a,
                       accel_session **b)
{
    accel_runtime_config c = {.workers = 1,
                              .struct_size = sizeof(c),
                              .flags = ACCEL_RUNTIME_HOST_WORKERS,
                              .host_wake = no_wake};
    *rt = NULL;
    cr_assert_eq(accel_runtime_create(&c, rt), ACCEL_OK);
    *a = tu_open(*rt, "a", 4, 0);
    *b = tu_open(*rt, "b", 4, 0);
    cr_assert(*a && *b);
    cr_assert_neq(accel__sched_enqueue((*rt)->sched, &(*a)->se, true), 0);
    cr_assert_neq(accel__sched_enqueue((*rt)->sched, &(*b)->se, true), 0);
}

Test(sched, set_priority_changes_the_scheduler_share, .timeout = 30)
{
    accel_runtime *rt;
    accel_session *a, *b;
    two_queued(&rt, &a, &b);
    accel__sched *sc = rt->sched;
    int n[2] = {0, 0};
    for (int round = 0; round < 2; round++) {
        if (round == 1)
            cr_assert_eq(accel_session_set_priority(b, 4 * ACCEL_PRIORITY_NORMAL),
                         ACCEL_OK);
        n[0] = n[1] = 0;
        for (int i = 0; i < 2000; i++) {
            accel__sched_entity *e = accel__sched_pick(sc, 0);
            cr_assert(e == &a->se || e == &b->se, "pick %d: one of the two", i);
            accel__sched_charge(sc, e, 1000000, 0, 1);
            n[e == &b->se]++;
            accel__sched_enqueue(sc, e, false);
        }
        if (round == 0)
            cr_assert(n[1] >= 900 && n[1] <= 1100,
                      "equal weights: a %d b %d picks", n[0], n[1]);
    }
    /* 1:4 of 2000 is 400:1600; the first picks after the change still
     * carry the old deadlines */
    cr_assert(n[1] >= 3 * n[0] && n[1] <= 5 * n[0],
              "weights 5 and 20: a %d b %d picks", n[0], n[1]);
    /* leave the scheduler empty, as a visit's end would */
    cr_assert_not_null(accel__sched_pick(sc, 0));
    cr_assert_not_null(accel__sched_pick(sc, 0));
    cr_assert_null(accel__sched_pick(sc, 0));
    accel_session_release(a);
    accel_session_release(b);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* A visit's blocked time (its worker waited while another ran in its
 * place) is not charged to the share: of two sessions of equal weight and
 * 1 ms visits, the one whose visits were 0.9 ms blocked is charged 0.1 ms
 * a visit and picked ten times as often; blocked past the visit charges
 * nothing. */
Test(sched, blocked_time_is_not_charged, .timeout = 30)
{
    accel_runtime *rt;
    accel_session *a, *b;
    two_queued(&rt, &a, &b);
    accel__sched *sc = rt->sched;
    int n[2] = {0, 0};
    for (int i = 0; i < 2200; i++) {
        accel__sched_entity *e = accel__sched_pick(sc, 0);
        cr_assert(e == &a->se || e == &b->se, "pick %d: one of the two", i);
        accel__sched_charge(sc, e, 1000000, e == &a->se ? 900000 : 0, 1);
        n[e == &b->se]++;
        accel__sched_enqueue(sc, e, false);
    }
    cr_assert(n[0] >= 8 * n[1] && n[0] <= 12 * n[1],
              "charged 0.1 ms and 1 ms a visit: a %d b %d picks", n[0], n[1]);
    /* The deadline's visit cost is the charged part; the op cost (quota,
     * lane: an op that waits is no short op) the whole visit. */
    cr_assert_eq(a->se.visit_cost_ns, 100000);
    cr_assert_eq(a->se.op_cost_ns, 1000000);
    accel__sched_entity *e = accel__sched_pick(sc, 0);
    cr_assert_not_null(e);
    uint64_t v = accel__sched_vtime_of(sc, e);
    accel__sched_charge(sc, e, 1000000, 2000000, 1);
    cr_assert_eq(accel__sched_vtime_of(sc, e), v,
                 "blocked longer than the visit: nothing charged");
    cr_assert_not_null(accel__sched_pick(sc, 0));
    cr_assert_null(accel__sched_pick(sc, 0));
    accel_session_release(a);
    accel_session_release(b);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* An op that spends most of its time blocked is quoted by its served
 * time: a session whose 3 ms ops wait 2.9 ms of it may run quantum_ns
 * (2 ms) / 0.1 ms = 20 of them a visit, not one (by its whole time,
 * every op would be a visit of its own, re-queued and picked between
 * two ops). Its lane is still by the whole time (no short op), and an op
 * that computes is quoted as before. */
Test(sched, an_op_that_waits_is_quoted_by_its_served_time, .timeout = 30)
{
    accel_runtime *rt;
    accel_session *a, *b;
    two_queued(&rt, &a, &b);
    accel__sched *sc = rt->sched;
    for (int i = 0; i < 40; i++) {
        accel__sched_entity *e = accel__sched_pick(sc, 0);
        cr_assert_not_null(e);
        if (e == &a->se)
            accel__sched_charge(sc, e, 3000000, 2900000, 1);
        else
            accel__sched_charge(sc, e, 3000000, 0, 1);
        accel__sched_enqueue(sc, e, false);
    }
    cr_assert_eq(a->se.op_cost_ns, 3000000);
    uint32_t qa = accel__sched_visit_ops(sc, &a->se),
             qb = accel__sched_visit_ops(sc, &b->se);
    cr_assert(qa >= 19 && qa <= 21, "waits 2.9 of 3 ms an op: quota %u, want 20", qa);
    cr_assert_eq(qb, 1, "computes 3 ms an op: quota %u, want 1", qb);
    cr_assert(accel__sched_entity_waits(&a->se));
    cr_assert(!accel__sched_entity_waits(&b->se), "b never waited: not tracked");
    /* a's ops stop waiting: its quota goes back to its whole time, and
     * it is no longer tracked (its visits keep the plain clock check). */
    for (int i = 0; i < 40; i++) {
        accel__sched_entity *e = accel__sched_pick(sc, 0);
        cr_assert_not_null(e);
        accel__sched_charge(sc, e, 3000000, 0, 1);
        accel__sched_enqueue(sc, e, false);
    }
    cr_assert_eq(accel__sched_visit_ops(sc, &a->se), 1);
    cr_assert(!accel__sched_entity_waits(&a->se), "a computes now: still tracked");
    accel_session_release(a);
    accel_session_release(b);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}
