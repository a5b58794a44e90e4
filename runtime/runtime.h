/* The runtime object: workers, scheduler, session table and list. */
#ifndef ACCEL_RUNTIME_RUNTIME_H
#define ACCEL_RUNTIME_RUNTIME_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <urcu/list.h>
#include <urcu/rculfhash.h>

#include "accel/accel.h"
#include "accel/host.h"
#include "arena.h"
#include "backend_registry.h"
#include "compensate.h"
#include "fork.h"
#include "sched_core.h"

#define ACCEL__WORKERS_MAX 1024u
#define ACCEL__EXTRA_MAX 4096u /* cap on max_extra_workers */
#define ACCEL__EXTRA_DEFAULT_MIN 64u /* max_extra_workers 0: 4 x, at least */
#define ACCEL__SESSIONS_MAX (1u << 20)

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
    /* kernel id of the thread, for the monitor (a host slot: of the
     * thread running its visit, host.c) */
    _Atomic int tid;
    unsigned block_depth;   /* nested blocking waits and hints (owner) */
    /* The time off a CPU in this worker's own waits that ended in the
     * running visit (owner only): the visit is charged to the session's
     * share without it (accel__comp_visit_blocked_ns). */
    uint64_t own_ns;
    /* ---- a host slot's ops begun (the host adds 1 as it starts each op
     * of a visit: accel_host_op_word), read by the monitor at each tick:
     * a wait in a later op of a visit is judged on a window of its own
     * (compensate.c). 0 for accel's own workers. Its own line: written
     * per op by the slot's thread, read by the monitor. */
    alignas(64) _Atomic uint64_t ops;
    /* ---- written by the monitor when it counts this worker blocked or
     * takes the mark back (rare), read by this worker at a visit's end.
     * Where it counted it (SEEN): the clock and the thread's time on a
     * CPU and waiting for one (/proc schedstat) then; seen_t 0 while being
     * written (a seqlock, compensate.c). */
    alignas(64) _Atomic uint64_t seen_t;
    _Atomic uint64_t seen_cpu, seen_rd;
    /* The time asleep between a count and the tick at which the monitor
     * found the worker on a CPU again and took the mark back, summed over
     * the visit numbered seen_bank_vis (0 while being written: a seqlock,
     * compensate.c). */
    _Atomic uint64_t seen_bank, seen_bank_vis;
    /* ---- read-mostly, and the owner's hint state. */
    alignas(64) accel_runtime *rt;
    pthread_t thread;
    unsigned index; /* trace probes name the worker by it */
    accel__lane lane;
    int cpu;       /* pinned to this CPU; -1: not pinned */
    bool extra;    /* an extra worker (compensate.c) */
    unsigned slot; /* extra workers: ACCEL__SLOT_*, under comp.lock */
    /* The outermost open wait of this worker (owner only): when it began,
     * by the clock and the thread's CPU clock. */
    uint64_t own_t0, own_cpu0;
    /* ---- the monitor's sample of this worker (monitor thread only,
     * written every tick that finds it in a visit). */
    alignas(64) uint64_t m_visits;
    uint64_t m_t0, m_busy0;
    /* 0: not sampled in visit m_visits; 1: sampled, in its first window
     * (one tick); 2: in a later window (two ticks). While counted,
     * m_busy0 and m_t0 are the last tick's sample. */
    unsigned m_phase;
    int m_tid; /* the thread sampled (a host slot's visit may move) */
    uint64_t m_ops; /* ops at the sample: a host slot's op sampled */
} accel__worker;

struct accel_runtime {
    /* ---- parking (see park.c). idle_*: parked workers of the lane in
     * the low 32 bits, how many of them a waker has claimed (sent a wake
     * for) in the high 32 (ACCEL__PARKED / ACCEL__CLAIMED). */
    alignas(64) _Atomic uint64_t idle_workers;
    _Atomic uint32_t park_seq; /* futex word */
    _Atomic uint32_t stopping;
    /* Compensation (compensate.h), read by the wake path when it finds no
     * parked worker: workers blocked now, extra workers active, and the
     * monitor's armed flag (its futex word). */
    _Atomic uint32_t blocked;
    _Atomic uint32_t extra_active;
    _Atomic uint32_t monitor_armed;
    /* short-lane workers park apart, so that a wake-up for work they may
     * not run never lands on them (see park.c) */
    alignas(64) _Atomic uint64_t idle_short;
    _Atomic uint32_t park_seq_short; /* futex word */

    alignas(64) accel__sched *sched;
    accel_runtime_config cfg;
    accel__worker *workers; /* 64-byte aligned array: nworkers base
                               workers, then comp.extra_max extra slots */
    unsigned *worker_cpus;  /* copy of cfg.worker_cpus, NULL if none */
    unsigned nworkers;
    struct cds_lfht *table;

    /* Cold paths only (open, final free, destroy): the list of every
     * session object not yet freed, so destroy can free the ones whose
     * handles were never released. */
    pthread_mutex_t list_lock;
    struct cds_list_head sessions;
    unsigned long nsessions;
    unsigned long table_want; /* buckets asked for, under list_lock */
    /* Serializes table resizes so that a smaller size asked for earlier
     * never lands after a larger one; table_buckets is under it. */
    pthread_mutex_t table_lock;
    unsigned long table_buckets;
    /* Bytes of sessions deferred to a grace period and not yet freed
     * (session.c bounds it: ACCEL__RECLAIM_BACKLOG_BYTES). */
    _Atomic size_t reclaim_pending;
    /* Session memory once there are many (arena.h); cold paths. */
    accel__arena arena;

    accel__comp comp; /* extra workers and the monitor (compensate.c) */

    /* Host-driven workers: one slot per worker (host.c); else NULL. */
    struct accel__host_slot *host;

    /* The hold-back's timer thread (batch.c), started by the first
     * accel_session_set_batch with a max_delay_ns; NULL until then. */
    struct accel__batch_timer *_Atomic batch_timer;

    uint32_t fork_gen; /* accel__fork_gen at create (fork.h) */
    /* One slot per accel_backend: ops, runtime-level state, probe result
     * (backend_registry.h). Written at create, read-only after. */
    accel__backend_slot backends[ACCEL__BACKEND_KINDS];
};

#define ACCEL__PARKED 1ull
#define ACCEL__CLAIMED (1ull << 32)


/* Host-driven workers (host.c): the slots, allocated at create. */
int accel__host_create(accel_runtime *rt);
void accel__host_free(accel_runtime *rt);


#endif
