/*
 * The two classes of the short lane share one time line: deterministic
 * model tests (one thread drives the real scheduler with scripted costs and
 * a simulated clock, as unit_sched_model.c; no timing).
 *
 * A general-class session that ran alone for a while must not then wait
 * for short-class sessions to "catch up" on a clock of their own: it is
 * picked within what start-time fair queuing allows against them
 * (|S_i/w_i - S_j/w_j| <= L_i/w_i + L_j/w_j). And a session that moves
 * between classes keeps its virtual time.
 *
 * Promises: 3
 */
#include <criterion/criterion.h>
#include <string.h>

#include "sched_core.h"

#define W_SHORT 4
#define COST_G 1000000ull  /* a general visit: 1 ms (an op above 100 us) */
#define COST_S 20000ull    /* a short visit: 20 us */
#define SOLO_VISITS 2000u  /* the general session alone: 2 s */
#define BUCKET 4096ull     /* 2^shift for a 2 ms quantum */

static accel__sched *lanes_sched(void)
{
    accel__sched_config c = {.workers = 2, .short_lane_workers = 1,
                             .short_op_ns = 100000, .quantum_ops = 32,
                             .quantum_ns = 2000000, .max_entities = 16};
    accel__sched *s = NULL;
    cr_assert_eq(accel__sched_create(&c, &s), 0);
    return s;
}

/* The general session g runs alone on the general worker for SOLO_VISITS
 * visits (re-queued after each, so it is queued at the end). */
static void run_solo(accel__sched *s, accel__sched_entity *g)
{
    accel__sched_enqueue(s, g, true);
    for (unsigned v = 0; v < SOLO_VISITS; v++) {
        accel__sched_entity *e = accel__sched_pick(s, 0);
        cr_assert_eq(e, g);
        accel__sched_charge(s, e, COST_G, 0, 1);
        accel__sched_enqueue(s, e, false);
    }
}

/* After the solo phase W_SHORT short sessions become backlogged; both
 * workers (lane 0 and lane 1) run visits on a simulated clock. Returns
 * how many visits of short sessions ran before g was picked (or `limit`
 * if it never was). */
static uint64_t visits_before_general(uint32_t wg, uint32_t ws,
                                      uint64_t limit)
{
    accel__sched *s = lanes_sched();
    accel__sched_entity g, sh[W_SHORT];
    memset(&g, 0, sizeof(g));
    memset(sh, 0, sizeof(sh));
    accel__sched_entity_init(s, &g, wg, NULL);
    run_solo(s, &g);
    for (int i = 0; i < W_SHORT; i++) {
        accel__sched_entity_init(s, &sh[i], ws, NULL);
        accel__sched_enqueue(s, &sh[i], true);
    }
    accel__sched_entity *run[2] = {NULL, NULL};
    uint64_t until[2] = {0, 0}, now = 0, shorts = 0;
    for (;;) {
        for (unsigned k = 0; k < 2; k++) {
            if (run[k])
                continue;
            run[k] = accel__sched_pick(s, k);
            if (run[k] == &g)
                goto out;
            if (run[k])
                until[k] = now + COST_S;
        }
        unsigned k = !run[0] ? 1 : !run[1] ? 0 : until[0] <= until[1] ? 0 : 1;
        cr_assert_not_null(run[k], "both workers idle with work queued");
        now = until[k];
        accel__sched_charge(s, run[k], COST_S, 0, 1);
        accel__sched_enqueue(s, run[k], false);
        run[k] = NULL;
        if (++shorts >= limit)
            break;
    }
out:
    accel__sched_destroy(s);
    return shorts;
}

/* What SFQ allows: each short session may lead g by L_g/wg + L_s/ws (plus
 * a bucket of calendar resolution on each side) in virtual time. */
static uint64_t sfq_allowance(uint32_t wg, uint32_t ws)
{
    double lead = 2.0 * (double)COST_G / wg + 2.0 * (double)COST_S / ws +
                  2.0 * (double)BUCKET;
    return (uint64_t)(W_SHORT * (lead * ws / (double)COST_S + 1.0));
}

static void check_case(uint32_t wg, uint32_t ws)
{
    uint64_t bound = sfq_allowance(wg, ws);
    uint64_t got = visits_before_general(wg, ws, 10 * bound + 1000);
    cr_log_info("weights g %u short %u: %llu short visits before g (SFQ "
                "bound %llu)",
                wg, ws, (unsigned long long)got, (unsigned long long)bound);
    cr_assert_leq(got, bound,
                  "weights g %u short %u: the general session waited %llu "
                  "short visits (SFQ allows %llu)",
                  wg, ws, (unsigned long long)got, (unsigned long long)bound);
}

Test(sched_lanes, general_session_not_starved_after_running_alone,
     .timeout = 60)
{
    check_case(1, 1);
    check_case(100, 1);
    check_case(1, 100);
    check_case(5, 10);
}

/* Moving between classes keeps the virtual time: a short session whose
 * ops turn long joins the general class with the v it had (no jump to the
 * other class's clock), and back. */
Test(sched_lanes, class_move_keeps_vtime, .timeout = 60)
{
    accel__sched *s = lanes_sched();
    accel__sched_entity g, x;
    memset(&g, 0, sizeof(g));
    memset(&x, 0, sizeof(x));
    accel__sched_entity_init(s, &g, 1, NULL);
    accel__sched_entity_init(s, &x, 1, NULL);
    run_solo(s, &g);
    /* x wakes short, runs short visits on the short lane */
    accel__sched_enqueue(s, &x, true);
    for (int v = 0; v < 10; v++) {
        cr_assert_eq(accel__sched_pick(s, 1), &x);
        accel__sched_charge(s, &x, COST_S, 0, 1);
        accel__sched_enqueue(s, &x, false);
    }
    cr_assert_eq(accel__sched_pick(s, 1), &x);
    /* its ops turn long: the next enqueue moves it to the general class */
    for (int v = 0; v < 8; v++)
        accel__sched_charge(s, &x, 3000000, 0, 1);
    uint64_t before = accel__sched_vtime_of(s, &x);
    cr_assert_eq(accel__sched_enqueue(s, &x, false),
                 ACCEL__SCHED_LANE_GENERAL);
    cr_assert_eq(accel__sched_vtime_of(s, &x), before,
                 "moving to the general class changed v by %lld",
                 (long long)(accel__sched_vtime_of(s, &x) - before));
    /* and g (queued, general) and x compare on one clock: x, which ran
     * 24 ms of long visits after starting at g's level, comes after g */
    cr_assert_eq(accel__sched_pick(s, 0), &g);
    cr_assert_eq(accel__sched_pick(s, 0), &x);
    /* back to short */
    for (int v = 0; v < 16; v++)
        accel__sched_charge(s, &x, COST_S, 0, 1);
    before = accel__sched_vtime_of(s, &x);
    accel__sched_enqueue(s, &x, false);
    cr_assert_eq(accel__sched_vtime_of(s, &x), before,
                 "moving back to the short class changed v by %lld",
                 (long long)(accel__sched_vtime_of(s, &x) - before));
    accel__sched_destroy(s);
}

/* Shares hold across classes as within one: after the solo phase, one
 * general worker serves g and the short sessions (the short-lane worker is
 * taken elsewhere); over the next second of service each of the five
 * equal-weight sessions gets a fifth, within two visits of g. */
Test(sched_lanes, shares_across_classes_after_solo, .timeout = 60)
{
    accel__sched *s = lanes_sched();
    accel__sched_entity g, sh[W_SHORT];
    memset(&g, 0, sizeof(g));
    memset(sh, 0, sizeof(sh));
    accel__sched_entity_init(s, &g, 1, NULL);
    run_solo(s, &g);
    for (int i = 0; i < W_SHORT; i++) {
        accel__sched_entity_init(s, &sh[i], 1, NULL);
        accel__sched_enqueue(s, &sh[i], true);
    }
    double got_g = 0, got_s[W_SHORT] = {0}, total = 0;
    while (total < 1e9) {
        accel__sched_entity *e = accel__sched_pick(s, 0);
        cr_assert_not_null(e);
        uint64_t c = e == &g ? COST_G : COST_S;
        accel__sched_charge(s, e, c, 0, 1);
        accel__sched_enqueue(s, e, false);
        total += (double)c;
        if (e == &g)
            got_g += (double)c;
        else
            got_s[e - sh] += (double)c;
    }
    double fifth = total / 5, slack = 2.0 * COST_G;
    cr_assert(got_g > fifth - slack && got_g < fifth + slack,
              "g got %.3f of the service, its share is 0.2", got_g / total);
    for (int i = 0; i < W_SHORT; i++)
        cr_assert(got_s[i] > fifth - slack && got_s[i] < fifth + slack,
                  "short %d got %.3f of the service, its share is 0.2", i,
                  got_s[i] / total);
    accel__sched_destroy(s);
}
