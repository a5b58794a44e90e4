/*
 * The worker pool's interface (worker.c): start and stop accel's worker
 * threads, and run what is still queued at a host-driven runtime's
 * destroy. runtime.c calls it; worker.c calls down into visit, park,
 * compensate, the scheduler and rcu only, so the files form no circle
 * (tests/check_layers.sh checks it). One worker's structure is
 * worker_types.h, apart: the monitor (compensate.c), below this pool,
 * reads it.
 */
#ifndef ACCEL_RUNTIME_WORKER_H
#define ACCEL_RUNTIME_WORKER_H

#include "accel/accel.h"
#include "worker_types.h"

int accel__worker_start(accel_runtime *rt);
void accel__worker_stop(accel_runtime *rt);

/* Host-driven runtime destroy: runs what is still queued on the calling
 * thread, as a worker would (no host worker runs any more). */
void accel__worker_run_queued(accel_runtime *rt);

#endif
