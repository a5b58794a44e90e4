/*
 * The state of compensation for blocked workers (compensate.c): the
 * hooks the worker pool hands it and the cold half of its state, which
 * the runtime object embeds (runtime_types.h). A structure apart from
 * compensate.c's functions (compensate.h), so that the runtime object and
 * the files that read it need not include them.
 */
#ifndef ACCEL_RUNTIME_COMPENSATE_TYPES_H
#define ACCEL_RUNTIME_COMPENSATE_TYPES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "accel/accel.h"

struct accel__worker;

/* The worker pool's side (worker.c, park.c), handed to accel__compensate_start. */
typedef struct accel__compensate_ops {
    /* The loop of an extra worker: returns once it retires (it took
     * itself out of extra_active) or the runtime stops. */
    void (*run_extra)(struct accel__worker *w);
    /* Claims and wakes one parked general worker: true if there was
     * one. */
    bool (*wake_parked)(accel_runtime *rt);
} accel__compensate_ops;

/* The cold half of the state (the hot counters sit on the runtime's
 * parking line, runtime_types.h). */
typedef struct accel__compensate {
    accel__compensate_ops ops;
    unsigned extra_max;      /* cap on extra workers (config) */
    uint64_t detect_ns;      /* block_detect_ns (config) */
    /* Extra threads: started, retired and joined under lock. Reached
     * only by calls on a live runtime of this process (spawns, stop, the
     * monitor): a fork child returns ECLOSED before any of them, so the
     * child never takes it (fork.c). */
    pthread_mutex_t lock;
    bool stopping;           /* under lock: no more spawns */
    unsigned extras_used;     /* under lock: extra workers ever started
                                (the monitor scans no further) */
    bool monitor_started;
    pthread_t monitor;
    _Atomic uint32_t monitor_stop; /* futex word of the monitor's tick */
    /* counters; presumed: visits begun counted blocked because their
     * session's last visit waited (compensate.c) */
    _Atomic uint64_t started, retired, detected, presumed;
} accel__compensate;

#endif
