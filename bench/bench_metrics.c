/*
 * bench_metrics: what one Prometheus scrape costs
 * (accel_runtime_write_prometheus) with --sessions open sessions, each
 * having run a few ops (so every counter and wait histogram is live):
 * wall time per scrape (median, p99 over --scrapes), ns per session, the
 * text's size, and the share of one CPU that scraping every second takes.
 */
#include "bench.h"

#include <stdlib.h>

static struct {
    uint64_t sessions, scrapes, workers;
    bool smoke;
    const char *json;
} opt = {.sessions = 10000, .scrapes = 50, .workers = 2};

static int op_empty(accel_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    return 0;
}

int main(int argc, char **argv)
{
    bench_opt opts[] = {
        {"sessions", BENCH_OPT_U64, &opt.sessions, "open sessions"},
        {"scrapes", BENCH_OPT_U64, &opt.scrapes, "scrapes measured"},
        {"workers", BENCH_OPT_U64, &opt.workers, "worker threads"},
        {"smoke", BENCH_OPT_FLAG, &opt.smoke, "a short run for CI"},
        {"json", BENCH_OPT_STR, &opt.json, "also append RESULT lines to this file"},
    };
    int prc = bench_opts_parse(argc, argv,
                               "bench_metrics: the cost of a Prometheus scrape",
                               opts, sizeof(opts) / sizeof(opts[0]));
    if (prc != 0)
        return prc > 0 ? 0 : 2;
    if (opt.smoke) {
        opt.sessions = 500;
        opt.scrapes = 5;
    }
    if (opt.json && bench_result_json_open(opt.json) != 0)
        return 1;

    accel_runtime_config rc = {.workers = (unsigned)opt.workers};
    accel_runtime *rt;
    if (accel_runtime_create(&rc, &rt) != ACCEL_OK)
        return 1;
    accel_session **ss = calloc(opt.sessions, sizeof(*ss));
    if (!ss)
        return 1;
    accel_op op = {op_empty, NULL, NULL};
    for (uint64_t i = 0; i < opt.sessions; i++) {
        char id[64];
        snprintf(id, sizeof(id), "chain-%06llu", (unsigned long long)i);
        accel_session_config sc = {.id = id, .queue_depth = 64,
                                   .priority = (uint32_t)(1 + i % 100),
                                   .memory_budget = 1 << 20,
                                   .backend = ACCEL_BACKEND_CPU};
        if (accel_session_open(rt, &sc, &ss[i]) != ACCEL_OK)
            return 1;
        /* 33 ops: positions 0 and 32 are wait-sampled */
        for (int k = 0; k < 33; k++)
            accel_submit(ss[i], &op, ACCEL_FOREVER);
        accel_session_reserve(ss[i], 4096);
    }
    for (uint64_t i = 0; i < opt.sessions; i++)
        accel_session_sync(ss[i], ACCEL_FOREVER);

    size_t len = 0;
    accel_runtime_write_prometheus(rt, NULL, 0, &len);
    size_t cap = len + len / 4 + 4096;
    char *buf = malloc(cap);
    uint64_t *t = calloc(opt.scrapes, sizeof(*t));
    if (!buf || !t)
        return 1;
    uint64_t cpu0 = bench_thread_cpu_ns();
    for (uint64_t i = 0; i < opt.scrapes; i++) {
        uint64_t t0 = bench_now_ns();
        if (accel_runtime_write_prometheus(rt, buf, cap, &len) != ACCEL_OK ||
            len >= cap)
            return 1;
        t[i] = bench_now_ns() - t0;
    }
    uint64_t cpu = bench_thread_cpu_ns() - cpu0;
    bench_sort_u64(t, opt.scrapes);
    uint64_t p50 = bench_pct_u64(t, opt.scrapes, 50);
    uint64_t p99 = bench_pct_u64(t, opt.scrapes, 99);
    double cpu_per = (double)cpu / (double)opt.scrapes;
    printf("bench_metrics: %llu sessions, %llu scrapes: median %.2f ms, p99 "
           "%.2f ms, %.0f ns/session, %zu bytes (%.0f B/session); CPU per "
           "scrape %.2f ms = %.2f%% of one CPU at 1 scrape/s\n",
           (unsigned long long)opt.sessions, (unsigned long long)opt.scrapes,
           (double)p50 / 1e6, (double)p99 / 1e6,
           (double)p50 / (double)opt.sessions, len,
           (double)len / (double)opt.sessions, cpu_per / 1e6,
           cpu_per / 1e9 * 100);
    bench_result res;
    bench_result_begin(&res, "metrics", "scrape");
    bench_result_u64(&res, "sessions", opt.sessions);
    bench_result_u64(&res, "scrapes", opt.scrapes);
    bench_result_f64(&res, "p50_ms", (double)p50 / 1e6);
    bench_result_f64(&res, "p99_ms", (double)p99 / 1e6);
    bench_result_f64(&res, "ns_per_session", (double)p50 / (double)opt.sessions);
    bench_result_u64(&res, "bytes", len);
    bench_result_f64(&res, "cpu_ms_per_scrape", cpu_per / 1e6);
    bench_result_emit(&res);

    for (uint64_t i = 0; i < opt.sessions; i++)
        accel_session_release(ss[i]);
    free(ss);
    free(buf);
    free(t);
    accel_runtime_destroy(rt);
    bench_result_json_close();
    return 0;
}
