/*
 * bench_idle: the CPU an idle runtime uses (100 open sessions, nothing
 * submitted) over --seconds, from CLOCK_PROCESS_CPUTIME_ID around a sleep
 * of the main thread; and the wake-up latency of an idle worker: submit ->
 * start of one op on a runtime that has been idle for --gap-us, p50/p99.
 */
#include "bench.h"

#include <stdlib.h>

static struct {
    double seconds;
    uint64_t sessions, samples, gap_us, workers, seed;
    int reps;
    bool smoke;
    const char *json;
} opt = {.seconds = 10, .sessions = 100, .samples = 2000, .gap_us = 2000, .workers = 2,
         .seed = 42, .reps = 5};

typedef struct stamp {
    uint64_t t_submit;
    _Atomic uint64_t t_start; /* written by the op; polled by the submitter */
} stamp;

static int op_stamp(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    stamp *s = arg;
    /* [R1] release: pairs with [A1] in main (the submitter sees t_start). */
    atomic_store_explicit(&s->t_start, bench_now_ns(), memory_order_release);
    return 0;
}

int main(int argc, char **argv)
{
    bench_opt opts[] = {
        {"seconds", BENCH_OPT_DOUBLE, &opt.seconds, "idle seconds measured in total (split over --reps)"},
        {"sessions", BENCH_OPT_U64, &opt.sessions, "open sessions"},
        {"samples", BENCH_OPT_U64, &opt.samples, "wake-up samples"},
        {"gap-us", BENCH_OPT_U64, &opt.gap_us, "idle time before each wake-up sample"},
        {"workers", BENCH_OPT_U64, &opt.workers, "worker threads"},
        {"reps", BENCH_OPT_INT, &opt.reps, "repetitions of the idle measurement"},
        {"seed", BENCH_OPT_U64, &opt.seed, "seed (recorded)"},
        {"json", BENCH_OPT_STR, &opt.json, "also write RESULT objects to this file"},
        {"smoke", BENCH_OPT_FLAG, &opt.smoke, "a ~1-2 s run for CI"},
    };
    int prc = bench_opts_parse(argc, argv,
                               "usage: accel_bench_idle [options]\n"
                               "CPU used by an idle runtime, and worker wake-up latency.",
                               opts, BENCH_COUNTOF(opts));
    if (prc)
        return prc < 0 ? 2 : 0;
    if (opt.smoke) {
        opt.seconds = 0.5;
        opt.samples = 200;
        opt.reps = 1;
    }
    if (opt.reps < 1 || opt.seconds <= 0 || opt.sessions == 0)
        return 2;
    if (opt.json && bench_result_json_open(opt.json) != 0)
        return 2;
    bench_banner("idle", opt.seed);

    accel_runtime *rt;
    accel_runtime_config rc = {.workers = (unsigned)opt.workers};
    if (accel_runtime_create(&rc, &rt) != ACCEL_OK)
        return 1;
    accel_session **ss = calloc(opt.sessions, sizeof *ss);
    for (uint64_t i = 0; i < opt.sessions; i++) {
        char id[32];
        snprintf(id, sizeof id, "idle-%llu", (unsigned long long)i);
        accel_session_config sc = {.id = id, .backend = ACCEL_BACKEND_CPU, .queue_depth = 16};
        if (accel_session_open(rt, &sc, &ss[i]) != ACCEL_OK)
            return 1;
    }
    /* Warm-up: every session runs one op, then the runtime goes idle. */
    for (uint64_t i = 0; i < opt.sessions; i++) {
        stamp st = {0};
        accel_submit_wait(ss[i], op_stamp, &st, ACCEL_FOREVER);
    }
    bench_sleep_ns(100000000);

    /* 1. Idle CPU: the process's CPU time over a sleep of the main thread
     * (the main thread's own sleep costs ~nothing). Split into reps. */
    double per_rep = opt.seconds / opt.reps;
    double *cpu = calloc((size_t)opt.reps, sizeof *cpu);
    double total_cpu = 0;
    for (int r = 0; r < opt.reps; r++) {
        uint64_t c0 = bench_cpu_time_ns();
        bench_sleep_ns((uint64_t)(per_rep * 1e9));
        cpu[r] = (double)(bench_cpu_time_ns() - c0);
        total_cpu += cpu[r];
    }
    double idle_ms_per_10s = total_cpu / 1e6 * (10.0 / opt.seconds);
    printf("idle: %llu sessions, %.1f s: %.3f ms CPU in total (%.3f ms per 10 s)\n",
           (unsigned long long)opt.sessions, opt.seconds, total_cpu / 1e6, idle_ms_per_10s);
    bench_result res;
    bench_result_begin(&res, "idle", "idle_cpu");
    bench_result_u64(&res, "sessions", opt.sessions);
    bench_result_u64(&res, "workers", opt.workers);
    bench_result_f64(&res, "seconds", opt.seconds);
    bench_result_f64(&res, "cpu_ms", total_cpu / 1e6);
    bench_result_f64(&res, "cpu_ms_per_10s", idle_ms_per_10s);
    bench_result_f64(&res, "cpu_ms_per_rep_median", bench_median_f64(cpu, (size_t)opt.reps) / 1e6);
    bench_result_emit(&res);

    /* 2. Wake-up: one op on an idle runtime; the submitter sleeps gap_us
     * between samples so the workers park again. */
    uint64_t *lat = calloc(opt.samples, sizeof *lat);
    bench_rng rng;
    bench_rng_seed(&rng, opt.seed, 0);
    for (uint64_t i = 0; i < opt.samples; i++) {
        bench_sleep_ns(opt.gap_us * 1000);
        stamp st = {0};
        accel_op op = {op_stamp, NULL, &st};
        accel_session *s = ss[bench_rng_range(&rng, 0, opt.sessions - 1)];
        st.t_submit = bench_now_ns();
        if (accel_submit(s, &op, ACCEL_FOREVER) != ACCEL_OK)
            return 1;
        /* Block, do not spin: on a 2-CPU machine a spinning submitter
         * holds the CPU the woken worker may be placed on, and the
         * worker then waits for the spinner's time slice (ms). sync
         * also keeps st (on this stack) alive until the op is done. */
        accel_session_sync(s, ACCEL_FOREVER);
        /* [A1] acquire: pairs with [R1] in op_stamp. */
        uint64_t t = atomic_load_explicit(&st.t_start, memory_order_acquire);
        lat[i] = t - st.t_submit;
    }
    bench_sort_u64(lat, opt.samples);
    uint64_t p50 = bench_pct_u64(lat, opt.samples, 50), p99 = bench_pct_u64(lat, opt.samples, 99);
    printf("wake-up (submit -> start on an idle runtime, %llu samples, %llu us apart): "
           "p50 %.1f us, p99 %.1f us, max %.1f us\n",
           (unsigned long long)opt.samples, (unsigned long long)opt.gap_us, (double)p50 / 1e3,
           (double)p99 / 1e3, (double)lat[opt.samples - 1] / 1e3);
    bench_result_begin(&res, "idle", "wakeup");
    bench_result_u64(&res, "samples", opt.samples);
    bench_result_u64(&res, "gap_us", opt.gap_us);
    bench_result_f64(&res, "p50_us", (double)p50 / 1e3);
    bench_result_f64(&res, "p99_us", (double)p99 / 1e3);
    bench_result_f64(&res, "max_us", (double)lat[opt.samples - 1] / 1e3);
    bench_result_emit(&res);

    printf("\n# Targets (bench/README.md)\n");
    bench_target("idle", "idle runtime, 100 sessions: CPU per 10 s", idle_ms_per_10s, "<=", 1.0,
                 "ms");
    bench_target("idle", "idle worker wake-up, submit -> start p50", (double)p50 / 1e3, "<=", 20,
                 "us");
    for (uint64_t i = 0; i < opt.sessions; i++)
        accel_session_release(ss[i]);
    accel_runtime_destroy(rt);
    bench_result_json_close();
    free(ss);
    free(lat);
    free(cpu);
    return 0;
}
