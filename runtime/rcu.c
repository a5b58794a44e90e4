#include "rcu.h"

#include <pthread.h>
#include <stdbool.h>

#ifdef ACCEL_TSAN
char accel__rcu_tsan_gp;
char accel__rcu_tsan_done;
#endif

static pthread_key_t rcu_key;
static pthread_once_t rcu_key_once = PTHREAD_ONCE_INIT;
static _Thread_local bool rcu_registered;

static void rcu_thread_exit(void *unused)
{
    (void)unused;
    if (rcu_registered) {
        urcu_memb_unregister_thread();
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
    urcu_memb_register_thread();
    rcu_registered = true;
    (void)pthread_setspecific(rcu_key, (void *)1);
}
