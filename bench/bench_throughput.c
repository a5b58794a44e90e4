/*
 * bench_throughput: ops/s and ns/op of accel against four baselines measured
 * in the same run, over a matrix of op sizes x producers x sessions x
 * workers x submit mode.
 *
 * Systems (each repetition runs them in turn, A B C D E A B C D E ...):
 *   accel   P producers submit to S sessions of a runtime with W workers
 *           (accel_submit, or accel_submit_batch of 32); ends when every
 *           session has synced (all ops ran).
 *   ck      Concurrency Kit's MPSC ring (ck_ring_enqueue_mpsc) from the P
 *           producers to one consumer thread that runs each op: the cost
 *           floor of the hand-off alone, with no scheduling.
 *   wfcq    the raw wfcqueue hand-off: the P producers cds_wfcq_enqueue
 *           preallocated nodes into ONE liburcu wait-free queue; ONE
 *           consumer thread loops on __cds_wfcq_dequeue_blocking and calls
 *           each op through its function pointer (an empty queue is polled
 *           again at once). The producers' loop is that and nothing
 *           more (no deadline check; bench_handoff.c runs the same loops
 *           alone and shows the clock this file uses against the one a
 *           stand-alone program usually has). In batch mode each
 *           producer builds a local queue of 32 and splices it in
 *           (__cds_wfcq_splice_blocking): a
 *           different measurement, the cost of a batched hand-off.
 *   msess   the design accel replaces: a mutex per session, the op run on
 *           the submitting thread (W plays no part).
 *   pool    a mutex+condvar FIFO pool of W workers (batch: one lock per 32).
 *
 * ns/op is wall time / ops completed (aggregate over all producers);
 * a repetition stops at --max-rep-ms even if its ops are not all submitted,
 * so a collapsing baseline does not stall the run.
 * Producer p owns sessions s with s % P == p when S >= P (round-robin over
 * them); with S < P, producers share session p % S.
 */
#include "bench.h"

#include <ck_ring.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define _LGPL_SOURCE
#include <urcu/wfcqueue.h>

#define BATCH 32
#define RING_SIZE 1024 /* ck ring slots; accel's default queue depth */

enum system { SYS_ACCEL, SYS_CK, SYS_WFCQ, SYS_MSESS, SYS_POOL, NSYS };
static const char *const sys_name[NSYS] = {"accel", "ck", "wfcq", "msess", "pool"};

enum kind { KIND_EMPTY, KIND_1US, KIND_10US, NKIND };
static const char *const kind_name[NKIND] = {"empty", "1us", "10us"};
static const uint64_t kind_ns[NKIND] = {0, 1000, 10000};

/* ------------------------------------------------------------- options */

static struct {
    bench_list producers, sessions, workers, kinds, modes;
    uint64_t seed, ops_empty, ops_1us, ops_10us, max_rep_ms;
    int reps, rounds;
    bool smoke;
    const char *json;
    const char *systems;
} opt = {
    .producers = {4, {1, 2, 4, 8}},
    .sessions = {4, {1, 4, 17, 64}},
    .workers = {2, {1, 2}},
    .kinds = {3, {0, 1, 10}},
    .modes = {2, {1, 32}},
    .seed = 42,
    .ops_empty = 200000,
    .ops_1us = 16000,
    .ops_10us = 1600,
    .max_rep_ms = 100,
    .reps = 5,
    .rounds = 1,
    .systems = "accel,ck,wfcq,msess,pool",
};

static bool sys_on[NSYS];

/* ----------------------------------------------------------------- ops */

static int op_empty(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    return 0;
}

static int op_burn(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    bench_burn_ns((uint64_t)(uintptr_t)arg);
    return 0;
}

/* ---------------------------------------------------------- one cell */

typedef struct cell {
    enum kind kind;
    unsigned P, S, W;
    bool batch;
    uint64_t ops; /* total per repetition */
} cell;

typedef struct rep_ctx rep_ctx;

typedef struct producer {
    rep_ctx *rc;
    unsigned id;
    uint64_t ops;      /* this producer's share */
    uint64_t done;     /* submitted */
    uint64_t t_start;  /* when it passed the start barrier */
    pthread_t th;
    /* wfcq: preallocated nodes, one per op */
    struct wnode *nodes;
} producer;

struct wnode {
    struct cds_wfcq_node node;
    accel_op op;
};

struct rep_ctx {
    const cell *c;
    enum system sys;
    accel_op op;
    uint64_t deadline;
    pthread_barrier_t start;
    /* accel */
    accel_session **sess;
    /* ck */
    ck_ring_t ring;
    ck_ring_buffer_t *ring_buf;
    /* wfcq */
    struct __cds_wfcq_head whead;
    struct cds_wfcq_tail wtail;
    /* msess */
    bench_msess *ms;
    /* pool */
    bench_pool *pool;
    /* single consumer (ck, wfcq) */
    _Atomic unsigned producers_left;
    _Atomic uint64_t produced;
    uint64_t consumed;
};

/* The sessions producer p submits to: first index and stride. */
static void my_sessions(const cell *c, unsigned p, unsigned *first, unsigned *stride,
                        unsigned *count)
{
    if (c->S >= c->P) {
        *first = p;
        *stride = c->P;
        *count = (c->S - p + c->P - 1) / c->P;
    } else {
        *first = p % c->S;
        *stride = 1;
        *count = 1;
    }
}

static inline bool past_deadline(const rep_ctx *rc, uint64_t i)
{
    return (i & 255) == 0 && bench_now_ns() > rc->deadline;
}

static void *producer_main(void *arg)
{
    producer *pr = arg;
    rep_ctx *rc = pr->rc;
    const cell *c = rc->c;
    unsigned first, stride, count;
    my_sessions(c, pr->id, &first, &stride, &count);
    accel_op batch[BATCH];
    for (int i = 0; i < BATCH; i++)
        batch[i] = rc->op;
    pthread_barrier_wait(&rc->start);
    pr->t_start = bench_now_ns();

    uint64_t i = 0, k = 0;
    switch (rc->sys) {
    case SYS_ACCEL:
        while (i < pr->ops && !past_deadline(rc, i)) {
            accel_session *s = rc->sess[first + stride * (unsigned)(k++ % count)];
            if (c->batch) {
                size_t n = pr->ops - i < BATCH ? (size_t)(pr->ops - i) : BATCH, acc = 0;
                accel_submit_batch(s, batch, n, ACCEL_FOREVER, &acc);
                i += acc;
                if (acc < n)
                    break;
            } else {
                if (accel_submit(s, &rc->op, ACCEL_FOREVER) != ACCEL_OK)
                    break;
                i++;
            }
        }
        break;
    case SYS_CK:
        while (i < pr->ops) {
            if (ck_ring_enqueue_mpsc(&rc->ring, rc->ring_buf, &rc->op)) {
                i++;
                if (past_deadline(rc, i))
                    break;
                continue;
            }
            if (bench_now_ns() > rc->deadline)
                break;
            sched_yield(); /* ring full: let the consumer (or a stalled producer) run */
        }
        break;
    case SYS_WFCQ:
        if (!c->batch) {
            /* The plain hand-off, nothing more: no deadline check (a
             * wait-free enqueue of preallocated nodes cannot stall, and
             * the count is finite), the loop bench_handoff.c runs. */
            struct wnode *nodes = pr->nodes;
            uint64_t n = pr->ops;
            for (i = 0; i < n; i++)
                cds_wfcq_enqueue(&rc->whead, &rc->wtail, &nodes[i].node);
            break;
        }
        while (i < pr->ops && !past_deadline(rc, i)) {
            if (c->batch) {
                struct __cds_wfcq_head lh;
                struct cds_wfcq_tail lt;
                __cds_wfcq_init(&lh, &lt);
                uint64_t n = pr->ops - i < BATCH ? pr->ops - i : BATCH;
                for (uint64_t j = 0; j < n; j++)
                    cds_wfcq_enqueue(&lh, &lt, &pr->nodes[i + j].node);
                __cds_wfcq_splice_blocking(&rc->whead, &rc->wtail, &lh, &lt);
                i += n;
            } else {
                cds_wfcq_enqueue(&rc->whead, &rc->wtail, &pr->nodes[i].node);
                i++;
            }
        }
        break;
    case SYS_MSESS:
        while (i < pr->ops && !past_deadline(rc, i)) {
            bench_msess_submit(&rc->ms[first + stride * (unsigned)(k++ % count)], &rc->op);
            i++;
        }
        break;
    case SYS_POOL:
        while (i < pr->ops && !past_deadline(rc, i)) {
            if (c->batch) {
                size_t n = pr->ops - i < BATCH ? (size_t)(pr->ops - i) : BATCH;
                bench_pool_submit_batch(rc->pool, batch, n);
                i += n;
            } else {
                bench_pool_submit(rc->pool, &rc->op);
                i++;
            }
        }
        break;
    default:
        break;
    }
    pr->done = i;
    /* [R1] release: publishes this producer's count; pairs with [A1] in
     * consumer_main, which stops once every producer is accounted for. */
    atomic_fetch_add_explicit(&rc->produced, i, memory_order_relaxed);
    atomic_fetch_sub_explicit(&rc->producers_left, 1, memory_order_release);
    return NULL;
}

/* The raw wfcqueue hand-off, exactly: one consumer loops on
 * __cds_wfcq_dequeue_blocking and calls each op through its function
 * pointer; an empty queue is polled again at once (no yield, no sleep),
 * until the repetition's ops are all consumed (or, after a deadline stop,
 * everything the producers got in). */
static void wfcq_consume(rep_ctx *rc, uint64_t total)
{
    uint64_t n = 0;
    for (;;) {
        struct cds_wfcq_node *nd = __cds_wfcq_dequeue_blocking(&rc->whead, &rc->wtail);
        if (nd) {
            struct wnode *w = caa_container_of(nd, struct wnode, node);
            w->op.fn(NULL, w->op.arg);
            if (++n == total)
                break;
            continue;
        }
        /* [A1] acquire: pairs with [R1]; after it, produced is final. */
        if (atomic_load_explicit(&rc->producers_left, memory_order_acquire) == 0 &&
            n == atomic_load_explicit(&rc->produced, memory_order_relaxed))
            break;
        caa_cpu_relax();
    }
    rc->consumed = n;
}

/* The one consumer of the ck and wfcq baselines: runs ops until every
 * producer has finished and everything produced is consumed. */
static void *consumer_main(void *arg)
{
    rep_ctx *rc = arg;
    pthread_barrier_wait(&rc->start);
    if (rc->sys == SYS_WFCQ && !rc->c->batch) {
        wfcq_consume(rc, rc->c->ops);
        return NULL;
    }
    uint64_t n = 0;
    for (;;) {
        bool got = false;
        if (rc->sys == SYS_CK) {
            accel_op *op;
            if (ck_ring_dequeue_mpsc(&rc->ring, rc->ring_buf, &op)) {
                op->fn(NULL, op->arg);
                got = true;
            }
        } else {
            struct cds_wfcq_node *nd = __cds_wfcq_dequeue_blocking(&rc->whead, &rc->wtail);
            if (nd) {
                struct wnode *w = caa_container_of(nd, struct wnode, node);
                w->op.fn(NULL, w->op.arg);
                got = true;
            }
        }
        if (got) {
            n++;
            continue;
        }
        /* [A1] acquire: pairs with [R1]; after it, produced is final. */
        if (atomic_load_explicit(&rc->producers_left, memory_order_acquire) == 0 &&
            n == atomic_load_explicit(&rc->produced, memory_order_relaxed))
            break;
        sched_yield(); /* empty: a producer may be preempted mid-enqueue */
    }
    rc->consumed = n;
    return NULL;
}

/* Long-lived per-W state: the accel runtime and the pool. */
static accel_runtime *rt;
static bench_pool *pool;
static unsigned session_seq;

/* Runs one repetition of one system; returns ns/op (0 when nothing ran). */
static double run_rep(const cell *c, enum system sys, uint64_t ops, uint64_t *done_out)
{
    rep_ctx *rc = calloc(1, sizeof *rc);
    producer *pr = calloc(c->P, sizeof *pr);
    if (!rc || !pr)
        abort();
    rc->c = c;
    rc->sys = sys;
    rc->op = (accel_op){kind_ns[c->kind] ? op_burn : op_empty, NULL,
                        (void *)(uintptr_t)kind_ns[c->kind]};
    atomic_store_explicit(&rc->producers_left, c->P, memory_order_relaxed);
    bool consumer = sys == SYS_CK || sys == SYS_WFCQ;
    pthread_barrier_init(&rc->start, NULL, c->P + 1 + (consumer ? 1 : 0));

    if (sys == SYS_ACCEL) {
        rc->sess = calloc(c->S, sizeof *rc->sess);
        for (unsigned s = 0; s < c->S; s++) {
            char id[64];
            snprintf(id, sizeof id, "tp-%u", session_seq++);
            accel_session_config sc = {.id = id, .priority = ACCEL_PRIORITY_NORMAL,
                                       .backend = ACCEL_BACKEND_CPU};
            int st = accel_session_open(rt, &sc, &rc->sess[s]);
            if (st != ACCEL_OK) {
                fprintf(stderr, "session_open: %s\n", accel_strerror(st));
                exit(1);
            }
        }
    } else if (sys == SYS_CK) {
        rc->ring_buf = calloc(RING_SIZE, sizeof *rc->ring_buf);
        ck_ring_init(&rc->ring, RING_SIZE);
    } else if (sys == SYS_WFCQ) {
        __cds_wfcq_init(&rc->whead, &rc->wtail);
    } else if (sys == SYS_MSESS) {
        rc->ms = calloc(c->S, sizeof *rc->ms);
        for (unsigned s = 0; s < c->S; s++)
            bench_msess_init(&rc->ms[s]);
    } else {
        rc->pool = pool;
    }

    for (unsigned p = 0; p < c->P; p++) {
        pr[p].rc = rc;
        pr[p].id = p;
        pr[p].ops = ops / c->P + (p < ops % c->P ? 1 : 0);
        if (sys == SYS_WFCQ) {
            pr[p].nodes = calloc(pr[p].ops ? pr[p].ops : 1, sizeof *pr[p].nodes);
            for (uint64_t i = 0; i < pr[p].ops; i++) {
                cds_wfcq_node_init(&pr[p].nodes[i].node);
                pr[p].nodes[i].op = rc->op;
            }
        }
        pthread_create(&pr[p].th, NULL, producer_main, &pr[p]);
    }
    pthread_t cons;
    if (consumer)
        pthread_create(&cons, NULL, consumer_main, rc);

    /* Written before the threads pass the barrier, which orders it. */
    rc->deadline = bench_now_ns() + opt.max_rep_ms * 1000000u;
    pthread_barrier_wait(&rc->start);
    /* The clock starts when the first producer starts: this thread may
     * not run again until the producers are done (P > cores). */
    uint64_t t0 = bench_now_ns();
    uint64_t done = 0;
    for (unsigned p = 0; p < c->P; p++) {
        pthread_join(pr[p].th, NULL);
        done += pr[p].done;
        if (pr[p].t_start < t0)
            t0 = pr[p].t_start;
    }
    if (consumer)
        pthread_join(cons, NULL);
    if (sys == SYS_ACCEL)
        for (unsigned s = 0; s < c->S; s++)
            accel_session_sync(rc->sess[s], ACCEL_FOREVER);
    if (sys == SYS_POOL)
        bench_pool_drain(pool);
    uint64_t t1 = bench_now_ns();

    if (sys == SYS_ACCEL) {
        for (unsigned s = 0; s < c->S; s++)
            accel_session_release(rc->sess[s]);
        free(rc->sess);
    }
    if (sys == SYS_MSESS) {
        for (unsigned s = 0; s < c->S; s++)
            bench_msess_destroy(&rc->ms[s]);
        free(rc->ms);
    }
    for (unsigned p = 0; p < c->P; p++)
        free(pr[p].nodes);
    free(rc->ring_buf);
    pthread_barrier_destroy(&rc->start);
    free(pr);
    free(rc);
    *done_out = done;
    return done ? (double)(t1 - t0) / (double)done : 0;
}

/* ------------------------------------------------------------- results */

typedef struct cell_result {
    cell c;
    double *v;    /* [sys][rounds * reps] samples, ns/op */
    int nv;       /* samples taken per system so far */
    bool have[NSYS];
    double ns_op[NSYS]; /* median over repetitions */
    double ns_min[NSYS], ns_max[NSYS];
} cell_result;

static cell_result *results;
static size_t nresults;

static const cell_result *find(enum kind k, unsigned P, unsigned S, unsigned W, bool batch)
{
    for (size_t i = 0; i < nresults; i++) {
        const cell *c = &results[i].c;
        if (c->kind == k && c->P == P && c->S == S && c->W == W && c->batch == batch)
            return &results[i];
    }
    return NULL;
}

static void cell_label(const cell *c, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s/P%u/S%u/W%u", kind_name[c->kind], c->batch ? "batch32" : "single",
             c->P, c->S, c->W);
}

/* One round of a cell: reps repetitions of every system, interleaved
 * (A B A B, the order rotating). With --rounds R the whole matrix is run R
 * times and each cell's median is taken over all R * reps samples, so a
 * burst of noise on this VM (cross-core latency drifts several-fold over
 * minutes) hits a few samples of many cells, not every sample of one. */
static void run_cell(const cell *c)
{
    cell_result *cr = (cell_result *)find(c->kind, c->P, c->S, c->W, c->batch);
    if (!cr) {
        cr = &results[nresults++];
        memset(cr, 0, sizeof *cr);
        cr->c = *c;
        cr->v = calloc((size_t)opt.reps * (size_t)opt.rounds * NSYS, sizeof *cr->v);
    }
    int stride = opt.reps * opt.rounds;
    for (int r = 0; r < opt.reps; r++) {
        for (int k = 0; k < NSYS; k++) {
            enum system sys = (enum system)((k + r + cr->nv) % NSYS);
            if (!sys_on[sys])
                continue;
            uint64_t done;
            cr->v[sys * stride + cr->nv + r] = run_rep(c, sys, c->ops, &done);
        }
    }
    cr->nv += opt.reps;
}

/* Medians over every sample of a cell; prints its line and RESULTs. */
static void report_cell(cell_result *cr)
{
    const cell *c = &cr->c;
    int n = cr->nv, stride = opt.reps * opt.rounds;
    char label[96];
    cell_label(c, label, sizeof label);
    printf("%-26s", label);
    for (int sys = 0; sys < NSYS; sys++) {
        if (!sys_on[sys])
            continue;
        double *x = &cr->v[sys * stride];
        bench_sort_f64(x, (size_t)n);
        cr->have[sys] = true;
        cr->ns_min[sys] = x[0];
        cr->ns_max[sys] = x[n - 1];
        cr->ns_op[sys] = bench_median_f64(x, (size_t)n);
        printf(" %s %8.1f", sys_name[sys], cr->ns_op[sys]);
    }
    printf("  ns/op");
    if (cr->have[SYS_ACCEL]) {
        printf("  | accel/x speedup:");
        for (int sys = 1; sys < NSYS; sys++)
            if (cr->have[sys])
                printf(" %s %.2f", sys_name[sys], cr->ns_op[sys] / cr->ns_op[SYS_ACCEL]);
    }
    printf("\n");
    for (int sys = 0; sys < NSYS; sys++) {
        if (!cr->have[sys])
            continue;
        bench_result res;
        bench_result_begin(&res, "throughput", label);
        bench_result_str(&res, "system", sys_name[sys]);
        bench_result_str(&res, "op", kind_name[c->kind]);
        bench_result_str(&res, "mode", c->batch ? "batch32" : "single");
        bench_result_u64(&res, "producers", c->P);
        bench_result_u64(&res, "sessions", c->S);
        bench_result_u64(&res, "workers", c->W);
        bench_result_u64(&res, "ops_per_rep", c->ops);
        bench_result_u64(&res, "reps", (uint64_t)n);
        bench_result_f64(&res, "ns_per_op", cr->ns_op[sys]);
        bench_result_f64(&res, "ns_per_op_min", cr->ns_min[sys]);
        bench_result_f64(&res, "ns_per_op_max", cr->ns_max[sys]);
        bench_result_f64(&res, "mops", cr->ns_op[sys] > 0 ? 1e3 / cr->ns_op[sys] : 0);
        if (sys == SYS_ACCEL)
            for (int b = 1; b < NSYS; b++)
                if (cr->have[b]) {
                    char key[32];
                    snprintf(key, sizeof key, "speedup_vs_%s", sys_name[b]);
                    bench_result_f64(&res, key, cr->ns_op[b] / cr->ns_op[SYS_ACCEL]);
                }
        bench_result_emit(&res);
    }
    free(cr->v);
    cr->v = NULL;
}

static double mops(const cell_result *r, enum system s)
{
    return r && r->have[s] && r->ns_op[s] > 0 ? 1e3 / r->ns_op[s] : 0;
}

static void print_targets(void)
{
    printf("\n# Targets (bench/README.md; ratios from this run)\n");
    const cell_result *a = find(KIND_EMPTY, 4, 4, 2, false);
    const cell_result *b = find(KIND_EMPTY, 4, 4, 2, true);
    const cell_result *one = find(KIND_EMPTY, 4, 1, 2, false);
    const cell_result *p2 = find(KIND_EMPTY, 2, 4, 2, false);
    const cell_result *p8 = find(KIND_EMPTY, 8, 4, 2, false);
    int missing = 0;
    if (a && a->have[SYS_ACCEL]) {
        bench_target("throughput", "empty P4 S4 W2 single: accel Mops/s", mops(a, SYS_ACCEL),
                     ">=", 45, "Mops/s");
        if (a->have[SYS_WFCQ])
            bench_target("throughput", "empty P4 S4 W2 single: accel / raw wfcqueue",
                         mops(a, SYS_ACCEL) / mops(a, SYS_WFCQ), ">=", 1.0, "x");
        if (a->have[SYS_POOL])
            bench_target("throughput", "empty P4 S4 W2 single: accel / mutex+condvar pool",
                         mops(a, SYS_ACCEL) / mops(a, SYS_POOL), ">=", 5.0, "x");
    } else
        missing++;
    if (b && b->have[SYS_ACCEL]) {
        bench_target("throughput", "empty P4 S4 W2 batch32: accel Mops/s", mops(b, SYS_ACCEL),
                     ">=", 100, "Mops/s");
        if (a && a->have[SYS_WFCQ])
            bench_target("throughput", "empty P4 S4 W2 batch32: accel / raw wfcqueue (single)",
                         mops(b, SYS_ACCEL) / mops(a, SYS_WFCQ), ">=", 2.0, "x");
        if (b->have[SYS_WFCQ])
            bench_target("throughput", "empty P4 S4 W2 batch32: accel / wfcqueue splice-32",
                         mops(b, SYS_ACCEL) / mops(b, SYS_WFCQ), ">=", 2.0, "x");
    } else
        missing++;
    if (one && one->have[SYS_ACCEL] && one->have[SYS_MSESS])
        bench_target("throughput", "empty P4 S1 W2 single: accel / mutex-per-session",
                     mops(one, SYS_ACCEL) / mops(one, SYS_MSESS), ">=", 1.5, "x");
    else
        missing++;
    if (p2 && p8 && p2->have[SYS_ACCEL] && p8->have[SYS_ACCEL])
        bench_target("throughput", "empty S4 W2 single: accel P8 rate / P2 rate",
                     mops(p8, SYS_ACCEL) / mops(p2, SYS_ACCEL), ">=", 0.5, "x");
    else
        missing++;
    if (missing)
        printf("# %d target(s) not measured: their cells are outside the chosen matrix\n",
               missing);
}

/* ---------------------------------------------------------------- main */

static int parse_systems(const char *s)
{
    memset(sys_on, 0, sizeof sys_on);
    const char *p = s;
    while (*p) {
        size_t k = strcspn(p, ",");
        bool found = false;
        for (int i = 0; i < NSYS; i++)
            if (strlen(sys_name[i]) == k && strncmp(sys_name[i], p, k) == 0)
                sys_on[i] = found = true;
        if (!found) {
            fprintf(stderr, "unknown system '%.*s'\n", (int)k, p);
            return -1;
        }
        p += k;
        if (*p == ',')
            p++;
    }
    return 0;
}

int main(int argc, char **argv)
{
    bench_opt opts[] = {
        {"producers", BENCH_OPT_LIST, &opt.producers, "producer thread counts"},
        {"sessions", BENCH_OPT_LIST, &opt.sessions, "session counts"},
        {"workers", BENCH_OPT_LIST, &opt.workers, "worker counts"},
        {"ops", BENCH_OPT_LIST, &opt.kinds, "op sizes in us (0 = empty; 0,1,10)"},
        {"modes", BENCH_OPT_LIST, &opt.modes, "submit modes: 1 = single, 32 = batch of 32"},
        {"systems", BENCH_OPT_STR, &opt.systems, "systems to run"},
        {"ops-empty", BENCH_OPT_U64, &opt.ops_empty, "ops per repetition, empty ops"},
        {"ops-1us", BENCH_OPT_U64, &opt.ops_1us, "ops per repetition, 1 us ops"},
        {"ops-10us", BENCH_OPT_U64, &opt.ops_10us, "ops per repetition, 10 us ops"},
        {"max-rep-ms", BENCH_OPT_U64, &opt.max_rep_ms, "a repetition stops submitting after this"},
        {"reps", BENCH_OPT_INT, &opt.reps, "repetitions per cell and round"},
        {"rounds", BENCH_OPT_INT, &opt.rounds,
         "passes over the whole matrix (median over rounds x reps)"},
        {"seed", BENCH_OPT_U64, &opt.seed, "seed (recorded; the workload is deterministic)"},
        {"json", BENCH_OPT_STR, &opt.json, "also write the RESULT objects to this file"},
        {"smoke", BENCH_OPT_FLAG, &opt.smoke, "a 1-2 s run for CI"},
    };
    int prc = bench_opts_parse(argc, argv,
                               "usage: accel_bench_throughput [options]\n"
                               "Ops/s of accel vs Concurrency Kit MPSC ring, liburcu wfcqueue,\n"
                               "mutex-per-session and a mutex+condvar pool, in one run.",
                               opts, BENCH_COUNTOF(opts));
    if (prc)
        return prc < 0 ? 2 : 0;
    if (opt.smoke) {
        bench_list_parse(&opt.producers, "1,4");
        bench_list_parse(&opt.sessions, "4");
        bench_list_parse(&opt.workers, "2");
        bench_list_parse(&opt.kinds, "0");
        opt.ops_empty = 50000;
        opt.reps = 5;
    }
    if (parse_systems(opt.systems) != 0 || opt.reps < 1 || opt.rounds < 1)
        return 2;
    for (size_t i = 0; i < opt.kinds.n; i++)
        if (opt.kinds.v[i] != 0 && opt.kinds.v[i] != 1 && opt.kinds.v[i] != 10) {
            fprintf(stderr, "--ops: sizes are 0, 1 or 10 (us)\n");
            return 2;
        }
    for (size_t i = 0; i < opt.modes.n; i++)
        if (opt.modes.v[i] != 1 && opt.modes.v[i] != BATCH) {
            fprintf(stderr, "--modes: 1 or 32\n");
            return 2;
        }
    if (opt.json && bench_result_json_open(opt.json) != 0) {
        fprintf(stderr, "cannot write %s\n", opt.json);
        return 2;
    }
    bench_banner("throughput", opt.seed);
    printf("# ns/op = wall time / ops completed, median of %d repetitions "
           "(%d round(s) over the matrix x %d, interleaved, order rotating); "
           "ops are synthetic (empty or calibrated spin)\n",
           opt.reps * opt.rounds, opt.rounds, opt.reps);
    printf("# speedup = baseline ns/op / accel ns/op (> 1: accel faster)\n");

    results = calloc(opt.producers.n * opt.sessions.n * opt.workers.n * opt.kinds.n *
                         opt.modes.n + 1,
                     sizeof *results);
    uint64_t t_start = bench_now_ns();
    for (int round = 0; round < opt.rounds; round++)
    for (size_t wi = 0; wi < opt.workers.n; wi++) {
        unsigned W = (unsigned)opt.workers.v[wi];
        accel_runtime_config rcfg = {.workers = W};
        int st = accel_runtime_create(&rcfg, &rt);
        if (st != ACCEL_OK) {
            fprintf(stderr, "runtime_create: %s\n", accel_strerror(st));
            return 1;
        }
        if (bench_pool_create(W, RING_SIZE, &pool) != 0)
            return 1;
        bool warmed = false;
        for (size_t ki = 0; ki < opt.kinds.n; ki++)
            for (size_t mi = 0; mi < opt.modes.n; mi++)
                for (size_t pi = 0; pi < opt.producers.n; pi++)
                    for (size_t si = 0; si < opt.sessions.n; si++) {
                        cell c = {.P = (unsigned)opt.producers.v[pi],
                                  .S = (unsigned)opt.sessions.v[si], .W = W,
                                  .batch = opt.modes.v[mi] == BATCH};
                        c.kind = opt.kinds.v[ki] == 0 ? KIND_EMPTY
                                 : opt.kinds.v[ki] == 1 ? KIND_1US : KIND_10US;
                        c.ops = c.kind == KIND_EMPTY ? opt.ops_empty
                                : c.kind == KIND_1US ? opt.ops_1us : opt.ops_10us;
                        if (c.P == 0 || c.S == 0 || c.ops == 0)
                            continue;
                        if (!warmed && round == 0) { /* warm-up: one untimed pass of every system */
                            for (int s = 0; s < NSYS; s++) {
                                uint64_t d;
                                if (sys_on[s])
                                    run_rep(&c, (enum system)s, c.ops, &d);
                            }
                            warmed = true;
                        }
                        run_cell(&c);
                    }
        bench_pool_destroy(pool);
        accel_runtime_destroy(rt);
        if (wi + 1 == opt.workers.n && opt.rounds > 1)
            fprintf(stderr, "# round %d/%d done, %.0f s\n", round + 1, opt.rounds,
                    (double)(bench_now_ns() - t_start) / 1e9);
    }
    for (size_t i = 0; i < nresults; i++)
        report_cell(&results[i]);
    print_targets();
    printf("# total %.1f s\n", (double)(bench_now_ns() - t_start) / 1e9);
    bench_result_json_close();
    free(results);
    return 0;
}
