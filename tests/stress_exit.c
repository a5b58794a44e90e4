/*
 * Process exit while other threads still call into the default runtime.
 * Threads hammer a session of accel_runtime_default() (stats, submit,
 * sync) while main returns; an exit handler that runs after the library's
 * own exit-time work then uses the runtime too, and must find it working
 * (under ASan, the old exit-time destroy made every one of these calls a
 * use-after-free). Exit 0 = pass; a hang is named and failed by the
 * watchdog (stress_watchdog.h), exit code 124.
 *
 * Promises: none
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "core_util.h"
#include "stress_watchdog.h"

#define THREADS 4

static accel_session *g_s;
static _Atomic int ready;

static int op_seven(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    return 7;
}

static void *hammer(void *arg)
{
    (void)arg;
    accel_op op = {.fn = op_seven};
    accel_session_stats st;
    for (unsigned long i = 0;; i++) {
        if (accel_session_get_stats(g_s, &st) != ACCEL_OK ||
            st.completed + st.failed > st.submitted) {
            fprintf(stderr, "stress_exit: bad stats during exit\n");
            _exit(1);
        }
        (void)accel_submit(g_s, &op, ACCEL_NO_WAIT);
        if ((i & 15) == 0)
            (void)accel_session_sync(g_s, 1000000);
        if (i == 100)
            atomic_fetch_add_explicit(&ready, 1, memory_order_release);
    }
    return NULL;
}

/* Registered before the default runtime exists, so it runs after every
 * exit handler the library registers. */
static void late_exit_handler(void)
{
    accel_session_stats st;
    int rc = accel_session_get_stats(g_s, &st);
    int w = accel_submit_wait(g_s, op_seven, NULL, ACCEL_FOREVER);
    if (rc != ACCEL_OK || w != 7 || accel_session_is_closed(g_s)) {
        fprintf(stderr,
                "stress_exit: the default runtime is gone at exit "
                "(stats %d, submit_wait %d)\n",
                rc, w);
        _exit(1);
    }
    printf("stress_exit: default runtime usable during exit; %llu ops "
           "accepted\n",
           (unsigned long long)st.submitted);
    fflush(stdout);
}

int main(void)
{
    /* A hang (at exit too: the watchdog thread runs until the process
     * ends) fails the test and names its step instead of stalling it. */
    watchdog_start("stress_exit");
    watchdog_step("the default runtime and the hammer threads start", 120);
    atexit(late_exit_handler);
    accel_runtime *rt = accel_runtime_default();
    if (!rt)
        return 1;
    g_s = tu_open(rt, "exit", 64, 0);
    if (!g_s)
        return 1;
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&th[i], NULL, hammer, NULL) != 0)
            return 1;
    while (atomic_load_explicit(&ready, memory_order_acquire) < THREADS)
        tu_nap_us(100);
    watchdog_step("exit() while the threads keep calling", 120);
    return 0; /* exit() while the threads keep calling */
}
