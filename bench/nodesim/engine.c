/*
 * The three systems under the same open-loop workload.
 *
 * Each chain has a submitter thread. Arrivals are scheduled in advance
 * (Poisson gaps, or bursts on the chain's block cadence) and every op is
 * stamped with its *scheduled* arrival time, so a submitter that runs late
 * still charges the delay to the system (no coordinated omission).
 * Admission is the same for all three: a chain with queue_limit ops
 * admitted and unfinished drops further arrivals (counted), as a node
 * would shed load rather than queue without bound.
 *
 *   accel  one session per chain with its priority and a memory budget;
 *          ops go in with accel_submit(NO_WAIT) and run on W workers.
 *   msess  a mutex per chain; the submitter thread runs its own ops (the
 *          Go VMSession design); W plays no part, the OS schedules.
 *   pool   a mutex+condvar FIFO pool of W workers shared by all chains.
 *
 * Service is counted in nominal op cost (the calibrated work done), so a
 * preempted op is not credited with the time it spent descheduled.
 */
#include "nodesim.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const ns_system_name[NS_NSYS] = {"accel", "mutex/session", "condvar pool"};
const char *const ns_system_desc[NS_NSYS] = {
    "accel: session per chain, priority-weighted fair scheduling on W workers",
    "baseline 1: a mutex per session, every op run on its submitting thread",
    "baseline 2: a mutex+condvar FIFO thread pool of W workers"};

typedef struct ns_op_rec {
    ns_chain_run *cr;
    uint64_t t_sched, cost, t_end;
    bool skipped;
} ns_op_rec;

static void sleep_until(uint64_t t)
{
    struct timespec ts = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

static void max_store(_Atomic int64_t *m, int64_t v)
{
    int64_t cur = atomic_load_explicit(m, memory_order_relaxed);
    while (v > cur && !atomic_compare_exchange_weak_explicit(m, &cur, v, memory_order_relaxed,
                                                             memory_order_relaxed)) {
    }
}

/* Counters in this file are statistics: relaxed, read live as an
 * approximate view or after the threads are joined. */
static int ns_op(accel_ctx *ctx, void *arg)
{
    ns_op_rec *rec = arg;
    ns_chain_run *cr = rec->cr;
    uint64_t t0 = bench_now_ns();
    if (atomic_load_explicit(&cr->run->stop, memory_order_relaxed)) {
        rec->skipped = true; /* the run is over: drain without working */
        return 0;
    }
    bench_hist_add(&cr->wait, t0 - rec->t_sched);
    void *scratch = NULL;
    if (ctx && cr->cfg->scratch_kb &&
        accel_ctx_alloc(ctx, (size_t)cr->cfg->scratch_kb * 1024, &scratch) == ACCEL_OK) {
        memset(scratch, 0, 64);
        max_store(&cr->mem_peak, accel_session_memory_used(accel_ctx_session(ctx)));
    }
    bench_burn_ns(rec->cost);
    if (scratch)
        accel_ctx_free(ctx, scratch);
    rec->t_end = bench_now_ns();
    return 0;
}

static void ns_done(void *arg, int status)
{
    ns_op_rec *rec = arg;
    ns_chain_run *cr = rec->cr;
    if (status != 0 || rec->skipped) {
        atomic_fetch_add_explicit(&cr->skipped, 1, memory_order_relaxed);
    } else {
        bench_hist_add(&cr->latency, rec->t_end - rec->t_sched);
        atomic_fetch_add_explicit(&cr->service_ns, rec->cost, memory_order_relaxed);
        atomic_fetch_add_explicit(&cr->completed, 1, memory_order_relaxed);
    }
    atomic_fetch_sub_explicit(&cr->outstanding, 1, memory_order_relaxed);
    free(rec);
}

static void submit_one(ns_chain_run *cr, bench_rng *rng, uint64_t t_sched, double rate)
{
    ns_run *r = cr->run;
    const ns_chain_cfg *c = cr->cfg;
    atomic_fetch_add_explicit(&cr->arrived, 1, memory_order_relaxed);
    bool full;
    if (r->sys == NS_MSESS) {
        /* Ops run inline: the backlog is the arrivals already due. */
        uint64_t now = bench_now_ns();
        full = now > t_sched && (double)(now - t_sched) * rate / 1e9 > (double)r->queue_limit;
    } else {
        full = atomic_load_explicit(&cr->outstanding, memory_order_relaxed) >=
               (int64_t)r->queue_limit;
    }
    uint64_t cost = bench_rng_range(rng, c->cost_lo_ns, c->cost_hi_ns);
    if (full) {
        atomic_fetch_add_explicit(&cr->dropped, 1, memory_order_relaxed);
        return;
    }
    ns_op_rec *rec = malloc(sizeof *rec);
    if (!rec)
        abort();
    *rec = (ns_op_rec){.cr = cr, .t_sched = t_sched, .cost = cost};
    accel_op op = {ns_op, ns_done, rec};
    atomic_fetch_add_explicit(&cr->outstanding, 1, memory_order_relaxed);
    switch (r->sys) {
    case NS_ACCEL:
        if (accel_submit(cr->sess, &op, ACCEL_NO_WAIT) != ACCEL_OK) {
            atomic_fetch_sub_explicit(&cr->outstanding, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&cr->dropped, 1, memory_order_relaxed);
            free(rec);
        }
        break;
    case NS_MSESS:
        bench_msess_submit(&cr->ms, &op);
        break;
    default:
        bench_pool_submit(r->pool, &op);
        break;
    }
}

static void *chain_main(void *arg)
{
    ns_chain_run *cr = arg;
    ns_run *r = cr->run;
    const ns_chain_cfg *c = cr->cfg;
    bench_rng rng;
    bench_rng_seed(&rng, r->seed, cr->index + 1);
    double rate = ns_demand(c, r->load, r->workers) / ns_mean_cost(c); /* ops/s */
    if (rate <= 0)
        return NULL;
    double burst = 1, gap = 1e9 / rate;
    if (c->period_ns) {
        burst = rate * (double)c->period_ns / 1e9; /* ops per block */
        gap = (double)c->period_ns;
    }
    double t = (double)r->t_start + bench_rng_double(&rng) * gap; /* random phase */
    double carry = 0;
    while (t < (double)r->t_end) {
        sleep_until((uint64_t)t);
        if (atomic_load_explicit(&r->stop, memory_order_relaxed))
            break;
        carry += burst;
        unsigned k = (unsigned)carry;
        carry -= k;
        for (unsigned i = 0; i < k; i++)
            submit_one(cr, &rng, (uint64_t)t, rate);
        t += c->period_ns ? gap : bench_rng_exp(&rng, gap);
    }
    return NULL;
}

int ns_run_start(ns_run *r, const ns_chain_cfg *chains, size_t n)
{
    r->nchains = (unsigned)n;
    ns_ideal_shares(chains, n, r->load, r->workers, r->ideal);
    if (r->sys == NS_ACCEL) {
        accel_runtime_config rc = {.workers = r->workers};
        int st = accel_runtime_create(&rc, &r->rt);
        if (st != ACCEL_OK) {
            fprintf(stderr, "accel_runtime_create: %s\n", accel_strerror(st));
            return -1;
        }
        ns_metrics_attach(r->rt);
    } else if (r->sys == NS_POOL) {
        if (bench_pool_create(r->workers, n * r->queue_limit, &r->pool) != 0)
            return -1;
    }
    for (size_t i = 0; i < n; i++) {
        ns_chain_run *cr = &r->chain[i];
        cr->cfg = &chains[i];
        cr->run = r;
        cr->index = (unsigned)i;
        bench_hist_reset(&cr->wait);
        bench_hist_reset(&cr->latency);
        if (r->sys == NS_ACCEL) {
            accel_session_config sc = {
                .id = chains[i].name,
                .priority = chains[i].priority,
                .memory_budget = (int64_t)chains[i].scratch_kb * 1024 * 4,
                .backend = ACCEL_BACKEND_CPU,
                .queue_depth = (uint32_t)r->queue_limit,
            };
            int st = accel_session_open(r->rt, &sc, &cr->sess);
            if (st != ACCEL_OK) {
                fprintf(stderr, "accel_session_open(%s): %s\n", chains[i].name,
                        accel_strerror(st));
                return -1;
            }
        } else if (r->sys == NS_MSESS) {
            bench_msess_init(&cr->ms);
        }
    }
    r->t_start = bench_now_ns() + 20000000u;
    r->t_end = r->t_start + r->duration_ns;
    for (size_t i = 0; i < n; i++)
        if (pthread_create(&r->chain[i].th, NULL, chain_main, &r->chain[i]) != 0)
            return -1;
    return 0;
}

void ns_run_stop(ns_run *r)
{
    for (unsigned i = 0; i < r->nchains; i++)
        pthread_join(r->chain[i].th, NULL);
    /* Arrivals are over: what is still queued drains without working. */
    atomic_store_explicit(&r->stop, true, memory_order_relaxed);
    for (unsigned i = 0; i < r->nchains; i++) {
        ns_chain_run *cr = &r->chain[i];
        if (r->sys == NS_ACCEL) {
            accel_session_close(cr->sess, ACCEL_CLOSE_DRAIN);
            accel_session_release(cr->sess);
            cr->sess = NULL;
        } else if (r->sys == NS_MSESS) {
            bench_msess_destroy(&cr->ms);
        }
    }
    if (r->pool) {
        bench_pool_destroy(r->pool);
        r->pool = NULL;
    }
    if (r->rt) {
        ns_metrics_attach(NULL);
        accel_runtime_destroy(r->rt);
        r->rt = NULL;
    }
}
