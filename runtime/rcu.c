#include "rcu.h"

#include <pthread.h>
#include <stdbool.h>

#ifdef ACCEL_TSAN
char accel__rcu_tsan_gp;
#endif

static pthread_key_t rcu_key;
static pthread_once_t rcu_key_once = PTHREAD_ONCE_INIT;
static _Thread_local bool rcu_registered;

static void rcu_thread_exit(void *unused)
{
    (void)unused;
    if (rcu_registered) {
        /* One cold section: a fork sees the thread in both registries or
         * in neither (fork.c unlinks the dead ones in the child). */
        accel__fork_cold_begin();
        urcu_memb_unregister_thread();
        accel__fork_thread_remove();
        accel__fork_cold_end();
        rcu_registered = false;
    }
}

static void rcu_key_create(void)
{
    /* Cannot fail short of PTHREAD_KEYS_MAX keys; then threads simply stay
     * registered until exit, which liburcu tolerates. */
    (void)pthread_key_create(&rcu_key, rcu_thread_exit);
}

void accel__rcu_register(void)
{
    if (__builtin_expect(rcu_registered, 1))
        return;
    pthread_once(&rcu_key_once, rcu_key_create);
    accel__fork_cold_begin();
    urcu_memb_register_thread();
    accel__fork_thread_add();
    accel__fork_cold_end();
    rcu_registered = true;
    (void)pthread_setspecific(rcu_key, (void *)1);
}
