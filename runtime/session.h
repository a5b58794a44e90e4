/*
 * The session object and its state word.
 *
 * State word (32 bits, `state`):
 *
 *   bit 0  SCHEDULED  the session is in the scheduler or held by a worker;
 *                     whoever sets it (0 -> 1) must enqueue the session,
 *                     and the holder is the ring's only consumer
 *   bits 1..31        zero
 *
 * "Closing" is not a bit here: it is CLOSED, bit 63 of the ring tail, so
 * that one RMW both closes and fixes the count of accepted ops (ring.h,
 * session.c). Device work in flight is not a bit either: the backend's
 * poll() returns it, and the visiting worker re-queues the session.
 *
 * No lost wake-up: a producer publishes its slot ([R1]) and then sets
 * SCHEDULED with an acq_rel RMW; a worker that finds the ring empty clears
 * SCHEDULED with an acq_rel RMW and then looks at the ring again. The two
 * RMWs are ordered in the word's modification order: if the producer's
 * comes first, the worker's clear reads from it and sees the slot (release
 * sequence); if the worker's comes first, the producer sees the bit clear
 * and enqueues the session itself. Either way the op is run.
 *
 * Lifetime: a session is freed after an RCU grace period once `refs` drops
 * to 0. Handles hold refs; so does SCHEDULED (taken by whoever sets the
 * bit, dropped by the worker that clears it), so a session is never freed
 * while queued or running. Lookups hold an RCU read-side section for their
 * table walk; workers hold none (their reference is enough).
 *
 * Cache lines: see the layout of struct accel_session below (three
 * 128-byte pairs: producers, consumer, scheduler/budget/table).
 */
#ifndef ACCEL_RUNTIME_SESSION_H
#define ACCEL_RUNTIME_SESSION_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <urcu/list.h>
#include <urcu/rculfhash.h>
#include <urcu/urcu-memb.h>

#include "accel/accel.h"
#include "backend.h"
#include "budget.h"
#include "ring.h"
#include "sched.h"
#include "waitstat.h"

#define ACCEL__S_SCHEDULED 0x1u

struct accel_ctx {
    accel_session *session;
};

struct accel_session {
    /* Three 128-byte pairs (adjacent-line prefetch moves lines in pairs,
     * so each writer gets a pair of its own): producers, consumer, the
     * visiting worker's scheduler state. 384 bytes in all; the static
     * asserts below keep it so. */

    /* ---- pair A, line 0: producers (tail CAS, state RMW, kick's ref) and
     * fields written only at open/close */
    alignas(128) _Atomic uint64_t tail; /* ring tail | ACCEL__RING_CLOSED */
    _Atomic uint64_t head_cache;        /* producers' copy of head (ring.h) */
    _Atomic uint32_t state;
    _Atomic uint32_t refs;      /* handles + the scheduler's (SCHEDULED) */
    _Atomic uint32_t handles;   /* user handles: open, lookups - releases */
    _Atomic uint32_t priority;
    struct cds_list_head rt_link; /* runtime's list; under rt->list_lock */
    struct rcu_head rcu;
    /* ---- pair A, line 1: read-only after open, read on every op */
    accel__ring ring;
    accel_runtime *rt;
    const accel__backend_ops *bops;
    void *bstate;
    uint64_t *stamps; /* submit time of every ACCEL__WAIT_SAMPLE-th
                         position, indexed (pos / SAMPLE) & stamp_mask;
                         in the same allocation */
    uint32_t stamp_mask;        /* < depth <= ACCEL_QUEUE_DEPTH_MAX */
    uint64_t serial;            /* unique per session in the process:
                                   tickets carry it (cancel.c) */

    /* ---- pair B: the consumer (whichever worker holds SCHEDULED) */
    alignas(128) _Atomic uint64_t head;
    _Atomic uint64_t finished;  /* ops whose done callback has returned */
    _Atomic uint64_t dispatched, completed, failed, cancelled, expired;
    _Atomic uint64_t service_ns, visits;
    _Atomic uint64_t wake_at;   /* lowest `finished` a sleeper waits for;
                                   UINT64_MAX: none */
    _Atomic uint32_t space_waiters; /* 1: a producer may sleep for room
                                       (set by it, cleared by the waking
                                       consumer) */
    _Atomic uint32_t event;     /* futex word, bumped on progress */
    _Atomic uint32_t cancel;    /* close(CANCEL) began */
    accel_backend backend;
    accel__waitstat wait;

    /* ---- pair C: scheduler state (the visiting worker), the budget
     * (reservers' CAS), the table entry (lookups) */
    alignas(128) accel__sched_entity se;
    accel__budget budget;
    struct cds_lfht_node table_node;
    uint32_t hash;
    uint32_t id_len;
    char *id; /* NUL-terminated, in the same allocation (after the slots) */
};

_Static_assert(offsetof(struct accel_session, ring) == 64,
               "pair A: producers' line, then the read-only line");
_Static_assert(offsetof(struct accel_session, head) == 128,
               "pair B starts the consumer's lines");
_Static_assert(offsetof(struct accel_session, se) == 256,
               "pair C: scheduler, budget, table entry");
_Static_assert(sizeof(struct accel_session) == 384,
               "the session is three 128-byte pairs");
/* One allocation holds the session, then its ring slots (128-byte
 * aligned, since sizeof(accel_session) is a multiple of 128) and the
 * ring's EX side array (ring.h), then the wait stamps,
 * then its id: one malloc header, no second alignment pad, ids paid by
 * their length. */

/* The running op's session on this thread (NULL outside ops): EDEADLK
 * checks and close-from-inside. */
extern _Thread_local accel_session *accel__tls_current;

/* Sessions reclaimed after their grace period, process-wide (a count for
 * tests: reclamation must not wait for running ops). */
extern _Atomic uint64_t accel__sessions_reclaimed;

/* Takes a reference (producer setting SCHEDULED, lookups). */
static inline void accel__session_ref(accel_session *s)
{
    /* relaxed: the caller already holds a ref or an RCU read section. */
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}
void accel__session_unref(accel_session *s);

/* Makes the session runnable after its ring got published ops: sets
 * SCHEDULED and, if it was clear, takes the scheduler's ref, enqueues the
 * session and wakes a parked worker. Any thread. */
void accel__session_kick(accel_session *s);

/* Wakes every thread sleeping on the session's event word if any. */
void accel__session_notify(accel_session *s);

/* Sleeps until `finished` >= target: ACCEL_OK, or ACCEL_ETIMEDOUT once
 * deadline (accel__deadline()) passed. */
int accel__session_wait_finished(accel_session *s, uint64_t target,
                                 uint64_t deadline);
/* Sleeps until the ring has room or is closed (then the caller retries):
 * ACCEL_OK, or ACCEL_ETIMEDOUT. */
int accel__session_wait_room(accel_session *s, uint64_t deadline);

/* The full stats of this library's layout (abi.c writes them by size). */
void accel__session_fill_stats(const accel_session *s,
                               accel_session_stats *out);

/* Frees a session with no refs left (runtime destroy). */
void accel__session_free_now(accel_session *s);

#endif
