/*
 * The visit engine's interface (visit.c): open a visit of a picked
 * session, take and claim its ops, run them, end the visit. accel's
 * worker threads (worker.c) and host-driven workers (host.c) drive it;
 * it calls down into session, waiters, the scheduler and rcu only.
 */
#ifndef ACCEL_RUNTIME_VISIT_H
#define ACCEL_RUNTIME_VISIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "accel/accel.h"
#include "session.h"
#include "trace.h"

/* Counters of the consumer side have one writer at a time: the worker
 * holding SCHED (deferred completions run in its poll too), handed over
 * with [R3]/[A3] (ring.h); a worker's own picks/visits/parks have one
 * writer, the worker (or the one host thread driving its index). So a
 * plain load and store, no locked RMW; relaxed, they order nothing by
 * themselves (finished does, [R5]). */
static inline void accel__bump(_Atomic uint64_t *c, uint64_t by)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + by,
                          memory_order_relaxed);
}

/* An op's end, the same at each place one ends (its run in a visit, a
 * host's end of visit, a backend's later completion): counted completed
 * or failed if it ran (ran false: canceled, expired or closed, counted
 * when that status was known), then its done callback, so that whoever
 * the callback wakes sees the counters. `finished`, which sleepers read,
 * is the caller's to store, once per run (accel__waiters_finished). */
static inline void accel__visit_op_done(accel_session *s, const accel_op *op,
                                        int status, bool ran)
{
    if (ran)
        accel__bump(status == 0 ? &s->completed : &s->failed, 1);
    /* op_done(session, arg, status) */
    ACCEL_TRACE3(op_done, s, op->arg, status);
    if (op->done)
        op->done(op->arg, status);
}

/* One visit: its worker is the ring's only consumer from the pick to
 * accel__visit_end. */
typedef struct accel__visit {
    accel_runtime *rt;
    accel_session *s;
    uint64_t h;           /* next position to take */
    uint64_t t0;          /* when the visit began */
    /* Of the visit's time, how long its worker sat blocked (set by the
     * host worker before accel__visit_end; 0 unless it knows): not charged to
     * the session's share (accel__sched_charge). */
    uint64_t blocked_ns;
    uint32_t quota;       /* ops it may run */
    uint32_t n;           /* ops taken */
    uint32_t every;       /* ops between clock checks */
    uint32_t until_check;
    uint32_t run_max;     /* ops one run of takes may hold */
    /* Wall time past t0 + quantum_ns the clock check lets the visit run
     * on: where its served time could first reach quantum_ns (0 at first:
     * set by the check, never at the begin). */
    uint64_t extend_ns;
    /* Set by a worker that can tell its blocked time so far in the visit
     * (worker.c): the visit ends at quantum_ns of served time, not of
     * wall time, so a session whose ops wait runs on while its worker's
     * place is taken (compensate.h). NULL: of wall time. */
    uint64_t (*blocked)(void *arg, uint64_t t0);
    void *blocked_arg;
    /* accel__tls_current when the visit began, put back at its end: a
     * visit may nest inside an op of another session on this thread
     * (destroy running a host-driven runtime's ops, a second host worker),
     * and that op must still be known as its session's. */
    accel_session *outer;
    /* Set by a batch visit that holds its session back (batch.c): the
     * visit's end is that call's (it charges the service and holds the
     * session, or re-queues it), with the release time. NULL otherwise. */
    unsigned (*hold_end)(struct accel__visit *v, uint64_t service_ns);
    uint64_t release_at;
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
/* Ends the visit: charges the service (less blocked_ns to the share),
 * re-queues or leaves the session
 * (ring.h); *now: the end time. Returns the lanes that may run it if
 * re-queued, else 0. */
unsigned accel__visit_end(accel__visit *v, uint64_t *now);

#endif
