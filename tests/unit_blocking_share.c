/*
 * A session's share pays for the CPU its ops used, not for the time its
 * worker sat blocked in them while another worker ran in its place
 * (compensate.h, sched_core.h): a Low session whose ops wait (a storage
 * read, a remote signer) keeps up beside a backlogged High session of
 * short CPU-bound ops, as it did with a thread of its own.
 *
 * The measure is a count, not a time: how many ops of the High session
 * complete per op of the Low one. Charged the wall time of its waits, the
 * Low session (weight 1) is owed one op per WAIT_MS * 10 ms of the High
 * session's (weight 10) 1 ms ops: about 10 * WAIT_MS of them per op.
 * Charged only its CPU, it is picked whenever it has an op, and the High
 * session runs beside it on the worker sent for its wait: about WAIT_MS
 * ops per op, fewer on a loaded machine (a preempted High op takes
 * longer, and no wait gets longer by it). The bound sits between.
 */
#define _GNU_SOURCE /* CLOCK_THREAD_CPUTIME_ID */
#include <criterion/criterion.h>

#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include <accel/accel.h>

#include "core_util.h"
#include "stress_watchdog.h"

static _Atomic int high_done, low_done, stop;
static _Atomic int high_at_low[64];

static uint64_t cpu_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static _Atomic uint64_t sink;

/* The High session's op: 1 ms of this thread's CPU (less: stopping). */
static int high_op(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    uint64_t t0 = cpu_now_ns();
    volatile uint64_t x = 0;
    while (!atomic_load(&stop) && cpu_now_ns() - t0 < 1000000u)
        for (int i = 0; i < 1000; i++)
            x += (uint64_t)i;
    atomic_fetch_add(&sink, x);
    atomic_fetch_add(&high_done, 1);
    return 0;
}

struct low_arg {
    int wait_ms;
    bool hint;
};

/* The Low session's op: a wait with no CPU, hinted or not, then a note
 * of how many High ops had completed by its end. */
static int low_op(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    const struct low_arg *a = arg;
    if (a->hint)
        cr_assert_eq(accel_blocking_begin(), ACCEL_OK);
    tu_nap_us(a->wait_ms * 1000L);
    if (a->hint)
        cr_assert_eq(accel_blocking_end(), ACCEL_OK);
    int k = atomic_fetch_add(&low_done, 1);
    if (k < 64)
        atomic_store(&high_at_low[k], atomic_load(&high_done));
    return 0;
}

#define HIGH 2 /* High sessions: more than the one worker runs, so the
                  scheduler picks between them and the Low one */
static accel_session *high_s[HIGH];
static _Atomic int feed_rc;

static uint64_t queued(accel_session *s)
{
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats(s, &st), ACCEL_OK);
    return st.queued;
}

/* Keeps the High sessions backlogged until stop. */
static void *feeder(void *arg)
{
    (void)arg;
    for (unsigned i = 0; !atomic_load(&stop); i++) {
        accel_op op = {.fn = high_op};
        int rc = accel_submit(high_s[i % HIGH], &op, 1000000); /* 1 ms */
        if (rc != ACCEL_OK && rc != ACCEL_ETIMEDOUT) {
            atomic_store(&feed_rc, rc);
            break;
        }
    }
    return NULL;
}

/* Runs `n` Low ops beside the backlogged High session on one worker;
 * returns the High ops completed per Low op, between the first Low op's
 * end and the last's. */
static double high_per_low(int n, struct low_arg *a, uint64_t detect_ns)
{
    cr_assert(n >= 2 && n <= 64);
    atomic_store(&high_done, 0);
    atomic_store(&low_done, 0);
    atomic_store(&stop, 0);
    watchdog_start("unit_blocking_share");
    accel_runtime_config rc = {.struct_size = sizeof(rc),
                               .workers = 1,
                               .max_extra_workers = 4,
                               .block_detect_ns = detect_ns};
    accel_runtime *rt = NULL;
    cr_assert_eq(accel_runtime_create(&rc, &rt), ACCEL_OK);
    accel_session_config lc = {.id = "low", .priority = 1};
    accel_session *low = NULL;
    for (int i = 0; i < HIGH; i++) {
        char id[16];
        snprintf(id, sizeof(id), "high%d", i);
        accel_session_config hc = {.id = id, .priority = 10};
        cr_assert_eq(accel_session_open(rt, &hc, &high_s[i]), ACCEL_OK);
    }
    cr_assert_eq(accel_session_open(rt, &lc, &low), ACCEL_OK);
    watchdog_step("the High session's backlog", 60);
    pthread_t f;
    cr_assert_eq(pthread_create(&f, NULL, feeder, NULL), 0);
    for (int i = 0; i < HIGH; i++)
        while (queued(high_s[i]) < 32)
            tu_nap_us(100);
    watchdog_step("the Low session's ops beside it", 120);
    for (int i = 0; i < n; i++) {
        accel_op op = {.fn = low_op, .arg = a};
        cr_assert_eq(accel_submit(low, &op, ACCEL_FOREVER), ACCEL_OK);
    }
    cr_assert_eq(accel_session_sync(low, ACCEL_FOREVER), ACCEL_OK);
    watchdog_step("stopping the High session", 60);
    atomic_store(&stop, 1);
    pthread_join(f, NULL);
    cr_assert_eq(atomic_load(&feed_rc), ACCEL_OK, "the feeder's submit");
    accel_session_release(low);
    for (int i = 0; i < HIGH; i++) {
        cr_assert_eq(accel_session_sync(high_s[i], ACCEL_FOREVER), ACCEL_OK);
        accel_session_release(high_s[i]);
    }
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    watchdog_step("done", 60);
    return (double)(atomic_load(&high_at_low[n - 1]) -
                    atomic_load(&high_at_low[0])) /
           (n - 1);
}

/* The hint: its wait is known to the clock. Only the hint compensates
 * (the monitor's threshold is past the test). */
Test(blocking_share, hinted_waits_not_charged, .timeout = 240)
{
    struct low_arg a = {.wait_ms = 4, .hint = true};
    double r = high_per_low(16, &a, UINT64_C(60000000000));
    /* charged: ~40; not charged: ~4 */
    cr_expect(r < 20, "%.1f High ops per Low op: the Low session paid for "
                      "its waits",
              r);
}

/* A wait accel cannot see: the monitor samples the worker in the visit,
 * and the worker's CPU clock says how much of the time since it spent
 * off a CPU. */
Test(blocking_share, unseen_waits_not_charged, .timeout = 240)
{
    struct low_arg a = {.wait_ms = 20, .hint = false};
    double r = high_per_low(8, &a, 2000000);
    /* charged: ~200; not charged: at most a tick of the wait (1 ms) and
     * the time until the monitor counts it blocked (2 ms), ~30 */
    cr_expect(r < 100, "%.1f High ops per Low op: the Low session paid for "
                       "its waits",
              r);
}
