/*
 * Batching's hold-back (accel_batch_config.max_delay_ns,
 * docs/batching.md "Holding back to fill a batch"): a session is held
 * until max_ops are queued (or its ring is full) or max_delay_ns has
 * passed; a deadline less
 * the expected cost of a batch releases it sooner (from the visit, and
 * from the submit of an op that arrives while it is held); a worker runs
 * another session's op while a session is held (the session waits, not
 * the worker); close DRAIN runs held ops at once, close CANCEL completes
 * them unrun, accel_cancel of a held op releases the session; a deadline
 * that passes while held completes the op ACCEL_EEXPIRED unrun; the
 * held-back time is counted; configuration that still gets ENOTSUP.
 * And at the scheduler level: a held entity keeps its place against the
 * virtual time (neither gains nor loses by waiting); a batched entity's
 * batch is charged as one op of the batch's cost, and the short lane's
 * picks are unchanged by it; in a runtime, a session of long batches of
 * short ops stays off the short lane (its op cost is the batch's).
 *
 * No timing thresholds: the tests that must tell the releases apart
 * stall the hold-back's timer (batch.h's test seam), so that a release
 * seen is the rule's under test and a missing one is a wait that the
 * watchdog names; "held" is observed as a visit that ended with the op
 * still not done.
 *
 * Promises: 1, 2, 3, 4, 5
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "batch.h"
#include "batch_item.h"
#include "core_util.h"
#include "park.h"
#include "sched_core.h"
#include "session.h"
#include "unit_watchdog.h"

UNIT_WATCHDOG_SUITE(batch_hold);

#define SEC INT64_C(1000000000)
#define MS INT64_C(1000000)

/* ------------------------------------------------------------ helpers */

/* The batch function: the sizes of its calls, and the order of its first
 * call against other events (ev). */
typedef struct bstate {
    _Atomic int calls;
    _Atomic uint32_t sizes[64];
    _Atomic int first_at; /* ev value at the first call, + 1 */
    _Atomic int *ev;
} bstate;

static void batch_fn(accel_ctx *ctx, void *const *args, uint32_t n,
                     int *status, void *user)
{
    (void)ctx;
    bstate *b = user;
    int call = atomic_fetch_add(&b->calls, 1);
    if (call < 64)
        atomic_store(&b->sizes[call], n);
    if (call == 0 && b->ev)
        atomic_store(&b->first_at, atomic_fetch_add(b->ev, 1) + 1);
    for (uint32_t i = 0; i < n; i++) {
        item *it = args[i];
        atomic_fetch_add(&it->in_batch, 1);
        status[i] = 0;
    }
}

static accel_batch_config hold_cfg(bstate *b, uint32_t max_ops,
                                   uint64_t delay, uint64_t cost_fixed)
{
    return (accel_batch_config){.fn = batch_fn,
                                .user = b,
                                .max_ops = max_ops,
                                .max_delay_ns = delay,
                                .cost_fixed_ns = cost_fixed};
}

static accel_session_stats stats(accel_session *s)
{
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats_ex(s, &st, sizeof(st)), ACCEL_OK);
    return st;
}

/* The timer's test seam: while stalled, due holds stay held. */
static _Atomic int timer_stalled;
static bool timer_gate(accel_session *s)
{
    (void)s;
    return !atomic_load(&timer_stalled);
}

static void stall_timer(bool on)
{
    atomic_store(&timer_stalled, on ? 1 : 0);
    atomic_store(&accel__batch_timer_hook, timer_gate);
}

/* Submits one op and waits until a visit of s ended with it not done:
 * the session is held (a batch would have completed it). */
static void submit_held(accel_session *s, item *it, uint64_t visits_before)
{
    accel_op op = item_op(it);
    cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    unit_step("a visit ends with the op held");
    while (stats(s).visits <= visits_before)
        tu_nap_us(50);
    cr_assert_eq(atomic_load(&it->done_calls), 0, "the op was held, not run");
}

/* Syncs with a generous bound: a release that never comes fails here. */
static void sync_or_fail(accel_session *s, const char *what)
{
    unit_step(what);
    int rc = accel_session_sync(s, 20 * SEC);
    cr_assert_eq(rc, ACCEL_OK, "%s: sync returned %s (the hold was never "
                               "released)",
                 what, accel_strerror(rc));
}

/* The tests' runtime (one worker, no blocked-op detection) and a session
 * "h" of a ring of `ring` ops holding back into the batch state hb. */
static bstate hb;

static accel_session *hold_open(accel_runtime **rt, uint32_t ring,
                                uint32_t max_ops, uint64_t delay,
                                uint64_t cost)
{
    memset(&hb, 0, sizeof(hb));
    *rt = tu_runtime_nodetect(1);
    accel_session *s = tu_open(*rt, "h", ring, 0);
    accel_batch_config c = hold_cfg(&hb, max_ops, delay, cost);
    cr_assert_eq(accel_session_set_batch(s, &c), ACCEL_OK);
    return s;
}

/* Frees what hold_open made; the timer runs again. */
static void hold_close(accel_runtime *rt, accel_session *s)
{
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    stall_timer(false);
}

/* ------------------------------------------------- held until max_ops */

Test(batch_hold, held_until_max_ops, .timeout = 60)
{
    stall_timer(true); /* only the fill may release it */
    accel_runtime *rt;
    accel_session *s = hold_open(&rt, 64, 8, ACCEL_BATCH_DELAY_MAX, 0);
    static item it[8];
    memset(it, 0, sizeof(it));
    submit_held(s, &it[0], 0);
    unit_step("six more, still under max_ops");
    for (int i = 1; i < 7; i++) {
        accel_op op = item_op(&it[i]);
        cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    }
    cr_assert_eq(atomic_load(&hb.calls), 0, "held while under max_ops");
    accel_op op = item_op(&it[7]);
    cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    sync_or_fail(s, "the eighth op fills the batch");
    cr_assert_eq(atomic_load(&hb.calls), 1, "%d batch calls",
                 atomic_load(&hb.calls));
    cr_assert_eq(atomic_load(&hb.sizes[0]), 8, "one batch of max_ops, got %u",
                 atomic_load(&hb.sizes[0]));
    for (int i = 0; i < 8; i++)
        cr_assert_eq(atomic_load(&it[i].status), 0);
    accel_session_stats st = stats(s);
    cr_assert(st.batch_held_ns > 0, "held time counted");
    cr_assert_eq(st.batch_size_hist[3], 1);
    hold_close(rt, s);
}

Test(batch_hold, a_full_ring_fills_the_batch, .timeout = 60)
{
    /* A ring of 8 and max_ops 64: the eighth op fills the ring, which
     * releases the session (its producers would otherwise wait for room
     * until the delay ran out). */
    stall_timer(true);
    accel_runtime *rt;
    accel_session *s = hold_open(&rt, 8, 64, ACCEL_BATCH_DELAY_MAX, 0);
    static item it[8];
    memset(it, 0, sizeof(it));
    submit_held(s, &it[0], 0);
    for (int i = 1; i < 8; i++) {
        accel_op op = item_op(&it[i]);
        cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    }
    sync_or_fail(s, "the full ring releases the batch");
    cr_assert_eq(atomic_load(&hb.calls), 1);
    cr_assert_eq(atomic_load(&hb.sizes[0]), 8);
    hold_close(rt, s);
}

/* ----------------------------------------------- held until max_delay */

Test(batch_hold, held_until_max_delay, .timeout = 60)
{
    stall_timer(false);
    accel_runtime *rt;
    uint64_t delay = 20 * MS;
    accel_session *s = hold_open(&rt, 64, 64, delay, 0);
    static item it[3];
    memset(it, 0, sizeof(it));
    for (int i = 0; i < 3; i++) {
        accel_op op = item_op(&it[i]);
        cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    }
    /* no fill, no close, no cancel, no deadline: only the delay */
    sync_or_fail(s, "the delay releases the batch");
    cr_assert_eq(atomic_load(&hb.calls), 1, "%d batch calls",
                 atomic_load(&hb.calls));
    cr_assert_eq(atomic_load(&hb.sizes[0]), 3);
    accel_session_stats st = stats(s);
    cr_assert(st.batch_held_ns > 0);
    cr_assert_eq(st.completed, 3);
    hold_close(rt, s);
}

/* The tid of the runtime's hold-back timer thread ("accel-batch"), 0
 * while it has none or its name is not set yet. */
static int timer_tid(void)
{
    static const char *const name[] = {"accel-batch"};
    int tid = 0;
    tu_tids_named(name, 1, &tid, 1);
    return tid;
}

Test(batch_hold, a_hold_wakes_the_sleeping_timer, .timeout = 60)
{
    /* The timer sleeps without a wake-up time while nothing is held;
     * only the holder's wake (hold_notify) can end that sleep. Held
     * while it sleeps so, an op the delay should release must be woken
     * for: without the wake it stays held until the watchdog fails the
     * sync. (held_until_max_delay holds right after set_batch starts
     * the timer, whose first look may still find the hold by itself.) */
    stall_timer(false);
    accel_runtime *rt;
    accel_session *s = hold_open(&rt, 64, 64, 2 * MS, 0);
    unit_step("the timer sleeps with nothing held");
    int tid;
    while (!(tid = timer_tid()) || tu_thread_state(tid) != 'S')
        tu_nap_us(100);
    static item it;
    memset(&it, 0, sizeof(it));
    submit_held(s, &it, stats(s).visits);
    sync_or_fail(s, "the hold wakes the timer, which releases it");
    cr_assert_eq(atomic_load(&it.done_calls), 1);
    cr_assert_eq(atomic_load(&hb.calls), 1, "%d batch calls",
                 atomic_load(&hb.calls));
    hold_close(rt, s);
}

/* ------------------------------------------ deadline less the cost */

Test(batch_hold, deadline_minus_cost_releases_early, .timeout = 60)
{
    /* delay 1 s, cost 300 ms, deadline 600 ms out: the release comes at
     * 300 ms, so the op starts before its deadline. Held for the delay
     * (the rule broken), it would start after it: ACCEL_EEXPIRED. */
    stall_timer(false);
    accel_runtime *rt;
    accel_session *s = hold_open(&rt, 64, 64, ACCEL_BATCH_DELAY_MAX, 300 * MS);
    static item it;
    memset(&it, 0, sizeof(it));
    accel_op op = item_op(&it);
    cr_assert_eq(accel_submit_ex(s, &op, accel_now_ns() + 600 * MS,
                                 ACCEL_FOREVER, NULL),
                 ACCEL_OK);
    sync_or_fail(s, "the deadline rule releases it");
    cr_assert_eq(atomic_load(&it.status), 0, "ran in time, got %s",
                 accel_strerror(atomic_load(&it.status)));
    cr_assert_eq(atomic_load(&it.in_batch), 1);
    hold_close(rt, s);
}

Test(batch_hold, deadline_of_an_op_arriving_while_held, .timeout = 60)
{
    /* A plain op held (release at 1 s); then an op with a deadline 600
     * ms out and a cost of 300 ms: its submit moves the release up, and
     * both run, in time. */
    stall_timer(false);
    accel_runtime *rt;
    accel_session *s = hold_open(&rt, 64, 64, ACCEL_BATCH_DELAY_MAX, 300 * MS);
    static item it[2];
    memset(it, 0, sizeof(it));
    submit_held(s, &it[0], 0);
    accel_op op = item_op(&it[1]);
    cr_assert_eq(accel_submit_ex(s, &op, accel_now_ns() + 600 * MS,
                                 ACCEL_FOREVER, NULL),
                 ACCEL_OK);
    sync_or_fail(s, "the second op's deadline releases both");
    cr_assert_eq(atomic_load(&it[1].status), 0, "ran in time, got %s",
                 accel_strerror(atomic_load(&it[1].status)));
    cr_assert_eq(atomic_load(&it[0].status), 0);
    cr_assert_eq(atomic_load(&hb.calls), 1);
    cr_assert_eq(atomic_load(&hb.sizes[0]), 2);
    hold_close(rt, s);
}

Test(batch_hold, deadline_passed_while_held_expires_unrun, .timeout = 60)
{
    /* No cost: the release is due at the deadline itself. The timer is
     * stalled past it; once released, the op expires as its batch forms. */
    stall_timer(true);
    accel_runtime *rt;
    accel_session *s = hold_open(&rt, 64, 64, ACCEL_BATCH_DELAY_MAX, 0);
    static item it;
    memset(&it, 0, sizeof(it));
    int64_t dl = accel_now_ns() + 20 * MS;
    accel_op op = item_op(&it);
    cr_assert_eq(accel_submit_ex(s, &op, dl, ACCEL_FOREVER, NULL), ACCEL_OK);
    unit_step("the deadline passes while held");
    while (accel_now_ns() <= dl)
        tu_nap_us(1000);
    cr_assert_eq(atomic_load(&it.done_calls), 0);
    stall_timer(false);
    sync_or_fail(s, "the timer releases it");
    cr_assert_eq(atomic_load(&it.status), ACCEL_EEXPIRED, "got %s",
                 accel_strerror(atomic_load(&it.status)));
    cr_assert_eq(atomic_load(&it.in_batch), 0);
    cr_assert_eq(atomic_load(&hb.calls), 0);
    cr_assert_eq(stats(s).expired, 1);
    hold_close(rt, s);
}

/* -------------------------------- the session waits, not the worker */

Test(batch_hold, worker_runs_another_session_while_held, .timeout = 60)
{
    /* One worker. A is held (timer stalled: held until we close it); B's
     * op runs meanwhile, and completes before A's batch is called. A
     * worker that waited for A's batch would run B's op only after it. */
    stall_timer(true);
    accel_runtime *rt = tu_runtime_nodetect(1);
    accel_session *a = tu_open(rt, "a", 64, 0);
    accel_session *bs = tu_open(rt, "b", 64, 0);
    static bstate b;
    memset(&b, 0, sizeof(b));
    static _Atomic int ev;
    atomic_store(&ev, 0);
    b.ev = &ev;
    accel_batch_config c = hold_cfg(&b, 64, ACCEL_BATCH_DELAY_MAX, 0);
    cr_assert_eq(accel_session_set_batch(a, &c), ACCEL_OK);
    static item ia, ib;
    memset(&ia, 0, sizeof(ia));
    memset(&ib, 0, sizeof(ib));
    submit_held(a, &ia, 0);
    ib.seq = &ev;
    accel_op op = item_op(&ib);
    cr_assert_eq(accel_submit(bs, &op, ACCEL_FOREVER), ACCEL_OK);
    sync_or_fail(bs, "B's op runs while A is held");
    cr_assert_eq(atomic_load(&ib.status), 0);
    cr_assert_eq(atomic_load(&ia.done_calls), 0, "A is still held");
    cr_assert_eq(atomic_load(&b.calls), 0, "A's batch not called yet");
    unit_step("close A (DRAIN) runs its held op");
    cr_assert_eq(accel_session_close(a, ACCEL_CLOSE_DRAIN), ACCEL_OK);
    cr_assert_eq(atomic_load(&ia.status), 0);
    cr_assert(atomic_load(&b.first_at) > atomic_load(&ib.done_seq) + 1,
              "B's done (event %d) came before A's batch (event %d)",
              atomic_load(&ib.done_seq), atomic_load(&b.first_at) - 1);
    accel_session_release(a);
    accel_session_release(bs);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    stall_timer(false);
}

/* --------------------------------------------- close and cancel */

static void close_held(unsigned flags)
{
    stall_timer(true); /* only the close may release it */
    accel_runtime *rt;
    accel_session *s = hold_open(&rt, 64, 64, ACCEL_BATCH_DELAY_MAX, 0);
    static item it[5];
    memset(it, 0, sizeof(it));
    static _Atomic int seq;
    atomic_store(&seq, 0);
    it[0].seq = &seq;
    submit_held(s, &it[0], 0);
    for (int i = 1; i < 5; i++) {
        it[i].seq = &seq;
        accel_op op = item_op(&it[i]);
        cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    }
    unit_step("close returns with the held ops completed");
    cr_assert_eq(accel_session_close(s, flags), ACCEL_OK);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(atomic_load(&it[i].done_calls), 1);
        cr_assert_eq(atomic_load(&it[i].done_seq), i, "FIFO");
        if (flags & ACCEL_CLOSE_CANCEL) {
            cr_assert_eq(atomic_load(&it[i].status), ACCEL_ECLOSED);
            cr_assert_eq(atomic_load(&it[i].in_batch), 0);
        } else {
            cr_assert_eq(atomic_load(&it[i].status), 0);
            cr_assert_eq(atomic_load(&it[i].in_batch), 1);
        }
    }
    if (!(flags & ACCEL_CLOSE_CANCEL)) {
        cr_assert_eq(atomic_load(&hb.calls), 1);
        cr_assert_eq(atomic_load(&hb.sizes[0]), 5);
    }
    hold_close(rt, s);
}

Test(batch_hold, close_drain_runs_held_ops, .timeout = 60)
{
    close_held(ACCEL_CLOSE_DRAIN);
}

Test(batch_hold, close_cancel_completes_held_ops_unrun, .timeout = 60)
{
    close_held(ACCEL_CLOSE_CANCEL);
}

Test(batch_hold, cancel_of_a_held_op, .timeout = 60)
{
    /* Three held ops with tickets; cancelling the second releases the
     * session: the other two run as one batch, the second completes
     * ACCEL_ECANCELED unrun, the dones in FIFO order. */
    stall_timer(true);
    accel_runtime *rt;
    accel_session *s = hold_open(&rt, 64, 64, ACCEL_BATCH_DELAY_MAX, 0);
    static item it[3];
    memset(it, 0, sizeof(it));
    static _Atomic int seq;
    atomic_store(&seq, 0);
    accel_ticket t[3];
    for (int i = 0; i < 3; i++) {
        it[i].seq = &seq;
        accel_op op = item_op(&it[i]);
        cr_assert_eq(accel_submit_ex(s, &op, 0, ACCEL_FOREVER, &t[i]),
                     ACCEL_OK);
        if (i == 0) {
            unit_step("the first op held");
            while (stats(s).visits == 0)
                tu_nap_us(50);
        }
    }
    cr_assert_eq(atomic_load(&hb.calls), 0);
    cr_assert_eq(accel_cancel(&t[1]), ACCEL_OK);
    sync_or_fail(s, "the cancel releases the session");
    cr_assert_eq(atomic_load(&it[1].status), ACCEL_ECANCELED);
    cr_assert_eq(atomic_load(&it[1].in_batch), 0);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(atomic_load(&it[i].done_calls), 1);
        cr_assert_eq(atomic_load(&it[i].done_seq), i, "FIFO");
    }
    cr_assert_eq(atomic_load(&it[0].status), 0);
    cr_assert_eq(atomic_load(&it[2].status), 0);
    cr_assert_eq(atomic_load(&hb.calls), 1);
    cr_assert_eq(atomic_load(&hb.sizes[0]), 2);
    cr_assert_eq(accel_cancel(&t[0]), ACCEL_EALREADY);
    hold_close(rt, s);
}

Test(batch_hold, clearing_the_batch_fn_releases_held_ops, .timeout = 60)
{
    stall_timer(true);
    accel_runtime *rt;
    accel_session *s = hold_open(&rt, 64, 64, ACCEL_BATCH_DELAY_MAX, 0);
    static item it;
    memset(&it, 0, sizeof(it));
    submit_held(s, &it, 0);
    cr_assert_eq(accel_session_set_batch(s, NULL), ACCEL_OK);
    sync_or_fail(s, "cleared: the held op runs (one by one)");
    cr_assert_eq(atomic_load(&it.status), 0);
    cr_assert_eq(atomic_load(&it.in_batch), 0, "ran by its own fn");
    hold_close(rt, s);
}

/* The holder's window (batch.h's seam): the first hold's holder stops
 * right after publishing its hold, until the test lets it go on. */
static tu_seam_stop window;
static void hold_window(accel_session *s)
{
    (void)s;
    tu_seam_stop_first(&window);
}

/* A release that lands while the holder is still in its visit's end
 * (its hold published, its second look to come) hands the session on
 * whole: the ring's defer word is then the next holder's, and a visit
 * that leaves the session to a producer in the middle of a publish (a
 * deferral in defer, ring.h) keeps that hand-off when the first holder
 * goes on. Here the holder stops in that window (the seam); a producer
 * reserves a position and stops before publishing (the test, through
 * the ring); clearing the batch fn releases the session, and the other
 * worker runs the held op, finds the reserved position unpublished and
 * leaves the session to its producer; then the holder goes on, and the
 * producer publishes and must claim the session. Planted (the hold's
 * mark in defer stored after the hold word, as before this test): the
 * holder's late mark lands on the deferral, the producer reads "held"
 * and claims nothing, and the session is stranded with an op queued (a
 * DRAIN close of it waits for ever). Seen failing with the seam between
 * the old code's two stores; with the one-word hold the seam sits after
 * the mark, and the test guards the rule that holds from there: once its
 * hold is published, a holder writes defer only through the release's
 * exact-mark CAS. */
Test(batch_hold, a_release_in_the_holders_window_keeps_a_deferral,
     .timeout = 60)
{
    stall_timer(true);
    window = (tu_seam_stop){0};
    atomic_store(&accel__batch_hold_hook, hold_window);
    accel_runtime *rt = tu_runtime_nodetect(2);
    cr_assert_not_null(rt);
    accel_session *s = tu_open(rt, "w", 64, 0);
    cr_assert_not_null(s);
    static bstate hb;
    memset(&hb, 0, sizeof(hb));
    accel_batch_config c = hold_cfg(&hb, 8, ACCEL_BATCH_DELAY_MAX, 0);
    cr_assert_eq(accel_session_set_batch(s, &c), ACCEL_OK);
    static item a, b;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    accel_op opa = item_op(&a);
    cr_assert_eq(accel_submit(s, &opa, ACCEL_FOREVER), ACCEL_OK);
    unit_step("the holder stops in its window, its hold published");
    tu_seam_wait_in(&window);
    unit_step("a producer reserves a position and stops before publishing");
    uint64_t first;
    bool owner;
    cr_assert_eq(accel__ring_mp_reserve(ACCEL__RING(s), 1, &first, &owner), 1);
    cr_assert(!owner, "a held session keeps SCHED: no owner by reserving");
    unit_step("the release: the other worker runs a, leaves s to the producer");
    cr_assert_eq(accel_session_set_batch(s, NULL), ACCEL_OK);
    while (atomic_load(&a.done_calls) == 0)
        tu_nap_us(100);
    while (atomic_load(&s->rp.defer) != first + 1)
        tu_nap_us(100);
    unit_step("the holder goes on and ends its visit");
    atomic_store(&window.go, 1);
    for (;;) {
        accel_runtime_stats rs;
        cr_assert_eq(accel_runtime_get_stats(rt, &rs, sizeof(rs)), ACCEL_OK);
        if (rs.parked == 2)
            break;
        tu_nap_us(100);
    }
    unit_step("the producer publishes and claims the session left to it");
    accel_op opb = item_op(&b);
    accel__ring_mp_publish(ACCEL__RING(s), first, &opb);
    bool held;
    bool claimed = accel__ring_mp_claim_deferred_ex(ACCEL__RING(s), &held);
    cr_assert(claimed && !held,
              "the deferral left to the producer is gone: defer %#llx, "
              "claimed %d, held %d",
              (unsigned long long)atomic_load(&s->rp.defer), claimed, held);
    accel__session_set_next(s, first, s->rp.mask);
    accel__park_enqueue(s, false);
    sync_or_fail(s, "b runs");
    cr_assert_eq(atomic_load(&b.done_calls), 1);
    atomic_store(&accel__batch_hold_hook, NULL);
    hold_close(rt, s);
}

/* ------------------------------------------------------ configuration */

static void host_wake(void *arg, unsigned lane)
{
    (void)arg, (void)lane;
}

Test(batch_hold, configuration, .timeout = 60)
{
    stall_timer(false);
    accel_runtime *rt = tu_runtime(1);
    accel_session *s = tu_open(rt, "h", 64, 0);
    static bstate b;
    memset(&b, 0, sizeof(b));
    accel_batch_config ok = hold_cfg(&b, 4, 1000, 0);
    ok.cost_per_op_ns = 10;
    cr_assert_eq(accel_session_set_batch(s, &ok), ACCEL_OK, "a delay and costs");
    accel_batch_config big = hold_cfg(&b, 4, ACCEL_BATCH_DELAY_MAX + 1, 0);
    cr_assert_eq(accel_session_set_batch(s, &big), ACCEL_EINVAL);
    accel_batch_config nofn = {.max_ops = 4, .max_delay_ns = 1000};
    cr_assert_eq(accel_session_set_batch(s, &nofn), ACCEL_EINVAL);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    /* a runtime of host-driven workers: batching and hold-back too
     * (unit_batch_host.c holds on a host visit) */
    accel_runtime_config hc = {.workers = 1,
                               .struct_size = sizeof(hc),
                               .flags = ACCEL_RUNTIME_HOST_WORKERS,
                               .host_wake = host_wake};
    cr_assert_eq(accel_runtime_create(&hc, &rt), ACCEL_OK);
    s = tu_open(rt, "h", 64, 0);
    cr_assert_eq(accel_session_set_batch(s, &ok), ACCEL_OK);
    cr_assert_eq(accel_session_close(s, ACCEL_CLOSE_DRAIN), ACCEL_OK);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* --------------------------------------------- scheduler level */

/* A batch that takes at least 200 us, whatever its size (a spin on the
 * clock: the batch's length is the point, not a bound asserted). */
static void long_batch(accel_ctx *ctx, void *const *args, uint32_t n,
                       int *status, void *user)
{
    (void)ctx, (void)args, (void)n, (void)status, (void)user;
    int64_t t0 = accel_now_ns();
    while (accel_now_ns() - t0 < 200000)
        ;
}

Test(batch_hold, long_batch_is_one_long_op_to_the_lanes, .timeout = 60)
{
    /* A short lane for ops up to 50 us. A batched session's batches of
     * 64 ops take 200 us or more (3 us an op): to the scheduler a batch
     * is one op, so the session's op cost is the batch's and it stays
     * off the short lane, whose sessions it would otherwise delay by
     * whole batches. */
    accel_runtime_config rc = {.workers = 2,
                               .short_lane_workers = 1,
                               .short_op_ns = 50000};
    accel_runtime *rt = NULL;
    cr_assert_eq(accel_runtime_create(&rc, &rt), ACCEL_OK);
    accel_session *s = tu_open(rt, "long", 1024, 0);
    accel_batch_config c = {.fn = long_batch, .max_ops = 64};
    cr_assert_eq(accel_session_set_batch(s, &c), ACCEL_OK);
    accel_op ops[64];
    for (int i = 0; i < 64; i++)
        ops[i] = (accel_op){.fn = item_fn};
    unit_step("rounds of 64 ops, batched");
    for (int r = 0; r < 20; r++) {
        size_t acc;
        cr_assert_eq(accel_submit_batch(s, ops, 64, ACCEL_FOREVER, &acc),
                     ACCEL_OK);
        cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    }
    accel_session_stats st = stats(s);
    cr_assert_eq(st.batch_ops, 20 * 64);
    cr_assert(st.batches < st.batch_ops, "batches of more than one op");
    uint8_t cls = atomic_load(&s->se.cls);
    printf("batched session: %llu batches, op cost %llu ns, class %u\n",
           (unsigned long long)st.batches,
           (unsigned long long)s->se.op_cost_ns, cls);
    cr_assert_eq(cls, 0, "the batched session is on the general class "
                         "(op cost %llu ns: the batch's)",
                 (unsigned long long)s->se.op_cost_ns);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

static accel__sched *mk_sched(unsigned short_workers)
{
    accel__sched_config c = {.workers = 2,
                             .short_lane_workers = short_workers,
                             .short_op_ns = 10000,
                             .quantum_ops = 64,
                             .quantum_ns = 2000000,
                             .max_entities = 16};
    accel__sched *s = NULL;
    cr_assert_eq(accel__sched_create(&c, &s), ACCEL_OK);
    return s;
}

static uint64_t vnow_of(accel__sched *s, accel__sched_entity *e)
{
    /* lag = (V - vtime) * w: V from an entity's lag and vtime */
    uint32_t w = atomic_load(&e->weight);
    return accel__sched_vtime_of(s, e) +
           (uint64_t)(accel__sched_lag(s, e) / (int64_t)w);
}

Test(batch_hold, sched_held_entity_keeps_its_place, .timeout = 60)
{
    /* A (weight 1) and B (weight 1) backlogged; A is held while behind
     * V, B runs alone for a long while; A released: its vtime - V is
     * what it was when held. Re-queued as waking (the no-credit rule)
     * it would lose that credit; with its old vtime it would gain the
     * whole wait (up to the lag cap). */
    accel__sched *s = mk_sched(0);
    accel__sched_entity a = {0}, b = {0};
    accel__sched_entity_init(s, &a, 1, &a);
    accel__sched_entity_init(s, &b, 1, &b);
    accel__sched_enqueue(s, &a, true);
    accel__sched_enqueue(s, &b, true);
    /* a few rounds: each picked, charged, re-queued */
    for (int i = 0; i < 20; i++) {
        accel__sched_entity *e = accel__sched_pick(s, ACCEL__LANE_GENERAL);
        cr_assert_not_null(e);
        accel__sched_charge(s, e, e == &a ? 10000 : 30000, 0, 1);
        accel__sched_enqueue(s, e, false);
    }
    /* hold A at its next pick */
    accel__sched_entity *e;
    while ((e = accel__sched_pick(s, ACCEL__LANE_GENERAL)) != &a) {
        accel__sched_charge(s, e, 30000, 0, 1);
        accel__sched_enqueue(s, e, false);
    }
    int64_t place = accel__sched_hold(s, &a, 10000, 0, 1);
    int64_t place_seen = (int64_t)(accel__sched_vtime_of(s, &a) - vnow_of(s, &b));
    cr_assert_eq(place, place_seen);
    /* B alone for 200 visits */
    for (int i = 0; i < 200; i++) {
        e = accel__sched_pick(s, ACCEL__LANE_GENERAL);
        cr_assert_eq(e, &b, "only B is queued while A is held");
        accel__sched_charge(s, e, 30000, 0, 1);
        accel__sched_enqueue(s, e, false);
    }
    accel__sched_release(s, &a, place);
    int64_t after = (int64_t)(accel__sched_vtime_of(s, &a) - vnow_of(s, &b));
    printf("held place %lld, after release %lld (virtual ns)\n",
           (long long)place, (long long)after);
    cr_assert_eq(after, place, "A's place against V: %lld held, %lld after",
                 (long long)place, (long long)after);
    accel__sched_destroy(s);
}

Test(batch_hold, sched_batch_charged_short_lane_unchanged, .timeout = 60)
{
    /* A short-lane session S (1 us ops) and a batched session A whose
     * visits each run one batch of 64 ops in 400 us: the batch is one op
     * to the scheduler, so A's op cost is the batch's (general class) and
     * its whole time is charged; S stays short, and the short lane's
     * picks return S only, as they did before A batched. */
    accel__sched *s = mk_sched(1);
    accel__sched_entity a = {0}, sh = {0};
    accel__sched_entity_init(s, &a, 1, &a);
    accel__sched_entity_init(s, &sh, 1, &sh);
    accel__sched_enqueue(s, &a, true);
    accel__sched_enqueue(s, &sh, true);
    /* their first visits: each its cost known (both start short) */
    for (int i = 0; i < 2; i++) {
        accel__sched_entity *e = accel__sched_pick(s, ACCEL__LANE_GENERAL);
        cr_assert_not_null(e);
        accel__sched_charge(s, e, e == &a ? 400000 : 16000, 0,
                            e == &a ? 1 : 16);
        accel__sched_enqueue(s, e, false);
    }
    uint64_t a_charged = 0;
    for (int i = 0; i < 100; i++) {
        accel__sched_entity *e = accel__sched_pick(s, ACCEL__LANE_GENERAL);
        cr_assert_not_null(e);
        uint64_t v0 = accel__sched_vtime_of(s, e);
        if (e == &a) {
            accel__sched_charge(s, e, 400000, 0, 1); /* one batch */
            a_charged += accel__sched_vtime_of(s, e) - v0;
        } else {
            accel__sched_charge(s, e, 16000, 0, 16);
        }
        accel__sched_enqueue(s, e, false);
        accel__sched_entity *q = accel__sched_pick(s, ACCEL__LANE_SHORT);
        if (q) {
            cr_assert_eq(q, &sh, "the short lane picks only the short session");
            accel__sched_charge(s, q, 16000, 0, 16);
            accel__sched_enqueue(s, q, false);
        }
    }
    cr_assert_eq(atomic_load(&a.cls), 0, "the batched session is general");
    cr_assert_eq(atomic_load(&sh.cls), 1, "the short session stays short");
    cr_assert(a_charged > 0 && a_charged % 400000 == 0,
              "each batch charged whole (weight 1): %llu",
              (unsigned long long)a_charged);
    accel__sched_destroy(s);
}
