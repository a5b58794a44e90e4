/*
 * Compensation for blocked workers (compensate.c): a worker that waits
 * inside an op hands its place to another worker, so that an op of one
 * session never waits for a worker that sits blocked in an op of another.
 *
 * A worker is blocked while it is inside one of accel's own waits (a
 * submit_wait, a room wait, a sync or draining close, a destroy of another
 * runtime: the block hook of waiters.h), inside accel_blocking_begin/_end,
 * or from the tick at which the monitor has found it inside one visit at
 * two ticks with most of that time off a CPU (its thread's CPU clock)
 * and neither running nor runnable then (its /proc stat state), to the
 * tick that finds it on a CPU again or in another visit, or through a
 * visit whose session's last visit waited (presumed: counted as inside
 * accel_blocking_begin/_end). Each worker's
 * `block` word has a bit for each of the two ways (a presumed visit's is
 * ANNOUNCED); `blocked` counts the
 * workers with any bit set. A blocked worker's place goes to a parked general worker,
 * or to an extra worker started for it (at most max_extra_workers, and
 * never more active extras than blocked workers): so at most `workers`
 * workers run ops that are not blocked, once a surplus extra has reached
 * the end of its visit and retired.
 *
 * Layering: this file sits under worker.c and park.c. It starts extra
 * threads and wakes parked workers only through the hooks worker.c hands
 * it (accel__compensate_ops: worker.c's loop, park.c's wake); both call down
 * into it.
 */
#ifndef ACCEL_RUNTIME_COMPENSATE_H
#define ACCEL_RUNTIME_COMPENSATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "accel/accel.h"
#include "accel/host.h"
#include "compensate_types.h"

struct accel__worker;

/* Slot states of an extra worker (accel__worker.extra_state, under lock). */
enum { ACCEL__EXTRA_FREE = 0, ACCEL__EXTRA_RUN = 1, ACCEL__EXTRA_EXITED = 2 };

/* Bits of accel__worker.block. */
#define ACCEL__BLOCK_ANNOUNCED 1u    /* the worker's own waits and announced waits */
#define ACCEL__BLOCK_DETECTED 2u   /* the monitor's detection */

/* Idle extra workers retire after this long parked (a host's extra
 * host workers are told the same: host.h). */
#define ACCEL__EXTRA_IDLE_NS ACCEL_HOST_EXTRA_IDLE_NS

/* At create: the cap and the threshold resolved; the lock. */
void accel__compensate_init(accel_runtime *rt, unsigned extra_max,
                            uint64_t detect_ns);
void accel__compensate_fini(accel_runtime *rt);
/* After the base workers started (or, host-driven, at create): installs
 * the hooks and starts the monitor. ACCEL_OK or ACCEL_ENOMEM. */
int accel__compensate_start(accel_runtime *rt, const accel__compensate_ops *ops);
/* After the base workers were told to stop and joined: stops the
 * monitor, joins every extra worker (host-driven: the monitor only; the
 * host has stopped its host workers). */
void accel__compensate_stop(accel_runtime *rt);

/* A worker thread (base or extra) installs the block hook for itself. */
void accel__compensate_thread_begin(struct accel__worker *w);

/* A worker thread that leaves closes what it kept open for itself (its
 * schedstat file, accel__compensate_self_schedstat). */
void accel__compensate_thread_end(void);

/* The wake path found no parked general worker for new work (park.c):
 * starts an extra if blocked workers are owed one, arms the monitor. Cold
 * unless a worker is blocked or the monitor sleeps. */
void accel__compensate_starved(accel_runtime *rt);

/* An extra worker at the top of its loop: true if it is surplus (more
 * active extras than blocked workers) and has taken itself out. */
bool accel__compensate_surplus(accel_runtime *rt);
/* An extra worker idle for ACCEL__EXTRA_IDLE_NS takes itself out. */
void accel__compensate_retire_idle(accel_runtime *rt);
/* Test seam (unit_blocking.c): when set, an extra worker that has taken
 * itself out of the count (surplus or idle; accel's own thread, or a
 * host's in accel_host_worker_leave) calls it before it gives its slot
 * up. NULL outside tests. */
extern void (*_Atomic accel__compensate_leave_hook)(struct accel__worker *w);

/* Whether every extra worker the cap allows is running: a wait that
 * begins now may have no one in its place. A visit of ops that wait runs
 * on past a quantum of wall time only while this is false (worker.c). */
bool accel__compensate_at_cap(const accel_runtime *rt);

/* At the end of a visit of accel's own worker w that began at t0 (or
 * within it: the call only reads, and a visit of ops that wait asks it
 * between ops, visit.h): how
 * long w sat blocked in it while another worker could run in its place
 * (compensate.c, "Charging"): the time off a CPU in its own waits and
 * announced waits, and the time asleep since the monitor detected it blocked; 0 at
 * the cap on extras; at most the visit. The share is not charged for it
 * (accel__sched_charge). own_ns is the caller's to zero at the visit's
 * start, and to skip the call when own_ns, block_depth and the block
 * word are all 0 and detected_bank_vis is not the visit's number (the common
 * visit: nothing to count). */
uint64_t accel__compensate_visit_blocked_ns(struct accel__worker *w, uint64_t t0);

/* The same for a host worker's visit, its own and announced waits only
 * (host.c): the time asleep after the monitor detected a host's thread
 * is charged, as the thread's clock cannot tell a wait from a wait for
 * one of the host's CPUs (Go: a P), and crediting it cost the Go node
 * example's blocking scenario 7% of its work (0.731x of the old design's
 * against 0.786x). The caller zeroes own_ns at the visit's start and may
 * skip the call when own_ns and block_depth are 0; an announcement left
 * open is re-marked at the call, so each visit is credited its own part. */
uint64_t accel__compensate_visit_announced_ns(struct accel__worker *w,
                                              uint64_t t0);

/* A host worker's visit moves between threads (host.c: attach, detach,
 * and a visit begun while an announcement of an earlier one is open).
 * Each thread's time off its CPU is read from its own clock: the thread
 * that leaves banks its part of an open wait (_detach, on that thread),
 * the thread that goes on marks the wait's start afresh (_attach, on
 * it); only an open wait (block_depth) has a part to bank or a mark to
 * take. The time from a detach to the attach is credited, open wait or
 * not, when the detach is parked (the host vouches that none of the
 * visit's code runs until the attach, ACCEL_HOST_DETACH_PARKED: it counts
 * off a CPU) or lent (the thread runs another session's visit meanwhile,
 * ACCEL_HOST_DETACH_LENT: not charged, and no wait). */
void accel__compensate_visit_detach(struct accel__worker *w, bool parked,
                                    bool lent);
void accel__compensate_visit_attach(struct accel__worker *w);

/* The uncommon halves of a visit's presumption hooks (presume.h, which
 * inlines the common path): s is marked (its last visit waited), and the
 * end of a visit that began counted blocked (returns whether s stays
 * marked). */
void accel__compensate_presume_begin(struct accel__worker *w,
                                     accel_session *s);
bool accel__compensate_presume_judge(struct accel__worker *w,
                                     accel_session *s);

/* The calling thread's time on a CPU and waiting on a run queue, in ns
 * (its /proc schedstat: one pread of a file it keeps open). false: no
 * schedstat here. */
bool accel__compensate_self_schedstat(uint64_t *cpu, uint64_t *rd);

/* Test hook: when set, the monitor reads the process's CPU time (ns)
 * from it instead of CLOCK_PROCESS_CPUTIME_ID (host_saturated), so that
 * a test can show a host whose CPUs are all busy, or all idle. */
extern uint64_t (*_Atomic accel__compensate_process_cpu_hook)(void);
/* Tests of the monitor's detection set it before their runtime: no visit
 * begins counted blocked (accel__presume_begin), so each wait
 * of a session is the monitor's to find. */
extern _Atomic bool accel__compensate_presume_off;

/* After an op's visit: an announcement the op left open is closed (accel.h). */
void accel__compensate_visit_done(struct accel__worker *w);

/* Host-driven runtimes (host.c; the monitor watches their host workers as it
 * watches accel's own workers): a blocked host worker's begin/end (ACCEL_EINVAL:
 * an end with no begin); an extra worker taken (ACCEL_OK and *worker, or
 * ACCEL_EAGAIN: none owed) and given back (surplus_only: only if surplus,
 * else ACCEL_EAGAIN). */
int accel__compensate_host_block(accel_runtime *rt, struct accel__worker *w,
                                 bool begin);
int accel__compensate_host_add(accel_runtime *rt, unsigned *worker);
int accel__compensate_host_leave(accel_runtime *rt, struct accel__worker *w,
                                 bool surplus_only);

#endif
