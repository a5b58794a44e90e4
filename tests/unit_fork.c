/*
 * fork() without exec: in the child, the parent's runtimes and sessions
 * are unusable and say so (ACCEL_ECLOSED, nothing accepted), and a fresh
 * runtime works from create to destroy (liburcu's call_rcu thread and
 * grace periods work in the child). The child reports through its exit
 * code; alarm() turns a hang in the child into a failure the parent sees
 * (exit 99, with the child's stack on stderr).
 *
 * Promises: 1
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core_util.h"
#include "backend_registry.h"
#include "rcu.h"
#include "runtime.h"
#include "unit_watchdog.h"

UNIT_WATCHDOG_SUITE(fork);

/* In a child: a hang hits the alarm, which prints where the child was
 * stuck (for the log) and exits with 99. */
static void child_on_alarm(int sig)
{
    (void)sig;
    void *b[64];
    int n = backtrace(b, 64);
    backtrace_symbols_fd(b, n, 2);
    _exit(99);
}

static void child_arm_alarm(void)
{
    void *warm[1];
    (void)backtrace(warm, 1); /* loads the unwinder before any hang */
    signal(SIGALRM, child_on_alarm);
    alarm(60);
}

static int op_seven(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    return 7;
}

/* A fresh runtime in the child, start to end: 0 if all went well. */
static int child_fresh_runtime(void)
{
    accel_runtime *rt = tu_runtime(2);
    if (!rt)
        return 20;
    accel_session *s = tu_open(rt, "child", 8, 0);
    if (!s)
        return 21;
    if (accel_submit_wait(s, op_seven, NULL, ACCEL_FOREVER) != 7)
        return 22;
    accel_session *l = NULL;
    if (accel_session_lookup(rt, "child", &l) != ACCEL_OK)
        return 23;
    accel_session_release(l);
    if (accel_session_close(s, ACCEL_CLOSE_DRAIN) != ACCEL_OK)
        return 24;
    accel_session_release(s);
    accel_session *s2 = tu_open(rt, "child2", 8, 0); /* left for destroy */
    if (!s2 || accel_submit(s2, &(accel_op){.fn = op_seven}, 0) != ACCEL_OK)
        return 25;
    if (accel_runtime_destroy(rt) != ACCEL_OK)
        return 26;
    accel_runtime *d = accel_runtime_default();
    if (!d)
        return 27;
    accel_session *ds = tu_open(d, "child-default", 8, 0);
    if (!ds || accel_submit_wait(ds, op_seven, NULL, ACCEL_FOREVER) != 7)
        return 28;
    return 0;
}

/* The parent's runtime rt and its session s, seen from the child: every
 * call that would need the parent's workers returns ACCEL_ECLOSED and
 * accepts nothing. 0 if so. */
static int child_parent_objects(accel_runtime *rt, accel_session *s)
{
    accel_op op = {.fn = op_seven};
    size_t acc = 99;
    accel_session *o = NULL;
    accel_session_config c = {.id = "in-child", .backend = ACCEL_BACKEND_CPU};
    if (accel_submit(s, &op, ACCEL_FOREVER) != ACCEL_ECLOSED)
        return 10;
    if (accel_submit_batch(s, &op, 1, ACCEL_FOREVER, &acc) != ACCEL_ECLOSED ||
        acc != 0)
        return 11;
    if (accel_submit_wait(s, op_seven, NULL, ACCEL_FOREVER) != ACCEL_ECLOSED)
        return 12;
    if (accel_session_sync(s, ACCEL_FOREVER) != ACCEL_ECLOSED)
        return 13;
    if (!accel_session_is_closed(s))
        return 14;
    if (accel_session_open(rt, &c, &o) != ACCEL_ECLOSED || o)
        return 15;
    if (accel_session_lookup(rt, "parent", &o) != ACCEL_ECLOSED)
        return 16;
    if (accel_session_close(s, ACCEL_CLOSE_DRAIN) != ACCEL_ECLOSED)
        return 17;
    accel_session_stats st;
    if (accel_session_get_stats(s, &st) != ACCEL_OK || st.submitted != 1)
        return 18; /* the parent's snapshot, read-only */
    accel_session_release(s); /* must not hang or crash */
    accel_runtime_stats rst;
    size_t len = 0;
    if (accel_runtime_get_stats(rt, &rst, sizeof(rst)) != ACCEL_ECLOSED ||
        accel_runtime_write_prometheus(rt, NULL, 0, &len) != ACCEL_ECLOSED)
        return 30;
    if (accel_runtime_destroy(rt) != ACCEL_ECLOSED)
        return 19;
    return 0;
}

static void expect_child(pid_t pid)
{
    int st = 0;
    unit_step("the child exits (its alarm ends a hang in it)");
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st), "the child died of signal %d (a hang hit its "
                             "alarm if 14)",
              WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    cr_assert_eq(WEXITSTATUS(st), 0, "the child failed check %d%s",
                 WEXITSTATUS(st),
                 WEXITSTATUS(st) == 99 ? " (hung: its stack is above)" : "");
}

Test(fork, child_sees_parent_runtime_closed_and_a_fresh_one_works,
     .timeout = 120)
{
    accel_runtime *rt = tu_runtime(2);
    cr_assert_not_null(rt);
    accel_session *s = tu_open(rt, "parent", 8, 0);
    cr_assert_not_null(s);
    cr_assert_eq(accel_submit_wait(s, op_seven, NULL, ACCEL_FOREVER), 7);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        child_arm_alarm();
        int rc = child_parent_objects(rt, s);
        if (rc == 0)
            rc = child_fresh_runtime();
        _exit(rc);
    }
    expect_child(pid);
    /* the parent's runtime is untouched */
    cr_assert_eq(accel_submit_wait(s, op_seven, NULL, ACCEL_FOREVER), 7);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(fork, fresh_runtime_in_child_after_parent_destroyed_its_own,
     .timeout = 120)
{
    accel_runtime *rt = tu_runtime(2);
    cr_assert_not_null(rt);
    accel_session *s = tu_open(rt, "p", 8, 0);
    cr_assert_eq(accel_submit_wait(s, op_seven, NULL, ACCEL_FOREVER), 7);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        child_arm_alarm();
        _exit(child_fresh_runtime());
    }
    expect_child(pid);
}

/* The parent already uses the default runtime: the child's
 * accel_runtime_default() is a new one of its own (fork.c's child hook
 * forgets the parent's), not the parent's, whose calls would return
 * ACCEL_ECLOSED there. */
static int child_default_runtime(accel_runtime *parents)
{
    accel_runtime *d = accel_runtime_default();
    if (!d)
        return 30;
    if (d == parents)
        return 31; /* the parent's default, its workers not here */
    accel_session *ds = tu_open(d, "child-default", 8, 0);
    if (!ds)
        return 32;
    if (accel_submit_wait(ds, op_seven, NULL, ACCEL_FOREVER) != 7)
        return 33;
    accel_session_release(ds);
    return 0;
}

Test(fork, child_of_a_default_runtime_user_gets_its_own_default,
     .timeout = 120)
{
    accel_runtime *d = accel_runtime_default();
    cr_assert_not_null(d);
    accel_session *s = tu_open(d, "parent-default", 8, 0);
    cr_assert_not_null(s);
    cr_assert_eq(accel_submit_wait(s, op_seven, NULL, ACCEL_FOREVER), 7);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        child_arm_alarm();
        _exit(child_default_runtime(d));
    }
    expect_child(pid);
    cr_assert_eq(accel_runtime_default(), d, "the parent keeps its default");
    cr_assert_eq(accel_submit_wait(s, op_seven, NULL, ACCEL_FOREVER), 7);
    accel_session_release(s);
}

/* Forks while other threads open, look up, close and release sessions
 * (RCU read-side sections and reclamations in flight): every child's
 * fresh runtime still completes. */
typedef struct churn {
    accel_runtime *rt;
    int idx;
    int errors;
} churn;

/* Static, not on the test's stack: a failed assertion leaves the test
 * function while the churn threads still run. */
static _Atomic int churn_stop;
static churn churners[2];

static void *churn_main(void *p)
{
    churn *c = p;
    char id[32];
    for (unsigned long i = 0; !atomic_load(&churn_stop); i++) {
        snprintf(id, sizeof(id), "churn-%d-%lu", c->idx, i % 8);
#ifdef TU_HAVE_LSAN
        /* This ASan (gcc 12's) does not lock its allocator around fork(),
         * so a child may inherit it locked by a thread that was in malloc:
         * under ASan the churn only looks up sessions that stay open
         * (read-side sections in flight, no allocation). */
        accel_session *l = NULL;
        if (accel_session_lookup(c->rt, id, &l) == ACCEL_OK) {
            (void)accel_submit(l, &(accel_op){.fn = op_seven}, ACCEL_NO_WAIT);
            accel_session_release(l);
        }
#else
        accel_session *s = tu_open(c->rt, id, 4, 0);
        if (!s)
            continue; /* EEXIST while another incarnation closes */
        accel_session *l = NULL;
        if (accel_session_lookup(c->rt, id, &l) == ACCEL_OK)
            accel_session_release(l);
        (void)accel_submit(s, &(accel_op){.fn = op_seven}, ACCEL_NO_WAIT);
        accel_session_release(s);
#endif
    }
    return NULL;
}

Test(fork, fork_during_session_churn, .timeout = 240)
{
#ifdef TU_HAVE_LSAN
    /* Nor may the runtime's own threads allocate under ASan (churn_main):
     * the monitor started 21-25 extra workers here on a loaded machine
     * (a thread start allocates), and a child once hung 60 s in its
     * fresh runtime's first accel_submit_wait (its op never ran). With
     * no detection, none is started (asserted below). */
    accel_runtime *rt = tu_runtime_nodetect(2);
#else
    accel_runtime *rt = tu_runtime(2);
#endif
    cr_assert_not_null(rt);
#ifdef TU_HAVE_LSAN
    accel_session *kept[2][8];
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 8; k++) {
            char id[32];
            snprintf(id, sizeof(id), "churn-%d-%d", i, k);
            kept[i][k] = tu_open(rt, id, 4, 0);
            cr_assert_not_null(kept[i][k]);
        }
#endif
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        churners[i] = (churn){.rt = rt, .idx = i};
        cr_assert_eq(pthread_create(&th[i], NULL, churn_main, &churners[i]),
                     0);
    }
    for (int k = 0; k < 20; k++) {
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
            child_arm_alarm();
            _exit(child_fresh_runtime());
        }
        expect_child(pid);
    }
    atomic_store(&churn_stop, 1);
    unit_step("the churning threads return");
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
#ifdef TU_HAVE_LSAN
    accel_runtime_stats rst;
    cr_assert_eq(accel_runtime_get_stats(rt, &rst, sizeof(rst)), ACCEL_OK);
    cr_assert_eq(rst.extra_started, 0, "under ASan the churn's runtime started "
                 "%lu extra workers while children were forked",
                 (unsigned long)rst.extra_started);
#endif
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---- a fork while another thread holds one of the runtime's mutexes */

typedef struct holder {
    pthread_mutex_t *m;  /* NULL: the backend-module lock */
    bool until_forked;   /* keep it until the fork returned (else a nap) */
    _Atomic int held, forking, forked;
} holder;

/* Takes the lock, says so, and keeps it until the main thread is about
 * to fork and then a nap longer (a fork that waits for the lock is the
 * fix), or until the fork has returned in the parent. */
static void *hold_main(void *arg)
{
    holder *h = arg;
    if (h->m)
        pthread_mutex_lock(h->m);
    else
        accel__backend_registry_module_lock_hold(true);
    atomic_store(&h->held, 1);
    while (!atomic_load(h->until_forked ? &h->forked : &h->forking))
        sched_yield();
    if (!h->until_forked)
        tu_nap_us(200000);
    if (h->m)
        pthread_mutex_unlock(h->m);
    else
        accel__backend_registry_module_lock_hold(false);
    return NULL;
}

static pid_t fork_while_held(holder *h, pthread_t *th)
{
    cr_assert_eq(pthread_create(th, NULL, hold_main, h), 0);
    unit_step("the holder thread takes the lock");
    while (!atomic_load(&h->held))
        sched_yield();
    atomic_store(&h->forking, 1);
    pid_t pid = fork();
    if (pid > 0)
        atomic_store(&h->forked, 1);
    return pid;
}

/* The backend-module lock (taken by every runtime creation): a child
 * forked while a thread holds it still creates and destroys runtimes. */
Test(fork, fork_while_the_module_lock_is_held, .timeout = 120)
{
    holder h = {0};
    pthread_t th;
    pid_t pid = fork_while_held(&h, &th);
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        child_arm_alarm();
        _exit(child_fresh_runtime());
    }
    expect_child(pid);
    unit_step("the holder thread returns");
    pthread_join(th, NULL);
}

/* Keeps liburcu's call_rcu thread busy until the fork is under way, so the
 * reclamations queued behind it are still pending when the fork pauses
 * that thread: liburcu runs them in the child. */
static struct rcu_head busy_head;
static _Atomic int busy_running;
static holder *busy_until;

static void busy_cb(struct rcu_head *head)
{
    (void)head;
    atomic_store(&busy_running, 1);
    while (!atomic_load(&busy_until->forking))
        sched_yield();
    tu_nap_us(200000); /* the fork's prepare asks the thread to pause */
}

/* The session arena's lock: a child forked while a parent thread holds it
 * (a session being opened) gets the parent's pending reclamation of a
 * session run by liburcu; it must not wait for that lock, or every later
 * reclamation waits behind it and a fresh runtime's destroy (whose
 * barrier waits for them) never returns. */
Test(fork, fork_while_the_arena_lock_is_held, .timeout = 120)
{
    accel_runtime *rt = tu_runtime(2);
    accel_session *s = tu_open(rt, "parent", 8, 0);
    cr_assert_not_null(s);
    cr_assert_eq(accel_submit_wait(s, op_seven, NULL, ACCEL_FOREVER), 7);
    holder h = {.m = &rt->arena.lock, .until_forked = true};
    busy_until = &h;
    accel__rcu_defer(&busy_head, busy_cb);
    unit_step("liburcu's call_rcu thread runs the busy callback");
    while (!atomic_load(&busy_running))
        sched_yield();
    /* queued behind busy_cb: pending at the fork */
    cr_assert_eq(accel_session_close(s, ACCEL_CLOSE_DRAIN), ACCEL_OK);
    accel_session_release(s);
    pthread_t th;
    pid_t pid = fork_while_held(&h, &th);
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        child_arm_alarm();
        _exit(child_fresh_runtime());
    }
    expect_child(pid);
    unit_step("the holder thread returns");
    pthread_join(th, NULL);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* The parent runtime's own mutexes: its session list (open, close, stats,
 * metrics, destroy), its id table, its compensation lock. A child forked
 * while a parent thread holds one must never take it: every call on the
 * parent's objects returns ACCEL_ECLOSED (or its read-only snapshot)
 * without touching them, and a fresh runtime works. Each lock in turn,
 * each child running both. */
Test(fork, fork_while_each_runtime_lock_is_held, .timeout = 240)
{
    static const char *const names[] = {"list_lock", "table_lock",
                                        "comp.lock"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        accel_runtime *rt = tu_runtime(2);
        accel_session *s = tu_open(rt, "parent", 8, 0);
        cr_assert_not_null(s);
        cr_assert_eq(accel_submit_wait(s, op_seven, NULL, ACCEL_FOREVER), 7);
        pthread_mutex_t *locks[] = {&rt->list_lock, &rt->table_lock,
                                    &rt->comp.lock};
        holder h = {.m = locks[i], .until_forked = true};
        pthread_t th;
        pid_t pid = fork_while_held(&h, &th);
        cr_assert_geq(pid, 0, "fork with %s held", names[i]);
        if (pid == 0) {
            child_arm_alarm();
            int rc = child_parent_objects(rt, s);
            _exit(rc ? rc : child_fresh_runtime());
        }
        cr_log_info("forked with %s held", names[i]);
        expect_child(pid);
        unit_step("the holder thread returns");
        pthread_join(th, NULL);
        cr_assert_eq(accel_session_close(s, ACCEL_CLOSE_DRAIN), ACCEL_OK);
        accel_session_release(s);
        cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    }
}

/* ---- accel_cancel on a ticket of a parent's session */

/* In the child: accel_cancel of the parent's tickets returns
 * ACCEL_ECLOSED, as every other call on the parent's objects does (the
 * done it would promise never runs: the parent's workers are not here),
 * and a zero ticket is still ACCEL_EINVAL. 0 if so. */
static int child_cancel_parent_tickets(accel_session *s,
                                       const accel_ticket *queued,
                                       const accel_ticket *taken)
{
    if (!accel_session_is_closed(s))
        return 40;
    int rc = accel_cancel(queued);
    if (rc != ACCEL_ECLOSED) {
        fprintf(stderr, "child: accel_cancel of a queued op of the parent's "
                        "session returned %s, not ACCEL_ECLOSED\n",
                accel_strerror(rc));
        return 41;
    }
    if (taken && (rc = accel_cancel(taken)) != ACCEL_ECLOSED) {
        fprintf(stderr, "child: accel_cancel of a taken op of the parent's "
                        "session returned %s, not ACCEL_ECLOSED\n",
                accel_strerror(rc));
        return 42;
    }
    accel_ticket zero = {0};
    if (accel_cancel(&zero) != ACCEL_EINVAL || accel_cancel(NULL) !=
                                                   ACCEL_EINVAL)
        return 43;
    return 0;
}

/* Thread-pool runtime: one op holds the session (a blocker), the ticketed
 * op waits behind it in the session's FIFO order (so it stays queued
 * whatever workers the blocked-op monitor adds). The parent's cancel
 * still works after the child's refusal. */
Test(fork, cancel_in_the_child_of_a_parent_ticket_is_eclosed, .timeout = 120)
{
    accel_runtime *rt = tu_runtime(1);
    cr_assert_not_null(rt);
    accel_session *s = tu_open(rt, "parent", 8, 0);
    cr_assert_not_null(s);
    tu_blocker b = {0};
    accel_op bop = tu_blocker_op(&b);
    accel_ticket taken = {0}, queued = {0};
    cr_assert_eq(accel_submit_ex(s, &bop, 0, ACCEL_FOREVER, &taken), ACCEL_OK);
    unit_step("the blocker op starts");
    tu_wait_at_least(&b.started, 1);
    tu_rec r = {0};
    accel_op rop = tu_rec_op(&r);
    cr_assert_eq(accel_submit_ex(s, &rop, 0, ACCEL_FOREVER, &queued),
                 ACCEL_OK);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        child_arm_alarm();
        _exit(child_cancel_parent_tickets(s, &queued, &taken));
    }
    unit_step("the child exits");
    expect_child(pid);
    cr_assert_eq(accel_cancel(&taken), ACCEL_EALREADY);
    cr_assert_eq(accel_cancel(&queued), ACCEL_OK);
    tu_latch_open(&b.gate);
    unit_step("sync of the parent's session");
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(atomic_load(&r.fn_calls), 0);
    cr_assert_eq(atomic_load(&r.done_calls), 1);
    cr_assert_eq(atomic_load(&r.status), ACCEL_ECANCELED);
    cr_assert_eq(atomic_load(&b.done_calls), 1);
    unit_step("release and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

static void no_wake(void *arg, unsigned lane)
{
    (void)arg, (void)lane;
}

/* Host-driven runtime: nothing runs until the host visits, so the op is
 * queued at the fork. In the parent it runs at destroy (host runtimes
 * run what is queued there; a release of the last handle would wait for
 * a host visit that never comes, so destroy frees the session). */
Test(fork, cancel_in_the_child_of_a_host_driven_parent_ticket_is_eclosed,
     .timeout = 120)
{
    accel_runtime_config c = {.workers = 1,
                              .struct_size = sizeof(c),
                              .flags = ACCEL_RUNTIME_HOST_WORKERS,
                              .host_wake = no_wake};
    accel_runtime *rt = NULL;
    cr_assert_eq(accel_runtime_create(&c, &rt), ACCEL_OK);
    accel_session *s = tu_open(rt, "parent", 8, 0);
    cr_assert_not_null(s);
    tu_rec r = {0};
    accel_op rop = tu_rec_op(&r);
    accel_ticket queued = {0};
    cr_assert_eq(accel_submit_ex(s, &rop, 0, ACCEL_FOREVER, &queued),
                 ACCEL_OK);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        child_arm_alarm();
        _exit(child_cancel_parent_tickets(s, &queued, NULL));
    }
    unit_step("the child exits");
    expect_child(pid);
    unit_step("runtime destroy runs the queued op");
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    cr_assert_eq(atomic_load(&r.fn_calls), 1, "the parent's op ran");
    cr_assert_eq(atomic_load(&r.done_calls), 1);
    cr_assert_eq(atomic_load(&r.status), 0);
}
