/*
 * The scheduler and wait-time fields of accel_session_stats: sampling,
 * percentile order, visits, service, virtual time, priority. Structural
 * checks only (no timing thresholds).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include "core_util.h"
#include "waitstat.h"

static int nop(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    return 0;
}

Test(stats, wait_samples_and_percentiles, .timeout = 10)
{
    accel_runtime *rt = tu_runtime(1);
    accel_session *s = tu_open(rt, "stats-wait", 0, 0);
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats(s, &st), ACCEL_OK);
    cr_assert_eq(st.wait_samples, 0);
    cr_assert_eq(st.wait_p50_ns, 0, "no percentile before the first sample");

    /* A blocker holds the only worker while 4 * SAMPLE - 1 more ops queue
     * behind it: every queued op waits at least until the gate opens. */
    tu_blocker b = {0};
    accel_op blk = tu_blocker_op(&b);
    cr_assert_eq(accel_submit(s, &blk, ACCEL_FOREVER), ACCEL_OK);
    tu_wait_at_least(&b.started, 1);
    accel_op op = {.fn = nop};
    for (unsigned i = 1; i < 4 * ACCEL__WAIT_SAMPLE; i++)
        cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    tu_nap_us(2000);
    tu_latch_open(&b.gate);
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);

    cr_assert_eq(accel_session_get_stats(s, &st), ACCEL_OK);
    /* Positions 0, SAMPLE, 2 SAMPLE, 3 SAMPLE are the sampled ones. */
    cr_assert_eq(st.wait_samples, 4);
    cr_assert_gt(st.wait_max_ns, 0);
    cr_assert_leq(st.wait_p50_ns, st.wait_p99_ns);
    cr_assert_leq(st.wait_p99_ns, st.wait_p999_ns);
    cr_assert_leq(st.wait_p999_ns, st.wait_max_ns);
    /* Three of the four samples queued behind the 2 ms nap. */
    cr_assert_geq(st.wait_max_ns, 2000000);
    cr_assert_eq(st.submitted, 4 * ACCEL__WAIT_SAMPLE);
    cr_assert_eq(st.completed, 4 * ACCEL__WAIT_SAMPLE);
    cr_assert_geq(st.visits, 2, "the blocker's visit, then the rest");
    cr_assert_leq(st.visits, st.completed);
    cr_assert_gt(st.service_ns, 0);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(stats, vtime_advances_with_service_and_priority_shows, .timeout = 10)
{
    accel_runtime *rt = tu_runtime(1);
    accel_session *s = tu_open(rt, "stats-vtime", 0, 0);
    accel_session_stats a, b;
    cr_assert_eq(accel_session_get_stats(s, &a), ACCEL_OK);
    cr_assert_eq(a.priority, ACCEL_PRIORITY_NORMAL);
    cr_assert_eq(a.visits, 0);
    accel_op op = {.fn = nop};
    for (int round = 0; round < 50; round++)
        cr_assert_eq(accel_submit_wait(s, op.fn, NULL, ACCEL_FOREVER), 0);
    cr_assert_eq(accel_session_get_stats(s, &b), ACCEL_OK);
    cr_assert_geq(b.visits, 1);
    cr_assert_gt(b.service_ns, 0);
    cr_assert_gt(b.vtime_ns, a.vtime_ns, "virtual time moves with service");
    cr_assert_eq(accel_session_set_priority(s, 777), ACCEL_OK);
    cr_assert_eq(accel_session_get_stats(s, &b), ACCEL_OK);
    cr_assert_eq(b.priority, 777);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}
