/*
 * The scheduler and wait-time fields of accel_session_stats: sampling,
 * percentile values, visits, service, virtual time, priority. Values are
 * checked against known inputs: the histogram directly with known
 * samples (no clock), the session's fields against waits the test itself
 * imposes (lower bounds it guarantees, never a speed threshold).
 *
 * Promises: none
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <inttypes.h>

#include "core_util.h"
#include "unit_watchdog.h"
#include "waitstat.h"

/* A wait that hangs names its step (unit_watchdog.h). */
UNIT_WATCHDOG_SUITE(stats);

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
    unit_step("the blocker starts");
    tu_wait_at_least(&b.started, 1);
    accel_op op = {.fn = nop};
    for (unsigned i = 1; i < 4 * ACCEL__WAIT_SAMPLE; i++)
        cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    tu_nap_us(2000);
    tu_latch_open(&b.gate);
    unit_step("sync of the ops queued behind the blocker");
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);

    cr_assert_eq(accel_session_get_stats(s, &st), ACCEL_OK);
    /* Positions 0, SAMPLE, 2 SAMPLE, 3 SAMPLE are the sampled ones. */
    cr_assert_eq(st.wait_samples, 4);
    cr_assert_gt(st.wait_max_ns, 0);
    cr_assert_leq(st.wait_p50_ns, st.wait_p99_ns);
    cr_assert_leq(st.wait_p99_ns, st.wait_p999_ns);
    cr_assert_leq(st.wait_p999_ns, st.wait_max_ns);
    /* Three of the four samples (SAMPLE, 2 SAMPLE, 3 SAMPLE) were queued
     * before the 2 ms nap and ran after it: they waited at least 2 ms, so
     * the median (the 3rd of 4) and everything above it are >= 2 ms. */
    cr_assert_geq(st.wait_max_ns, 2000000);
    cr_assert_geq(st.wait_p50_ns, 2000000, "p50 %" PRIu64, st.wait_p50_ns);
    cr_assert_geq(st.wait_p99_ns, 2000000);
    /* p99 and p99.9 of 4 samples are the largest: the max, up to its
     * bucket (a bucket spans 1/4 of an octave). */
    cr_assert_geq(st.wait_p99_ns * 5 / 4 + 1, st.wait_max_ns);
    cr_assert_eq(st.submitted, 4 * ACCEL__WAIT_SAMPLE);
    cr_assert_eq(st.completed, 4 * ACCEL__WAIT_SAMPLE);
    cr_assert_geq(st.visits, 2, "the blocker's visit, then the rest");
    cr_assert_leq(st.visits, st.completed);
    /* The blocker's visit alone ran through the nap. */
    cr_assert_geq(st.service_ns, 2000000);
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
    unit_step("50 submit_wait of an empty op");
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

/* ---- the histogram itself, with known samples (no clock) ------------- */

static void ws_record_n(accel__waitstat *w, uint64_t ns, int n)
{
    for (int i = 0; i < n; i++)
        accel__waitstat_record(w, ns);
}

Test(stats, waitstat_one_value_is_exact, .timeout = 5)
{
    accel__waitstat w = {0};
    cr_assert_eq(accel__waitstat_quantile(&w, 0.5), 0, "empty");
    ws_record_n(&w, 12345, 1000);
    cr_assert_eq(atomic_load(&w.samples), 1000);
    cr_assert_eq(atomic_load(&w.max_ns), 12345);
    /* Every quantile falls in the one bucket, whose top is clamped to the
     * max: exactly the value. */
    cr_assert_eq(accel__waitstat_quantile(&w, 0.0), 12345);
    cr_assert_eq(accel__waitstat_quantile(&w, 0.5), 12345);
    cr_assert_eq(accel__waitstat_quantile(&w, 0.999), 12345);
    cr_assert_eq(accel__waitstat_quantile(&w, 1.0), 12345);
    accel__waitstat_fini(&w);
}

Test(stats, waitstat_small_values_have_exact_buckets, .timeout = 5)
{
    accel__waitstat w = {0};
    for (uint64_t v = 0; v < 4; v++)
        ws_record_n(&w, v, 25);
    cr_assert_eq(atomic_load(&w.samples), 100);
    cr_assert_eq(accel__waitstat_quantile(&w, 0.10), 0);
    cr_assert_eq(accel__waitstat_quantile(&w, 0.30), 1);
    cr_assert_eq(accel__waitstat_quantile(&w, 0.60), 2);
    cr_assert_eq(accel__waitstat_quantile(&w, 0.99), 3);
    accel__waitstat_fini(&w);
}

Test(stats, waitstat_two_populations, .timeout = 5)
{
    accel__waitstat w = {0};
    ws_record_n(&w, 100, 900);     /* fast ops */
    ws_record_n(&w, 1000000, 100); /* 10% slow ones */
    cr_assert_eq(atomic_load(&w.samples), 1000);
    cr_assert_eq(atomic_load(&w.max_ns), 1000000);
    uint64_t p50 = accel__waitstat_quantile(&w, 0.50);
    /* the top of 100's bucket: [96, 112) with 4 buckets per octave */
    cr_assert_eq(p50, 111, "p50 %" PRIu64, p50);
    cr_assert_eq(accel__waitstat_quantile(&w, 0.89), 111);
    /* rank 900 and up are the slow ones; their bucket's top is clamped to
     * the max, which is exactly their value */
    cr_assert_eq(accel__waitstat_quantile(&w, 0.90), 1000000);
    cr_assert_eq(accel__waitstat_quantile(&w, 0.99), 1000000);
    cr_assert_eq(accel__waitstat_quantile(&w, 0.999), 1000000);
    accel__waitstat_fini(&w);
}

/* Each value's bucket top bounds it within a quarter octave: v <= q(v) <
 * v * 5/4 + 1, for values across the range. */
Test(stats, waitstat_bucket_precision, .timeout = 5)
{
    for (uint64_t v = 1; v < (UINT64_C(1) << 40); v = v * 3 + 1) {
        accel__waitstat w = {0};
        ws_record_n(&w, v, 3);
        ws_record_n(&w, v * 8, 1); /* a larger max, so no clamp to v */
        uint64_t q = accel__waitstat_quantile(&w, 0.5);
        cr_assert(q >= v && q <= v + v / 4 + 1, "v %" PRIu64 ": %" PRIu64, v,
                  q);
        accel__waitstat_fini(&w);
    }
}
