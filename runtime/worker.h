/*
 * The worker pool's interface (worker.c): start and stop the workers, put
 * a session a thread now owns into the scheduler, wake a parked worker.
 * runtime.c starts and stops the pool, submit.c enqueues; worker.c calls
 * back into session.h and progress.h only, so the files form no circle.
 */
#ifndef ACCEL_RUNTIME_WORKER_H
#define ACCEL_RUNTIME_WORKER_H

#include <stdbool.h>

#include "accel/accel.h"

int accel__workers_start(accel_runtime *rt);
void accel__workers_stop(accel_runtime *rt);

struct accel__worker;
/* Names a started worker's thread (accel-w<k>, accel-short<k>) and pins it
 * when the config has worker_cpus (cpu_limits.c). */
void accel__worker_setup_thread(accel_runtime *rt, struct accel__worker *w);

/* Puts a session whose SCHED this thread owns into the scheduler and
 * wakes a worker that may run it. new_claim: the reservation set SCHED
 * (takes the scheduler's ref; the session starts at the global virtual
 * time); false: a deferred session was claimed (the ref came with it). */
void accel__workers_enqueue(accel_session *s, bool new_claim);

/* Wakes one parked worker of the lanes in mask (ACCEL__SCHED_LANE_*, as
 * returned by accel__sched_enqueue), a short-lane one first, claiming it:
 * a second wake before it runs goes to another parked worker. Hot path: a
 * compiler barrier and a relaxed load when no worker is parked. */
void accel__runtime_wake_lanes(accel_runtime *rt, unsigned lanes);

#endif
