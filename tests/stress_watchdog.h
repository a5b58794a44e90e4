/*
 * A stress program's watchdog: a hang (a lost wake-up, an op never
 * completed) must fail the run fast and say where, not sit until ctest's
 * per-test limit. The program names each step as it enters it, with the
 * most that step may take; a thread checks the deadline and, when it
 * passes, prints the step and exits with 124 (timeout's code). The limits
 * are watchdogs, not thresholds: each is many times what the step takes
 * on a loaded machine (sanitizer builds included).
 *
 * A hang seen once must be readable from its log alone: on firing, the
 * watchdog prints the program's own state (watchdog_on_fire) and every
 * thread's stack, from gdb attached to the stuck process (scripts/
 * deps.sh installs it; ACCEL_WATCHDOG_STACKS=0 leaves it out).
 * watchdog_selftest.c checks that both reach the log.
 */
#ifndef ACCEL_TESTS_STRESS_WATCHDOG_H
#define ACCEL_TESTS_STRESS_WATCHDOG_H

#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static _Atomic(const char *) watchdog_step_name = "start";
static _Atomic int64_t watchdog_deadline_ns = INT64_MAX;
static void (*_Atomic watchdog_dump)(void);

/* fn prints what the program knows of its state when the watchdog fires
 * (on the watchdog's thread, while the others are stuck: it must only
 * read, and take no lock they may hold). */
static inline void watchdog_on_fire(void (*fn)(void))
{
    atomic_store(&watchdog_dump, fn);
}

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

/* Every thread's stack, from gdb attached to this process (bounded by
 * timeout(1): a gdb that cannot attach must not hold up the failure). */
static void watchdog_stacks(void)
{
    const char *e = getenv("ACCEL_WATCHDOG_STACKS");
    if (e && strcmp(e, "0") == 0)
        return;
    /* Yama (ptrace_scope 1) lets only ancestors attach: allow our child. */
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    char pid[24];
    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    char *argv[] = {"timeout", "120", "gdb", "-nx", "-batch", "-p", pid,
                    "-ex", "set pagination off",
                    "-ex", "thread apply all bt 40", NULL};
    extern char **environ;
    pid_t child;
    /* gdb writes to stdout: send it to stderr, after the message. */
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, 2, 1);
    fprintf(stderr, "--- every thread's stack (gdb) ---\n");
    fflush(stderr);
    if (posix_spawnp(&child, "timeout", &fa, NULL, argv, environ) != 0) {
        fprintf(stderr, "(no stacks: timeout(1) could not be run)\n");
    } else {
        int st = 0;
        pid_t r;
        do
            r = waitpid(child, &st, 0);
        while (r < 0 && errno == EINTR);
        if (r < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fprintf(stderr, "(gdb ended with status %d: is it installed? "
                            "scripts/deps.sh)\n", st);
    }
    posix_spawn_file_actions_destroy(&fa);
    fprintf(stderr, "--- end of stacks ---\n");
    fflush(stderr);
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
            void (*dump)(void) = atomic_load(&watchdog_dump);
            if (dump) {
                fprintf(stderr, "--- %s's state ---\n", prog);
                dump();
                fflush(stdout);
                fflush(stderr);
            }
            watchdog_stacks();
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
