/*
 * Co-tenants on one CPU, for the tests of what a wait for a CPU costs:
 * the calling thread, and every thread it starts from then on (a
 * runtime's included), is kept on the first CPU it may run on, beside
 * threads that spin there until stopped. Each thread of the run then
 * waits on a run queue about as long as all the spinners run.
 *
 * Nothing here asserts (core_util.h says why): each call returns whether
 * it did its part, for the test to check. The includer defines
 * _GNU_SOURCE before its first #include (sched_setaffinity).
 */
#ifndef ACCEL_TESTS_COTENANTS_H
#define ACCEL_TESTS_COTENANTS_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define COTENANTS_MAX 4

struct cotenants {
    int n;
    _Atomic int stop;
    pthread_t t[COTENANTS_MAX];
};

static inline void *cotenant_spin(void *arg)
{
    struct cotenants *c = arg;
    static _Atomic uint64_t sink; /* the loop's result, kept */
    volatile uint64_t x = 0;
    /* relaxed: a stop flag; join orders the rest */
    while (!atomic_load_explicit(&c->stop, memory_order_relaxed))
        for (int i = 0; i < 1000; i++)
            x += (uint64_t)i;
    atomic_fetch_add_explicit(&sink, x, memory_order_relaxed);
    return NULL;
}

/* Pins this thread to its first allowed CPU and starts n (at most
 * COTENANTS_MAX) spinners there. false: the pin or a start failed (the
 * spinners started are stopped). */
static inline bool cotenants_start(struct cotenants *c, int n)
{
    c->n = 0;
    atomic_store(&c->stop, 0);
    cpu_set_t set;
    if (n > COTENANTS_MAX || sched_getaffinity(0, sizeof(set), &set) != 0)
        return false;
    int cpu = 0;
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &set))
        cpu++;
    if (cpu == CPU_SETSIZE)
        return false;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0)
        return false;
    for (; c->n < n; c->n++)
        if (pthread_create(&c->t[c->n], NULL, cotenant_spin, c) != 0)
            break;
    if (c->n == n)
        return true;
    atomic_store(&c->stop, 1);
    while (c->n > 0)
        pthread_join(c->t[--c->n], NULL);
    return false;
}

/* Stops and joins the spinners (the pin stays: the test's process ends
 * with the test). */
static inline void cotenants_stop(struct cotenants *c)
{
    atomic_store(&c->stop, 1);
    while (c->n > 0)
        pthread_join(c->t[--c->n], NULL);
}

#endif
