/* Shared by the plain main() CUDA tests (tests/cuda_*.c). */
#ifndef ACCEL_TESTS_CUDA_CHECK_H
#define ACCEL_TESTS_CUDA_CHECK_H

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <accel/accel.h>
#include <accel/cuda.h>

#define CHECK(c)                                                              \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
                    #c);                                                      \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

#define CHECK_EQ(a, b)                                                        \
    do {                                                                      \
        long long a_ = (long long)(a), b_ = (long long)(b);                   \
        if (a_ != b_) {                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld vs %lld)\n", \
                    __FILE__, __LINE__, #a, #b, a_, b_);                      \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

/* The watchdog: a hang fails fast with the step it was stuck at, before
 * the caller's limit (CTest's TIMEOUT, gpu-check.sh's timeout) kills the
 * program without a word. relaxed: the handler needs some recent step. */
static _Atomic(const char *) cuda_step_now = "start";

static inline void cuda_step(const char *what)
{
    atomic_store_explicit(&cuda_step_now, what, memory_order_relaxed);
}

static void cuda_watchdog_fired(int sig)
{
    (void)sig;
    const char *at = atomic_load_explicit(&cuda_step_now, memory_order_relaxed);
    static const char msg[] = "watchdog: stuck at: ";
    (void)!write(2, msg, sizeof(msg) - 1);
    (void)!write(2, at, strlen(at));
    (void)!write(2, "\n", 1);
    _exit(1);
}

static inline void cuda_watchdog(unsigned seconds)
{
    signal(SIGALRM, cuda_watchdog_fired);
    alarm(seconds);
}

/* A runtime with a usable CUDA device, or exit 77 (skipped). */
static inline accel_runtime *cuda_runtime_or_skip(unsigned workers)
{
    accel_runtime *rt;
    accel_runtime_config cfg = {.workers = workers};
    CHECK_EQ(accel_runtime_create(&cfg, &rt), ACCEL_OK);
    int st = accel_runtime_cuda_status(rt);
    if (st != ACCEL_OK) {
        printf("no usable CUDA device (%s): skipped\n", accel_strerror(st));
        CHECK_EQ(accel_runtime_destroy(rt), ACCEL_OK);
        exit(77);
    }
    return rt;
}

#endif
