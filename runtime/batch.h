/*
 * Dynamic batching (docs/batching.md): a session's batch function and its
 * counters, and the visit that runs the session's ops in batches. The
 * visit engine (visit.c) hands a visit here when the session's `batched`
 * flag is set; nothing else of the op path looks at batching.
 */
#ifndef ACCEL_RUNTIME_BATCH_H
#define ACCEL_RUNTIME_BATCH_H

#include <stdbool.h>

#include "accel/accel.h"
#include "batch_types.h"

struct accel__visit;

/* Runs the visit v in batches while its session has a batch function:
 * true when the visit is done with its ops, false when it has none (now,
 * or since a batch of this visit): the caller runs the rest of the visit
 * one by one. */
bool accel__batch_visit_run(struct accel__visit *v);

#endif
