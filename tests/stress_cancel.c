/*
 * Cancellation and deadline stress: producers submit plain ops, ops with a
 * past, near or far deadline, and ops with a ticket; one canceller thread
 * per producer cancels ticketed ops as they come, racing the workers. At
 * the end every session is closed (half with CANCEL) while the cancellers
 * still run.
 *
 * Checked, for every op: its done ran exactly once; done's status is one
 * of fn's (0), ACCEL_ECANCELED exactly when a cancel said ACCEL_OK (and
 * then fn never ran), ACCEL_EEXPIRED only for an op with a deadline, read
 * at or after it (and fn never ran), ACCEL_ECLOSED only after close began;
 * a cancel says only OK, EALREADY or ECLOSED; done calls of one producer's
 * ops on one session come in submit order, canceled and expired ones
 * included (the counters are plain variables written by the session's
 * done callbacks, so TSan also checks the hand-over between workers).
 *
 * Usage: accel_stress_cancel   (ACCEL_STRESS_SECONDS, default 2)
 * Exit 0 when every check passed, 1 otherwise.
 *
 * Promises: 1, 2
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core_util.h"
#include "stress_fail.h"
#include "stress_watchdog.h"

#define NPROD 2
#define NSESS 4
#define NREC 4096 /* records per producer, reused round-robin */
#define QCAP 1024 /* producer -> canceller queue */


enum { K_PLAIN, K_PAST, K_NEAR, K_FAR, K_TICKET };

typedef struct rec {
    /* written by the producer before submit (published by submit) */
    int prod, sess, kind;
    uint64_t seq; /* per (producer, session), from 1 */
    int64_t deadline;
    accel_ticket t; /* written after submit, before the queue's release */
    /* written by the op, done, canceller */
    _Atomic int fn_calls, done_calls, status, cancel_ok;
    _Atomic int busy; /* the canceller still holds it */
    int64_t done_at;  /* clock in done (expired ops) */
} rec;

static rec recs[NPROD][NREC];
static accel_session *sess[NSESS];
/* Last seq whose done ran, per producer and session: written only by the
 * session's done callbacks (serial by the runtime's FIFO promise). */
static uint64_t last_done[NPROD][NSESS];
static _Atomic int closing; /* the closing phase has begun */

/* Single-producer single-consumer queue of records. */
typedef struct queue {
    _Atomic uint64_t head, tail;
    rec *items[QCAP];
} queue;
static queue q[NPROD];
static _Atomic int stop_prod, stop_cancel;

static _Atomic uint64_t n_ops, n_cancel_ok, n_cancel_lost, n_expired,
    n_closed, n_ran;

static int op_fn(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    rec *r = arg;
    atomic_fetch_add_explicit(&r->fn_calls, 1, memory_order_relaxed);
    return 0;
}

static void op_done(void *arg, int status)
{
    rec *r = arg;
    if (status == ACCEL_EEXPIRED)
        r->done_at = accel_now_ns();
    uint64_t *ld = &last_done[r->prod][r->sess];
    if (r->seq <= *ld)
        failf("p%d s%d: done of op %" PRIu64 " after %" PRIu64 " (FIFO)",
              r->prod, r->sess, r->seq, *ld);
    *ld = r->seq;
    atomic_store_explicit(&r->status, status, memory_order_relaxed);
    /* release: the fields above before the producer's acquire at reuse. */
    atomic_fetch_add_explicit(&r->done_calls, 1, memory_order_release);
}

/* The record's op completed and the canceller let go of it: check it. */
static void check_rec(rec *r)
{
    int done = atomic_load_explicit(&r->done_calls, memory_order_acquire);
    int fn = atomic_load_explicit(&r->fn_calls, memory_order_relaxed);
    int st = atomic_load_explicit(&r->status, memory_order_relaxed);
    int cok = atomic_load_explicit(&r->cancel_ok, memory_order_relaxed);
    if (done != 1) {
        failf("op p%d s%d #%" PRIu64 ": done ran %d times", r->prod, r->sess,
              r->seq, done);
        return;
    }
    if (cok != (st == ACCEL_ECANCELED))
        failf("op #%" PRIu64 ": cancel said %s, done got %d", r->seq,
              cok ? "OK" : "not OK", st);
    switch (st) {
    case 0:
        if (fn != 1)
            failf("op #%" PRIu64 ": status 0, fn ran %d times", r->seq, fn);
        atomic_fetch_add_explicit(&n_ran, 1, memory_order_relaxed);
        break;
    case ACCEL_ECANCELED:
        if (fn != 0)
            failf("op #%" PRIu64 ": canceled, yet fn ran", r->seq);
        break;
    case ACCEL_EEXPIRED:
        if (fn != 0 || r->deadline == 0 || r->done_at < r->deadline)
            failf("op #%" PRIu64 ": expired: fn %d deadline %" PRId64
                  " done at %" PRId64,
                  r->seq, fn, r->deadline, r->done_at);
        atomic_fetch_add_explicit(&n_expired, 1, memory_order_relaxed);
        break;
    case ACCEL_ECLOSED:
        if (fn != 0 || !atomic_load(&closing))
            failf("op #%" PRIu64 ": ECLOSED: fn %d", r->seq, fn);
        atomic_fetch_add_explicit(&n_closed, 1, memory_order_relaxed);
        break;
    default:
        failf("op #%" PRIu64 ": done status %d", r->seq, st);
    }
}

/* Waits until record r may be reused, checking the op it held. */
static void reclaim(rec *r)
{
    if (r->seq == 0)
        return; /* never used */
    while (atomic_load_explicit(&r->done_calls, memory_order_acquire) == 0 ||
           atomic_load_explicit(&r->busy, memory_order_acquire))
        sched_yield();
    check_rec(r);
}

typedef struct prod_arg {
    int id;
} prod_arg;

static void *producer(void *p)
{
    int id = ((prod_arg *)p)->id;
    uint64_t rng = 0x5eed + (uint64_t)id;
    uint64_t seq[NSESS] = {0};
    for (uint64_t n = 0; !atomic_load(&stop_prod); n++) {
        rec *r = &recs[id][n % NREC];
        reclaim(r);
        int s = (int)(tu_rand(&rng) % NSESS);
        int kind = (int)(tu_rand(&rng) % 5);
        memset(r, 0, sizeof(*r));
        r->prod = id;
        r->sess = s;
        r->kind = kind;
        r->seq = seq[s] + 1;
        int64_t now = accel_now_ns();
        r->deadline = kind == K_PAST   ? now - 1
                      : kind == K_NEAR ? now + (int64_t)(tu_rand(&rng) % 20000)
                      : kind == K_FAR || kind == K_TICKET
                          ? now + INT64_C(3600000000000)
                          : 0;
        accel_op op = {.fn = op_fn, .done = op_done, .arg = r};
        bool want_ticket = kind == K_TICKET || kind == K_NEAR;
        int rc = accel_submit_ex(sess[s], &op, r->deadline, ACCEL_FOREVER,
                                 want_ticket ? &r->t : NULL);
        if (rc != ACCEL_OK) {
            failf("p%d: submit_ex: %s", id, accel_strerror(rc));
            r->seq = 0;
            break;
        }
        seq[s]++;
        atomic_fetch_add_explicit(&n_ops, 1, memory_order_relaxed);
        if (!want_ticket)
            continue;
        queue *qq = &q[id];
        uint64_t t = atomic_load_explicit(&qq->tail, memory_order_relaxed);
        if (t - atomic_load_explicit(&qq->head, memory_order_acquire) < QCAP) {
            atomic_store_explicit(&r->busy, 1, memory_order_relaxed);
            qq->items[t % QCAP] = r;
            /* release: the record (its ticket) before the canceller's
             * acquire of tail. */
            atomic_store_explicit(&qq->tail, t + 1, memory_order_release);
        }
    }
    return NULL;
}

static void *canceller(void *p)
{
    int id = ((prod_arg *)p)->id;
    uint64_t rng = 0xca9ce1 + (uint64_t)id;
    queue *qq = &q[id];
    for (;;) {
        uint64_t h = atomic_load_explicit(&qq->head, memory_order_relaxed);
        if (h == atomic_load_explicit(&qq->tail, memory_order_acquire)) {
            if (atomic_load(&stop_cancel))
                break;
            sched_yield();
            continue;
        }
        rec *r = qq->items[h % QCAP];
        atomic_store_explicit(&qq->head, h + 1, memory_order_release);
        /* Vary the moment: sometimes at once, sometimes a little later. */
        for (uint64_t spin = tu_rand(&rng) % 64; spin; spin--)
            __asm__ __volatile__("" ::: "memory");
        if (tu_rand(&rng) % 4 == 0) {
            int rc = accel_cancel(&r->t);
            if (rc == ACCEL_OK) {
                atomic_store_explicit(&r->cancel_ok, 1, memory_order_relaxed);
                atomic_fetch_add_explicit(&n_cancel_ok, 1, memory_order_relaxed);
                /* ECLOSED once the close has begun, even for an op
                 * canceled before it: close decides from then on
                 * (accel.h, accel_cancel). */
                int again = accel_cancel(&r->t);
                if (again != ACCEL_EALREADY &&
                    (again != ACCEL_ECLOSED || !atomic_load(&closing)))
                    failf("a second cancel said %s, not EALREADY",
                          accel_strerror(again));
            } else if (rc == ACCEL_EALREADY) {
                atomic_fetch_add_explicit(&n_cancel_lost, 1, memory_order_relaxed);
            } else if (rc != ACCEL_ECLOSED || !atomic_load(&closing)) {
                failf("cancel: %s", accel_strerror(rc));
            }
        } else {
            /* Most ops: cancel right away, racing the worker hardest. */
            int rc = accel_cancel(&r->t);
            if (rc == ACCEL_OK) {
                atomic_store_explicit(&r->cancel_ok, 1, memory_order_relaxed);
                atomic_fetch_add_explicit(&n_cancel_ok, 1, memory_order_relaxed);
            } else if (rc == ACCEL_EALREADY) {
                atomic_fetch_add_explicit(&n_cancel_lost, 1, memory_order_relaxed);
            } else if (rc != ACCEL_ECLOSED || !atomic_load(&closing)) {
                failf("cancel: %s", accel_strerror(rc));
            }
        }
        /* release: cancel_ok before the producer's acquire of busy. */
        atomic_store_explicit(&r->busy, 0, memory_order_release);
    }
    return NULL;
}

int main(void)
{
    watchdog_start("stress_cancel");
    double secs = tu_stress_seconds();
    watchdog_step("setup", 120);
    accel_runtime *rt = tu_runtime(2);
    if (!rt)
        return 1;
    for (int i = 0; i < NSESS; i++) {
        char id[16];
        snprintf(id, sizeof id, "s%d", i);
        sess[i] = tu_open(rt, id, 64, 0);
        if (!sess[i])
            return 1;
    }
    pthread_t pt[NPROD], ct[NPROD];
    prod_arg pa[NPROD];
    for (int i = 0; i < NPROD; i++) {
        pa[i].id = i;
        pthread_create(&pt[i], NULL, producer, &pa[i]);
        pthread_create(&ct[i], NULL, canceller, &pa[i]);
    }
    watchdog_step("run", secs + 120);
    double end = tu_now_s() + secs;
    while (tu_now_s() < end)
        tu_nap_us(10000);
    atomic_store(&stop_prod, 1);
    watchdog_step("join the producers", 120);
    for (int i = 0; i < NPROD; i++)
        pthread_join(pt[i], NULL);
    watchdog_step("close every session (DRAIN or CANCEL)", 120);
    /* Close while the cancellers may still be working through tickets. */
    atomic_store(&closing, 1);
    for (int i = 0; i < NSESS; i++)
        if (accel_session_close(sess[i], i % 2 ? ACCEL_CLOSE_CANCEL
                                               : ACCEL_CLOSE_DRAIN) != ACCEL_OK)
            failf("close s%d", i);
    atomic_store(&stop_cancel, 1);
    watchdog_step("join the cancellers", 120);
    for (int i = 0; i < NPROD; i++)
        pthread_join(ct[i], NULL);
    for (int p = 0; p < NPROD; p++)
        for (int i = 0; i < NREC; i++)
            reclaim(&recs[p][i]);
    uint64_t stat_canceled = 0, stat_expired = 0, stat_submitted = 0;
    for (int i = 0; i < NSESS; i++) {
        accel_session_stats st;
        accel_session_get_stats_ex(sess[i], &st, sizeof(st));
        stat_canceled += st.cancelled;
        stat_expired += st.expired;
        stat_submitted += st.submitted;
        accel_session_release(sess[i]);
    }
    watchdog_step("runtime destroy", 120);
    accel_runtime_destroy(rt);
    watchdog_step("verify", 60);
    uint64_t ops = atomic_load(&n_ops), cok = atomic_load(&n_cancel_ok);
    uint64_t lost = atomic_load(&n_cancel_lost), exp = atomic_load(&n_expired);
    uint64_t closed = atomic_load(&n_closed);
    if (stat_submitted != ops)
        failf("stats: submitted %" PRIu64 ", accepted %" PRIu64, stat_submitted, ops);
    if (stat_canceled != cok + closed)
        failf("stats: canceled %" PRIu64 ", want %" PRIu64, stat_canceled,
              cok + closed);
    if (stat_expired != exp)
        failf("stats: expired %" PRIu64 ", want %" PRIu64, stat_expired, exp);
    /* The race must have gone both ways, or it was not exercised. */
    if (ops == 0 || cok == 0 || lost == 0 || exp == 0)
        failf("too little happened: ops %" PRIu64 " canceled %" PRIu64
              " lost %" PRIu64 " expired %" PRIu64,
              ops, cok, lost, exp);
    printf("stress_cancel: %" PRIu64 " ops: %" PRIu64 " ran, %" PRIu64
           " canceled, %" PRIu64 " cancels lost the race, %" PRIu64
           " expired, %" PRIu64 " closed; %" PRIu64 " failures\n",
           ops, atomic_load(&n_ran), cok, lost, exp, closed,
           atomic_load(&stress_failures));
    return atomic_load(&stress_failures) ? 1 : 0;
}
