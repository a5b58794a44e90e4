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
    /* the configuration: even when stable, odd while a writer stores */
    _Atomic uint64_t seq;
    _Atomic(accel_batch_fn) fn;
    void *_Atomic user;
    _Atomic uint32_t max_ops;
    /* the counters: one writer (the worker holding the session), plain
     * load and store (accel__bump); own line, apart from the writers of
     * the configuration */
    alignas(64) _Atomic uint64_t batches;
    _Atomic uint64_t ops;
    _Atomic uint64_t hist[ACCEL_BATCH_HIST_BUCKETS];
};

#endif
