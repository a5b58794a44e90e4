/*
 * Parking and waking workers (park.c): a session put into the scheduler
 * wakes a parked worker that may run it; a worker with nothing to run
 * parks until then. Used by submit.c (enqueue), the worker pool
 * (worker.c) and host-driven workers (host.c); it calls down into the
 * scheduler, session and compensate.c only.
 */
#ifndef ACCEL_RUNTIME_PARK_H
#define ACCEL_RUNTIME_PARK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "accel/accel.h"
#include "lane.h"
#include "sched_core.h"

struct accel__worker;

/* Puts a session whose SCHED this thread owns into the scheduler and
 * wakes a worker that may run it. new_claim: the reservation set SCHED
 * (takes the scheduler's ref; the session starts at the global virtual
 * time); false: a deferred session was claimed (the ref came with it). */
void accel__park_enqueue(accel_session *s, bool new_claim);

/* As accel__park_enqueue(s, true), for a host worker of `lane` that picks
 * right after: when that pick would return s, s is handed to it instead
 * (true: the caller begins its visit; no calendar round trip and no
 * wake, since the caller runs it), else enqueued and a worker woken as
 * there (false). */
bool accel__park_enqueue_or_take(accel_session *s, accel__lane lane);

/* Wakes one parked worker of the lanes in mask (ACCEL__SCHED_LANE_*, as
 * returned by accel__sched_enqueue), a short-lane one first, claiming it:
 * a second wake before it runs goes to another parked worker. Only right
 * after this thread's accel__sched_enqueue returned mask: that push's
 * seq_cst RMWs are the caller's half of the parking pair (park.c) and of
 * the blocked hand-off (compensate.c). Hot path: a compiler barrier and three plain loads (on
 * x86) when no worker is parked. */
void accel__park_wake_lanes(accel_runtime *rt, unsigned lanes);

/* The compensation's hook (compensate.h: wake_parked): claims and wakes
 * one parked general worker; false when none is parked unclaimed. */
bool accel__park_wake_general(accel_runtime *rt);

/* The scheduler's hook (accel__sched_config.restored; arg: the runtime):
 * a pick set a calendar bit back that a parking worker's, a blocker's or
 * the monitor's look may have missed; the wake path of a push
 * (accel__park_wake_lanes), its set back, a seq_cst RMW, standing for
 * the push. */
void accel__park_restored(void *arg, unsigned lanes);

/* A worker thread with nothing to run: spins a little, then parks on its
 * lane's futex word until a wake, the runtime's stop or timeout_ns (< 0:
 * none). Returns the entity its pick after the announcement found, else
 * NULL; *timed_out: an extra worker's park (timeout_ns >= 0) ran out (it
 * has retired: compensate.c). */
accel__sched_entity *accel__park_worker(accel_runtime *rt,
                                        struct accel__worker *w,
                                        int64_t timeout_ns, bool *timed_out);

/* The idle announcement (the top of park.c): a worker of lane counts
 * itself parked, then a seq_cst fence (pairs with a waker's seq_cst push
 * and load of the count); it must pick once more before it sleeps. */
void accel__park_announce(accel_runtime *rt, accel__lane lane);
/* Test seam (unit_regressions.c): when set, called by a parking worker
 * after its last pick and before it announces itself, the window where a
 * submit finds no parked worker to wake. NULL outside tests. */
extern void (*_Atomic accel__park_window_hook)(accel_runtime *rt,
                                               unsigned lane);
/* Test seam (unit_regressions.c): when set, called by a waker after its
 * claim on a parked worker of lane and before its park_seq bump and futex
 * wake, the window where a preempted waker holds a claim it has not sent.
 * NULL outside tests. */
extern void (*_Atomic accel__wake_window_hook)(accel_runtime *rt,
                                               unsigned lane);
/* A parked worker leaves (found: its pick after the announcement found
 * work, so a claim it takes is passed on). */
void accel__park_leave(accel_runtime *rt, accel__lane lane, bool found);

#endif
