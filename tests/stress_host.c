/*
 * Host-driven workers under stress (ACCEL_RUNTIME_HOST_WORKERS): rounds
 * of a runtime whose two worker indexes (one short-lane) are driven by two
 * "host" threads (visits, then the idle protocol with a semaphore per
 * lane as the host's sleep), producers submitting plain and ticketed ops
 * to three sessions and cancelling some, and one session closed with
 * CANCEL while they run. Producers also submit through
 * accel_host_submit_begin on a helper worker of their own (a short-lane
 * worker that never idles, as the Go binding's helping submitters) and run
 * the visit it opens (the direct hand-off, or the worker's own pick), then
 * end it with accel_host_visit_end_stop. Every 256th op naps 2 ms, a
 * wait the host does not announce, which the blocked-op monitor finds on
 * the host workers. The host threads stop and the runtime is destroyed at
 * the end of each round. Session s1 has a batch function: the host
 * workers' visits of it hand out one batch each (up to 48 ops; the workers
 * pass cap ACCEL_BATCH_MAX), which the host runs op by op.
 *
 * Checked, for every op: its done ran exactly once; ECANCELED exactly when
 * a cancel said OK; an unrun op's fn never ran; done calls of one
 * producer's ops on one session come in submit order (plain counters
 * written by the dones, so TSan checks the hand-over between the host
 * threads). A lost wake-up hangs the round (the test's timeout).
 *
 * Usage: accel_stress_host   (ACCEL_STRESS_SECONDS, default 2)
 * Exit 0 when every check passed, 1 otherwise.
 *
 * Promises: 1, 2
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core_util.h"
#include "stress_fail.h"
#include "stress_watchdog.h"

#define NPROD 3
#define NSESS 3
#define PER 2000


typedef struct rec {
    int prod, sess;
    uint64_t seq; /* per (producer, session), from 1 */
    _Atomic int fn_calls, done_calls, status, cancel_ok, accepted;
} rec;

/* Per (producer, session): the seq of the last done. Plain: written only
 * by dones of one session, which never run at once (FIFO hand-over). */
static uint64_t last_done[NPROD][NSESS];

static _Atomic uint32_t op_count;

static int op_fn(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    rec *r = arg;
    atomic_fetch_add_explicit(&r->fn_calls, 1, memory_order_relaxed);
    /* Now and then a nap the host does not announce: the blocked-op
     * monitor samples and counts the worker's thread (compensate.c) while
     * the host threads go on, under TSan. */
    if ((atomic_fetch_add_explicit(&op_count, 1, memory_order_relaxed) &
         255) == 0)
        tu_nap_us(2000);
    return 0;
}

static void op_done(void *arg, int status)
{
    rec *r = arg;
    if (r->seq <= last_done[r->prod][r->sess])
        failf("done out of order: prod %d sess %d seq %llu after %llu",
              r->prod, r->sess, (unsigned long long)r->seq,
              (unsigned long long)last_done[r->prod][r->sess]);
    last_done[r->prod][r->sess] = r->seq;
    atomic_store_explicit(&r->status, status, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->done_calls, 1, memory_order_release);
}

typedef struct host {
    sem_t lane[2];
    accel_runtime *rt;
    _Atomic int stop;
} host;

static void host_wake(void *arg, unsigned lane)
{
    host *h = arg;
    sem_post(&h->lane[lane]);
}

typedef struct host_worker {
    host *h;
    unsigned w, lane;
} host_worker;

/* s1's batch function: runs only where C runs a batch itself (destroy's
 * thread); the host slots run a handed-out batch op by op. */
static void batch_fn(accel_ctx *ctx, void *const *args, uint32_t n,
                     int *status, void *user)
{
    (void)user;
    for (uint32_t i = 0; i < n; i++)
        status[i] = op_fn(ctx, args[i]);
}

static int visit(accel_runtime *rt, unsigned w, bool idle)
{
    accel_op ops[ACCEL_BATCH_MAX];
    int st[ACCEL_BATCH_MAX];
    unsigned n;
    int rc = accel_host_visit_begin(rt, w, ops, ACCEL_BATCH_MAX, &n);
    if (rc != ACCEL_OK)
        return rc;
    if (idle)
        accel_host_idle_end(rt, w, true);
    for (unsigned i = 0; i < n; i++)
        st[i] = ops[i].fn(NULL, ops[i].arg);
    if (accel_host_visit_end(rt, w, st, n) != ACCEL_OK)
        failf("visit_end refused a visit begin opened");
    return rc;
}

static void *host_worker_main(void *arg)
{
    host_worker *t = arg;
    accel_runtime *rt = t->h->rt;
    for (;;) {
        if (visit(rt, t->w, false) == ACCEL_OK)
            continue;
        if (atomic_load(&t->h->stop))
            return NULL;
        accel_host_idle_begin(rt, t->w);
        if (visit(rt, t->w, true) == ACCEL_OK)
            continue;
        sem_wait(&t->h->lane[t->lane]);
        accel_host_idle_end(rt, t->w, false);
    }
}

typedef struct prod {
    int id; /* also its helper worker */
    accel_runtime *rt;
    accel_session *s[NSESS];
    rec *r;
    uint64_t seed;
} prod;

/* A producer's helper worker: submit and begin in one call, run the visit,
 * end it as a worker that stops. */
static int submit_help(accel_runtime *rt, unsigned w, accel_session *s,
                       const accel_op *op)
{
    accel_op ops[ACCEL_HOST_VISIT_MAX];
    int st[ACCEL_HOST_VISIT_MAX];
    unsigned n;
    int begun;
    int rc = accel_host_submit_begin(rt, w, s, op, ACCEL_FOREVER, ops,
                                     ACCEL_HOST_VISIT_MAX, &n, &begun);
    if (rc != ACCEL_OK || begun != ACCEL_OK)
        return rc;
    for (unsigned i = 0; i < n; i++)
        st[i] = ops[i].fn(NULL, ops[i].arg);
    if (accel_host_visit_end_stop(rt, w, st, n) != ACCEL_OK)
        failf("visit_end_stop refused a visit submit_begin opened");
    return rc;
}

static void *prod_main(void *arg)
{
    prod *p = arg;
    uint64_t seq[NSESS] = {0};
    for (int i = 0; i < PER; i++) {
        rec *r = &p->r[i];
        int k = (int)(tu_rand(&p->seed) % NSESS);
        r->prod = p->id;
        r->sess = k;
        r->seq = seq[k] + 1;
        accel_op op = {.fn = op_fn, .done = op_done, .arg = r};
        accel_ticket t;
        bool ticket = tu_rand(&p->seed) % 2;
        int rc = !ticket && tu_rand(&p->seed) % 2
                     ? submit_help(p->rt, (unsigned)p->id, p->s[k], &op)
                     : accel_submit_ex(p->s[k], &op, 0, ACCEL_FOREVER,
                                       ticket ? &t : NULL);
        if (rc == ACCEL_ECLOSED)
            continue;
        if (rc != ACCEL_OK) {
            failf("submit: %d", rc);
            continue;
        }
        seq[k]++;
        atomic_store(&r->accepted, 1);
        if (ticket && tu_rand(&p->seed) % 2) {
            int c = accel_cancel(&t);
            if (c == ACCEL_OK)
                atomic_store(&r->cancel_ok, 1);
            else if (c != ACCEL_EALREADY && c != ACCEL_ECLOSED)
                failf("cancel: %d", c);
        }
    }
    return NULL;
}

static void round_(uint64_t seed)
{
    static host h;
    memset(&h, 0, sizeof(h));
    sem_init(&h.lane[0], 0, 0);
    sem_init(&h.lane[1], 0, 0);
    /* Workers 0..NPROD-1: the producers' helper workers; NPROD: the
     * short-lane worker; NPROD+1: the general one. */
    accel_runtime_config c = {.workers = NPROD + 2,
                              .short_lane_workers = NPROD + 1,
                              .struct_size = sizeof(c),
                              .flags = ACCEL_RUNTIME_HOST_WORKERS,
                              .host_wake = host_wake, .host_wake_arg = &h};
    watchdog_step("host round: create, open, start producers", 120);
    if (accel_runtime_create(&c, &h.rt) != ACCEL_OK) {
        failf("create");
        return;
    }
    memset(last_done, 0, sizeof(last_done));
    host_worker sl[2];
    pthread_t st[2];
    for (unsigned w = 0; w < 2; w++) {
        sl[w] = (host_worker){.h = &h, .w = NPROD + w, .lane = w == 0};
        pthread_create(&st[w], NULL, host_worker_main, &sl[w]);
    }
    accel_session *s[NSESS];
    for (int i = 0; i < NSESS; i++) {
        char id[8] = {'s', (char)('0' + i), 0};
        s[i] = tu_open(h.rt, id, 64, 0);
    }
    accel_batch_config bc = {.fn = batch_fn, .max_ops = 48};
    if (accel_session_set_batch(s[1], &bc) != ACCEL_OK)
        failf("set_batch on s1");
    static rec recs[NPROD][PER];
    memset(recs, 0, sizeof(recs));
    prod p[NPROD];
    pthread_t pt[NPROD];
    for (int i = 0; i < NPROD; i++) {
        p[i] = (prod){.id = i, .rt = h.rt, .r = recs[i],
                      .seed = seed * 31 + (uint64_t)i};
        memcpy(p[i].s, s, sizeof(s));
        pthread_create(&pt[i], NULL, prod_main, &p[i]);
    }
    tu_nap_us(500 + (long)(seed % 2000));
    watchdog_step("host round: close(CANCEL) while producing", 120);
    accel_session_close(s[NSESS - 1], ACCEL_CLOSE_CANCEL);
    watchdog_step("host round: join the producers", 120);
    for (int i = 0; i < NPROD; i++)
        pthread_join(pt[i], NULL);
    watchdog_step("host round: close(DRAIN) every session", 120);
    for (int i = 0; i < NSESS; i++)
        accel_session_close(s[i], ACCEL_CLOSE_DRAIN);
    watchdog_step("host round: join the host worker threads", 120);
    atomic_store(&h.stop, 1);
    for (int i = 0; i < 2; i++) {
        sem_post(&h.lane[0]);
        sem_post(&h.lane[1]);
    }
    for (int w = 0; w < 2; w++)
        pthread_join(st[w], NULL);
    for (int i = 0; i < NPROD; i++)
        for (int k = 0; k < PER; k++) {
            rec *r = &recs[i][k];
            int done = atomic_load_explicit(&r->done_calls,
                                            memory_order_acquire);
            if (!r->accepted) {
                if (done || r->fn_calls)
                    failf("an op never accepted ran or completed");
                continue;
            }
            if (done != 1)
                failf("op %d/%d: done ran %d times", i, k, done);
            if (r->cancel_ok != (r->status == ACCEL_ECANCELED))
                failf("op %d/%d: cancel said %d, status %d", i, k,
                      r->cancel_ok, r->status);
            if (r->status != 0 && r->fn_calls != 0)
                failf("op %d/%d: status %d but fn ran", i, k, r->status);
            if (r->status == 0 && r->fn_calls != 1)
                failf("op %d/%d: completed, fn ran %d times", i, k,
                      r->fn_calls);
        }
    accel_session_stats ss;
    if (accel_session_get_stats_ex(s[1], &ss, sizeof(ss)) != ACCEL_OK ||
        ss.batch_ops != ss.dispatched || (ss.dispatched && !ss.batches))
        failf("s1: %llu ops dispatched, %llu in %llu batches",
              (unsigned long long)ss.dispatched,
              (unsigned long long)ss.batch_ops,
              (unsigned long long)ss.batches);
    for (int i = 0; i < NSESS; i++)
        accel_session_release(s[i]);
    watchdog_step("host round: runtime destroy", 120);
    if (accel_runtime_destroy(h.rt) != ACCEL_OK)
        failf("destroy");
    sem_destroy(&h.lane[0]);
    sem_destroy(&h.lane[1]);
}

int main(void)
{
    double secs = tu_stress_seconds();
    watchdog_start("stress_host");
    int64_t end = accel_now_ns() + (int64_t)(secs * 1e9);
    uint64_t rounds = 0;
    do
        round_(++rounds);
    while (accel_now_ns() < end && !atomic_load(&stress_failures));
    printf("stress_host: %llu rounds, %llu failures\n",
           (unsigned long long)rounds,
           (unsigned long long)atomic_load(&stress_failures));
    return atomic_load(&stress_failures) ? 1 : 0;
}
