/*
 * A session's batch state (struct accel__batch, docs/batching.md): its
 * batch function, configuration and counters. A structure apart from
 * batch.c's functions (batch.h), which call down into visit.c and
 * session.c: those two read the state (the visit engine through its run
 * pointer, session.c to free it and read its counters) without a call
 * into batch.c.
 */
#ifndef ACCEL_RUNTIME_BATCH_TYPES_H
#define ACCEL_RUNTIME_BATCH_TYPES_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "accel/accel.h"

struct accel__visit;

/* A session's batch state (in its tail's word, session.h): allocated by
 * the first accel_session_set_batch that sets a function, freed with the
 * session (session.c frees it and reads its counters: no call into
 * batch.c, which calls into visit.c and session.c; docs/layers.md). */
struct accel__batch {
    /* The batch visit (accel__batch_visit_run), set at allocation: the
     * visit engine reaches it through this pointer only. */
    bool (*run)(struct accel__visit *v);
    /* The hold-back's look after something that may release a held
     * session (accel__batch_kick): a submit that found it held (with its
     * ops' deadline, 0: none), close and accel_cancel (deadline
     * ACCEL__BATCH_KICK_FORCE: release it at once). Set at allocation:
     * submit.c, session.c and cancel.c reach it through this pointer. */
    void (*kick)(accel_session *s, int64_t deadline);
    accel_session *s; /* the owner */
    /* the configuration: even when stable, odd while a writer stores */
    _Atomic uint64_t seq;
    _Atomic(accel_batch_fn) fn;
    void *_Atomic user;
    _Atomic uint32_t max_ops;
    _Atomic uint64_t max_delay_ns, cost_fixed_ns, cost_per_op_ns;
    /* The hold-back (batch.c, "Holding back"): own line. hold: the last
     * hold's mark (ring.h's HELD flag and its generation), written by
     * the holders only; the hold itself is that mark in the ring's
     * defer word, whose one CAS back to 0 is the release. The fields
     * below are written by the holder before it stores the mark
     * (release) and read by the releaser after its CAS (acquire), or by
     * the next visit (after the release's enqueue and the pick). */
    alignas(64) _Atomic uint64_t hold;
    _Atomic uint64_t release_at; /* when the timer releases it (ns) */
    uint64_t hold_t0;            /* when this hold began */
    uint64_t form_t0;            /* when the batch now forming was first
                                    held; 0: none (the visit's) */
    int64_t place;               /* accel__sched_hold's, for the release */
    uint64_t held_batch_ns;      /* held time of the forming batch
                                    (releasers add, the batch reads) */
    /* the counters: one writer (the worker holding the session; held_ns:
     * the releaser, one per hold, ordered by the mark), plain load
     * and store (accel__bump); own line, apart from the writers of the
     * configuration */
    alignas(64) _Atomic uint64_t batches;
    _Atomic uint64_t ops;
    _Atomic uint64_t held_ns;
    _Atomic uint64_t hist[ACCEL_BATCH_HIST_BUCKETS];
};

/* accel__batch_kick's deadline for "release now" (close, cancel). */
#define ACCEL__BATCH_KICK_FORCE INT64_MIN

#endif
