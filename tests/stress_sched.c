/*
 * Stress of the scheduler's lock-free calendar (white-box, runs under
 * TSan): W threads pick, "run" (charge a random cost, which moves
 * entities between the short and general classes), re-queue or idle
 * them; a waker thread wakes idle ones. Checks: an entity is never held
 * by two threads, a short-lane pick returns only short-class entities,
 * and at the end every entity is either idle or queued exactly once.
 *
 * Promises: 2, 6
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sched_core.h"
#include "stress_watchdog.h"

#define N 256
#define W 4

static accel__sched *S;
static accel__sched_entity E[N];
static _Atomic int held[N], idle[N];
static _Atomic int stop;
static _Atomic uint64_t errors, picks;

static uint64_t xr(uint64_t *r)
{
    *r ^= *r << 13;
    *r ^= *r >> 7;
    *r ^= *r << 17;
    return *r;
}

static void *worker(void *arg)
{
    uintptr_t me = (uintptr_t)arg;
    unsigned lane = me % 2;
    uint64_t r = 0x9e3779b97f4a7c15ull * (me + 1);
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        accel__sched_entity *e = accel__sched_pick(S, lane);
        if (!e)
            continue;
        int i = (int)(e - E);
        if (atomic_exchange(&held[i], 1) != 0)
            atomic_fetch_add(&errors, 1);
        if (lane == 1 && atomic_load_explicit(&e->cls, memory_order_relaxed) != 1)
            atomic_fetch_add(&errors, 1);
        atomic_fetch_add_explicit(&picks, 1, memory_order_relaxed);
        uint64_t x = xr(&r);
        uint64_t cost = x % 4 ? 1000 + x % 50000 : 200000 + x % 3000000;
        accel__sched_charge(S, e, cost, 0, 1 + (uint32_t)(x % 3));
        if (x % 16 == 0)
            atomic_store_explicit(&e->weight, 1 + (uint32_t)(x >> 40) % 1000,
                                  memory_order_relaxed);
        atomic_store(&held[i], 0);
        if ((x >> 20) % 8 == 0)
            atomic_store(&idle[i], 1); /* hand over to the waker */
        else
            accel__sched_enqueue(S, e, false);
    }
    return NULL;
}

static void *waker(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        for (int i = 0; i < N; i++) {
            int one = 1;
            if (atomic_compare_exchange_strong(&idle[i], &one, 0))
                accel__sched_enqueue(S, &E[i], true);
        }
    return NULL;
}

int main(void)
{
    const char *env = getenv("ACCEL_STRESS_SECONDS");
    double secs = env ? atof(env) : 2.0;
    watchdog_start("stress_sched");
    watchdog_step("workers and the waker run", secs * 20 + 120);
    accel__sched_config c = {.workers = W, .short_lane_workers = 1,
                             .short_op_ns = 100000, .quantum_ops = 32,
                             .quantum_ns = 2000000, .max_entities = N};
    if (accel__sched_create(&c, &S) != 0)
        return 1;
    for (int i = 0; i < N; i++) {
        accel__sched_entity_init(S, &E[i], 1 + (uint32_t)i % 100, &E[i]);
        accel__sched_enqueue(S, &E[i], true);
    }
    pthread_t t[W + 1];
    for (uintptr_t i = 0; i < W; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    pthread_create(&t[W], NULL, waker, NULL);
    struct timespec ts = {(time_t)secs,
                          (long)((secs - (double)(time_t)secs) * 1e9)};
    nanosleep(&ts, NULL);
    atomic_store(&stop, 1);
    watchdog_step("the workers and the waker stop", 120);
    for (int i = 0; i <= W; i++)
        pthread_join(t[i], NULL);
    static int seen[N];
    int queued = 0, nidle = 0;
    accel__sched_entity *e;
    while ((e = accel__sched_pick(S, 0)) != NULL) {
        int i = (int)(e - E);
        if (seen[i]++ || atomic_load(&idle[i]))
            atomic_fetch_add(&errors, 1);
        queued++;
    }
    for (int i = 0; i < N; i++)
        nidle += atomic_load(&idle[i]);
    if (queued + nidle != N)
        atomic_fetch_add(&errors, 1);
    printf("stress_sched: %llu picks, %d queued + %d idle of %d, %llu "
           "errors\n",
           (unsigned long long)atomic_load(&picks), queued, nidle, N,
           (unsigned long long)atomic_load(&errors));
    accel__sched_destroy(S);
    return atomic_load(&errors) ? 1 : 0;
}
