/*
 * The worker pool's interface (worker.c): start and stop the workers, put
 * a session a thread now owns into the scheduler, wake a parked worker.
 * runtime.c starts and stops the pool, submit.c enqueues; worker.c calls
 * down into session, progress and rcu only, so the files form no circle
 * (tests/check_layers.sh checks it).
 */
#ifndef ACCEL_RUNTIME_WORKER_H
#define ACCEL_RUNTIME_WORKER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "accel/accel.h"
#include "lane.h"

int accel__workers_start(accel_runtime *rt);
void accel__workers_stop(accel_runtime *rt);

/* Puts a session whose SCHED this thread owns into the scheduler and
 * wakes a worker that may run it. new_claim: the reservation set SCHED
 * (takes the scheduler's ref; the session starts at the global virtual
 * time); false: a deferred session was claimed (the ref came with it). */
void accel__workers_enqueue(accel_session *s, bool new_claim);

/* As accel__workers_enqueue(s, true), for a host slot of `lane` that
 * picks right after: when that pick would return s, s is handed to it
 * instead (true: the caller begins its visit; no calendar round trip and
 * no wake, since the caller runs it), else enqueued and a worker woken
 * as there (false). */
bool accel__workers_enqueue_or_take(accel_session *s, accel__lane lane);

/* Wakes one parked worker of the lanes in mask (ACCEL__SCHED_LANE_*, as
 * returned by accel__sched_enqueue), a short-lane one first, claiming it:
 * a second wake before it runs goes to another parked worker. Hot path: a
 * compiler barrier and a relaxed load when no worker is parked. */
void accel__worker_wake_lanes(accel_runtime *rt, unsigned lanes);

/* Counters of the consumer side have one writer at a time: the worker
 * holding SCHED (deferred completions run in its poll too), handed over
 * with [R3]/[A3] (ring.h); a worker's own picks/visits/parks have one
 * writer, the worker (or the one host thread driving its slot). So a
 * plain load and store, no locked RMW; relaxed, they order nothing by
 * themselves (finished does, [R5]). */
static inline void accel__bump(_Atomic uint64_t *c, uint64_t by)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + by,
                          memory_order_relaxed);
}

/* One visit: its worker is the ring's only consumer from the pick to
 * accel__visit_end. The visit code is shared by accel's worker threads
 * (worker.c) and host-driven workers (host.c). */
typedef struct accel__visit {
    accel_runtime *rt;
    accel_session *s;
    uint64_t h;           /* next position to take */
    uint64_t t0;          /* when the visit began */
    uint32_t quota;       /* ops it may run */
    uint32_t n;           /* ops taken */
    uint32_t every;       /* ops between clock checks */
    uint32_t until_check;
    uint32_t run_max;     /* ops one run of takes may hold */
    /* accel__tls_current when the visit began, put back at its end: a
     * visit may nest inside an op of another session on this thread
     * (destroy running a host-driven runtime's ops, a second host slot),
     * and that op must still be known as its session's. */
    accel_session *outer;
} accel__visit;

/* Most ops one run of takes copies out (on the stack) before it releases
 * head once for all of them. */
#define ACCEL__TAKE_MAX 32u

/* Opens a visit of s (picked by this worker) at now: its op quota, clock
 * checks and run size; marks s as this thread's running session. */
void accel__visit_begin(accel__visit *v, accel_runtime *rt, accel_session *s,
                        uint64_t now);
/* Copies up to max published ops at the visit's position into ops[]
 * and releases the positions before the first EX op (ring.h); *ex has a
 * bit per EX op of the run, which accel__visit_claim must claim before
 * it runs. Returns how many (0: nothing published). */
uint32_t accel__visit_take(accel__visit *v, accel_op *ops, uint32_t max,
                           uint32_t *ex);
/* Claims the EX op ops[i] of the run of k taken at h0: returns the status
 * it completes with unrun (ECANCELED, ECLOSED, EEXPIRED), else 0. */
int accel__visit_claim(accel__visit *v, uint64_t h0, uint32_t i, uint32_t *ex,
                       uint32_t k);
/* Runs the visit's ops in C (fn, or the backend) until its quota, the
 * clock or the ring ends it. */
void accel__visit_run(accel__visit *v);
/* Ends the visit: charges the service, re-queues or leaves the session
 * (ring.h); *now: the end time. Returns the lanes that may run it if
 * re-queued, else 0. */
unsigned accel__visit_end(accel__visit *v, uint64_t *now);

/* The idle announcement (the top of worker.c): a worker of lane counts
 * itself parked, then a full barrier (pairs with a waker's fence_hot);
 * it must pick once more before it sleeps. */
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

/* Host-driven runtime destroy: runs what is still queued on the calling
 * thread, as a worker would (no host worker runs any more). */
void accel__workers_run_queued(accel_runtime *rt);

#endif
