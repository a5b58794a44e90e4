/*
 * The scheduler on accel-nodesim's workload, without the OS: the real
 * pick / charge / enqueue of sched_wfq.c driven by simulated workers and a
 * simulated clock, fed the arrivals of the node simulation's 17 chains
 * (bench/chains/default.conf: weights 100/10/5/1, ops of 20 us to 20 ms,
 * Poisson or 10 ms batches, per-op deadlines, admission depth 1024). The
 * work each chain completes must match the ideal fluid weighted-fair
 * server of bench/nodesim/fluid.c fed the same arrivals: this is the
 * share error of accel-nodesim with the machine's noise taken out.
 *
 * Workers follow worker.c and visit.c: a visit takes up to accel__sched_visit_ops
 * ops, ends early once quantum_ns has passed or the ring is empty, drops
 * an op whose deadline has passed when it comes up (no work, counted as
 * an op of the visit), is charged its duration, and the session is
 * re-queued if ops remain, else goes idle until its next arrival (a wake).
 * With a short lane there are W + 1 workers on W CPUs, sharing them
 * equally while more than W are busy (the OS time-slicing them).
 *
 * Promises: 3
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fluid.h"
#include "sched_core.h"

#define NCH 17
#define CPUS 2
#define DEPTH 1024
#define QUANTUM_NS 2000000.0

/* weight, cost lo/hi (us), share of the offered work, period (us, 0:
 * Poisson), deadline (ms): the default chain set. */
static const struct {
    uint32_t w;
    double lo, hi, share, period, dl;
} chains[NCH] = {
    {100, 20, 50, 0.02, 0, 50},      {100, 400, 600, 0.03, 0, 100},
    {10, 100, 300, 0.10, 0, 500},    {10, 50, 200, 0.12, 10000, 100},
    {10, 400, 600, 0.04, 0, 200},    {10, 100, 300, 0.06, 0, 500},
    {5, 5000, 20000, 0.09, 0, 2000}, {5, 2000, 5000, 0.07, 0, 2000},
    {5, 2000, 5000, 0.05, 0, 1000},  {5, 5000, 20000, 0.07, 0, 2000},
    {5, 2000, 5000, 0.06, 0, 2000},  {5, 5000, 20000, 0.05, 0, 2000},
    {1, 400, 600, 0.06, 0, 5000},    {1, 20, 50, 0.05, 0, 5000},
    {1, 20, 50, 0.05, 0, 1000},      {1, 2000, 5000, 0.04, 0, 2000},
    {1, 20, 50, 0.04, 0, 1000},
};
enum { BRIDGE_BTC = 13, ORACLE_PRICE = 14 }; /* the flood's chains */

typedef struct chain {
    ns_fluid_op *ops;
    size_t n, arr, head, tail, *q;
    int state; /* 0 idle, 1 queued, 2 on a worker */
    accel__sched_entity e;
    double done;
    uint64_t expired;
} chain;

typedef struct worker {
    chain *c;
    unsigned lane, n, budget;
    bool busy; /* an op in progress */
    double rem, t0;
} worker;

static uint64_t rng = 88172645463325252ull;
static double urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}

/* Arrivals at `load` of CPUS CPUs over dur ns; chains flood[] offer
 * `factor` times their rate in the middle half. */
static void gen(chain *c, double load, double dur, double factor)
{
    for (int i = 0; i < NCH; i++) {
        size_t cap = 1024;
        c[i].ops = malloc(cap * sizeof *c[i].ops);
        cr_assert_not_null(c[i].ops);
        double mean = (chains[i].lo + chains[i].hi) * 500, per = chains[i].period * 1e3;
        double t = per > 0 ? urand() * per : 0, carry = 0;
        for (;;) {
            double rate = load * CPUS * 1e9 * chains[i].share / mean; /* ops/s */
            bool flood = i == BRIDGE_BTC || i == ORACLE_PRICE;
            if (flood && t >= dur / 4 && t < 3 * dur / 4)
                rate *= factor;
            if (per > 0) {
                carry += rate * per / 1e9;
            } else {
                t += -log(urand()) * 1e9 / rate;
                carry = 1;
            }
            if (t >= dur)
                break;
            for (; carry >= 1; carry -= 1) {
                if (c[i].n == cap) {
                    cap *= 2;
                    c[i].ops = realloc(c[i].ops, cap * sizeof *c[i].ops);
                    cr_assert_not_null(c[i].ops);
                }
                double cost = (chains[i].lo + (chains[i].hi - chains[i].lo) * urand()) * 1e3;
                c[i].ops[c[i].n++] = (ns_fluid_op){t, cost, t + chains[i].dl * 1e6, 0};
            }
            if (per > 0)
                t += per;
        }
        c[i].q = malloc(c[i].n * sizeof *c[i].q);
        cr_assert_not_null(c[i].q);
    }
}

/* Takes worker x's next op, or ends its visit (and picks again). */
static void next_op(accel__sched *s, worker *x, double now)
{
    for (;;) {
        if (!x->c) {
            accel__sched_entity *e = accel__sched_pick(s, x->lane);
            if (!e)
                return;
            x->c = e->owner;
            x->c->state = 2;
            x->t0 = now;
            x->n = 0;
            x->budget = accel__sched_visit_ops(s, e);
        }
        chain *c = x->c;
        bool end = x->n >= x->budget || (x->n > 0 && now - x->t0 >= QUANTUM_NS);
        while (!end && c->head < c->tail && now >= c->ops[c->q[c->head]].deadline) {
            c->head++; /* expired when it comes up: no work */
            c->expired++;
            end = ++x->n >= x->budget;
        }
        if (!end && c->head < c->tail) {
            x->rem = c->ops[c->q[c->head]].cost;
            x->busy = true;
            return;
        }
        accel__sched_charge(s, &c->e, (uint64_t)(now - x->t0), 0, x->n);
        if (c->head < c->tail) {
            c->state = 1;
            accel__sched_enqueue(s, &c->e, false);
        } else {
            c->state = 0;
        }
        x->c = NULL;
    }
}

/* Runs the workload through the scheduler; returns the share error in
 * points against the fluid reference, and the ops of weight >= 10 chains
 * that expired. */
static double run(double load, double factor, bool lane, uint64_t *hi_expired)
{
    const double dur = 4e9;
    chain c[NCH];
    memset(c, 0, sizeof c);
    gen(c, load, dur, factor);
    unsigned nw = CPUS + (lane ? 1 : 0);
    accel__sched_config cfg = {.workers = nw,
                               .short_lane_workers = lane ? 1 : 0,
                               .short_op_ns = 1000000,
                               .quantum_ops = 32,
                               .quantum_ns = (uint64_t)QUANTUM_NS,
                               .max_entities = 64};
    accel__sched *s;
    cr_assert_eq(accel__sched_create(&cfg, &s), 0);
    for (int i = 0; i < NCH; i++)
        accel__sched_entity_init(s, &c[i].e, chains[i].w, &c[i]);
    worker w[CPUS + 1];
    memset(w, 0, sizeof w);
    if (lane)
        w[CPUS].lane = 1;
    double now = 0;
    for (;;) {
        for (int i = 0; i < NCH; i++)
            for (; c[i].arr < c[i].n && c[i].ops[c[i].arr].t <= now; c[i].arr++) {
                if (c[i].tail - c[i].head >= DEPTH)
                    continue; /* admission: dropped */
                c[i].q[c[i].tail++] = c[i].arr;
                if (c[i].state == 0) {
                    c[i].state = 1;
                    accel__sched_enqueue(s, &c[i].e, true);
                }
            }
        for (unsigned k = 0; k < nw; k++)
            if (!w[k].busy)
                next_op(s, &w[k], now);
        unsigned busy = 0;
        for (unsigned k = 0; k < nw; k++)
            busy += w[k].busy;
        double speed = busy > CPUS ? (double)CPUS / busy : 1, next = dur;
        for (int i = 0; i < NCH; i++)
            if (c[i].arr < c[i].n && c[i].ops[c[i].arr].t < next)
                next = c[i].ops[c[i].arr].t;
        int first = -1;
        for (unsigned k = 0; k < nw; k++)
            if (w[k].busy && now + w[k].rem / speed < next) {
                next = now + w[k].rem / speed;
                first = (int)k;
            }
        if (next >= dur)
            break;
        for (unsigned k = 0; k < nw; k++) {
            if (!w[k].busy)
                continue;
            w[k].rem -= speed * (next - now);
            if ((int)k == first || w[k].rem <= 1e-3) {
                chain *x = w[k].c;
                x->done += x->ops[x->q[x->head++]].cost;
                w[k].n++;
                w[k].busy = false;
            }
        }
        now = next;
    }
    ns_fluid_chain fc[NCH];
    double fd[NCH], tm = 0, tf = 0, err = 0;
    for (int i = 0; i < NCH; i++)
        fc[i] = (ns_fluid_chain){c[i].ops, c[i].n, chains[i].w};
    cr_assert_eq(ns_fluid_serve(fc, NCH, CPUS, CPUS, DEPTH, dur, fd, NULL, NULL), 0);
    *hi_expired = 0;
    for (int i = 0; i < NCH; i++) {
        tm += c[i].done;
        tf += fd[i];
        if (chains[i].w >= 10)
            *hi_expired += c[i].expired;
    }
    for (int i = 0; i < NCH; i++) {
        err += fabs(c[i].done / tm - fd[i] / tf);
        free(c[i].ops);
        free(c[i].q);
    }
    accel__sched_destroy(s);
    return 50 * err;
}

static void check(double load, double factor, bool lane)
{
    uint64_t hi_expired;
    double err = run(load, factor, lane, &hi_expired);
    cr_expect_leq(err, 1.0, "load %.1f, flood %.0fx, short lane %d: share error %.2f pts",
                  load, factor, lane, err);
    cr_expect_eq(hi_expired, 0, "Critical/High ops expired: %llu",
                 (unsigned long long)hi_expired);
}

Test(sched_node_workload, overload, .timeout = 60)
{
    check(1.2, 1, false);
}

Test(sched_node_workload, overload_short_lane, .timeout = 60)
{
    check(1.2, 1, true);
}

Test(sched_node_workload, steady, .timeout = 60)
{
    check(0.9, 1, true);
}

Test(sched_node_workload, flood, .timeout = 60)
{
    check(0.7, 20, false);
}

Test(sched_node_workload, flood_short_lane, .timeout = 60)
{
    check(0.7, 20, true);
}
