/*
 * bench_ck: the runtime's hand-written lock-free pieces against their
 * Concurrency Kit counterparts, in one run (docs/ck.md says what was
 * decided from these figures).
 *
 *   stack1   one thread: pop then push one node of a 64-node stack.
 *            own: the scheduler's tagged Treiber stack (index + 32-bit tag
 *            in one 64-bit word, single-width CAS: accel__sched_node_get/
 *            put, the same code as the calendar's buckets).
 *            ck:  ck_stack_pop_mpmc/ck_stack_push_mpmc (pointer +
 *            generation, double-width CAS for the pop).
 *   stack2   the same loop on two threads sharing the stack (contended).
 *   ffs      find the first non-empty bucket of 4096, one bucket set
 *            (16 positions in turn). own: accel__sched_cal_first (two-level
 *            bitmap: a summary word, then one word). ck: a ck_bitmap of
 *            4096 bits and ck_bitmap_iterator_init + ck_bitmap_next (scans
 *            the words in order; it has no summary level and no circular
 *            start, which the calendar needs).
 *   signal   the hot side of a sleep/wake handshake with nobody asleep (the
 *            case of every submit and every take). own: accel__fence_hot
 *            (a compiler barrier when membarrier is available) and a
 *            relaxed load of the sleeper count. ck: ck_ec32_inc on a
 *            multi-producer event count (one locked RMW per signal).
 *   dekker   a store, a full store->load fence, a load: the fence the hot
 *            side needs. own: accel__fence_hot. ck: ck_pr_fence_memory.
 *            (The cold side's accel__fence_cold, a membarrier syscall, is
 *            reported alone: it is what the sleeper pays instead.)
 *   cas      an uncontended 64-bit CAS: C11 atomic_compare_exchange vs
 *            ck_pr_cas_64 (the same instruction: a check that nothing is
 *            lost by staying with C11).
 *
 * Each repetition runs own then ck (the order alternating); medians over
 * --reps; ratio = ck ns / own ns (> 1: own faster). The white-box parts
 * need the runtime's internal symbols, which only a static libaccel
 * provides (weak references; skipped in a shared build).
 */
#include "bench.h"

#include <ck_bitmap.h>
#include <ck_ec.h>
#include <ck_pr.h>
#include <ck_stack.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "futex.h"
#include "sched_core.h"

#pragma weak accel__sched_nodes_init
#pragma weak accel__sched_nodes_fini
#pragma weak accel__sched_node_get
#pragma weak accel__sched_node_put
#pragma weak accel__sched_cal_push
#pragma weak accel__sched_cal_pop
#pragma weak accel__sched_cal_first
#pragma weak accel__fence_init
#pragma weak accel__fence_cold
#pragma weak accel__membarrier_ok

#define STACK_NODES 64

static struct {
    uint64_t iters;
    int reps;
    bool smoke;
    const char *json;
} opt = {.iters = 2000000, .reps = 7};

/* ---------------------------------------------------------------- stack */

static accel__sched_nodes own_nodes;
static ck_stack_t ck_stk;
static ck_stack_entry_t ck_entries[STACK_NODES];

static void stacks_init(void)
{
    if (accel__sched_nodes_init(&own_nodes, STACK_NODES) != ACCEL_OK)
        abort();
    uint32_t idx[STACK_NODES];
    for (int i = 0; i < STACK_NODES; i++)
        idx[i] = accel__sched_node_get(&own_nodes); /* fresh nodes */
    for (int i = 0; i < STACK_NODES; i++)
        accel__sched_node_put(&own_nodes, idx[i]);
    ck_stack_init(&ck_stk);
    for (int i = 0; i < STACK_NODES; i++)
        ck_stack_push_mpmc(&ck_stk, &ck_entries[i]);
}

typedef struct stack_arg {
    bool ck;
    uint64_t iters;
    pthread_barrier_t *bar;
} stack_arg;

static void *stack_loop(void *p)
{
    stack_arg *a = p;
    if (a->bar)
        pthread_barrier_wait(a->bar);
    if (a->ck) {
        for (uint64_t i = 0; i < a->iters; i++) {
            ck_stack_entry_t *e = ck_stack_pop_mpmc(&ck_stk);
            if (e)
                ck_stack_push_mpmc(&ck_stk, e);
        }
    } else {
        for (uint64_t i = 0; i < a->iters; i++) {
            /* Never empty (64 nodes, at most 2 out): get pops. */
            uint32_t idx = accel__sched_node_get(&own_nodes);
            accel__sched_node_put(&own_nodes, idx);
        }
    }
    return NULL;
}

static double run_stack(bool ck, unsigned threads)
{
    pthread_t th[2];
    stack_arg a[2];
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, threads);
    uint64_t t0 = bench_now_ns();
    for (unsigned t = 0; t < threads; t++) {
        a[t] = (stack_arg){ck, opt.iters, threads > 1 ? &bar : NULL};
        pthread_create(&th[t], NULL, stack_loop, &a[t]);
    }
    for (unsigned t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    uint64_t t1 = bench_now_ns();
    pthread_barrier_destroy(&bar);
    return (double)(t1 - t0) / (double)(opt.iters * threads);
}

/* ------------------------------------------------------------ find-first */

#define FFS_POS 16
static accel__sched_cal *own_cal;
static accel__sched_nodes cal_nodes;
static CK_BITMAP_INSTANCE(ACCEL__CAL_BUCKETS) ck_map;
static unsigned ffs_pos[FFS_POS];
static volatile int ffs_sink;

static void ffs_init(void)
{
    own_cal = aligned_alloc(64, sizeof *own_cal);
    if (!own_cal || accel__sched_nodes_init(&cal_nodes, 4) != ACCEL_OK)
        abort();
    memset(own_cal, 0, sizeof *own_cal);
    CK_BITMAP_INIT(&ck_map, ACCEL__CAL_BUCKETS, false);
    bench_rng r;
    bench_rng_seed(&r, 42, 7);
    for (int i = 0; i < FFS_POS; i++)
        ffs_pos[i] = (unsigned)bench_rng_range(&r, 0, ACCEL__CAL_BUCKETS - 1);
}

static double run_ffs(bool ck)
{
    uint64_t per = opt.iters / FFS_POS, total = 0;
    uint64_t t0 = bench_now_ns();
    int sink = 0;
    for (int p = 0; p < FFS_POS; p++) {
        unsigned bucket = ffs_pos[p];
        if (ck) {
            CK_BITMAP_SET(&ck_map, bucket);
            for (uint64_t i = 0; i < per; i++) {
                struct ck_bitmap_iterator it;
                unsigned bit = 0;
                CK_BITMAP_ITERATOR_INIT(&it, &ck_map);
                CK_BITMAP_NEXT(&ck_map, &it, &bit);
                sink += (int)bit;
            }
            CK_BITMAP_RESET(&ck_map, bucket);
        } else {
            bool back = false; /* a pick's repairs, as the scheduler's */
            uint32_t idx = accel__sched_node_get(&cal_nodes);
            accel__sched_cal_push(own_cal, &cal_nodes, bucket, idx);
            for (uint64_t i = 0; i < per; i++)
                sink += accel__sched_cal_first(own_cal, 0, &back);
            idx = accel__sched_cal_pop(own_cal, &cal_nodes, bucket, &back);
            accel__sched_node_put(&cal_nodes, idx);
        }
        total += per;
    }
    uint64_t t1 = bench_now_ns();
    ffs_sink = sink;
    return (double)(t1 - t0) / (double)total;
}

/* --------------------------------------------------------------- signal */

static int ec_gettime(const struct ck_ec_ops *ops, struct timespec *out)
{
    (void)ops;
    return clock_gettime(CLOCK_MONOTONIC, out);
}

static void ec_wait32(const struct ck_ec_wait_state *st, const uint32_t *addr,
                      uint32_t expected, const struct timespec *deadline)
{
    (void)st;
    (void)deadline;
    syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void ec_wake32(const struct ck_ec_ops *ops, const uint32_t *addr)
{
    (void)ops;
    syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static const struct ck_ec_ops ec_ops = {
    .gettime = ec_gettime, .wait32 = ec_wait32, .wake32 = ec_wake32};
static const struct ck_ec_mode ec_mp = {.ops = &ec_ops, .single_producer = false};

static struct {
    _Alignas(64) struct ck_ec32 ec;
    _Atomic uint32_t progress;
    _Atomic uint32_t sleepers;
} sig;
static uint64_t sig_wakes;

static double run_signal(bool ck)
{
    uint64_t t0 = bench_now_ns();
    if (ck) {
        for (uint64_t i = 0; i < opt.iters; i++)
            ck_ec32_inc(&sig.ec, &ec_mp);
    } else {
        for (uint64_t i = 0; i < opt.iters; i++) {
            /* the hot side: progress, fence, "anyone asleep?" */
            atomic_store_explicit(&sig.progress, (uint32_t)i, memory_order_release);
            accel__fence_hot();
            if (atomic_load_explicit(&sig.sleepers, memory_order_relaxed))
                sig_wakes++;
        }
    }
    return (double)(bench_now_ns() - t0) / (double)opt.iters;
}

/* --------------------------------------------------------------- dekker */

static struct {
    _Alignas(64) _Atomic uint64_t x;
    _Alignas(64) _Atomic uint64_t y;
} dk;
static uint64_t dk_sink;

static double run_dekker(int which) /* 0 own, 1 ck, 2 own cold */
{
    uint64_t n = which == 2 ? opt.iters / 1000 + 1 : opt.iters, s = 0;
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++) {
        atomic_store_explicit(&dk.x, i, memory_order_relaxed);
        if (which == 0)
            accel__fence_hot();
        else if (which == 1)
            ck_pr_fence_memory();
        else
            accel__fence_cold();
        s += atomic_load_explicit(&dk.y, memory_order_relaxed);
    }
    dk_sink = s;
    return (double)(bench_now_ns() - t0) / (double)n;
}

/* ------------------------------------------------------------------ cas */

static _Alignas(64) uint64_t cas_word;

static double run_cas(bool ck)
{
    uint64_t t0 = bench_now_ns();
    if (ck) {
        for (uint64_t i = 0; i < opt.iters; i++)
            ck_pr_cas_64(&cas_word, i, i + 1);
    } else {
        _Atomic uint64_t *w = (_Atomic uint64_t *)&cas_word;
        for (uint64_t i = 0; i < opt.iters; i++) {
            uint64_t e = i;
            atomic_compare_exchange_strong_explicit(w, &e, i + 1, memory_order_acq_rel,
                                                    memory_order_relaxed);
        }
    }
    return (double)(bench_now_ns() - t0) / (double)opt.iters;
}

/* -------------------------------------------------------------- driver */

enum { C_STACK1, C_STACK2, C_FFS, C_SIGNAL, C_DEKKER, C_CAS, NCASE };
static const char *const case_name[NCASE] = {"stack1", "stack2", "ffs",
                                             "signal", "dekker", "cas"};

static double run_case(int c, bool ck)
{
    switch (c) {
    case C_STACK1: return run_stack(ck, 1);
    case C_STACK2: return run_stack(ck, 2);
    case C_FFS: return run_ffs(ck);
    case C_SIGNAL: return run_signal(ck);
    case C_DEKKER: return run_dekker(ck ? 1 : 0);
    default: return run_cas(ck);
    }
}

int main(int argc, char **argv)
{
    bench_opt opts[] = {
        {"iters", BENCH_OPT_U64, &opt.iters, "operations per repetition"},
        {"reps", BENCH_OPT_INT, &opt.reps, "repetitions (own and ck interleaved)"},
        {"json", BENCH_OPT_STR, &opt.json, "also write the RESULT objects to this file"},
        {"smoke", BENCH_OPT_FLAG, &opt.smoke, "a short run for CI"},
    };
    int prc = bench_opts_parse(argc, argv,
                               "usage: accel_bench_ck [options]\n"
                               "The runtime's own lock-free pieces vs Concurrency Kit's.",
                               opts, BENCH_COUNTOF(opts));
    if (prc)
        return prc < 0 ? 2 : 0;
    if (opt.smoke) {
        opt.iters = 100000;
        opt.reps = 3;
    }
    if (opt.reps < 1 || opt.iters < FFS_POS)
        return 2;
    if (opt.json && bench_result_json_open(opt.json) != 0) {
        fprintf(stderr, "cannot write %s\n", opt.json);
        return 2;
    }
    bench_banner("ck", 42);
    /* A runtime, unused: it links in the objects whose internal symbols
     * the weak references name (an archive member is not pulled in for a
     * weak reference alone), and sets up the fences. */
    accel_runtime *rt = NULL;
    accel_runtime_config rcfg = {.workers = 1};
    if (accel_runtime_create(&rcfg, &rt) != ACCEL_OK)
        return 1;
    if (!accel__sched_nodes_init || !accel__fence_init) {
        printf("# skipped: the runtime's internal symbols need a static libaccel\n");
        return 0;
    }
    accel__fence_init();
    stacks_init();
    ffs_init();
    printf("# ns/op, median of %d repetitions (own and ck interleaved); ratio = ck/own "
           "(> 1: own faster); membarrier %s\n",
           opt.reps, accel__membarrier_ok ? "on" : "off (both fences are mfence)");
    for (int c = 0; c < NCASE; c++) {
        double own[64], ck[64];
        int reps = opt.reps > 64 ? 64 : opt.reps;
        for (int r = 0; r < reps; r++) {
            bool ck_first = r & 1;
            double a = run_case(c, ck_first);
            double b = run_case(c, !ck_first);
            own[r] = ck_first ? b : a;
            ck[r] = ck_first ? a : b;
        }
        double mo = bench_median_f64(own, (size_t)reps);
        double mc = bench_median_f64(ck, (size_t)reps);
        printf("%-8s own %8.2f  ck %8.2f  ns/op   ck/own %.2f\n", case_name[c], mo, mc,
               mo > 0 ? mc / mo : 0);
        bench_result res;
        bench_result_begin(&res, "ck", case_name[c]);
        bench_result_f64(&res, "own_ns", mo);
        bench_result_f64(&res, "ck_ns", mc);
        bench_result_f64(&res, "ck_over_own", mo > 0 ? mc / mo : 0);
        bench_result_emit(&res);
    }
    double cold[64];
    int reps = opt.reps > 64 ? 64 : opt.reps;
    for (int r = 0; r < reps; r++)
        cold[r] = run_dekker(2);
    double mcold = bench_median_f64(cold, (size_t)reps);
    printf("%-8s own accel__fence_cold %.0f ns/op (the sleeper's side)\n", "cold", mcold);
    bench_result res;
    bench_result_begin(&res, "ck", "fence_cold");
    bench_result_f64(&res, "own_ns", mcold);
    bench_result_emit(&res);
    accel__sched_nodes_fini(&own_nodes);
    accel__sched_nodes_fini(&cal_nodes);
    free(own_cal);
    accel_runtime_destroy(rt);
    bench_result_json_close();
    return 0;
}
