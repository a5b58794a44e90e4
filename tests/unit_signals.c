/*
 * Signal storms across every blocking call (promise 1 of docs/contract.md
 * and the statuses accel.h documents): a helper thread sends SIGUSR1 and
 * SIGALRM to the waiting thread, and SIGALRM to each worker, every
 * millisecond, with handlers installed without SA_RESTART, so every futex
 * wait of the runtime returns EINTR again and again. Each blocking call
 * either keeps waiting (the test checks it has not returned while its
 * condition is unmet and the storm has hit the waiting thread) or returns
 * its documented status: ACCEL_OK once the condition is met,
 * ACCEL_ETIMEDOUT no earlier than its timeout. The calls: a submit waiting
 * for room, accel_session_sync, accel_session_close(DRAIN),
 * accel_runtime_destroy and accel_submit_wait (its wait for room and its
 * wait for the op).
 *
 * Every waiting step has a watchdog that names it (unit_watchdog.h). The
 * runtimes have one worker held by a blocker op and detection off
 * (tu_runtime_nodetect): every wait here is behind that op.
 *
 * Promises: 1
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <accel/accel.h>

#include "core_util.h"
#include "unit_watchdog.h"

static void storm_init(void);
static void storm_fini(void);

static void suite_init(void)
{
    unit_watchdog_init();
    storm_init();
}

static void suite_fini(void)
{
    storm_fini();
    unit_watchdog_fini();
}

TestSuite(signals, .init = suite_init, .fini = suite_fini);

/* ---- the storm ------------------------------------------------------ */

static _Atomic long sig_hits;            /* signals handled, all threads */
static _Thread_local volatile long my_hits; /* signals handled here */
/* A calling thread's count the test thread reads while the call waits
 * (lock-free: async-signal-safe). */
static _Thread_local _Atomic long *volatile my_live_hits;

static void on_signal(int sig)
{
    (void)sig;
    my_hits++;
    _Atomic long *live = my_live_hits;
    if (live)
        atomic_fetch_add_explicit(live, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&sig_hits, 1, memory_order_relaxed);
}

static void storm_init(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: interrupted syscalls fail EINTR */
    cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
    cr_assert_eq(sigaction(SIGALRM, &sa, NULL), 0);
}

static void storm_fini(void)
{
    /* A signal still in flight must not end the process. */
    signal(SIGUSR1, SIG_IGN);
    signal(SIGALRM, SIG_IGN);
}

typedef struct storm {
    pid_t target;          /* the waiting thread */
    _Atomic int stop;
    _Atomic long sent;
    pthread_t th;
} storm;

static void send_to(pid_t tid, int sig)
{
    (void)syscall(SYS_tgkill, getpid(), tid, sig);
}

static void *storm_main(void *p)
{
    storm *st = p;
    int tids[16];
    int n = tu_accel_tids(tids, 16, true);
    while (!atomic_load_explicit(&st->stop, memory_order_acquire)) {
        send_to(st->target, SIGUSR1);
        send_to(st->target, SIGALRM);
        for (int i = 0; i < n; i++)
            send_to(tids[i], SIGALRM); /* a tid gone by now: ESRCH */
        atomic_fetch_add_explicit(&st->sent, 1, memory_order_relaxed);
        tu_nap_us(1000);
    }
    return NULL;
}

static void storm_start(storm *st, pid_t target)
{
    st->target = target;
    atomic_store(&st->stop, 0);
    atomic_store(&st->sent, 0);
    cr_assert_eq(pthread_create(&st->th, NULL, storm_main, st), 0);
}

static void storm_stop(storm *st)
{
    atomic_store_explicit(&st->stop, 1, memory_order_release);
    pthread_join(st->th, NULL);
}

/* ---- a blocking call on a thread of its own ------------------------- */

typedef struct call {
    int (*fn)(struct call *);
    accel_runtime *rt;
    accel_session *s;
    int64_t timeout_ns;
    _Atomic pid_t tid;
    _Atomic int started, returned;
    _Atomic long hits; /* signals this thread handled during the call */
    _Atomic long live_hits; /* the same, counted as they come */
    int rc;
    double begin_s, end_s;
    pthread_t th;
} call;

static void *call_main(void *p)
{
    call *c = p;
    my_hits = 0;
    my_live_hits = &c->live_hits;
    atomic_store(&c->tid, (pid_t)syscall(SYS_gettid));
    c->begin_s = tu_now_s();
    atomic_store_explicit(&c->started, 1, memory_order_release);
    c->rc = c->fn(c);
    c->end_s = tu_now_s();
    atomic_store(&c->hits, my_hits);
    my_live_hits = NULL;
    atomic_store_explicit(&c->returned, 1, memory_order_release);
    return NULL;
}


static void wait_flag(_Atomic int *f, const char *step)
{
    unit_step(step);
    while (!atomic_load_explicit(f, memory_order_acquire))
        tu_nap_us(200);
}

/* Waits until the calling thread has handled `hits` signals of the
 * storm during its call, or the call has returned. */
static void wait_hits(call *c, long hits)
{
    if (!hits)
        return;
    unit_step("the storm hits the waiting thread (a count of signals)");
    while (atomic_load(&c->live_hits) < hits && !atomic_load(&c->returned))
        tu_nap_us(200);
}

/* Starts c on its own thread and a storm on it; returns once the call
 * sleeps in its wait (state S: a futex wait, the signals keep waking it)
 * and, if hits, the thread has handled that many signals in the call (or
 * the call has returned). */
static void call_start_in_storm(call *c, storm *st, long hits,
                                const char *step_sleep)
{
    cr_assert_eq(pthread_create(&c->th, NULL, call_main, c), 0);
    wait_flag(&c->started, "the calling thread starts");
    unit_step(step_sleep);
    while (tu_thread_state(atomic_load(&c->tid)) != 'S' &&
           !atomic_load(&c->returned))
        tu_nap_us(200);
    storm_start(st, atomic_load(&c->tid));
    wait_hits(c, hits);
}

static void call_join(call *c, storm *st, const char *step)
{
    wait_flag(&c->returned, step);
    storm_stop(st);
    pthread_join(c->th, NULL);
}

/* ---- the blocker holding the one worker ------------------------------ */

typedef struct held {
    accel_runtime *rt;
    accel_session *s;
    tu_blocker b;
} held;

/* A runtime with one worker held by a blocker op of session "held",
 * whose ring (depth 2) is then filled with `fill` recorded ops. */
static void held_setup(held *h, tu_rec *recs, int fill)
{
    memset(h, 0, sizeof(*h));
    h->rt = tu_runtime_nodetect(1);
    cr_assert_not_null(h->rt);
    h->s = tu_open(h->rt, "held", 2, 0);
    cr_assert_not_null(h->s);
    accel_op op = tu_blocker_op(&h->b);
    cr_assert_eq(accel_submit(h->s, &op, ACCEL_FOREVER), ACCEL_OK);
    wait_flag(&h->b.started, "the blocker op starts on the one worker");
    for (int i = 0; i < fill; i++) {
        accel_op r = tu_rec_op(&recs[i]);
        cr_assert_eq(accel_submit(h->s, &r, ACCEL_NO_WAIT), ACCEL_OK);
    }
}

static void check_recs(tu_rec *recs, int n)
{
    for (int i = 0; i < n; i++) {
        cr_assert_eq(atomic_load(&recs[i].fn_calls), 1, "op %d ran %d times",
                     i, atomic_load(&recs[i].fn_calls));
        cr_assert_eq(atomic_load(&recs[i].done_calls), 1);
    }
}

/* Signals the waiting thread handles before the test lets its condition
 * be met: with a handler each and no SA_RESTART, each one ends a futex
 * wait of the call with EINTR. */
#define STORM_HITS 200

/* The storm hit the waiting thread STORM_HITS times while it waited, and
 * the call had not returned while its condition was unmet. */
static void check_waited(call *c, storm *st, const char *what)
{
    cr_assert_eq(atomic_load(&c->returned), 0,
                 "%s returned (%s) while its condition was unmet, %ld "
                 "storm rounds in, %ld signals handled by it",
                 what, accel_strerror(c->rc), atomic_load(&st->sent),
                 atomic_load(&c->live_hits));
    cr_assert_geq(atomic_load(&c->live_hits), STORM_HITS);
}

/* ---- the calls ------------------------------------------------------ */

static tu_rec extra_rec;

static int call_submit(call *c)
{
    accel_op op = tu_rec_op(&extra_rec);
    return accel_submit(c->s, &op, c->timeout_ns);
}

static int call_sync(call *c)
{
    return accel_session_sync(c->s, c->timeout_ns);
}

static int call_close(call *c)
{
    return accel_session_close(c->s, ACCEL_CLOSE_DRAIN);
}

static int call_destroy(call *c)
{
    return accel_runtime_destroy(c->rt);
}

static tu_blocker wait_blocker;

static int op_blocker_seven(accel_ctx *ctx, void *arg)
{
    tu_blocker_fn(ctx, arg);
    return 7;
}

static int call_submit_wait(call *c)
{
    return accel_submit_wait(c->s, op_blocker_seven, &wait_blocker,
                             c->timeout_ns);
}

static int op_seven(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    return 7;
}

static int call_submit_wait_room(call *c)
{
    return accel_submit_wait(c->s, op_seven, NULL, c->timeout_ns);
}

static void release_and_destroy(held *h)
{
    tu_latch_open(&h->b.gate);
    unit_step("sync after the blocker's release");
    cr_assert_eq(accel_session_sync(h->s, ACCEL_FOREVER), ACCEL_OK);
    accel_session_release(h->s);
    unit_step("destroy");
    cr_assert_eq(accel_runtime_destroy(h->rt), ACCEL_OK);
}

/* The ring full: a submit waits for room through the storm, and is
 * accepted once the blocker ends. */
Test(signals, submit_waiting_for_room_forever, .timeout = 60)
{
    held h;
    tu_rec recs[2] = {0};
    memset(&extra_rec, 0, sizeof(extra_rec));
    held_setup(&h, recs, 2);
    call c = {.fn = call_submit, .s = h.s, .timeout_ns = ACCEL_FOREVER};
    storm st;
    call_start_in_storm(&c, &st, STORM_HITS, "the submit sleeps for room");
    check_waited(&c, &st, "accel_submit (full ring, ACCEL_FOREVER)");
    tu_latch_open(&h.b.gate);
    call_join(&c, &st, "the submit returns once room is made");
    cr_assert_eq(c.rc, ACCEL_OK, "accel_submit: %s", accel_strerror(c.rc));
    cr_assert_gt(atomic_load(&c.hits), 0, "the storm never hit the submit");
    release_and_destroy(&h);
    check_recs(recs, 2);
    check_recs(&extra_rec, 1);
}

/* With a timeout: ACCEL_ETIMEDOUT, not before the timeout, nothing
 * accepted. */
Test(signals, submit_waiting_for_room_times_out, .timeout = 60)
{
    held h;
    tu_rec recs[2] = {0};
    memset(&extra_rec, 0, sizeof(extra_rec));
    held_setup(&h, recs, 2);
    int64_t t = 400 * 1000000LL;
    call c = {.fn = call_submit, .s = h.s, .timeout_ns = t};
    storm st;
    call_start_in_storm(&c, &st, 0, "the submit sleeps for room");
    call_join(&c, &st, "the submit times out");
    cr_assert_eq(c.rc, ACCEL_ETIMEDOUT, "accel_submit: %s",
                 accel_strerror(c.rc));
    cr_assert_geq(c.end_s - c.begin_s, (double)t / 1e9,
                  "returned %.3f s into a %.3f s timeout",
                  c.end_s - c.begin_s, (double)t / 1e9);
    cr_assert_gt(atomic_load(&c.hits), 0, "the storm never hit the submit");
    release_and_destroy(&h);
    check_recs(recs, 2);
    cr_assert_eq(atomic_load(&extra_rec.fn_calls), 0);
    cr_assert_eq(atomic_load(&extra_rec.done_calls), 0);
}

Test(signals, sync_forever_and_with_timeout, .timeout = 60)
{
    held h;
    tu_rec recs[2] = {0};
    held_setup(&h, recs, 2);
    int64_t t = 400 * 1000000LL;
    call c = {.fn = call_sync, .s = h.s, .timeout_ns = t};
    storm st;
    call_start_in_storm(&c, &st, 0, "the bounded sync sleeps");
    call_join(&c, &st, "the bounded sync times out");
    cr_assert_eq(c.rc, ACCEL_ETIMEDOUT, "sync: %s", accel_strerror(c.rc));
    cr_assert_geq(c.end_s - c.begin_s, (double)t / 1e9,
                  "returned %.3f s into a %.3f s timeout",
                  c.end_s - c.begin_s, (double)t / 1e9);
    cr_assert_gt(atomic_load(&c.hits), 0, "the storm never hit the sync");

    call f = {.fn = call_sync, .s = h.s, .timeout_ns = ACCEL_FOREVER};
    call_start_in_storm(&f, &st, STORM_HITS, "the sync sleeps");
    check_waited(&f, &st, "accel_session_sync (ACCEL_FOREVER)");
    tu_latch_open(&h.b.gate);
    call_join(&f, &st, "the sync returns once the ops ran");
    cr_assert_eq(f.rc, ACCEL_OK, "sync: %s", accel_strerror(f.rc));
    cr_assert_gt(atomic_load(&f.hits), 0, "the storm never hit the sync");
    check_recs(recs, 2); /* sync returned: every op before it is done */
    release_and_destroy(&h);
}

Test(signals, close_drain, .timeout = 60)
{
    held h;
    tu_rec recs[2] = {0};
    held_setup(&h, recs, 2);
    call c = {.fn = call_close, .s = h.s};
    storm st;
    call_start_in_storm(&c, &st, STORM_HITS, "the draining close sleeps");
    check_waited(&c, &st, "accel_session_close(DRAIN)");
    tu_latch_open(&h.b.gate);
    call_join(&c, &st, "the close returns once drained");
    cr_assert_eq(c.rc, ACCEL_OK, "close: %s", accel_strerror(c.rc));
    cr_assert_gt(atomic_load(&c.hits), 0, "the storm never hit the close");
    check_recs(recs, 2); /* close returned: every accepted op is done */
    accel_session_stats ss;
    cr_assert_eq(accel_session_get_stats(h.s, &ss), ACCEL_OK);
    cr_assert_eq(ss.completed, ss.submitted);
    release_and_destroy(&h);
}

Test(signals, runtime_destroy, .timeout = 60)
{
    held h;
    tu_rec recs[2] = {0};
    held_setup(&h, recs, 2);
    call c = {.fn = call_destroy, .rt = h.rt};
    storm st;
    call_start_in_storm(&c, &st, STORM_HITS, "destroy sleeps (draining)");
    check_waited(&c, &st, "accel_runtime_destroy");
    tu_latch_open(&h.b.gate);
    call_join(&c, &st, "destroy returns once drained and joined");
    cr_assert_eq(c.rc, ACCEL_OK, "destroy: %s", accel_strerror(c.rc));
    cr_assert_gt(atomic_load(&c.hits), 0, "the storm never hit destroy");
    check_recs(recs, 2);
    cr_assert_eq(atomic_load(&h.b.done_calls), 1);
}

/* accel_submit_wait's wait for its op: the op is the blocker. */
Test(signals, submit_wait_for_the_op, .timeout = 60)
{
    accel_runtime *rt = tu_runtime_nodetect(1);
    cr_assert_not_null(rt);
    accel_session *s = tu_open(rt, "w", 2, 0);
    cr_assert_not_null(s);
    memset(&wait_blocker, 0, sizeof(wait_blocker));
    call c = {.fn = call_submit_wait, .s = s, .timeout_ns = ACCEL_FOREVER};
    storm st;
    call_start_in_storm(&c, &st, 0, "submit_wait's op starts");
    wait_flag(&wait_blocker.started, "submit_wait's op starts");
    unit_step("submit_wait sleeps for its op");
    while (tu_thread_state(atomic_load(&c.tid)) != 'S')
        tu_nap_us(200);
    wait_hits(&c, STORM_HITS);
    check_waited(&c, &st, "accel_submit_wait (its op running)");
    tu_latch_open(&wait_blocker.gate);
    call_join(&c, &st, "submit_wait returns the op's result");
    cr_assert_eq(c.rc, 7, "accel_submit_wait returned %d (%s)", c.rc,
                 accel_strerror(c.rc));
    cr_assert_gt(atomic_load(&c.hits), 0, "the storm never hit submit_wait");
    accel_session_release(s);
    unit_step("destroy");
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* accel_submit_wait's wait for room: forever (then the op's result), and
 * bounded (ACCEL_ETIMEDOUT, the op never run). */
Test(signals, submit_wait_for_room, .timeout = 60)
{
    held h;
    tu_rec recs[2] = {0};
    held_setup(&h, recs, 2);
    int64_t t = 400 * 1000000LL;
    call c = {.fn = call_submit_wait_room, .s = h.s, .timeout_ns = t};
    storm st;
    call_start_in_storm(&c, &st, 0, "the bounded submit_wait sleeps for room");
    call_join(&c, &st, "the bounded submit_wait times out");
    cr_assert_eq(c.rc, ACCEL_ETIMEDOUT, "accel_submit_wait: %d (%s)", c.rc,
                 accel_strerror(c.rc));
    cr_assert_geq(c.end_s - c.begin_s, (double)t / 1e9,
                  "returned %.3f s into a %.3f s timeout",
                  c.end_s - c.begin_s, (double)t / 1e9);

    call f = {.fn = call_submit_wait_room, .s = h.s,
              .timeout_ns = ACCEL_FOREVER};
    call_start_in_storm(&f, &st, STORM_HITS, "submit_wait sleeps for room");
    check_waited(&f, &st, "accel_submit_wait (full ring, ACCEL_FOREVER)");
    tu_latch_open(&h.b.gate);
    call_join(&f, &st, "submit_wait returns the op's result");
    cr_assert_eq(f.rc, 7, "accel_submit_wait returned %d (%s)", f.rc,
                 accel_strerror(f.rc));
    cr_assert_gt(atomic_load(&f.hits), 0, "the storm never hit submit_wait");
    release_and_destroy(&h);
    check_recs(recs, 2);
}
