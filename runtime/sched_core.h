/*
 * The scheduler's internal interface: which runnable session a worker runs
 * next. The workers (worker.c, host.c) pick, visits (visit.c) charge and
 * re-queue, and park.c enqueues for the submit path, through this only;
 * the implementation (sched_wfq.c over the calendar
 * of sched_calendar.c) is described in docs/scheduler.md.
 *
 * Protocol (enforced by SCHED in the ring's tail word, see ring.h): an entity
 * is in the scheduler at most once, between an enqueue and the pick that
 * returns it, and only the worker that picked it charges and re-enqueues
 * it. enqueue and pick may run concurrently from any threads; none of these
 * functions takes a lock.
 *
 * The scheduler reads no clock: the worker measures each visit and passes
 * the service to charge. Driven from one thread with scripted costs, the
 * pick order is a pure function of the calls (tests/unit_sched_model.c).
 */
#ifndef ACCEL_RUNTIME_SCHED_CORE_H
#define ACCEL_RUNTIME_SCHED_CORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "lane.h"

/* Lanes a queued entity may be run by (the result of enqueue): masks of
 * lanes (lane.h). */
#define ACCEL__SCHED_LANE_GENERAL accel__lane_mask(ACCEL__LANE_GENERAL)
#define ACCEL__SCHED_LANE_SHORT accel__lane_mask(ACCEL__LANE_SHORT)

/* op_served's unit: 64 ns, so that 16 bits (in the entity's padding) hold
 * up to 4.2 ms, past the default quantum. */
#define ACCEL__SCHED_SERVED_UNIT 64u

/* Embedded in each session. The scheduler owns every field but weight,
 * which accel_session_set_priority() stores (relaxed: enqueue reads it
 * once per visit, "from the next visit" is the contract), and hint, which
 * is its owner's. The other fields are written only by the entity's
 * current holder (the enqueuer, then the picking worker: the calendar's
 * push/pop hand them over); vtime is atomic because stats read it from any
 * thread. 56 bytes: the session keeps it on one line with the counters a
 * visit bumps (session.h). */
typedef struct accel__sched_entity {
    _Atomic uint32_t weight;    /* 1..ACCEL_PRIORITY_MAX (1000) */
    uint16_t w;                 /* weight of the current/coming visit */
    uint16_t vrem;              /* service not yet turned into vtime (< w) */
    uint32_t hint;              /* the owner's, opaque here: written by the
                                   holder before an enqueue, handed back by
                                   accel__sched_peek (the session: where its
                                   next visit's first slot is, to prefetch) */
    _Atomic uint8_t cls;        /* calendar: 0 general, 1 short (relaxed:
                                   stats read it) */
    uint8_t seen;               /* ever charged */
    uint16_t op_served;         /* moving average of an op's served time
                                   (its service less its blocked time), in
                                   units of ACCEL__SCHED_SERVED_UNIT ns,
                                   saturating, while under half of
                                   op_cost_ns; else 0 (sched_wfq.c,
                                   track_served): the quota of a session
                                   whose ops wait (accel__sched_visit_ops) */
    _Atomic uint64_t vtime;     /* virtual time: ns of service / weight;
                                   while queued, the virtual start tag of
                                   the coming visit */
    uint64_t deadline;          /* vtime + visit_cost_ns / w, at enqueue */
    uint64_t visit_cost_ns;     /* moving average of a visit's service */
    uint64_t op_cost_ns;        /* moving average of an op's service */
    void *owner;                /* the session */
} accel__sched_entity;

/* Whether e's ops mostly wait (op_served is tracked): its visits may run
 * on past a quantum of wall time (visit.h, blocked). The visiting
 * worker's read, between its visits' charges. */
static inline bool accel__sched_entity_waits(const accel__sched_entity *e)
{
    return e->op_served != 0;
}

typedef struct accel__sched_config {
    unsigned workers;
    unsigned short_lane_workers;
    uint64_t short_op_ns;
    uint32_t quantum_ops;
    uint64_t quantum_ns;
    uint32_t max_entities;      /* capacity: entities that may be runnable */
    unsigned bucket_shift;      /* deadline bucket = 2^shift virtual ns;
                                   0: derived from quantum_ns */
    /* Called from a pick that set a calendar bit back after clearing it
     * (lanes: the workers that may run that class): a look meanwhile may
     * have missed the bucket, so a parked worker must be woken. NULL:
     * none (one-thread tests). */
    void (*restored)(void *arg, unsigned lanes);
    void *restored_arg;
} accel__sched_config;

typedef struct accel__sched accel__sched;

int accel__sched_create(const accel__sched_config *cfg, accel__sched **out);
void accel__sched_destroy(accel__sched *s);

/* Sets up a new entity (weight given). */
void accel__sched_entity_init(accel__sched *s, accel__sched_entity *e,
                              uint32_t weight, void *owner);

/* e became runnable: woke = true when it was idle (it starts at the global
 * virtual time, no banked credit), false when a worker re-queues it after
 * a visit. Returns the lanes (ACCEL__SCHED_LANE_*) whose workers may run
 * it: the caller must make sure a worker of one of them will pick (wake
 * one, or be one). Lock-free. */
unsigned accel__sched_enqueue(accel__sched *s, accel__sched_entity *e,
                              bool woke);

/* As enqueue, for a worker of `lane` that will pick right after: when
 * that pick would return e (its deadline bucket is at or before the
 * first non-empty bucket the lane's pick looks at, with pick's tie
 * rules), e is not queued but handed to the caller as picked: *taken =
 * true, returns 0, and the caller holds e as pick's caller would
 * (charge, re-enqueue). Else as enqueue (*taken = false). The order is
 * the scheduler's either way: a push and that pick, without the
 * calendar's round trip. Lock-free. */
unsigned accel__sched_enqueue_or_take(accel__sched *s, accel__sched_entity *e,
                                      bool woke, accel__lane lane,
                                      bool *taken);
/* Removes and returns the entity a worker of `lane` should run next
 * (an accel__lane: ACCEL__LANE_GENERAL or _SHORT), NULL when none is
 * runnable for that lane. Lock-free; may call cfg.restored (a repair of
 * the calendar set a bit back: the runtime's wake path). */
accel__sched_entity *accel__sched_pick(accel__sched *s, accel__lane lane);

/* A hint, not a claim: up to max entities a worker of `lane` would likely
 * pick next (the top of the first non-empty bucket and those under it, in
 * that bucket only) in e[], and in hint[] each entity's `hint` as it was
 * when it was queued; returns how many. An entity may be picked by another
 * worker, or even be freed, by the time the caller looks: use both only
 * to prefetch, never dereference an entity. It also prefetches the queue
 * node under the last one, so that the next peek does not wait for
 * memory. Lock-free, read-only. */
unsigned accel__sched_peek(accel__sched *s, accel__lane lane,
                          accel__sched_entity **e, uint32_t *hint,
                          unsigned max);

/* How many entities a worker of `lane` could pick now, counted up to
 * max (1: whether its pick would find one). A hint, not a claim: others
 * may pick or queue meanwhile. Lock-free, read-only (it reads around
 * the calendar's stale bits: sched_calendar.c). */
unsigned accel__sched_queued(accel__sched *s, accel__lane lane, unsigned max);

/* How many ops the coming visit of e may run (the quantum in ops, shortened
 * so that it is expected to fit quantum_ns). Only the picking worker. */
uint32_t accel__sched_visit_ops(const accel__sched *s,
                                const accel__sched_entity *e);

/* Charges a finished visit with its measured service, of which
 * blocked_ns its worker spent blocked, compensated (compensate.h): the
 * share is charged only the rest (another worker ran other sessions in
 * that time, so it cost them nothing), and so is the visit cost that
 * sets its deadline; the op cost (quota, lane) is of the whole visit. Only the picking worker, before it re-enqueues or
 * idles e. */
void accel__sched_charge(accel__sched *s, accel__sched_entity *e,
                         uint64_t service_ns, uint64_t blocked_ns,
                         uint32_t ops);

/* Holding an entity back (batching's hold-back, docs/batching.md): its
 * holder takes it out of the scheduler's view for a while, with ops
 * queued, and puts it back later. accel__sched_hold charges the finished
 * visit as accel__sched_charge does (a visit of no ops: the share only,
 * no cost average, so that short hold visits do not make the session's
 * visits look cheap) and returns the entity's place against the system
 * virtual time: vtime - V, + when it is ahead. accel__sched_release
 * enqueues it as a re-queue (the lag cap applies) with vtime = V' + that
 * place, V' the system virtual time then: the wait neither earns credit
 * (as sleeping does not) nor costs the credit or debt it had. Only the
 * holder (hold; release: whoever took the hold over from it). Release
 * returns enqueue's lanes. */
int64_t accel__sched_hold(accel__sched *s, accel__sched_entity *e,
                          uint64_t service_ns, uint64_t blocked_ns,
                          uint32_t ops);
unsigned accel__sched_release(accel__sched *s, accel__sched_entity *e,
                              int64_t place);

/* An entity's virtual time, and its lag against its ideal share (for
 * stats): lag = (V - vtime) * weight, + when it is owed service. Any
 * thread; approximate while workers run. */
uint64_t accel__sched_vtime_of(const accel__sched *s,
                               const accel__sched_entity *e);
int64_t accel__sched_lag(const accel__sched *s, const accel__sched_entity *e);

/* ---- Internal to the scheduler: the calendar (sched_calendar.c). ----
 * A circular array of ACCEL__CAL_BUCKETS deadline buckets, each a lock-free
 * LIFO of node indices with a tagged head, and a two-level find-first-set
 * bitmap of the non-empty ones. Nodes come from a type-stable array shared
 * by the calendars of one scheduler (never freed while it lives), so a
 * popper may read a node that was popped under it without use-after-free,
 * and the tag in the head rules out ABA. */
#define ACCEL__CAL_BUCKETS 4096u

typedef struct accel__sched_node {
    _Atomic uint32_t next;      /* index, 0 = none */
    _Atomic uint32_t hint;      /* the entity's hint when it was queued
                                   (relaxed, as e: a hint) */
    _Atomic(accel__sched_entity *) e; /* written by the holder before a
                                         push (relaxed: the push's CAS
                                         publishes it); atomic because
                                         accel__sched_peek reads it as a
                                         hint, racing with a reuse */
} accel__sched_node;

typedef struct accel__sched_nodes {
    accel__sched_node *v;       /* v[0] unused: index 0 is "none" */
    uint32_t cap;
    _Alignas(64) _Atomic uint64_t free_head; /* {tag:32, index:32} */
    _Alignas(64) _Atomic uint32_t fresh;     /* never used yet: fresh.. */
    size_t map_bytes;
} accel__sched_nodes;

typedef struct accel__sched_cal {
    _Alignas(64) _Atomic uint64_t top;              /* word w may be set */
    _Alignas(64) _Atomic uint64_t words[ACCEL__CAL_BUCKETS / 64];
    _Alignas(64) _Atomic uint64_t heads[ACCEL__CAL_BUCKETS];
} accel__sched_cal;

int accel__sched_nodes_init(accel__sched_nodes *n, uint32_t cap);
void accel__sched_nodes_fini(accel__sched_nodes *n);
uint32_t accel__sched_node_get(accel__sched_nodes *n);
void accel__sched_node_put(accel__sched_nodes *n, uint32_t idx);

/* Pushes node idx into bucket and marks the bucket non-empty. */
void accel__sched_cal_push(accel__sched_cal *c, accel__sched_nodes *n,
                           unsigned bucket, uint32_t idx);
/* First bucket at or after `from` (circularly) that looks non-empty, or -1.
 * restored NULL: a look, which reads around stale top bits. Else a
 * pick's look, which clears them (the top of sched_calendar.c) and sets
 * *restored when it set one back: a concurrent look may have missed that
 * bucket, so the caller wakes a parked worker for it. */
int accel__sched_cal_first(accel__sched_cal *c, unsigned from,
                           bool *restored);
/* Pops a node of bucket (0 if it was empty; then its bit is cleared unless a
 * push raced, so the next first() moves on). Sets *restored when it set the
 * bit back after clearing it, as first(). */
uint32_t accel__sched_cal_pop(accel__sched_cal *c, accel__sched_nodes *n,
                              unsigned bucket, bool *restored);
/* A test's seam in the calendar's repair windows (sched_calendar.c). */
extern void (*_Atomic accel__cal_window_hook)(accel__sched_cal *c,
                                              unsigned where);

#endif
