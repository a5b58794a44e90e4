/*
 * The C half of the Go binding: the op trampolines and a few helpers that
 * keep each Go->C crossing to one call. C never holds a Go pointer: an op's
 * arg is the integer index of a Go-side op record (oprec.go).
 */
#ifndef ACCEL_GO_SHIM_H
#define ACCEL_GO_SHIM_H

#include <accel/accel.h>
#include <stddef.h>
#include <stdint.h>

/* Calls that can make work runnable return an int64: the status in the
 * low 32 bits, and in the high 32 the wakes for parked host workers that
 * the call asked for (general lane: bits 32-46, short lane: 48-63; bit 47 is
 * GOACCEL_IN_VISIT), which
 * the Go side posts (hostworker.go). */

/* Creates a runtime; host: with host-driven workers whose wakes come
 * back through the calls below. */
int goaccel_runtime_create(accel_runtime_config *c, int host,
                           accel_runtime **out);

/* Queues the Go op record rec on s (accel_submit with the trampolines).
 * sync: the caller will wait for the op, so from inside one of s's own ops
 * it is ACCEL_EDEADLK; and the result has GOACCEL_IN_VISIT set when the
 * calling thread runs an op (a visit is open on it), which must then not
 * help drive a slot. */
#define GOACCEL_IN_VISIT ((int64_t)1 << 47)
int64_t goaccel_submit(accel_session *s, uintptr_t rec, int64_t timeout_ns,
                       int sync);

/* A synchronous submit that then drives helper slot w (hostworker.go):
 * goaccel_submit(s, rec, ACCEL_NO_WAIT, 1) and, if accepted, a begin on w
 * in the same crossing (accel_host_submit_begin: s goes to the slot
 * directly when its pick would return it). *begun: ACCEL_OK if a visit
 * is open (recs[0..*n) its ops), else no visit. With GOACCEL_IN_VISIT
 * (the thread runs an op) only the submit is done. */
int64_t goaccel_submit_help(accel_runtime *rt, accel_session *s,
                            uintptr_t rec, unsigned w, uintptr_t *recs,
                            unsigned cap, unsigned *n, int *begun);

/* Queues recs[0..n) in order; *accepted = how many were (a prefix). */
int64_t goaccel_submit_batch(accel_session *s, const uintptr_t *recs,
                             size_t n, int64_t timeout_ns, size_t *accepted);

/* One step of a host worker slot's loop, one crossing: by mode, end the
 * open visit (status[0..nprev)), end an idle spell that found nothing,
 * announce idle; then (unless STOP) begin the next visit (END with STOP:
 * accel_host_visit_end_stop, the slot stops), the record
 * indices of its ops in recs[0..*n). With IDLE, a begin that finds work
 * ends the idle spell itself; one that does not leaves the slot idle. */
/* Whether the calling thread's host worker has a visit of rt open (an op
 * of rt runs here). */
int goaccel_in_visit(accel_runtime *rt);

#define GOACCEL_STEP_END 1u
#define GOACCEL_STEP_UNIDLE 2u
#define GOACCEL_STEP_IDLE 4u
#define GOACCEL_STEP_STOP 8u
int64_t goaccel_host_step(accel_runtime *rt, unsigned w, unsigned mode,
                          const int *status, unsigned nprev, uintptr_t *recs,
                          unsigned cap, unsigned *n);

/* Budgeted memory outside an op: reserve then malloc; free then refund. */
int goaccel_alloc(accel_session *s, size_t bytes, void **out);
void goaccel_free(accel_session *s, void *p, size_t bytes);

/* Waits until (*w & mask) != 0 while *w stays at generation base (bits
 * 0-2 free): a short spin, then the futex, announcing sleep with bit 2 so
 * that setters know to call goaccel_wake. */
void goaccel_wait(uint32_t *w, uint32_t base, uint32_t mask);
void goaccel_wake(uint32_t *w);

/* Benchmark hooks (benchhooks.go): an empty C function, and n empty
 * callbacks into Go from a new C thread, timed in ns. */
void goaccel_nop(void);
uint64_t goaccel_callback_bench(uint64_t n);

#endif
