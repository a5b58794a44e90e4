/*
 * The fair reference of accel-nodesim's share error: an ideal fluid
 * weighted-fair server (generalised processor sharing, GPS) fed the same
 * arrivals as the systems under test, under the same rules.
 *
 * At every instant the capacity is split among the chains that have work
 * queued, weighted max-min: chain i gets weight_i x level, at most one
 * worker's part of the capacity (a chain's ops run one at a time), the
 * level rising until the capacity is used or every backlogged chain is at
 * its cap. A chain's ops are served in arrival order; an op that reaches
 * the head of its chain after its deadline is dropped unserved (the op
 * body's rule: an op that cannot start by its deadline does not run); an
 * arrival is dropped when its chain already has `depth` ops admitted and
 * unfinished (the admission rule). An op that waits (`wait`) holds its
 * chain for that long before its work, using no capacity: the chain's
 * next op cannot start meanwhile (one at a time, in order), and the
 * other chains share the whole capacity. An op's cost is credited when
 * it completes, as the systems' service is.
 *
 * This is the reference weighted fair queueing approximates: it is
 * weighted max-min at each instant over the demand actually queued, so a
 * burst's demand counts while it can be served and not after its ops
 * expired, and backlog carried from one moment to the next is served
 * where a real scheduler serves it.
 *
 * Self-contained (no accel or bench headers): tests/unit_nodesim_fluid.c
 * compiles it directly.
 */
#ifndef ACCEL_NODESIM_FLUID_H
#define ACCEL_NODESIM_FLUID_H

#include <stddef.h>
#include <stdint.h>

typedef struct ns_fluid_op {
    double t;        /* arrival, ns from the window's start */
    double cost;     /* ns of work */
    double deadline; /* ns from the window's start; the op must start by it */
    double wait;     /* ns off the CPU before its work (a storage read, a
                        signer's round trip): its chain's worker is held,
                        no capacity is used */
} ns_fluid_op;

typedef struct ns_fluid_chain {
    const ns_fluid_op *ops; /* in arrival order */
    size_t n;
    double weight; /* > 0 */
} ns_fluid_chain;

/* How a chain's ops fared on the fluid server, as the systems' are
 * counted: on time (completed by the deadline), or missed (dropped at
 * admission, expired at the head of the chain, completed late, or still
 * unfinished at window_ns with the deadline past). An op unfinished at
 * window_ns whose deadline is still ahead is neither (censored). */
typedef struct ns_fluid_outcome {
    uint64_t ontime, missed;
    uint64_t late; /* of missed: started in time, completed after the
                      deadline (served at a slow rate: a server that runs
                      an op at a CPU's speed once it starts finishes many
                      of these in time) */
} ns_fluid_outcome;

/* Runs the fluid server over [0, window_ns) with `capacity` ns of work
 * per ns (CPUs) and `workers` workers (a chain gets at most
 * capacity/workers), and writes into done_ns[i] the work of chain i's ops
 * completed before window_ns, into *lost (if not NULL) how many ops it
 * dropped or let expire, and into out[i] (if out is not NULL) how chain
 * i's ops fared. 0, or -1 when out of memory. */
int ns_fluid_serve(const ns_fluid_chain *c, size_t n, double capacity, unsigned workers,
                   uint64_t depth, double window_ns, double *done_ns, uint64_t *lost,
                   ns_fluid_outcome *out);

/* The reference of one slice whose system completed `target` ns of op
 * work in [0, window_ns) and drained on to cut_ns (>= window_ns): the
 * capacity, from `capacity` up or down, at which the fluid server
 * completes that work in the window (bracket, then bisect; work no
 * capacity reaches takes the bracket's top). At it, done_ns[i] and *lost
 * are the window's (as ns_fluid_serve), and out[i] (if not NULL) how
 * chain i's ops fared served on to cut_ns, as the system's were (the
 * drain after the arrivals) and counted as the system's are; when
 * nothing was done in the window (target 0, or none by the fluid server
 * at `capacity`), out[i] counts nothing. Returns the capacity, or -1 when
 * out of memory. */
double ns_fluid_reference(const ns_fluid_chain *c, size_t n, double capacity, unsigned workers,
                          uint64_t depth, double window_ns, double cut_ns, double target,
                          double *done_ns, uint64_t *lost, ns_fluid_outcome *out);

#endif
