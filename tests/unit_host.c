/*
 * Host-driven workers (ACCEL_RUNTIME_HOST_WORKERS; accel_host_visit_begin,
 * _end, accel_host_idle_begin, _end): bad input, FIFO and statuses of a
 * visit, canceled/expired/closed ops completed unrun and never handed
 * out, the wake callback of the idle protocol, runtime destroy running
 * what is queued, EDEADLK from inside a host-run op, and exactly-once with
 * host worker threads racing cancels and closes.
 *
 * The "host" here is plain pthreads with a semaphore per lane as the
 * sleep the wake callback posts. No timing thresholds.
 *
 * Promises: 1, 2, 5
 */
#define _GNU_SOURCE /* nanosleep */
#include <criterion/criterion.h>
#include <pthread.h>
#include <semaphore.h>
#include <string.h>

#include "core_util.h"
#include <accel/host.h>
#include "unit_watchdog.h"

UNIT_WATCHDOG_SUITE(host);

#define HOUR_NS (INT64_C(3600) * 1000000000)

typedef struct host {
    sem_t lane[2];
    _Atomic int wakes[2];
} host;

static void host_wake(void *arg, unsigned lane)
{
    host *h = arg;
    atomic_fetch_add(&h->wakes[lane], 1);
    sem_post(&h->lane[lane]);
}

static accel_runtime *host_runtime(host *h, unsigned workers, unsigned short_)
{
    sem_init(&h->lane[0], 0, 0);
    sem_init(&h->lane[1], 0, 0);
    accel_runtime_config c = {.workers = workers,
                              .short_lane_workers = short_,
                              .struct_size = sizeof(c),
                              .flags = ACCEL_RUNTIME_HOST_WORKERS,
                              .host_wake = host_wake,
                              .host_wake_arg = h};
    accel_runtime *rt = NULL;
    cr_assert_eq(accel_runtime_create(&c, &rt), ACCEL_OK);
    return rt;
}

/* One visit on worker w, running the ops with fn (ctx NULL: tu_rec_fn and
 * the others here ignore it). Returns begin's status. */
static int drive_once(accel_runtime *rt, unsigned w, unsigned *ran)
{
    accel_op ops[ACCEL_HOST_VISIT_MAX];
    int st[ACCEL_HOST_VISIT_MAX];
    unsigned n = 0;
    int rc = accel_host_visit_begin(rt, w, ops, ACCEL_HOST_VISIT_MAX, &n);
    if (rc != ACCEL_OK)
        return rc;
    for (unsigned i = 0; i < n; i++)
        st[i] = ops[i].fn(NULL, ops[i].arg);
    if (ran)
        *ran += n;
    cr_assert_eq(accel_host_visit_end(rt, w, st, n), ACCEL_OK);
    return rc;
}

static void drive_until_idle(accel_runtime *rt, unsigned w)
{
    while (drive_once(rt, w, NULL) == ACCEL_OK)
        ;
}

Test(host, bad_input, .timeout = 30)
{
    host h = {0};
    accel_runtime *rt = NULL;
    accel_runtime_config c = {.workers = 1, .struct_size = sizeof(c),
                              .flags = ACCEL_RUNTIME_HOST_WORKERS};
    cr_assert_eq(accel_runtime_create(&c, &rt), ACCEL_EINVAL, "no host_wake");
    c.flags = 0;
    c.host_wake = host_wake;
    cr_assert_eq(accel_runtime_create(&c, &rt), ACCEL_EINVAL,
                 "host_wake without host workers");
    c.flags = 0x2u;
    cr_assert_eq(accel_runtime_create(&c, &rt), ACCEL_EINVAL, "unknown flag");
    unsigned cpus[1] = {0};
    c.flags = ACCEL_RUNTIME_HOST_WORKERS;
    c.worker_cpus = cpus;
    c.worker_cpus_count = 1;
    cr_assert_eq(accel_runtime_create(&c, &rt), ACCEL_EINVAL,
                 "no threads to pin");
    cr_assert_null(rt);

    /* A runtime with threads takes no host calls. */
    accel_runtime *thr = tu_runtime(1);
    accel_op ops[4];
    unsigned n = 99;
    cr_assert_eq(accel_host_visit_begin(thr, 0, ops, 4, &n), ACCEL_EINVAL);
    cr_assert_eq(accel_host_visit_end(thr, 0, NULL, 0), ACCEL_EINVAL);
    cr_assert_eq(accel_host_idle_begin(thr, 0), ACCEL_EINVAL);
    cr_assert_eq(accel_host_idle_end(thr, 0, false), ACCEL_EINVAL);
    unit_step("destroy of the threaded runtime");
    cr_assert_eq(accel_runtime_destroy(thr), ACCEL_OK);

    rt = host_runtime(&h, 2, 0);
    cr_assert_eq(accel_runtime_workers(rt), 2);
    cr_assert_eq(accel_host_visit_begin(NULL, 0, ops, 4, &n), ACCEL_EINVAL);
    cr_assert_eq(accel_host_visit_begin(rt, 2, ops, 4, &n), ACCEL_EINVAL);
    cr_assert_eq(accel_host_visit_begin(rt, 0, NULL, 4, &n), ACCEL_EINVAL);
    cr_assert_eq(accel_host_visit_begin(rt, 0, ops, 0, &n), ACCEL_EINVAL);
    cr_assert_eq(accel_host_visit_begin(rt, 0, ops, 4, NULL), ACCEL_EINVAL);
    cr_assert_eq(accel_host_visit_end(rt, 0, NULL, 0), ACCEL_EINVAL,
                 "no visit open");
    cr_assert_eq(accel_host_idle_end(rt, 0, false), ACCEL_EINVAL, "not idle");
    cr_assert_eq(accel_host_visit_begin(rt, 0, ops, 4, &n), ACCEL_EAGAIN);

    accel_session *s = tu_open(rt, "s", 16, 0);
    tu_rec r[2] = {0};
    for (int i = 0; i < 2; i++) {
        accel_op op = tu_rec_op(&r[i]);
        cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    }
    cr_assert_eq(accel_host_visit_begin(rt, 0, ops, 4, &n), ACCEL_OK);
    cr_assert_eq(n, 1, "a session of unknown op cost: one op per visit");
    unsigned n2;
    cr_assert_eq(accel_host_visit_begin(rt, 0, ops, 4, &n2), ACCEL_EINVAL,
                 "a visit is open on the worker");
    cr_assert_eq(accel_host_idle_begin(rt, 0), ACCEL_EINVAL,
                 "idle with a visit open");
    int st[4] = {0};
    cr_assert_eq(accel_host_visit_end(rt, 0, st, n + 1), ACCEL_EINVAL);
    cr_assert_eq(accel_host_visit_end(rt, 0, NULL, n), ACCEL_EINVAL);
    cr_assert_eq(accel_host_visit_end(rt, 1, st, n), ACCEL_EINVAL,
                 "the visit is worker 0's");
    cr_assert_eq(r[0].done_calls, 0, "a refused end changed nothing");
    cr_assert_eq(accel_host_visit_end(rt, 0, st, n), ACCEL_OK);
    cr_assert_eq(r[0].done_calls, 1);
    cr_assert_eq(accel_host_idle_begin(rt, 1), ACCEL_OK);
    cr_assert_eq(accel_host_idle_begin(rt, 1), ACCEL_EINVAL, "already idle");
    cr_assert_eq(accel_host_idle_end(rt, 1, false), ACCEL_OK);
    unit_step("drive worker 0 until idle");
    drive_until_idle(rt, 0);
    cr_assert_eq(r[1].done_calls, 1);
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

static int fail7(accel_ctx *ctx, void *arg)
{
    tu_rec_fn(ctx, arg);
    return 7;
}

/* Ops come out in FIFO order, each done once with the host's status; the
 * session's counters see them. One thread does everything. */
Test(host, fifo_and_statuses, .timeout = 30)
{
    host h = {0};
    accel_runtime *rt = host_runtime(&h, 1, 0);
    accel_session *s = tu_open(rt, "s", 256, 0);
    enum { N = 200 };
    static tu_rec r[N];
    _Atomic int seq = 0;
    memset(r, 0, sizeof(r));
    for (int i = 0; i < N; i++) {
        r[i].seq = &seq;
        accel_op op = tu_rec_op(&r[i]);
        if (i % 10 == 3)
            op.fn = fail7;
        cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    }
    unsigned ran = 0;
    unit_step("drive worker 0 until idle: 200 ops");
    while (drive_once(rt, 0, &ran) == ACCEL_OK)
        ;
    cr_assert_eq(ran, N);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(r[i].fn_calls, 1);
        cr_assert_eq(r[i].done_calls, 1);
        cr_assert_eq(r[i].done_seq, i, "done order is FIFO");
        cr_assert_eq(r[i].status, i % 10 == 3 ? 7 : 0);
    }
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats_ex(s, &st, sizeof(st)), ACCEL_OK);
    cr_assert_eq(st.dispatched, N);
    cr_assert_eq(st.completed, N - N / 10);
    cr_assert_eq(st.failed, N / 10);
    cr_assert_eq(accel_session_sync(s, ACCEL_NO_WAIT), ACCEL_OK);
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* Canceled and expired ops are never handed out; their dones run in
 * FIFO order among the others, at the visit's end. */
Test(host, canceled_and_expired_not_handed_out, .timeout = 30)
{
    host h = {0};
    accel_runtime *rt = host_runtime(&h, 1, 0);
    accel_session *s = tu_open(rt, "s", 16, 0);
    _Atomic int seq = 0;
    tu_rec r[5] = {0};
    accel_ticket t;
    for (int i = 0; i < 5; i++) {
        r[i].seq = &seq;
        accel_op op = tu_rec_op(&r[i]);
        int64_t dl = i == 2 ? 1 : i == 3 ? accel_now_ns() + HOUR_NS : 0;
        cr_assert_eq(accel_submit_ex(s, &op, dl, ACCEL_NO_WAIT,
                                     i == 1 ? &t : NULL),
                     ACCEL_OK);
    }
    cr_assert_eq(accel_cancel(&t), ACCEL_OK);
    /* Teach the scheduler the ops are short, so one visit takes several:
     * the first visit of a new session takes one. */
    unsigned ran = 0;
    cr_assert_eq(drive_once(rt, 0, &ran), ACCEL_OK);
    cr_assert_eq(ran, 1);
    accel_op ops[ACCEL_HOST_VISIT_MAX];
    unsigned n = 0;
    cr_assert_eq(accel_host_visit_begin(rt, 0, ops, ACCEL_HOST_VISIT_MAX, &n),
                 ACCEL_OK);
    cr_assert_eq(n, 2, "ops 3 and 4; 1 canceled, 2 expired");
    cr_assert_eq(ops[0].arg, &r[3]);
    cr_assert_eq(ops[1].arg, &r[4]);
    cr_assert_eq(r[1].done_calls, 0, "unrun ops complete at the end");
    cr_assert_eq(accel_cancel(&t), ACCEL_EALREADY);
    int st[2] = {0, 0};
    cr_assert_eq(accel_host_visit_end(rt, 0, st, n), ACCEL_OK);
    int want[5] = {0, ACCEL_ECANCELED, ACCEL_EEXPIRED, 0, 0};
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(r[i].done_calls, 1);
        cr_assert_eq(r[i].done_seq, i);
        cr_assert_eq(r[i].status, want[i]);
        cr_assert_eq(r[i].fn_calls, i == 0, "3 and 4 were the host's to run");
    }
    accel_session_stats ss;
    accel_session_get_stats_ex(s, &ss, sizeof(ss));
    cr_assert_eq(ss.cancelled, 1);
    cr_assert_eq(ss.expired, 1);
    cr_assert_eq(ss.dispatched, 3);
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* The idle protocol: a worker that announced idle is woken through the
 * callback by the submit that makes work runnable; one that did not is
 * not. */
Test(host, idle_wake_callback, .timeout = 30)
{
    host h = {0};
    accel_runtime *rt = host_runtime(&h, 1, 0);
    accel_session *s = tu_open(rt, "s", 16, 0);
    tu_rec r = {0};
    accel_op op = tu_rec_op(&r);
    cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    cr_assert_eq(h.wakes[0], 0, "nobody idle: no wake");
    unit_step("drive worker 0 until idle");
    drive_until_idle(rt, 0);

    cr_assert_eq(accel_host_idle_begin(rt, 0), ACCEL_OK);
    accel_op ops[4];
    unsigned n;
    cr_assert_eq(accel_host_visit_begin(rt, 0, ops, 4, &n), ACCEL_EAGAIN);
    cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    cr_assert_eq(h.wakes[0], 1, "the idle worker is woken");
    cr_assert_eq(h.wakes[1], 0);
    cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    cr_assert_eq(h.wakes[0], 1, "already queued and claimed: no second wake");
    unit_step("the kept wake of worker 0 (sem_wait)");
    sem_wait(&h.lane[0]); /* the wake is kept */
    cr_assert_eq(accel_host_idle_end(rt, 0, false), ACCEL_OK);
    unit_step("drive worker 0 until idle: 2 ops");
    drive_until_idle(rt, 0);
    cr_assert_eq(r.fn_calls, 3);
    cr_assert_eq(r.done_calls, 3);
    accel_runtime_stats rs;
    cr_assert_eq(accel_runtime_get_stats(rt, &rs, sizeof(rs)), ACCEL_OK);
    cr_assert_eq(rs.parked, 0);
    cr_assert_eq(rs.parks, 1);
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* A visit that leaves ops queued re-queues its session for the ending
 * worker's next begin: accel_host_visit_end wakes no one, and
 * accel_host_visit_end_stop (the worker stops) wakes the parked worker. */
Test(host, end_stop_wakes_for_requeue, .timeout = 30)
{
    host h = {0};
    accel_runtime *rt = host_runtime(&h, 2, 0);
    accel_session *s = tu_open(rt, "s", 16, 0);
    tu_rec r = {0};
    accel_op op = tu_rec_op(&r);
    cr_assert_eq(accel_host_idle_begin(rt, 1), ACCEL_OK); /* worker 1 parks */
    accel_op ops[1];
    int st[1];
    unsigned n;
    for (int stop = 0; stop < 2; stop++) {
        for (int i = 0; i < 2; i++)
            cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
        /* The first submit woke parked worker 1; it parks again unclaimed. */
        cr_assert_eq(h.wakes[0], 1 + stop);
        unit_step("the wake for parked worker 1 (sem_wait)");
        sem_wait(&h.lane[0]);
        cr_assert_eq(accel_host_idle_end(rt, 1, false), ACCEL_OK);
        cr_assert_eq(accel_host_idle_begin(rt, 1), ACCEL_OK);
        int w0 = h.wakes[0];
        /* Worker 0 takes one op of two (cap 1): the end re-queues s. */
        cr_assert_eq(accel_host_visit_begin(rt, 0, ops, 1, &n), ACCEL_OK);
        cr_assert_eq(n, 1);
        st[0] = ops[0].fn(NULL, ops[0].arg);
        if (stop) {
            cr_assert_eq(accel_host_visit_end_stop(rt, 0, st, 1), ACCEL_OK);
            cr_assert_eq(h.wakes[0], w0 + 1, "a stopping worker's re-queue wakes");
        } else {
            cr_assert_eq(accel_host_visit_end(rt, 0, st, 1), ACCEL_OK);
            cr_assert_eq(h.wakes[0], w0, "the ending worker begins again: no wake");
        }
        unit_step("drive worker 0 until idle");
        drive_until_idle(rt, 0);
    }
    unit_step("the stop's wake (sem_wait)");
    sem_wait(&h.lane[0]); /* the stop's wake */
    cr_assert_eq(accel_host_idle_end(rt, 1, false), ACCEL_OK);
    cr_assert_eq(r.fn_calls, 4);
    cr_assert_eq(r.done_calls, 4);
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* accel_host_submit_begin: a submit that makes an idle session runnable
 * hands it to the submitting worker directly when the worker's pick would
 * return it (nothing queued before it): the visit is open with the op,
 * and no parked worker is woken for it (accel_submit would wake one); the
 * ops run once. Bad input changes nothing. */
Test(host, submit_begin_direct, .timeout = 30)
{
    host h = {0};
    accel_runtime *rt = host_runtime(&h, 2, 0);
    accel_session *s = tu_open(rt, "s", 16, 0);
    tu_rec r = {0};
    accel_op op = tu_rec_op(&r);
    accel_op ops[4];
    int st[4];
    unsigned n = 7;
    int begun = 7;
    accel_op nofn = {0};
    cr_assert_eq(accel_host_submit_begin(rt, 2, s, &op, ACCEL_NO_WAIT, ops, 4,
                                         &n, &begun), ACCEL_EINVAL, "worker");
    cr_assert_eq(accel_host_submit_begin(rt, 0, s, &nofn, ACCEL_NO_WAIT, ops,
                                         4, &n, &begun), ACCEL_EINVAL, "fn");
    cr_assert_eq(accel_host_submit_begin(rt, 0, s, &op, ACCEL_NO_WAIT, ops, 4,
                                         &n, NULL), ACCEL_EINVAL, "begun");
    cr_assert_eq(n, 7);
    cr_assert_eq(begun, 7);
    cr_assert_eq(accel_host_idle_begin(rt, 1), ACCEL_OK); /* worker 1 parks */
    cr_assert_eq(accel_host_submit_begin(rt, 1, s, &op, ACCEL_NO_WAIT, ops, 4,
                                         &n, &begun), ACCEL_EINVAL, "idle");
    accel_session_stats ss;
    cr_assert_eq(accel_session_get_stats(s, &ss), ACCEL_OK);
    cr_assert_eq(ss.submitted, 0, "bad input submitted nothing");

    cr_assert_eq(accel_host_submit_begin(rt, 0, s, &op, ACCEL_NO_WAIT, ops, 4,
                                         &n, &begun), ACCEL_OK);
    cr_assert_eq(begun, ACCEL_OK);
    cr_assert_eq(n, 1);
    cr_assert_eq(ops[0].arg, &r);
    cr_assert_eq(h.wakes[0], 0, "taken directly: the parked worker stays parked");
    cr_assert_eq(accel_host_submit_begin(rt, 0, s, &op, ACCEL_NO_WAIT, ops, 4,
                                         &n, &begun), ACCEL_EINVAL, "open");
    st[0] = ops[0].fn(NULL, ops[0].arg);
    cr_assert_eq(accel_host_visit_end_stop(rt, 0, st, 1), ACCEL_OK);
    cr_assert_eq(h.wakes[0], 0, "nothing re-queued: no wake");
    cr_assert_eq(r.fn_calls, 1);
    cr_assert_eq(r.done_calls, 1);

    /* The contrast: a plain submit wakes the parked worker. */
    cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    cr_assert_eq(h.wakes[0], 1);
    unit_step("the wake of the parked worker (sem_wait)");
    sem_wait(&h.lane[0]);
    cr_assert_eq(accel_host_idle_end(rt, 1, false), ACCEL_OK);
    unit_step("drive worker 1 until idle");
    drive_until_idle(rt, 1);
    cr_assert_eq(r.fn_calls, 2);
    cr_assert_eq(r.done_calls, 2);
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

static int sleep5ms(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    tu_rec *r = arg;
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
    atomic_fetch_add(&r->fn_calls, 1);
    return 0;
}

/* The shortcut keeps the scheduler's order: a session whose deadline
 * lies after a queued one's (priority 1, a measured 5 ms visit) is
 * queued, and the worker begins the queued session's visit, as its pick
 * would; the late session runs next. */
Test(host, submit_begin_keeps_pick_order, .timeout = 30)
{
    host h = {0};
    accel_runtime *rt = host_runtime(&h, 1, 0);
    accel_session_config cs = {.id = "slow", .queue_depth = 16,
                               .priority = 1, .backend = ACCEL_BACKEND_CPU};
    accel_session *slow = NULL, *fast = tu_open(rt, "fast", 16, 0);
    cr_assert_eq(accel_session_open(rt, &cs, &slow), ACCEL_OK);
    tu_rec rs = {0}, rf = {0};
    accel_op sop = {.fn = sleep5ms, .arg = &rs}, fop = tu_rec_op(&rf);
    cr_assert_eq(accel_submit(slow, &sop, ACCEL_NO_WAIT), ACCEL_OK);
    unit_step("drive worker 0 until idle: slow's op");
    drive_until_idle(rt, 0); /* slow's visit cost: ~5 ms at weight 1 */
    cr_assert_eq(rs.fn_calls, 1);

    cr_assert_eq(accel_submit(fast, &fop, ACCEL_NO_WAIT), ACCEL_OK);
    accel_op ops[4];
    int st[4];
    unsigned n;
    int begun;
    cr_assert_eq(accel_host_submit_begin(rt, 0, slow, &sop, ACCEL_NO_WAIT, ops,
                                         4, &n, &begun), ACCEL_OK);
    cr_assert_eq(begun, ACCEL_OK);
    cr_assert_eq(n, 1);
    cr_assert_eq(ops[0].arg, &rf, "the pick's choice, not the submitter's");
    st[0] = ops[0].fn(NULL, ops[0].arg);
    cr_assert_eq(accel_host_visit_end(rt, 0, st, 1), ACCEL_OK);
    cr_assert_eq(accel_host_visit_begin(rt, 0, ops, 4, &n), ACCEL_OK);
    cr_assert_eq(n, 1);
    cr_assert_eq(ops[0].arg, &rs);
    st[0] = ops[0].fn(NULL, ops[0].arg);
    cr_assert_eq(accel_host_visit_end(rt, 0, st, 1), ACCEL_OK);
    cr_assert_eq(accel_host_visit_begin(rt, 0, ops, 4, &n), ACCEL_EAGAIN);
    cr_assert_eq(rs.fn_calls, 2);
    cr_assert_eq(rf.fn_calls, 1);
    unit_step("release of slow and fast and runtime destroy");
    accel_session_release(slow);
    accel_session_release(fast);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* accel_host_submit_own never hands out another session's op: where
 * accel_host_submit_begin begins the pick's choice (above), it queues the
 * op and begins nothing; the pick then runs both in order. When the
 * session goes to the worker directly, the visit holds its op. */
Test(host, submit_own_never_foreign, .timeout = 30)
{
    host h = {0};
    accel_runtime *rt = host_runtime(&h, 1, 0);
    accel_session_config cs = {.id = "slow", .queue_depth = 16,
                               .priority = 1, .backend = ACCEL_BACKEND_CPU};
    accel_session *slow = NULL, *fast = tu_open(rt, "fast", 16, 0);
    cr_assert_eq(accel_session_open(rt, &cs, &slow), ACCEL_OK);
    tu_rec rs = {0}, rf = {0};
    accel_op sop = {.fn = sleep5ms, .arg = &rs}, fop = tu_rec_op(&rf);
    cr_assert_eq(accel_submit(slow, &sop, ACCEL_NO_WAIT), ACCEL_OK);
    unit_step("drive worker 0 until idle: slow's op");
    drive_until_idle(rt, 0);
    accel_op ops[4], nofn = {0};
    int st[4];
    unsigned n = 7;
    int begun = 7;
    cr_assert_eq(accel_host_submit_own(rt, 0, slow, &nofn, ACCEL_NO_WAIT, ops,
                                       4, &n, &begun), ACCEL_EINVAL, "fn");
    cr_assert_eq(n, 7);
    cr_assert_eq(begun, 7);

    cr_assert_eq(accel_submit(fast, &fop, ACCEL_NO_WAIT), ACCEL_OK);
    cr_assert_eq(accel_host_submit_own(rt, 0, slow, &sop, ACCEL_NO_WAIT, ops,
                                       4, &n, &begun), ACCEL_OK);
    cr_assert_eq(begun, ACCEL_EAGAIN, "fast's op is not the submitter's");
    cr_assert_eq(n, 0);
    unit_step("drive worker 0 until idle: fast's op, then slow's");
    drive_until_idle(rt, 0);
    cr_assert_eq(rf.fn_calls, 1);
    cr_assert_eq(rs.fn_calls, 2);

    /* Nothing queued before it: slow goes to the worker directly. */
    cr_assert_eq(accel_host_submit_own(rt, 0, fast, &fop, ACCEL_NO_WAIT, ops,
                                       1, &n, &begun), ACCEL_OK);
    cr_assert_eq(begun, ACCEL_OK);
    cr_assert_eq(n, 1);
    cr_assert_eq(ops[0].arg, &rf);
    st[0] = ops[0].fn(NULL, ops[0].arg);
    cr_assert_eq(accel_host_visit_end_stop(rt, 0, st, 1), ACCEL_OK);
    cr_assert_eq(rf.fn_calls, 2);
    unit_step("release of slow and fast and runtime destroy");
    accel_session_release(slow);
    accel_session_release(fast);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* accel_host_submit_own_ex (host.h): the hand-off with an op of
 * accel_submit_ex. Idle session: the visit begins on the worker with the op
 * (a live deadline: handed out, runs; a past one: kept back, *n 0, and the
 * end completes it ACCEL_EEXPIRED unrun, as take_ops does with any expired
 * EX op). Busy session (an op queued before it): no visit, the op is
 * queued, and its ticket cancels it there. Bad input changes nothing but
 * the ticket, zeroed. */
Test(host, submit_own_ex, .timeout = 30)
{
    host h = {0};
    accel_runtime *rt = host_runtime(&h, 1, 0);
    accel_session *s = tu_open(rt, "s", 16, 0);
    tu_rec r = {0};
    accel_op op = tu_rec_op(&r), ops[4];
    int st[4];
    unsigned n = 7;
    int begun = 7;
    accel_ticket t = {.position = 99};
    cr_assert_eq(accel_host_submit_own_ex(rt, 0, s, &op, -1, ACCEL_NO_WAIT,
                                           &t, ops, 4, &n, &begun),
                 ACCEL_EINVAL, "negative deadline");
    cr_assert_eq(n, 7);
    cr_assert_eq(begun, 7);
    cr_assert_eq(t.session, NULL, "a failed submit leaves no ticket");
    cr_assert_eq(t.position, 0);

    /* Idle, deadline an hour away: the op goes to the worker and runs. */
    int64_t later = accel_now_ns() + HOUR_NS;
    cr_assert_eq(accel_host_submit_own_ex(rt, 0, s, &op, later, ACCEL_NO_WAIT,
                                           &t, ops, 4, &n, &begun), ACCEL_OK);
    cr_assert_eq(begun, ACCEL_OK);
    cr_assert_eq(n, 1);
    cr_assert_eq(ops[0].arg, &r);
    cr_assert_eq(t.session, s);
    st[0] = ops[0].fn(NULL, ops[0].arg);
    cr_assert_eq(accel_host_visit_end_stop(rt, 0, st, 1), ACCEL_OK);
    cr_assert_eq(accel_cancel(&t), ACCEL_EALREADY, "taken: too late");
    cr_assert_eq(r.fn_calls, 1);
    cr_assert_eq(r.done_calls, 1);
    cr_assert_eq(r.status, 0);

    /* Idle, deadline already past: the visit opens with the op kept back. */
    cr_assert_eq(accel_host_submit_own_ex(rt, 0, s, &op, 1, ACCEL_NO_WAIT,
                                           &t, ops, 4, &n, &begun), ACCEL_OK);
    cr_assert_eq(begun, ACCEL_OK);
    cr_assert_eq(n, 0, "an expired op is not handed out");
    cr_assert_eq(r.done_calls, 1, "completed at the end, not at the begin");
    cr_assert_eq(accel_host_visit_end_stop(rt, 0, NULL, 0), ACCEL_OK);
    cr_assert_eq(r.fn_calls, 1, "never ran");
    cr_assert_eq(r.done_calls, 2);
    cr_assert_eq(r.status, ACCEL_EEXPIRED);
    accel_session_stats ss;
    cr_assert_eq(accel_session_get_stats_ex(s, &ss, sizeof(ss)), ACCEL_OK);
    cr_assert_eq(ss.expired, 1);

    /* Busy: an op of s is queued first, so this submit does not make s
     * runnable; no visit, and the queued op's ticket cancels it. */
    tu_rec rq = {0}, rc = {0};
    accel_op qop = tu_rec_op(&rq), cop = tu_rec_op(&rc);
    cr_assert_eq(accel_submit(s, &qop, ACCEL_NO_WAIT), ACCEL_OK);
    cr_assert_eq(accel_host_submit_own_ex(rt, 0, s, &cop, later,
                                           ACCEL_NO_WAIT, &t, ops, 4, &n,
                                           &begun), ACCEL_OK);
    cr_assert_eq(begun, ACCEL_EAGAIN);
    cr_assert_eq(n, 0);
    cr_assert_eq(t.session, s);
    cr_assert_eq(accel_cancel(&t), ACCEL_OK);
    cr_assert_eq(accel_cancel(&t), ACCEL_EALREADY);
    unit_step("drive worker 0 until idle: a queued and a canceled op");
    drive_until_idle(rt, 0);
    cr_assert_eq(rq.fn_calls, 1);
    cr_assert_eq(rq.done_calls, 1);
    cr_assert_eq(rc.fn_calls, 0, "canceled: never ran");
    cr_assert_eq(rc.done_calls, 1);
    cr_assert_eq(rc.status, ACCEL_ECANCELED);

    /* No deadline, no ticket: the plain hand-off of accel_host_submit_own. */
    cr_assert_eq(accel_host_submit_own_ex(rt, 0, s, &op, 0, ACCEL_NO_WAIT,
                                           NULL, ops, 4, &n, &begun),
                 ACCEL_OK);
    cr_assert_eq(begun, ACCEL_OK);
    cr_assert_eq(n, 1);
    st[0] = ops[0].fn(NULL, ops[0].arg);
    cr_assert_eq(accel_host_visit_end_stop(rt, 0, st, 1), ACCEL_OK);
    cr_assert_eq(r.fn_calls, 2);
    cr_assert_eq(r.done_calls, 3);
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* The host calls beyond begin and end: the visit's end with its time
 * (accel_host_visit_end_ex), a visit moved between threads
 * (accel_host_visit_attach, _detach), the calling thread's op session
 * (accel_host_set_current_session), the default worker count and the
 * batch with a deadline (accel_submit_batch_ex). Bad input changes
 * nothing. */
typedef struct attach_arg {
    accel_runtime *rt;
    accel_session *s;
    int attach, seen, self_submit;
} attach_arg;

static void *attach_main(void *arg)
{
    attach_arg *a = arg;
    a->attach = accel_host_visit_attach(a->rt, 0);
    a->seen = accel_current_session() == a->s;
    /* Inside the visit's op now: a wait on its own session refuses. */
    a->self_submit = accel_session_sync(a->s, ACCEL_FOREVER);
    return NULL;
}

Test(host, visit_end_ex_attach_and_more, .timeout = 30)
{
    host h = {0};
    accel_runtime *rt = host_runtime(&h, 1, 0);
    accel_session *s = tu_open(rt, "s", 16, 0);
    tu_rec r = {0};
    accel_op op = tu_rec_op(&r), ops[4];
    int st[4] = {0};
    unsigned n = 0;
    cr_assert_geq(accel_host_default_workers(), 1u);

    /* No visit open: attach, detach and end refuse. */
    cr_assert_eq(accel_host_visit_attach(rt, 0), ACCEL_EINVAL);
    cr_assert_eq(accel_host_visit_detach(rt, 0), ACCEL_EINVAL);
    cr_assert_eq(accel_host_visit_attach(NULL, 0), ACCEL_EINVAL);
    cr_assert_eq(accel_host_visit_attach(rt, 7), ACCEL_EINVAL);
    int64_t end = -1;
    cr_assert_eq(accel_host_visit_end_ex(rt, 0, st, 0, 0, &end), ACCEL_EINVAL);
    cr_assert_eq(end, -1, "untouched on an error");

    /* A visit begun here, detached, attached on another thread. */
    cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    cr_assert_eq(accel_host_visit_begin(rt, 0, ops, 4, &n), ACCEL_OK);
    cr_assert_eq(n, 1);
    cr_assert_eq(accel_current_session(), s);
    cr_assert_eq(accel_host_visit_detach(rt, 0), ACCEL_OK);
    cr_assert_null(accel_current_session(), "detached: in no op");
    cr_assert_eq(accel_host_visit_detach(rt, 0), ACCEL_EINVAL,
                 "this thread does not run it");
    attach_arg a = {.rt = rt, .s = s};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, attach_main, &a), 0);
    pthread_join(t, NULL);
    cr_assert_eq(a.attach, ACCEL_OK);
    cr_assert(a.seen, "attached: the visit's session is current there");
    cr_assert_eq(a.self_submit, ACCEL_EDEADLK);
    /* The thread went away inside the visit: this one takes it back. */
    cr_assert_eq(accel_host_visit_attach(rt, 0), ACCEL_OK);
    st[0] = ops[0].fn(NULL, ops[0].arg);
    cr_assert_eq(accel_host_visit_end_ex(rt, 0, st, 1, 0x2u, &end),
                 ACCEL_EINVAL, "unknown flag");
    int64_t t0 = accel_now_ns();
    cr_assert_eq(accel_host_visit_end_ex(rt, 0, st, 1, ACCEL_HOST_END_STOP,
                                         &end), ACCEL_OK);
    cr_assert_geq(end, t0, "the end's time, on accel_now_ns's clock");
    cr_assert_leq(end, accel_now_ns());
    cr_assert_null(accel_current_session(), "the end puts back no op");
    cr_assert_eq(r.fn_calls, 1);
    cr_assert_eq(r.done_calls, 1);

    /* accel_host_set_current_session: set and put back. */
    cr_assert_null(accel_host_set_current_session(s));
    cr_assert_eq(accel_current_session(), s);
    cr_assert_eq(accel_session_sync(s, ACCEL_NO_WAIT), ACCEL_EDEADLK);
    cr_assert_eq(accel_host_set_current_session(NULL), s);
    cr_assert_null(accel_current_session());

    /* accel_submit_batch_ex: a past deadline expires the ops unrun. */
    accel_op two[2] = {op, op};
    size_t got = 9;
    cr_assert_eq(accel_submit_batch_ex(s, two, 2, -1, ACCEL_NO_WAIT, &got),
                 ACCEL_EINVAL);
    cr_assert_eq(got, 0);
    cr_assert_eq(accel_submit_batch_ex(s, two, 2, 1, ACCEL_NO_WAIT, &got),
                 ACCEL_OK);
    cr_assert_eq(got, 2);
    unit_step("drive worker 0 until idle: two expired ops");
    drive_until_idle(rt, 0);
    cr_assert_eq(r.fn_calls, 1, "expired: never ran");
    cr_assert_eq(r.done_calls, 3);
    cr_assert_eq(r.status, ACCEL_EEXPIRED);
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* An attach from the thread that runs the visit already refuses and
 * changes nothing: the visit's end still puts back the thread's session
 * from before the visit (none), so a sync after it waits as any other. */
Test(host, attach_on_the_visits_own_thread, .timeout = 30)
{
    host h = {0};
    accel_runtime *rt = host_runtime(&h, 1, 0);
    accel_session *s = tu_open(rt, "s", 16, 0);
    tu_rec r = {0};
    accel_op op = tu_rec_op(&r), ops[4];
    int st[4] = {0};
    unsigned n = 0;
    cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    cr_assert_eq(accel_host_visit_begin(rt, 0, ops, 4, &n), ACCEL_OK);
    cr_assert_eq(n, 1);
    cr_expect_eq(accel_host_visit_attach(rt, 0), ACCEL_EINVAL,
                 "this thread runs the visit already");
    cr_assert_eq(accel_current_session(), s);
    st[0] = ops[0].fn(NULL, ops[0].arg);
    cr_assert_eq(accel_host_visit_end(rt, 0, st, 1), ACCEL_OK);
    cr_expect_null(accel_current_session(),
                   "the end puts back the thread's session from before");
    cr_assert_eq(accel_session_sync(s, ACCEL_NO_WAIT), ACCEL_OK,
                 "outside any op: not the op's own session");
    cr_assert_eq(r.fn_calls, 1);
    cr_assert_eq(r.done_calls, 1);
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* Destroy with ops queued and no host worker driving: destroy's thread
 * runs them (through fn), each done once. (The handle is not released
 * first: a release closes with DRAIN and waits for a worker.) */
Test(host, destroy_runs_queued, .timeout = 30)
{
    host h = {0};
    accel_runtime *rt = host_runtime(&h, 2, 1);
    enum { N = 50 };
    tu_rec r[N] = {0};
    accel_session *s = tu_open(rt, "s", 64, 0);
    for (int i = 0; i < N; i++) {
        accel_op op = tu_rec_op(&r[i]);
        cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    }
    unit_step("runtime destroy running 50 queued ops");
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(r[i].fn_calls, 1);
        cr_assert_eq(r[i].done_calls, 1);
    }
}

typedef struct self_sync {
    accel_session *s;
    _Atomic int rc, current;
} self_sync;

static int sync_self(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    self_sync *x = arg;
    atomic_store(&x->current, accel_current_session() == x->s);
    atomic_store(&x->rc, accel_session_sync(x->s, ACCEL_FOREVER));
    return 0;
}

/* A host-run op is "inside" its session on the host's thread: a sync of
 * its own session is EDEADLK, not a hang. */
Test(host, sync_inside_host_op_edeadlk, .timeout = 30)
{
    host h = {0};
    accel_runtime *rt = host_runtime(&h, 1, 0);
    self_sync x = {.s = tu_open(rt, "s", 16, 0)};
    accel_op op = {.fn = sync_self, .arg = &x};
    cr_assert_eq(accel_submit(x.s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    cr_assert_null(accel_current_session());
    unit_step("drive worker 0 until idle: the op that syncs its session");
    drive_until_idle(rt, 0);
    cr_assert_eq(x.current, 1);
    cr_assert_eq(x.rc, ACCEL_EDEADLK);
    cr_assert_null(accel_current_session(), "cleared at the visit's end");
    unit_step("release of s and runtime destroy");
    accel_session_release(x.s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* A visit that nests inside an op of another session on the same thread
 * puts the thread's "current op" back when it ends: the outer op is still
 * known as its session's (accel_current_session, EDEADLK for a sync or a
 * destroy of its own from inside). Two ways to nest within the contract
 * follow. */
typedef struct nest {
    accel_session *s1;
    accel_runtime *rt1, *rt2;
    _Atomic int destroy2, current, sync, destroy1;
} nest;

static int destroy_other(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    nest *x = arg;
    /* rt2 is host-driven with ops queued: its destroy runs them here */
    atomic_store(&x->destroy2, accel_runtime_destroy(x->rt2));
    atomic_store(&x->current, accel_current_session() == x->s1);
    /* finite waits: with the marker lost they time out instead of
     * hanging the suite */
    atomic_store(&x->sync, accel_session_sync(x->s1, 2000000000));
    /* with the marker lost this destroy would wait for this very op */
    atomic_store(&x->destroy1, atomic_load(&x->current)
                                   ? accel_runtime_destroy(x->rt1)
                                   : 12345);
    return 0;
}

Test(host, destroy_inside_an_op_keeps_the_op_current, .timeout = 30)
{
    host h = {0};
    nest x = {.rt2 = host_runtime(&h, 1, 0)};
    atomic_store(&x.destroy2, 99);
    accel_session *s2 = tu_open(x.rt2, "queued", 16, 0);
    tu_rec r[4] = {0};
    for (int i = 0; i < 4; i++) {
        accel_op op = tu_rec_op(&r[i]);
        cr_assert_eq(accel_submit(s2, &op, ACCEL_NO_WAIT), ACCEL_OK);
    }
    /* s2 stays open (a release would drain it): destroy takes it */
    x.rt1 = tu_runtime(1);
    x.s1 = tu_open(x.rt1, "outer", 16, 0);
    unit_step("submit_wait of the op that destroys rt2");
    cr_assert_eq(accel_submit_wait(x.s1, destroy_other, &x, ACCEL_FOREVER), 0);
    cr_assert_eq(x.destroy2, ACCEL_OK);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(r[i].done_calls, 1, "rt2's op %d ran in its destroy", i);
    cr_assert_eq(x.current, 1, "the outer op is still s1's");
    cr_assert_eq(x.sync, ACCEL_EDEADLK, "sync of s1 from its own op");
    cr_assert_eq(x.destroy1, ACCEL_EDEADLK, "destroy of rt1 from its op");
    unit_step("release of s1 and destroy of rt1");
    accel_session_release(x.s1);
    cr_assert_eq(accel_runtime_destroy(x.rt1), ACCEL_OK);
}

/* Worker 0's visit open on this thread, a whole visit on worker 1 inside it
 * ("different workers are independent"): worker 0's op is current again. */
Test(host, visit_on_another_worker_keeps_the_op_current, .timeout = 30)
{
    host h = {0};
    accel_runtime *rt = host_runtime(&h, 2, 0);
    accel_session *s0 = tu_open(rt, "s0", 16, 0);
    accel_session *s1 = tu_open(rt, "s1", 16, 0);
    tu_rec r0 = {0}, r1 = {0};
    accel_op op0 = tu_rec_op(&r0), op1 = tu_rec_op(&r1);
    cr_assert_eq(accel_submit(s0, &op0, ACCEL_NO_WAIT), ACCEL_OK);
    accel_op ops[ACCEL_HOST_VISIT_MAX];
    int st[ACCEL_HOST_VISIT_MAX];
    unsigned n = 0;
    cr_assert_eq(accel_host_visit_begin(rt, 0, ops, ACCEL_HOST_VISIT_MAX, &n),
                 ACCEL_OK);
    cr_assert_eq(n, 1);
    cr_assert_eq(accel_current_session(), s0);
    cr_assert_eq(accel_submit(s1, &op1, ACCEL_NO_WAIT), ACCEL_OK);
    unsigned ran = 0;
    cr_assert_eq(drive_once(rt, 1, &ran), ACCEL_OK);
    cr_assert_eq(ran, 1);
    cr_assert_eq(r1.done_calls, 1);
    cr_assert_eq(accel_current_session(), s0, "worker 0's op is current again");
    cr_assert_eq(accel_session_sync(s0, 2000000000), ACCEL_EDEADLK,
                 "sync of s0 from inside its own op");
    st[0] = ops[0].fn(NULL, ops[0].arg);
    cr_assert_eq(accel_host_visit_end(rt, 0, st, n), ACCEL_OK);
    cr_assert_null(accel_current_session());
    cr_assert_eq(r0.done_calls, 1);
    unit_step("release of s0 and s1 and runtime destroy");
    accel_session_release(s0);
    accel_session_release(s1);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ------------------------------------------------ threads racing */

typedef struct slot_thread {
    accel_runtime *rt;
    host *h;
    unsigned w, lane;
    _Atomic int *stop;
} slot_thread;

/* A host worker: visits, then the idle protocol with the lane's
 * semaphore as its sleep. */
static void *host_worker_main(void *arg)
{
    slot_thread *t = arg;
    for (;;) {
        if (drive_once(t->rt, t->w, NULL) == ACCEL_OK)
            continue;
        if (atomic_load(t->stop))
            return NULL;
        accel_host_idle_begin(t->rt, t->w);
        accel_op ops[ACCEL_HOST_VISIT_MAX];
        int st[ACCEL_HOST_VISIT_MAX];
        unsigned n;
        if (accel_host_visit_begin(t->rt, t->w, ops, ACCEL_HOST_VISIT_MAX,
                                   &n) == ACCEL_OK) {
            accel_host_idle_end(t->rt, t->w, true);
            for (unsigned i = 0; i < n; i++)
                st[i] = ops[i].fn(NULL, ops[i].arg);
            accel_host_visit_end(t->rt, t->w, st, n);
            continue;
        }
        sem_wait(&t->h->lane[t->lane]);
        accel_host_idle_end(t->rt, t->w, false);
    }
}

enum { PRODUCERS = 3, PER = 3000, SESSIONS = 3 };

typedef struct prod {
    accel_session *s[SESSIONS];
    tu_rec *r; /* PER records */
    bool cancel_won[PER];
    _Atomic int accepted, bad;
    uint64_t seed;
} prod;

static void *prod_main(void *arg)
{
    prod *p = arg;
    for (int i = 0; i < PER; i++) {
        accel_op op = tu_rec_op(&p->r[i]);
        accel_ticket t;
        accel_session *s = p->s[i % SESSIONS];
        int rc = accel_submit_ex(s, &op, 0, ACCEL_FOREVER, &t);
        if (rc == ACCEL_OK) {
            atomic_fetch_add(&p->accepted, 1);
            if (tu_rand(&p->seed) % 3 == 0)
                p->cancel_won[i] = accel_cancel(&t) == ACCEL_OK;
        } else {
            if (rc != ACCEL_ECLOSED)
                atomic_fetch_add(&p->bad, 1); /* asserted on the main thread */
            atomic_store(&p->r[i].status, 12345); /* never accepted */
        }
    }
    return NULL;
}

/* Two host worker threads (one per lane), producers cancelling a third of
 * their ops, and a session closed with CANCEL while they run: every
 * accepted op's done runs exactly once, a canceled or closed one never
 * ran, and nothing waits forever (no lost wake-up). */
Test(host, exactly_once_racing_cancel_and_close, .timeout = 180)
{
    host h = {0};
    accel_runtime *rt = host_runtime(&h, 2, 1);
    _Atomic int stop = 0;
    slot_thread st[2];
    pthread_t wt[2];
    for (unsigned w = 0; w < 2; w++) {
        st[w] = (slot_thread){.rt = rt, .h = &h, .w = w, .lane = w == 0,
                              .stop = &stop};
        pthread_create(&wt[w], NULL, host_worker_main, &st[w]);
    }
    accel_session *s[SESSIONS];
    for (int i = 0; i < SESSIONS; i++) {
        char id[8] = {'s', (char)('0' + i), 0};
        s[i] = tu_open(rt, id, 64, 0);
    }
    static prod p[PRODUCERS];
    static tu_rec recs[PRODUCERS][PER];
    memset(recs, 0, sizeof(recs));
    pthread_t pt[PRODUCERS];
    for (int i = 0; i < PRODUCERS; i++) {
        p[i] = (prod){.r = recs[i], .seed = 7u + (uint64_t)i};
        memcpy(p[i].s, s, sizeof(s));
        pthread_create(&pt[i], NULL, prod_main, &p[i]);
    }
    tu_nap_us(2000);
    unit_step("CANCEL close of s2 while the producers run");
    cr_assert_eq(accel_session_close(s[2], ACCEL_CLOSE_CANCEL), ACCEL_OK);
    unit_step("the 3 producers return");
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(pt[i], NULL);
    unit_step("sync of s0 and s1");
    for (int i = 0; i < 2; i++)
        cr_assert_eq(accel_session_sync(s[i], ACCEL_FOREVER), ACCEL_OK);
    /* Stop the host workers: set stop, then wake both lanes. */
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++) {
        sem_post(&h.lane[0]);
        sem_post(&h.lane[1]);
    }
    unit_step("the 2 host worker threads stop");
    for (int w = 0; w < 2; w++)
        pthread_join(wt[w], NULL);
    long accepted = 0, done = 0, canceled = 0, closed = 0, ran = 0, wins = 0;
    for (int i = 0; i < PRODUCERS; i++) {
        accepted += p[i].accepted;
        cr_assert_eq(p[i].bad, 0, "a submit failed other than ECLOSED");
        for (int k = 0; k < PER; k++) {
            tu_rec *r = &recs[i][k];
            if (r->status == 12345) {
                cr_assert_eq(r->done_calls + r->fn_calls, 0);
                continue;
            }
            cr_assert_eq(r->done_calls, 1, "accepted op %d/%d: done once", i,
                         k);
            cr_assert(r->fn_calls <= 1);
            done += r->done_calls;
            ran += r->fn_calls;
            if (r->status == ACCEL_ECANCELED)
                canceled++;
            else if (r->status == ACCEL_ECLOSED)
                closed++;
            else
                cr_assert_eq(r->status, 0);
            if (r->status != 0)
                cr_assert_eq(r->fn_calls, 0, "an unrun op never ran");
            cr_assert_eq(p[i].cancel_won[k], r->status == ACCEL_ECANCELED,
                         "ECANCELED exactly for the cancels that won");
            wins += p[i].cancel_won[k];
        }
    }
    cr_assert_eq(done, accepted);
    cr_assert_gt(wins, 0, "some cancels won (ops queue behind others)");
    cr_assert_eq(ran + canceled + closed, accepted);
    unit_step("release of the 3 sessions and runtime destroy");
    for (int i = 0; i < SESSIONS; i++)
        accel_session_release(s[i]);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}
