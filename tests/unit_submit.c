/*
 * Submit paths: FIFO and no concurrency within a session (4 sessions x 1000
 * ops concurrently, and 4 producers on one session), no cross-session
 * contamination, backpressure statuses, queue_depth counting only ops not
 * yet started, submit_batch prefixes, submit_wait results, sync, EDEADLK
 * from inside an own op, and stats that add up.
 *
 * Promises: 1, 2, 4
 */
#define _GNU_SOURCE /* nanosleep, clock_gettime */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core_util.h"
#include "unit_watchdog.h"

UNIT_WATCHDOG_SUITE(submit);

/* Per-session checker: an op that finds another op of the same session
 * inside (in_op != 0) or an out-of-order sequence counts an error. */
typedef struct checker {
    accel_session *s;
    _Atomic int in_op;
    uint64_t next[8]; /* per producer: only the session's ops touch it */
    _Atomic long errors, ran, done_ok;
} checker;

typedef struct item {
    checker *chk;
    uint32_t producer;
    uint64_t seq;
} item;

static int op_check(accel_ctx *ctx, void *arg)
{
    item *it = arg;
    checker *c = it->chk;
    /* relaxed is enough for an overlap detector: two ops of one session
     * running at once would both see the other's increment eventually;
     * acq_rel makes it certain on the first overlap. */
    if (atomic_fetch_add_explicit(&c->in_op, 1, memory_order_acq_rel) != 0)
        atomic_fetch_add(&c->errors, 1);
    if (accel_ctx_session(ctx) != c->s)
        atomic_fetch_add(&c->errors, 1); /* cross-contamination */
    if (it->seq != c->next[it->producer])
        atomic_fetch_add(&c->errors, 1);
    c->next[it->producer] = it->seq + 1;
    if ((it->seq & 63) == 0)
        tu_nap_us(20); /* widen the window for an overlap */
    atomic_fetch_add_explicit(&c->ran, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&c->in_op, 1, memory_order_acq_rel);
    return 0;
}

static void done_check(void *arg, int status)
{
    item *it = arg;
    if (status == 0)
        atomic_fetch_add(&it->chk->done_ok, 1);
    else
        atomic_fetch_add(&it->chk->errors, 1);
}

typedef struct producer_arg {
    checker *chk;
    item *items;
    uint32_t producer;
    int n;
    int errors;
} producer_arg;

static void *producer_main(void *p)
{
    producer_arg *a = p;
    uint64_t seed = a->producer + 1;
    for (int i = 0; i < a->n; i++) {
        item *it = &a->items[i];
        *it = (item){.chk = a->chk, .producer = a->producer, .seq = (uint64_t)i};
        accel_op op = {.fn = op_check, .done = done_check, .arg = it};
        int rc;
        if (tu_rand(&seed) % 4 == 0) {
            while ((rc = accel_submit(a->chk->s, &op, ACCEL_NO_WAIT)) ==
                   ACCEL_EAGAIN)
                tu_nap_us(10);
        } else {
            rc = accel_submit(a->chk->s, &op, ACCEL_FOREVER);
        }
        if (rc != ACCEL_OK)
            a->errors++;
    }
    return NULL;
}

static void run_fifo(unsigned workers, int sessions, int producers_per,
                     int ops_per_producer, uint32_t depth)
{
    accel_runtime *rt = tu_runtime(workers);
    cr_assert_not_null(rt);
    checker *chk = calloc((size_t)sessions, sizeof(*chk));
    int np = sessions * producers_per;
    producer_arg *pa = calloc((size_t)np, sizeof(*pa));
    pthread_t *th = calloc((size_t)np, sizeof(*th));
    for (int i = 0; i < sessions; i++) {
        char id[16];
        snprintf(id, sizeof(id), "vm-%d", i);
        chk[i].s = tu_open(rt, id, depth, 0);
        cr_assert_not_null(chk[i].s);
    }
    for (int p = 0; p < np; p++) {
        pa[p] = (producer_arg){.chk = &chk[p % sessions],
                               .producer = (uint32_t)(p / sessions),
                               .n = ops_per_producer};
        pa[p].items = calloc((size_t)ops_per_producer, sizeof(item));
        pthread_create(&th[p], NULL, producer_main, &pa[p]);
    }
    unit_step("the producers return");
    for (int p = 0; p < np; p++) {
        pthread_join(th[p], NULL);
        cr_assert_eq(pa[p].errors, 0);
    }
    long expect = (long)producers_per * ops_per_producer;
    unit_step("sync, drain close and release of each session");
    for (int i = 0; i < sessions; i++) {
        cr_assert_eq(accel_session_sync(chk[i].s, ACCEL_FOREVER), ACCEL_OK);
        cr_assert_eq(atomic_load(&chk[i].errors), 0,
                     "session %d: overlap, disorder or foreign op", i);
        cr_assert_eq(atomic_load(&chk[i].ran), expect);
        cr_assert_eq(atomic_load(&chk[i].done_ok), expect,
                     "sync returned before every done callback");
        for (int p = 0; p < producers_per; p++)
            cr_assert_eq(chk[i].next[p], (uint64_t)ops_per_producer);
        accel_session_stats st;
        cr_assert_eq(accel_session_close(chk[i].s, 0), ACCEL_OK);
        cr_assert_eq(accel_session_get_stats(chk[i].s, &st), ACCEL_OK);
        cr_assert_eq(st.submitted, (uint64_t)expect);
        cr_assert_eq(st.dispatched, (uint64_t)expect);
        cr_assert_eq(st.completed, (uint64_t)expect);
        cr_assert_eq(st.failed + st.cancelled + st.queued, 0);
        accel_session_release(chk[i].s);
    }
    unit_step("runtime destroy");
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    for (int p = 0; p < np; p++)
        free(pa[p].items);
    free(pa);
    free(th);
    free(chk);
}

Test(submit, four_sessions_x_1000_fifo_no_cross_contamination, .timeout = 30)
{
    run_fifo(2, 4, 1, 1000, 0);
}

Test(submit, four_sessions_small_rings_four_workers, .timeout = 30)
{
    run_fifo(4, 4, 1, 1000, 8); /* backpressure on every producer */
}

Test(submit, four_producers_one_session_per_producer_order, .timeout = 30)
{
    run_fifo(3, 1, 4, 1000, 16);
}

/* ---- backpressure ------------------------------------------------------ */

static _Atomic int ran;

static int op_ran(accel_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    atomic_fetch_add(&ran, 1);
    return 0;
}

typedef struct submitter {
    accel_session *s;
    int64_t timeout;
    int rc;
    _Atomic int returned;
} submitter;

static void *submitter_main(void *p)
{
    submitter *a = p;
    accel_op op = {.fn = op_ran};
    a->rc = accel_submit(a->s, &op, a->timeout);
    atomic_store_explicit(&a->returned, 1, memory_order_release);
    return NULL;
}

static void backpressure(uint32_t depth)
{
    accel_runtime *rt = tu_runtime(2);
    accel_session *s = tu_open(rt, "vm", depth, 0);
    atomic_store(&ran, 0);
    tu_blocker b = {0};
    accel_op bop = tu_blocker_op(&b);
    cr_assert_eq(accel_submit(s, &bop, ACCEL_NO_WAIT), ACCEL_OK);
    unit_step("the blocking op starts");
    tu_wait_at_least(&b.started, 1);
    /* The running op holds no slot: depth more fit. */
    accel_op op = {.fn = op_ran};
    for (uint32_t i = 0; i < depth; i++)
        cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK,
                     "slot %u of %u refused: a running op still holds one?",
                     i, depth);
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats(s, &st), ACCEL_OK);
    cr_assert_eq(st.queued, depth);
    cr_assert_eq(st.dispatched, 1);
    cr_assert_eq(st.submitted, depth + 1);
    cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_EAGAIN);
    cr_assert_eq(accel_submit(s, &op, 1000000), ACCEL_ETIMEDOUT);
    cr_assert_eq(accel_submit(s, &op, 1), ACCEL_ETIMEDOUT);
    size_t acc = 99;
    accel_op two[2] = {op, op};
    cr_assert_eq(accel_submit_batch(s, two, 2, ACCEL_NO_WAIT, &acc),
                 ACCEL_EAGAIN);
    cr_assert_eq(acc, 0);
    cr_assert_eq(accel_submit_wait(s, op_ran, NULL, ACCEL_NO_WAIT),
                 ACCEL_EAGAIN);
    cr_assert_eq(accel_submit_wait(s, op_ran, NULL, 100000),
                 ACCEL_ETIMEDOUT);
    cr_assert_eq(accel_session_get_stats(s, &st), ACCEL_OK);
    cr_assert_eq(st.submitted, depth + 1, "refused submits change nothing");

    /* A FOREVER producer waits, and succeeds once room appears. */
    submitter sa = {.s = s, .timeout = ACCEL_FOREVER};
    pthread_t th;
    pthread_create(&th, NULL, submitter_main, &sa);
    tu_nap_us(2000);
    cr_assert_eq(atomic_load(&sa.returned), 0,
                 "FOREVER returned on a full ring (rc %d)", sa.rc);
    tu_latch_open(&b.gate);
    unit_step("the FOREVER producer returns once the blocking op is let go");
    pthread_join(th, NULL);
    cr_assert_eq(sa.rc, ACCEL_OK);
    unit_step("sync of s: depth + 1 ops");
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(atomic_load(&ran), (int)depth + 1);
    unit_step("drain close of s");
    cr_assert_eq(accel_session_close(s, 0), ACCEL_OK);
    cr_assert_eq(accel_session_get_stats(s, &st), ACCEL_OK);
    cr_assert_eq(st.submitted, depth + 2);
    cr_assert_eq(st.completed, depth + 2);
    cr_assert_eq(st.queued, 0);
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(submit, backpressure_depth_1, .timeout = 10) { backpressure(1); }
Test(submit, backpressure_depth_2, .timeout = 10) { backpressure(2); }

Test(submit, depth_rounds_up_to_power_of_two, .timeout = 10)
{
    accel_runtime *rt = tu_runtime(1);
    accel_session *s = tu_open(rt, "vm", 3, 0);
    tu_blocker b = {0};
    accel_op bop = tu_blocker_op(&b);
    cr_assert_eq(accel_submit(s, &bop, ACCEL_NO_WAIT), ACCEL_OK);
    unit_step("the blocking op starts");
    tu_wait_at_least(&b.started, 1);
    accel_op op = {.fn = op_ran};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_EAGAIN,
                 "depth 3 rounds up to 4, not more");
    tu_latch_open(&b.gate);
    unit_step("release of s (drains 5 ops) and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---- submit_batch ------------------------------------------------------ */

static _Atomic int order_pos;
static int order_seen[256];

static int op_order(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    int p = atomic_fetch_add(&order_pos, 1);
    if (p < 256)
        order_seen[p] = (int)(intptr_t)arg;
    return 0;
}

Test(submit, batch_prefix_and_accepted, .timeout = 10)
{
    accel_runtime *rt = tu_runtime(2);
    accel_session *s = tu_open(rt, "vm", 4, 0);
    accel_op ops[200];
    for (int i = 0; i < 200; i++)
        ops[i] = (accel_op){.fn = op_order, .arg = (void *)(intptr_t)i};
    size_t acc = 99;
    cr_assert_eq(accel_submit_batch(s, ops, 0, ACCEL_NO_WAIT, &acc), ACCEL_OK);
    cr_assert_eq(acc, 0);
    cr_assert_eq(accel_submit_batch(s, NULL, 0, ACCEL_NO_WAIT, NULL),
                 ACCEL_OK);
    /* Larger than the ring, FOREVER: all accepted, in order. */
    atomic_store(&order_pos, 0);
    unit_step("a FOREVER batch of 200 into a ring of 4");
    cr_assert_eq(accel_submit_batch(s, ops, 200, ACCEL_FOREVER, &acc),
                 ACCEL_OK);
    cr_assert_eq(acc, 200);
    unit_step("sync of s: the batch of 200");
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(atomic_load(&order_pos), 200);
    for (int i = 0; i < 200; i++)
        cr_assert_eq(order_seen[i], i, "batch order broken at %d", i);

    /* Ring full behind a blocked op: NO_WAIT accepts a prefix of 4. */
    tu_blocker b = {0};
    accel_op bop = tu_blocker_op(&b);
    cr_assert_eq(accel_submit(s, &bop, ACCEL_NO_WAIT), ACCEL_OK);
    unit_step("the blocking op starts");
    tu_wait_at_least(&b.started, 1);
    atomic_store(&order_pos, 0);
    cr_assert_eq(accel_submit_batch(s, ops, 8, ACCEL_NO_WAIT, &acc),
                 ACCEL_EAGAIN);
    cr_assert_eq(acc, 4);
    cr_assert_eq(accel_submit_batch(s, ops + 4, 4, 500000, &acc),
                 ACCEL_ETIMEDOUT);
    cr_assert_eq(acc, 0);
    tu_latch_open(&b.gate);
    unit_step("sync of s once the blocking op is let go");
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(atomic_load(&order_pos), 4, "exactly the prefix ran");

    /* A NULL fn stops the batch with EINVAL before it. */
    atomic_store(&order_pos, 0);
    accel_op bad[5] = {ops[0], ops[1], {.fn = NULL}, ops[3], ops[4]};
    unit_step("FOREVER batches stopped by a NULL fn");
    cr_assert_eq(accel_submit_batch(s, bad, 5, ACCEL_FOREVER, &acc),
                 ACCEL_EINVAL);
    cr_assert_eq(acc, 2);
    bad[0].fn = NULL;
    cr_assert_eq(accel_submit_batch(s, bad, 5, ACCEL_FOREVER, &acc),
                 ACCEL_EINVAL);
    cr_assert_eq(acc, 0);
    unit_step("sync of s: the 2 ops before the NULL fn");
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(atomic_load(&order_pos), 2);
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats(s, &st), ACCEL_OK);
    cr_assert_eq(st.submitted, 200 + 1 + 4 + 2);

    /* Closed: ECLOSED, nothing accepted. */
    unit_step("drain close of s");
    cr_assert_eq(accel_session_close(s, 0), ACCEL_OK);
    acc = 99;
    unit_step("FOREVER batch to the closed s (ECLOSED)");
    cr_assert_eq(accel_submit_batch(s, ops, 3, ACCEL_FOREVER, &acc),
                 ACCEL_ECLOSED);
    cr_assert_eq(acc, 0);
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---- submit_wait, sync, done statuses ------------------------------- */

static int op_return_arg(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    return *(int *)arg;
}

static int op_write_stack(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    int *v = arg;
    for (int i = 0; i < 16; i++)
        v[i] = i * i;
    return 0;
}

Test(submit, submit_wait_returns_fn_result, .timeout = 10)
{
    accel_runtime *rt = tu_runtime(2);
    accel_session *s = tu_open(rt, "vm", 0, 0);
    static const int vals[] = {0, 42, 1, -1, ACCEL_ECLOSED, 1000000};
    unit_step("submit_wait of 6 ops returning their results");
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        int v = vals[i];
        cr_assert_eq(accel_submit_wait(s, op_return_arg, &v, ACCEL_FOREVER),
                     vals[i]);
    }
    int stackbuf[16] = {0};
    cr_assert_eq(accel_submit_wait(s, op_write_stack, stackbuf, ACCEL_NO_WAIT),
                 0);
    for (int i = 0; i < 16; i++)
        cr_assert_eq(stackbuf[i], i * i);
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats(s, &st), ACCEL_OK);
    cr_assert_eq(st.completed, 2);
    cr_assert_eq(st.failed, 5, "non-zero results count as failed");
    unit_step("drain close of s");
    cr_assert_eq(accel_session_close(s, 0), ACCEL_OK);
    unit_step("FOREVER submit_wait to the closed s (ECLOSED)");
    cr_assert_eq(accel_submit_wait(s, op_return_arg, stackbuf, ACCEL_FOREVER),
                 ACCEL_ECLOSED);
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

static _Atomic int done_calls, done_sum;

static int op_ret_idx(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    tu_nap_us(20);
    return (int)(intptr_t)arg % 3; /* 0 or positive op errors */
}

static void done_sum_status(void *arg, int status)
{
    if (status != (int)(intptr_t)arg % 3)
        atomic_fetch_add(&done_sum, 1000000); /* wrong status */
    tu_nap_us(20); /* sync must wait for the callback to return */
    atomic_fetch_add(&done_sum, status);
    atomic_fetch_add(&done_calls, 1);
}

Test(submit, done_gets_fn_status_and_sync_waits_for_it, .timeout = 10)
{
    accel_runtime *rt = tu_runtime(2);
    accel_session *s = tu_open(rt, "vm", 0, 0);
    atomic_store(&done_calls, 0);
    atomic_store(&done_sum, 0);
    int expect_sum = 0;
    unit_step("300 FOREVER submits");
    for (intptr_t i = 0; i < 300; i++) {
        accel_op op = {.fn = op_ret_idx, .done = done_sum_status,
                       .arg = (void *)i};
        cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
        expect_sum += (int)(i % 3);
    }
    unit_step("sync of s: 300 ops with slow done callbacks");
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(atomic_load(&done_calls), 300);
    cr_assert_eq(atomic_load(&done_sum), expect_sum);
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats(s, &st), ACCEL_OK);
    cr_assert_eq(st.completed, 100);
    cr_assert_eq(st.failed, 200);
    cr_assert_eq(st.dispatched, 300);
    cr_assert_eq(st.queued, 0);
    cr_assert_geq(st.visits, 1);
    /* sync on an idle session and with NO_WAIT returns at once. */
    cr_assert_eq(accel_session_sync(s, ACCEL_NO_WAIT), ACCEL_OK);
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(submit, sync_times_out_behind_a_blocked_op, .timeout = 10)
{
    accel_runtime *rt = tu_runtime(2);
    accel_session *s = tu_open(rt, "vm", 0, 0);
    tu_blocker b = {0};
    accel_op bop = tu_blocker_op(&b);
    cr_assert_eq(accel_submit(s, &bop, ACCEL_NO_WAIT), ACCEL_OK);
    cr_assert_eq(accel_session_sync(s, ACCEL_NO_WAIT), ACCEL_ETIMEDOUT);
    cr_assert_eq(accel_session_sync(s, 1000000), ACCEL_ETIMEDOUT);
    tu_latch_open(&b.gate);
    unit_step("sync of s once the blocking op is let go");
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(atomic_load(&b.done_calls), 1);
    unit_step("drain close of s");
    cr_assert_eq(accel_session_close(s, 0), ACCEL_OK);
    unit_step("sync of the closed s");
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK,
                 "sync works on a closed session");
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---- EDEADLK from inside an own op ------------------------------------ */

typedef struct inside {
    accel_session *other;
    int sync_own, wait_own, sync_other, wait_other, submit_own;
    _Atomic int child_ran;
} inside;

static int op_child(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    inside *in = arg;
    atomic_store(&in->child_ran, 1);
    return 0;
}

static int op_calls_inside(accel_ctx *ctx, void *arg)
{
    inside *in = arg;
    accel_session *self = accel_ctx_session(ctx);
    in->sync_own = accel_session_sync(self, ACCEL_FOREVER);
    in->wait_own = accel_submit_wait(self, op_child, in, ACCEL_FOREVER);
    in->sync_other = accel_session_sync(in->other, ACCEL_FOREVER);
    in->wait_other = accel_submit_wait(in->other, op_return_arg,
                                       &(int){7}, ACCEL_FOREVER);
    accel_op child = {.fn = op_child, .arg = in};
    in->submit_own = accel_submit(self, &child, ACCEL_NO_WAIT);
    return 0;
}

Test(submit, sync_and_submit_wait_inside_own_op_edeadlk, .timeout = 10)
{
    accel_runtime *rt = tu_runtime(2);
    accel_session *s = tu_open(rt, "vm", 0, 0);
    accel_session *o = tu_open(rt, "other", 0, 0);
    inside in = {.other = o};
    unit_step("submit_wait of the op that syncs and waits inside");
    cr_assert_eq(accel_submit_wait(s, op_calls_inside, &in, ACCEL_FOREVER), 0);
    cr_assert_eq(in.sync_own, ACCEL_EDEADLK);
    cr_assert_eq(in.wait_own, ACCEL_EDEADLK);
    cr_assert_eq(in.sync_other, ACCEL_OK, "another session is fine");
    cr_assert_eq(in.wait_other, 7);
    cr_assert_eq(in.submit_own, ACCEL_OK, "plain submit to self queues");
    unit_step("sync of s: the op's child");
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(atomic_load(&in.child_ran), 1);
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats(s, &st), ACCEL_OK);
    cr_assert_eq(st.submitted, 2, "EDEADLK accepted nothing");
    unit_step("release of s and o and runtime destroy");
    accel_session_release(s);
    accel_session_release(o);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* With one worker, submit_wait to another session from inside an op would
 * wait for a worker that is busy with us; the contract only promises
 * EDEADLK for the own session, so this test needs 2 workers (above). */
