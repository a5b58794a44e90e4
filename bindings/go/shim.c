/*
 * The C half of the Go binding. The worker goroutines run the Go ops
 * themselves (hostworker.go); C calls into Go for an op only where no
 * worker goroutine does: done for an op that never ran (canceled,
 * expired, closed with ACCEL_CLOSE_CANCEL: goAccelUnrun), fn for an op
 * accel_runtime_destroy runs on its own thread (goAccelRun), and the wakes
 * of parked worker goroutines (goAccelWake).
 */
#include "shim.h"

#include <stdbool.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "_cgo_export.h"

/* C asks for a parked worker goroutine to be woken: hand it to Go now
 * (shim.h). The call into Go only posts to a buffered channel. */
static void goaccel_host_wake(void *arg, unsigned lane)
{
    goAccelWake((uintptr_t)arg, lane);
}

/* The runtime whose visit this thread's host worker has open (the
 * goroutine is locked to the thread during a visit), else NULL. */
static _Thread_local accel_runtime *goaccel_visiting;
/* ... the worker it is open on, and whether the binding counts the visit's
 * waits blocked (a host worker's visit, not a helper worker's). */
static _Thread_local unsigned goaccel_visit_w;
static _Thread_local bool goaccel_visit_watched;
/* ... and whether this thread runs one op of that visit aside
 * (goaccel_op_thread_set, runAside in callback.go) rather than driving it
 * (began or attached it): only the driver may move it (goaccel_visit_park,
 * a nested goaccel_submit_own). */
static _Thread_local bool goaccel_visit_aside;

/* The calling thread's kernel id: a syscall once per thread, then this
 * thread-local (the yielder tells by it that its goroutine changed
 * thread). */
static _Thread_local int goaccel_tid_v;

static int goaccel_tid(void)
{
    if (__builtin_expect(goaccel_tid_v == 0, 0))
        goaccel_tid_v = (int)syscall(SYS_gettid);
    return goaccel_tid_v;
}

int goaccel_in_visit(accel_runtime *rt) { return goaccel_visiting == rt; }

unsigned goaccel_default_workers(void) { return accel_host_default_workers(); }

int goaccel_runtime_create(accel_runtime_config *c, uintptr_t id,
                           accel_runtime **out)
{
    c->flags = ACCEL_RUNTIME_HOST_WORKERS;
    c->host_wake = goaccel_host_wake;
    c->host_wake_arg = (void *)id;
    c->host_grow = goaccel_host_grow; /* compensation (the end of this file) */
    c->struct_size = sizeof(*c);
    return accel_runtime_create(c, out);
}

void goaccel_visit_attach(accel_runtime *rt, unsigned w, int watched)
{
    accel_host_visit_attach(rt, w);
    goaccel_visiting = rt;
    goaccel_visit_w = w;
    goaccel_visit_watched = watched != 0;
}

void goaccel_visit_detach(accel_runtime *rt, unsigned w)
{
    accel_host_visit_detach(rt, w);
    goaccel_visiting = NULL;
}

void goaccel_nest_watch(accel_runtime *rt, unsigned w)
{
    if (accel_host_visit_watch(rt, w) == ACCEL_OK)
        goaccel_visit_watched = true;
}

int goaccel_visit_park(accel_runtime *rt, unsigned w)
{
    if (goaccel_visit_aside || goaccel_visiting != rt ||
        goaccel_visit_w != w ||
        accel_host_visit_detach_ex(rt, w, ACCEL_HOST_DETACH_PARKED) !=
            ACCEL_OK)
        return 0;
    goaccel_visiting = NULL;
    return 1;
}

void goaccel_op_thread_get(goaccel_op_thread *t)
{
    t->rt = goaccel_visiting;
    t->w = goaccel_visit_w;
    t->watched = goaccel_visit_watched;
    t->sess = accel_current_session();
}

void goaccel_op_thread_set(const goaccel_op_thread *t)
{
    goaccel_visiting = t->rt;
    goaccel_visit_w = t->w;
    goaccel_visit_watched = t->watched != 0;
    goaccel_visit_aside = t->rt != NULL; /* an op run aside: the visit stays */
    accel_host_set_current_session(t->sess);
}

/* Ends the open visit (a stopping end wakes a worker for what it
 * re-queues); true when io asks for a yield and the visit ended at or
 * after io->yield_at. */
static bool end_visit(accel_runtime *rt, unsigned w, const int *status,
                      unsigned nprev, bool stop, goaccel_step_io *io)
{
    int64_t now = 0;
    int rc = accel_host_visit_end_ex(rt, w, status, nprev,
                                     stop ? ACCEL_HOST_END_STOP : 0, &now);
    goaccel_visiting = NULL;
    return io && rc == ACCEL_OK && now >= io->yield_at;
}

int goaccel_host_step(accel_runtime *rt, unsigned w, unsigned mode,
                      const int *status, unsigned nprev, uintptr_t *recs,
                      unsigned cap, unsigned *n, goaccel_step_io *io)
{
    accel_op ops[GOACCEL_VISIT_CAP];
    if (io)
        io->yield = 0;
    if (mode & GOACCEL_STEP_END) {
        bool stop = (mode & GOACCEL_STEP_STOP) != 0;
        if (end_visit(rt, w, status, nprev, stop, io) && !stop) {
            io->yield = 1;
            return ACCEL_EAGAIN;
        }
    }
    if (mode & GOACCEL_STEP_UNIDLE)
        accel_host_idle_end(rt, w, false);
    if (mode & GOACCEL_STEP_IDLE)
        accel_host_idle_begin(rt, w);
    if (mode & GOACCEL_STEP_STOP)
        return ACCEL_EAGAIN;
    if (cap > GOACCEL_VISIT_CAP)
        cap = GOACCEL_VISIT_CAP;
    goaccel_visiting = rt; /* a device visit runs its ops in begin */
    goaccel_visit_w = w;
    goaccel_visit_watched = true;
    int rc = accel_host_visit_begin(rt, w, ops, cap, n);
    if (rc != ACCEL_OK)
        goaccel_visiting = NULL;
    if (rc == ACCEL_OK) {
        for (unsigned i = 0; i < *n; i++)
            recs[i] = (uintptr_t)ops[i].arg;
        if (mode & GOACCEL_STEP_IDLE)
            accel_host_idle_end(rt, w, true);
    }
    return rc;
}

static int goaccel_op_fn(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    return goAccelRun((uintptr_t)arg);
}

static void goaccel_op_done(void *arg, int status)
{
    /* goAccelRun returns 0 or 1, never a negative status: a negative status
     * here means fn never ran, and the record is still ours to finish. After
     * fn ran, the record may already be reused: do not touch it. */
    if (status < 0)
        goAccelUnrun((uintptr_t)arg, status);
}

/* The batch function of a batched session's config (shim.h). */
static void goaccel_batch_fn(accel_ctx *ctx, void *const *args, uint32_t n,
                             int *status, void *user)
{
    (void)user;
    for (uint32_t i = 0; i < n; i++)
        status[i] = goaccel_op_fn(ctx, args[i]);
}

int goaccel_set_batch(accel_session *s, unsigned max_ops, uint64_t delay_ns,
                      uint64_t cost_fixed_ns, uint64_t cost_per_op_ns)
{
    accel_batch_config c = {.fn = goaccel_batch_fn,
                            .max_ops = max_ops,
                            .max_delay_ns = delay_ns,
                            .cost_fixed_ns = cost_fixed_ns,
                            .cost_per_op_ns = cost_per_op_ns,
                            .struct_size = sizeof(c)};
    return accel_session_set_batch(s, &c);
}

int goaccel_submit(accel_session *s, uintptr_t rec, int64_t deadline_ns,
                   int64_t timeout_ns, int sync, accel_ticket *ticket)
{
    /* A synchronous submit from inside one of the session's own ops would
     * wait for itself. */
    if (sync && accel_current_session() == s)
        return ACCEL_EDEADLK;
    accel_op op = {.fn = goaccel_op_fn, .done = goaccel_op_done,
                   .arg = (void *)rec};
    return accel_submit_ex(s, &op, deadline_ns, timeout_ns, ticket);
}

int goaccel_close_own(accel_session *s)
{
    /* One C call, so one thread: the current session is s for the close
     * alone, as on the visit's thread. */
    accel_session *prev = accel_host_set_current_session(s);
    int rc = accel_session_close(s, ACCEL_CLOSE_DRAIN);
    accel_host_set_current_session(prev);
    return rc;
}

int goaccel_submit_own(accel_runtime *rt, accel_session *s, uintptr_t rec,
                       unsigned w, int64_t deadline_ns, accel_ticket *ticket,
                       uintptr_t *recs, unsigned *n, int *begun, int *outer)
{
    *begun = ACCEL_EAGAIN;
    *n = 0;
    *outer = -1;
    if (ticket)
        *ticket = (accel_ticket){0};
    if (accel_current_session() == s)
        return ACCEL_EDEADLK;
    accel_op op = {.fn = goaccel_op_fn, .done = goaccel_op_done,
                   .arg = (void *)rec};
    /* A thread that runs an op (a visit open on it) opens a second one
     * only when it drives the first, a watched one of rt, and s runs its
     * ops inline (a device session's begin runs them, on a goroutine of
     * their own, before the visit could be watched): the first visit
     * lends it the thread (the thread-locals that tell an op's session
     * are the second's until the attach). */
    if (goaccel_visiting != NULL) {
        if (goaccel_visiting != rt || goaccel_visit_aside ||
            !goaccel_visit_watched ||
            accel_session_backend(s) != ACCEL_BACKEND_CPU ||
            accel_host_visit_detach_ex(rt, goaccel_visit_w,
                                       ACCEL_HOST_DETACH_LENT) != ACCEL_OK)
            return accel_submit_ex(s, &op, deadline_ns, ACCEL_NO_WAIT,
                                   ticket);
        *outer = (int)goaccel_visit_w;
    }
    accel_op ops[1];
    goaccel_visiting = rt; /* a device visit runs its ops in begin */
    goaccel_visit_w = w;
    goaccel_visit_watched = false; /* the submitter's own op */
    int rc = accel_host_submit_own_ex(rt, w, s, &op, deadline_ns,
                                      ACCEL_NO_WAIT, ticket, ops, 1, n,
                                      begun);
    if (rc != ACCEL_OK || *begun != ACCEL_OK) {
        goaccel_visiting = NULL;
        if (*outer >= 0) { /* queued or refused: the lender goes on */
            goaccel_visit_attach(rt, (unsigned)*outer, 1);
            *outer = -1;
        }
        return rc;
    }
    for (unsigned i = 0; i < *n; i++)
        recs[i] = (uintptr_t)ops[i].arg;
    return rc;
}

int goaccel_submit_batch(accel_session *s, const uintptr_t *recs, size_t n,
                         int64_t deadline_ns, int64_t timeout_ns,
                         size_t *accepted)
{
    enum { CHUNK = 64 };
    accel_op ops[CHUNK];
    size_t done = 0;
    int rc = ACCEL_OK;
    while (done < n && rc == ACCEL_OK) {
        size_t k = n - done < CHUNK ? n - done : CHUNK, got = 0;
        for (size_t i = 0; i < k; i++)
            ops[i] = (accel_op){.fn = goaccel_op_fn, .done = goaccel_op_done,
                                .arg = (void *)recs[done + i]};
        rc = accel_submit_batch_ex(s, ops, k, deadline_ns, timeout_ns, &got);
        done += got;
    }
    *accepted = done;
    return rc;
}

/* ---- Compensation for blocked host workers (compensate.go) */

/* The runtime's host_grow: a worker counted blocked is owed another host worker.
 * Like goaccel_host_wake, the call into Go only signals. */
void goaccel_host_grow(void *arg) { goAccelGrow((uintptr_t)arg); }

accel_runtime *goaccel_blocking_begin(unsigned *w)
{
    accel_runtime *rt = goaccel_visiting;
    if (rt == NULL || !goaccel_visit_watched ||
        accel_host_blocking_begin(rt, goaccel_visit_w) != ACCEL_OK)
        return NULL;
    *w = goaccel_visit_w;
    return rt;
}

int goaccel_extra_step(accel_runtime *rt, unsigned w, unsigned mode,
                       const int *status, unsigned nprev, uintptr_t *recs,
                       unsigned cap, unsigned *n, int *left,
                       goaccel_step_io *io)
{
    *left = 0;
    if (io)
        io->yield = 0;
    if (mode & GOACCEL_STEP_END) {
        /* It may leave: a stopping end wakes a worker for what it re-queues. */
        bool due = end_visit(rt, w, status, nprev, true, io);
        if (accel_host_worker_leave(rt, w, ACCEL_HOST_LEAVE_IF_SURPLUS) ==
            ACCEL_OK) {
            *left = 1;
            return ACCEL_EAGAIN;
        }
        if (due) {
            io->yield = 1;
            return ACCEL_EAGAIN;
        }
        mode &= ~GOACCEL_STEP_END;
    }
    return goaccel_host_step(rt, w, mode, status, 0, recs, cap, n, io);
}

/* The calling thread's kernel id, its voluntary context switches so far
 * (getrusage RUSAGE_THREAD: one syscall: a thread that slept, on a futex
 * or in I/O, since the last look switched voluntarily; one the kernel
 * preempted did not) and the monotonic time (the clock yield_at is of). */
int goaccel_self_switches(int *tid, uint64_t *nvcsw, int64_t *now)
{
    struct rusage ru;
    *tid = goaccel_tid();
    *now = accel_now_ns();
    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        return 0;
    *nvcsw = (uint64_t)ru.ru_nvcsw;
    return 1;
}

