/*
 * Host threads that use liburcu themselves (runtime/rcu.c). A host may
 * register its threads with liburcu's memb flavour for its own RCU use and
 * call accel from them: accel must use that registration as it is (a
 * second registration corrupts liburcu's registry or trips its assert),
 * must not unregister a thread it did not register, and must still
 * register, and unregister at exit, a thread whose host registration has
 * ended. A grace period after each scenario (accel_runtime_destroy waits
 * for one) walks the registry: a stale or doubled entry shows there.
 *
 * Inside such a section of its own, a thread may not destroy a runtime
 * (its rcu_barrier is refused there, and the sessions' reclamations still
 * queued would run on a freed runtime) nor open a session (a table resize
 * is not allowed there): both return ACCEL_EDEADLK and change nothing.
 *
 * Promises: none
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include <urcu/urcu-memb.h>

#include <accel/accel.h>

#include "core_util.h"

static _Atomic int ran;

static int count_op(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
    return 0;
}

/* Every public call that goes through RCU: open (table insert), lookup,
 * submit (kick), sync, close (table remove), release (reclaim). Returns a
 * bit per failed step (asserts belong to the test's thread). */
static int use_accel(accel_runtime *rt, const char *id)
{
    int bad = 0;
    accel_session *s = tu_open(rt, id, 8, 0);
    if (!s)
        return 1;
    accel_session *h = NULL;
    if (accel_session_lookup(rt, id, &h) != ACCEL_OK || h != s)
        bad |= 2;
    for (int i = 0; i < 20; i++) {
        accel_op op = {.fn = count_op};
        if (accel_submit(s, &op, ACCEL_FOREVER) != ACCEL_OK)
            bad |= 4;
    }
    if (accel_session_sync(s, ACCEL_FOREVER) != ACCEL_OK)
        bad |= 8;
    if (accel_session_close(s, ACCEL_CLOSE_DRAIN) != ACCEL_OK)
        bad |= 16;
    if (h)
        accel_session_release(h);
    accel_session_release(s);
    return bad;
}

typedef struct host_arg {
    accel_runtime *rt;
    int again; /* use accel once more after the host unregistered */
    int bad;
} host_arg;

static void *host_thread(void *p)
{
    host_arg *a = p;
    urcu_memb_register_thread();
    urcu_memb_read_lock(); /* the host's own read-side use */
    urcu_memb_read_unlock();
    a->bad = use_accel(a->rt, "host");
    urcu_memb_read_lock();
    urcu_memb_read_unlock();
    urcu_memb_unregister_thread();
    if (a->again) /* accel registers it now, and unregisters it at exit */
        a->bad |= use_accel(a->rt, "host-again") << 8;
    return NULL;
}

static void run_host(int again)
{
    accel_runtime *rt = tu_runtime(2);
    cr_assert_not_null(rt);
    atomic_store(&ran, 0);
    for (int round = 0; round < 3; round++) {
        host_arg a = {.rt = rt, .again = again};
        pthread_t t;
        cr_assert_eq(pthread_create(&t, NULL, host_thread, &a), 0);
        cr_assert_eq(pthread_join(t, NULL), 0);
        cr_assert_eq(a.bad, 0, "round %d: failed steps %#x", round, a.bad);
        /* a grace period with the thread gone: walks liburcu's registry */
        urcu_memb_synchronize_rcu();
    }
    cr_assert_eq(atomic_load(&ran), 3 * 20 * (again ? 2 : 1));
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(rcu_host, host_registered_thread_calls_accel, .timeout = 60)
{
    run_host(0);
}

Test(rcu_host, host_unregisters_then_calls_accel_again, .timeout = 60)
{
    run_host(1);
}

/* Sessions released inside the host's section wait for a grace period
 * (their reclamations are queued on liburcu's thread): a destroy there
 * would free the runtime under them. */
Test(rcu_host, destroy_and_open_inside_the_hosts_section_refused,
     .timeout = 60)
{
    urcu_memb_register_thread();
    accel_runtime *rt = tu_runtime(2);
    cr_assert_not_null(rt);
    accel_session *s[8];
    char id[16];
    for (int i = 0; i < 8; i++) {
        snprintf(id, sizeof(id), "in-section-%d", i);
        s[i] = tu_open(rt, id, 8, 0);
        cr_assert_not_null(s[i], "open %d", i);
    }
    urcu_memb_read_lock();
    for (int i = 0; i < 8; i++) {
        accel_op op = {.fn = count_op};
        cr_assert_eq(accel_submit(s[i], &op, ACCEL_FOREVER), ACCEL_OK);
        cr_assert_eq(accel_session_close(s[i], ACCEL_CLOSE_DRAIN), ACCEL_OK);
        accel_session_release(s[i]); /* reclamation queued (call_rcu) */
    }
    int rc = accel_runtime_destroy(rt);
    if (rc == ACCEL_OK) {
        /* It freed the runtime: let the queued reclamations run, so a
         * sanitizer shows where they touch it, then fail. */
        urcu_memb_read_unlock();
        urcu_memb_barrier();
        cr_assert_fail("destroy inside the host's own read-side section "
                 "returned ACCEL_OK");
    }
    cr_assert_eq(rc, ACCEL_EDEADLK,
                 "destroy inside the host's own read-side section");
    accel_session *o = NULL;
    cr_assert_eq(accel_session_open(rt,
                                    &(accel_session_config){
                                        .id = "opened-inside",
                                        .backend = ACCEL_BACKEND_CPU},
                                    &o),
                 ACCEL_EDEADLK, "open inside the host's own section");
    cr_assert_null(o, "a refused open returns no handle");
    urcu_memb_read_unlock();
    /* Nothing changed: the runtime works, the refused id was never
     * taken. */
    accel_session *again = tu_open(rt, "opened-inside", 8, 0);
    cr_assert_not_null(again);
    accel_op op = {.fn = count_op};
    cr_assert_eq(accel_submit(again, &op, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_session_sync(again, ACCEL_FOREVER), ACCEL_OK);
    accel_session_release(again);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    urcu_memb_unregister_thread();
}
