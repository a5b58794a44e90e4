/*
 * Deterministic scheduler tests: one thread drives the real pick / charge /
 * enqueue of the scheduler with scripted visit costs and a simulated clock
 * (W simulated workers; the one whose visit ends first charges, re-queues
 * and picks next). No threads, no timing: every run is the same.
 *
 * Promises: 3
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched_core.h"

#define MAXS 64
#define MAXW 8

typedef struct sim {
    accel__sched *s;
    accel__sched_entity e[MAXS];
    int n, nw;
    double service[MAXS];
    uint64_t visits[MAXS];
    accel__sched_entity *run[MAXW];
    uint64_t busy_until[MAXW];
    uint64_t cost[MAXW];
    uint64_t now;
    uint64_t rng;
    bool asleep[MAXS];
} sim;

static uint64_t rnd(sim *m)
{
    m->rng ^= m->rng << 13;
    m->rng ^= m->rng >> 7;
    m->rng ^= m->rng << 17;
    return m->rng;
}

typedef uint64_t (*cost_fn)(sim *m, int i);

static uint64_t cost_equal(sim *m, int i)
{
    (void)m;
    (void)i;
    return 100000;
}

static uint64_t cost_uniform(sim *m, int i)
{
    (void)i;
    return 50000 + rnd(m) % 100001;
}

/* Pareto(alpha 1.2) from 10 us, truncated at 1.5 ms. */
static uint64_t cost_heavy(sim *m, int i)
{
    (void)i;
    double u = ((double)(rnd(m) >> 11) + 1.0) / 9007199254740993.0;
    double x = 10000.0 / pow(u, 1.0 / 1.2);
    return x > 1500000.0 ? 1500000 : (uint64_t)x;
}

static void sim_init(sim *m, int n, const uint32_t *w, int nw,
                     unsigned short_lane)
{
    memset(m, 0, sizeof(*m));
    accel__sched_config c = {.workers = (unsigned)nw,
                             .short_lane_workers = short_lane,
                             .short_op_ns = 100000,
                             .quantum_ops = 32,
                             .quantum_ns = 2000000,
                             .max_entities = MAXS};
    cr_assert_eq(accel__sched_create(&c, &m->s), 0);
    m->n = n;
    m->nw = nw;
    m->rng = 88172645463325252ull;
    for (int i = 0; i < n; i++) {
        accel__sched_entity_init(m->s, &m->e[i], w[i], &m->e[i]);
        accel__sched_enqueue(m->s, &m->e[i], true);
    }
}

static int idx_of(sim *m, accel__sched_entity *e)
{
    return (int)(e - m->e);
}

static void start(sim *m, int k, cost_fn f)
{
    accel__sched_entity *e = accel__sched_pick(m->s, 0);
    m->run[k] = e;
    if (e) {
        m->cost[k] = f(m, idx_of(m, e));
        m->busy_until[k] = m->now + m->cost[k];
    }
}

/* Runs one visit to its end; returns the index of the entity charged. */
static int step(sim *m, cost_fn f)
{
    int k = -1;
    for (int j = 0; j < m->nw; j++)
        if (m->run[j] && (k < 0 || m->busy_until[j] < m->busy_until[k]))
            k = j;
    cr_assert(k >= 0, "every simulated worker idle with work queued");
    m->now = m->busy_until[k];
    accel__sched_entity *e = m->run[k];
    int i = idx_of(m, e);
    accel__sched_charge(m->s, e, m->cost[k], 0, 1);
    m->service[i] += (double)m->cost[k];
    m->visits[i]++;
    if (!m->asleep[i])
        accel__sched_enqueue(m->s, e, false);
    start(m, k, f);
    for (int j = 0; j < m->nw; j++) /* idle simulated workers pick too */
        if (!m->run[j])
            start(m, j, f);
    return i;
}

static void sim_start(sim *m, cost_fn f)
{
    for (int k = 0; k < m->nw; k++)
        start(m, k, f);
}

/* Weighted max-min fair shares: a session uses at most one worker. */
static void ideal(const uint32_t *w, int n, int nw, const bool *skip,
                  double *out)
{
    bool capped[MAXS] = {0};
    double cap = 1.0 / nw, left = 1.0;
    for (;;) {
        double sw = 0;
        for (int i = 0; i < n; i++)
            if (!capped[i] && !(skip && skip[i]))
                sw += w[i];
        bool again = false;
        for (int i = 0; i < n; i++) {
            if (capped[i] || (skip && skip[i]))
                continue;
            out[i] = left * w[i] / sw;
            if (out[i] > cap + 1e-12) {
                capped[i] = true;
                out[i] = cap;
                left -= cap;
                again = true;
                break;
            }
        }
        if (!again)
            break;
    }
    for (int i = 0; i < n; i++)
        if (skip && skip[i])
            out[i] = 0;
}

/* Relative error of each share against the ideal, less what rounding to
 * whole visits explains (two visits of the mean cost). */
static double max_rel_err(sim *m, const uint32_t *w)
{
    double tot = 0, id[MAXS], worst = 0;
    uint64_t nv = 0;
    for (int i = 0; i < m->n; i++) {
        tot += m->service[i];
        nv += m->visits[i];
    }
    ideal(w, m->n, m->nw, NULL, id);
    double grain = 2.0 / (double)nv;
    for (int i = 0; i < m->n; i++) {
        double d = fabs(m->service[i] / tot - id[i]) - grain;
        double e = (d > 0 ? d : 0) / id[i];
        if (getenv("SCHED_MODEL_DEBUG"))
            cr_log_info("w=%u share %.5f ideal %.5f visits %llu", w[i],
                        m->service[i] / tot, id[i],
                        (unsigned long long)m->visits[i]);
        if (e > worst)
            worst = e;
    }
    return worst;
}

static void shares_case_n(int nw, cost_fn f, int n, const uint32_t *w,
                          int visits)
{
    sim m;
    sim_init(&m, n, w, nw, 0);
    sim_start(&m, f);
    for (int v = 0; v < visits; v++)
        step(&m, f);
    double err = max_rel_err(&m, w);
    cr_expect_leq(err, 0.01, "%d workers, %d sessions: max relative error %.4f",
                  nw, n, err);
    accel__sched_destroy(m.s);
}

static void shares_case(int nw, cost_fn f, int n, const uint32_t *w)
{
    shares_case_n(nw, f, n, w, 100000);
}

static const uint32_t W4[4] = {1, 5, 10, 100};

Test(sched_model, shares_1_5_10_100_one_worker, .timeout = 60)
{
    shares_case(1, cost_equal, 4, W4);
    shares_case(1, cost_uniform, 4, W4);
    shares_case(1, cost_heavy, 4, W4);
}

Test(sched_model, shares_1_5_10_100_several_workers, .timeout = 60)
{
    for (int nw = 2; nw <= 4; nw++) {
        shares_case(nw, cost_equal, 4, W4);
        shares_case(nw, cost_uniform, 4, W4);
    }
}

Test(sched_model, shares_64_random_weights, .timeout = 60)
{
    uint32_t w[64];
    uint64_t r = 12345;
    for (int i = 0; i < 64; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        w[i] = 1 + (uint32_t)((r >> 33) % 1000);
    }
    shares_case_n(1, cost_uniform, 64, w, 1000000);
    shares_case_n(4, cost_uniform, 64, w, 1000000);
}

/* Start-time fair queuing bound, checked after every visit of one worker:
 * |S_i/w_i - S_j/w_j| <= L_i/w_i + L_j/w_j (+ one deadline bucket, the
 * calendar's resolution), L = the longest visit so far. */
Test(sched_model, sfq_bound_heavy_tailed, .timeout = 60)
{
    const uint32_t w[6] = {1, 5, 10, 100, 3, 1000};
    sim m;
    sim_init(&m, 6, w, 1, 0);
    double L[6] = {0};
    sim_start(&m, cost_heavy);
    double slack = (double)(1u << 13); /* 2^shift for a 2 ms quantum */
    double worst = -1e300;
    for (int v = 0; v < 100000; v++) {
        uint64_t c = m.cost[0];
        int i = step(&m, cost_heavy);
        if ((double)c > L[i])
            L[i] = (double)c;
        for (int a = 0; a < 6; a++)
            for (int b = a + 1; b < 6; b++) {
                double d = fabs(m.service[a] / w[a] - m.service[b] / w[b]);
                double bound = L[a] / w[a] + L[b] / w[b] + slack;
                if (d - bound > worst)
                    worst = d - bound;
                if (d > bound)
                    cr_assert_fail("step %d: |S%d/w - S%d/w| = %.0f > %.0f", v, a,
                             b, d, bound);
            }
    }
    cr_log_info("sfq: worst margin %.0f ns", worst);
    accel__sched_destroy(m.s);
}

/* A session that sleeps wakes at V: no banked credit. Four weight-1
 * sessions, one asleep for 50k visits: after waking it gets its quarter,
 * not the whole machine. */
Test(sched_model, sleeper_gets_no_more_than_its_share, .timeout = 60)
{
    const uint32_t w[4] = {1, 1, 1, 1};
    sim m;
    sim_init(&m, 4, w, 1, 0);
    m.asleep[3] = true; /* leaves after its first visit */
    sim_start(&m, cost_equal);
    for (int v = 0; v < 50000; v++)
        step(&m, cost_equal);
    cr_assert_leq(m.visits[3], 1);
    m.asleep[3] = false;
    accel__sched_enqueue(m.s, &m.e[3], true);
    uint64_t before = m.visits[3];
    for (int v = 0; v < 400; v++)
        step(&m, cost_equal);
    uint64_t got = m.visits[3] - before;
    cr_assert_leq(got, 100 + 2, "woken sleeper got %llu of 400 visits",
                  (unsigned long long)got);
    cr_assert_geq(got, 100 - 2, "woken sleeper got %llu of 400 visits",
                  (unsigned long long)got);
    accel__sched_destroy(m.s);
}

/* Whether a simulated worker runs entity a or b. */
static bool running_one_of(sim *m, int a, int b)
{
    for (int k = 0; k < m->nw; k++)
        if (m->run[k] && (idx_of(m, m->run[k]) == a || idx_of(m, m->run[k]) == b))
            return true;
    return false;
}

/* Credit a backlogged session cannot use is dropped (the lag cap). Two
 * workers; A (weight 100) beside two weight-1 sessions can use one
 * worker, not the 98% its weight names, so its virtual time falls behind
 * V. Then the weight-1 sessions leave and two more of weight 100 come:
 * the three share both workers, a third each, and A does not take a whole
 * worker on credit it banked while it could not use it. */
Test(sched_model, credit_beyond_the_lag_cap_is_dropped, .timeout = 60)
{
    const uint32_t w[5] = {100, 1, 1, 100, 100};
    sim m;
    sim_init(&m, 3, w, 2, 0);
    sim_start(&m, cost_equal);
    for (int v = 0; v < 20000; v++)
        step(&m, cost_equal);
    m.asleep[1] = m.asleep[2] = true; /* they leave after their next visit */
    for (int i = 3; i < 5; i++) {
        accel__sched_entity_init(m.s, &m.e[i], w[i], &m.e[i]);
        accel__sched_enqueue(m.s, &m.e[i], true);
    }
    m.n = 5;
    uint64_t b0 = m.visits[1], c0 = m.visits[2];
    int left = 0; /* the weight-1 sessions' last visits */
    while ((m.visits[1] == b0 || m.visits[2] == c0 ||
            running_one_of(&m, 1, 2)) &&
           left++ < 100000)
        step(&m, cost_equal);
    cr_assert_lt(left, 100000, "the weight-1 sessions never left");
    uint64_t before[5];
    memcpy(before, m.visits, sizeof(before));
    for (int v = 0; v < 3000; v++)
        step(&m, cost_equal);
    uint64_t a = m.visits[0] - before[0];
    uint64_t d = m.visits[3] - before[3], e = m.visits[4] - before[4];
    cr_assert_eq(m.visits[1] + m.visits[2], before[1] + before[2],
                 "the weight-1 sessions left");
    /* a third each (1000), give or take the cap's credit (about 40
     * visits of A here) and rounding */
    cr_assert_leq(a, 1100, "A got %llu of 3000 visits (D %llu, E %llu)",
                  (unsigned long long)a, (unsigned long long)d,
                  (unsigned long long)e);
    cr_assert_geq(d, 900, "D got %llu of 3000 visits", (unsigned long long)d);
    cr_assert_geq(e, 900, "E got %llu of 3000 visits", (unsigned long long)e);
    accel__sched_destroy(m.s);
}

/* One weight-1 session against 20 of weight 1000: its ideal gap between
 * visits is 20001 visits; it is never starved beyond twice that. */
Test(sched_model, weight_1_never_starved, .timeout = 60)
{
    uint32_t w[21];
    w[0] = 1;
    for (int i = 1; i < 21; i++)
        w[i] = 1000;
    for (int nw = 1; nw <= 2; nw++) {
        sim m;
        sim_init(&m, 21, w, nw, 0);
        sim_start(&m, cost_uniform);
        uint64_t last = 0, worst = 0;
        for (uint64_t v = 1; v <= 300000; v++) {
            if (step(&m, cost_uniform) == 0) {
                if (v - last > worst)
                    worst = v - last;
                last = v;
            }
        }
        if (300000 - last > worst)
            worst = 300000 - last;
        uint64_t ideal_gap = 20001; /* of all visits, any worker */
        cr_assert_geq(m.visits[0], 300000 / 20001 / 2);
        cr_assert_leq(worst, 2 * ideal_gap + 64,
                      "%d workers: weight-1 waited %llu visits", nw,
                      (unsigned long long)worst);
        accel__sched_destroy(m.s);
    }
}

/* Changing a weight takes effect from the next visit and converges. */
Test(sched_model, weight_change_converges, .timeout = 60)
{
    const uint32_t w[2] = {1, 1};
    sim m;
    sim_init(&m, 2, w, 1, 0);
    sim_start(&m, cost_uniform);
    for (int v = 0; v < 20000; v++)
        step(&m, cost_uniform);
    atomic_store_explicit(&m.e[1].weight, 4, memory_order_relaxed);
    for (int v = 0; v < 2000; v++)
        step(&m, cost_uniform);
    double s0 = m.service[0], s1 = m.service[1];
    for (int v = 0; v < 50000; v++)
        step(&m, cost_uniform);
    double share = (m.service[1] - s1) /
                   (m.service[0] - s0 + m.service[1] - s1);
    cr_assert(fabs(share - 0.8) / 0.8 <= 0.01, "share after change %.4f",
              share);
    accel__sched_destroy(m.s);
}

/* High weight buys latency: a weight-100 session waking while six
 * weight-1 sessions with 2 ms visits are backlogged is the next pick. */
Test(sched_model, high_weight_wakes_first, .timeout = 60)
{
    uint32_t w[7] = {1, 1, 1, 1, 1, 1, 100};
    sim m;
    sim_init(&m, 7, w, 1, 0);
    m.asleep[6] = true;
    cost_fn f = cost_equal;
    sim_start(&m, f);
    for (int round = 0; round < 200; round++) {
        for (int v = 0; v < 37; v++)
            step(&m, f);
        accel__sched_entity *x = &m.e[6];
        accel__sched_charge(m.s, x, 20000, 0, 1);
        accel__sched_enqueue(m.s, x, true);
        accel__sched_charge(m.s, m.run[0], m.cost[0], 0, 1); /* finish */
        int i = idx_of(&m, m.run[0]);
        accel__sched_enqueue(m.s, m.run[0], false);
        accel__sched_entity *next = accel__sched_pick(m.s, 0);
        cr_assert_eq(next, x, "round %d: picked %d before the waker", round,
                     idx_of(&m, next));
        m.visits[i]++;
        start(&m, 0, f);
    }
    accel__sched_destroy(m.s);
}

/* Short lane: lane 1 sees only sessions whose per-op cost is short;
 * lane 0 sees both; enqueue says which lanes may run it. */
Test(sched_model, short_lane_classes, .timeout = 60)
{
    const uint32_t w[2] = {1, 1};
    sim m;
    memset(&m, 0, sizeof(m));
    accel__sched_config c = {.workers = 2, .short_lane_workers = 1,
                             .short_op_ns = 100000, .quantum_ops = 32,
                             .quantum_ns = 2000000, .max_entities = 4};
    cr_assert_eq(accel__sched_create(&c, &m.s), 0);
    for (int i = 0; i < 2; i++)
        accel__sched_entity_init(m.s, &m.e[i], w[i], NULL);
    accel__sched_charge(m.s, &m.e[0], 20000, 0, 1);   /* short */
    accel__sched_charge(m.s, &m.e[1], 2000000, 0, 1); /* long */
    cr_assert_eq(accel__sched_enqueue(m.s, &m.e[1], true),
                 ACCEL__SCHED_LANE_GENERAL);
    cr_assert_null(accel__sched_pick(m.s, 1));
    cr_assert_eq(accel__sched_enqueue(m.s, &m.e[0], true),
                 ACCEL__SCHED_LANE_GENERAL | ACCEL__SCHED_LANE_SHORT);
    cr_assert_eq(accel__sched_pick(m.s, 1), &m.e[0]);
    cr_assert_null(accel__sched_pick(m.s, 1));
    cr_assert_eq(accel__sched_pick(m.s, 0), &m.e[1]);
    cr_assert_null(accel__sched_pick(m.s, 0));
    /* a short session turning long moves to the general class */
    for (int k = 0; k < 8; k++)
        accel__sched_charge(m.s, &m.e[0], 3000000, 0, 1);
    cr_assert_eq(accel__sched_enqueue(m.s, &m.e[0], false),
                 ACCEL__SCHED_LANE_GENERAL);
    cr_assert_null(accel__sched_pick(m.s, 1));
    cr_assert_eq(accel__sched_pick(m.s, 0), &m.e[0]);
    accel__sched_destroy(m.s);
}

/* Far deadlines (a weight-1 visit of a second, beyond the calendar
 * window) still get picked, in deadline order, and never alias. */
Test(sched_model, far_deadlines_work_conserving, .timeout = 60)
{
    const uint32_t w[3] = {1, 1, 1};
    sim m;
    sim_init(&m, 3, w, 1, 0);
    uint64_t big[3] = {1000000000, 300000000, 50000000};
    uint64_t visits[3] = {0};
    for (int r = 0; r < 50; r++) {
        for (int k = 0; k < 3; k++) {
            accel__sched_entity *e = accel__sched_pick(m.s, 0);
            cr_assert_not_null(e);
            int i = idx_of(&m, e);
            visits[i]++;
            accel__sched_charge(m.s, e, big[i], 0, 1);
            m.service[i] += (double)big[i];
            accel__sched_enqueue(m.s, e, false);
        }
    }
    /* each still got visits; the cheapest the most */
    cr_assert_gt(visits[0], 0);
    cr_assert_gt(visits[2], visits[0]);
    accel__sched_destroy(m.s);
}

/* accel__sched_enqueue_or_take is an enqueue followed by that lane's
 * pick, without the calendar round trip: two schedulers driven in
 * lockstep with the same random script (wake-ups with a take on a random
 * lane, plain picks, charges of random costs that move entities between
 * the short and the general class, re-queues, sleeps, weights 1..1000),
 * one taking, the other enqueueing and picking; every step must hand
 * out the same entity (by index), and "taken" exactly when the pick
 * returned the woken one. */
Test(sched_model, enqueue_or_take_is_enqueue_then_pick, .timeout = 60)
{
    enum { N = 12, STEPS = 200000 };
    accel__sched *s[2];
    static accel__sched_entity e[2][N];
    bool queued[N] = {0};
    memset(e, 0, sizeof(e));
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    accel__sched_config c = {.workers = 3, .short_lane_workers = 1,
                             .short_op_ns = 100000, .quantum_ops = 32,
                             .quantum_ns = 2000000, .max_entities = N};
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(accel__sched_create(&c, &s[k]), 0);
        for (int i = 0; i < N; i++)
            accel__sched_entity_init(s[k], &e[k][i],
                                     i % 3 == 0 ? 1 : (uint32_t)(i * 83 % 1000 + 1),
                                     NULL);
    }
    uint64_t takes = 0, picks = 0;
    for (int step = 0; step < STEPS; step++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        int i = (int)(rng % N);
        unsigned lane = (unsigned)(rng >> 8) & 1;
        int got[2] = {-1, -1};
        bool taken = false;
        if (!queued[i] && (rng >> 9) % 2) {
            /* i wakes: A takes if it may, B enqueues and picks. */
            accel__sched_enqueue_or_take(s[0], &e[0][i], true, lane, &taken);
            accel__sched_enqueue(s[1], &e[1][i], true);
            queued[i] = true;
            if (taken)
                got[0] = i;
        }
        if (got[0] < 0) {
            accel__sched_entity *p = accel__sched_pick(s[0], lane);
            got[0] = p ? (int)(p - e[0]) : -1;
        }
        accel__sched_entity *q = accel__sched_pick(s[1], lane);
        got[1] = q ? (int)(q - e[1]) : -1;
        cr_assert_eq(got[0], got[1], "step %d: take/pick %d, enqueue+pick %d (woke %d lane %u taken %d)",
                     step, got[0], got[1], i, lane, taken);
        if (got[0] < 0)
            continue;
        takes += taken;
        picks++;
        int j = got[0];
        queued[j] = false;
        /* Its visit: short (10-60 us) or, for every fourth entity now
         * and then, long (0.2-2 ms: the general class). */
        uint64_t cost = j % 4 == 0 && (rng >> 20) % 3 == 0
                            ? 200000 + (rng >> 24) % 1800000
                            : 10000 + (rng >> 24) % 50000;
        uint32_t ops = 1 + (uint32_t)((rng >> 40) % 4);
        bool again = (rng >> 44) % 2;
        for (int k = 0; k < 2; k++) {
            accel__sched_charge(s[k], &e[k][j], cost, 0, ops);
            if (again)
                accel__sched_enqueue(s[k], &e[k][j], false);
        }
        queued[j] = again;
    }
    cr_assert_gt(takes, STEPS / 50, "the shortcut was taken (%llu)",
                 (unsigned long long)takes);
    cr_assert_lt(takes, picks, "and not always");
    for (int k = 0; k < 2; k++)
        accel__sched_destroy(s[k]);
}
