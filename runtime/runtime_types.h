/*
 * The runtime object (struct accel_runtime): created and destroyed by
 * runtime.c, read by every layer from the sessions up (docs/layers.md).
 * A structure apart from runtime.c's own header (runtime.h), so that a
 * lower file reaches the runtime's fields without including the top
 * layer: it includes only the structures it embeds.
 */
#ifndef ACCEL_RUNTIME_RUNTIME_TYPES_H
#define ACCEL_RUNTIME_RUNTIME_TYPES_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <urcu/list.h>
#include <urcu/rculfhash.h>

#include "accel/accel.h"
#include "arena.h"
#include "backend_registry_types.h"
#include "compensate_types.h"
#include "sched_core.h"
#include "worker_types.h"

#define ACCEL__SESSIONS_MAX (1u << 20)

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
                               workers, then comp.extra_max extra workers */
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

    accel__compensate comp; /* extra workers and the monitor (compensate.c) */

    /* Host-driven workers: one per worker index (host.c); else NULL. */
    struct accel__host_worker *host;

    /* The hold-back's timer thread (batch.c), started by the first
     * accel_session_set_batch with a max_delay_ns; NULL until then. */
    struct accel__batch_timer *_Atomic batch_timer;

    uint32_t fork_gen; /* accel__fork_gen at create (fork.h) */
    /* One entry per accel_backend: ops, runtime-level state, probe result
     * (backend_registry.h). Written at create, read-only after. */
    accel__backend_entry backends[ACCEL__BACKEND_KINDS];
};

#define ACCEL__PARKED 1ull
#define ACCEL__CLAIMED (1ull << 32)

#endif
