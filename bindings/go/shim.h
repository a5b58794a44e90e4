/*
 * The C half of the Go binding: the op trampolines and a few helpers that
 * keep each Go->C crossing to one call. C never holds a Go pointer: an op's
 * arg is the integer index of a Go-side op record (oprec.go).
 */
#ifndef ACCEL_GO_SHIM_H
#define ACCEL_GO_SHIM_H

#include <accel/host.h>
#include <stddef.h>
#include <stdint.h>

/* Wakes for parked host workers (the runtime's host_wake) go to Go at
 * once, through the exported goAccelWake, on the thread whose call made the
 * work runnable: a wake is never held back until the C call returns, since
 * that call may be one that blocks (a submit waiting for room, a sync, a
 * close draining) until the very worker the wake is for has run. */

/* Creates a runtime with host-driven workers (the Go worker goroutines);
 * id names it in goAccelWake. */
int goaccel_runtime_create(accel_runtime_config *c, uintptr_t id,
                           accel_runtime **out);

/* The worker count a runtime created with workers 0 gets
 * (accel_host_default_workers), without creating one. */
unsigned goaccel_default_workers(void);

/* Queues the Go op record rec on s: accel_submit_ex with the trampolines,
 * deadline_ns (0: none) and, if ticket is not NULL, its ticket for
 * accel_cancel. sync: the caller will wait for the op, so from inside one
 * of s's own ops it is ACCEL_EDEADLK. */
int goaccel_submit(accel_session *s, uintptr_t rec, int64_t deadline_ns,
                   int64_t timeout_ns, int sync, accel_ticket *ticket);

/* accel_session_close(s, ACCEL_CLOSE_DRAIN) as from inside one of s's
 * ops: it begins the close and does not wait. For a Close from an op's
 * announced wait that runs away from the visit's thread (away.go),
 * where accel_current_session() no longer names s. */
int goaccel_close_own(accel_session *s);

/* A synchronous submit of rec on s that, on helper worker w, begins a visit
 * only by the direct hand-off (accel_host_submit_own, cap 1): *begun
 * ACCEL_OK with the visit's op in recs[0..*n), else the op is queued (or
 * refused: the status; ACCEL_EAGAIN when full, nothing queued). The op is
 * accel_submit_ex's: deadline_ns (0: none; past it when the visit takes
 * it, the op is kept back, *n 0, and the visit's end completes it unrun)
 * and, ticket not NULL, its ticket for accel_cancel (zeroed unless
 * accepted), so that an op that is queued rather than begun stays
 * cancellable (accel_host_submit_own_ex). From inside an op of s:
 * ACCEL_EDEADLK. On a thread that runs an op of a visit it drives, a
 * host worker's of rt (a nested Submit): that visit lends the thread
 * (accel_host_visit_detach_ex, ACCEL_HOST_DETACH_LENT) to the hand-off's
 * visit, if s runs its ops inline (the CPU backend); *outer is then the
 * lending visit's worker, which the caller attaches again
 * (goaccel_visit_attach) once the hand-off's visit ended, after
 * goaccel_nest_watch if the visit's op is the caller's own; -1 otherwise
 * (not begun: attached again here). On any other thread that runs an
 * op: a plain accel_submit_ex. */
int goaccel_submit_own(accel_runtime *rt, accel_session *s, uintptr_t rec,
                       unsigned w, int64_t deadline_ns, accel_ticket *ticket,
                       uintptr_t *recs, unsigned *n, int *begun, int *outer);

/* Queues recs[0..n) in order, each with deadline_ns (0: none; ctx's, so
 * the scheduler drops an op unstarted by then); *accepted = how many
 * were (a prefix). */
int goaccel_submit_batch(accel_session *s, const uintptr_t *recs, size_t n,
                         int64_t deadline_ns, int64_t timeout_ns,
                         size_t *accepted);

/* Whether the calling thread's host worker has a visit of rt open (an op
 * of rt runs here). */
int goaccel_in_visit(accel_runtime *rt);

/* Most ops a host worker's step takes from one visit: a batch visit's most
 * (ACCEL_BATCH_MAX); a plain visit hands out ACCEL_HOST_VISIT_MAX at most. */
#define GOACCEL_VISIT_CAP ACCEL_BATCH_MAX

/* Gives s a batch function (accel_session_set_batch) of max_ops per batch:
 * a host worker's visit of s then hands out one batch, which the host worker runs
 * in Go (batch.go). The config's C function runs a batch only where C
 * runs one itself (accel_runtime_destroy's thread): each op through the
 * op trampoline, a batch item as a batch of one. */
int goaccel_set_batch(accel_session *s, unsigned max_ops, uint64_t delay_ns,
                      uint64_t cost_fixed_ns, uint64_t cost_per_op_ns);

/* The mode bits of goaccel_host_step and goaccel_extra_step. */
#define GOACCEL_STEP_END 1u
#define GOACCEL_STEP_UNIDLE 2u
#define GOACCEL_STEP_IDLE 4u
#define GOACCEL_STEP_STOP 8u

/* A host worker's side of a step. yield_at (in): a time on accel_now_ns()'s
 * clock; an END of a visit (not a stopping one) at or after it begins
 * nothing and sets yield (out): the host worker looks whether to give its P
 * up (hostworker.go, yielder) before its next begin. The time of the
 * visit's end is the one its charge read (accel_host_visit_end_ex): no
 * clock read is added per visit. */
typedef struct goaccel_step_io {
    int64_t yield_at;
    int yield;
} goaccel_step_io;

/* One step of a host worker's loop, one crossing: by mode, end the
 * open visit (status[0..nprev)), end an idle spell that found nothing,
 * announce idle; then (unless STOP) begin the next visit, the record
 * indices of its ops in recs[0..*n). With IDLE, a begin that finds work
 * ends the idle spell itself; one that does not leaves the worker idle.
 * io (may be NULL): goaccel_step_io. */
int goaccel_host_step(accel_runtime *rt, unsigned w, unsigned mode,
                      const int *status, unsigned nprev, uintptr_t *recs,
                      unsigned cap, unsigned *n, goaccel_step_io *io);

/* The open visit of worker w of rt continues on the calling thread
 * (accel_host_visit_attach): its host worker ended inside an op
 * (runtime.Goexit), or a submitter handed the visit its direct hand-off
 * began to a host worker (hostworker.go). watched: a host worker's
 * visit, whose waits the binding counts blocked (goaccel_blocking_begin);
 * 0 for a helper worker's. */
void goaccel_visit_attach(accel_runtime *rt, unsigned w, int watched);

/* The calling thread leaves the open visit of worker w of rt
 * (accel_host_visit_detach): a submitter hands it on. */
void goaccel_visit_detach(accel_runtime *rt, unsigned w);

/* The calling thread, which drives the open visit of host worker w of rt
 * and is inside a wait counted blocked (goaccel_blocking_begin), leaves
 * the visit for a wait of the package's own on a Go channel: nothing of
 * the visit runs until goaccel_visit_attach (accel_host_visit_detach_ex,
 * ACCEL_HOST_DETACH_PARKED: that time is credited off a CPU). 1: done,
 * the goroutine may unlock its thread; 0: the thread does not drive the
 * visit (an op run aside) or the detach was refused, nothing done. */
int goaccel_visit_park(accel_runtime *rt, unsigned w);

/* The monitor watches the hand-off's visit of helper worker w that a
 * nested goaccel_submit_own began on the calling thread, a host
 * worker's (accel_host_visit_watch), and the op's own waits count that
 * worker blocked (goaccel_blocking_begin). */
void goaccel_nest_watch(accel_runtime *rt, unsigned w);

/* The calling thread's state of the op it runs (the shim's visit
 * thread-locals and accel_current_session()), which runAside's goroutine
 * takes on for the op it runs for this thread (callback.go):
 * goaccel_op_thread_get reads it, goaccel_op_thread_set sets it (a zero
 * state: in no op). */
typedef struct goaccel_op_thread {
    accel_runtime *rt;
    unsigned w;
    int watched;
    accel_session *sess;
} goaccel_op_thread;
void goaccel_op_thread_get(goaccel_op_thread *t);
void goaccel_op_thread_set(const goaccel_op_thread *t);

/* ---- Compensation for blocked host workers (compensate.go) */

/* The runtime's host_grow (set by goaccel_runtime_create): goAccelGrow. */
void goaccel_host_grow(void *arg);

/* The binding's own waits inside an op (compensate.go): if the calling
 * thread runs a visit of a host worker (not a helper worker's, whose op is
 * its submitter's own and holds no worker), accel_host_blocking_begin
 * for it: returns its runtime and, in *w, the worker, for
 * accel_host_blocking_end from the same thread; else NULL, nothing
 * counted. */
accel_runtime *goaccel_blocking_begin(unsigned *w);

/* goaccel_host_step for an extra worker: an END ends the visit with
 * accel_host_visit_end_stop and, if the worker is surplus, leaves
 * (accel_host_worker_leave IF_SURPLUS: *left = 1, nothing begun). */
int goaccel_extra_step(accel_runtime *rt, unsigned w, unsigned mode,
                       const int *status, unsigned nprev, uintptr_t *recs,
                       unsigned cap, unsigned *n, int *left,
                       goaccel_step_io *io);

/* The calling thread's kernel id, in *nvcsw its voluntary context
 * switches so far (0 returned: unknown) and in *now accel_now_ns(). */
int goaccel_self_switches(int *tid, uint64_t *nvcsw, int64_t *now);

#endif
