/*
 * bench_sessions_scale: what many sessions cost.
 *   - open time and close time for n sessions (queue depth --depth);
 *   - memory per idle session: RSS delta / n (and beyond its ring: the
 *     ring is accel__ring_bytes(depth), a 32-byte slot and an 8-byte
 *     deadline entry per position, runtime/ring.h);
 *   - ops/s and ns/op of empty ops with every session active: P producers
 *     round-robin over all n sessions (per-op overhead vs n = 16);
 *   - accel_session_lookup ns/op while another thread opens and closes
 *     sessions.
 */
#include "bench.h"
#include "ring.h" /* runtime/: the ring size, for "beyond its ring" */

#include <stdlib.h>
#include <string.h>


static struct {
    bench_list counts;
    uint64_t depth, producers, workers, ops, lookups, seed;
    int reps;
    bool smoke;
    const char *json;
} opt = {.counts = {4, {16, 1000, 10000, 100000}}, .depth = 16, .producers = 2, .workers = 2,
         .ops = 400000, .lookups = 200000, .seed = 42, .reps = 5};

static int op_empty(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    return 0;
}

typedef struct prod {
    accel_session **ss;
    uint64_t n, first, stride, ops;
    pthread_t th;
} prod;

static void *producer(void *arg)
{
    prod *p = arg;
    accel_op op = {op_empty, NULL, NULL};
    uint64_t k = p->first;
    for (uint64_t i = 0; i < p->ops; i++) {
        accel_submit(p->ss[k], &op, ACCEL_FOREVER);
        k += p->stride; /* producer i takes sessions i, i+P, i+2P, ... */
        if (k >= p->n)
            k = p->first;
    }
    return NULL;
}

static double run_active(accel_session **ss, uint64_t n)
{
    prod ps[16];
    unsigned np = opt.producers > 16 ? 16 : (unsigned)opt.producers;
    uint64_t t0 = bench_now_ns();
    for (unsigned i = 0; i < np; i++) {
        ps[i] = (prod){ss, n, i % n, np, opt.ops / np, 0};
        pthread_create(&ps[i].th, NULL, producer, &ps[i]);
    }
    for (unsigned i = 0; i < np; i++)
        pthread_join(ps[i].th, NULL);
    for (uint64_t i = 0; i < n; i++)
        accel_session_sync(ss[i], ACCEL_FOREVER);
    return (double)(bench_now_ns() - t0) / (double)(opt.ops / np * np);
}

typedef struct churn {
    accel_runtime *rt;
    _Atomic bool stop;
    uint64_t cycles;
} churn;

static void *churner(void *arg)
{
    churn *c = arg;
    uint64_t i = 0;
    while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
        char id[48];
        snprintf(id, sizeof id, "churn-%llu", (unsigned long long)(i++ % 64));
        accel_session_config sc = {.id = id, .backend = ACCEL_BACKEND_CPU,
                                   .queue_depth = (uint32_t)opt.depth};
        accel_session *s;
        if (accel_session_open(c->rt, &sc, &s) == ACCEL_OK) {
            accel_session_close(s, ACCEL_CLOSE_DRAIN);
            accel_session_release(s);
        }
    }
    c->cycles = i;
    return NULL;
}

int main(int argc, char **argv)
{
    bench_opt opts[] = {
        {"sessions", BENCH_OPT_LIST, &opt.counts, "session counts"},
        {"depth", BENCH_OPT_U64, &opt.depth, "queue depth of each session"},
        {"producers", BENCH_OPT_U64, &opt.producers, "producer threads (active phase)"},
        {"workers", BENCH_OPT_U64, &opt.workers, "worker threads"},
        {"ops", BENCH_OPT_U64, &opt.ops, "empty ops per repetition (active phase)"},
        {"lookups", BENCH_OPT_U64, &opt.lookups, "lookups per repetition"},
        {"reps", BENCH_OPT_INT, &opt.reps, "repetitions (median reported)"},
        {"seed", BENCH_OPT_U64, &opt.seed, "seed of the lookup ids"},
        {"json", BENCH_OPT_STR, &opt.json, "also write RESULT objects to this file"},
        {"smoke", BENCH_OPT_FLAG, &opt.smoke, "a ~1-2 s run for CI"},
    };
    int prc = bench_opts_parse(argc, argv,
                               "usage: accel_bench_sessions_scale [options]\n"
                               "Open/close time, memory, ops/s and lookup cost vs session count.",
                               opts, BENCH_COUNTOF(opts));
    if (prc)
        return prc < 0 ? 2 : 0;
    if (opt.smoke) {
        bench_list_parse(&opt.counts, "16,1000");
        opt.ops = 50000;
        opt.lookups = 20000;
        opt.reps = 3;
    }
    if (opt.reps < 1 || opt.producers < 1)
        return 2;
    if (opt.json && bench_result_json_open(opt.json) != 0)
        return 2;
    bench_banner("sessions_scale", opt.seed);
    printf("%8s %10s %10s %10s %12s %10s %10s %12s\n", "sessions", "open ms", "close ms",
           "B/session", "B beyond ring", "ns/op", "Mops/s", "lookup ns/op");
    double ns16 = 0, nsmax = 0, beyond_max = 0, lookup_max = 0;
    uint64_t nmax = 0;
    for (size_t ci = 0; ci < opt.counts.n; ci++) {
        uint64_t n = opt.counts.v[ci];
        if (n == 0)
            continue;
        accel_runtime *rt;
        accel_runtime_config rc = {.workers = (unsigned)opt.workers};
        if (accel_runtime_create(&rc, &rt) != ACCEL_OK)
            return 1;
        accel_session **ss = calloc(n, sizeof *ss);
        char (*ids)[24] = calloc(n, sizeof *ids);
        uint64_t rss0 = bench_rss_bytes();
        uint64_t t0 = bench_now_ns();
        for (uint64_t i = 0; i < n; i++) {
            snprintf(ids[i], sizeof ids[i], "s-%llu", (unsigned long long)i);
            accel_session_config sc = {.id = ids[i], .backend = ACCEL_BACKEND_CPU,
                                       .queue_depth = (uint32_t)opt.depth};
            int st = accel_session_open(rt, &sc, &ss[i]);
            if (st != ACCEL_OK) {
                fprintf(stderr, "open %llu: %s\n", (unsigned long long)i, accel_strerror(st));
                return 1;
            }
        }
        double open_ms = (double)(bench_now_ns() - t0) / 1e6;
        double per = (double)(bench_rss_bytes() - rss0) / (double)n;
        double beyond = per - (double)accel__ring_bytes((uint32_t)opt.depth);

        run_active(ss, n); /* warm-up: touches every ring */
        double *v = calloc((size_t)opt.reps, sizeof *v);
        double *lk = calloc((size_t)opt.reps, sizeof *lk);
        bench_rng rng;
        bench_rng_seed(&rng, opt.seed, n);
        for (int r = 0; r < opt.reps; r++) {
            v[r] = run_active(ss, n); /* A */
            churn ch = {.rt = rt};
            pthread_t th;
            pthread_create(&th, NULL, churner, &ch);
            uint64_t l0 = bench_now_ns();
            for (uint64_t i = 0; i < opt.lookups; i++) { /* B */
                accel_session *s;
                if (accel_session_lookup(rt, ids[bench_rng_range(&rng, 0, n - 1)], &s) ==
                    ACCEL_OK)
                    accel_session_release(s);
            }
            lk[r] = (double)(bench_now_ns() - l0) / (double)opt.lookups;
            atomic_store_explicit(&ch.stop, true, memory_order_relaxed);
            pthread_join(th, NULL);
        }
        double ns = bench_median_f64(v, (size_t)opt.reps);
        double lookup = bench_median_f64(lk, (size_t)opt.reps);
        uint64_t c0 = bench_now_ns();
        for (uint64_t i = 0; i < n; i++) {
            accel_session_close(ss[i], ACCEL_CLOSE_DRAIN);
            accel_session_release(ss[i]);
        }
        double close_ms = (double)(bench_now_ns() - c0) / 1e6;
        accel_runtime_destroy(rt);
        printf("%8llu %10.2f %10.2f %10.0f %12.0f %10.1f %10.2f %12.1f\n", (unsigned long long)n,
               open_ms, close_ms, per, beyond, ns, 1e3 / ns, lookup);
        bench_result res;
        bench_result_begin(&res, "sessions_scale", "scale");
        bench_result_u64(&res, "sessions", n);
        bench_result_u64(&res, "depth", opt.depth);
        bench_result_f64(&res, "open_ms", open_ms);
        bench_result_f64(&res, "close_ms", close_ms);
        bench_result_f64(&res, "rss_bytes_per_session", per);
        bench_result_f64(&res, "bytes_beyond_ring", beyond);
        bench_result_f64(&res, "ns_per_op", ns);
        bench_result_f64(&res, "mops", 1e3 / ns);
        bench_result_f64(&res, "lookup_ns", lookup);
        bench_result_emit(&res);
        if (n == 16)
            ns16 = ns;
        if (n >= nmax) {
            nmax = n;
            nsmax = ns;
            beyond_max = beyond;
            lookup_max = lookup;
        }
        free(v);
        free(lk);
        free(ss);
        free(ids);
    }
    printf("\n# Targets (bench/README.md)\n");
    if (ns16 > 0 && nmax > 16) {
        char what[96];
        snprintf(what, sizeof what, "per-op overhead, %llu active sessions / 16",
                 (unsigned long long)nmax);
        bench_target("sessions_scale", what, nsmax / ns16, "<=", 1.25, "x");
    }
    if (nmax) {
        bench_target("sessions_scale", "memory per session beyond its ring", beyond_max, "<=", 512,
                     "B");
        bench_target("sessions_scale", "accel_session_lookup under concurrent open/close",
                     lookup_max, "<=", 100, "ns/op");
    }
    bench_result_json_close();
    return 0;
}
