/*
 * The scheduler's internal interface: which runnable session a worker runs
 * next. The worker pool (worker.c) and the submit path (submit.c) use only
 * this; the implementation behind it is replaceable.
 *
 * Protocol (enforced by the session state word, see session.h): an entity
 * is in the scheduler at most once, between an enqueue and the pick that
 * returns it, and only the worker that picked it charges and re-enqueues
 * it. enqueue and pick may run concurrently from any threads; none of these
 * functions takes a lock.
 */
#ifndef ACCEL_RUNTIME_SCHED_H
#define ACCEL_RUNTIME_SCHED_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Embedded in each session. The scheduler owns every field but weight,
 * which accel_session_set_priority() stores (relaxed: a visit reads it
 * once, "from the next visit" is the contract). */
typedef struct accel__sched_entity {
    _Atomic uint32_t weight;    /* 1..1000 */
    uint64_t vtime;             /* virtual time, ns of service / weight */
    uint64_t visit_cost_ns;     /* moving average of a visit's service */
    uint64_t op_cost_ns;        /* moving average of an op's service */
    uint64_t service_ns;        /* total charged */
    uint64_t visits;
    uint64_t opened_vtime;      /* global V when the entity was created */
    void *owner;                /* the session */
} accel__sched_entity;

typedef struct accel__sched_config {
    unsigned workers;
    unsigned short_lane_workers;
    uint64_t short_op_ns;
    uint32_t quantum_ops;
    uint64_t quantum_ns;
    uint32_t max_entities;      /* capacity: entities that may be runnable */
} accel__sched_config;

typedef struct accel__sched accel__sched;

int accel__sched_create(const accel__sched_config *cfg, accel__sched **out);
void accel__sched_destroy(accel__sched *s);

/* Sets up a new entity (weight given). */
void accel__sched_entity_init(accel__sched *s, accel__sched_entity *e,
                              uint32_t weight, void *owner);

/* e became runnable: woke = true when it was idle (it starts at the global
 * virtual time, no banked credit), false when a worker re-queues it after
 * a visit. Lock-free. */
void accel__sched_enqueue(accel__sched *s, accel__sched_entity *e, bool woke);

/* Removes and returns the entity a worker of `lane` should run next
 * (lane 0: general workers, 1: short-lane workers), NULL when none is
 * runnable for that lane. Lock-free. */
accel__sched_entity *accel__sched_pick(accel__sched *s, unsigned lane);

/* How many ops the coming visit of e may run (the quantum in ops, shortened
 * so that it is expected to fit quantum_ns). Only the picking worker. */
uint32_t accel__sched_visit_ops(const accel__sched *s,
                                const accel__sched_entity *e);

/* Charges a finished visit with its measured service. Only the picking
 * worker, before it re-enqueues or idles e. */
void accel__sched_charge(accel__sched *s, accel__sched_entity *e,
                         uint64_t service_ns, uint32_t ops);

/* Global virtual time, and an entity's lag against its ideal share (for
 * stats). Any thread; approximate while workers run. */
uint64_t accel__sched_vtime(const accel__sched *s);
uint64_t accel__sched_vtime_of(const accel__sched *s,
                               const accel__sched_entity *e);
int64_t accel__sched_lag(const accel__sched *s, const accel__sched_entity *e);

#endif
