/*
 * bench_latency: the node scenario of promise 3 (docs/contract.md). Six
 * weight-1 sessions are kept backlogged with 2 ms ops (calibrated CPU work) while one weight-100
 * session submits a 20 us op about every 10 ms (open loop). Measured: the
 * submit -> start wait of the weight-100 ops, and the throughput of the
 * backlogged sessions, for four systems in the same run:
 *   accel       2 workers (the scheduler alone)
 *   lane-of-2   2 workers, one of them a short lane (short_lane_workers = 1:
 *               the backlogged sessions get one worker, the short lane idles)
 *   lane+1      3 workers, one a short lane: the two general workers of the
 *               scenario plus an extra short-lane thread (on a 2-CPU machine
 *               it has to preempt a busy worker to run)
 *   fifo-pool   the mutex+condvar FIFO pool of bench/common, 2 threads
 * The short lane must be one of the runtime's workers (the runtime requires
 * short_lane_workers < workers), so "2 workers with a short lane" can only
 * mean lane-of-2; lane+1 shows what the lane buys when it costs a thread
 * instead of half the workers.
 *
 * Feeding (the same arrival process for every system): each weight-1
 * session starts with --backlog ops queued and each completion submits one
 * more from the done callback, so every weight-1 session always has
 * --backlog ops in the system (queued or running) and the pool's FIFO holds
 * at most 6 x backlog of them: bounded, not growing. A submitter thread
 * sends the weight-100 ops at absolute times k x period plus a uniform
 * jitter of +-period/10 (fixed seed: the same times for every system; the
 * jitter keeps the arrivals from phase-locking with the 2 ms ops). An op is
 * stamped right before its submit call, so submitter lateness is not
 * charged to the system; its fn stamps its start first thing.
 *
 * Wait decomposition: each weight-1 op writes its end time into a
 * thread-local of the worker that ran it. A weight-100 op that starts after
 * its worker ended a weight-1 op *after* its submit splits its wait into
 * "behind": submit -> end of that op (queued behind a running long op) and
 * "gap": that end -> start (pick, scheduler decision, hand-over). An op
 * that found its worker idle is all "gap" (a wake-up).
 *
 * The FIFO pool's wait is the work queued ahead of the op (about
 * 6 x backlog x 2 ms / 2 workers), accel's is at most the rest of one
 * running long op, so the fifo/accel ratio grows with --backlog (about
 * 3.3 x backlog at the defaults): the 50x target needs a backlog of ~16
 * ops per session; the default, 4, keeps the run short and the pool's
 * queue small.
 *
 * Repetitions interleave the systems (A B C D A B C D ...); per system the
 * median over repetitions of each percentile is reported, and the ratios
 * are of those medians.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#define NLONG 6
#define NSYS 4

enum { SYS_ACCEL, SYS_LANE2, SYS_LANE3, SYS_POOL };
static const char *const sys_name[NSYS] = {"accel", "lane-of-2", "lane+1",
                                           "fifo-pool"};

static struct {
    double secs, warm;
    uint64_t seed, long_ns, short_ns, period_ns, backlog, short_op_ns;
    int reps;
    bool smoke;
    const char *json, *systems;
} opt = {.secs = 2.0, .seed = 42, .long_ns = 2000000, .short_ns = 20000,
         .period_ns = 10000000, .backlog = 4, .short_op_ns = 0, .reps = 3};

/* ------------------------------------------------------------ the ops */

typedef struct sample {
    uint64_t submit, start, prev_end; /* prev_end: see "Wait decomposition" */
} sample;

typedef struct lsess {
    accel_session *s; /* NULL for the pool */
    bench_pool *pool;
} lsess;

static _Atomic int stop;
static _Atomic uint64_t long_done; /* weight-1 ops completed */
static _Thread_local uint64_t tl_last_end;

static int long_op(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    bench_burn_ns(opt.long_ns);
    tl_last_end = bench_now_ns();
    return 0;
}

static void long_done_cb(void *arg, int status)
{
    lsess *l = arg;
    atomic_fetch_add_explicit(&long_done, 1, memory_order_relaxed);
    if (status != 0 || atomic_load_explicit(&stop, memory_order_relaxed))
        return;
    accel_op op = {long_op, long_done_cb, l};
    if (l->s)
        (void)accel_submit(l->s, &op, ACCEL_NO_WAIT);
    else
        (void)bench_pool_submit(l->pool, &op);
}

static int short_op(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    sample *x = arg;
    x->start = bench_now_ns();
    x->prev_end = tl_last_end;
    bench_burn_ns(opt.short_ns);
    return 0;
}

/* ------------------------------------------------------ one system run */

typedef struct stats {
    uint64_t n, p50, p99, max;       /* wait, ns */
    uint64_t behind_p50, behind_p99; /* parts of the wait, ns */
    uint64_t gap_p50, gap_p99;
    double behind_frac;              /* ops that waited behind a long op */
    double long_ops_per_s;           /* backlogged sessions' throughput */
} stats;

typedef struct submitter {
    accel_session *s;
    bench_pool *pool;
    sample *v;
    size_t cap, n;    /* samples taken (all, warm-up included) */
    size_t first;     /* first sample of the measured window */
    uint64_t t0, t_meas, t_end;
    uint64_t seed;
} submitter;

static void *submit_main(void *arg)
{
    submitter *sb = arg;
    bench_rng rng;
    bench_rng_seed(&rng, sb->seed, 7);
    uint64_t jit = opt.period_ns / 10;
    sb->first = SIZE_MAX;
    for (uint64_t k = 1;; k++) {
        uint64_t at = sb->t0 + k * opt.period_ns - jit +
                      bench_rng_range(&rng, 0, 2 * jit);
        if (at >= sb->t_end || sb->n == sb->cap)
            break;
        uint64_t now = bench_now_ns();
        if (at > now)
            bench_sleep_ns(at - now);
        sample *x = &sb->v[sb->n];
        if (sb->first == SIZE_MAX && at >= sb->t_meas)
            sb->first = sb->n;
        sb->n++;
        accel_op op = {short_op, NULL, x};
        x->submit = bench_now_ns();
        if (sb->s)
            accel_submit(sb->s, &op, ACCEL_FOREVER);
        else
            bench_pool_submit(sb->pool, &op);
    }
    if (sb->first == SIZE_MAX)
        sb->first = sb->n;
    return NULL;
}

static void run_system(int sys, uint64_t seed, stats *out)
{
    accel_runtime *rt = NULL;
    bench_pool *pool = NULL;
    lsess L[NLONG];
    accel_session *hi = NULL;
    atomic_store(&stop, 0);
    atomic_store(&long_done, 0);
    if (sys == SYS_POOL) {
        if (bench_pool_create(2, 4096, &pool) != 0)
            exit(1);
    } else {
        accel_runtime_config rc = {.workers = sys == SYS_LANE3 ? 3 : 2,
                                   .short_lane_workers = sys != SYS_ACCEL,
                                   .short_op_ns = opt.short_op_ns};
        if (accel_runtime_create(&rc, &rt) != ACCEL_OK)
            exit(1);
        accel_session_config hc = {.id = "w100", .priority = 100,
                                   .queue_depth = 64};
        if (accel_session_open(rt, &hc, &hi) != ACCEL_OK)
            exit(1);
    }
    for (int i = 0; i < NLONG; i++) {
        L[i] = (lsess){NULL, pool};
        if (rt) {
            char id[16];
            snprintf(id, sizeof id, "w1-%d", i);
            accel_session_config c = {.id = id, .priority = 1,
                                      .queue_depth = (uint32_t)opt.backlog};
            if (accel_session_open(rt, &c, &L[i].s) != ACCEL_OK)
                exit(1);
        }
    }
    for (uint64_t k = 0; k < opt.backlog; k++)
        for (int i = 0; i < NLONG; i++) {
            accel_op op = {long_op, long_done_cb, &L[i]};
            if (rt)
                accel_submit(L[i].s, &op, ACCEL_FOREVER);
            else
                bench_pool_submit(pool, &op);
        }

    submitter sb = {.s = hi, .pool = pool, .seed = seed};
    sb.cap = (size_t)((opt.warm + opt.secs) * 1e9 / (double)opt.period_ns) + 16;
    sb.v = calloc(sb.cap, sizeof *sb.v);
    sb.t0 = bench_now_ns();
    sb.t_meas = sb.t0 + (uint64_t)(opt.warm * 1e9);
    sb.t_end = sb.t_meas + (uint64_t)(opt.secs * 1e9);
    pthread_t th;
    pthread_create(&th, NULL, submit_main, &sb);
    uint64_t now = bench_now_ns();
    if (sb.t_meas > now)
        bench_sleep_ns(sb.t_meas - now);
    uint64_t d0 = atomic_load(&long_done), m0 = bench_now_ns();
    now = bench_now_ns();
    if (sb.t_end > now)
        bench_sleep_ns(sb.t_end - now);
    uint64_t d1 = atomic_load(&long_done), m1 = bench_now_ns();
    pthread_join(th, NULL);
    atomic_store(&stop, 1);
    if (rt) {
        accel_session_sync(hi, ACCEL_FOREVER);
        accel_session_close(hi, ACCEL_CLOSE_DRAIN);
        accel_session_release(hi);
        for (int i = 0; i < NLONG; i++) {
            accel_session_close(L[i].s, ACCEL_CLOSE_CANCEL);
            accel_session_release(L[i].s);
        }
        accel_runtime_destroy(rt);
    } else {
        bench_pool_destroy(pool); /* drains: every sample has started */
    }

    size_t n = sb.n - sb.first;
    uint64_t *w = calloc(n + 1, sizeof *w), *be = calloc(n + 1, sizeof *be),
             *gp = calloc(n + 1, sizeof *gp);
    size_t nb = 0;
    for (size_t i = 0; i < n; i++) {
        const sample *x = &sb.v[sb.first + i];
        w[i] = x->start - x->submit;
        if (x->prev_end > x->submit && x->prev_end <= x->start) {
            be[nb] = x->prev_end - x->submit;
            gp[i] = x->start - x->prev_end;
            nb++;
        } else {
            gp[i] = w[i];
        }
    }
    bench_sort_u64(w, n);
    bench_sort_u64(be, nb);
    bench_sort_u64(gp, n);
    *out = (stats){.n = n,
                   .p50 = bench_pct_u64(w, n, 50),
                   .p99 = bench_pct_u64(w, n, 99),
                   .max = n ? w[n - 1] : 0,
                   .behind_p50 = bench_pct_u64(be, nb, 50),
                   .behind_p99 = bench_pct_u64(be, nb, 99),
                   .gap_p50 = bench_pct_u64(gp, n, 50),
                   .gap_p99 = bench_pct_u64(gp, n, 99),
                   .behind_frac = n ? (double)nb / (double)n : 0,
                   .long_ops_per_s = (double)(d1 - d0) * 1e9 / (double)(m1 - m0)};
    free(w);
    free(be);
    free(gp);
    free(sb.v);
}

/* ------------------------------------------------------------------ main */

static double med(stats *v, int reps, size_t off, bool is_double)
{
    double x[256];
    for (int r = 0; r < reps; r++) {
        const char *p = (const char *)&v[r] + off;
        x[r] = is_double ? *(const double *)p : (double)*(const uint64_t *)p;
    }
    return bench_median_f64(x, (size_t)reps);
}

#define MED(v, f) med(v, opt.reps, offsetof(stats, f), false)
#define MEDF(v, f) med(v, opt.reps, offsetof(stats, f), true)

int main(int argc, char **argv)
{
    bench_opt opts[] = {
        {"seconds", BENCH_OPT_DOUBLE, &opt.secs, "measured seconds per system per repetition"},
        {"reps", BENCH_OPT_INT, &opt.reps, "repetitions, systems interleaved (medians)"},
        {"seed", BENCH_OPT_U64, &opt.seed, "seed of the arrival jitter"},
        {"systems", BENCH_OPT_STR, &opt.systems,
         "subset, e.g. \"accel,fifo-pool\" (default: all four)"},
        {"backlog", BENCH_OPT_U64, &opt.backlog,
         "ops each weight-1 session keeps in the system (queued or running)"},
        {"long-ns", BENCH_OPT_U64, &opt.long_ns, "weight-1 op cost (ns of CPU work)"},
        {"short-ns", BENCH_OPT_U64, &opt.short_ns, "weight-100 op cost"},
        {"period-ns", BENCH_OPT_U64, &opt.period_ns, "weight-100 mean inter-arrival"},
        {"short-op-ns", BENCH_OPT_U64, &opt.short_op_ns,
         "runtime short_op_ns of the lane systems (0: runtime default)"},
        {"json", BENCH_OPT_STR, &opt.json, "also write RESULT objects to this file"},
        {"smoke", BENCH_OPT_FLAG, &opt.smoke, "a ~1-2 s run for CI"},
    };
    int prc = bench_opts_parse(argc, argv,
                               "usage: accel_bench_latency [options]\n"
                               "Submit->start wait of a weight-100 session's short ops while six\n"
                               "weight-1 sessions are backlogged with long ops: accel, accel with\n"
                               "a short lane (one of 2 workers / a third worker), FIFO pool.",
                               opts, BENCH_COUNTOF(opts));
    if (prc)
        return prc < 0 ? 2 : 0;
    if (opt.smoke) {
        opt.secs = 0.25;
        opt.reps = 1;
    }
    opt.warm = opt.secs < 1 ? 0.1 : 0.3;
    if (opt.reps < 1 || opt.reps > 256 || opt.secs <= 0 || opt.backlog < 1 ||
        opt.period_ns == 0)
        return 2;
    bool on[NSYS];
    for (int i = 0; i < NSYS; i++)
        on[i] = !opt.systems || strstr(opt.systems, sys_name[i]) != NULL;
    if (opt.json && bench_result_json_open(opt.json) != 0)
        return 2;
    bench_banner("latency", opt.seed);
    bench_work_calibrate();
    printf("scenario: %d weight-1 sessions x %llu ops of %.1f ms in the system; "
           "weight-100 op of %.1f us every %.1f ms (+-10%%); %.2f s x %d reps per system\n",
           NLONG, (unsigned long long)opt.backlog, (double)opt.long_ns / 1e6,
           (double)opt.short_ns / 1e3, (double)opt.period_ns / 1e6, opt.secs, opt.reps);

    static stats S[NSYS][256];
    for (int r = 0; r < opt.reps; r++)
        for (int k = 0; k < NSYS; k++) {
            int sys = (k + r) % NSYS; /* rotate the order each repetition */
            if (on[sys])
                run_system(sys, opt.seed + (uint64_t)r, &S[sys][r]);
        }

    printf("\n%-10s %6s %9s %9s %9s | %9s %9s %9s %9s %7s | %10s\n", "system", "n",
           "p50 us", "p99 us", "max us", "behind50", "behind99", "gap50", "gap99",
           "behind%", "w1 ops/s");
    double p99[NSYS] = {0}, p50[NSYS] = {0}, mx[NSYS] = {0}, thr[NSYS] = {0};
    for (int sys = 0; sys < NSYS; sys++) {
        if (!on[sys])
            continue;
        stats *v = S[sys];
        p50[sys] = MED(v, p50);
        p99[sys] = MED(v, p99);
        mx[sys] = MED(v, max);
        thr[sys] = MEDF(v, long_ops_per_s);
        double b50 = MED(v, behind_p50), b99 = MED(v, behind_p99);
        double g50 = MED(v, gap_p50), g99 = MED(v, gap_p99);
        double bf = MEDF(v, behind_frac);
        printf("%-10s %6.0f %9.1f %9.1f %9.1f | %9.1f %9.1f %9.1f %9.1f %6.0f%% | %10.1f\n",
               sys_name[sys], MED(v, n), p50[sys] / 1e3, p99[sys] / 1e3, mx[sys] / 1e3,
               b50 / 1e3, b99 / 1e3, g50 / 1e3, g99 / 1e3, 100 * bf, thr[sys]);
        bench_result res;
        bench_result_begin(&res, "latency", "wait_w100");
        bench_result_str(&res, "system", sys_name[sys]);
        bench_result_u64(&res, "backlog", opt.backlog);
        bench_result_u64(&res, "reps", (uint64_t)opt.reps);
        bench_result_f64(&res, "seconds", opt.secs);
        bench_result_f64(&res, "samples", MED(v, n));
        bench_result_f64(&res, "p50_ns", p50[sys]);
        bench_result_f64(&res, "p99_ns", p99[sys]);
        bench_result_f64(&res, "max_ns", mx[sys]);
        bench_result_f64(&res, "behind_p50_ns", b50);
        bench_result_f64(&res, "behind_p99_ns", b99);
        bench_result_f64(&res, "gap_p50_ns", g50);
        bench_result_f64(&res, "gap_p99_ns", g99);
        bench_result_f64(&res, "behind_frac", bf);
        bench_result_f64(&res, "w1_ops_per_s", thr[sys]);
        bench_result_emit(&res);
    }
    printf("(behind: submit -> end of the long op it waited for; gap: that end, or the "
           "submit if its worker was idle, -> start; w1 ops/s: throughput of the "
           "backlogged sessions, %.0f at full use of 2 workers)\n",
           2e9 / (double)opt.long_ns);

    printf("\n# Ratios (medians of this run)\n");
    if (on[SYS_POOL] && on[SYS_ACCEL] && p99[SYS_ACCEL] > 0)
        printf("fifo-pool / accel:     p50 %.1fx  p99 %.1fx  max %.1fx\n",
               p50[SYS_POOL] / p50[SYS_ACCEL], p99[SYS_POOL] / p99[SYS_ACCEL],
               mx[SYS_POOL] / mx[SYS_ACCEL]);
    for (int sys = SYS_LANE2; sys <= SYS_LANE3; sys++) {
        if (!on[sys] || p99[sys] <= 0)
            continue;
        if (on[SYS_ACCEL])
            printf("accel / %-9s:     p99 %.1fx better with the lane; w1 throughput %.3f "
                   "of accel's\n",
                   sys_name[sys], p99[SYS_ACCEL] / p99[sys], thr[sys] / thr[SYS_ACCEL]);
        if (on[SYS_POOL])
            printf("fifo-pool / %-9s: p99 %.1fx\n", sys_name[sys], p99[SYS_POOL] / p99[sys]);
    }

    printf("\n# Targets (bench/README.md)\n");
    if (on[SYS_ACCEL]) {
        char what[96];
        snprintf(what, sizeof what, "accel p99 wait / longest op (%.1f ms)",
                 (double)opt.long_ns / 1e6);
        bench_target("latency", what, p99[SYS_ACCEL] / (double)opt.long_ns, "<=", 1.5, "x");
        if (on[SYS_POOL])
            bench_target("latency", "fifo-pool p99 / accel p99", p99[SYS_POOL] / p99[SYS_ACCEL],
                         ">=", 50, "x");
    }
    if (on[SYS_LANE2])
        bench_target("latency", "short lane (one of 2 workers) p99", p99[SYS_LANE2] / 1e3, "<=",
                     200, "us");
    if (on[SYS_LANE3])
        bench_target("latency", "short lane (third worker) p99", p99[SYS_LANE3] / 1e3, "<=", 200,
                     "us");
    bench_result_json_close();
    return 0;
}
