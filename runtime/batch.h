/*
 * Dynamic batching (docs/batching.md): a session's batch function and its
 * counters, and the visit that runs the session's ops in batches. The
 * visit engine (visit.c) hands a visit here when the session's `batched`
 * flag is set; nothing else of the op path looks at batching.
 */
#ifndef ACCEL_RUNTIME_BATCH_H
#define ACCEL_RUNTIME_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "accel/accel.h"
#include "batch_types.h"

struct accel__visit;
struct accel__batch_timer;

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
/* Test seam (unit_batch_hold.c): when set, a holder calls it right after
 * its hold is published (from there another thread may release it), on
 * the holder's thread, before its second look. NULL outside tests. */
extern void (*_Atomic accel__batch_hold_hook)(accel_session *s);
/* Test seam (unit_batch_host.c): when set, a release from another thread
 * than the holder (the timer, a kick) calls it right after its CAS won,
 * before it enqueues the session. NULL outside tests. */
extern void (*_Atomic accel__batch_release_hook)(accel_session *s);

/* Stops the runtime's hold-back timer, if it has one (a release of its
 * in flight completes first), and drops what it still holds: runtime
 * destroy, once the workers stopped (host-driven: before it releases
 * the holds itself). */
void accel__batch_timer_stop(accel_runtime *rt);

/* A host visit's batch (host.c): formed as a batch of the visit above,
 * run by the host, reported back with accel__batch_host_ran (batch.c
 * says more). */
bool accel__batch_host_form(struct accel__visit *v, uint32_t cap,
                            accel_op *ops, int *unrun, uint32_t *taken,
                            uint32_t *ran, uint64_t *t0);
void accel__batch_host_ran(struct accel__visit *v, uint32_t m, uint64_t t0);

#endif
