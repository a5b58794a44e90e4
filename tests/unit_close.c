/*
 * Close: closing one session while others finish, closing mid-dispatch
 * never blocking other sessions, producers blocked on a full ring waking
 * with ACCEL_ECLOSED, DRAIN vs CANCEL, close from inside an own op, and
 * exactly-once completion under random close while producers run.
 *
 * Promises: 1, 4
 */
#define _GNU_SOURCE /* nanosleep, clock_gettime */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core_util.h"
#include "unit_watchdog.h"

UNIT_WATCHDOG_SUITE(close);

static void wait_closed(accel_session *s)
{
    while (!accel_session_is_closed(s))
        tu_nap_us(50);
}

/* ---- the Go type's isolation checks ---------------------------------- */

typedef struct prod {
    accel_session *s;
    tu_rec *recs;
    int n, accepted, errors;
    tu_blocker *blk; /* submitted before op blk_at, if set */
    int blk_at;
} prod;

static void *prod_main(void *p)
{
    prod *a = p;
    for (int i = 0; i < a->n; i++) {
        if (a->blk && i == a->blk_at) {
            accel_op bop = tu_blocker_op(a->blk);
            if (accel_submit(a->s, &bop, ACCEL_FOREVER) != ACCEL_OK)
                a->errors++;
        }
        accel_op op = {.fn = tu_rec_fn, .done = tu_rec_done, .arg = &a->recs[i]};
        int rc = accel_submit(a->s, &op, ACCEL_FOREVER);
        if (rc == ACCEL_ECLOSED)
            break;
        if (rc != ACCEL_OK)
            a->errors++;
        else
            a->accepted++;
    }
    return NULL;
}

static void close_one_of_four(unsigned flags)
{
    accel_runtime *rt = tu_runtime(2);
    enum { S = 4, N = 1000 };
    prod pa[S];
    pthread_t th[S];
    for (int i = 0; i < S; i++) {
        char id[16];
        snprintf(id, sizeof(id), "vm%d", i);
        pa[i] = (prod){.s = tu_open(rt, id, 32, 0), .n = N};
        pa[i].recs = calloc(N, sizeof(tu_rec));
        cr_assert_not_null(pa[i].s);
    }
    /* Session 0's op 100 blocks, so its producer fills the ring and waits:
     * the close surely lands mid-stream, with ops queued. */
    tu_blocker blk = {0};
    pa[0].blk = &blk;
    pa[0].blk_at = 100;
    for (int i = 0; i < S; i++)
        pthread_create(&th[i], NULL, prod_main, &pa[i]);
    unit_step("s0's blocking op starts");
    tu_wait_at_least(&blk.started, 1);
    closer_arg ca = {.s = pa[0].s, .flags = flags};
    pthread_t ct;
    pthread_create(&ct, NULL, closer_main, &ca);
    unit_step("the close of s0 begins");
    wait_closed(pa[0].s);
    tu_latch_open(&blk.gate);
    unit_step("the close of s0 returns once its blocking op is let go");
    pthread_join(ct, NULL);
    cr_assert_eq(ca.rc, ACCEL_OK);
    cr_assert_eq(atomic_load(&blk.done_calls), 1);
    unit_step("the four producers return");
    for (int i = 0; i < S; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(pa[i].errors, 0);
    }
    unit_step("sync of s1..s3 (1000 ops each)");
    for (int i = 1; i < S; i++) {
        cr_assert_eq(pa[i].accepted, N, "session %d lost submits", i);
        cr_assert_eq(accel_session_sync(pa[i].s, ACCEL_FOREVER), ACCEL_OK);
        cr_assert_not(accel_session_is_closed(pa[i].s));
        for (int k = 0; k < N; k++) {
            cr_assert_eq(atomic_load(&pa[i].recs[k].fn_calls), 1);
            cr_assert_eq(atomic_load(&pa[i].recs[k].done_calls), 1);
            cr_assert_eq(atomic_load(&pa[i].recs[k].status), 0);
        }
    }
    /* The closed one: its accepted ops completed exactly once (ran, or
     * were canceled with ECLOSED), the rest were never accepted. */
    int acc = pa[0].accepted;
    cr_assert_lt(acc, N);
    cr_assert_geq(acc, 100);
    long ran = 0, canceled = 0;
    for (int k = 0; k < N; k++) {
        tu_rec *r = &pa[0].recs[k];
        int dc = atomic_load(&r->done_calls), fc = atomic_load(&r->fn_calls);
        if (k >= acc) {
            cr_assert_eq(dc + fc, 0, "op %d was not accepted", k);
            continue;
        }
        cr_assert_eq(dc, 1, "accepted op %d: %d done calls", k, dc);
        if (atomic_load(&r->status) == 0) {
            cr_assert_eq(fc, 1);
            ran++;
        } else {
            cr_assert_eq(atomic_load(&r->status), ACCEL_ECLOSED);
            cr_assert_eq(fc, 0, "a canceled op must not run");
            canceled++;
        }
    }
    if (flags == ACCEL_CLOSE_DRAIN)
        cr_assert_eq(canceled, 0);
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats(pa[0].s, &st), ACCEL_OK);
    cr_assert_eq(st.submitted, (uint64_t)acc + 1); /* + the blocker */
    cr_assert_eq(st.completed, (uint64_t)ran + 1);
    cr_assert_eq(st.cancelled, (uint64_t)canceled);
    if (flags == ACCEL_CLOSE_CANCEL)
        cr_assert_gt(canceled, 0, "ops queued behind the blocker");
    cr_assert_eq(st.completed + st.failed + st.cancelled, st.submitted);
    cr_assert_eq(st.dispatched, st.completed + st.failed);
    cr_assert_eq(st.queued, 0);
    unit_step("release of the four sessions and runtime destroy");
    for (int i = 0; i < S; i++) {
        accel_session_release(pa[i].s);
        free(pa[i].recs);
    }
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(close, close_one_while_three_finish_drain, .timeout = 30)
{
    close_one_of_four(ACCEL_CLOSE_DRAIN);
}

Test(close, close_one_while_three_finish_cancel, .timeout = 30)
{
    close_one_of_four(ACCEL_CLOSE_CANCEL);
}

Test(close, close_mid_dispatch_never_blocks_others, .timeout = 10)
{
    accel_runtime *rt = tu_runtime(2);
    accel_session *a = tu_open(rt, "a", 0, 0);
    accel_session *b = tu_open(rt, "b", 0, 0);
    accel_session *c = tu_open(rt, "c", 0, 0);
    tu_blocker blk = {0};
    accel_op bop = tu_blocker_op(&blk);
    cr_assert_eq(accel_submit(a, &bop, ACCEL_NO_WAIT), ACCEL_OK);
    unit_step("a's blocking op starts");
    tu_wait_at_least(&blk.started, 1);
    /* a's op holds a worker. Closing b and c (with queued work) returns
     * while a is still blocked. */
    tu_rec rb[50] = {0}, rc_[50] = {0};
    unit_step("50 FOREVER submits each to b and c");
    for (int i = 0; i < 50; i++) {
        accel_op o1 = {.fn = tu_rec_fn, .done = tu_rec_done, .arg = &rb[i]};
        accel_op o2 = {.fn = tu_rec_fn, .done = tu_rec_done, .arg = &rc_[i]};
        cr_assert_eq(accel_submit(b, &o1, ACCEL_FOREVER), ACCEL_OK);
        cr_assert_eq(accel_submit(c, &o2, ACCEL_FOREVER), ACCEL_OK);
    }
    unit_step("drain close of b with 50 ops queued");
    cr_assert_eq(accel_session_close(b, ACCEL_CLOSE_DRAIN), ACCEL_OK);
    unit_step("cancel close of c with 50 ops queued");
    cr_assert_eq(accel_session_close(c, ACCEL_CLOSE_CANCEL), ACCEL_OK);
    for (int i = 0; i < 50; i++) {
        cr_assert_eq(atomic_load(&rb[i].done_calls), 1);
        cr_assert_eq(atomic_load(&rc_[i].done_calls), 1);
    }
    /* Now close a itself from another thread: it waits for its op, and
     * meanwhile the rest of the runtime keeps serving. */
    closer_arg ca = {.s = a};
    pthread_t th;
    pthread_create(&th, NULL, closer_main, &ca);
    unit_step("the close of a begins");
    wait_closed(a);
    accel_session *d = tu_open(rt, "d", 0, 0);
    tu_rec rd = {0};
    unit_step("100 submit_wait on d while the close of a waits");
    for (int i = 0; i < 100; i++)
        cr_assert_eq(accel_submit_wait(d, tu_rec_fn, &rd, ACCEL_FOREVER), 0);
    cr_assert_eq(atomic_load(&rd.fn_calls), 100);
    cr_assert_eq(atomic_load(&ca.returned), 0, "close of a did not wait");
    cr_assert_eq(atomic_load(&blk.finished), 0);
    tu_latch_open(&blk.gate);
    unit_step("the close of a returns once its blocking op is let go");
    pthread_join(th, NULL);
    cr_assert_eq(ca.rc, ACCEL_OK);
    cr_assert_eq(atomic_load(&blk.done_calls), 1);
    unit_step("release of a, b, c, d and runtime destroy");
    accel_session_release(a);
    accel_session_release(b);
    accel_session_release(c);
    accel_session_release(d);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---- DRAIN / CANCEL of queued ops -------------------------------------- */

static void close_with_queue(unsigned flags)
{
    accel_runtime *rt = tu_runtime(2);
    accel_session *s = tu_open(rt, "vm", 0, 0);
    tu_blocker blk = {0};
    accel_op bop = tu_blocker_op(&blk);
    cr_assert_eq(accel_submit(s, &bop, ACCEL_NO_WAIT), ACCEL_OK);
    unit_step("s's blocking op starts");
    tu_wait_at_least(&blk.started, 1);
    enum { Q = 10 };
    tu_rec r[Q] = {0};
    for (int i = 0; i < Q; i++) {
        accel_op op = {.fn = tu_rec_fn, .done = tu_rec_done, .arg = &r[i]};
        cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    }
    closer_arg ca = {.s = s, .flags = flags};
    pthread_t th;
    pthread_create(&th, NULL, closer_main, &ca);
    unit_step("the close of s begins");
    wait_closed(s);
    accel_op op = {.fn = tu_rec_fn, .arg = &r[0]};
    cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_ECLOSED);
    unit_step("FOREVER submit to the closing s (ECLOSED)");
    cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_ECLOSED);
    tu_latch_open(&blk.gate);
    unit_step("the close of s returns once its blocking op is let go");
    pthread_join(th, NULL);
    cr_assert_eq(ca.rc, ACCEL_OK);
    /* close returned: every done callback has returned. */
    cr_assert_eq(atomic_load(&blk.done_calls), 1);
    cr_assert_eq(atomic_load(&blk.done_status), 0, "the running op ran");
    for (int i = 0; i < Q; i++) {
        cr_assert_eq(atomic_load(&r[i].done_calls), 1);
        if (flags == ACCEL_CLOSE_CANCEL) {
            cr_assert_eq(atomic_load(&r[i].fn_calls), 0);
            cr_assert_eq(atomic_load(&r[i].status), ACCEL_ECLOSED);
        } else {
            cr_assert_eq(atomic_load(&r[i].fn_calls), 1);
            cr_assert_eq(atomic_load(&r[i].status), 0);
        }
    }
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats(s, &st), ACCEL_OK);
    cr_assert_eq(st.submitted, Q + 1);
    cr_assert_eq(st.cancelled, flags == ACCEL_CLOSE_CANCEL ? Q : 0);
    cr_assert_eq(st.dispatched, flags == ACCEL_CLOSE_CANCEL ? 1 : Q + 1);
    cr_assert_eq(st.completed + st.failed + st.cancelled, st.submitted);
    cr_assert_eq(st.queued, 0);
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(close, drain_runs_queued_ops, .timeout = 10)
{
    close_with_queue(ACCEL_CLOSE_DRAIN);
}

Test(close, cancel_completes_queued_ops_with_eclosed, .timeout = 10)
{
    close_with_queue(ACCEL_CLOSE_CANCEL);
}

/* ---- blocked producers wake with ECLOSED -------------------------------- */

typedef struct submitter {
    accel_session *s;
    int64_t timeout;
    int batch;
    size_t accepted;
    int rc;
    _Atomic int returned;
} submitter;

static void *submitter_main(void *p)
{
    submitter *a = p;
    static tu_rec sink;
    accel_op op = {.fn = tu_rec_fn, .arg = &sink};
    if (a->batch) {
        accel_op ops[4] = {op, op, op, op};
        a->rc = accel_submit_batch(a->s, ops, 4, a->timeout, &a->accepted);
    } else {
        a->rc = accel_submit(a->s, &op, a->timeout);
    }
    atomic_store_explicit(&a->returned, 1, memory_order_release);
    return NULL;
}

static void blocked_producer_wakes(unsigned flags)
{
    accel_runtime *rt = tu_runtime(2);
    accel_session *s = tu_open(rt, "vm", 1, 0);
    tu_blocker blk = {0};
    accel_op bop = tu_blocker_op(&blk);
    cr_assert_eq(accel_submit(s, &bop, ACCEL_NO_WAIT), ACCEL_OK);
    unit_step("s's blocking op starts");
    tu_wait_at_least(&blk.started, 1);
    tu_rec q = {0};
    accel_op op = {.fn = tu_rec_fn, .done = tu_rec_done, .arg = &q};
    cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK); /* full */
    enum { P = 3 };
    submitter sa[P];
    pthread_t th[P];
    for (int i = 0; i < P; i++) {
        sa[i] = (submitter){.s = s,
                            .timeout = i == 2 ? INT64_MAX / 2 : ACCEL_FOREVER,
                            .batch = i == 1};
        pthread_create(&th[i], NULL, submitter_main, &sa[i]);
    }
    tu_nap_us(2000);
    for (int i = 0; i < P; i++)
        cr_assert_eq(atomic_load(&sa[i].returned), 0,
                     "producer %d returned on a full ring", i);
    closer_arg ca = {.s = s, .flags = flags};
    pthread_t ct;
    pthread_create(&ct, NULL, closer_main, &ca);
    /* The producers wake while the blocked op still runs (the latch is
     * shut): a hang here is the failure. */
    unit_step("the 3 producers blocked on the full ring wake on close");
    for (int i = 0; i < P; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(sa[i].rc, ACCEL_ECLOSED, "producer %d", i);
        if (sa[i].batch)
            cr_assert_eq(sa[i].accepted, 0);
    }
    cr_assert_eq(atomic_load(&blk.finished), 0);
    cr_assert_eq(atomic_load(&ca.returned), 0);
    tu_latch_open(&blk.gate);
    unit_step("the close of s returns once its blocking op is let go");
    pthread_join(ct, NULL);
    cr_assert_eq(ca.rc, ACCEL_OK);
    cr_assert_eq(atomic_load(&q.done_calls), 1);
    cr_assert_eq(atomic_load(&q.status),
                 flags == ACCEL_CLOSE_CANCEL ? ACCEL_ECLOSED : 0);
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats(s, &st), ACCEL_OK);
    cr_assert_eq(st.submitted, 2);
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(close, blocked_producer_wakes_eclosed_drain, .timeout = 10)
{
    blocked_producer_wakes(ACCEL_CLOSE_DRAIN);
}

Test(close, blocked_producer_wakes_eclosed_cancel, .timeout = 10)
{
    blocked_producer_wakes(ACCEL_CLOSE_CANCEL);
}

/* ---- submit_wait of a canceled op ------------------------------------ */

typedef struct waiter {
    accel_session *s;
    tu_rec r;
    int rc;
} waiter;

static void *waiter_main(void *p)
{
    waiter *w = p;
    w->rc = accel_submit_wait(w->s, tu_rec_fn, &w->r, ACCEL_FOREVER);
    return NULL;
}

Test(close, submit_wait_of_canceled_op_returns_eclosed, .timeout = 10)
{
    accel_runtime *rt = tu_runtime(2);
    accel_session *s = tu_open(rt, "vm", 0, 0);
    tu_blocker blk = {0};
    accel_op bop = tu_blocker_op(&blk);
    cr_assert_eq(accel_submit(s, &bop, ACCEL_NO_WAIT), ACCEL_OK);
    unit_step("s's blocking op starts");
    tu_wait_at_least(&blk.started, 1);
    waiter w = {.s = s, .rc = 12345};
    pthread_t wt;
    pthread_create(&wt, NULL, waiter_main, &w);
    unit_step("the waiter's op is queued");
    accel_session_stats st;
    do {
        tu_nap_us(50);
        accel_session_get_stats(s, &st);
    } while (st.submitted < 2); /* the waiter's op is queued */
    closer_arg ca = {.s = s, .flags = ACCEL_CLOSE_CANCEL};
    pthread_t ct;
    pthread_create(&ct, NULL, closer_main, &ca);
    unit_step("the CANCEL close of s begins");
    wait_closed(s);
    tu_latch_open(&blk.gate);
    unit_step("the waiter's submit_wait returns (ECLOSED)");
    pthread_join(wt, NULL);
    unit_step("the CANCEL close of s returns");
    pthread_join(ct, NULL);
    cr_assert_eq(w.rc, ACCEL_ECLOSED);
    cr_assert_eq(atomic_load(&w.r.fn_calls), 0);
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---- close from inside an own op --------------------------------------- */

typedef struct self_close {
    unsigned flags;
    int close_rc, submit_after, closed_seen;
    _Atomic int returned;
} self_close;

static int op_close_self(accel_ctx *ctx, void *arg)
{
    self_close *sc = arg;
    accel_session *s = accel_ctx_session(ctx);
    sc->close_rc = accel_session_close(s, sc->flags); /* must not wait */
    sc->closed_seen = accel_session_is_closed(s);
    static tu_rec sink;
    accel_op op = {.fn = tu_rec_fn, .arg = &sink};
    sc->submit_after = accel_submit(s, &op, ACCEL_NO_WAIT);
    atomic_store(&sc->returned, 1);
    return 0;
}

static void close_from_inside(unsigned flags)
{
    accel_runtime *rt = tu_runtime(1); /* one worker: waiting would hang */
    accel_session *s = tu_open(rt, "vm", 0, 0);
    tu_blocker gate = {0};
    accel_op gop = tu_blocker_op(&gate);
    /* Hold the session until everything is queued behind the closer. */
    cr_assert_eq(accel_submit(s, &gop, ACCEL_NO_WAIT), ACCEL_OK);
    self_close sc = {.flags = flags, .close_rc = 1};
    tu_rec before = {0};
    accel_op op_b = {.fn = tu_rec_fn, .done = tu_rec_done, .arg = &before};
    accel_op cop = {.fn = op_close_self, .arg = &sc};
    enum { Q = 20 };
    tu_rec after[Q] = {0};
    cr_assert_eq(accel_submit(s, &op_b, ACCEL_NO_WAIT), ACCEL_OK);
    cr_assert_eq(accel_submit(s, &cop, ACCEL_NO_WAIT), ACCEL_OK);
    for (int i = 0; i < Q; i++) {
        accel_op op = {.fn = tu_rec_fn, .done = tu_rec_done, .arg = &after[i]};
        cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    }
    tu_latch_open(&gate.gate);
    /* The op's close must return without waiting for itself. */
    unit_step("the op's close of its own session returns");
    tu_wait_at_least(&sc.returned, 1);
    cr_assert_eq(sc.close_rc, ACCEL_OK);
    cr_assert(sc.closed_seen);
    cr_assert_eq(sc.submit_after, ACCEL_ECLOSED);
    /* An outside close waits for the rest. */
    unit_step("drain close of s from outside, 20 ops behind the op");
    cr_assert_eq(accel_session_close(s, ACCEL_CLOSE_DRAIN), ACCEL_OK);
    cr_assert_eq(atomic_load(&before.fn_calls), 1);
    for (int i = 0; i < Q; i++) {
        cr_assert_eq(atomic_load(&after[i].done_calls), 1);
        if (flags == ACCEL_CLOSE_CANCEL) {
            cr_assert_eq(atomic_load(&after[i].status), ACCEL_ECLOSED);
            cr_assert_eq(atomic_load(&after[i].fn_calls), 0);
        } else {
            cr_assert_eq(atomic_load(&after[i].status), 0);
            cr_assert_eq(atomic_load(&after[i].fn_calls), 1);
        }
    }
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats(s, &st), ACCEL_OK);
    cr_assert_eq(st.submitted, Q + 3);
    cr_assert_eq(st.completed + st.failed + st.cancelled, st.submitted);
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(close, close_from_inside_own_op_drain, .timeout = 10)
{
    close_from_inside(ACCEL_CLOSE_DRAIN);
}

Test(close, close_from_inside_own_op_cancel, .timeout = 10)
{
    close_from_inside(ACCEL_CLOSE_CANCEL);
}

/* Release of the last handle from inside an own op: closes (DRAIN) without
 * waiting for itself; the session is reclaimed after the op. */
static int op_release_self(accel_ctx *ctx, void *arg)
{
    (void)arg;
    accel_session_release(accel_ctx_session(ctx));
    return 0;
}

Test(close, release_last_handle_from_inside_own_op, .timeout = 10)
{
    accel_runtime *rt = tu_runtime(1);
    accel_session *s = tu_open(rt, "vm", 0, 0);
    /* A blocker holds the worker while the release op and five ops after
     * it are accepted, so all of them are in before the close: the test's
     * thread never touches s once the op may have released it. */
    tu_blocker blk = {0};
    accel_op bop = tu_blocker_op(&blk);
    cr_assert_eq(accel_submit(s, &bop, ACCEL_NO_WAIT), ACCEL_OK);
    unit_step("s's blocking op starts");
    tu_wait_at_least(&blk.started, 1);
    tu_rec r[5] = {0};
    accel_op rel = {.fn = op_release_self};
    cr_assert_eq(accel_submit(s, &rel, ACCEL_NO_WAIT), ACCEL_OK);
    for (int i = 0; i < 5; i++) {
        accel_op op = {.fn = tu_rec_fn, .done = tu_rec_done, .arg = &r[i]};
        cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    }
    tu_latch_open(&blk.gate); /* from here on s is the op's to release */
    /* The close from inside (DRAIN) runs every op accepted before it:
     * each done exactly once, with the op's status. */
    unit_step("the 5 ops behind the op's release of s complete");
    for (int i = 0; i < 5; i++)
        while (atomic_load(&r[i].done_calls) == 0)
            tu_nap_us(50);
    accel_session *l = NULL;
    cr_assert_eq(accel_session_lookup(rt, "vm", &l), ACCEL_ENOENT,
                 "the last release closed and unpublished the session");
    unit_step("runtime destroy");
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    cr_assert_eq(atomic_load(&blk.done_calls), 1);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(atomic_load(&r[i].done_calls), 1, "op %d", i);
        cr_assert_eq(atomic_load(&r[i].fn_calls), 1, "op %d", i);
        cr_assert_eq(atomic_load(&r[i].status), 0, "op %d", i);
    }
}

/* ---- exactly once under random close ---------------------------------- */

typedef struct eo_prod {
    accel_session *s;
    tu_rec *recs;
    int n, accepted, errors;
    uint64_t seed;
} eo_prod;

static int op_rec_maybe_fail(accel_ctx *ctx, void *arg)
{
    tu_rec *r = arg;
    tu_rec_fn(ctx, arg);
    if (((uintptr_t)r / sizeof(tu_rec)) % 16 == 1)
        tu_nap_us(30); /* lets queues build up before the close */
    return ((uintptr_t)r / sizeof(tu_rec)) % 5 == 0 ? 3 : 0;
}

static void *eo_main(void *p)
{
    eo_prod *a = p;
    int i = 0;
    while (i < a->n) {
        int mode = (int)(tu_rand(&a->seed) % 4);
        int rc;
        if (mode == 0) {
            accel_op ops[8];
            size_t k = (size_t)(a->n - i) < 8 ? (size_t)(a->n - i) : 8, acc;
            for (size_t j = 0; j < k; j++)
                ops[j] = (accel_op){.fn = op_rec_maybe_fail, .done = tu_rec_done,
                                    .arg = &a->recs[i + (int)j]};
            rc = accel_submit_batch(a->s, ops, k, ACCEL_FOREVER, &acc);
            i += (int)acc;
            a->accepted += (int)acc;
        } else {
            accel_op op = {.fn = op_rec_maybe_fail, .done = tu_rec_done,
                           .arg = &a->recs[i]};
            rc = accel_submit(a->s, &op,
                              mode == 1 ? ACCEL_NO_WAIT : ACCEL_FOREVER);
            if (rc == ACCEL_OK) {
                i++;
                a->accepted++;
            }
        }
        if (rc == ACCEL_ECLOSED)
            break;
        if (rc != ACCEL_OK && rc != ACCEL_EAGAIN)
            a->errors++;
    }
    return NULL;
}

Test(close, exactly_once_under_random_close, .timeout = 60)
{
    accel_runtime *rt = tu_runtime(2);
    uint64_t seed = 2024;
    enum { ROUNDS = 24, P = 3, N = 600 };
    long partial_rounds = 0, total_canceled = 0;
    for (int round = 0; round < ROUNDS; round++) {
        uint32_t depth = 1u << (tu_rand(&seed) % 7);
        accel_session *s = tu_open(rt, "eo", depth, 0);
        cr_assert_not_null(s);
        eo_prod pa[P];
        pthread_t th[P];
        for (int i = 0; i < P; i++) {
            pa[i] = (eo_prod){.s = s, .n = N, .seed = tu_rand(&seed) | 1};
            pa[i].recs = calloc(N, sizeof(tu_rec));
            pthread_create(&th[i], NULL, eo_main, &pa[i]);
        }
        tu_nap_us((long)(tu_rand(&seed) % 3000));
        unsigned flags = round % 2 ? ACCEL_CLOSE_CANCEL : ACCEL_CLOSE_DRAIN;
        unit_step("the round's close of s while its producers run");
        cr_assert_eq(accel_session_close(s, flags), ACCEL_OK);
        /* close returned: every accepted op has completed and its done
         * callback has returned; nothing else ever will. */
        long accepted = 0, ran = 0, failed = 0, canceled = 0;
        unit_step("the round's 3 producers return");
        for (int i = 0; i < P; i++) {
            pthread_join(th[i], NULL);
            cr_assert_eq(pa[i].errors, 0);
            accepted += pa[i].accepted;
            for (int k = 0; k < N; k++) {
                tu_rec *r = &pa[i].recs[k];
                int dc = atomic_load(&r->done_calls);
                int fc = atomic_load(&r->fn_calls);
                int stt = atomic_load(&r->status);
                if (k >= pa[i].accepted) {
                    cr_assert_eq(dc + fc, 0, "round %d: unaccepted op ran",
                                 round);
                    continue;
                }
                cr_assert_eq(dc, 1, "round %d p%d op %d: done called %d times",
                             round, i, k, dc);
                if (stt == ACCEL_ECLOSED) {
                    cr_assert_eq(fc, 0);
                    cr_assert_eq(flags, ACCEL_CLOSE_CANCEL);
                    canceled++;
                } else {
                    cr_assert_eq(fc, 1);
                    cr_assert(stt == 0 || stt == 3);
                    if (stt)
                        failed++;
                    else
                        ran++;
                }
            }
        }
        partial_rounds += accepted < P * N;
        total_canceled += canceled;
        accel_session_stats st;
        cr_assert_eq(accel_session_get_stats(s, &st), ACCEL_OK);
        cr_assert_eq(st.submitted, (uint64_t)accepted, "round %d", round);
        cr_assert_eq(st.completed, (uint64_t)ran);
        cr_assert_eq(st.failed, (uint64_t)failed);
        cr_assert_eq(st.cancelled, (uint64_t)canceled);
        cr_assert_eq(st.dispatched, st.completed + st.failed);
        cr_assert_eq(st.queued, 0);
        unit_step("release of the round's closed session");
        accel_session_release(s);
        for (int i = 0; i < P; i++)
            free(pa[i].recs);
    }
    cr_log_info("exactly_once: %ld of %d rounds closed mid-stream, %ld canceled",
                partial_rounds, ROUNDS, total_canceled);
    cr_assert_gt(partial_rounds, 0, "no close hit running producers");
    unit_step("runtime destroy");
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}
