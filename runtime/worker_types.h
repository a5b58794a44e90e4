/*
 * One worker (struct accel__worker): an accel worker thread (worker.c), an
 * extra worker (compensate.c) or a host-driven worker's slot (host.c). Its
 * counters, its block state and the monitor's samples of it. A structure
 * apart from the worker pool's functions (worker.h): the monitor
 * (compensate.c), which the pool calls down into, reads it.
 */
#ifndef ACCEL_RUNTIME_WORKER_TYPES_H
#define ACCEL_RUNTIME_WORKER_TYPES_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "accel/accel.h"
#include "lane.h"

typedef struct accel__worker {
    /* ---- written by this worker, per visit: counters (relaxed load +
     * store) read by stats and metrics from any thread, and what the
     * monitor reads of it. */
    alignas(64) _Atomic uint64_t picks; /* (alignas binds each declarator) */
    _Atomic uint64_t visits, parks;
    /* 1 while a visit runs: the monitor's view of a long op
     * (compensate.c). */
    _Atomic uint32_t in_visit;
    /* ACCEL__BLOCK_* bits: OWN set by this worker, SEEN by the monitor. */
    _Atomic uint32_t block;
    /* kernel id of the thread, for the monitor (a host worker: of the
     * thread running its visit, host.c) */
    _Atomic int tid;
    unsigned block_depth;   /* nested blocking waits and hints (owner) */
    /* The time off a CPU in this worker's own waits that ended in the
     * running visit (owner only): the visit is charged to the session's
     * share without it (accel__compensate_visit_blocked_ns). */
    uint64_t own_ns;
    /* Their time on a CPU (owner only; from a presumed visit's begin):
     * what its judge weighs own_ns against (compensate.c). */
    uint64_t own_on_ns;
    /* ---- a host worker's ops begun (the host adds 1 as it starts each op
     * of a visit: accel_host_op_word), read by the monitor at each tick:
     * a wait in a later op of a visit is judged on a window of its own
     * (compensate.c). 0 for accel's own workers. Its own line: written
     * per op by the slot's thread, read by the monitor. */
    alignas(64) _Atomic uint64_t ops;
    /* ---- written by the monitor when it counts this worker blocked or
     * takes the mark back (rare), read by this worker at a visit's end.
     * Where it counted it (SEEN): the clock and the thread's time on a
     * CPU and waiting for one (/proc schedstat) then; detected_t 0 while being
     * written (a seqlock, compensate.c). */
    alignas(64) _Atomic uint64_t detected_t;
    /* The number (`visits`) of the visit the monitor last detected: a
     * visit that finds its own number here when its worker judges it
     * (presume.h, its session's `blocks`) was detected. A detection that
     * lands after that judgement marks no session, its own visit's
     * included (a hint: that session's next found wait marks it). */
    _Atomic uint64_t detected_visit;
    _Atomic uint64_t detected_cpu, detected_rd;
    /* The time asleep between a count and the tick at which the monitor
     * found the worker on a CPU again and took the mark back, summed over
     * the visit numbered detected_bank_vis (0 while being written: a seqlock,
     * compensate.c). */
    _Atomic uint64_t detected_bank, detected_bank_vis;
    /* ---- read-mostly, and the owner's hint state. */
    alignas(64) accel_runtime *rt;
    pthread_t thread;
    unsigned index; /* trace probes name the worker by it */
    accel__lane lane;
    int cpu;       /* pinned to this CPU; -1: not pinned */
    bool extra;    /* an extra worker (compensate.c) */
    unsigned extra_state; /* extra workers: ACCEL__EXTRA_*, under comp.lock */
    /* The outermost open wait of this worker (owner only): when it began,
     * by the clock, and the thread's time on a CPU (its CPU clock) and
     * waiting for one (its schedstat; UINT64_MAX: none) then, read on
     * own_thread, the thread that marked them. own_t0
     * 0: no thread marks it (a host visit detached, until an attach). */
    uint64_t own_t0, own_cpu0, own_rd0;
    pthread_t own_thread;
    /* When a host visit was detached parked or lent
     * (accel_host_visit_detach_ex; 0: neither), and which: its time to
     * the attach counts off a CPU (parked) or is lent to another
     * session's visit on the thread (lent_ns: not charged, and a presumed
     * visit's judge weighs it on neither side). Owner only. */
    uint64_t parked_t0;
    bool parked_lent;
    uint64_t lent_ns;
    /* The running visit's look at its session's `blocks` (owner only):
     * whether it began counted blocked, and the session's ops dispatched
     * then. */
    bool presumed;
    uint64_t dispatched_seen;
    /* ---- the monitor's sample of this worker (monitor thread only,
     * written every tick that finds it in a visit). */
    alignas(64) uint64_t m_visits;
    uint64_t m_t0, m_busy0;
    /* 0: not sampled in visit m_visits; 1: sampled, in its first window
     * (one tick); 2: in a later window (two ticks). While counted,
     * m_busy0 and m_t0 are the last tick's sample. */
    unsigned m_phase;
    int m_tid; /* the thread sampled (a host worker's visit may move) */
    uint64_t m_ops; /* ops at the sample: a host worker's op sampled */
    /* The tick's time and the process's CPU time when the window began
     * (host_cpus set: host_saturated). */
    uint64_t m_pt0, m_proc0;
} accel__worker;

#endif
