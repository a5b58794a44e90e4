/* accel-nodesim: flags, the three phases, and the side-by-side summary. */
#include "nodesim.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct {
    double duration, load;
    uint64_t workers, seed, queue_depth, metrics_port;
    const char *chains, *format, *json, *plot;
    bool smoke;
} opt = {.duration = 6, .load = 0.9, .workers = 2, .seed = 42, .queue_depth = 256,
         .format = "auto"};

static ns_chain_cfg chains[NS_MAX_CHAINS];
static size_t nchains;

static uint64_t role_pct(const ns_run *r, const char *role, double p)
{
    bench_hist *h = calloc(1, sizeof *h);
    if (!h)
        return 0;
    for (unsigned i = 0; i < r->nchains; i++)
        if (strcmp(r->chain[i].cfg->role, role) == 0)
            bench_hist_merge(h, &r->chain[i].latency);
    uint64_t v = bench_hist_pct(h, p);
    free(h);
    return v;
}

static double drop_pct(const ns_run *r)
{
    uint64_t a = 0, d = 0;
    for (unsigned i = 0; i < r->nchains; i++) {
        a += atomic_load_explicit(&r->chain[i].arrived, memory_order_relaxed);
        d += atomic_load_explicit(&r->chain[i].dropped, memory_order_relaxed);
    }
    return a ? 100.0 * (double)d / (double)a : 0;
}

static void emit_results(const ns_run *r)
{
    bench_result res;
    double secs = (double)r->duration_ns / 1e9;
    bench_result_begin(&res, "nodesim", "summary");
    bench_result_str(&res, "system", ns_system_name[r->sys]);
    bench_result_f64(&res, "load", r->load);
    bench_result_u64(&res, "workers", r->workers);
    bench_result_f64(&res, "duration_s", secs);
    bench_result_f64(&res, "dex_p99_us", (double)role_pct(r, "dex", 99) / 1e3);
    bench_result_f64(&res, "consensus_p99_us", (double)role_pct(r, "consensus", 99) / 1e3);
    bench_result_f64(&res, "ops_per_s", (double)ns_total_completed(r) / secs);
    bench_result_f64(&res, "share_error_pts", ns_share_error(r));
    bench_result_f64(&res, "dropped_pct", drop_pct(r));
    bench_result_emit(&res);
    for (unsigned i = 0; i < r->nchains; i++) {
        const ns_chain_run *cr = &r->chain[i];
        bench_result_begin(&res, "nodesim", cr->cfg->name);
        bench_result_str(&res, "system", ns_system_name[r->sys]);
        bench_result_str(&res, "role", cr->cfg->role);
        bench_result_u64(&res, "priority", cr->cfg->priority);
        bench_result_u64(&res, "completed",
                         atomic_load_explicit(&cr->completed, memory_order_relaxed));
        bench_result_u64(&res, "dropped", atomic_load_explicit(&cr->dropped, memory_order_relaxed));
        bench_result_f64(&res, "share_pct", 100 * ns_share(r, i));
        bench_result_f64(&res, "ideal_pct", 100 * r->ideal[i]);
        bench_result_f64(&res, "wait_p50_us", (double)bench_hist_pct(&cr->wait, 50) / 1e3);
        bench_result_f64(&res, "wait_p99_us", (double)bench_hist_pct(&cr->wait, 99) / 1e3);
        bench_result_f64(&res, "latency_p50_us", (double)bench_hist_pct(&cr->latency, 50) / 1e3);
        bench_result_f64(&res, "latency_p99_us", (double)bench_hist_pct(&cr->latency, 99) / 1e3);
        bench_result_emit(&res);
    }
}

static ns_run *run_system(enum ns_system sys, int mode)
{
    ns_run *r = calloc(1, sizeof *r);
    if (!r)
        exit(1);
    r->sys = sys;
    r->workers = (unsigned)opt.workers;
    r->load = opt.load;
    r->seed = opt.seed;
    r->duration_ns = (uint64_t)(opt.duration * 1e9);
    r->queue_limit = opt.queue_depth;
    if (mode != 2)
        printf("\n== %s ==\n", ns_system_desc[sys]);
    fflush(stdout);
    if (ns_run_start(r, chains, nchains) != 0)
        exit(1);
    uint64_t tick = mode == 0 ? 500000000u : 1000000000u;
    bool first = true;
    ns_live_clear();
    for (;;) {
        uint64_t now = bench_now_ns();
        if (now >= r->t_end)
            break;
        uint64_t next = now + tick < r->t_end ? now + tick : r->t_end;
        bench_sleep_ns(next - now);
        if (mode != 2) {
            ns_live_print(r, mode == 0, first, bench_now_ns());
            first = false;
        }
    }
    ns_run_stop(r);
    emit_results(r);
    return r;
}

static void fmt_lat(char *b, size_t n, uint64_t ns)
{
    if (ns >= 1000000)
        snprintf(b, n, "%.1f ms", (double)ns / 1e6);
    else
        snprintf(b, n, "%.0f us", (double)ns / 1e3);
}

static void summary(ns_run *const *runs, size_t n)
{
    printf("\n== Same workload, same run: load %.2f of %u workers, %zu chains, %.1f s each ==\n",
           opt.load, (unsigned)opt.workers, nchains, opt.duration);
    printf("%-16s %14s %16s %12s %12s %9s\n", "system", "DEX p99", "consensus p99", "ops/s",
           "share error", "dropped");
    for (size_t s = 0; s < n; s++) {
        char dex[32], cons[32];
        fmt_lat(dex, sizeof dex, role_pct(runs[s], "dex", 99));
        fmt_lat(cons, sizeof cons, role_pct(runs[s], "consensus", 99));
        double secs = (double)runs[s]->duration_ns / 1e9;
        printf("%-16s %14s %16s %12.0f %10.1f pts %8.1f%%\n", ns_system_name[runs[s]->sys], dex,
               cons, (double)ns_total_completed(runs[s]) / secs, ns_share_error(runs[s]),
               drop_pct(runs[s]));
    }
    printf("(latency = submit -> finish, from each op's scheduled arrival; share error = half the "
           "L1 distance\n between each chain's share of service and its weighted max-min fair "
           "share, in percentage points)\n");
    printf("\nPer-chain p99 latency (submit -> finish):\n%-16s %-8s", "chain", "priority");
    for (size_t s = 0; s < n; s++)
        printf(" %14s", ns_system_name[runs[s]->sys]);
    printf("\n");
    for (size_t i = 0; i < nchains; i++) {
        printf("%-16s %-8s", chains[i].name, ns_priority_name(chains[i].priority));
        for (size_t s = 0; s < n; s++) {
            char b[32];
            fmt_lat(b, sizeof b, bench_hist_pct(&runs[s]->chain[i].latency, 99));
            printf(" %14s", b);
        }
        printf("\n");
    }
}

int main(int argc, char **argv)
{
    bench_opt opts[] = {
        {"duration", BENCH_OPT_DOUBLE, &opt.duration, "seconds per system (3 systems run)"},
        {"load", BENCH_OPT_DOUBLE, &opt.load, "offered load relative to the workers' capacity"},
        {"workers", BENCH_OPT_U64, &opt.workers, "worker threads (accel and the pool)"},
        {"seed", BENCH_OPT_U64, &opt.seed, "seed of the arrival and cost streams"},
        {"queue-depth", BENCH_OPT_U64, &opt.queue_depth, "ops admitted per chain before drops"},
        {"chains", BENCH_OPT_STR, &opt.chains, "chain-set file (see bench/chains/*.conf)"},
        {"format", BENCH_OPT_STR, &opt.format,
         "auto | table (live, in place) | plain (lines) | quiet (summary only)"},
        {"json", BENCH_OPT_STR, &opt.json, "write every RESULT object to this file"},
        {"plot", BENCH_OPT_STR, &opt.plot, "write latency-CDF and share charts (gnuplot) here"},
        {"smoke", BENCH_OPT_FLAG, &opt.smoke, "a ~2 s run for CI"},
        {"metrics-port", BENCH_OPT_U64, &opt.metrics_port,
         "serve Prometheus metrics on 127.0.0.1:PORT while accel runs (0: off)"},
    };
    int prc = bench_opts_parse(
        argc, argv,
        "usage: accel-nodesim [options]\n"
        "A node hosting 17 chains (sessions with real-node priorities) under an open-loop\n"
        "load, through accel and two baselines in the same run. Op costs are synthetic,\n"
        "calibrated CPU work standing in for DEX matching, FHE, Groth16, ECDSA, hashing.",
        opts, BENCH_COUNTOF(opts));
    if (prc)
        return prc < 0 ? 2 : 0;
    if (opt.smoke)
        opt.duration = 0.6;
    if (opt.duration <= 0 || opt.load <= 0 || opt.workers < 1 || opt.workers > 1024 ||
        opt.queue_depth < 1 || opt.queue_depth > ACCEL_QUEUE_DEPTH_MAX) {
        fprintf(stderr, "accel-nodesim: bad --duration/--load/--workers/--queue-depth\n");
        return 2;
    }
    if (opt.metrics_port &&
        (opt.metrics_port > 65535 || ns_metrics_serve((unsigned)opt.metrics_port) != 0))
        return 2;
    int mode; /* 0 live table, 1 plain lines, 2 quiet */
    if (strcmp(opt.format, "auto") == 0)
        mode = isatty(STDOUT_FILENO) ? 0 : 1;
    else if (strcmp(opt.format, "table") == 0)
        mode = 0;
    else if (strcmp(opt.format, "plain") == 0)
        mode = 1;
    else if (strcmp(opt.format, "quiet") == 0)
        mode = 2;
    else {
        fprintf(stderr, "accel-nodesim: --format auto|table|plain|quiet\n");
        return 2;
    }
    if (opt.chains) {
        int n = ns_load_chains(opt.chains, chains, NS_MAX_CHAINS);
        if (n < 0)
            return 2;
        nchains = (size_t)n;
    } else {
        nchains = ns_default_chains(chains, NS_MAX_CHAINS);
    }
    if (opt.json && bench_result_json_open(opt.json) != 0) {
        fprintf(stderr, "accel-nodesim: cannot write %s\n", opt.json);
        return 2;
    }
    bench_banner("nodesim", opt.seed);
    printf("# %zu chains in one process, load %.2f of %u workers' capacity, %.1f s per system.\n"
           "# Op costs are SYNTHETIC: calibrated CPU spin loops standing in for the named work\n"
           "# (DEX matching 50-200 us on a 1 ms block cadence, FHE 5-20 ms, Groth16 2-5 ms,\n"
           "# ECDSA batch ~0.5 ms, hashing 20-50 us), not real cryptography.\n",
           nchains, opt.load, (unsigned)opt.workers, opt.duration);

    ns_run *runs[NS_NSYS];
    for (int s = 0; s < NS_NSYS; s++)
        runs[s] = run_system((enum ns_system)s, mode);
    summary(runs, NS_NSYS);
    if (opt.plot)
        ns_plot(opt.plot, runs, NS_NSYS);
    bench_result_json_close();
    for (int s = 0; s < NS_NSYS; s++)
        free(runs[s]);
    return 0;
}
