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

/* A session's batch state (in its tail's word, session.h): allocated by
 * the first accel_session_set_batch that sets a function, freed with the
 * session (session.c frees it and reads its counters: no call into this
 * file, which calls up into visit.c; docs/layers.md). */
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

/* Runs the visit v in batches while its session has a batch function:
 * true when the visit is done with its ops, false when it has none (now,
 * or since a batch of this visit): the caller runs the rest of the visit
 * one by one. */
bool accel__batch_visit_run(struct accel__visit *v);

/* A host visit's batch (host.c): formed as a batch of the visit above,
 * run by the host, reported back with accel__batch_host_ran (batch.c
 * says more). */
bool accel__batch_host_form(struct accel__visit *v, uint32_t cap,
                            accel_op *ops, int *unrun, uint32_t *taken,
                            uint32_t *ran, uint64_t *t0);
void accel__batch_host_ran(struct accel__visit *v, uint32_t m, uint64_t t0);

#endif
