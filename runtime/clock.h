/* Monotonic time in ns, and deadline arithmetic for relative timeouts. */
#ifndef ACCEL_RUNTIME_CLOCK_H
#define ACCEL_RUNTIME_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* Clock c in ns; false (and 0) if it cannot be read (a thread's CPU
 * clock on a system without one). */
static inline bool accel__clock_ns(clockid_t c, uint64_t *ns)
{
    struct timespec ts;
    if (clock_gettime(c, &ts) != 0) {
        *ns = 0;
        return false;
    }
    *ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return true;
}

static inline uint64_t accel__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Absolute deadline for a relative timeout; UINT64_MAX for no limit. */
static inline uint64_t accel__deadline(int64_t timeout_ns)
{
    if (timeout_ns < 0)
        return UINT64_MAX;
    return accel__now_ns() + (uint64_t)timeout_ns;
}

/* ns left until deadline: -1 for no limit, 0 when passed. */
static inline int64_t accel__remaining(uint64_t deadline)
{
    if (deadline == UINT64_MAX)
        return -1;
    uint64_t now = accel__now_ns();
    return now >= deadline ? 0 : (int64_t)(deadline - now);
}

#endif
