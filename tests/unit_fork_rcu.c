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
 * once the section has ended. A hang names its step (unit_watchdog.h).
 *
 * Promises: 1, 6
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include <urcu/urcu-memb.h>

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

typedef struct host_arg {
    accel_runtime *rt;
    _Atomic int in_section; /* the host's own read-side section began */
    _Atomic int forking;    /* the forker is about to call fork() */
    _Atomic int done;       /* the section ended */
    int lookup_rc;
} host_arg;

static void *host_reader(void *p)
{
    host_arg *a = p;
    urcu_memb_register_thread();
    urcu_memb_read_lock(); /* the host's own section, not the runtime's */
    atomic_store_explicit(&a->in_section, 1, memory_order_release);
    while (!atomic_load_explicit(&a->forking, memory_order_acquire))
        tu_nap_us(100);
    /* Let the forker reach its prepare step, where it waits for the
     * call_rcu thread's grace period (on this section); then call the
     * library from inside the section. */
    tu_nap_us(100 * 1000);
    accel_session *l = NULL;
    a->lookup_rc = accel_session_lookup(a->rt, "present", &l);
    accel_session_release(l);
    urcu_memb_read_unlock();
    urcu_memb_unregister_thread();
    atomic_store_explicit(&a->done, 1, memory_order_release);
    return NULL;
}

typedef struct fork_arg {
    host_arg *h;
    _Atomic int forked; /* fork() returned in the parent */
    pid_t pid;
} fork_arg;

static void *forker(void *p)
{
    fork_arg *f = p;
    atomic_store_explicit(&f->h->forking, 1, memory_order_release);
    f->pid = fork();
    if (f->pid == 0)
        _exit(0); /* the child has the host thread's registration: it
                     leaves at once (accel.h: host-registered threads) */
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
    tu_nap_us(20 * 1000); /* the call_rcu thread takes it up */

    fork_arg f = {.h = &h};
    pthread_t ft;
    cr_assert_eq(pthread_create(&ft, NULL, forker, &f), 0);
    wait_flag(&f.forked,
              "fork() returns: its prepare step waits for the call_rcu "
              "thread's grace period, the host's section for the fork");
    wait_flag(&h.done, "the host's section ends");
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
