/*
 * A stress program's watchdog: a hang (a lost wake-up, an op never
 * completed) must fail the run fast and say where, not sit until ctest's
 * per-test limit. The program names each step as it enters it, with the
 * most that step may take; a thread checks the deadline and, when it
 * passes, prints the step and exits with 124 (timeout's code). The limits
 * are watchdogs, not thresholds: each is many times what the step takes
 * on a loaded machine (sanitizer builds included).
 */
#ifndef ACCEL_TESTS_STRESS_WATCHDOG_H
#define ACCEL_TESTS_STRESS_WATCHDOG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static _Atomic(const char *) watchdog_step_name = "start";
static _Atomic int64_t watchdog_deadline_ns = INT64_MAX;

static inline int64_t watchdog_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Enters step `name`, which may take at most `limit_s` seconds. */
static inline void watchdog_step(const char *name, double limit_s)
{
    atomic_store(&watchdog_step_name, name);
    atomic_store(&watchdog_deadline_ns,
                 watchdog_now_ns() + (int64_t)(limit_s * 1e9));
}

static void *watchdog_main(void *arg)
{
    const char *prog = arg;
    for (;;) {
        struct timespec nap = {0, 100 * 1000 * 1000};
        nanosleep(&nap, NULL);
        int64_t d = atomic_load(&watchdog_deadline_ns);
        if (watchdog_now_ns() > d) {
            fprintf(stderr, "%s: WATCHDOG: stuck in step \"%s\" past its "
                            "limit; failing the run\n",
                    prog, atomic_load(&watchdog_step_name));
            fflush(stderr);
            _exit(124);
        }
    }
    return NULL;
}

/* Starts the watchdog thread (detached; it dies with the process). */
static inline void watchdog_start(const char *prog)
{
    pthread_t t;
    if (pthread_create(&t, NULL, watchdog_main, (void *)prog) == 0)
        pthread_detach(t);
}

#endif
