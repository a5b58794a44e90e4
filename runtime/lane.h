/*
 * The two lanes of workers, in one encoding: a worker index's lane
 * (accel__lane_of_worker), and the mask of a lane (accel__lane_mask), which
 * the scheduler's enqueue returns ORed (ACCEL__SCHED_LANE_*, sched_core.h)
 * for the wake path. Indexes 0..short_lane_workers-1 are the short lane's,
 * the rest (extra workers included) the general lane's. The values are
 * the public ones of the host API (host_wake's lane), so a lane goes to
 * the host as it is.
 */
#ifndef ACCEL_RUNTIME_LANE_H
#define ACCEL_RUNTIME_LANE_H

#include "accel/host.h"

typedef enum accel__lane {
    ACCEL__LANE_GENERAL = 0, /* ops of any cost */
    ACCEL__LANE_SHORT = 1,   /* ops predicted short only (defaults.h) */
} accel__lane;

#define ACCEL__LANES 2u

_Static_assert(ACCEL__LANE_GENERAL == ACCEL_HOST_LANE_GENERAL &&
                   ACCEL__LANE_SHORT == ACCEL_HOST_LANE_SHORT,
               "a lane is passed to host_wake as it is");

/* The lane of worker index `index` (an accel thread or a host worker). */
static inline accel__lane accel__lane_of_worker(unsigned index,
                                              unsigned short_lane_workers)
{
    return index < short_lane_workers ? ACCEL__LANE_SHORT : ACCEL__LANE_GENERAL;
}

/* The bit of `lane` in a mask of lanes. */
static inline unsigned accel__lane_mask(accel__lane lane)
{
    return 1u << lane;
}

#endif
