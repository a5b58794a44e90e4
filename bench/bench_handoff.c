/*
 * bench_handoff: the plain raw wfcqueue hand-off on its own, timed two ways.
 *
 * P producers cds_wfcq_enqueue preallocated nodes into one liburcu
 * wait-free queue; one consumer loops on __cds_wfcq_dequeue_blocking and
 * calls each op through its function pointer (an empty queue is polled
 * again at once). Nothing else: no deadline, no accel runtime, no pool.
 * bench_throughput's wfcq single row runs the same loops.
 *
 * Each repetition reports ns/op on two clocks over the same run:
 *   first   from the first producer's start (after the start barrier) to
 *           the last join: bench_throughput's clock; no op can run before
 *           it, so it holds every op.
 *   main    from the main thread's return from the start barrier to the
 *           last join: the clock a small stand-alone program usually has.
 *           With more runnable threads than cores the main thread may run
 *           again only after the producers have enqueued much (or all) of
 *           the repetition, and that work falls outside the window.
 * The two are printed side by side so the difference is measured, not
 * argued: main / first < 1 is the share of the run the main clock missed.
 */
#include "bench.h"

#include <stdlib.h>

#define _LGPL_SOURCE
#include <urcu/wfcqueue.h>

static struct {
    uint64_t producers, ops;
    int reps;
    bool smoke;
} opt = {.producers = 4, .ops = 200000, .reps = 9};

struct wnode {
    struct cds_wfcq_node node;
    accel_op op;
};

static struct __cds_wfcq_head head;
static struct cds_wfcq_tail tail;
static pthread_barrier_t start;

typedef struct prod {
    struct wnode *nodes;
    uint64_t n;
    uint64_t t_start;
    pthread_t th;
} prod;

static int op_empty(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    return 0;
}

static void *producer_main(void *arg)
{
    prod *p = arg;
    pthread_barrier_wait(&start);
    p->t_start = bench_now_ns();
    for (uint64_t i = 0; i < p->n; i++)
        cds_wfcq_enqueue(&head, &tail, &p->nodes[i].node);
    return NULL;
}

static void *consumer_main(void *arg)
{
    uint64_t total = *(const uint64_t *)arg, n = 0;
    pthread_barrier_wait(&start);
    while (n < total) {
        struct cds_wfcq_node *nd = __cds_wfcq_dequeue_blocking(&head, &tail);
        if (!nd) {
            caa_cpu_relax();
            continue;
        }
        struct wnode *w = caa_container_of(nd, struct wnode, node);
        w->op.fn(NULL, w->op.arg);
        n++;
    }
    return NULL;
}

/* One repetition: ns/op on the first-producer clock and the main clock. */
static void run_rep(double *first, double *mainc)
{
    unsigned np = (unsigned)opt.producers;
    prod *pr = calloc(np, sizeof *pr);
    if (!pr)
        abort();
    __cds_wfcq_init(&head, &tail);
    for (unsigned p = 0; p < np; p++) {
        pr[p].n = opt.ops / np + (p < opt.ops % np ? 1 : 0);
        pr[p].nodes = calloc(pr[p].n ? pr[p].n : 1, sizeof *pr[p].nodes);
        if (!pr[p].nodes)
            abort();
        for (uint64_t i = 0; i < pr[p].n; i++) {
            cds_wfcq_node_init(&pr[p].nodes[i].node);
            pr[p].nodes[i].op = (accel_op){op_empty, NULL, NULL};
        }
    }
    pthread_barrier_init(&start, NULL, np + 2);
    for (unsigned p = 0; p < np; p++)
        pthread_create(&pr[p].th, NULL, producer_main, &pr[p]);
    pthread_t cons;
    pthread_create(&cons, NULL, consumer_main, &opt.ops);
    pthread_barrier_wait(&start);
    uint64_t t_main = bench_now_ns();
    uint64_t t0 = t_main;
    for (unsigned p = 0; p < np; p++) {
        pthread_join(pr[p].th, NULL);
        if (pr[p].t_start < t0)
            t0 = pr[p].t_start;
    }
    pthread_join(cons, NULL);
    uint64_t t1 = bench_now_ns();
    pthread_barrier_destroy(&start);
    for (unsigned p = 0; p < np; p++)
        free(pr[p].nodes);
    free(pr);
    *first = (double)(t1 - t0) / (double)opt.ops;
    *mainc = (double)(t1 - t_main) / (double)opt.ops;
}

int main(int argc, char **argv)
{
    bench_opt opts[] = {
        {"producers", BENCH_OPT_U64, &opt.producers, "producer threads"},
        {"ops", BENCH_OPT_U64, &opt.ops, "ops per repetition"},
        {"reps", BENCH_OPT_INT, &opt.reps, "repetitions"},
        {"smoke", BENCH_OPT_FLAG, &opt.smoke, "a short run for CI"},
    };
    int prc = bench_opts_parse(argc, argv,
                               "usage: accel_bench_handoff [options]\n"
                               "The plain raw wfcqueue hand-off, ns/op on two clocks.",
                               opts, BENCH_COUNTOF(opts));
    if (prc)
        return prc < 0 ? 2 : 0;
    if (opt.smoke) {
        opt.ops = 50000;
        opt.reps = 3;
    }
    if (opt.producers < 1 || opt.producers > 64 || opt.ops < 1 || opt.reps < 1)
        return 2;
    bench_banner("handoff", 0);
    double *f = calloc((size_t)opt.reps, sizeof *f), *m = calloc((size_t)opt.reps, sizeof *m);
    if (!f || !m)
        return 1;
    double dummy_f, dummy_m;
    run_rep(&dummy_f, &dummy_m); /* warm-up, untimed */
    for (int r = 0; r < opt.reps; r++) {
        run_rep(&f[r], &m[r]);
        printf("rep %2d  first %7.1f  main %7.1f  ns/op  main/first %.2f\n", r, f[r], m[r],
               m[r] / f[r]);
    }
    double mf = bench_median_f64(f, (size_t)opt.reps), mm = bench_median_f64(m, (size_t)opt.reps);
    printf("median  first %7.1f  main %7.1f  ns/op\n", mf, mm);
    bench_result res;
    bench_result_begin(&res, "handoff", "wfcq");
    bench_result_u64(&res, "producers", opt.producers);
    bench_result_u64(&res, "ops_per_rep", opt.ops);
    bench_result_u64(&res, "reps", (uint64_t)opt.reps);
    bench_result_f64(&res, "ns_per_op_first_clock", mf);
    bench_result_f64(&res, "ns_per_op_main_clock", mm);
    bench_result_emit(&res);
    free(f);
    free(m);
    /* An absurd result fails the run (a smoke run checks it): the first
     * clock holds every op, so it can never be shorter than the main one. */
    return mf > 0 && mm > 0 && mf >= mm ? 0 : 1;
}
