/*
 * bench_pick_scale: per-op scheduling overhead against the number of
 * runnable sessions (target: at most 25% more at 100k than at 16).
 *
 * Two measurements per session count N:
 *  - runtime (public API): a runtime with --workers workers and
 *    quantum_ops = 1, so every op is one visit and costs one pick, one
 *    charge and one re-queue. N sessions (queue depth --depth, weights
 *    drawn from 1..100 with a fixed seed, or all equal) each keep --depth
 *    empty ops queued: every completion resubmits its op from the done
 *    callback, so all N sessions stay runnable for the whole window (steady
 *    state, not a drain). ns/op = window / ops completed in it. This is the
 *    whole per-op path: pick, visit, ring take, done, submit, re-queue, and
 *    with it the cache misses of touching one of N sessions per op.
 *  - scheduler only (white box, runtime/sched_core.h): N entities queued in a
 *    scheduler of their own; one thread loops pick -> charge (a scripted
 *    100 ns visit) -> re-queue. ns per loop is the calendar's cost alone,
 *    entities in a flat array, no session or ring memory. It needs the
 *    internal symbols, which only a static libaccel provides: they are
 *    weak references, and the part is skipped in a shared build.
 * Why quantum_ns defaults to 4096 here: the deadline bucket is quantum/256
 * and a bucket is a LIFO, so with the runtime's default (2 ms quantum, 4 us
 * buckets) an empty-op visit (~75 ns, 15 virtual ns at weight 5) re-queues
 * its session on top of the bucket it came from, and a worker runs the same
 * session ~250 times in a row: the "switch" column then shows < 1% and the
 * N sessions' memory is never touched cold. With 16 ns buckets a worker
 * changes session on nearly every op, as it does with real (us..ms) ops
 * under the default quantum. --quantum-ns 0 shows the other case.
 * The "ops/weight" spread is of ops, not of charged service: on a loaded
 * machine a visit preempted by the OS is charged its preemption (ms, vs
 * ~75 ns visits), so its session runs fewer ops for the same service.
 *
 * Repetitions interleave the session counts (16 1k 100k, 1k 100k 16, ...;
 * the sessions stay open between repetitions); medians are reported, and
 * ratios against N = 16 measured in the same run.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#include "sched_core.h"

#pragma weak accel__sched_create
#pragma weak accel__sched_destroy
#pragma weak accel__sched_entity_init
#pragma weak accel__sched_enqueue
#pragma weak accel__sched_pick
#pragma weak accel__sched_charge

#define MAXN 16

static struct {
    bench_list counts;
    uint64_t depth, workers, seed, loops, quantum_ns;
    double secs;
    int reps;
    bool smoke, equal, random_w;
    const char *json;
} opt = {.counts = {3, {16, 1000, 100000}}, .depth = 4, .workers = 1, .seed = 42,
         .loops = 2000000, .secs = 0.3, .reps = 5, .quantum_ns = 4096, .equal = true};

/* --------------------------------------------------- runtime measurement */

/* Ops done, one padded counter per worker thread (single writer each). */
typedef struct counter {
    _Alignas(64) _Atomic uint64_t v;
    _Atomic uint64_t switches; /* ops of another session than the last */
    void *last;
} counter;
static counter counters[64];
static _Atomic unsigned ncounters;
static _Thread_local counter *my_counter;
static _Atomic int stop;

typedef struct psess {
    accel_session *s;
} psess;

static int op_count(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    counter *c = my_counter;
    if (!c) {
        unsigned i = atomic_fetch_add_explicit(&ncounters, 1, memory_order_relaxed);
        c = my_counter = &counters[i % 64];
    }
    /* relaxed: a count read approximately at the window's edges. Threads
     * beyond 64 would share a counter: a fetch_add keeps that exact. */
    atomic_fetch_add_explicit(&c->v, 1, memory_order_relaxed);
    if (c->last != arg) {
        c->last = arg;
        atomic_fetch_add_explicit(&c->switches, 1, memory_order_relaxed);
    }
    return 0;
}

static void op_again(void *arg, int status)
{
    psess *p = arg;
    if (status == 0 && !atomic_load_explicit(&stop, memory_order_relaxed)) {
        accel_op op = {op_count, op_again, p};
        (void)accel_submit(p->s, &op, ACCEL_NO_WAIT);
    }
}

static uint64_t ops_done(uint64_t *switches)
{
    uint64_t t = 0, sw = 0;
    for (unsigned i = 0; i < 64; i++) {
        t += atomic_load_explicit(&counters[i].v, memory_order_relaxed);
        sw += atomic_load_explicit(&counters[i].switches, memory_order_relaxed);
    }
    *switches = sw;
    return t;
}

typedef struct pset {
    uint64_t n;
    accel_runtime *rt;
    psess *ss;
} pset;

static int pset_open(pset *p, uint64_t n, bench_rng *rng)
{
    accel_runtime_config rc = {.workers = (unsigned)opt.workers, .quantum_ops = 1,
                               .quantum_ns = opt.quantum_ns};
    if (accel_runtime_create(&rc, &p->rt) != ACCEL_OK)
        return -1;
    p->n = n;
    p->ss = calloc(n, sizeof *p->ss);
    if (!p->ss)
        return -1;
    for (uint64_t i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "p%llu", (unsigned long long)i);
        accel_session_config c = {
            .id = id, .backend = ACCEL_BACKEND_CPU, .queue_depth = (uint32_t)opt.depth,
            .priority = opt.equal ? 5 : (uint32_t)bench_rng_range(rng, 1, 100)};
        int st = accel_session_open(p->rt, &c, &p->ss[i].s);
        if (st != ACCEL_OK) {
            fprintf(stderr, "open %llu: %s\n", (unsigned long long)i, accel_strerror(st));
            return -1;
        }
    }
    return 0;
}

static void pset_close(pset *p)
{
    for (uint64_t i = 0; i < p->n; i++) {
        accel_session_close(p->ss[i].s, ACCEL_CLOSE_CANCEL);
        accel_session_release(p->ss[i].s);
    }
    accel_runtime_destroy(p->rt);
    free(p->ss);
}

/* One window: prime every session with depth ops, warm up, count, drain. */
static double pset_run(pset *p, double *switch_frac)
{
    atomic_store(&stop, 0);
    for (uint64_t k = 0; k < opt.depth; k++)
        for (uint64_t i = 0; i < p->n; i++) {
            accel_op op = {op_count, op_again, &p->ss[i]};
            (void)accel_submit(p->ss[i].s, &op, ACCEL_NO_WAIT);
        }
    bench_sleep_ns((uint64_t)(opt.secs * 0.2e9));
    uint64_t s0, s1, c0 = ops_done(&s0), t0 = bench_now_ns();
    bench_sleep_ns((uint64_t)(opt.secs * 1e9));
    uint64_t c1 = ops_done(&s1), t1 = bench_now_ns();
    *switch_frac = (double)(s1 - s0) / (double)(c1 - c0 ? c1 - c0 : 1);
    atomic_store(&stop, 1);
    for (uint64_t i = 0; i < p->n; i++)
        accel_session_sync(p->ss[i].s, ACCEL_FOREVER);
    /* Wall ns per op and worker: with W workers each op took W x this of
     * one worker's time, so report per worker-op. */
    return (double)(t1 - t0) * (double)opt.workers / (double)(c1 - c0 ? c1 - c0 : 1);
}

/* ------------------------------------------- scheduler-only measurement */

static double sched_only(uint64_t n, uint64_t seed, double *switch_frac)
{
    accel__sched_config cfg = {.workers = 1, .quantum_ops = 32,
                               .quantum_ns = opt.quantum_ns ? opt.quantum_ns : 2000000,
                               .max_entities = (uint32_t)n + 64};
    accel__sched *s;
    if (accel__sched_create(&cfg, &s) != ACCEL_OK)
        return -1;
    accel__sched_entity *e = calloc(n, sizeof *e);
    if (!e) {
        accel__sched_destroy(s);
        return -1;
    }
    bench_rng rng;
    bench_rng_seed(&rng, seed, n);
    for (uint64_t i = 0; i < n; i++) {
        accel__sched_entity_init(s, &e[i],
                                 opt.equal ? 5 : (uint32_t)bench_rng_range(&rng, 1, 100), &e[i]);
        accel__sched_enqueue(s, &e[i], true);
    }
    uint64_t warm = opt.loops / 5, sum = 0, sw = 0;
    uint64_t t0 = 0;
    accel__sched_entity *last = NULL;
    for (uint64_t i = 0; i < warm + opt.loops; i++) {
        if (i == warm)
            t0 = bench_now_ns();
        accel__sched_entity *x = accel__sched_pick(s, 0);
        if (!x)
            abort(); /* all n are queued whenever we pick */
        sum += (uintptr_t)x->owner;
        sw += x != last;
        last = x;
        accel__sched_charge(s, x, 100, 0, 1);
        accel__sched_enqueue(s, x, false);
    }
    double ns = (double)(bench_now_ns() - t0) / (double)opt.loops;
    BENCH_KEEP(sum);
    *switch_frac = (double)sw / (double)(warm + opt.loops);
    accel__sched_destroy(s);
    free(e);
    return ns;
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    bench_opt opts[] = {
        {"sessions", BENCH_OPT_LIST, &opt.counts, "runnable session counts (the first is the base)"},
        {"depth", BENCH_OPT_U64, &opt.depth, "queue depth = ops kept queued per session"},
        {"workers", BENCH_OPT_U64, &opt.workers, "worker threads of the runtime measurement"},
        {"seconds", BENCH_OPT_DOUBLE, &opt.secs, "measured window per count per repetition"},
        {"loops", BENCH_OPT_U64, &opt.loops, "pick/charge/re-queue loops (scheduler only)"},
        {"quantum-ns", BENCH_OPT_U64, &opt.quantum_ns,
         "runtime quantum_ns (sets the deadline bucket, quantum/256; 0: default 2 ms)"},
        {"reps", BENCH_OPT_INT, &opt.reps, "repetitions, counts interleaved (medians)"},
        {"seed", BENCH_OPT_U64, &opt.seed, "seed of the session weights"},
        {"random-weights", BENCH_OPT_FLAG, &opt.random_w, "weights random 1..100 (default: all 5)"},
        {"json", BENCH_OPT_STR, &opt.json, "also write RESULT objects to this file"},
        {"smoke", BENCH_OPT_FLAG, &opt.smoke, "a ~1-2 s run for CI"},
    };
    int prc = bench_opts_parse(argc, argv,
                               "usage: accel_bench_pick_scale [options]\n"
                               "Per-op scheduling overhead with 16 .. 100k runnable sessions.",
                               opts, BENCH_COUNTOF(opts));
    if (prc)
        return prc < 0 ? 2 : 0;
    if (opt.smoke) {
        bench_list_parse(&opt.counts, "16,1000,10000");
        opt.secs = 0.05;
        opt.loops = 200000;
        opt.reps = 3;
    }
    if (opt.reps < 1 || opt.reps > 64 || opt.counts.n < 1 || opt.counts.n > MAXN ||
        opt.depth < 1 || opt.workers < 1 || opt.secs <= 0)
        return 2;
    if (opt.random_w)
        opt.equal = false;
    if (opt.json && bench_result_json_open(opt.json) != 0)
        return 2;
    bench_banner("pick_scale", opt.seed);
    bool white = accel__sched_create && accel__sched_pick;
    size_t nc = opt.counts.n;
    printf("runtime: %llu worker(s), quantum_ops 1, quantum_ns %llu, depth %llu, %s weights; "
           "%.2f s x %d reps\n",
           (unsigned long long)opt.workers, (unsigned long long)opt.quantum_ns,
           (unsigned long long)opt.depth,
           opt.equal ? "equal" : "random 1..100", opt.secs, opt.reps);

    pset P[MAXN];
    bench_rng rng;
    bench_rng_seed(&rng, opt.seed, 0);
    for (size_t c = 0; c < nc; c++) {
        uint64_t t0 = bench_now_ns();
        if (pset_open(&P[c], opt.counts.v[c], &rng) != 0)
            return 1;
        printf("  opened %llu sessions in %.0f ms\n", (unsigned long long)opt.counts.v[c],
               (double)(bench_now_ns() - t0) / 1e6);
    }
    static double rt_ns[MAXN][64], sc_ns[MAXN][64], sw[MAXN][64], ssw[MAXN][64];
    for (int r = 0; r < opt.reps; r++)
        for (size_t k = 0; k < nc; k++) {
            size_t c = (k + (size_t)r) % nc; /* rotate the order */
            rt_ns[c][r] = pset_run(&P[c], &sw[c][r]);
            sc_ns[c][r] =
                white ? sched_only(opt.counts.v[c], opt.seed + (uint64_t)r, &ssw[c][r]) : 0;
        }
    /* The runtime windows must have cycled through all N sessions (not a
     * hot few): every session's visits, per unit of weight, against the
     * mean, over the whole run. */
    double cover[MAXN], spread_lo[MAXN], spread_hi[MAXN];
    for (size_t c = 0; c < nc; c++) {
        double sum = 0, lo = 1e300, hi = 0;
        uint64_t seen = 0;
        double *x = calloc(P[c].n, sizeof *x);
        for (uint64_t i = 0; i < P[c].n; i++) {
            accel_session_stats st;
            accel_session_get_stats(P[c].ss[i].s, &st);
            x[i] = (double)st.dispatched / (double)(st.priority ? st.priority : 1);
            if (getenv("PICK_SCALE_DEBUG") && (P[c].n <= 16 || st.dispatched > 20000 || st.dispatched < 200))
                printf("  s%llu w %u ops %llu service %.2f ms visits %llu vtime %llu lag %lld\n",
                       (unsigned long long)i, st.priority, (unsigned long long)st.dispatched,
                       (double)st.service_ns / 1e6, (unsigned long long)st.visits,
                       (unsigned long long)st.vtime_ns, (long long)st.lag_ns);
            seen += st.dispatched > 0;
            sum += x[i];
        }
        double mean = sum / (double)P[c].n;
        for (uint64_t i = 0; i < P[c].n; i++) {
            lo = x[i] < lo ? x[i] : lo;
            hi = x[i] > hi ? x[i] : hi;
        }
        if (getenv("PICK_SCALE_DEBUG")) {
            bench_sort_f64(x, P[c].n);
            printf("  N %llu ops/weight: min %.1f p1 %.1f p50 %.1f p99 %.1f max %.1f\n",
                   (unsigned long long)P[c].n, x[0], x[P[c].n / 100], x[P[c].n / 2],
                   x[P[c].n * 99 / 100], x[P[c].n - 1]);
        }
        cover[c] = (double)seen / (double)P[c].n;
        spread_lo[c] = mean > 0 ? lo / mean : 0;
        spread_hi[c] = mean > 0 ? hi / mean : 0;
        free(x);
        pset_close(&P[c]);
    }

    printf("\n%8s | %9s %8s %7s %7s %12s | %9s %8s %7s\n", "", "runtime", "", "", "",
           "ops/weight", "sched", "", "");
    printf("%8s | %9s %8s %7s %7s %12s | %9s %8s %7s\n", "sessions", "ns/op", "vs first",
           "switch", "ran", "min..max", "ns/op", "vs first", "switch");
    double rt_med[MAXN], sc_med[MAXN];
    for (size_t c = 0; c < nc; c++) {
        rt_med[c] = bench_median_f64(rt_ns[c], (size_t)opt.reps);
        sc_med[c] = white ? bench_median_f64(sc_ns[c], (size_t)opt.reps) : 0;
        double swm = bench_median_f64(sw[c], (size_t)opt.reps);
        double sswm = white ? bench_median_f64(ssw[c], (size_t)opt.reps) : 0;
        printf("%8llu | %9.1f %7.3fx %6.1f%% %6.1f%% %5.2f..%-5.2f |",
               (unsigned long long)opt.counts.v[c], rt_med[c], rt_med[c] / rt_med[0],
               100 * swm, 100 * cover[c], spread_lo[c], spread_hi[c]);
        if (white)
            printf(" %9.1f %7.3fx %6.1f%%\n", sc_med[c], sc_med[c] / sc_med[0], 100 * sswm);
        else
            printf(" (shared build: skipped)\n");
        bench_result res;
        bench_result_begin(&res, "pick_scale", "per_op");
        bench_result_u64(&res, "sessions", opt.counts.v[c]);
        bench_result_u64(&res, "workers", opt.workers);
        bench_result_u64(&res, "depth", opt.depth);
        bench_result_u64(&res, "reps", (uint64_t)opt.reps);
        bench_result_f64(&res, "runtime_ns_per_op", rt_med[c]);
        bench_result_f64(&res, "runtime_ratio", rt_med[c] / rt_med[0]);
        bench_result_f64(&res, "sessions_run_frac", cover[c]);
        bench_result_f64(&res, "switch_frac", swm);
        bench_result_f64(&res, "ops_per_weight_min_rel", spread_lo[c]);
        bench_result_f64(&res, "ops_per_weight_max_rel", spread_hi[c]);
        if (white) {
            bench_result_f64(&res, "sched_ns_per_op", sc_med[c]);
            bench_result_f64(&res, "sched_ratio", sc_med[c] / sc_med[0]);
            bench_result_f64(&res, "sched_switch_frac", sswm);
        }
        bench_result_emit(&res);
    }

    printf("\n# Targets (bench/README.md)\n");
    for (size_t c = 1; c < nc; c++) {
        char what[96];
        snprintf(what, sizeof what, "runtime per-op overhead, %llu / %llu sessions",
                 (unsigned long long)opt.counts.v[c], (unsigned long long)opt.counts.v[0]);
        if (opt.counts.v[c] >= 100000)
            bench_target("pick_scale", what, rt_med[c] / rt_med[0], "<=", 1.25, "x");
        else
            printf("%s: %.3fx (no target)\n", what, rt_med[c] / rt_med[0]);
        if (white) {
            snprintf(what, sizeof what, "scheduler-only pick cost, %llu / %llu sessions",
                     (unsigned long long)opt.counts.v[c], (unsigned long long)opt.counts.v[0]);
            if (opt.counts.v[c] >= 100000)
                bench_target("pick_scale", what, sc_med[c] / sc_med[0], "<=", 1.25, "x");
            else
                printf("%s: %.3fx (no target)\n", what, sc_med[c] / sc_med[0]);
        }
    }
    bench_result_json_close();
    return 0;
}
