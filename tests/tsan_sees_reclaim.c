/*
 * A canary for the TSan tier: TSan must see the call_rcu thread free a
 * session. This program uses a session after its last release (out of
 * contract, on purpose): the reclaim runs on liburcu's call_rcu thread, the
 * main thread waits for it with a raw urcu_memb_barrier() (which TSan cannot
 * see), then a reader thread touches the freed session. ctest passes only
 * if TSan reports it (tests/CMakeLists.txt). The liburcu-wide suppressions
 * this tier once had hid exactly this report: its free is called from a
 * liburcu thread. Built for TSan builds only.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include <urcu/urcu-memb.h>

#include <accel/accel.h>

static accel_session *gone;
static _Atomic int go;

static void *reader(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&go, memory_order_acquire))
        ;
    volatile char c = accel_session_id(gone)[0]; /* freed memory */
    (void)c;
    return NULL;
}

int main(void)
{
    accel_runtime *rt = NULL;
    accel_runtime_config c = {.workers = 1};
    if (accel_runtime_create(&c, &rt) != ACCEL_OK)
        return 1;
    accel_session_config sc = {.id = "gone", .backend = ACCEL_BACKEND_CPU};
    if (accel_session_open(rt, &sc, &gone) != ACCEL_OK)
        return 1;
    pthread_t t;
    pthread_create(&t, NULL, reader, NULL);
    accel_session_release(gone); /* the last handle: reclaim is queued */
    urcu_memb_barrier();         /* the reclaim has run: gone is freed */
    atomic_store_explicit(&go, 1, memory_order_release);
    pthread_join(t, NULL);
    accel_runtime_destroy(rt);
    printf("tsan_sees_reclaim: no report: TSan did not see the free\n");
    return 0;
}
