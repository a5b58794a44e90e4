/*
 * fork() while a host thread sits in a liburcu read-side section of its
 * own (memb flavour, registered by the host) and liburcu's call_rcu
 * thread waits for a grace period on it: the fork's prepare step never
 * waits forever, and the runtime goes on after it (promises 1 and 6 of
 * docs/contract.md: an op submitted after the fork runs once).
 *
 * The prepare step waits for the call_rcu thread to pause
 * (call_rcu_before_fork), which it does only once its grace period ends,
 * which waits for the host's section to end. The host may call the library
 * inside that section (accel.h allows it): the fork must not then hold
 * anything that call waits for. Here the host's section calls
 * accel_session_lookup while the fork is being prepared; the fork returns
 * once the section has ended. No nap stands for a state: the test waits,
 * reading /proc/self/task/TID/syscall, until the call_rcu thread sleeps
 * in its grace period's futex wait (urcu_memb_gp.futex) and until the
 * forker sleeps in the prepare step's wait for that thread (liburcu's
 * call_rcu_before_fork polls with poll(NULL, 0, 1)), and it asserts that
 * the case was exercised: fork() returned after the section ended. A hang
 * names its step (unit_watchdog.h).
 *
 * Promises: 1, 6
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <urcu/urcu-memb.h>
#include <urcu/static/urcu-memb.h> /* urcu_memb_gp: the grace period's futex */

#include <accel/accel.h>

#include "core_util.h"
#include "unit_watchdog.h"

UNIT_WATCHDOG_SUITE(fork_rcu);

static int op_seven(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    return 7;
}

static void wait_flag(_Atomic int *f, const char *step)
{
    unit_step(step);
    while (!atomic_load_explicit(f, memory_order_acquire))
        tu_nap_us(100);
}

/* The syscall thread tid sleeps in, and its first argument, from
 * /proc/self/task/TID/syscall; false while it runs ("running"). */
static bool sleeps_in(pid_t tid, long *nr, unsigned long *arg0)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fscanf(f, "%ld %lx", nr, arg0) == 2;
    fclose(f);
    return ok;
}

/* Whether a thread of the process sleeps in a futex wait on liburcu's
 * grace-period word: a grace period waiting for a reader. */
static bool a_grace_period_waits(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return false;
    bool found = false;
    struct dirent *de;
    while (!found && (de = readdir(d))) {
        long nr;
        unsigned long a0;
        if (de->d_name[0] != '.' && sleeps_in(atoi(de->d_name), &nr, &a0))
            found = nr == SYS_futex &&
                    a0 == (unsigned long)(uintptr_t)&urcu_memb_gp.futex;
    }
    closedir(d);
    return found;
}

/* Whether the thread sleeps in a poll with no descriptors: liburcu's
 * call_rcu_before_fork waiting for the call_rcu thread to pause. */
static bool polls_for_nothing(pid_t tid)
{
    long nr;
    unsigned long a0;
    if (!sleeps_in(tid, &nr, &a0))
        return false;
#ifdef SYS_poll
    if (nr == SYS_poll)
        return a0 == 0;
#endif
    return nr == SYS_ppoll && a0 == 0;
}

typedef struct host_arg {
    accel_runtime *rt;
    _Atomic int in_section; /* the host's own read-side section began */
    _Atomic int forking;    /* the forker is about to call fork() */
    _Atomic pid_t forker;   /* its thread id, set before forking */
    _Atomic int ended;      /* the section ends (its last step) */
    _Atomic int done;       /* the host thread is done */
    int lookup_rc;
} host_arg;

static void *host_reader(void *p)
{
    host_arg *a = p;
    urcu_memb_register_thread();
    urcu_memb_read_lock(); /* the host's own section, not the runtime's */
    atomic_store_explicit(&a->in_section, 1, memory_order_release);
    /* The test thread's steps name these waits (it waits for `done`). */
    while (!atomic_load_explicit(&a->forking, memory_order_acquire))
        tu_nap_us(100);
    /* The forker reaches its prepare step, where it waits for the
     * call_rcu thread's grace period (on this section); then the library
     * is called from inside the section. */
    pid_t forker = atomic_load_explicit(&a->forker, memory_order_relaxed);
    while (!polls_for_nothing(forker))
        tu_nap_us(100);
    accel_session *l = NULL;
    a->lookup_rc = accel_session_lookup(a->rt, "present", &l);
    accel_session_release(l);
    /* Set just before the unlock: a fork that waited for the section
     * returns only after it. */
    atomic_store_explicit(&a->ended, 1, memory_order_release);
    urcu_memb_read_unlock();
    urcu_memb_unregister_thread();
    atomic_store_explicit(&a->done, 1, memory_order_release);
    return NULL;
}

typedef struct fork_arg {
    host_arg *h;
    _Atomic int forked; /* fork() returned in the parent */
    int ended_before;   /* the host's section had ended by then */
    pid_t pid;
} fork_arg;

static void *forker(void *p)
{
    fork_arg *f = p;
    /* relaxed: published by the release store of forking. */
    atomic_store_explicit(&f->h->forker, (pid_t)syscall(SYS_gettid),
                          memory_order_relaxed);
    atomic_store_explicit(&f->h->forking, 1, memory_order_release);
    f->pid = fork();
    if (f->pid == 0)
        _exit(0); /* the child has the host thread's registration: it
                     leaves at once (accel.h: host-registered threads) */
    f->ended_before =
        atomic_load_explicit(&f->h->ended, memory_order_acquire);
    atomic_store_explicit(&f->forked, 1, memory_order_release);
    return NULL;
}

Test(fork_rcu, fork_while_host_reader_calls_in_and_call_rcu_waits,
     .timeout = 60)
{
    accel_runtime *rt = tu_runtime(2);
    cr_assert_not_null(rt);
    accel_session *present = tu_open(rt, "present", 8, 0);
    cr_assert_not_null(present);

    host_arg h = {.rt = rt};
    pthread_t ht;
    cr_assert_eq(pthread_create(&ht, NULL, host_reader, &h), 0);
    wait_flag(&h.in_section, "the host thread enters its read-side section");

    /* A session's reclamation for the call_rcu thread: its grace period
     * waits for the host's section. */
    accel_session *gone = tu_open(rt, "gone", 8, 0);
    cr_assert_not_null(gone);
    cr_assert_eq(accel_session_close(gone, ACCEL_CLOSE_DRAIN), ACCEL_OK);
    accel_session_release(gone);
    unit_step("the call_rcu thread's grace period waits for the host's "
              "section (a futex wait on urcu_memb_gp.futex)");
    while (!a_grace_period_waits())
        tu_nap_us(100);

    fork_arg f = {.h = &h};
    pthread_t ft;
    cr_assert_eq(pthread_create(&ft, NULL, forker, &f), 0);
    wait_flag(&h.ended,
              "the host's section ends: the forker reaches its prepare "
              "step (asleep in poll(NULL, 0, 1)), then the host looks a "
              "session up");
    wait_flag(&f.forked,
              "fork() returns: its prepare step waits for the call_rcu "
              "thread's grace period, the host's section for the fork");
    cr_assert(f.ended_before,
              "fork() returned while the host's section was still open: "
              "the prepare step did not wait for the grace period");
    wait_flag(&h.done, "the host thread is done");
    cr_assert_eq(pthread_join(ft, NULL), 0);
    cr_assert_eq(pthread_join(ht, NULL), 0);
    cr_assert_eq(h.lookup_rc, ACCEL_OK, "lookup inside the host's section: %s",
                 accel_strerror(h.lookup_rc));
    unit_step("the child exits");
    int st = 0;
    cr_assert_eq(waitpid(f.pid, &st, 0), f.pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);

    unit_step("an op after the fork");
    cr_assert_eq(accel_submit_wait(present, op_seven, NULL, ACCEL_FOREVER), 7);
    unit_step("destroy after the fork");
    accel_session_release(present);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}
