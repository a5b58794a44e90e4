/*
 * Dynamic batching (docs/batching.md): a session's batch function and its
 * counters, and the visit that runs the session's ops in batches. The
 * visit engine (visit.c) hands a visit here when the session's `batched`
 * flag is set; nothing else of the op path looks at batching.
 */
#ifndef ACCEL_RUNTIME_BATCH_H
#define ACCEL_RUNTIME_BATCH_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "accel/accel.h"

struct accel__visit;
struct accel__batch_timer;

/* A session's batch state (in its tail's word, session.h): allocated by
 * the first accel_session_set_batch that sets a function, freed with the
 * session (session.c frees it and reads its counters: no call into this
 * file, which calls up into visit.c; docs/layers.md). */
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
    /* The hold-back (batch.c, "Holding back"): own line. hold: the
     * generation of the last hold << 1 | HELD; the holder's CAS sets
     * HELD (release), the one CAS that clears it is the release. The
     * fields below are written by the holder before that CAS and read
     * by the releaser after it (acquire), or by the next visit (after
     * the release's enqueue and the pick). */
    alignas(64) _Atomic uint64_t hold;
    _Atomic uint64_t release_at; /* when the timer releases it (ns) */
    uint64_t hold_t0;            /* when this hold began */
    uint64_t form_t0;            /* when the batch now forming was first
                                    held; 0: none (the visit's) */
    int64_t place;               /* accel__sched_hold's, for the release */
    uint64_t held_batch_ns;      /* held time of the forming batch
                                    (releasers add, the batch reads) */
    /* the counters: one writer (the worker holding the session; held_ns:
     * the releaser, one per hold, ordered by the hold word), plain load
     * and store (accel__bump); own line, apart from the writers of the
     * configuration */
    alignas(64) _Atomic uint64_t batches;
    _Atomic uint64_t ops;
    _Atomic uint64_t held_ns;
    _Atomic uint64_t hist[ACCEL_BATCH_HIST_BUCKETS];
};

/* accel__batch_kick's deadline for "release now" (close, cancel). */
#define ACCEL__BATCH_KICK_FORCE INT64_MIN

/* Runs the visit v in batches while its session has a batch function:
 * true when the visit is done with its ops, false when it has none (now,
 * or since a batch of this visit): the caller runs the rest of the visit
 * one by one. */
bool accel__batch_visit_run(struct accel__visit *v);

/* A held session may be released now (see kick above). */
void accel__batch_kick(accel_session *s, int64_t deadline);

/* Test seam (unit_batch_hold.c): when set, the hold-back timer calls it for a
 * hold that is due and releases it only when it returns true (else it
 * looks again a millisecond later): a test stalls the timer with it, so
 * that only the other releases remain. NULL outside tests. */
extern bool (*_Atomic accel__batch_timer_hook)(accel_session *s);

/* Stops the runtime's hold-back timer, if it has one, and drops what it
 * still holds: runtime destroy, once the workers stopped. */
void accel__batch_timer_stop(accel_runtime *rt);

#endif
