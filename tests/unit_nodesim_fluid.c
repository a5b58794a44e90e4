/*
 * The fluid weighted-fair reference of accel-nodesim's share error
 * (bench/nodesim/fluid.h): scripted arrivals, exact expected service.
 *
 * Promises: none
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "fluid.h"

#define MS 1e6

/* n ops of `cost` ns arriving every `gap` ns from `t0`, deadline `dl`
 * after arrival. */
static ns_fluid_op *stream(size_t n, double t0, double gap, double cost, double dl)
{
    ns_fluid_op *o = calloc(n, sizeof *o);
    cr_assert_not_null(o);
    for (size_t k = 0; k < n; k++)
        o[k] = (ns_fluid_op){t0 + gap * (double)k, cost, t0 + gap * (double)k + dl, 0};
    return o;
}

/* Two chains of 1000 backlogged 1 ms ops with weights w0 and w1, served
 * until `until` by `workers` workers of `capacity` in all: done[] is each
 * chain's work done. */
static void serve_two_backlogged(double w0, double w1, double capacity,
                                 unsigned workers, double until, double done[2])
{
    ns_fluid_op *a = stream(1000, 0, 0, 1 * MS, 1e15), *b = stream(1000, 0, 0, 1 * MS, 1e15);
    ns_fluid_chain c[2] = {{a, 1000, w0}, {b, 1000, w1}};
    cr_assert_eq(ns_fluid_serve(c, 2, capacity, workers, 1024, until, done, NULL, NULL), 0);
    free(a);
    free(b);
}

Test(nodesim_fluid, backlogged_chains_share_by_weight, .timeout = 10)
{
    double done[2];
    serve_two_backlogged(1, 3, 1.0, 1, 100 * MS, done);
    /* 1:3 of 100 ms; the op under way at the end is not credited */
    cr_assert_float_eq(done[0], 25 * MS, 1);
    cr_assert_float_eq(done[1], 75 * MS, 1);
}

Test(nodesim_fluid, one_worker_per_chain, .timeout = 10)
{
    /* Two workers: weight 100 cannot take more than one of them, the
     * other goes to weight 1 (max-min, not proportional). */
    double done[2];
    serve_two_backlogged(1, 100, 2.0, 2, 100.5 * MS, done);
    cr_assert_float_eq(done[0], 100 * MS, 1);
    cr_assert_float_eq(done[1], 100 * MS, 1);
}

Test(nodesim_fluid, idle_share_goes_to_the_backlogged, .timeout = 10)
{
    /* Weight 100 offers 0.2 of the capacity (a 2 ms op every 10 ms), weight
     * 1 is backlogged: the heavy one gets all it asks, the light one the
     * rest (work conserving). */
    ns_fluid_op *a = stream(100, 0, 10 * MS, 2 * MS, 1e15), *b = stream(2000, 0, 0, 1 * MS, 1e15);
    ns_fluid_chain c[2] = {{a, 100, 100}, {b, 2000, 1}};
    double done[2];
    cr_assert_eq(ns_fluid_serve(c, 2, 1.0, 1, 4096, 1000 * MS, done, NULL, NULL), 0);
    cr_assert_float_eq(done[0], 200 * MS, 1);
    cr_assert_float_eq(done[1], 799 * MS, 1.5 * MS);
    free(a);
    free(b);
}

Test(nodesim_fluid, never_more_than_the_capacity, .timeout = 10)
{
    /* Staggered arrivals in several chains: an arrival between two
     * completions must not complete anything early. */
    enum { N = 5 };
    ns_fluid_op *o[N];
    ns_fluid_chain c[N];
    double done[N], sum = 0, offered = 0;
    for (int i = 0; i < N; i++) {
        o[i] = stream(400, 0.37 * MS * (i + 1), (1.1 + 0.3 * i) * MS, (0.7 + i) * MS, 1e15);
        c[i] = (ns_fluid_chain){o[i], 400, 1.0 + 4 * i};
        offered += 400 * (0.7 + i) * MS;
    }
    const double window = 300 * MS, cap = 1.5;
    cr_assert_gt(offered, 2 * cap * window); /* overloaded */
    cr_assert_eq(ns_fluid_serve(c, N, cap, 2, 1024, window, done, NULL, NULL), 0);
    for (int i = 0; i < N; i++) {
        sum += done[i];
        free(o[i]);
    }
    cr_assert_leq(sum, cap * window + 1, "served %.0f ns of work in %.0f ns on %.1f CPUs", sum,
                  window, cap);
    /* busy all along, less the start (one chain) and the ops under way */
    cr_assert_geq(sum, cap * window - 16 * MS, "served %.0f ns", sum);
}

Test(nodesim_fluid, an_op_that_waits_holds_its_chain_not_the_capacity, .timeout = 10)
{
    /* Chain A: ten 1 ms ops at t = 0, each waiting 4 ms first; chain B:
     * backlogged 1 ms ops, the same weight; one CPU, one worker. Each of
     * A's ops waits 4 ms (B runs alone) and then shares the CPU (2 ms):
     * A completes an op every 6 ms, B the rest. By 31.5 ms: A 5 ops
     * (the fifth at 30 ms), B 31.5 - 5 = 26.5 ms of work, 26 ops. A
     * server that let A's ops overlap their waits, or counted the wait
     * as work, would give A 10 or 4 and B 21 or 22. */
    ns_fluid_op *a = stream(10, 0, 0, 1 * MS, 1e15), *b = stream(1000, 0, 0, 1 * MS, 1e15);
    for (size_t k = 0; k < 10; k++)
        a[k].wait = 4 * MS;
    ns_fluid_chain c[2] = {{a, 10, 1}, {b, 1000, 1}};
    double done[2];
    uint64_t lost = 99;
    cr_assert_eq(ns_fluid_serve(c, 2, 1.0, 1, 1024, 31.5 * MS, done, &lost, NULL), 0);
    cr_assert_eq(lost, 0);
    cr_assert_float_eq(done[0], 5 * MS, 1, "A's work: %f ms", done[0] / MS);
    cr_assert_float_eq(done[1], 26 * MS, 1, "B's work: %f ms", done[1] / MS);
    /* Alone, deadline 12 ms: A's ops start at 0, 5 and 10 ms (the third
     * completes late, at 15 ms); the fourth cannot start by 12 ms. */
    for (size_t k = 0; k < 10; k++)
        a[k].deadline = 12 * MS;
    ns_fluid_outcome out[1];
    cr_assert_eq(ns_fluid_serve(c, 1, 1.0, 1, 1024, 100 * MS, done, &lost, out), 0);
    cr_assert_eq(out[0].ontime, 2, "on time: %lu", (unsigned long)out[0].ontime);
    cr_assert_eq(out[0].late, 1);
    cr_assert_eq(out[0].missed, 8);
    cr_assert_eq(lost, 7);
    free(a);
    free(b);
}

Test(nodesim_fluid, below_capacity_everything_is_served, .timeout = 10)
{
    ns_fluid_op *a = stream(100, 0, 10 * MS, 3 * MS, 50 * MS),
                *b = stream(100, 1 * MS, 10 * MS, 4 * MS, 50 * MS);
    ns_fluid_chain c[2] = {{a, 100, 1}, {b, 100, 10}};
    double done[2];
    uint64_t lost = 99;
    cr_assert_eq(ns_fluid_serve(c, 2, 1.0, 1, 1024, 2000 * MS, done, &lost, NULL), 0);
    cr_assert_eq(lost, 0);
    cr_assert_float_eq(done[0], 300 * MS, 1);
    cr_assert_float_eq(done[1], 400 * MS, 1);
    free(a);
    free(b);
}

Test(nodesim_fluid, ops_that_cannot_start_by_their_deadline_are_dropped, .timeout = 10)
{
    /* Ten 10 ms ops at t = 0 with a 25 ms deadline, alone on one CPU:
     * they start at 0, 10, 20 ms; the fourth would start at 30 ms. */
    ns_fluid_op *a = stream(10, 0, 0, 10 * MS, 25 * MS);
    ns_fluid_chain c[1] = {{a, 10, 1}};
    double done[1];
    uint64_t lost = 0;
    cr_assert_eq(ns_fluid_serve(c, 1, 1.0, 1, 1024, 1000 * MS, done, &lost, NULL), 0);
    cr_assert_float_eq(done[0], 30 * MS, 1);
    cr_assert_eq(lost, 7);
    free(a);
}

Test(nodesim_fluid, admission_depth, .timeout = 10)
{
    /* Depth 2: of ten ops arriving at once, two are admitted. */
    ns_fluid_op *a = stream(10, 0, 0, 1 * MS, 1e15);
    ns_fluid_chain c[1] = {{a, 10, 1}};
    double done[1];
    uint64_t lost = 0;
    cr_assert_eq(ns_fluid_serve(c, 1, 1.0, 1, 2, 100 * MS, done, &lost, NULL), 0);
    cr_assert_float_eq(done[0], 2 * MS, 1);
    cr_assert_eq(lost, 8);
    free(a);
}

Test(nodesim_fluid, outcomes_count_as_the_systems_do, .timeout = 10)
{
    /* Ten 10 ms ops at t = 0 with a 25 ms deadline on one CPU: done at
     * 10 and 20 ms (on time), at 30 ms (late), seven expired: 2 on time,
     * 8 missed. */
    ns_fluid_op *a = stream(10, 0, 0, 10 * MS, 25 * MS);
    ns_fluid_chain c[1] = {{a, 10, 1}};
    double done[1];
    ns_fluid_outcome out[1];
    cr_assert_eq(ns_fluid_serve(c, 1, 1.0, 1, 1024, 1000 * MS, done, NULL, out), 0);
    cr_assert_eq(out[0].ontime, 2);
    cr_assert_eq(out[0].missed, 8);
    free(a);
    /* Unfinished at the window's end: a miss once its deadline is past,
     * else neither (censored). Two 10 ms ops, window 15 ms: the second
     * is under way at the end. */
    ns_fluid_op *b = stream(2, 0, 0, 10 * MS, 12 * MS), *d = stream(2, 0, 0, 10 * MS, 1e15);
    ns_fluid_chain cb[1] = {{b, 2, 1}}, cd[1] = {{d, 2, 1}};
    cr_assert_eq(ns_fluid_serve(cb, 1, 1.0, 1, 1024, 15 * MS, done, NULL, out), 0);
    cr_assert_eq(out[0].ontime, 1);
    cr_assert_eq(out[0].missed, 1, "deadline 12 ms, unfinished at 15: a miss");
    cr_assert_eq(ns_fluid_serve(cd, 1, 1.0, 1, 1024, 15 * MS, done, NULL, out), 0);
    cr_assert_eq(out[0].ontime, 1);
    cr_assert_eq(out[0].missed, 0, "deadline ahead, unfinished: censored");
    free(b);
    free(d);
}

Test(nodesim_fluid, the_reference_serves_on_to_the_cut, .timeout = 10)
{
    /* 100 ops of 1 ms at t = 0, deadline 1 s, on one CPU; the system did
     * 50 ms of their work in a 50 ms window and drained on to 200 ms. The
     * reference's capacity is the one that does that work in the window
     * (1 CPU), and its ops are counted at the cut, as the system's: all
     * 100 on time (counted at the window's end, 50 would be on time and
     * 50 censored). */
    ns_fluid_op *a = stream(100, 0, 0, 1 * MS, 1000 * MS);
    ns_fluid_chain c[1] = {{a, 100, 1}};
    double done[1];
    uint64_t lost = 99;
    ns_fluid_outcome out[1];
    double cap = ns_fluid_reference(c, 1, 2.0, 1, 1024, 50 * MS, 200 * MS, 50 * MS, done, &lost,
                                    out);
    cr_assert_float_eq(cap, 1.0, 1e-3, "capacity %f", cap);
    cr_assert_float_eq(done[0], 50 * MS, 1e4, "the window's work: %f", done[0]);
    cr_assert_eq(lost, 0);
    cr_assert_eq(out[0].ontime, 100, "on time at the cut: %lu", (unsigned long)out[0].ontime);
    cr_assert_eq(out[0].missed, 0);
    /* A cut before every op is done: those left with their deadline
     * ahead are not counted; with it past, they are misses. */
    cr_assert_geq(ns_fluid_reference(c, 1, 1.0, 1, 1024, 50 * MS, 80 * MS, 50 * MS, done, NULL,
                                     out), 0);
    cr_assert_eq(out[0].ontime, 80);
    cr_assert_eq(out[0].missed, 0);
    free(a);
    a = stream(100, 0, 0, 1 * MS, 70 * MS);
    c[0].ops = a;
    cr_assert_geq(ns_fluid_reference(c, 1, 1.0, 1, 1024, 50 * MS, 80 * MS, 50 * MS, done, NULL,
                                     out), 0);
    cr_assert_eq(out[0].ontime, 70);
    cr_assert_eq(out[0].missed, 30, "deadline 70 ms: missed %lu", (unsigned long)out[0].missed);
    free(a);
}
