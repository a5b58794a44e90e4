/*
 * The five systems under one open-loop workload.
 *
 * Arrivals are generated before the run from the seed (Poisson gaps, or
 * batches on the chain's cadence), so every system sees the same ops at
 * the same offsets. Each op carries its scheduled arrival and its deadline;
 * a submitter that runs late still charges the delay to the system (no
 * coordinated omission).
 *
 * One admission rule for all: an arrival is dropped when its chain already
 * has `depth` ops admitted and unfinished (for mutex/session, whose ops run
 * on the submitting thread, the arrivals due and not yet run). One op body
 * for all: an op that starts after its deadline does not run (expired: a
 * miss, as a drop is); otherwise it allocates its scratch (accel: from its
 * session's budget; baselines: malloc), burns its cost, frees.
 *
 *   accel (node)     session per chain, W workers, a short lane (below)
 *   accel (default)  session per chain, W workers, default configuration
 *   mutex/session    a mutex per chain, every op run by its submitter (the
 *                    Go VMSession design); the OS time-slices the threads
 *   FIFO pool        one mutex+condvar FIFO, W workers
 *   priority pool    one mutex, a FIFO per priority, W workers, strict
 *                    priority (highest non-empty level first)
 *
 * The batch scenario's four systems (batch.c) are accel (node) with its
 * batchable chain run in batches by accel (no added wait, or held back
 * to fill them), one by one, or by a hand-written accumulator thread.
 *
 * Service is counted in nominal op cost (the calibrated work done), so a
 * preempted op is not credited with the time it spent descheduled.
 */
#include "nodesim.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *const ns_system_name[NS_NSYS_ALL] = {
    "accel (node)", "accel (default)", "mutex/session", "FIFO pool", "priority pool",
    "accel batching", "accel batch+hold", "accel unbatched", "hand batcher"};
const char *const ns_system_desc[NS_NSYS_ALL] = {
    "accel configured as a node would be: W general workers + 1 short-lane worker "
    "(short_lane_workers = 1, short_op_ns = 1 ms), so Critical/High ops (<= 0.6 ms) "
    "never queue behind 5-20 ms FHE ops",
    "accel, default runtime configuration (W workers, no short lane)",
    "a mutex per chain, each op run on its submitter thread (the Go VMSession design)",
    "a mutex+condvar FIFO thread pool of W workers",
    "a strict-priority thread pool of W workers (a FIFO per priority, highest first)",
    "accel (node); the batchable chain's session has a batch function "
    "(accel_session_set_batch, up to 72 ops a call, no added wait)",
    "the same, held back to fill a batch: accel_batch_config.max_delay_ns = "
    "--batch-delay-ms, the model's costs as cost_fixed_ns / cost_per_op_ns (released "
    "by 72 queued, the delay, or the earliest deadline less a full batch's cost)",
    "accel (node); the batchable chain's ops run one by one",
    "accel (node) for the other chains; the batchable chain's ops go to a thread of "
    "its own that gathers them for up to 10 ms or 72 ops and runs each batch itself "
    "(Nimbus-style)"};

/* The node configuration: W general workers plus one short-lane worker
 * that runs only sessions whose ops average <= 1 ms. Every Critical and
 * High chain of the default set has ops of at most 0.6 ms and the heavy
 * proof/FHE work takes 2-20 ms, so a consensus vote never waits for an FHE
 * op to finish. The lane is an extra thread, not an extra core: the CPUs
 * are the same, the OS time-slices it with the others. (A lane taken out
 * of W = 2 leaves the short chains, over half the demand, one worker of
 * their own plus what the general worker can spare between 5-20 ms ops;
 * on a loaded 2-core machine the High chains then missed deadlines.) */
#define NS_SHORT_OP_NS 1000000u

static void sleep_until(uint64_t t)
{
    struct timespec ts = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

static unsigned bucket_of(const ns_run *r, uint64_t t)
{
    uint64_t b = t > r->t_start ? (t - r->t_start) / r->bucket_ns : 0;
    return b < r->nbuckets ? (unsigned)b : r->nbuckets - 1;
}

static void count(_Atomic uint64_t *c, uint64_t v)
{
    atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

static void miss(ns_chain_run *cr, const ns_op_rec *rec)
{
    count(&cr->b_miss[bucket_of(cr->run, rec->t_sched)], 1);
}

static int ns_op(accel_ctx *ctx, void *arg)
{
    ns_op_rec *rec = arg;
    ns_chain_run *cr = rec->cr;
    /* acquire: pairs with the release store in ns_run_finish, so t_cut is
     * visible to ns_done once stop is seen */
    if (atomic_load_explicit(&cr->run->stop, memory_order_acquire)) {
        rec->outcome = NS_SKIPPED; /* the run is over: drain without working */
        return 0;
    }
    if (bench_now_ns() > rec->deadline) {
        rec->outcome = NS_EXPIRED; /* same rule in every system */
        return 0;
    }
    void *scratch = NULL;
    size_t bytes = (size_t)cr->cfg->scratch_kb * 1024;
    if (bytes) {
        if (ctx) {
            if (accel_ctx_alloc(ctx, bytes, &scratch) != ACCEL_OK)
                scratch = NULL;
        } else {
            scratch = malloc(bytes);
        }
        if (scratch)
            memset(scratch, 0, 64);
    }
    if (rec->wait_us) {
        /* a storage read or a remote signer's round trip: the thread
         * sleeps, the CPU is free (blocking scenario only). --announce-waits:
         * the op says so (outside an accel op the announcement does nothing, so
         * the baselines run the same body). */
        bool announce = cr->run->announce_waits;
        if (announce)
            (void)accel_blocking_begin();
        uint64_t slept = bench_now_ns();
        bench_sleep_ns((uint64_t)rec->wait_us * 1000u);
        slept = bench_now_ns() - slept;
        rec->waited_us = slept / 1000u < UINT32_MAX ? (uint32_t)(slept / 1000u) : UINT32_MAX;
        if (announce)
            (void)accel_blocking_end();
    }
    if (rec->calls)
        ns_body_run(cr->cfg->body, rec->item, rec->calls); /* a wrong answer fails the run */
    else
        bench_burn_ns(rec->cost);
    if (scratch) {
        if (ctx)
            accel_ctx_free(ctx, scratch);
        else
            free(scratch);
    }
    rec->t_end = bench_now_ns();
    rec->outcome = NS_DONE;
    return 0;
}

void ns_done(void *arg, int status)
{
    ns_op_rec *rec = arg;
    ns_chain_run *cr = rec->cr;
    ns_run *r = cr->run;
    /* relaxed: a count read after the threads are joined (check_once) */
    atomic_fetch_add_explicit(&rec->dones, 1, memory_order_relaxed);
#if NS_HAVE_SUBMIT_EX
    if (status == ACCEL_EEXPIRED)
        rec->outcome = NS_EXPIRED; /* the runtime dropped it at dequeue */
#endif
    if (status != 0 && rec->outcome == NS_PENDING)
        rec->outcome = NS_SKIPPED;
    switch (rec->outcome) {
    case NS_DONE:
        bench_hist_add(&cr->latency, rec->t_end - rec->t_sched);
        count(&cr->service_ns, rec->cost);
        if (rec->t_end < r->t_end)
            count(&cr->window_ns, rec->cost);
        count(&cr->b_service[bucket_of(r, rec->t_end)], rec->cost);
        if (rec->t_end <= rec->deadline) {
            count(&cr->ontime, 1);
            count(&cr->b_ontime[bucket_of(r, rec->t_sched)], 1);
        } else {
            count(&cr->late, 1);
            miss(cr, rec);
        }
        break;
    case NS_EXPIRED:
        count(&cr->expired, 1);
        miss(cr, rec);
        break;
    default: /* skipped at the end: a miss only if its deadline had passed */
        if (rec->deadline <= r->t_cut) {
            count(&cr->expired, 1);
            miss(cr, rec);
        } else {
            count(&cr->censored, 1);
        }
        break;
    }
    atomic_fetch_sub_explicit(&cr->outstanding, 1, memory_order_relaxed);
}

static void drop(ns_chain_run *cr, ns_op_rec *rec)
{
    rec->outcome = NS_DROPPED;
    count(&cr->dropped, 1);
    miss(cr, rec);
}

static void *chain_main(void *arg)
{
    ns_chain_run *cr = arg;
    ns_run *r = cr->run;
    size_t due = 0; /* mutex/session: arrivals with t_sched <= now */
    for (size_t i = 0; i < cr->nops; i++) {
        ns_op_rec *rec = &cr->ops[i];
        sleep_until(rec->t_sched);
        atomic_store_explicit(&cr->next, i, memory_order_relaxed);
        if (atomic_load_explicit(&r->stop, memory_order_acquire)) {
            atomic_fetch_add_explicit(&cr->outstanding, 1, memory_order_relaxed);
            rec->outcome = NS_SKIPPED;
            ns_done(rec, 0);
            continue;
        }
        count(&cr->submitted, 1);
        accel_op op = {ns_op, ns_done, rec};
        if (r->sys == NS_MSESS) {
            uint64_t now = bench_now_ns();
            while (due < cr->nops && cr->ops[due].t_sched <= now)
                due++;
            int64_t backlog = (int64_t)(due - i); /* this one included */
            atomic_store_explicit(&cr->outstanding, backlog - 1, memory_order_relaxed);
            if (backlog > (int64_t)r->depth) {
                drop(cr, rec);
                continue;
            }
            atomic_fetch_add_explicit(&cr->outstanding, 1, memory_order_relaxed);
            bench_msess_submit(&cr->ms, &op);
            continue;
        }
        if (atomic_load_explicit(&cr->outstanding, memory_order_relaxed) >= (int64_t)r->depth) {
            drop(cr, rec);
            continue;
        }
        atomic_fetch_add_explicit(&cr->outstanding, 1, memory_order_relaxed);
        int st = 0;
        /* the hand batcher takes the batchable chain's ops; the other
         * chains run on accel (node) */
        bool hand = r->sys == NS_BATCH_HAND && (int)cr->index == r->batch_chain;
        switch (hand ? NS_NSYS_ALL : r->sys) {
        case NS_NSYS_ALL:
            st = ns_hand_submit(r, rec);
            break;
        case NS_ACCEL_NODE:
        case NS_ACCEL_DEFAULT:
        case NS_BATCH_ACCEL:
        case NS_BATCH_HELD:
        case NS_BATCH_SINGLE:
        case NS_BATCH_HAND:
#if NS_HAVE_SUBMIT_EX
            st = accel_submit_ex(cr->sess, &op, r->no_deadlines ? 0 : (int64_t)rec->deadline,
                                 ACCEL_NO_WAIT, NULL);
#else
            st = accel_submit(cr->sess, &op, ACCEL_NO_WAIT);
#endif
            break;
        case NS_FIFO:
            st = bench_pool_submit(r->pool, &op);
            break;
        default:
            st = bench_prio_submit(r->prio, cr->cfg->priority, &op);
            break;
        }
        if (st != 0) {
            atomic_fetch_sub_explicit(&cr->outstanding, 1, memory_order_relaxed);
            drop(cr, rec);
        }
    }
    return NULL;
}

double ns_demand_at(const ns_run *r, unsigned i, double frac)
{
    double d = r->load * r->capacity * r->cs->c[i].share;
    if (r->burst.chain[i] && frac >= r->burst.from && frac < r->burst.to)
        d *= r->burst.factor;
    return d;
}

/* The arrivals of chain i, times relative to the run's start. */
static int gen_arrivals(ns_run *r, ns_chain_run *cr)
{
    const ns_chain_cfg *c = cr->cfg;
    bench_rng rng;
    bench_rng_seed(&rng, r->seed, 1000u * r->slice + cr->index + 1);
    double dur = (double)r->duration_ns, mean = ns_op_mean_cost(c);
    size_t cap = 1024, n = 0;
    ns_op_rec *ops = malloc(cap * sizeof *ops);
    if (!ops)
        return -1;
    double t = 0, carry = 0;
    if (c->period_ns)
        t = bench_rng_double(&rng) * (double)c->period_ns; /* random phase */
    for (;;) {
        double rate = ns_demand_at(r, cr->index, t / dur) / mean; /* ops/s */
        if (!c->period_ns) {
            t += rate > 0 ? bench_rng_exp(&rng, 1e9 / rate) : dur;
            carry = 1;
        } else {
            carry += rate * (double)c->period_ns / 1e9;
        }
        if (t >= dur)
            break;
        for (; carry >= 1; carry -= 1) {
            if (n == cap) {
                ns_op_rec *g = realloc(ops, 2 * cap * sizeof *ops);
                if (!g) {
                    free(ops);
                    return -1;
                }
                ops = g;
                cap *= 2;
            }
            uint64_t cost = bench_rng_range(&rng, c->cost_lo_ns, c->cost_hi_ns);
            ns_op_rec o = {.cr = cr, .t_sched = (uint64_t)t, .cost = (uint32_t)cost};
            /* Drawn whether used or not, so the arrival and cost streams are
             * the same with and without real bodies and waits. */
            uint64_t item = bench_rng_next(&rng), wait = 0;
            if (c->wait)
                wait = bench_rng_range(&rng, c->wait_lo_ns, c->wait_hi_ns);
            if (c->body != NS_BODY_MODEL && ns_body_available(c->body) &&
                ns_body_unit_ns(c->body)) {
                o.calls = ns_body_calls(c->body, cost);
                o.item = (uint32_t)item;
                o.cost = (uint32_t)(o.calls * ns_body_unit_ns(c->body));
            }
            if (r->blocking)
                o.wait_us = (uint32_t)(wait / 1000u);
            ops[n++] = o;
        }
        if (c->period_ns)
            t += (double)c->period_ns;
    }
    cr->ops = ops;
    cr->nops = n;
    return 0;
}

/* The fair reference of the share error, after a slice; the measured side
 * is chosen with it (both summed over slices, ns_share).
 *
 * The fluid weighted-fair server of fluid.h is fed this slice's arrivals
 * (same deadlines, same admission depth) on the capacity at which it
 * completes, within the arrival window, the op work this system completed
 * there: the capacity the system actually had (other processes of a
 * shared machine, or a flood's own submitters, take some of the measured
 * one, by different amounts from slice to slice). How much that was is
 * the "work done" column; the share error judges how it was split.
 *
 * If on that capacity the fluid server drops and expires nothing, the
 * load was below capacity and every chain's fair share is its demand: the
 * reference is the work its ops offered, the measure the work done for
 * them (whenever they finished: an op in flight at the end of the
 * arrivals is late, not unfair). Otherwise the chains competed, and what
 * the lowest-weight ones get is what is left over (a capacity 2% off
 * moves their shares by points): the reference is the fluid server's work
 * completed within the window, the measure the system's (the drain after
 * it serves only the chains left with a backlog). */
static int fair_reference(ns_run *r)
{
    ns_fluid_chain fc[NS_MAX_CHAINS] = {{0}};
    ns_fluid_op *fops[NS_MAX_CHAINS] = {0}; /* fc[i].ops, writable */
    double done[NS_MAX_CHAINS] = {0}, win[NS_MAX_CHAINS], all[NS_MAX_CHAINS], did = 0;
    ns_fluid_outcome out[NS_MAX_CHAINS] = {{0}};
    uint64_t lost = 0;
    int rc = 0;
    for (unsigned i = 0; i < r->nchains; i++) {
        ns_chain_run *cr = &r->chain[i];
        uint64_t w = atomic_load_explicit(&cr->window_ns, memory_order_relaxed);
        uint64_t a = atomic_load_explicit(&cr->service_ns, memory_order_relaxed);
        win[i] = (double)(w - cr->window0);
        all[i] = (double)(a - cr->service0);
        did += win[i];
        ns_fluid_op *ops = malloc((cr->nops ? cr->nops : 1) * sizeof *ops);
        if (!ops)
            rc = -1;
        for (size_t k = 0; ops && k < cr->nops; k++) {
            const ns_op_rec *o = &cr->ops[k];
            ops[k] = (ns_fluid_op){(double)(o->t_sched - r->t_start), (double)o->cost,
                                   (double)(o->deadline - r->t_start),
                                   (double)o->wait_us * 1e3};
        }
        fops[i] = ops;
        fc[i] = (ns_fluid_chain){ops, cr->nops, (double)cr->cfg->priority};
    }
    /* On the capacity at which the fluid server completes in the window
     * what the system did: the capacity the system actually had. Its
     * outcome is served on to the system's cut, as the system's ops were
     * (the drain after the arrivals, ns_slice_finish). */
    double cap = rc ? -1
                    : ns_fluid_reference(fc, r->nchains, r->capacity / 1e9, r->workers, r->depth,
                                         (double)r->duration_ns, (double)(r->t_cut - r->t_start),
                                         did, done, &lost, out);
    /* With the waits as they ran: the same arrivals and capacity search,
     * each run op's wait replaced by the one it had here (a wake-up and
     * a wait for a CPU after the sleep, which no scheduler's order
     * removes). */
    ns_fluid_outcome out_run[NS_MAX_CHAINS] = {{0}};
    double scratch[NS_MAX_CHAINS];
    bool as_run = cap >= 0 && r->blocking;
    for (unsigned i = 0; as_run && i < r->nchains; i++)
        for (size_t k = 0; k < fc[i].n; k++)
            if (r->chain[i].ops[k].waited_us)
                fops[i][k].wait = (double)r->chain[i].ops[k].waited_us * 1e3;
    if (as_run && ns_fluid_reference(fc, r->nchains, r->capacity / 1e9, r->workers, r->depth,
                                     (double)r->duration_ns, (double)(r->t_cut - r->t_start),
                                     did, scratch, NULL, out_run) < 0)
        cap = -1;
    bool ok = cap >= 0, below = ok && lost == 0;
    if (below)
        for (unsigned i = 0; i < r->nchains; i++) {
            done[i] = 0;
            for (size_t k = 0; k < fc[i].n; k++)
                done[i] += fc[i].ops[k].cost;
        }
    for (unsigned i = 0; i < r->nchains; i++) {
        free(fops[i]);
        if (ok) {
            r->chain[i].fair_ns += done[i];
            r->chain[i].measured_ns += below ? all[i] : win[i];
            r->chain[i].fair_ontime += out[i].ontime;
            r->chain[i].fair_missed += out[i].missed;
            r->chain[i].fair_late += out[i].late;
            r->chain[i].fair_run_ontime += out_run[i].ontime;
            r->chain[i].fair_run_missed += out_run[i].missed;
        }
    }
    if (!ok)
        return -1;
    r->ref_cpu_s += cap * (double)r->duration_ns / 1e9;
    double sum = 0;
    for (unsigned i = 0; i < r->nchains; i++)
        sum += r->chain[i].fair_ns;
    for (unsigned i = 0; i < r->nchains; i++)
        r->ideal[i] = sum > 0 ? r->chain[i].fair_ns / sum : 0;
    return 0;
}

/* The earlier reference, kept in the JSON for comparison: weighted
 * max-min of the demand offered per phase (before, during, after a
 * burst), water-filled on the measured capacity and summed over the run,
 * against all the work done for the run's ops (the drain after the
 * arrivals included). It counts a burst's demand in the fair shares even
 * where its ops expired unserved, and the drain's work in none of them
 * (bench/README.md, "Why it changed"). */
static void maxmin_shares(ns_run *r)
{
    double edge[4] = {0, 1, 1, 1};
    unsigned nph = 1;
    if (r->burst.factor > 1) {
        edge[1] = r->burst.from;
        edge[2] = r->burst.to;
        nph = 3;
    }
    double d[NS_MAX_CHAINS], f[NS_MAX_CHAINS];
    double dur = (double)r->duration_ns;
    for (unsigned p = 0; p < nph; p++) {
        double lo = edge[p] * dur, hi = edge[p + 1] * dur, secs = (hi - lo) / 1e9;
        if (secs <= 0)
            continue;
        for (unsigned i = 0; i < r->nchains; i++) {
            const ns_chain_run *cr = &r->chain[i];
            double c = 0;
            for (size_t k = 0; k < cr->nops; k++)
                if ((double)cr->ops[k].t_sched >= lo && (double)cr->ops[k].t_sched < hi)
                    c += cr->ops[k].cost;
            d[i] = c / secs;
        }
        ns_waterfill(r->cs->c, r->nchains, d, r->capacity, r->workers, f);
        for (unsigned i = 0; i < r->nchains; i++)
            r->chain[i].maxmin_ns += f[i] * secs;
    }
    double sum = 0;
    for (unsigned i = 0; i < r->nchains; i++)
        sum += r->chain[i].maxmin_ns;
    for (unsigned i = 0; i < r->nchains; i++)
        r->ideal_maxmin[i] = sum > 0 ? r->chain[i].maxmin_ns / sum : 0;
}

static int open_accel(ns_run *r)
{
    accel_runtime_config rc = {.workers = r->workers};
    if (r->sys != NS_ACCEL_DEFAULT) { /* node, and the batch systems */
        rc.workers = r->workers + 1;
        rc.short_lane_workers = 1;
        rc.short_op_ns = NS_SHORT_OP_NS;
    }
    int st = accel_runtime_create(&rc, &r->rt);
    if (st != ACCEL_OK) {
        fprintf(stderr, "accel_runtime_create: %s\n", accel_strerror(st));
        return -1;
    }
    ns_metrics_attach(r->rt);
    for (unsigned i = 0; i < r->nchains; i++) {
        const ns_chain_cfg *c = &r->cs->c[i];
        accel_session_config sc = {
            .id = c->name,
            .priority = c->priority,
            .memory_budget = (int64_t)c->scratch_kb * 1024 * 4,
            .backend = ACCEL_BACKEND_CPU,
            .queue_depth = (uint32_t)r->depth,
        };
        st = accel_session_open(r->rt, &sc, &r->chain[i].sess);
        if (st != ACCEL_OK) {
            fprintf(stderr, "accel_session_open(%s): %s\n", c->name, accel_strerror(st));
            return -1;
        }
    }
    if (r->sys == NS_BATCH_ACCEL || r->sys == NS_BATCH_HELD)
        return ns_batch_configure(r);
    return 0;
}

int ns_slice_start(ns_run *r)
{
    const uint64_t grace = 500000000u;
    if (r->slice == 0) {
        r->nchains = (unsigned)r->cs->n;
        r->bucket_ns = 100000000u;
        while ((r->duration_ns + grace) / r->bucket_ns + 1 > NS_MAX_BUCKETS)
            r->bucket_ns *= 2;
        r->nbuckets = (unsigned)((r->duration_ns + grace) / r->bucket_ns + 1);
    }
    for (unsigned i = 0; i < r->nchains; i++) {
        ns_chain_run *cr = &r->chain[i];
        if (r->slice == 0) {
            cr->cfg = &r->cs->c[i];
            cr->run = r;
            cr->index = i;
            bench_hist_reset(&cr->latency);
            cr->b_service = calloc(r->nbuckets, sizeof *cr->b_service);
            cr->b_ontime = calloc(r->nbuckets, sizeof *cr->b_ontime);
            cr->b_miss = calloc(r->nbuckets, sizeof *cr->b_miss);
            if (!cr->b_service || !cr->b_ontime || !cr->b_miss)
                return -1;
        }
        free(cr->ops);
        cr->ops = NULL;
        cr->nops = 0;
        atomic_store_explicit(&cr->next, 0, memory_order_relaxed);
        if (gen_arrivals(r, cr) != 0)
            return -1;
        cr->offered += cr->nops;
        cr->window0 = atomic_load_explicit(&cr->window_ns, memory_order_relaxed);
        cr->service0 = atomic_load_explicit(&cr->service_ns, memory_order_relaxed);
        if (r->sys == NS_MSESS && bench_msess_init(&cr->ms) != 0)
            return -1;
    }
    maxmin_shares(r);
    if (ns_sys_accel(r->sys) && open_accel(r) != 0)
        return -1;
    if (r->sys == NS_BATCH_HAND && ns_hand_start(r) != 0)
        return -1;
    if (r->sys == NS_FIFO && bench_pool_create(r->workers, r->nchains * r->depth, &r->pool) != 0)
        return -1;
    if (r->sys == NS_PRIO && bench_prio_create(r->workers, &r->prio) != 0)
        return -1;

    r->cpu0 = bench_cpu_time_ns();
    r->t_start = bench_now_ns() + 20000000u;
    r->t_end = r->t_start + r->duration_ns;
    for (unsigned i = 0; i < r->nchains; i++) {
        ns_chain_run *cr = &r->chain[i];
        uint64_t dl = r->no_deadlines ? (UINT64_MAX >> 2) : cr->cfg->deadline_ns;
        for (size_t k = 0; k < cr->nops; k++) {
            cr->ops[k].t_sched += r->t_start;
            cr->ops[k].deadline = cr->ops[k].t_sched + dl;
        }
    }
    for (unsigned i = 0; i < r->nchains; i++)
        if (pthread_create(&r->chain[i].th, NULL, chain_main, &r->chain[i]) != 0)
            return -1;
    return 0;
}

/* Every op admitted completed exactly once (its done called once), every
 * dropped op never: counted over the slices, reported in the JSON and
 * checked by the batch scenario's smoke test. */
static void check_once(ns_run *r)
{
    for (unsigned i = 0; i < r->nchains; i++) {
        const ns_chain_run *cr = &r->chain[i];
        for (size_t k = 0; k < cr->nops; k++) {
            const ns_op_rec *o = &cr->ops[k];
            /* relaxed: every thread that completes ops is joined */
            unsigned d = atomic_load_explicit(&o->dones, memory_order_relaxed);
            if (o->outcome == NS_DROPPED) {
                r->done_twice += d > 0;
                continue;
            }
            r->accepted++;
            if (d == 1)
                r->done_once++;
            else if (d == 0)
                r->done_never++;
            else
                r->done_twice++;
        }
    }
}

static bool idle(const ns_run *r)
{
    for (unsigned i = 0; i < r->nchains; i++)
        if (atomic_load_explicit(&r->chain[i].outstanding, memory_order_relaxed) > 0 ||
            atomic_load_explicit(&r->chain[i].next, memory_order_relaxed) + 1 < r->chain[i].nops)
            return false;
    return true;
}

void ns_slice_finish(ns_run *r, void (*tick)(ns_run *, void *), void *arg)
{
    const uint64_t period = 250000000u, grace = 500000000u;
    uint64_t next = r->t_start + period;
    for (;;) {
        uint64_t now = bench_now_ns();
        if (now >= r->t_end + grace || (now >= r->t_end && idle(r)))
            break;
        if (now >= next) {
            if (tick)
                tick(r, arg);
            next += period;
            continue;
        }
        uint64_t until = next < r->t_end + grace ? next : r->t_end + grace;
        if (now >= r->t_end && until > now + 10000000u)
            until = now + 10000000u; /* poll for idle while draining */
        bench_sleep_ns(until - now);
    }
    r->t_cut = bench_now_ns();
    r->cpu_ns += bench_cpu_time_ns() - r->cpu0;
    r->wall_ns += r->t_cut - r->t_start;
    /* release: t_cut before stop (read by ns_done after ns_op's acquire) */
    atomic_store_explicit(&r->stop, true, memory_order_release);
    for (unsigned i = 0; i < r->nchains; i++)
        pthread_join(r->chain[i].th, NULL);
    ns_hand_stop(r); /* no more submits: its queue drains (ns_op's stop rule) */
    for (unsigned i = 0; i < r->nchains; i++) {
        ns_chain_run *cr = &r->chain[i];
        if (cr->sess) {
            accel_session_close(cr->sess, ACCEL_CLOSE_DRAIN);
            accel_session_release(cr->sess);
            cr->sess = NULL;
        } else if (r->sys == NS_MSESS) {
            bench_msess_destroy(&cr->ms);
        }
    }
    bench_pool_destroy(r->pool);
    r->pool = NULL;
    bench_prio_destroy(r->prio);
    r->prio = NULL;
    if (r->rt) {
        ns_metrics_attach(NULL);
        accel_runtime_destroy(r->rt);
        r->rt = NULL;
    }
    /* Every op has finished: the window's work is final. */
    check_once(r);
    if (!r->no_deadlines && fair_reference(r) != 0)
        fprintf(stderr, "accel-nodesim: out of memory for the fair reference\n");
    if (r->batch_chain >= 0 && ns_batch_record(r) != 0)
        fprintf(stderr, "accel-nodesim: out of memory for the op-by-op comparison\n");
    atomic_store_explicit(&r->stop, false, memory_order_relaxed); /* threads joined */
    r->slices_done++;
    r->slice++;
}

void ns_run_free(ns_run *r)
{
    if (!r)
        return;
    for (unsigned i = 0; i < r->nchains; i++) {
        free(r->chain[i].ops);
        free((void *)r->chain[i].b_service);
        free((void *)r->chain[i].b_ontime);
        free((void *)r->chain[i].b_miss);
        free(r->chain[i].met);
    }
    free(r);
}

/* The co-tenant (--cotenant N): what else a node's machine runs (the Go
 * runtime's GC, networking, the database), as N processes of one thread
 * each spinning on the CPU. Other processes, so their CPU is not in this
 * process's CPU time (work per CPU-second) and the kernel shares the CPUs
 * between them and every thread of every system here by its per-thread
 * fairness. The child only spins (fork from a threaded process allows
 * nothing else): no allocation, no locks; it dies with its parent. */
#define NS_MAX_COTENANT 64
static pid_t cotenant_pid[NS_MAX_COTENANT];
static unsigned cotenant_n;

int ns_cotenant_start(unsigned n)
{
    if (n > NS_MAX_COTENANT)
        return -1;
    pid_t self = getpid();
    for (unsigned i = 0; i < n; i++) {
        pid_t p = fork();
        if (p < 0) {
            ns_cotenant_stop();
            return -1;
        }
        if (p == 0) {
            /* the parent may have died before the signal was armed */
            if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != self)
                _exit(0);
            volatile uint64_t x = 1;
            for (;;)
                x = x * 6364136223846793005u + 1;
        }
        cotenant_pid[cotenant_n++] = p;
    }
    return 0;
}

void ns_cotenant_stop(void)
{
    for (unsigned i = 0; i < cotenant_n; i++) {
        kill(cotenant_pid[i], SIGKILL);
        while (waitpid(cotenant_pid[i], NULL, 0) < 0 && errno == EINTR) {
        }
    }
    cotenant_n = 0;
}
