/*
 * Per-op deadlines and cancellation (accel_submit_ex, accel_cancel):
 * expiry, cancel of a queued op, cancel after completion, cancel racing
 * the worker, stale tickets after slot reuse, FIFO of done calls with
 * canceled ops among them, sync after cancels, close with canceled and
 * expired ops queued.
 *
 * No timing thresholds: deadlines are long past, far in the future, or
 * pass while a gate op holds the session's only consumer (the test waits
 * on the clock until the deadline is behind it, then opens the gate).
 *
 * Promises: 1, 2, 5
 */
#define _GNU_SOURCE /* nanosleep, clock_gettime */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core_util.h"
#include "unit_watchdog.h"

UNIT_WATCHDOG_SUITE(cancel);

#define HOUR_NS (INT64_C(3600) * 1000000000)

typedef struct fx {
    accel_runtime *rt;
    accel_session *s;
} fx;

static fx setup(unsigned workers, uint32_t depth)
{
    fx f = {.rt = tu_runtime(workers)};
    cr_assert_not_null(f.rt);
    f.s = tu_open(f.rt, "c", depth, 0);
    cr_assert_not_null(f.s);
    return f;
}

static void teardown(fx *f)
{
    unit_step("release of s and runtime destroy");
    accel_session_release(f->s);
    cr_assert_eq(accel_runtime_destroy(f->rt), ACCEL_OK);
}

/* Blocks the session's consumer: returns once the gate op runs. */
static void hold(accel_session *s, tu_blocker *b)
{
    accel_op op = tu_blocker_op(b);
    unit_step("the gate op is accepted and starts");
    cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    tu_wait_at_least(&b->started, 1);
}

static accel_session_stats stats(accel_session *s)
{
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats_ex(s, &st, sizeof(st)), ACCEL_OK);
    return st;
}

/* ------------------------------------------------------------ deadline */

Test(cancel, deadline_past_expires_unrun, .timeout = 30)
{
    fx f = setup(2, 16);
    tu_rec r = {0};
    accel_op op = tu_rec_op(&r);
    cr_assert_eq(accel_submit_ex(f.s, &op, accel_now_ns() - 1, ACCEL_FOREVER,
                                 NULL),
                 ACCEL_OK);
    tu_rec r1 = {0}; /* deadline 1 ns after the clock's epoch */
    accel_op op1 = tu_rec_op(&r1);
    cr_assert_eq(accel_submit_ex(f.s, &op1, 1, ACCEL_FOREVER, NULL), ACCEL_OK);
    unit_step("sync of s: two expired ops");
    cr_assert_eq(accel_session_sync(f.s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(r.fn_calls, 0, "an expired op never runs");
    cr_assert_eq(r.done_calls, 1);
    cr_assert_eq(r.status, ACCEL_EEXPIRED);
    cr_assert_eq(r1.fn_calls, 0);
    cr_assert_eq(r1.status, ACCEL_EEXPIRED);
    accel_session_stats st = stats(f.s);
    cr_assert_eq(st.expired, 2);
    cr_assert_eq(st.dispatched, 0);
    cr_assert_eq(st.cancelled, 0);
    teardown(&f);
}

Test(cancel, deadline_future_runs, .timeout = 30)
{
    fx f = setup(2, 16);
    tu_rec r = {0};
    accel_op op = tu_rec_op(&r);
    accel_ticket t;
    cr_assert_eq(accel_submit_ex(f.s, &op, accel_now_ns() + HOUR_NS,
                                 ACCEL_FOREVER, &t),
                 ACCEL_OK);
    cr_assert_eq(t.session, f.s);
    unit_step("sync of s: an op with a deadline an hour away");
    cr_assert_eq(accel_session_sync(f.s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(r.fn_calls, 1);
    cr_assert_eq(r.done_calls, 1);
    cr_assert_eq(r.status, 0);
    /* neither a deadline nor a ticket: the plain path */
    tu_rec p = {0};
    accel_op pop = tu_rec_op(&p);
    cr_assert_eq(accel_submit_ex(f.s, &pop, 0, ACCEL_FOREVER, NULL), ACCEL_OK);
    unit_step("sync of s: a plain op");
    cr_assert_eq(accel_session_sync(f.s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(p.fn_calls, 1);
    cr_assert_eq(stats(f.s).expired, 0);
    teardown(&f);
}

/* The deadline passes while the op waits behind a gate op. */
Test(cancel, deadline_passes_while_queued, .timeout = 30)
{
    fx f = setup(2, 16);
    tu_blocker b = {0};
    hold(f.s, &b);
    tu_rec late = {0}, ok = {0};
    accel_op lop = tu_rec_op(&late), oop = tu_rec_op(&ok);
    int64_t dl = accel_now_ns() + 1000000; /* 1 ms from now */
    cr_assert_eq(accel_submit_ex(f.s, &lop, dl, ACCEL_FOREVER, NULL), ACCEL_OK);
    cr_assert_eq(accel_submit_ex(f.s, &oop, accel_now_ns() + HOUR_NS,
                                 ACCEL_FOREVER, NULL),
                 ACCEL_OK);
    unit_step("the 1 ms deadline passes");
    while (accel_now_ns() <= dl)
        tu_nap_us(200);
    tu_latch_open(&b.gate);
    unit_step("sync of s once the gate opens");
    cr_assert_eq(accel_session_sync(f.s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(late.fn_calls, 0);
    cr_assert_eq(late.status, ACCEL_EEXPIRED);
    cr_assert_eq(ok.fn_calls, 1);
    cr_assert_eq(ok.status, 0);
    teardown(&f);
}

/* -------------------------------------------------------------- cancel */

Test(cancel, queued_op_canceled_unrun, .timeout = 30)
{
    fx f = setup(2, 16);
    tu_blocker b = {0};
    hold(f.s, &b);
    tu_rec r = {0};
    accel_op op = tu_rec_op(&r);
    accel_ticket t;
    cr_assert_eq(accel_submit_ex(f.s, &op, 0, ACCEL_FOREVER, &t), ACCEL_OK);
    cr_assert_eq(accel_cancel(&t), ACCEL_OK);
    cr_assert_eq(accel_cancel(&t), ACCEL_EALREADY, "a second cancel changes nothing");
    cr_assert_eq(r.done_calls, 0, "done runs at the op's FIFO position, not at cancel");
    tu_latch_open(&b.gate);
    unit_step("sync of s once the gate opens");
    cr_assert_eq(accel_session_sync(f.s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(r.fn_calls, 0);
    cr_assert_eq(r.done_calls, 1);
    cr_assert_eq(r.status, ACCEL_ECANCELED);
    cr_assert_eq(accel_cancel(&t), ACCEL_EALREADY);
    accel_session_stats st = stats(f.s);
    cr_assert_eq(st.cancelled, 1);
    cr_assert_eq(st.dispatched, 1, "only the gate op ran");
    teardown(&f);
}

static int op_empty(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    return 0;
}

/* The worker copies runs of up to 32 published ops out of the ring at
 * once; the cancel-vs-take decision and the deadline are still per op.
 * With one worker held in another session's op, a session whose ops are
 * known to be short gets a gate op, a ticket op, an op whose deadline
 * passes while the gate runs, and a far-deadline op queued: the worker
 * then copies them in one run. While the gate runs, the ticket op is not
 * taken yet (cancel wins), and the deadline op expires. */
Test(cancel, per_op_inside_a_run_of_takes, .timeout = 60)
{
    /* x's gate must hold the only worker while s's ops queue: no
     * blocked-op detection, or an extra worker started in its place would
     * take s's ops before they are all queued (no run of four). */
    fx f = {.rt = tu_runtime_nodetect(1)};
    cr_assert_not_null(f.rt);
    f.s = tu_open(f.rt, "c", 64, 0);
    cr_assert_not_null(f.s);
    /* Short ops: the predicted cost lets a visit take runs of many. */
    accel_op e = {.fn = op_empty};
    unit_step("2000 FOREVER submits of empty ops and their sync");
    for (int i = 0; i < 2000; i++)
        cr_assert_eq(accel_submit(f.s, &e, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_session_sync(f.s, ACCEL_FOREVER), ACCEL_OK);
    accel_session *x = tu_open(f.rt, "x", 16, 0);
    cr_assert_not_null(x);
    tu_blocker bx = {0};
    hold(x, &bx); /* the only worker: busy in x until bx opens */
    tu_blocker gate = {0};
    accel_op gop = tu_blocker_op(&gate);
    cr_assert_eq(accel_submit(f.s, &gop, ACCEL_FOREVER), ACCEL_OK);
    tu_rec c = {0}, late = {0}, ok = {0};
    accel_op cop = tu_rec_op(&c), lop = tu_rec_op(&late), oop = tu_rec_op(&ok);
    accel_ticket t;
    cr_assert_eq(accel_submit_ex(f.s, &cop, 0, ACCEL_FOREVER, &t), ACCEL_OK);
    int64_t dl = accel_now_ns() + 1000000; /* 1 ms from now */
    cr_assert_eq(accel_submit_ex(f.s, &lop, dl, ACCEL_FOREVER, NULL),
                 ACCEL_OK);
    cr_assert_eq(accel_submit_ex(f.s, &oop, accel_now_ns() + HOUR_NS,
                                 ACCEL_FOREVER, NULL),
                 ACCEL_OK);
    tu_latch_open(&bx.gate);
    unit_step("s's gate op starts once x's gate opens");
    tu_wait_at_least(&gate.started, 1); /* the run holds the ops behind */
    unit_step("the 1 ms deadline passes");
    while (accel_now_ns() <= dl)
        tu_nap_us(200);
    cr_assert_eq(accel_cancel(&t), ACCEL_OK,
                 "an op copied with the running op's run is not taken yet");
    tu_latch_open(&gate.gate);
    unit_step("sync of s once the gate opens");
    cr_assert_eq(accel_session_sync(f.s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(c.fn_calls, 0);
    cr_assert_eq(c.status, ACCEL_ECANCELED);
    cr_assert_eq(late.fn_calls, 0, "its deadline passed before its turn");
    cr_assert_eq(late.status, ACCEL_EEXPIRED);
    cr_assert_eq(ok.fn_calls, 1);
    cr_assert_eq(ok.status, 0);
    accel_session_stats st = stats(f.s);
    cr_assert_eq(st.cancelled, 1);
    cr_assert_eq(st.expired, 1);
    unit_step("release of x");
    accel_session_release(x);
    teardown(&f);
}

Test(cancel, after_completion_ealready, .timeout = 30)
{
    fx f = setup(2, 16);
    tu_rec r = {0};
    accel_op op = tu_rec_op(&r);
    accel_ticket t;
    cr_assert_eq(accel_submit_ex(f.s, &op, accel_now_ns() + HOUR_NS,
                                 ACCEL_FOREVER, &t),
                 ACCEL_OK);
    unit_step("sync of s: an op with a ticket");
    cr_assert_eq(accel_session_sync(f.s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_cancel(&t), ACCEL_EALREADY);
    cr_assert_eq(r.fn_calls, 1);
    cr_assert_eq(r.done_calls, 1);
    cr_assert_eq(r.status, 0);
    /* an expired op's ticket: taken by the worker, so EALREADY too */
    tu_rec e = {0};
    accel_op eop = tu_rec_op(&e);
    cr_assert_eq(accel_submit_ex(f.s, &eop, 1, ACCEL_FOREVER, &t), ACCEL_OK);
    unit_step("sync of s: an expired op with a ticket");
    cr_assert_eq(accel_session_sync(f.s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_cancel(&t), ACCEL_EALREADY);
    cr_assert_eq(e.status, ACCEL_EEXPIRED);
    teardown(&f);
}

/* The ticket of a finished op whose slot now holds a later, cancellable
 * op: cancelling with it must not touch the later op. */
Test(cancel, stale_ticket_after_slot_reuse, .timeout = 30)
{
    enum { DEPTH = 4 };
    fx f = setup(2, DEPTH);
    tu_rec first = {0};
    accel_op fop = tu_rec_op(&first);
    accel_ticket old;
    cr_assert_eq(accel_submit_ex(f.s, &fop, 0, ACCEL_FOREVER, &old), ACCEL_OK);
    unit_step("sync of s: the first op");
    cr_assert_eq(accel_session_sync(f.s, ACCEL_FOREVER), ACCEL_OK);
    tu_blocker b = {0};
    hold(f.s, &b); /* position 1, running: its slot is free again */
    tu_rec later[2 * DEPTH];
    accel_ticket lt[2 * DEPTH];
    memset(later, 0, sizeof(later));
    /* Positions 2..5 fill the ring (position 4 reuses old's slot); while
     * the gate holds, they stay queued. Then laps on. */
    for (int i = 0; i < DEPTH; i++) {
        accel_op op = tu_rec_op(&later[i]);
        cr_assert_eq(accel_submit_ex(f.s, &op, 0, ACCEL_NO_WAIT, &lt[i]),
                     ACCEL_OK);
    }
    cr_assert_eq(lt[2].position, old.position + DEPTH, "same slot, next lap");
    cr_assert_eq(accel_cancel(&old), ACCEL_EALREADY);
    tu_latch_open(&b.gate);
    unit_step("sync of s once the first gate opens");
    cr_assert_eq(accel_session_sync(f.s, ACCEL_FOREVER), ACCEL_OK);
    for (int i = 0; i < DEPTH; i++) {
        cr_assert_eq(later[i].fn_calls, 1, "op %d ran", i);
        cr_assert_eq(later[i].status, 0);
    }
    /* Two laps on, with the old slot's new op queued again. */
    tu_blocker b2 = {0};
    hold(f.s, &b2);
    for (int i = DEPTH; i < 2 * DEPTH; i++) {
        accel_op op = tu_rec_op(&later[i]);
        cr_assert_eq(accel_submit_ex(f.s, &op, 0, ACCEL_NO_WAIT, &lt[i]),
                     ACCEL_OK);
    }
    cr_assert_eq(accel_cancel(&old), ACCEL_EALREADY);
    cr_assert_eq(accel_cancel(&lt[2]), ACCEL_EALREADY);
    tu_latch_open(&b2.gate);
    unit_step("sync of s once the second gate opens");
    cr_assert_eq(accel_session_sync(f.s, ACCEL_FOREVER), ACCEL_OK);
    for (int i = DEPTH; i < 2 * DEPTH; i++)
        cr_assert_eq(later[i].fn_calls, 1, "op %d ran", i);
    cr_assert_eq(stats(f.s).cancelled, 0);
    teardown(&f);
}

/* A ticket for the position after the last one handed out (a copy of a
 * real ticket, one on): never issued, so EINVAL, and the op that later
 * takes that position runs. */
Test(cancel, ticket_for_the_next_position_is_einval, .timeout = 30)
{
    fx f = setup(2, 16);
    tu_rec first = {0};
    accel_op fop = tu_rec_op(&first);
    accel_ticket t;
    cr_assert_eq(accel_submit_ex(f.s, &fop, 0, ACCEL_FOREVER, &t), ACCEL_OK);
    unit_step("sync of s: the first op");
    cr_assert_eq(accel_session_sync(f.s, ACCEL_FOREVER), ACCEL_OK);
    accel_ticket next = t;
    next.position = t.position + 1;
    cr_assert_eq(accel_cancel(&next), ACCEL_EINVAL,
                 "a ticket for the next position, never issued");
    tu_rec later = {0};
    accel_op lop = tu_rec_op(&later);
    accel_ticket lt;
    cr_assert_eq(accel_submit_ex(f.s, &lop, 0, ACCEL_FOREVER, &lt), ACCEL_OK);
    cr_assert_eq(lt.position, next.position, "the op took that position");
    unit_step("sync of s: the op at that position");
    cr_assert_eq(accel_session_sync(f.s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(later.fn_calls, 1);
    cr_assert_eq(later.status, 0);
    cr_assert_eq(stats(f.s).cancelled, 0);
    teardown(&f);
}

/* Plain, deadline and ticket ops interleaved behind a gate; every third
 * ticket op canceled, some expired: done calls come in submit order. */
Test(cancel, fifo_of_done_with_cancels, .timeout = 30)
{
    enum { N = 96 };
    fx f = setup(2, 128);
    tu_blocker b = {0};
    hold(f.s, &b);
    _Atomic int seq = 0;
    static tu_rec r[N];
    accel_ticket t[N];
    int want[N];
    memset(r, 0, sizeof(r));
    for (int i = 0; i < N; i++) {
        r[i].seq = &seq;
        accel_op op = tu_rec_op(&r[i]);
        switch (i % 4) {
        case 0: /* plain */
            cr_assert_eq(accel_submit(f.s, &op, ACCEL_FOREVER), ACCEL_OK);
            want[i] = 0;
            break;
        case 1: /* expired */
            cr_assert_eq(accel_submit_ex(f.s, &op, 1, ACCEL_FOREVER, NULL),
                         ACCEL_OK);
            want[i] = ACCEL_EEXPIRED;
            break;
        default: /* ticket, every other one canceled */
            cr_assert_eq(accel_submit_ex(f.s, &op, accel_now_ns() + HOUR_NS,
                                         ACCEL_FOREVER, &t[i]),
                         ACCEL_OK);
            want[i] = 0;
            break;
        }
    }
    int ncancel = 0;
    for (int i = 2; i < N; i += 4) {
        cr_assert_eq(accel_cancel(&t[i]), ACCEL_OK);
        want[i] = ACCEL_ECANCELED;
        ncancel++;
    }
    tu_latch_open(&b.gate);
    unit_step("sync of 96 mixed ops once the gate opens");
    cr_assert_eq(accel_session_sync(f.s, ACCEL_FOREVER), ACCEL_OK);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(r[i].done_calls, 1, "op %d", i);
        cr_assert_eq(r[i].done_seq, i, "op %d's done ran at %d", i, r[i].done_seq);
        cr_assert_eq(r[i].status, want[i], "op %d status %d", i, r[i].status);
        cr_assert_eq(r[i].fn_calls, want[i] == 0, "op %d", i);
    }
    accel_session_stats st = stats(f.s);
    cr_assert_eq(st.cancelled, (uint64_t)ncancel);
    cr_assert_eq(st.expired, N / 4);
    /* promise 1 (docs/contract.md): drained, every accepted op is in
     * exactly one of the four; expired ones are not in canceled */
    cr_assert_eq(st.completed + st.failed + st.cancelled + st.expired,
                 st.submitted, "%llu + %llu + %llu + %llu != %llu",
                 (unsigned long long)st.completed,
                 (unsigned long long)st.failed,
                 (unsigned long long)st.cancelled,
                 (unsigned long long)st.expired,
                 (unsigned long long)st.submitted);
    cr_assert_eq(st.completed, (uint64_t)(N - ncancel - N / 4 + 1),
                 "the ops that ran, and the gate");
    teardown(&f);
}

/* sync counts canceled ops like others: it returns after their done. */
Test(cancel, sync_after_cancels, .timeout = 30)
{
    enum { N = 8 };
    fx f = setup(2, 16);
    tu_blocker b = {0};
    hold(f.s, &b);
    tu_rec r[N];
    accel_ticket t[N];
    memset(r, 0, sizeof(r));
    for (int i = 0; i < N; i++) {
        accel_op op = tu_rec_op(&r[i]);
        cr_assert_eq(accel_submit_ex(f.s, &op, 0, ACCEL_FOREVER, &t[i]), ACCEL_OK);
        cr_assert_eq(accel_cancel(&t[i]), ACCEL_OK);
    }
    /* All canceled, but their done runs at their position: behind the
     * gate, so a sync cannot have returned yet. */
    cr_assert_eq(accel_session_sync(f.s, ACCEL_NO_WAIT), ACCEL_ETIMEDOUT);
    tu_latch_open(&b.gate);
    unit_step("sync of s once the gate opens: 8 canceled ops");
    cr_assert_eq(accel_session_sync(f.s, ACCEL_FOREVER), ACCEL_OK);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(r[i].done_calls, 1);
        cr_assert_eq(r[i].fn_calls, 0);
        cr_assert_eq(r[i].status, ACCEL_ECANCELED);
    }
    teardown(&f);
}

/* An op cancels the op queued behind it, from inside the session. */
static accel_ticket inner_t;
static _Atomic int inner_rc;
static int cancel_next(accel_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    atomic_store(&inner_rc, accel_cancel(&inner_t));
    return 0;
}

Test(cancel, from_inside_an_op, .timeout = 30)
{
    fx f = setup(1, 16);
    tu_blocker b = {0};
    hold(f.s, &b);
    accel_op c = {.fn = cancel_next};
    cr_assert_eq(accel_submit(f.s, &c, ACCEL_FOREVER), ACCEL_OK);
    tu_rec r = {0};
    accel_op op = tu_rec_op(&r);
    cr_assert_eq(accel_submit_ex(f.s, &op, 0, ACCEL_FOREVER, &inner_t), ACCEL_OK);
    atomic_store(&inner_rc, 1);
    tu_latch_open(&b.gate);
    unit_step("sync of an op that cancels the next");
    cr_assert_eq(accel_session_sync(f.s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(inner_rc, ACCEL_OK);
    cr_assert_eq(r.fn_calls, 0);
    cr_assert_eq(r.status, ACCEL_ECANCELED);
    teardown(&f);
}

/* ---------------------------------------------------------------- race */

/* Cancel right after submit, with the worker free, or once the worker
 * is into the batch: each op either ran (cancel said EALREADY) or did not
 * (cancel said OK), and its done ran once with the matching status. Both
 * outcomes must come up. */
Test(cancel, racing_the_worker, .timeout = 120)
{
    enum { BATCH = 64, N = 320 * BATCH };
    fx f = setup(2, 256);
    static tu_rec r[N];
    static int crc[N];
    memset(r, 0, sizeof(r));
    int won = 0, lost = 0;
    for (int base = 0; base < N; base += BATCH) {
        unit_step("64 submits; the worker reaches the first");
        accel_ticket t[BATCH];
        for (int i = 0; i < BATCH; i++) {
            accel_op op = tu_rec_op(&r[base + i]);
            cr_assert_eq(accel_submit_ex(f.s, &op, 0, ACCEL_FOREVER, &t[i]),
                         ACCEL_OK);
            if (i % 2) /* cancel half at once, the rest after the batch */
                crc[base + i] = accel_cancel(&t[i]);
        }
        /* The later half once the worker has started the batch (its
         * first op is among them): those at its front have run, the rest
         * race the worker. Without the wait every cancel won here. */
        while (!atomic_load(&r[base].fn_calls))
            sched_yield();
        for (int i = 0; i < BATCH; i += 2)
            crc[base + i] = accel_cancel(&t[i]);
    }
    unit_step("sync of s: 20480 ops, cancels racing the worker");
    cr_assert_eq(accel_session_sync(f.s, ACCEL_FOREVER), ACCEL_OK);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(r[i].done_calls, 1, "op %d done %d times", i, r[i].done_calls);
        if (crc[i] == ACCEL_OK) {
            won++;
            cr_assert_eq(r[i].fn_calls, 0, "op %d canceled but ran", i);
            cr_assert_eq(r[i].status, ACCEL_ECANCELED);
        } else {
            lost++;
            cr_assert_eq(crc[i], ACCEL_EALREADY, "op %d: cancel said %d", i, crc[i]);
            cr_assert_eq(r[i].fn_calls, 1, "op %d lost the cancel but did not run", i);
            cr_assert_eq(r[i].status, 0);
        }
    }
    accel_session_stats st = stats(f.s);
    cr_assert_eq(st.cancelled, (uint64_t)won);
    cr_assert_eq(st.dispatched, (uint64_t)lost);
    cr_log_info("racing_the_worker: %d canceled, %d ran", won, lost);
    /* the race was run: both outcomes came up (each batch's first op
     * always runs before its cancel) */
    cr_assert(won > 0 && lost > 0, "only one outcome: %d canceled, %d ran",
              won, lost);
    teardown(&f);
}

/* ---------------------------------------------------------------- close */

static void close_with_queued(unsigned flags)
{
    enum { N = 12 };
    fx f = setup(2, 16);
    tu_blocker b = {0};
    hold(f.s, &b);
    tu_rec r[N];
    accel_ticket t[N];
    memset(r, 0, sizeof(r));
    for (int i = 0; i < N; i++) {
        accel_op op = tu_rec_op(&r[i]);
        int64_t dl = i % 3 == 1 ? 1 : 0; /* 1: expires */
        cr_assert_eq(accel_submit_ex(f.s, &op, dl, ACCEL_FOREVER, &t[i]), ACCEL_OK);
        if (i % 3 == 2)
            cr_assert_eq(accel_cancel(&t[i]), ACCEL_OK);
    }
    closer_arg ca = {.s = f.s, .flags = flags};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, closer_main, &ca), 0);
    unit_step("the close of s begins");
    while (!accel_session_is_closed(f.s))
        tu_nap_us(50);
    /* Close has begun: it decides the queued ops now. */
    cr_assert_eq(accel_cancel(&t[0]), ACCEL_ECLOSED);
    cr_assert_eq(atomic_load(&ca.returned), 0, "close waits for the queued ops");
    tu_latch_open(&b.gate);
    unit_step("the close of s returns once the gate opens");
    pthread_join(th, NULL);
    cr_assert_eq(ca.rc, ACCEL_OK);
    for (int i = 0; i < N; i++) {
        int want = i % 3 == 2   ? ACCEL_ECANCELED
                   : flags      ? ACCEL_ECLOSED
                   : i % 3 == 1 ? ACCEL_EEXPIRED
                                : 0;
        cr_assert_eq(r[i].done_calls, 1, "op %d", i);
        cr_assert_eq(r[i].status, want, "op %d: %d, want %d", i, r[i].status, want);
        cr_assert_eq(r[i].fn_calls, want == 0, "op %d", i);
    }
    teardown(&f);
}

Test(cancel, close_drain_with_canceled_and_expired, .timeout = 30)
{
    close_with_queued(ACCEL_CLOSE_DRAIN);
}

Test(cancel, close_cancel_with_canceled_and_expired, .timeout = 30)
{
    close_with_queued(ACCEL_CLOSE_CANCEL);
}

Test(cancel, strerror_names_new_statuses, .timeout = 5)
{
    cr_assert_str_neq(accel_strerror(ACCEL_EEXPIRED), "unknown status");
    cr_assert_str_neq(accel_strerror(ACCEL_EALREADY), "unknown status");
    cr_assert_str_neq(accel_strerror(ACCEL_ECANCELED), "unknown status");
    cr_assert_lt(ACCEL_EEXPIRED, 0);
    cr_assert_lt(ACCEL_EALREADY, 0);
}

/* The counters: stats (through get_stats_ex: expired is past the 0.1
 * layout) and the Prometheus text. */
Test(cancel, stats_and_metrics_count_canceled_and_expired, .timeout = 30)
{
    fx f = setup(2, 16);
    tu_blocker b = {0};
    hold(f.s, &b);
    tu_rec r[3];
    memset(r, 0, sizeof(r));
    accel_ticket t;
    accel_op op0 = tu_rec_op(&r[0]), op1 = tu_rec_op(&r[1]), op2 = tu_rec_op(&r[2]);
    cr_assert_eq(accel_submit_ex(f.s, &op0, 0, ACCEL_FOREVER, &t), ACCEL_OK);
    cr_assert_eq(accel_submit_ex(f.s, &op1, 1, ACCEL_FOREVER, NULL), ACCEL_OK);
    cr_assert_eq(accel_submit_ex(f.s, &op2, 0, ACCEL_FOREVER, NULL), ACCEL_OK);
    cr_assert_eq(accel_cancel(&t), ACCEL_OK);
    accel_session_stats st = stats(f.s);
    cr_assert_eq(st.queued, 3, "a canceled op holds its place until reached");
    tu_latch_open(&b.gate);
    unit_step("sync of s once the gate opens");
    cr_assert_eq(accel_session_sync(f.s, ACCEL_FOREVER), ACCEL_OK);
    st = stats(f.s);
    cr_assert_eq(st.submitted, 4);
    cr_assert_eq(st.cancelled, 1);
    cr_assert_eq(st.expired, 1);
    cr_assert_eq(st.dispatched, 2);
    cr_assert_eq(st.completed, 2);
    cr_assert_eq(st.queued, 0);
    char buf[16384];
    size_t len = 0;
    cr_assert_eq(accel_runtime_write_prometheus(f.rt, buf, sizeof(buf), &len),
                 ACCEL_OK);
    cr_assert_lt(len, sizeof(buf));
    cr_assert_not_null(strstr(buf, "accel_session_ops_cancelled_total{session=\"c\","
                                   "priority=\"5\"} 1\n"),
                       "%s", buf);
    cr_assert_not_null(strstr(buf, "accel_session_ops_expired_total{session=\"c\","
                                   "priority=\"5\"} 1\n"),
                       "%s", buf);
    teardown(&f);
}
