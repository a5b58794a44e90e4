#include "rcu.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* For urcu_memb_reader.registered: liburcu has no public "is this thread
 * registered" call, and its register asserts (or, without asserts, links
 * the thread twice) when a host already registered the thread. */
#include <urcu/static/urcu-memb.h>

#ifdef ACCEL_TSAN
char accel__rcu_tsan_gp;
char accel__rcu_tsan_done;
#endif

static pthread_key_t rcu_key;
static pthread_once_t rcu_key_once = PTHREAD_ONCE_INIT;
static bool rcu_key_ok;
/* This thread was registered by accel (not by its host). */
static _Thread_local bool rcu_ours;

/* Thread exit: undo our registration, and only ours. With the memb
 * flavour a thread that exits registered leaves its reader record (in the
 * dead thread's TLS) on liburcu's registry, where the next grace period
 * reads it: registration must end before the thread does. */
static void rcu_thread_exit(void *unused)
{
    (void)unused;
    if (rcu_ours) {
        /* One cold section: a fork sees the thread in both registries or
         * in neither (fork.c unlinks the dead ones in the child). */
        accel__fork_cold_begin();
        urcu_memb_unregister_thread();
        accel__fork_thread_remove();
        accel__fork_cold_end();
        rcu_ours = false;
    }
}

static void rcu_key_create(void)
{
    rcu_key_ok = pthread_key_create(&rcu_key, rcu_thread_exit) == 0;
}

void accel__rcu_register(void)
{
    if (__builtin_expect(rcu_ours, 1))
        return;
    /* A host thread registered by its host: use that registration; the
     * host unregisters it. Checked on every call, not cached: the host may
     * unregister the thread and call us again. */
    if (URCU_TLS(urcu_memb_reader).registered)
        return;
    pthread_once(&rcu_key_once, rcu_key_create);
    if (!rcu_key_ok) {
        /* Without the exit hook the thread would die registered (above):
         * refuse rather than corrupt liburcu's registry later. Only when
         * the process used up all PTHREAD_KEYS_MAX keys. */
        fputs("accel: no pthread key left for RCU thread exit; aborting\n",
              stderr);
        abort();
    }
    accel__fork_cold_begin();
    urcu_memb_register_thread();
    accel__fork_thread_add();
    accel__fork_cold_end();
    rcu_ours = true;
    (void)pthread_setspecific(rcu_key, (void *)1);
}
