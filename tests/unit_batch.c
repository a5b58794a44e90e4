/*
 * Dynamic batching (accel_session_set_batch, docs/batching.md): exactly
 * once and FIFO across many batches with several producers; a batch takes
 * what is queued (up to max_ops); an op canceled or expired before its
 * batch forms is left out; op errors and the session's budget reach each
 * op; close DRAIN and CANCEL while a batch runs; the batch's time is
 * charged to its session (fair share at the scheduler level); bad
 * configuration changes nothing; clearing falls back to one by one.
 *
 * No timing thresholds: a gate inside the batch function holds the
 * session's consumer while the test queues, cancels or closes; deadlines
 * pass while it is held.
 *
 * Promises: 1, 2, 3, 4, 5
 */
#define _GNU_SOURCE /* nanosleep, clock_gettime */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "batch_item.h"
#include "core_util.h"
#include "unit_watchdog.h"

UNIT_WATCHDOG_SUITE(batch);

/* The batch function's state: the sizes of its calls, and a gate its
 * first call waits at when `gated`. */
#define SIZES_MAX 4096
typedef struct bstate {
    bool gated;
    tu_latch gate;
    _Atomic int calls, started;
    _Atomic uint32_t sizes[SIZES_MAX];
    _Atomic int wrong_session;
} bstate;

static void batch_fn(accel_ctx *ctx, void *const *args, uint32_t n,
                     int *status, void *user)
{
    bstate *b = user;
    int call = atomic_fetch_add(&b->calls, 1);
    if (call < SIZES_MAX)
        atomic_store(&b->sizes[call], n);
    if (accel_current_session() != accel_ctx_session(ctx))
        atomic_fetch_add(&b->wrong_session, 1);
    atomic_fetch_add_explicit(&b->started, 1, memory_order_release);
    if (b->gated && call == 0)
        tu_latch_wait(&b->gate);
    void *mem[ACCEL_BATCH_MAX];
    for (uint32_t i = 0; i < n; i++) {
        item *it = args[i];
        atomic_fetch_add(&it->in_batch, 1);
        status[i] = it->want;
        mem[i] = NULL;
        if (it->alloc) {
            int rc = accel_ctx_alloc(ctx, (size_t)it->alloc, &mem[i]);
            if (rc != ACCEL_OK)
                status[i] = rc;
        }
    }
    for (uint32_t i = 0; i < n; i++)
        accel_ctx_free(ctx, mem[i]);
}

static accel_batch_config bcfg(bstate *b, uint32_t max_ops)
{
    return (accel_batch_config){.fn = batch_fn, .user = b, .max_ops = max_ops};
}

static accel_session_stats stats(accel_session *s)
{
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats_ex(s, &st, sizeof(st)), ACCEL_OK);
    return st;
}

/* Holds the session's consumer in a first batch of one gate item. */
static void hold(accel_session *s, bstate *b, item *gate_item)
{
    unit_step("the gate batch starts");
    accel_op op = item_op(gate_item);
    cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    tu_wait_at_least(&b->started, 1);
}

/* ------------------------------------------------ forming, exactly once */

Test(batch, takes_what_is_queued_up_to_max_ops, .timeout = 60)
{
    accel_runtime *rt = tu_runtime_nodetect(1);
    accel_session *s = tu_open(rt, "b", 1024, 0);
    static bstate b;
    memset(&b, 0, sizeof(b));
    b.gated = true;
    accel_batch_config c = bcfg(&b, 64);
    cr_assert_eq(accel_session_set_batch(s, &c), ACCEL_OK);
    static item gate, it[100];
    memset(&gate, 0, sizeof(gate));
    memset(it, 0, sizeof(it));
    hold(s, &b, &gate);
    unit_step("100 ops queued behind the gate batch");
    for (int i = 0; i < 100; i++) {
        accel_op op = item_op(&it[i]);
        cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    }
    tu_latch_open(&b.gate);
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    /* 1 (the gate), then what was queued: 64 (max_ops) and the rest */
    cr_assert_eq(atomic_load(&b.calls), 3, "%d batch calls",
                 atomic_load(&b.calls));
    cr_assert_eq(atomic_load(&b.sizes[0]), 1);
    cr_assert_eq(atomic_load(&b.sizes[1]), 64, "second batch: %u ops",
                 atomic_load(&b.sizes[1]));
    cr_assert_eq(atomic_load(&b.sizes[2]), 36);
    accel_session_stats st = stats(s);
    cr_assert_eq(st.batches, 3);
    cr_assert_eq(st.batch_ops, 101);
    cr_assert_eq(st.batch_size_hist[0], 1); /* 1 */
    cr_assert_eq(st.batch_size_hist[5], 1); /* 32..63: 36 */
    cr_assert_eq(st.batch_size_hist[6], 1); /* 64..127: 64 */
    cr_assert_eq(st.dispatched, 101);
    cr_assert_eq(st.completed, 101);
    for (int i = 0; i < 100; i++) {
        cr_assert_eq(atomic_load(&it[i].fn_calls), 0, "op fn not called");
        cr_assert_eq(atomic_load(&it[i].in_batch), 1);
        cr_assert_eq(atomic_load(&it[i].done_calls), 1);
    }
    cr_assert_eq(atomic_load(&b.wrong_session), 0);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

#define PRODUCERS 4
#define PER_PRODUCER 5000

typedef struct prod {
    accel_session *s;
    item *it;
    _Atomic int seq; /* done order of this producer's ops */
} prod;

static void *producer_main(void *p)
{
    prod *pr = p;
    for (int i = 0; i < PER_PRODUCER; i++) {
        pr->it[i].idx = i;
        pr->it[i].want = i % 7 == 3 ? 7 : 0;
        pr->it[i].seq = &pr->seq;
        accel_op op = item_op(&pr->it[i]);
        if (accel_submit(pr->s, &op, ACCEL_FOREVER) != ACCEL_OK)
            abort();
    }
    return NULL;
}

Test(batch, exactly_once_fifo_many_batches_producers, .timeout = 120)
{
    accel_runtime *rt = tu_runtime(2);
    accel_session *s = tu_open(rt, "b", 256, 0);
    static bstate b;
    memset(&b, 0, sizeof(b));
    accel_batch_config c = bcfg(&b, 48);
    cr_assert_eq(accel_session_set_batch(s, &c), ACCEL_OK);
    static item it[PRODUCERS][PER_PRODUCER];
    memset(it, 0, sizeof(it));
    static prod pr[PRODUCERS];
    pthread_t th[PRODUCERS];
    unit_step("producers submit");
    for (int p = 0; p < PRODUCERS; p++) {
        pr[p] = (prod){.s = s, .it = it[p]};
        atomic_init(&pr[p].seq, 0);
        pthread_create(&th[p], NULL, producer_main, &pr[p]);
    }
    for (int p = 0; p < PRODUCERS; p++)
        pthread_join(th[p], NULL);
    unit_step("sync after the producers");
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    for (int p = 0; p < PRODUCERS; p++)
        for (int i = 0; i < PER_PRODUCER; i++) {
            item *x = &it[p][i];
            cr_assert_eq(atomic_load(&x->done_calls), 1, "p%d op %d done", p, i);
            cr_assert_eq(atomic_load(&x->in_batch), 1, "p%d op %d batched", p, i);
            cr_assert_eq(atomic_load(&x->fn_calls), 0);
            cr_assert_eq(atomic_load(&x->status), x->want, "p%d op %d status", p,
                         i);
            cr_assert_eq(atomic_load(&x->done_seq), i,
                         "p%d: op %d's done ran as number %d (FIFO)", p, i,
                         atomic_load(&x->done_seq));
        }
    accel_session_stats st = stats(s);
    uint64_t total = (uint64_t)PRODUCERS * PER_PRODUCER;
    cr_assert_eq(st.batch_ops, total);
    cr_assert_eq(st.dispatched, total);
    cr_assert_eq(st.completed + st.failed, total);
    uint64_t hist = 0;
    for (int i = 0; i < ACCEL_BATCH_HIST_BUCKETS; i++)
        hist += st.batch_size_hist[i];
    cr_assert_eq(hist, st.batches);
    cr_assert_eq(st.batches, (uint64_t)atomic_load(&b.calls));
    for (int i = 0; i < atomic_load(&b.calls) && i < SIZES_MAX; i++)
        cr_assert(atomic_load(&b.sizes[i]) >= 1 &&
                  atomic_load(&b.sizes[i]) <= 48);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ------------------------------------------------- cancel and deadline */

Test(batch, canceled_before_forming_never_runs, .timeout = 60)
{
    accel_runtime *rt = tu_runtime_nodetect(1);
    accel_session *s = tu_open(rt, "b", 1024, 0);
    static bstate b;
    memset(&b, 0, sizeof(b));
    b.gated = true;
    accel_batch_config c = bcfg(&b, 256);
    cr_assert_eq(accel_session_set_batch(s, &c), ACCEL_OK);
    static item gate, it[200];
    memset(&gate, 0, sizeof(gate));
    memset(it, 0, sizeof(it));
    _Atomic int seq = 0;
    hold(s, &b, &gate);
    unit_step("200 ops with tickets; every third canceled");
    accel_ticket t[200];
    for (int i = 0; i < 200; i++) {
        it[i].seq = &seq;
        accel_op op = item_op(&it[i]);
        cr_assert_eq(accel_submit_ex(s, &op, 0, ACCEL_FOREVER, &t[i]), ACCEL_OK);
    }
    for (int i = 0; i < 200; i += 3)
        cr_assert_eq(accel_cancel(&t[i]), ACCEL_OK);
    tu_latch_open(&b.gate);
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    for (int i = 0; i < 200; i++) {
        bool canceled = i % 3 == 0;
        cr_assert_eq(atomic_load(&it[i].done_calls), 1);
        cr_assert_eq(atomic_load(&it[i].in_batch), canceled ? 0 : 1,
                     "op %d (canceled %d) in a batch %d times", i, canceled,
                     atomic_load(&it[i].in_batch));
        cr_assert_eq(atomic_load(&it[i].status),
                     canceled ? ACCEL_ECANCELED : 0);
        cr_assert_eq(atomic_load(&it[i].done_seq), i, "FIFO of dones");
        cr_assert_eq(atomic_load(&it[i].fn_calls), 0);
        if (!canceled)
            cr_assert_eq(accel_cancel(&t[i]), ACCEL_EALREADY);
    }
    accel_session_stats st = stats(s);
    cr_assert_eq(st.cancelled, 67);
    cr_assert_eq(st.batch_ops, 1 + 133);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(batch, expired_before_forming_left_out, .timeout = 60)
{
    accel_runtime *rt = tu_runtime_nodetect(1);
    accel_session *s = tu_open(rt, "b", 1024, 0);
    static bstate b;
    memset(&b, 0, sizeof(b));
    b.gated = true;
    accel_batch_config c = bcfg(&b, 256);
    cr_assert_eq(accel_session_set_batch(s, &c), ACCEL_OK);
    static item gate, it[100];
    memset(&gate, 0, sizeof(gate));
    memset(it, 0, sizeof(it));
    _Atomic int seq = 0;
    hold(s, &b, &gate);
    unit_step("100 ops, the odd ones with a deadline 1 ms out");
    int64_t dl = accel_now_ns() + 1000000;
    for (int i = 0; i < 100; i++) {
        it[i].seq = &seq;
        accel_op op = item_op(&it[i]);
        cr_assert_eq(accel_submit_ex(s, &op, i % 2 ? dl : 0, ACCEL_FOREVER,
                                     NULL),
                     ACCEL_OK);
    }
    unit_step("the deadline passes while the gate holds");
    while (accel_now_ns() <= dl)
        tu_nap_us(100);
    tu_latch_open(&b.gate);
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    for (int i = 0; i < 100; i++) {
        bool exp = i % 2;
        cr_assert_eq(atomic_load(&it[i].done_calls), 1);
        cr_assert_eq(atomic_load(&it[i].in_batch), exp ? 0 : 1,
                     "op %d (expired %d) in a batch %d times", i, exp,
                     atomic_load(&it[i].in_batch));
        cr_assert_eq(atomic_load(&it[i].status), exp ? ACCEL_EEXPIRED : 0);
        cr_assert_eq(atomic_load(&it[i].done_seq), i, "FIFO of dones");
    }
    accel_session_stats st = stats(s);
    cr_assert_eq(st.expired, 50);
    cr_assert_eq(st.cancelled, 0);
    cr_assert_eq(st.batch_ops, 1 + 50);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ------------------------------------------------ op errors and budget */

Test(batch, statuses_and_budget_reach_each_op, .timeout = 60)
{
    accel_runtime *rt = tu_runtime_nodetect(1);
    accel_session *s = tu_open(rt, "b", 1024, 250);
    static bstate b;
    memset(&b, 0, sizeof(b));
    b.gated = true;
    accel_batch_config c = bcfg(&b, 16);
    cr_assert_eq(accel_session_set_batch(s, &c), ACCEL_OK);
    static item gate, it[4];
    memset(&gate, 0, sizeof(gate));
    memset(it, 0, sizeof(it));
    hold(s, &b, &gate);
    /* one batch: 100 + 100 bytes fit the 250-byte budget, the third 100
     * does not; the fourth fails with its own error */
    it[0].alloc = it[1].alloc = it[2].alloc = 100;
    it[3].want = 42;
    for (int i = 0; i < 4; i++) {
        accel_op op = item_op(&it[i]);
        cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    }
    tu_latch_open(&b.gate);
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(atomic_load(&b.sizes[1]), 4);
    cr_assert_eq(atomic_load(&it[0].status), 0);
    cr_assert_eq(atomic_load(&it[1].status), 0);
    cr_assert_eq(atomic_load(&it[2].status), ACCEL_EBUDGET, "op 2: %d",
                 atomic_load(&it[2].status));
    cr_assert_eq(atomic_load(&it[3].status), 42, "op 3: %d",
                 atomic_load(&it[3].status));
    accel_session_stats st = stats(s);
    cr_assert_eq(st.failed, 2);
    cr_assert_eq(st.completed, 3);
    cr_assert_eq(st.memory_used, 0, "the batch freed what it took");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---------------------------------------------- close racing a batch */

static void close_while_batch_runs(unsigned flags)
{
    accel_runtime *rt = tu_runtime_nodetect(1);
    accel_session *s = tu_open(rt, "b", 1024, 0);
    static bstate b;
    memset(&b, 0, sizeof(b));
    b.gated = true;
    accel_batch_config c = bcfg(&b, 32);
    cr_assert_eq(accel_session_set_batch(s, &c), ACCEL_OK);
    static item gate, it[300];
    memset(&gate, 0, sizeof(gate));
    memset(it, 0, sizeof(it));
    _Atomic int seq = 0;
    hold(s, &b, &gate);
    unit_step("300 ops queued behind the running batch");
    for (int i = 0; i < 300; i++) {
        it[i].seq = &seq;
        accel_op op = item_op(&it[i]);
        cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    }
    closer_arg ca = {.s = s, .flags = flags};
    pthread_t th;
    pthread_create(&th, NULL, closer_main, &ca);
    unit_step("close begins while the batch runs");
    while (!accel_session_is_closed(s))
        tu_nap_us(50);
    cr_assert_eq(atomic_load_explicit(&ca.returned, memory_order_acquire), 0,
                 "close waits for the running batch");
    tu_latch_open(&b.gate);
    unit_step("close returns");
    pthread_join(th, NULL);
    cr_assert_eq(ca.rc, ACCEL_OK);
    cr_assert_eq(atomic_load(&gate.done_calls), 1);
    cr_assert_eq(atomic_load(&gate.status), 0, "the running batch finished");
    for (int i = 0; i < 300; i++) {
        cr_assert_eq(atomic_load(&it[i].done_calls), 1, "op %d done once", i);
        cr_assert_eq(atomic_load(&it[i].done_seq), i, "FIFO of dones");
        if (flags & ACCEL_CLOSE_CANCEL) {
            cr_assert_eq(atomic_load(&it[i].in_batch), 0,
                         "op %d ran after close(CANCEL) began", i);
            cr_assert_eq(atomic_load(&it[i].status), ACCEL_ECLOSED);
        } else {
            cr_assert_eq(atomic_load(&it[i].in_batch), 1, "op %d ran (DRAIN)",
                         i);
            cr_assert_eq(atomic_load(&it[i].status), 0);
        }
    }
    accel_session_stats st = stats(s);
    cr_assert_eq(st.batch_ops, flags & ACCEL_CLOSE_CANCEL ? 1 : 301);
    cr_assert_eq(st.cancelled, flags & ACCEL_CLOSE_CANCEL ? 300 : 0);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(batch, close_drain_while_batch_runs, .timeout = 60)
{
    close_while_batch_runs(ACCEL_CLOSE_DRAIN);
}

Test(batch, close_cancel_while_batch_runs, .timeout = 60)
{
    close_while_batch_runs(ACCEL_CLOSE_CANCEL);
}

/* ---------------------------------------------------------- fair share */

/* Burns a fixed amount of CPU work: `units` rounds of a loop the
 * compiler cannot drop (no clock: a count, the same for both sessions). */
static void burn_units(long units)
{
    static _Atomic unsigned long sink;
    unsigned long x = 0;
    for (unsigned long i = 0; i < (unsigned long)units * 4000; i++)
        x += i ^ (x >> 3);
    atomic_fetch_add_explicit(&sink, x, memory_order_relaxed);
}


static int burn_fn(accel_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    burn_units(1);
    return 0;
}

/* CPU time spent inside batch calls, as the batch function's thread
 * sees it: what a visit that computes is charged at least (its wall
 * time, docs/scheduler.md). */
static _Atomic uint64_t batch_cpu_ns;

static uint64_t thread_cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void burn_batch(accel_ctx *ctx, void *const *args, uint32_t n,
                       int *status, void *user)
{
    (void)ctx, (void)args, (void)status, (void)user;
    uint64_t t0 = thread_cpu_ns();
    burn_units((long)n); /* no cheaper per op: the share is the test */
    atomic_fetch_add(&batch_cpu_ns, thread_cpu_ns() - t0);
}

typedef struct feeder {
    accel_session *s;
    _Atomic int stop;
} feeder;

static void *feeder_main(void *p)
{
    feeder *f = p;
    accel_op op = {.fn = burn_fn};
    while (!atomic_load(&f->stop)) {
        accel_op ops[64];
        for (int i = 0; i < 64; i++)
            ops[i] = op;
        size_t acc;
        int rc = accel_submit_batch(f->s, ops, 64, 1000000, &acc);
        if (rc == ACCEL_ECLOSED)
            break;
    }
    return NULL;
}

Test(batch, batch_time_charged_fair_share, .timeout = 120)
{
    /* One worker, two backlogged sessions of equal weight, A batched,
     * each op the same CPU work either way. The batch's time is inside
     * A's charged service; the scheduler keeps the two charges about
     * equal (the weights), so neither session takes the worker. A batch
     * left uncharged would let A take it (its virtual time would not
     * move). Charged time is wall time, which other processes'
     * preemption inflates at random: the run lasts 1.5 s of charged
     * service so that one stalled visit moves the ratio little. */
    accel_runtime *rt = tu_runtime_nodetect(1);
    accel_session *a = tu_open(rt, "a", 4096, 0);
    accel_session *bs = tu_open(rt, "b", 4096, 0);
    accel_batch_config c = {.fn = burn_batch, .max_ops = 64};
    cr_assert_eq(accel_session_set_batch(a, &c), ACCEL_OK);
    feeder fa = {.s = a}, fb = {.s = bs};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, feeder_main, &fa);
    pthread_create(&tb, NULL, feeder_main, &fb);
    unit_step("1.5 s of charged service, or 10^6 ops, in all");
    accel_session_stats sa, sb;
    for (;;) {
        sa = stats(a);
        sb = stats(bs);
        if (sa.service_ns + sb.service_ns >= UINT64_C(1500000000) ||
            sa.completed + sb.completed >= 1000000) /* ~2.5x a fair run's */
            break;
        tu_nap_us(1000);
    }
    atomic_store(&fa.stop, 1);
    atomic_store(&fb.stop, 1);
    unit_step("close both (CANCEL)");
    cr_assert_eq(accel_session_close(a, ACCEL_CLOSE_CANCEL), ACCEL_OK);
    cr_assert_eq(accel_session_close(bs, ACCEL_CLOSE_CANCEL), ACCEL_OK);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    /* A close returns at its last op's done; the visit that ran it adds
     * its service after (accel__visit_end): read once the worker parks. */
    unit_step("the last visit ends (the worker parks)");
    for (;;) {
        accel_runtime_stats rs;
        cr_assert_eq(accel_runtime_get_stats(rt, &rs, sizeof(rs)), ACCEL_OK);
        if (rs.parked == rs.workers)
            break;
        tu_nap_us(1000);
    }
    accel_session_stats fin = stats(a);
    uint64_t in_batches = atomic_load(&batch_cpu_ns);
    double ops_ratio = (double)sa.completed / (double)(sb.completed + 1);
    double svc_ratio = (double)sa.service_ns / (double)(sb.service_ns + 1);
    printf("fair share: A (batched) %llu ops in %llu batches, %.3f s "
           "charged (%.3f s of CPU inside batch calls); B %llu ops, %.3f s; "
           "ops A/B %.2f, charged A/B %.2f\n",
           (unsigned long long)sa.completed, (unsigned long long)sa.batches,
           sa.service_ns / 1e9, in_batches / 1e9,
           (unsigned long long)sb.completed, sb.service_ns / 1e9, ops_ratio,
           svc_ratio);
    cr_assert(sa.batches > 0 && sa.batch_ops > sa.batches,
              "A ran batches of more than one op");
    cr_assert(fin.service_ns >= in_batches,
              "A was charged %llu ns, its batch calls used %llu ns of CPU",
              (unsigned long long)fin.service_ns,
              (unsigned long long)in_batches);
    cr_assert(svc_ratio > 1.0 / 3 && svc_ratio < 3.0,
              "charged service A/B %.2f (equal weights)", svc_ratio);
    cr_assert(ops_ratio > 0.1 && ops_ratio < 10.0,
              "equal weights, equal work per op: ops A/B %.2f", ops_ratio);
    accel_session_release(a);
    accel_session_release(bs);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ------------------------------------------------------ configuration */

Test(batch, bad_configuration_changes_nothing, .timeout = 60)
{
    accel_runtime *rt = tu_runtime(1);
    accel_session *s = tu_open(rt, "b", 64, 0);
    static bstate b;
    memset(&b, 0, sizeof(b));
    struct {
        accel_batch_config c;
        int want;
        const char *what;
    } rows[] = {
        {{.max_ops = 4}, ACCEL_EINVAL, "fn NULL with other fields set"},
        {{.fn = batch_fn, .max_ops = 0}, ACCEL_EINVAL, "max_ops 0"},
        {{.fn = batch_fn, .max_ops = ACCEL_BATCH_MAX + 1}, ACCEL_EINVAL,
         "max_ops above ACCEL_BATCH_MAX"},
        {{.max_delay_ns = 1000, .max_ops = 4}, ACCEL_EINVAL,
         "a delay without a fn"},
        {{.fn = batch_fn, .max_ops = 4, .max_delay_ns = ACCEL_BATCH_DELAY_MAX + 1},
         ACCEL_EINVAL, "a delay above the cap"},
        {{.fn = batch_fn, .max_ops = 4, .cost_fixed_ns = 10}, ACCEL_EINVAL,
         "a cost without a delay"},
        {{.fn = batch_fn, .max_ops = 4, .cost_per_op_ns = 10}, ACCEL_EINVAL,
         "a per-op cost without a delay"},
        {{.fn = batch_fn, .max_ops = 4, .struct_size = 8}, ACCEL_EINVAL,
         "struct_size too small"},
    };
    for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
        rows[r].c.user = &b;
        cr_assert_eq(accel_session_set_batch(s, &rows[r].c), rows[r].want,
                     "%s: got %d", rows[r].what,
                     accel_session_set_batch(s, &rows[r].c));
    }
    cr_assert_eq(accel_session_set_batch(NULL, NULL), ACCEL_EINVAL);
    cr_assert_eq(accel_session_set_batch(s, NULL), ACCEL_OK, "nothing to clear");
    /* a newer caller's field past this layout set: refused */
    unsigned char big[sizeof(accel_batch_config) + 8] = {0};
    accel_batch_config ok = bcfg(&b, 4);
    ok.struct_size = sizeof(big);
    memcpy(big, &ok, sizeof(ok));
    big[sizeof(ok) + 3] = 1;
    cr_assert_eq(accel_session_set_batch(s, (accel_batch_config *)(void *)big),
                 ACCEL_EINVAL);
    /* nothing changed: ops run one by one with their fn */
    static item it[8];
    memset(it, 0, sizeof(it));
    for (int i = 0; i < 8; i++) {
        accel_op op = item_op(&it[i]);
        cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    }
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(atomic_load(&it[i].fn_calls), 1);
    cr_assert_eq(atomic_load(&b.calls), 0);
    cr_assert_eq(stats(s).batches, 0);
    /* a set configuration survives a bad one (a fresh session: a visit
     * under way when a function is set still runs its ops one by one) */
    cr_assert_eq(accel_session_close(s, ACCEL_CLOSE_DRAIN), ACCEL_OK);
    accel_session_release(s);
    s = tu_open(rt, "b2", 64, 0);
    ok.struct_size = 0;
    cr_assert_eq(accel_session_set_batch(s, &ok), ACCEL_OK);
    accel_batch_config bad = bcfg(&b, 0);
    cr_assert_eq(accel_session_set_batch(s, &bad), ACCEL_EINVAL);
    memset(it, 0, sizeof(it));
    for (int i = 0; i < 8; i++) {
        accel_op op = item_op(&it[i]);
        cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    }
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(atomic_load(&it[i].fn_calls), 0);
        cr_assert_eq(atomic_load(&it[i].in_batch), 1);
    }
    /* closed */
    cr_assert_eq(accel_session_close(s, ACCEL_CLOSE_DRAIN), ACCEL_OK);
    cr_assert_eq(accel_session_set_batch(s, &ok), ACCEL_ECLOSED);
    cr_assert_eq(accel_session_set_batch(s, NULL), ACCEL_ECLOSED);
    cr_assert_str_eq(accel_strerror(ACCEL_ENOTSUP),
                     "not supported by this session's backend or runtime");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(batch, cleared_runs_ops_one_by_one, .timeout = 60)
{
    accel_runtime *rt = tu_runtime(1);
    accel_session *s = tu_open(rt, "b", 64, 0);
    static bstate b;
    memset(&b, 0, sizeof(b));
    accel_batch_config c = bcfg(&b, 8);
    cr_assert_eq(accel_session_set_batch(s, &c), ACCEL_OK);
    static item it[16];
    memset(it, 0, sizeof(it));
    for (int i = 0; i < 8; i++) {
        accel_op op = item_op(&it[i]);
        cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    }
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_session_set_batch(s, NULL), ACCEL_OK);
    for (int i = 8; i < 16; i++) {
        it[i].want = 5;
        accel_op op = item_op(&it[i]);
        cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    }
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    for (int i = 0; i < 16; i++) {
        cr_assert_eq(atomic_load(&it[i].in_batch), i < 8 ? 1 : 0);
        cr_assert_eq(atomic_load(&it[i].fn_calls), i < 8 ? 0 : 1);
        cr_assert_eq(atomic_load(&it[i].status), i < 8 ? 0 : 5);
    }
    accel_session_stats st = stats(s);
    cr_assert_eq(st.batch_ops, 8, "the counters stay");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}
