/*
 * accel host interface: for language runtimes that drive accel's workers
 * on their own threads (the Go binding, bindings/go), not for programs
 * that use accel's own worker threads. Such a runtime is created with
 * ACCEL_RUNTIME_HOST_WORKERS (accel.h): accel starts no worker threads
 * (only its blocked-op monitor), and the host runs one loop per worker
 * host worker that asks the scheduler for ops (accel_host_visit_begin), runs
 * them its own way and reports them (accel_host_visit_end); it sleeps and
 * is woken through the idle protocol and host_wake. An op that blocks
 * hands its host worker's place to another host worker, as on accel's own workers:
 * the monitor finds the waits the host does not announce, the host
 * announces those it knows (accel_host_blocking_begin), and the host
 * starts the host worker C asks for (host_grow, accel_host_worker_add).
 *
 * Thread-safety: unlike accel.h's calls, these are not free-threaded per
 * host worker: calls on one worker index must not overlap (one thread drives a
 * host worker at a time) and a visit is begun and ended on the same thread.
 * Different host workers are independent; any thread may drive any host worker.
 *
 * Stability: the same promise as accel.h (docs/abi.md). These names are
 * exported at the version node of the release that added them
 * (cmake/libaccel.map: ACCEL_0.1) and, within one MAJOR, a release only
 * adds to this header; removing or changing a call bumps MAJOR.
 */
#ifndef ACCEL_HOST_H
#define ACCEL_HOST_H

#include "accel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* With ACCEL_RUNTIME_HOST_WORKERS the runtime creates no threads: the host
 * (a language runtime with its own scheduler, such as Go's) runs one loop
 * per worker index 0..workers-1 on its own threads, and the ops of
 * sessions with an in-line backend (the CPU backend) are handed to it to
 * run, so no op crosses to another OS thread. The scheduler is the same:
 * FIFO per session, weighted shares, the short lane (host workers
 * 0..short_lane_workers-1 are short-lane workers, as accel's threads are).
 * docs/go.md describes the Go binding's loop. One worker index is driven by
 * one thread at a time (calls on one host worker must not overlap); a visit is
 * begun and ended on the same thread (accel_session_sync and _close tell
 * an op's own session by the thread). Different host workers are independent.
 *
 * A host worker's loop:
 *   rc = accel_host_visit_begin(rt, w, ops, cap, &n);
 *   ACCEL_OK:  run ops[0..n) in order (the host's own way, below),
 *              then accel_host_visit_end(rt, w, status, n);
 *   ACCEL_EAGAIN: nothing runnable. To sleep: accel_host_idle_begin(rt,
 *              w), then begin once more; if that finds work, call
 *              accel_host_idle_end(rt, w, true) and run it; else sleep
 *              until host_wake(lane of w) has been called at least once
 *              after idle_begin (a wake that came before the sleep must
 *              not be lost: a semaphore, a buffered channel), then
 *              accel_host_idle_end(rt, w, false) and start over. Spurious
 *              wakes are harmless. Without the idle protocol a host may
 *              also just poll.
 * Ops handed to the host: the host calls neither fn nor done; it runs
 * the op as it knows it (by arg) and reports fn's status in
 * accel_host_visit_end, which then calls done(arg, status) in order and
 * counts the op. Ops canceled (accel_cancel), expired or closed with
 * ACCEL_CLOSE_CANCEL are claimed in begin and completed unrun (their done
 * gets the status) in end, in FIFO order among the others: they are
 * never handed out. An op is claimed against accel_cancel when begin
 * hands it out (not when the host starts it). Sessions of a backend that
 * does not run ops in line (CUDA) are run by begin itself, as accel's own
 * worker would (n = 0). A visit of an in-line session with a batch
 * function (accel_session_set_batch, docs/batching.md) hands out one
 * batch: up to max_ops ops (and up to cap, which may then be up to
 * ACCEL_BATCH_MAX), formed as accel's own worker forms one (cancelled,
 * expired and closed ops left out as above); the host runs them its own
 * way as one batch (the config's fn is not called: the host knows its
 * ops by arg), reports each op's status in end, and the visit counts as
 * one op to the scheduler and as one batch in the session's statistics
 * and the batch probe (ns from begin's hand-out to end). A session with
 * a hold-back (max_delay_ns) whose batch may still fill is held as
 * accel's own worker holds it: begin hands out nothing (n = 0) and end
 * holds the session (in no queue) until its release. Whatever waits
 * for ops (accel_session_sync, _close and _release with DRAIN, a submit
 * waiting for room) needs a host worker driving the host workers
 * meanwhile.
 * accel_runtime_destroy must be called after the host has stopped calling
 * these functions on rt; ops still queued then are run (through fn, or a
 * batched session's through its batch fn) by destroy's own thread. */
#define ACCEL_HOST_LANE_GENERAL 0u
#define ACCEL_HOST_LANE_SHORT 1u
/* Most ops one visit hands out; a larger cap is cut to it (a batch visit:
 * ACCEL_BATCH_MAX, above). */
#define ACCEL_HOST_VISIT_MAX 32u

/* Picks a runnable session for host worker `worker` exactly as an accel
 * worker thread would and takes up to cap of its ops (fewer when the
 * scheduler's visit quota, the predicted op cost or the ring says so)
 * into ops[0..*n), in FIFO order. Returns ACCEL_OK (a visit is open on
 * the host worker: call accel_host_visit_end; *n may be 0), ACCEL_EAGAIN
 * (nothing runnable; no visit open), ACCEL_EINVAL (rt or n NULL, rt not
 * host-driven, worker out of range, cap 0 or ops NULL, a visit already
 * open on the host worker; nothing changed), ACCEL_ECLOSED (rt is a parent's
 * runtime in a fork child). */
ACCEL_API int accel_host_visit_begin(accel_runtime *rt, unsigned worker,
                                     accel_op *ops, unsigned cap,
                                     unsigned *n);

/* Ends the host worker's open visit: status[i] is what ops[i] of begin
 * returned (0: completed; other: failed, passed to done as is). Calls
 * the dones in FIFO order, charges the visit's measured time to the
 * session (its fair share), re-queues or parks the session, wakes room
 * and sync waiters and, through host_wake, a parked worker if needed.
 * Returns ACCEL_OK, ACCEL_EINVAL (rt NULL or not host-driven, worker out
 * of range, no visit open on the host worker, n not begin's count, status NULL
 * with n > 0; nothing changed). */
ACCEL_API int accel_host_visit_end(accel_runtime *rt, unsigned worker,
                                   const int *status, unsigned n);

/* As accel_host_visit_end, for a host worker that will not begin again soon (a
 * host thread that drove it for a while and now leaves it, such as a
 * submitter helping): a session the end re-queues is otherwise left for
 * this host worker's next begin, with no wake; here it wakes (host_wake) a
 * parked worker of its lanes if there is one. Same returns. */
ACCEL_API int accel_host_visit_end_stop(accel_runtime *rt, unsigned worker,
                                        const int *status, unsigned n);

/* A submit and a begin in one call, for a host thread that submits an op
 * and then drives host worker `worker` (a submitter helping): accel_submit(s,
 * op, timeout_ns); if accepted, accel_host_visit_begin(rt, worker, ops,
 * cap, n), whose status goes to *begun (ACCEL_OK: a visit is open, end
 * it; ACCEL_EAGAIN: nothing runnable, no visit; ACCEL_ECLOSED). The order
 * is the scheduler's as with the two calls, with one shortcut: when this
 * submit made s runnable and the host worker's pick would return s first (its
 * deadline is at or before everything queued for the host worker's lane), s
 * goes to the host worker directly, without the scheduler's queue, and no parked
 * worker is woken for it (the host worker runs it; end the visit with
 * accel_host_visit_end_stop if the thread then leaves the host worker).
 * Returns the submit's status as accel_submit (*n = 0 and *begun =
 * ACCEL_EAGAIN unless ACCEL_OK), or ACCEL_EINVAL (as accel_submit, rt not
 * s's runtime, bad worker index, n/begun/ops NULL, cap 0, a visit open or the
 * host worker idle-announced; nothing changed). Same threading as begin. */
ACCEL_API int accel_host_submit_begin(accel_runtime *rt, unsigned worker,
                                      accel_session *s, const accel_op *op,
                                      int64_t timeout_ns, accel_op *ops,
                                      unsigned cap, unsigned *n, int *begun);

/* As accel_host_submit_begin, but a visit is begun only by the direct
 * hand-off (s goes to the host worker directly): otherwise the op is queued and
 * woken for as by accel_submit and *begun is ACCEL_EAGAIN, with no visit,
 * so nothing of another session is ever handed to the caller. For a host
 * whose submitter may run its own op on its own thread and nobody else's
 * (the Go binding: the calling goroutine is the caller's). With cap 1 the
 * visit holds the first op of s in FIFO order: the caller's own unless
 * another submitter of s raced it into the ring. Same returns. */
ACCEL_API int accel_host_submit_own(accel_runtime *rt, unsigned worker,
                                    accel_session *s, const accel_op *op,
                                    int64_t timeout_ns, accel_op *ops,
                                    unsigned cap, unsigned *n, int *begun);

/* As accel_host_submit_own, with op submitted as by accel_submit_ex:
 * deadline_ns (absolute, on accel_now_ns()'s clock; 0: none; an op past
 * it when the visit takes it is kept back: the visit opens with *n 0 and
 * its end completes the op ACCEL_EEXPIRED unrun) and, ticket not NULL,
 * its ticket for accel_cancel (zeroed unless the submit is accepted), so
 * that an op queued rather than begun stays cancellable. Returns as
 * accel_host_submit_own, and ACCEL_EINVAL also for deadline_ns < 0
 * (nothing changed but the ticket, zeroed). deadline_ns 0 and ticket
 * NULL: accel_host_submit_own. */
ACCEL_API int accel_host_submit_own_ex(accel_runtime *rt, unsigned worker,
                                       accel_session *s, const accel_op *op,
                                       int64_t deadline_ns, int64_t timeout_ns,
                                       accel_ticket *ticket, accel_op *ops,
                                       unsigned cap, unsigned *n, int *begun);

/* accel_host_visit_end (flags 0) or accel_host_visit_end_stop (flags
 * ACCEL_HOST_END_STOP), which also stores in *end_ns (if not NULL) the
 * time, on accel_now_ns()'s clock, that the end read for the visit's
 * charge: a host that decides by the time after each visit (when to give
 * its thread up) needs no clock read of its own. Returns as
 * accel_host_visit_end, and ACCEL_EINVAL also for an unknown flag bit
 * (nothing changed); *end_ns is set only with ACCEL_OK. */
#define ACCEL_HOST_END_STOP 0x1u
ACCEL_API int accel_host_visit_end_ex(accel_runtime *rt, unsigned worker,
                                      const int *status, unsigned n,
                                      unsigned flags, int64_t *end_ns);

/* Moving an open visit between host threads. A visit is begun and ended
 * on one thread, which accel_current_session() and the calls that refuse
 * an op's own session (ACCEL_EDEADLK) read, and whose CPU clock and run
 * state the monitor samples ("Ops that block"). A host whose thread
 * leaves a visit it began (the Go binding: a submitter hands the visit
 * its direct hand-off began to another host worker; a host worker
 * ends inside an op and another takes the visit over) says so:
 * accel_host_visit_detach(rt, w) on the thread that leaves it (its
 * accel_current_session() goes back to what it was before the visit),
 * accel_host_visit_attach(rt, w) on the thread that goes on with it (its
 * accel_current_session() is the visit's session until the end; the
 * monitor watches this thread from here; between the two it watches
 * none). Attach needs no detach before it when the old thread is gone.
 * The visit's ops, its end and the host worker's other calls then come
 * from the attached thread. A wait counted in the visit
 * (accel_host_blocking_begin, or a visit begun counted: below) is
 * measured on each thread's own CPU clock: the detach takes the leaving
 * thread's part of it, the attach measures on from there; without a
 * detach the old thread's part is not credited. Returns
 * ACCEL_OK, ACCEL_EINVAL (rt NULL or not host-driven, worker out of
 * range, no visit open on the host worker; for attach also: the calling thread
 * runs the host worker's visit already (its accel_current_session() is the
 * visit's session); for detach also: the calling thread does not run the
 * host worker's visit; nothing changed). */
ACCEL_API int accel_host_visit_attach(accel_runtime *rt, unsigned worker);
ACCEL_API int accel_host_visit_detach(accel_runtime *rt, unsigned worker);

/* accel_host_visit_detach with flags. ACCEL_HOST_DETACH_PARKED: the
 * host vouches that the visit's code waits from this detach to the next
 * attach: the thread that drove it waits, parked, in a wait of the
 * host's own, or in the op's announced wait (accel_host_blocking_begin),
 * run off the thread (the Go binding: a Submit from inside an op waiting
 * for its result, and the wait inside s.Blocking, their goroutine
 * unlocked from the thread meanwhile, so that the thread runs other
 * goroutines instead of sleeping). That time counts off a CPU, as a
 * wait's would on one thread's clock, with no clock to tell a wait that
 * computes; without the flag it is charged. ACCEL_HOST_DETACH_LENT: the thread
 * runs another session's visit until the attach, charged to that
 * session (the Go binding: a nested Submit's own op, run on the calling
 * thread by the direct hand-off): that time is not charged to this
 * visit either, and is no wait (a visit begun counted is judged on its
 * time off and on a CPU without it). ACCEL_EINVAL for flags not defined
 * or both, and as accel_host_visit_detach; nothing changed then. */
#define ACCEL_HOST_DETACH_PARKED 0x1u
#define ACCEL_HOST_DETACH_LENT 0x2u
ACCEL_API int accel_host_visit_detach_ex(accel_runtime *rt, unsigned worker,
                                         unsigned flags);

/* The monitor watches the open visit of host worker `worker`, which the
 * calling thread runs, from here on as it watches a visit begun by
 * accel_host_visit_begin ("Blocked host workers" below): a wait in it is
 * found and its host worker's place handed on, and its end judges it.
 * For a visit the direct hand-off began (accel_host_submit_own*, not
 * watched) on a thread that is itself one of the host's workers, whose
 * place a wait there would hold (the Go binding: a nested Submit's op
 * run on a host worker's thread). Returns ACCEL_OK, ACCEL_EINVAL (rt
 * NULL or not host-driven, worker out of range, no visit open, the
 * visit watched already or not run by the calling thread; nothing
 * changed). */
ACCEL_API int accel_host_visit_watch(accel_runtime *rt, unsigned worker);

/* Sets what accel_current_session() returns on the calling thread to s
 * (NULL: no op) and returns what it returned before. For a host that
 * runs an op on a thread other than the one its visit runs on, while
 * that thread waits for it (the Go binding runs an op that
 * accel_runtime_destroy, or a device session's visit, hands to fn on a
 * goroutine of its own): with s the op's session there, calls from
 * inside the op see it as the visit's thread would (ACCEL_EDEADLK for a
 * wait on its own session, not a wait for itself). Call it again with
 * the value returned once the op is done. Nothing else moves: the visit
 * stays on its thread (accel_host_visit_attach moves a visit). Never
 * fails. */
ACCEL_API accel_session *accel_host_set_current_session(accel_session *s);

/* The worker count accel_runtime_create gives a config with workers 0
 * (the CPUs of the process's affinity mask, less a cgroup CPU quota; at
 * least 1), without creating a runtime: for a host that adds host workers of
 * its own to the default (the Go binding's helper workers). Thread-safe. */
ACCEL_API unsigned accel_host_default_workers(void);

/* Announces host worker `worker` idle (its lane's parked count; a seq_cst
 * barrier pairs it with submitters, so that either the following begin
 * sees their work or they see the announcement and call host_wake).
 * Returns ACCEL_OK, ACCEL_EINVAL (bad rt or worker, already idle, a
 * visit open). */
ACCEL_API int accel_host_idle_begin(accel_runtime *rt, unsigned worker);

/* Ends the idle spell begun by accel_host_idle_begin; found_work: the
 * begin after the announcement found work (a wake meant for other work
 * is then passed on through host_wake). Returns ACCEL_OK, ACCEL_EINVAL
 * (bad rt or worker, not idle). */
ACCEL_API int accel_host_idle_end(accel_runtime *rt, unsigned worker,
                                  bool found_work);

/* Blocked host workers ("Ops that block" in accel.h, for host-driven
 * runtimes). A host worker counts as blocked as accel's own workers do,
 * through the same monitor and the same counts:
 * - for waits accel cannot see (a sleep, a lock, I/O, a channel of the
 *   host's), by the monitor: it watches each host worker's visit on the thread
 *   that began it (or attached it last), by that thread's CPU clock and
 *   run state in /proc. A host's thread may sleep while its op computes
 *   (Go takes the thread's P from a goroutine inside a long op and the
 *   thread sleeps until the P comes back), so a host worker counts as off
 *   a CPU below 1/64 of a window on it, not below half. A window begins
 *   at the first tick that finds the visit, or its next op when the host
 *   bumps the host worker's op word (accel_host_op_word); a host worker is counted
 *   while work is queued or no general-lane worker is parked, and, with
 *   accel_runtime_config.host_cpus set, first counted only after a window
 *   in which the process ran on fewer than host_cpus - 1/2 CPUs (else
 *   the thread waits for one of the host's busy CPUs, Go's P). Visits begun by
 *   accel_host_submit_own(_ex) are the submitter's own op on its own
 *   thread, holding no worker: the monitor does not watch them;
 * - at once between accel_host_blocking_begin(rt, w) and
 *   accel_host_blocking_end(rt, w), which the host calls from the thread
 *   driving the host worker, with its visit open, around the waits it knows of
 *   (Go: the binding's own waits, a nested Submit or Sync, a blocking
 *   call an op announces); pairs nest. The monitor does not judge a host worker
 *   inside such a pair;
 * - at once for the whole of a visit begun by accel_host_visit_begin or
 *   accel_host_submit_begin whose session's last visit waited, as
 *   accel's own workers are (accel.h, "Ops that block"): the begin
 *   counts it, as a pair around the visit would (host_wake or host_grow
 *   may run inside the begin), and the end judges it; the host does
 *   nothing. An accel_host_blocking_end with none of the host's begins
 *   open stays ACCEL_EINVAL inside such a visit. A host thread's wait for
 *   a CPU of the host's (Go: a P) reads as off a CPU to the end's
 *   judgement too.
 * A host worker counted blocked hands its place on: a parked host worker is woken
 * (host_wake), else, when work is queued and fewer extra workers are
 * active than host workers blocked (and under max_extra_workers), host_grow is
 * called (from the monitor's thread when the monitor detected it). The
 * host's new host worker then calls accel_host_worker_add(rt, &w2), which gives
 * it an extra worker w2 (general lane, index >= workers) or ACCEL_EAGAIN
 * when none is owed any more (it then just exits), and drives w2 with the
 * loop above. After each visit of an extra worker (ended with
 * accel_host_visit_end_stop, as it may leave) the host worker calls
 * accel_host_worker_leave(rt, w2, ACCEL_HOST_LEAVE_IF_SURPLUS): ACCEL_OK
 * when the host worker was surplus (more extras than blocked host workers) and is gone;
 * ACCEL_EAGAIN: it stays. An extra worker idle for a while leaves with
 * flags 0. A submit that finds no parked host worker while host workers are owed calls
 * host_grow too. Same bounds as accel's own threads: at most workers +
 * blocked host workers run ops that are not blocked once surplus host workers have
 * left. The monitor's tick is block_detect_ns; it sleeps while nothing
 * waits for a worker. Returns ACCEL_OK, or ACCEL_EINVAL (rt not
 * host-driven or NULL, worker not a host worker in use, for _begin no visit
 * open, for _end no begin open, for _leave a visit open or the host worker
 * idle-announced or not an extra worker; nothing changed), ACCEL_EAGAIN
 * as said. */
#define ACCEL_HOST_LEAVE_IF_SURPLUS 0x1u
/* How long an extra worker stays idle before it leaves (flags 0): what
 * accel's own extra workers wait, in ns. */
#define ACCEL_HOST_EXTRA_IDLE_NS 50000000
ACCEL_API int accel_host_blocking_begin(accel_runtime *rt, unsigned worker);
ACCEL_API int accel_host_blocking_end(accel_runtime *rt, unsigned worker);
ACCEL_API int accel_host_worker_add(accel_runtime *rt, unsigned *worker);
ACCEL_API int accel_host_worker_leave(accel_runtime *rt, unsigned worker,
                                    unsigned flags);

/* Host worker `worker`'s op word, for the monitor: the thread driving the host worker
 * adds 1 to it as it starts each op it was handed (an atomic add, or a
 * relaxed atomic store of a count it keeps: __atomic_store_n(p, v,
 * __ATOMIC_RELAXED); Go's atomic.AddUint64), so that a wait in a later op
 * of a visit is judged on its own, from the first tick that finds that op,
 * as a wait that begins a visit is. A host that never adds to it is
 * watched per visit: a visit of several ops with CPU work between their
 * waits then has most of its waits found late or not at all. The word
 * lives as long as rt; only the host worker's driving thread writes it. NULL:
 * rt not host-driven or NULL, or worker not a base or extra worker index
 * (any extra index, in use or not: the word of a host worker added later is the
 * same). */
ACCEL_API uint64_t *accel_host_op_word(accel_runtime *rt, unsigned worker);

#ifdef __cplusplus
}
#endif
#endif /* ACCEL_HOST_H */
