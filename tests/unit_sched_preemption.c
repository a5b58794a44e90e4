/*
 * The scheduler on accel-nodesim's co-tenant scenario, without the OS:
 * the real pick / charge / enqueue of sched_wfq.c driven by simulated
 * workers (2 general + 1 short-lane, as accel (node)) and a simulated
 * round-robin CPU scheduler (2 CPUs, 3 ms slices) shared with one busy
 * co-tenant thread, fed the node simulation's 17 chains at load 1.0 of
 * the 2 CPUs (bench/chains/default.conf). On time by class must match the
 * ideal fluid weighted-fair server (bench/nodesim/fluid.c) fed the same
 * arrivals on the capacity at which it completes the same work (as
 * accel-nodesim's fair reference): within 2 points for Critical, High and
 * Normal; Low no lower than 2 points under it, and no higher than the
 * reference plus the Low ops the reference started in time but completed
 * late (the fluid server runs an op at its class's slow rate; a worker
 * runs it at a CPU's speed once it starts) plus 2 points.
 *
 * The rule under test: a visit that accel__sched_visit_measures_cpu
 * selects is charged its time on a CPU, not the time its worker waited
 * for one (worker.c subtracts it from the visit's service, as the
 * harness does here); a shorter visit is charged its preemption. Charged
 * the preemption, long visits are charged a co-tenant's slices and
 * bursty High sessions lose their share (and their place on the short
 * lane: preempted visits look like long ops).
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
#define SLICE_NS 3000000.0
#define NWK 3             /* short-lane worker 0, general 1 and 2 */
#define NT (NWK + 1)      /* threads: the workers and the co-tenant */
#define COTENANT NWK

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

static int class_of(uint32_t w)
{
    return w >= 100 ? 0 : w >= 10 ? 1 : w >= 5 ? 2 : 3;
}

typedef struct chain {
    ns_fluid_op *ops;
    size_t n, arr, head, tail, *q;
    int state; /* 0 idle, 1 queued, 2 on a worker */
    accel__sched_entity e;
    uint64_t ontime, missed;
} chain;

typedef struct worker {
    chain *c;
    unsigned lane, n, budget;
    bool busy, measure;   /* an op in progress; the visit measures CPU */
    double rem, t0, preempted;
} worker;

/* The CPU: threads on CPUs for up to a slice each, the others waiting in
 * FIFO order (round robin, as CFS is among equal threads). */
typedef struct cpu {
    bool on[NT];
    double slice[NT];
    int q[NT], qn;
} cpu;

static uint64_t rng;
static double urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}

static void gen(chain *c, double load, double dur)
{
    for (int i = 0; i < NCH; i++) {
        size_t cap = 1024;
        c[i].ops = malloc(cap * sizeof *c[i].ops);
        cr_assert_not_null(c[i].ops);
        double mean = (chains[i].lo + chains[i].hi) * 500, per = chains[i].period * 1e3;
        double rate = load * CPUS * 1e9 * chains[i].share / mean; /* ops/s */
        double t = per > 0 ? urand() * per : 0, carry = 0;
        for (;;) {
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
                c[i].ops[c[i].n++] = (ns_fluid_op){t, cost, t + chains[i].dl * 1e6};
            }
            if (per > 0)
                t += per;
        }
        c[i].q = malloc(c[i].n * sizeof *c[i].q);
        cr_assert_not_null(c[i].q);
    }
}

static accel__sched *S;

/* Takes worker x's next op, or ends its visit (and picks again), as
 * visit.c: a quota of ops, quantum_ns, an op past its deadline when it
 * comes up is dropped unrun (nodesim's op body); the visit is charged
 * its wall time, less its preemption when it measures its CPU. */
static void next_op(worker *x, double now)
{
    for (;;) {
        if (!x->c) {
            accel__sched_entity *e = accel__sched_pick(S, x->lane);
            if (!e)
                return;
            x->c = e->owner;
            x->c->state = 2;
            x->t0 = now;
            x->n = 0;
            x->preempted = 0;
            x->budget = accel__sched_visit_ops(S, e);
            x->measure = accel__sched_visit_measures_cpu(S, e);
        }
        chain *c = x->c;
        bool end = x->n >= x->budget || (x->n > 0 && now - x->t0 >= QUANTUM_NS);
        while (!end && c->head < c->tail && now > c->ops[c->q[c->head]].deadline) {
            c->head++;
            c->missed++;
            end = ++x->n >= x->budget;
        }
        if (!end && c->head < c->tail) {
            x->rem = c->ops[c->q[c->head]].cost;
            x->busy = true;
            return;
        }
        double service = now - x->t0 - (x->measure ? x->preempted : 0);
        accel__sched_charge(S, &c->e, (uint64_t)service, 0, x->n);
        if (c->head < c->tail) {
            c->state = 1;
            accel__sched_enqueue(S, &c->e, false);
        } else {
            c->state = 0;
        }
        x->c = NULL;
    }
}

/* Puts runnable threads on free CPUs, in their queue's order. */
static void dispatch(cpu *p, const bool *runnable)
{
    int n = 0, used = 0;
    for (int i = 0; i < p->qn; i++)
        if (runnable[p->q[i]])
            p->q[n++] = p->q[i];
    p->qn = n;
    for (int t = 0; t < NT; t++) {
        if (p->on[t] && !runnable[t])
            p->on[t] = false;
        used += p->on[t];
    }
    for (int t = 0; t < NT; t++) {
        bool queued = false;
        for (int i = 0; i < p->qn; i++)
            queued |= p->q[i] == t;
        if (runnable[t] && !p->on[t] && !queued)
            p->q[p->qn++] = t;
    }
    while (used < CPUS && p->qn > 0) {
        int t = p->q[0];
        memmove(p->q, p->q + 1, (size_t)--p->qn * sizeof *p->q);
        p->on[t] = true;
        p->slice[t] = SLICE_NS;
        used++;
    }
}

typedef struct result {
    double on[4], ref[4], ref_late[4];
} result;

static void run(uint64_t seed, result *res)
{
    const double dur = 4e9;
    chain c[NCH];
    memset(c, 0, sizeof c);
    rng = seed;
    gen(c, 1.0, dur);
    accel__sched_config cfg = {.workers = NWK,
                               .short_lane_workers = 1,
                               .short_op_ns = 1000000,
                               .quantum_ops = 32,
                               .quantum_ns = (uint64_t)QUANTUM_NS,
                               .max_entities = 64};
    cr_assert_eq(accel__sched_create(&cfg, &S), 0);
    for (int i = 0; i < NCH; i++)
        accel__sched_entity_init(S, &c[i].e, chains[i].w, &c[i]);
    worker w[NWK];
    memset(w, 0, sizeof w);
    w[0].lane = 1;
    cpu p;
    memset(&p, 0, sizeof p);
    double now = 0, work = 0;
    for (;;) {
        for (int i = 0; i < NCH; i++)
            for (; c[i].arr < c[i].n && c[i].ops[c[i].arr].t <= now; c[i].arr++) {
                if (c[i].tail - c[i].head >= DEPTH) {
                    c[i].missed++; /* admission: dropped */
                    continue;
                }
                c[i].q[c[i].tail++] = c[i].arr;
                if (c[i].state == 0) {
                    c[i].state = 1;
                    accel__sched_enqueue(S, &c[i].e, true);
                }
            }
        for (unsigned k = 0; k < NWK; k++)
            if (!w[k].busy)
                next_op(&w[k], now);
        bool runnable[NT];
        for (unsigned k = 0; k < NWK; k++)
            runnable[k] = w[k].busy;
        runnable[COTENANT] = true;
        dispatch(&p, runnable);
        double next = dur;
        for (int i = 0; i < NCH; i++)
            if (c[i].arr < c[i].n && c[i].ops[c[i].arr].t < next)
                next = c[i].ops[c[i].arr].t;
        for (int t = 0; t < NT; t++) {
            if (!p.on[t])
                continue;
            if (p.qn > 0 && now + p.slice[t] < next)
                next = now + p.slice[t];
            if (t < NWK && now + w[t].rem < next)
                next = now + w[t].rem;
        }
        if (next >= dur)
            break;
        double dt = next - now;
        for (unsigned k = 0; k < NWK; k++) {
            worker *x = &w[k];
            if (!x->busy)
                continue;
            if (!p.on[k]) {
                x->preempted += dt; /* runnable, waiting for a CPU */
                continue;
            }
            x->rem -= dt;
            if (x->rem <= 1e-3) {
                chain *ch = x->c;
                const ns_fluid_op *op = &ch->ops[ch->q[ch->head++]];
                work += op->cost;
                *(next <= op->deadline ? &ch->ontime : &ch->missed) += 1;
                x->n++;
                x->busy = false;
            }
        }
        for (int t = 0; t < NT; t++)
            if (p.on[t] && (p.slice[t] -= dt) <= 1e-3 && p.qn > 0) {
                p.on[t] = false; /* slice over: to the back of the queue */
                p.q[p.qn++] = t;
            }
        now = next;
    }
    for (int i = 0; i < NCH; i++) {
        for (size_t k = c[i].head; k < c[i].tail; k++)
            c[i].missed += c[i].ops[c[i].q[k]].deadline < dur;
        for (size_t k = c[i].arr; k < c[i].n; k++)
            c[i].missed += c[i].ops[k].deadline < dur;
    }
    /* The reference on the capacity at which it completes the same work
     * in the window (bisection: its work grows with the capacity). */
    ns_fluid_chain fc[NCH];
    ns_fluid_outcome out[NCH];
    double fd[NCH], lo = 0.1, hi = CPUS;
    for (int i = 0; i < NCH; i++)
        fc[i] = (ns_fluid_chain){c[i].ops, c[i].n, chains[i].w};
    for (int it = 0; it < 24; it++) {
        double mid = (lo + hi) / 2, t = 0;
        cr_assert_eq(ns_fluid_serve(fc, NCH, mid, CPUS, DEPTH, dur, fd, NULL, NULL), 0);
        for (int i = 0; i < NCH; i++)
            t += fd[i];
        *(t < work ? &lo : &hi) = mid;
    }
    cr_assert_eq(ns_fluid_serve(fc, NCH, hi, CPUS, DEPTH, dur, fd, NULL, out), 0);
    double ok[4] = {0}, all[4] = {0}, fok[4] = {0}, fall[4] = {0}, flate[4] = {0};
    for (int i = 0; i < NCH; i++) {
        int k = class_of(chains[i].w);
        ok[k] += (double)c[i].ontime;
        all[k] += (double)(c[i].ontime + c[i].missed);
        fok[k] += (double)out[i].ontime;
        flate[k] += (double)out[i].late;
        fall[k] += (double)(out[i].ontime + out[i].missed);
        free(c[i].ops);
        free(c[i].q);
    }
    for (int k = 0; k < 4; k++) {
        res->on[k] = 100 * ok[k] / all[k];
        res->ref[k] = 100 * fok[k] / fall[k];
        res->ref_late[k] = 100 * flate[k] / fall[k];
    }
    accel__sched_destroy(S);
}

static void check(uint64_t seed)
{
    static const char *const name[4] = {"Critical", "High", "Normal", "Low"};
    result r;
    run(seed, &r);
    cr_log_info("seed %llu: on time C %.1f H %.1f N %.1f L %.1f; reference C %.1f H %.1f "
                "N %.1f L %.1f (Low completed late there: %.1f)",
                (unsigned long long)seed, r.on[0], r.on[1], r.on[2], r.on[3], r.ref[0],
                r.ref[1], r.ref[2], r.ref[3], r.ref_late[3]);
    for (int k = 0; k < 3; k++)
        cr_expect(fabs(r.on[k] - r.ref[k]) <= 2,
                  "seed %llu: %s on time %.1f%%, the fair reference's %.1f%%",
                  (unsigned long long)seed, name[k], r.on[k], r.ref[k]);
    cr_expect(r.on[3] >= r.ref[3] - 2 && r.on[3] <= r.ref[3] + r.ref_late[3] + 2,
              "seed %llu: Low on time %.1f%%, the fair reference's %.1f%% (+%.1f late)",
              (unsigned long long)seed, r.on[3], r.ref[3], r.ref_late[3]);
}

Test(sched_preemption, cotenant_seed_a, .timeout = 120)
{
    check(88172645463325252ull);
}

Test(sched_preemption, cotenant_seed_b, .timeout = 120)
{
    check(88172645463325252ull + 7919);
}
