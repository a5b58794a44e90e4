/*
 * Dynamic batching under races (run plain and under TSan): rounds of
 * producers submitting plain, ticketed and deadline ops to batched
 * sessions, cancelling some of their own tickets, while another thread
 * sets and clears one session's batch function and a closer closes the
 * sessions (DRAIN or CANCEL) in the middle of the stream, so closes,
 * cancels and configuration changes land while batches form and run.
 *
 * Checked per op: done exactly once; FIFO of dones per (producer,
 * session); ran (in a batch, or by its fn while the batch function was
 * cleared) exactly once iff its status says it ran; a won cancel never
 * runs and completes ACCEL_ECANCELED; ACCEL_EEXPIRED and ACCEL_ECLOSED
 * never ran (ECLOSED only under a CANCEL close); every batch within its
 * max_ops. And the session stats add up.
 *
 * Hold-back: in each round some sessions hold their ops back
 * (max_delay_ns of 50 us to 2 ms, and some a batch cost, so deadlines
 * release them early), so fills, timer releases, deadline kicks, cancels,
 * closes and set/clear race the hold and its release; a session's held
 * time is counted only while it had a delay. Every op completes (the
 * round's syncs and closes return: a hold nobody releases hangs them,
 * which the watchdog names).
 *
 * Promises: 1, 2
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch_types.h"
#include "core_util.h"
#include "runtime_types.h"
#include "session.h"
#include "stress_fail.h"
#include "stress_watchdog.h"

#define NPROD 3
#define NSESS 3
#define NOPS 3000 /* per producer per session per round, at most */

enum { K_PLAIN, K_TICKET, K_DEADLINE };

typedef struct rec {
    int prod, sess, kind, want;
    uint64_t seq; /* per (producer, session), from 1 */
    _Atomic int fn_calls, in_batch, done_calls, status, cancel_ok;
} rec;

typedef struct sess_state {
    accel_session *s;
    uint32_t max_ops;
    uint64_t delay_ns, cost_ns; /* hold-back: 0 for none */
    unsigned close_flags;
    _Atomic uint64_t batches, too_big;
} sess_state;

static sess_state ss[NSESS];
static rec *recs[NPROD][NSESS]; /* NOPS each */
static _Atomic uint64_t last_done[NPROD][NSESS];
static _Atomic int stop;
static _Atomic int closing = -1; /* the session the closer is closing */
static accel_runtime *_Atomic round_rt;

static int op_fn(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    rec *r = arg;
    atomic_fetch_add_explicit(&r->fn_calls, 1, memory_order_relaxed);
    return r->want;
}

static void op_done(void *arg, int status)
{
    rec *r = arg;
    atomic_store_explicit(&r->status, status, memory_order_relaxed);
    /* one consumer per session at a time; the handover orders these */
    uint64_t last = atomic_load_explicit(&last_done[r->prod][r->sess],
                                         memory_order_relaxed);
    if (r->seq != last + 1)
        failf("p%d s%d: done of op %" PRIu64 " after %" PRIu64 " (FIFO)",
              r->prod, r->sess, r->seq, last);
    atomic_store_explicit(&last_done[r->prod][r->sess], r->seq,
                          memory_order_relaxed);
    atomic_fetch_add_explicit(&r->done_calls, 1, memory_order_release);
}

static void batch_fn(accel_ctx *ctx, void *const *args, uint32_t n,
                     int *status, void *user)
{
    sess_state *st = user;
    if (accel_ctx_session(ctx) != st->s)
        failf("batch fn: ctx of another session");
    if (n == 0 || n > st->max_ops)
        atomic_fetch_add(&st->too_big, 1);
    atomic_fetch_add_explicit(&st->batches, 1, memory_order_relaxed);
    for (uint32_t i = 0; i < n; i++) {
        rec *r = args[i];
        atomic_fetch_add_explicit(&r->in_batch, 1, memory_order_relaxed);
        status[i] = r->want;
    }
}

static int set_batch(int i, bool on)
{
    accel_batch_config c = {.fn = batch_fn,
                            .user = &ss[i],
                            .max_ops = ss[i].max_ops,
                            .max_delay_ns = ss[i].delay_ns,
                            .cost_fixed_ns = ss[i].cost_ns};
    return accel_session_set_batch(ss[i].s, on ? &c : NULL);
}

typedef struct prod_arg {
    int id;
    uint64_t rng;
    uint64_t accepted[NSESS];
} prod_arg;

static void *producer_main(void *p)
{
    prod_arg *a = p;
    bool open[NSESS];
    for (int i = 0; i < NSESS; i++)
        open[i] = true;
    for (int n = 0; n < NOPS; n++) {
        for (int i = 0; i < NSESS; i++) {
            if (!open[i])
                continue;
            rec *r = &recs[a->id][i][a->accepted[i]];
            memset(r, 0, sizeof(*r));
            r->prod = a->id;
            r->sess = i;
            r->seq = a->accepted[i] + 1;
            uint64_t x = tu_rand(&a->rng);
            r->kind = (int)(x % 3);
            r->want = x % 11 == 0 ? 9 : 0;
            accel_op op = {.fn = op_fn, .done = op_done, .arg = r};
            accel_ticket t;
            int64_t dl = r->kind == K_DEADLINE
                             ? accel_now_ns() + (int64_t)(x >> 40) % 200000
                             : 0;
            int rc = r->kind == K_PLAIN
                         ? accel_submit(ss[i].s, &op, ACCEL_FOREVER)
                         : accel_submit_ex(ss[i].s, &op, dl, ACCEL_FOREVER,
                                           &t);
            if (rc == ACCEL_ECLOSED) {
                open[i] = false;
                continue;
            }
            if (rc != ACCEL_OK) {
                failf("p%d: submit: %s", a->id, accel_strerror(rc));
                open[i] = false;
                continue;
            }
            a->accepted[i]++;
            if (r->kind == K_TICKET && (x >> 8) % 4 == 0) {
                int c = accel_cancel(&t);
                if (c == ACCEL_OK)
                    atomic_store(&r->cancel_ok, 1);
                else if (c != ACCEL_EALREADY && c != ACCEL_ECLOSED)
                    failf("cancel: %s", accel_strerror(c));
            }
        }
        if (atomic_load_explicit(&stop, memory_order_relaxed))
            break;
    }
    return NULL;
}

/* Sets and clears session 0's batch function until stop. */
static void *toggler_main(void *p)
{
    (void)p;
    bool on = false;
    while (!atomic_load(&stop)) {
        int rc = set_batch(0, on);
        if (rc != ACCEL_OK && rc != ACCEL_ECLOSED)
            failf("set_batch: %s", accel_strerror(rc));
        on = !on;
        sched_yield();
    }
    return NULL;
}

typedef struct closer {
    uint64_t rng;
} closer;

static void *closer_main_(void *p)
{
    closer *c = p;
    for (int i = 0; i < NSESS; i++) {
        tu_nap_us((long)(tu_rand(&c->rng) % 3000));
        atomic_store(&closing, i);
        int rc = accel_session_close(ss[i].s, ss[i].close_flags);
        if (rc != ACCEL_OK)
            failf("close s%d: %s", i, accel_strerror(rc));
    }
    atomic_store(&closing, NSESS);
    return NULL;
}

/* The watchdog's dump (stress_watchdog.h): where the closer is and each
 * session's ring, hold and counters, read racily from the runtime's
 * internals, taking no lock (a hung round changes little while it is
 * read; the stacks follow). */
static void dump_round(void)
{
    accel_runtime *rt = atomic_load(&round_rt);
    fprintf(stderr, "closer at session %d (of %d)\n", atomic_load(&closing),
            NSESS);
    if (!rt)
        return;
    for (int i = 0; i < NSESS; i++) {
        accel_session *s = ss[i].s;
        uint64_t t = atomic_load(&s->rp.tail), h = atomic_load(&s->rc.head);
        fprintf(stderr,
                "s%d: close %s, delay %" PRIu64 " cost %" PRIu64
                " max_ops %u; tail %" PRIu64 "%s head %" PRIu64
                " defer %#" PRIx64 " finished %" PRIu64 " refs %#" PRIx64
                "\n",
                i, ss[i].close_flags ? "CANCEL" : "DRAIN", ss[i].delay_ns,
                ss[i].cost_ns, ss[i].max_ops, t & ACCEL__RING_POS,
                t & ACCEL__RING_CLOSED ? " CLOSED" : "", h,
                atomic_load(&s->rp.defer), atomic_load(&s->waiters.finished),
                atomic_load(&s->refs));
        struct accel__batch *b = atomic_load(accel__session_batch_word(s));
        if (b)
            fprintf(stderr,
                    "    batch: fn %s last mark %#" PRIx64 " release_at %" PRIu64
                    " (now %" PRIu64 ") form_t0 %" PRIu64 " batches %" PRIu64
                    "\n",
                    atomic_load(&b->fn) ? "set" : "none",
                    atomic_load(&b->hold), atomic_load(&b->release_at),
                    (uint64_t)accel_now_ns(), b->form_t0,
                    atomic_load(&b->batches));
        accel_session_stats st;
        if (accel_session_get_stats_ex(s, &st, sizeof(st)) == ACCEL_OK)
            fprintf(stderr,
                    "    stats: submitted %" PRIu64 " dispatched %" PRIu64
                    " completed %" PRIu64 " failed %" PRIu64
                    " cancelled %" PRIu64 " expired %" PRIu64
                    " queued %" PRIu64 " visits %" PRIu64 "\n",
                    st.submitted, st.dispatched, st.completed, st.failed,
                    st.cancelled, st.expired, st.queued, st.visits);
    }
}

static uint64_t held_sessions; /* sessions that were held, all rounds */

static void check_round(prod_arg *pa, uint64_t *ran_total)
{
    for (int i = 0; i < NSESS; i++) {
        accel_session_stats st;
        accel_session_get_stats_ex(ss[i].s, &st, sizeof(st));
        uint64_t accepted = 0, ran = 0, batched = 0, gone = 0, exp = 0;
        for (int p = 0; p < NPROD; p++) {
            accepted += pa[p].accepted[i];
            for (uint64_t k = 0; k < pa[p].accepted[i]; k++) {
                rec *r = &recs[p][i][k];
                int done = atomic_load_explicit(&r->done_calls,
                                                memory_order_acquire);
                int fn = atomic_load(&r->fn_calls);
                int inb = atomic_load(&r->in_batch);
                int s = atomic_load(&r->status);
                if (done != 1) {
                    failf("p%d s%d op %" PRIu64 ": done ran %d times", p, i,
                          r->seq, done);
                    continue;
                }
                if (fn + inb > 1)
                    failf("op %" PRIu64 ": ran %d times (fn %d batch %d)",
                          r->seq, fn + inb, fn, inb);
                if (i != 0 && fn)
                    failf("s%d: op fn called on a batched session", i);
                bool did = fn + inb == 1;
                if (did) {
                    ran++;
                    batched += (uint64_t)inb;
                    if (s != r->want)
                        failf("op %" PRIu64 ": ran, status %d want %d",
                              r->seq, s, r->want);
                } else if (s == ACCEL_ECANCELED) {
                    gone++;
                    if (!atomic_load(&r->cancel_ok))
                        failf("op %" PRIu64 ": ECANCELED, no cancel won",
                              r->seq);
                } else if (s == ACCEL_EEXPIRED) {
                    exp++;
                    if (r->kind != K_DEADLINE)
                        failf("op %" PRIu64 ": expired without deadline",
                              r->seq);
                } else if (s == ACCEL_ECLOSED) {
                    gone++;
                    if (!(ss[i].close_flags & ACCEL_CLOSE_CANCEL))
                        failf("op %" PRIu64 ": ECLOSED under DRAIN", r->seq);
                } else {
                    failf("op %" PRIu64 ": not run, status %d", r->seq, s);
                }
                if (atomic_load(&r->cancel_ok) && did)
                    failf("op %" PRIu64 ": canceled, yet it ran", r->seq);
            }
        }
        if (st.submitted != accepted || st.dispatched != ran ||
            st.batch_ops != batched || st.cancelled != gone ||
            st.expired != exp || st.completed + st.failed != ran)
            failf("s%d stats: submitted %" PRIu64 "/%" PRIu64
                  " dispatched %" PRIu64 "/%" PRIu64 " batch_ops %" PRIu64
                  "/%" PRIu64 " canceled %" PRIu64 "/%" PRIu64
                  " expired %" PRIu64 "/%" PRIu64,
                  i, st.submitted, accepted, st.dispatched, ran, st.batch_ops,
                  batched, st.cancelled, gone, st.expired, exp);
        if (st.batches != atomic_load(&ss[i].batches))
            failf("s%d: batches %" PRIu64 ", fn calls %" PRIu64, i,
                  st.batches, atomic_load(&ss[i].batches));
        if (atomic_load(&ss[i].too_big))
            failf("s%d: a batch above max_ops", i);
        if (!ss[i].delay_ns && st.batch_held_ns)
            failf("s%d: held %" PRIu64 " ns without a delay", i,
                  st.batch_held_ns);
        if (ss[i].delay_ns && st.batch_held_ns)
            held_sessions++;
        *ran_total += batched;
    }
}

int main(void)
{
    watchdog_start("stress_batch");
    watchdog_on_fire(dump_round);
    double secs = tu_stress_seconds();
    for (int p = 0; p < NPROD; p++)
        for (int i = 0; i < NSESS; i++)
            recs[p][i] = calloc(NOPS, sizeof(rec));
    double t_end = tu_now_s() + secs;
    uint64_t rng = 0x9e3779b97f4a7c15ull, rounds = 0, batched_total = 0;
    do {
        watchdog_step("round setup", 60);
        accel_runtime *rt = tu_runtime(2);
        atomic_store(&round_rt, rt);
        atomic_store(&closing, -1);
        if (!rt) {
            failf("runtime create");
            break;
        }
        char id[16];
        for (int i = 0; i < NSESS; i++) {
            snprintf(id, sizeof(id), "b%d", i);
            ss[i].s = tu_open(rt, id, 128, 0);
            ss[i].max_ops = (uint32_t)(1 + tu_rand(&rng) % 64);
            ss[i].close_flags =
                tu_rand(&rng) % 2 ? ACCEL_CLOSE_CANCEL : ACCEL_CLOSE_DRAIN;
            /* two of three sessions hold back; of those, half with a
             * cost that lets deadlines release them early */
            uint64_t x = tu_rand(&rng);
            ss[i].delay_ns = x % 3 ? 50000 + (x >> 8) % 1950000 : 0;
            ss[i].cost_ns = ss[i].delay_ns && (x >> 40) % 2
                                ? (x >> 20) % 100000
                                : 0;
            atomic_store(&ss[i].batches, 0);
            atomic_store(&ss[i].too_big, 0);
            if (set_batch(i, true) != ACCEL_OK)
                failf("set_batch s%d", i);
            for (int p = 0; p < NPROD; p++)
                atomic_store(&last_done[p][i], 0);
        }
        atomic_store(&stop, 0);
        prod_arg pa[NPROD];
        pthread_t pt[NPROD], tt, ct;
        closer cl = {.rng = tu_rand(&rng)};
        watchdog_step("producers, toggler and closer race", 60);
        for (int p = 0; p < NPROD; p++) {
            pa[p] = (prod_arg){.id = p, .rng = tu_rand(&rng) | 1};
            pthread_create(&pt[p], NULL, producer_main, &pa[p]);
        }
        pthread_create(&tt, NULL, toggler_main, NULL);
        pthread_create(&ct, NULL, closer_main_, &cl);
        pthread_join(ct, NULL);
        atomic_store(&stop, 1);
        watchdog_step("join producers and toggler", 60);
        for (int p = 0; p < NPROD; p++)
            pthread_join(pt[p], NULL);
        pthread_join(tt, NULL);
        watchdog_step("verify the round", 60);
        check_round(pa, &batched_total);
        atomic_store(&round_rt, NULL); /* the dump's sessions go next */
        for (int i = 0; i < NSESS; i++)
            accel_session_release(ss[i].s);
        watchdog_step("runtime destroy", 60);
        if (accel_runtime_destroy(rt) != ACCEL_OK)
            failf("destroy");
        rounds++;
    } while (tu_now_s() < t_end && !atomic_load(&stress_failures));
    for (int p = 0; p < NPROD; p++)
        for (int i = 0; i < NSESS; i++)
            free(recs[p][i]);
    if (batched_total == 0)
        failf("no op ran in a batch");
    if (held_sessions == 0)
        failf("no session was ever held back");
    printf("stress_batch: %" PRIu64 " rounds, %" PRIu64
           " ops in batches, %" PRIu64 " held sessions, %" PRIu64
           " failures\n",
           rounds, batched_total, held_sessions,
           atomic_load(&stress_failures));
    return atomic_load(&stress_failures) ? 1 : 0;
}
