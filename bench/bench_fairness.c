/*
 * bench_fairness: shares of backlogged sessions against the weighted
 * max-min fair share (a session's serial ops use at most one worker).
 *   (a) weights 1/5/10/100, equal-cost ops
 *   (b) the same, the weight-1 session's ops 10x longer
 *   (c) 64 sessions with random weights (fixed seed)
 * for 1 and 2 workers. Each session is kept backlogged by its own done
 * callbacks (each completion submits the next op). Share = work done
 * (ops x nominal cost) over the measured window.
 */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXS 64

typedef struct fsess {
    accel_session *s;
    uint64_t cost_ns;
    _Atomic uint64_t ops;
} fsess;

static _Atomic int stop;
static uint32_t quantum = 4;

static int f_op(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    bench_burn_ns(((fsess *)arg)->cost_ns);
    return 0;
}

static void f_done(void *arg, int status)
{
    fsess *x = arg;
    atomic_fetch_add_explicit(&x->ops, 1, memory_order_relaxed);
    if (status == 0 && !atomic_load_explicit(&stop, memory_order_relaxed)) {
        accel_op op = {f_op, f_done, x};
        (void)accel_submit(x->s, &op, ACCEL_NO_WAIT);
    }
}

static void ideal(const uint32_t *w, int n, int nw, double *out)
{
    bool capped[MAXS] = {0};
    double left = 1.0, cap = 1.0 / nw;
    for (;;) {
        double sw = 0;
        for (int i = 0; i < n; i++)
            if (!capped[i])
                sw += w[i];
        int hit = -1;
        for (int i = 0; i < n && hit < 0; i++)
            if (!capped[i] && left * w[i] / sw > cap + 1e-12)
                hit = i;
        if (hit < 0) {
            for (int i = 0; i < n; i++)
                if (!capped[i])
                    out[i] = left * w[i] / sw;
            return;
        }
        capped[hit] = true;
        out[hit] = cap;
        left -= cap;
    }
}

static double run_case(const char *name, unsigned workers, int n,
                       const uint32_t *w, const uint64_t *cost, double secs)
{
    accel_runtime *rt;
    /* Short visits (quantum_ops ops): a weight-1 session of 116 in total
     * weight gets one visit per 116 visits, and the error of a share is
     * about one visit over the window. */
    accel_runtime_config rc = {.workers = workers, .quantum_ops = quantum};
    if (accel_runtime_create(&rc, &rt) != ACCEL_OK)
        exit(1);
    static fsess S[MAXS];
    atomic_store(&stop, 0);
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof(id), "f%d", i);
        accel_session_config c = {.id = id, .priority = w[i],
                                  .queue_depth = 16};
        S[i].cost_ns = cost[i];
        atomic_store(&S[i].ops, 0);
        if (accel_session_open(rt, &c, &S[i].s) != ACCEL_OK)
            exit(1);
    }
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 16; k++) {
            accel_op op = {f_op, f_done, &S[i]};
            accel_submit(S[i].s, &op, ACCEL_FOREVER);
        }
    bench_sleep_ns((uint64_t)(secs * 0.15e9)); /* warm-up */
    uint64_t o0[MAXS], o1[MAXS], v0[MAXS], v1[MAXS];
    accel_session_stats st;
    for (int i = 0; i < n; i++) {
        o0[i] = atomic_load(&S[i].ops);
        accel_session_get_stats(S[i].s, &st);
        v0[i] = st.service_ns;
    }
    bench_sleep_ns((uint64_t)(secs * 1e9));
    for (int i = 0; i < n; i++) {
        o1[i] = atomic_load(&S[i].ops);
        accel_session_get_stats(S[i].s, &st);
        v1[i] = st.service_ns;
    }
    if (getenv("FAIRNESS_DEBUG"))
        for (int i = 0; i < n && i < 8; i++) {
            accel_session_stats st;
            accel_session_get_stats(S[i].s, &st);
            printf("  [w %u] visits %llu service %.1f ms vtime %llu lag %lld "
                   "queued %llu\n",
                   w[i], (unsigned long long)st.visits, st.service_ns / 1e6,
                   (unsigned long long)st.vtime_ns, (long long)st.lag_ns,
                   (unsigned long long)st.queued);
        }
    atomic_store(&stop, 1);
    for (int i = 0; i < n; i++) {
        accel_session_close(S[i].s, ACCEL_CLOSE_CANCEL);
        accel_session_release(S[i].s);
    }
    accel_runtime_destroy(rt);

    double work[MAXS], tot = 0, id[MAXS], worst = 0, sx = 0, sxx = 0;
    double svc[MAXS], stot = 0, sworst = 0;
    for (int i = 0; i < n; i++) {
        work[i] = (double)(o1[i] - o0[i]) * (double)cost[i];
        tot += work[i];
        svc[i] = (double)(v1[i] - v0[i]);
        stot += svc[i];
    }
    ideal(w, n, (int)workers, id);
    printf("%s, %u worker%s:\n", name, workers, workers > 1 ? "s" : "");
    for (int i = 0; i < n; i++) {
        double sh = work[i] / tot, e = fabs(sh - id[i]) / id[i];
        if (e > worst)
            worst = e;
        double ss = svc[i] / stot, se = fabs(ss - id[i]) / id[i];
        if (se > sworst)
            sworst = se;
        double x = sh / id[i];
        sx += x;
        sxx += x * x;
        if (n <= 8)
            printf("  weight %4u  cost %7.1f us  share %7.3f%%  ideal %7.3f%%"
                   "  err %6.2f%%  (charged-service share %7.3f%%)\n",
                   w[i], (double)cost[i] / 1e3, 100 * sh, 100 * id[i],
                   100 * e, 100 * ss);
    }
    double jain = sx * sx / (n * sxx);
    printf("  max relative error %.2f%%  Jain's index %.5f  (of charged "
           "service: %.2f%%)\n",
           100 * worst, jain, 100 * sworst);
    bench_result r;
    bench_result_begin(&r, "fairness", name);
    bench_result_u64(&r, "workers", workers);
    bench_result_u64(&r, "sessions", (uint64_t)n);
    bench_result_f64(&r, "seconds", secs);
    bench_result_f64(&r, "max_rel_err", worst);
    bench_result_f64(&r, "jain", jain);
    bench_result_f64(&r, "max_rel_err_charged", sworst);
    bench_result_emit(&r);
    return worst;
}

int main(int argc, char **argv)
{
    bool smoke = false;
    double secs = 2.0;
    uint64_t cost = 20000, seed = 42, q = 4;
    bench_list workers = {2, {1, 2}};
    const char *json = NULL;
    bench_opt opts[] = {
        {"json", BENCH_OPT_STR, &json, "also write RESULT objects to this file"},
        {"smoke", BENCH_OPT_FLAG, &smoke, "short CI run (0.2 s per case)"},
        {"seconds", BENCH_OPT_DOUBLE, &secs, "measured seconds per case"},
        {"cost-ns", BENCH_OPT_U64, &cost, "base op cost (ns of CPU work)"},
        {"workers", BENCH_OPT_LIST, &workers, "worker counts"},
        {"seed", BENCH_OPT_U64, &seed, "seed of case (c)'s weights"},
        {"quantum-ops", BENCH_OPT_U64, &q, "runtime quantum_ops (visit)"},
    };
    int rc = bench_opts_parse(argc, argv,
                              "accel_bench_fairness: shares vs weighted "
                              "max-min fair share",
                              opts, BENCH_COUNTOF(opts));
    if (rc)
        return rc > 0 ? 0 : 2;
    if (smoke)
        secs = 0.2;
    quantum = (uint32_t)q;
    if (json && bench_result_json_open(json) != 0)
        return 2;
    bench_banner("fairness", seed);
    bench_work_calibrate();

    const uint32_t w4[4] = {1, 5, 10, 100};
    uint64_t ca[4] = {cost, cost, cost, cost};
    uint64_t cb[4] = {10 * cost, cost, cost, cost};
    uint32_t w64[64];
    uint64_t c64[64];
    bench_rng rng;
    bench_rng_seed(&rng, seed, 0);
    for (int i = 0; i < 64; i++) {
        w64[i] = (uint32_t)bench_rng_range(&rng, 1, 100);
        c64[i] = cost;
    }
    bool absurd = false;
    for (size_t k = 0; k < workers.n; k++) {
        unsigned nw = (unsigned)workers.v[k];
        char what[64];
        /* A broken scheduler is absurd (below) in every measurement; a
         * worker preempted by a neighbour for much of a 0.2 s smoke case
         * can be once. So an absurd case is measured again, up to three
         * times in all, and only three absurd measurements fail. */
        double ea, eb, ec;
        for (int attempt = 1;; attempt++) {
            ea = run_case("a_equal_cost", nw, 4, w4, ca, secs);
            eb = run_case("b_w1_10x_longer", nw, 4, w4, cb, secs);
            ec = run_case("c_64_random", nw, 64, w64, c64, secs);
            if (!(ea > 10.0 || eb > 10.0) || attempt == 3)
                break;
            fprintf(stderr, "accel_bench_fairness: (a) %.0f%% (b) %.0f%% "
                            "with %u workers on attempt %d: over 1000%%, "
                            "measuring again\n",
                    100 * ea, 100 * eb, nw, attempt);
        }
        snprintf(what, sizeof(what), "(a) max rel error, %u workers", nw);
        bench_target("fairness", what, 100 * ea, "<=", 2.0, "%");
        snprintf(what, sizeof(what), "(b) max rel error, %u workers", nw);
        bench_target("fairness", what, 100 * eb, "<=", 2.0, "%");
        printf("(c) max rel error, %u workers: %.2f%% (no target)\n", nw,
               100 * ec);
        /* A missed target is a figure; a share ten times what it should
         * be (an error past 1000%) is a broken scheduler, which even a
         * short smoke run on a loaded machine must not pass: an unweighted
         * virtual time measured 2807% here, the scheduler as it is up to
         * 153% in 0.2 s cases on a 2-core machine shared with builds. */
        if (ea > 10.0 || eb > 10.0) {
            fprintf(stderr, "accel_bench_fairness: ABSURD: max rel error "
                            "(a) %.0f%% (b) %.0f%% with %u workers (over "
                            "1000%%)\n",
                    100 * ea, 100 * eb, nw);
            absurd = true;
        }
    }
    bench_result_json_close();
    return absurd ? 1 : 0;
}
