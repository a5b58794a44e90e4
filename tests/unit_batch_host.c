/*
 * Dynamic batching on a host-driven runtime (ACCEL_RUNTIME_HOST_WORKERS,
 * include/accel/host.h): a host visit of a batched session hands out one
 * batch, formed as accel's own worker forms one: what is queued, up to
 * max_ops and the host's cap (cap above ACCEL_HOST_VISIT_MAX, up to
 * ACCEL_BATCH_MAX); ops cancelled or expired before it forms are left
 * out and completed unrun in FIFO order; each op's status reaches its
 * done; the batch counts in the session's statistics and as one op to
 * the scheduler; exactly once and FIFO with producers racing a polling
 * host thread; runtime destroy runs what is still queued through the
 * config's batch function.
 *
 * The "host" is the test's own thread (or one it starts, polling). No
 * timing thresholds: a deadline is passed by waiting until the clock is
 * beyond it.
 *
 * Promises: 1, 2, 5
 */
#define _GNU_SOURCE /* nanosleep */
#include <criterion/criterion.h>
#include <stdint.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "batch.h"
#include "batch_item.h"
#include "core_util.h"
#include <accel/host.h>
#include "unit_watchdog.h"

UNIT_WATCHDOG_SUITE(batch_host);

static void host_wake(void *arg, unsigned lane)
{
    (void)arg;
    (void)lane;
}

static accel_runtime *host_runtime(unsigned workers)
{
    accel_runtime_config c = {.workers = workers,
                              .struct_size = sizeof(c),
                              .block_detect_ns = TU_NO_DETECT_NS,
                              .flags = ACCEL_RUNTIME_HOST_WORKERS,
                              .host_wake = host_wake};
    accel_runtime *rt = NULL;
    cr_assert_eq(accel_runtime_create(&c, &rt), ACCEL_OK);
    return rt;
}

static _Atomic int cfg_fn_calls;
static _Atomic int cfg_fn_ops;

/* The config's batch function: a host visit never calls it (the host
 * runs the batch); destroy's thread does. */
static void cfg_batch_fn(accel_ctx *ctx, void *const *args, uint32_t n,
                         int *status, void *user)
{
    (void)ctx;
    (void)user;
    atomic_fetch_add(&cfg_fn_calls, 1);
    atomic_fetch_add(&cfg_fn_ops, (int)n);
    for (uint32_t i = 0; i < n; i++) {
        item *it = args[i];
        atomic_fetch_add(&it->ran, 1);
        status[i] = it->want;
    }
}

/* One host visit on slot w with cap: the host "runs" the batch (marks
 * each op ran, reports its want). Returns begin's status and the ops
 * handed in *n. */
static int host_visit(accel_runtime *rt, unsigned w, unsigned cap,
                      unsigned *n)
{
    accel_op ops[ACCEL_BATCH_MAX];
    int st[ACCEL_BATCH_MAX];
    *n = 0;
    int rc = accel_host_visit_begin(rt, w, ops, cap, n);
    if (rc != ACCEL_OK)
        return rc;
    for (unsigned i = 0; i < *n; i++) {
        item *it = ops[i].arg;
        atomic_fetch_add(&it->ran, 1);
        st[i] = it->want;
    }
    cr_assert_eq(accel_host_visit_end(rt, w, st, *n), ACCEL_OK);
    return rc;
}

static accel_session_stats stats(accel_session *s)
{
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats_ex(s, &st, sizeof(st)), ACCEL_OK);
    return st;
}

Test(batch_host, a_visit_hands_out_one_batch, .timeout = 60)
{
    accel_runtime *rt = host_runtime(1);
    accel_session *s = tu_open(rt, "b", 1024, 0);
    accel_batch_config c = {.fn = cfg_batch_fn, .max_ops = 100};
    cr_assert_eq(accel_session_set_batch(s, &c), ACCEL_OK,
                 "a host-driven runtime's session takes a batch function");
    static item it[300];
    memset(it, 0, sizeof(it));
    for (int i = 0; i < 300; i++) {
        it[i].want = i % 7 == 0 ? 3 : 0;
        accel_op op = item_op(&it[i]);
        cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    }
    unsigned n;
    unit_step("first visit, cap 256");
    cr_assert_eq(host_visit(rt, 0, ACCEL_BATCH_MAX, &n), ACCEL_OK);
    cr_assert_eq(n, 100, "one batch of max_ops, not the %u of a plain visit: %u",
                 ACCEL_HOST_VISIT_MAX, n);
    unit_step("second visit, cap 40");
    cr_assert_eq(host_visit(rt, 0, 40, &n), ACCEL_OK);
    cr_assert_eq(n, 40, "the host's cap: %u", n);
    unit_step("third visit, cap above ACCEL_BATCH_MAX");
    cr_assert_eq(host_visit(rt, 0, 100000, &n), ACCEL_OK);
    cr_assert_eq(n, 100, "%u", n);
    cr_assert_eq(host_visit(rt, 0, ACCEL_BATCH_MAX, &n), ACCEL_OK);
    cr_assert_eq(n, 60, "what is left: %u", n);
    cr_assert_eq(host_visit(rt, 0, ACCEL_BATCH_MAX, &n), ACCEL_EAGAIN);
    for (int i = 0; i < 300; i++) {
        cr_assert_eq(atomic_load(&it[i].ran), 1, "op %d ran once", i);
        cr_assert_eq(atomic_load(&it[i].fn_calls), 0);
        cr_assert_eq(atomic_load(&it[i].done_calls), 1);
        cr_assert_eq(atomic_load(&it[i].status), it[i].want);
    }
    cr_assert_eq(atomic_load(&cfg_fn_calls), 0, "the host ran the batches");
    accel_session_stats st = stats(s);
    cr_assert_eq(st.batches, 4);
    cr_assert_eq(st.batch_ops, 300);
    cr_assert_eq(st.batch_size_hist[5], 2); /* 40, 60 */
    cr_assert_eq(st.batch_size_hist[6], 2); /* 100, 100 */
    cr_assert_eq(st.dispatched, 300);
    cr_assert_eq(st.failed, 43); /* i % 7 == 0 */
    cr_assert_eq(st.completed, 257);
    cr_assert_eq(st.visits, 4, "one visit per batch");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* Holding back (max_delay_ns) on a host visit, as accel's own worker
 * holds: a visit that finds fewer than max_ops ops hands out none and the
 * session is held, in no queue (the next visit finds nothing), until the
 * batch fills (a submit releases it) or the delay passes (the runtime's
 * timer releases it). Planted (the host's form ignoring the delay), the
 * first visit hands out the 2 ops queued. */
Test(batch_host, held_back_until_the_batch_fills_or_the_delay_passes,
     .timeout = 60)
{
    accel_runtime *rt = host_runtime(1);
    accel_session *s = tu_open(rt, "h", 1024, 0);
    accel_batch_config c = {.fn = cfg_batch_fn, .max_ops = 4,
                            .max_delay_ns = ACCEL_BATCH_DELAY_MAX};
    cr_assert_eq(accel_session_set_batch(s, &c), ACCEL_OK,
                 "a host-driven runtime's session takes a delay");
    static item it[5];
    memset(it, 0, sizeof(it));
    unsigned n;
    unit_step("2 of 4 queued: the visit holds the session");
    for (int i = 0; i < 2; i++) {
        accel_op op = item_op(&it[i]);
        cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    }
    cr_assert_eq(host_visit(rt, 0, ACCEL_BATCH_MAX, &n), ACCEL_OK);
    cr_assert_eq(n, 0, "a batch of %u handed out before it filled", n);
    cr_assert_eq(host_visit(rt, 0, ACCEL_BATCH_MAX, &n), ACCEL_EAGAIN,
                 "a held session was visited again");
    unit_step("2 more: the batch fills, the session comes back");
    for (int i = 2; i < 4; i++) {
        accel_op op = item_op(&it[i]);
        cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    }
    cr_assert_eq(host_visit(rt, 0, ACCEL_BATCH_MAX, &n), ACCEL_OK);
    cr_assert_eq(n, 4, "%u", n);
    unit_step("a short delay: the timer releases a batch of one");
    c.max_delay_ns = 20000000; /* 20 ms */
    cr_assert_eq(accel_session_set_batch(s, &c), ACCEL_OK);
    accel_op op = item_op(&it[4]);
    cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    cr_assert_eq(host_visit(rt, 0, ACCEL_BATCH_MAX, &n), ACCEL_OK);
    cr_assert_eq(n, 0, "a batch of %u handed out before the delay", n);
    while (host_visit(rt, 0, ACCEL_BATCH_MAX, &n) == ACCEL_EAGAIN)
        tu_nap_us(1000);
    cr_assert_eq(n, 1, "%u", n);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(atomic_load(&it[i].ran), 1, "op %d ran once", i);
        cr_assert_eq(atomic_load(&it[i].done_calls), 1);
    }
    accel_session_stats st = stats(s);
    cr_assert_eq(st.batches, 2);
    cr_assert_eq(st.batch_ops, 5);
    cr_assert_gt(st.batch_held_ns, 0, "no time held back counted");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* accel_runtime_destroy of a host-driven runtime runs what is left of a
 * session with a hold-back, held or not: 2 ops held by a visit (it
 * handed out none) and 3 more of another session never visited, both
 * with a delay of a second. Planted (destroy leaving holds as they are),
 * destroy waits for a worker that never comes: the watchdog names the
 * step. */
Test(batch_host, destroy_runs_held_and_delayed_sessions, .timeout = 60)
{
    accel_runtime *rt = host_runtime(1);
    accel_session *h = tu_open(rt, "held", 1024, 0);
    accel_session *q = tu_open(rt, "queued", 1024, 0);
    accel_batch_config c = {.fn = cfg_batch_fn, .max_ops = 8,
                            .max_delay_ns = ACCEL_BATCH_DELAY_MAX};
    cr_assert_eq(accel_session_set_batch(h, &c), ACCEL_OK);
    cr_assert_eq(accel_session_set_batch(q, &c), ACCEL_OK);
    static item it[5];
    memset(it, 0, sizeof(it));
    atomic_store(&cfg_fn_calls, 0);
    atomic_store(&cfg_fn_ops, 0);
    for (int i = 0; i < 5; i++) {
        accel_op op = item_op(&it[i]);
        cr_assert_eq(accel_submit(i < 2 ? h : q, &op, ACCEL_NO_WAIT), ACCEL_OK);
    }
    unsigned n;
    unit_step("a visit of the held session hands out nothing");
    accel_op ops[ACCEL_BATCH_MAX];
    cr_assert_eq(accel_host_visit_begin(rt, 0, ops, ACCEL_BATCH_MAX, &n),
                 ACCEL_OK);
    cr_assert_eq(n, 0, "%u", n);
    cr_assert_eq(accel_host_visit_end(rt, 0, NULL, 0), ACCEL_OK);
    /* The handles stay: a release drains, which needs a host worker
     * (host.h); destroy frees the sessions with them. */
    unit_step("destroy runs the 5 ops, held or queued");
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(atomic_load(&it[i].done_calls), 1, "op %d done once", i);
    cr_assert_eq(atomic_load(&cfg_fn_ops), 5, "through the batch function");
}

/* The release window (batch.h's seam): the timer's first release stops
 * right after its CAS won, before it enqueues the session. */
static tu_seam_stop rel;
static void release_window(accel_session *s)
{
    (void)s;
    tu_seam_stop_first(&rel);
}

static void *destroy_main(void *arg)
{
    return (void *)(intptr_t)accel_runtime_destroy(arg);
}

/* Destroy of a host-driven runtime while the hold-back timer is in the
 * middle of a release (its CAS won, the session not yet queued): the
 * held ops still run, on destroy's thread. Here the timer stops in that
 * window (the seam) until destroy has begun; then it goes on. Planted
 * (destroy releases holds and runs the queue before it stops the timer,
 * as before this test): destroy finds the session neither held nor
 * queued, runs nothing, and its close waits for ever for ops that only a
 * host worker, stopped by now, would run (the step below never ends). */
Test(batch_host, destroy_while_the_timer_releases_runs_the_held_ops,
     .timeout = 60)
{
    accel_runtime *rt = host_runtime(1);
    accel_session *h = tu_open(rt, "held", 64, 0);
    accel_batch_config c = {.fn = cfg_batch_fn, .max_ops = 8,
                            .max_delay_ns = 20 * 1000 * 1000};
    cr_assert_eq(accel_session_set_batch(h, &c), ACCEL_OK);
    static item it[2];
    memset(it, 0, sizeof(it));
    rel = (tu_seam_stop){0};
    atomic_store(&accel__batch_release_hook, release_window);
    for (int i = 0; i < 2; i++) {
        accel_op op = item_op(&it[i]);
        cr_assert_eq(accel_submit(h, &op, ACCEL_NO_WAIT), ACCEL_OK);
    }
    unit_step("a visit holds the session");
    accel_op ops[ACCEL_BATCH_MAX];
    unsigned n;
    cr_assert_eq(accel_host_visit_begin(rt, 0, ops, ACCEL_BATCH_MAX, &n),
                 ACCEL_OK);
    cr_assert_eq(n, 0, "%u", n);
    cr_assert_eq(accel_host_visit_end(rt, 0, NULL, 0), ACCEL_OK);
    unit_step("the timer's release stops after its CAS");
    tu_seam_wait_in(&rel);
    unit_step("destroy begins; the timer goes on");
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, destroy_main, rt), 0);
    tu_nap_us(50000); /* destroy's start; either order must work */
    atomic_store(&rel.go, 1);
    unit_step("destroy returns, the held ops run on its thread");
    void *rc;
    pthread_join(t, &rc);
    atomic_store(&accel__batch_release_hook, NULL);
    cr_assert_eq((int)(intptr_t)rc, ACCEL_OK);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(atomic_load(&it[i].done_calls), 1, "op %d done once", i);
}

static void nap_past(int64_t deadline)
{
    while (accel_now_ns() <= deadline) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}

Test(batch_host, cancelled_and_expired_left_out_in_fifo, .timeout = 60)
{
    accel_runtime *rt = host_runtime(1);
    accel_session *s = tu_open(rt, "b", 64, 0);
    accel_batch_config c = {.fn = cfg_batch_fn, .max_ops = 64};
    cr_assert_eq(accel_session_set_batch(s, &c), ACCEL_OK);
    static item it[12];
    memset(it, 0, sizeof(it));
    _Atomic int seq = 0;
    accel_ticket t[12];
    int64_t soon = accel_now_ns() + 1000000; /* 1 ms */
    for (int i = 0; i < 12; i++) {
        it[i].seq = &seq;
        accel_op op = item_op(&it[i]);
        int64_t dl = i % 4 == 1 ? soon : 0;
        cr_assert_eq(accel_submit_ex(s, &op, dl, ACCEL_NO_WAIT, &t[i]),
                     ACCEL_OK);
    }
    for (int i = 0; i < 12; i++)
        if (i % 4 == 2)
            cr_assert_eq(accel_cancel(&t[i]), ACCEL_OK);
    nap_past(soon);
    unsigned n;
    cr_assert_eq(host_visit(rt, 0, ACCEL_BATCH_MAX, &n), ACCEL_OK);
    cr_assert_eq(n, 6, "12 less 3 expired and 3 cancelled: %u", n);
    for (int i = 0; i < 12; i++) {
        int want = i % 4 == 1 ? ACCEL_EEXPIRED
                   : i % 4 == 2 ? ACCEL_ECANCELED
                                : 0;
        cr_assert_eq(atomic_load(&it[i].ran), want ? 0 : 1, "op %d", i);
        cr_assert_eq(atomic_load(&it[i].status), want, "op %d: %d", i,
                     atomic_load(&it[i].status));
        cr_assert_eq(atomic_load(&it[i].done_calls), 1);
        cr_assert_eq(atomic_load(&it[i].done_seq), i, "FIFO dones");
    }
    accel_session_stats st = stats(s);
    cr_assert_eq(st.batches, 1);
    cr_assert_eq(st.batch_ops, 6);
    cr_assert_eq(st.expired, 3);
    cr_assert_eq(st.cancelled, 3);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

#define PRODUCERS 4
#define PER_PRODUCER 3000
#define MAX_OPS 48

typedef struct prod {
    accel_session *s;
    item *it;
    _Atomic int seq;
} prod;

static void *producer_main(void *p)
{
    prod *pr = p;
    for (int i = 0; i < PER_PRODUCER; i++) {
        accel_op op = item_op(&pr->it[i]);
        cr_assert_eq(accel_submit(pr->s, &op, ACCEL_FOREVER), ACCEL_OK);
    }
    return NULL;
}

typedef struct driver {
    accel_runtime *rt;
    unsigned w;
    _Atomic bool stop;
    unsigned max_seen, over;
} driver;

static void *driver_main(void *p)
{
    driver *d = p;
    for (;;) {
        unsigned n;
        int rc = host_visit(d->rt, d->w, ACCEL_BATCH_MAX, &n);
        if (rc == ACCEL_OK) {
            if (n > d->max_seen)
                d->max_seen = n;
            continue;
        }
        if (atomic_load(&d->stop))
            return NULL;
        sched_yield();
    }
}

Test(batch_host, exactly_once_fifo_producers_and_host_threads, .timeout = 120)
{
    accel_runtime *rt = host_runtime(2);
    accel_session *s = tu_open(rt, "b", 256, 0);
    accel_batch_config c = {.fn = cfg_batch_fn, .max_ops = MAX_OPS};
    cr_assert_eq(accel_session_set_batch(s, &c), ACCEL_OK);
    static item it[PRODUCERS][PER_PRODUCER];
    static prod pr[PRODUCERS];
    memset(it, 0, sizeof(it));
    driver d[2] = {{.rt = rt, .w = 0}, {.rt = rt, .w = 1}};
    pthread_t dt[2], pt[PRODUCERS];
    for (int i = 0; i < 2; i++)
        pthread_create(&dt[i], NULL, driver_main, &d[i]);
    for (int p = 0; p < PRODUCERS; p++) {
        pr[p] = (prod){.s = s, .it = it[p]};
        for (int i = 0; i < PER_PRODUCER; i++)
            it[p][i].seq = &pr[p].seq;
        pthread_create(&pt[p], NULL, producer_main, &pr[p]);
    }
    unit_step("producers");
    for (int p = 0; p < PRODUCERS; p++)
        pthread_join(pt[p], NULL);
    unit_step("sync");
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    for (int i = 0; i < 2; i++) {
        atomic_store(&d[i].stop, true);
        pthread_join(dt[i], NULL);
    }
    for (int p = 0; p < PRODUCERS; p++)
        for (int i = 0; i < PER_PRODUCER; i++) {
            cr_assert_eq(atomic_load(&it[p][i].ran), 1);
            cr_assert_eq(atomic_load(&it[p][i].done_calls), 1);
            cr_assert_eq(atomic_load(&it[p][i].done_seq), i,
                         "producer %d op %d done %d-th", p, i,
                         atomic_load(&it[p][i].done_seq));
        }
    cr_assert(d[0].max_seen <= MAX_OPS && d[1].max_seen <= MAX_OPS,
              "batches of %u and %u ops, max %u", d[0].max_seen,
              d[1].max_seen, MAX_OPS);
    accel_session_stats st = stats(s);
    cr_assert_eq(st.batch_ops, PRODUCERS * PER_PRODUCER);
    cr_assert_eq(st.completed, PRODUCERS * PER_PRODUCER);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(batch_host, destroy_runs_what_is_queued_through_the_batch_fn,
     .timeout = 60)
{
    accel_runtime *rt = host_runtime(1);
    accel_session *s = tu_open(rt, "b", 64, 0);
    accel_batch_config c = {.fn = cfg_batch_fn, .max_ops = 8};
    cr_assert_eq(accel_session_set_batch(s, &c), ACCEL_OK);
    static item it[20];
    memset(it, 0, sizeof(it));
    for (int i = 0; i < 20; i++) {
        accel_op op = item_op(&it[i]);
        cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    }
    atomic_store(&cfg_fn_calls, 0);
    atomic_store(&cfg_fn_ops, 0);
    /* not released: a release drains, which needs a host worker; destroy
     * closes it */
    unit_step("destroy");
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    cr_assert_eq(atomic_load(&cfg_fn_ops), 20);
    cr_assert_geq(atomic_load(&cfg_fn_calls), 3, "batches of 8 at most");
    for (int i = 0; i < 20; i++) {
        cr_assert_eq(atomic_load(&it[i].ran), 1);
        cr_assert_eq(atomic_load(&it[i].fn_calls), 0);
        cr_assert_eq(atomic_load(&it[i].done_calls), 1);
    }
}
