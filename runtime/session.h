/*
 * The session object.
 *
 * Runnable or not is not a word of the session: it is SCHED, a bit of the
 * ring's tail word (ring.h), so that a submit's one reservation CAS is
 * also its kick. Whoever sets SCHED (the producer whose reservation found
 * it clear, or a producer that claims a deferred session) enqueues the
 * session; the worker that picks it is the ring's only consumer until it
 * leaves (accel__ring_sc_leave). "Closing" is CLOSED, bit 63 of the same
 * word, so one RMW both closes and fixes the count of accepted ops (ring.h,
 * session.c). Device work in flight is not a bit either: the backend's
 * poll() returns it, and the visiting worker re-queues the session.
 *
 * Lifetime: a session is freed after an RCU grace period once `refs` drops
 * to 0. Handles hold refs; so does SCHED (taken by the producer that sets
 * the bit, dropped by the worker that clears it, passed along unchanged
 * through a deferral), so a session is never freed while queued, running
 * or deferred. Lookups hold an RCU read-side section for their table walk;
 * workers hold one only at the end of a visit, while the session may pass
 * to another thread (visit.c), never while an op runs.
 *
 * Cache lines: see the layout of struct accel_session below.
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
#include "waiters.h"
#include "ring.h"
#include "sched_core.h"
#include "table.h"
#include "waitstat.h"

struct accel_ctx {
    accel_session *session;
};

struct accel_session {
    /* Three 128-byte pairs (adjacent-line prefetch moves lines in pairs,
     * so each writer gets a pair of its own): the producers', the visit's,
     * the cold rest. The ring's producer half (ring.h) opens pair A and its
     * consumer half sits on pair B's first line, so each side's per-op
     * fields share its pair. A visit of a CPU session touches pair B, line
     * A1 (read-only for it) and the slots it takes:
     * with 100k sessions each of those lines is a cache miss, so what a
     * visit writes is packed into pair B, scheduler entity included, and
     * the worker prefetches the three lines and the next slot of the
     * session it will visit next (worker.c). 384 bytes in all; the static
     * asserts below keep it so. */

    /* ---- pair A, line 0: the ring's producer half (tail CAS), fields
     * written at open/close, and the reclamation's head (written only
     * once no handle and no SCHED are left, so no producer shares the
     * line any more) */
    alignas(128) accel__ring_prod rp;
    _Atomic uint32_t priority;
    uint32_t stamp_mask;
    struct rcu_head rcu;
    /* ---- pair A, line 1: read on every op and every visit, written
     * rarely (waiters' wake_at, event and room_waiters: by closers,
     * syncers and producers about to sleep, and by the consumer that
     * wakes them) */
    alignas(64) accel_runtime *rt;
    const accel__backend_ops *bops;
    void *bstate;
    uint64_t *stamps; /* submit time of every ACCEL__WAIT_SAMPLE-th
                         position, indexed (pos / SAMPLE) & stamp_mask;
                         they open the session's tail (below) */
    char *id; /* NUL-terminated, in the tail after the stamps */
    uint64_t serial;            /* unique per session in the process:
                                   tickets carry it (cancel.c) */
    /* The completion and room waits (waiters.h): its first three words
     * end this line, its `finished` opens pair B (asserted below). */
    accel__waiters waiters;

    /* ---- pair B, line 0 (from waiters.finished, the consumer's store
     * per run): the ring's consumer half and what a visit writes per op
     * (whichever worker holds SCHED), the flag it reads per op or per run
     * of takes, written rarely by others, and the backend kind (read by
     * the session's own ops: ctx accessors) */
    accel__ring_cons rc;
    _Atomic uint64_t dispatched, completed;
    _Atomic uint64_t service_ns;
    _Atomic uint32_t close_cancels;  /* close(CANCEL) began */
    uint8_t backend; /* accel_backend */
    /* Non-zero while the session has a batch function (batch.c): the
     * visit's one look at batching, on this line it loads anyway. */
    _Atomic uint8_t batched;
    /* Non-zero while the session's ops wait off a CPU: its last visit was
     * found blocked by the monitor, or began counted blocked and spent
     * most of its time off a CPU. Its next visit begins counted blocked
     * (compensate.c). Written by the visiting worker at a visit's end,
     * read at the next visit's begin. */
    _Atomic uint8_t blocks;
    /* ---- pair B, line 1: the scheduler entity (the visiting worker
     * charges and re-queues it), the visit count */
    alignas(64) accel__sched_entity se;
    _Atomic uint64_t visits;

    /* ---- pair C, line 0: the consumer's rare counters, the wait
     * statistics (every ACCEL__WAIT_SAMPLE-th op), the budget (reservers'
     * CAS) */
    alignas(128) _Atomic uint64_t failed;
    _Atomic uint64_t canceled;
    _Atomic uint64_t expired;  /* ops not started by their deadline */
    accel__waitstat wait;
    accel__budget budget;
    /* ---- pair C, line 1: what a lookup touches in the session it finds
     * (the table entry with the id's pointer, length and hash, the refs it
     * takes), apart from the producers' line so that lookups and submits
     * do not contend; then the runtime's list and the arena size */
    alignas(64) accel__table_node table_node; /* keyed by id */
    _Atomic uint64_t refs;      /* bits 0..31: references (handles + the
                                   scheduler's, SCHED); bits 32..63: user
                                   handles (open, lookups - releases). One
                                   word: a lookup takes both with one RMW,
                                   and a release drops both with one */
    struct cds_list_head rt_link; /* runtime's list; under rt->list_lock */
    uint32_t arena_units; /* this allocation's size in the runtime's arena
                             (arena.h); 0: a plain allocation */
};

/* The ring's halves of a session, for the ring.h calls. */
#define ACCEL__RING(s) (&(s)->rp), (&(s)->rc)

_Static_assert(offsetof(struct accel_session, rcu) + sizeof(struct rcu_head) <=
                   64,
               "pair A, line 0: the producers' line holds the RCU head");
_Static_assert(offsetof(struct accel_session, rt) == 64,
               "pair A: producers' line, then the read-only line");
_Static_assert(offsetof(struct accel_session, waiters) >= 64 &&
                   offsetof(struct accel_session, waiters.finished) == 128,
               "waiters: three words on line A1, finished opening pair B");
_Static_assert(offsetof(struct accel_session, rc) >= 128 &&
                   offsetof(struct accel_session, backend) < 192,
               "pair B, line 0: the ring's consumer half, counters, flag");
_Static_assert(offsetof(struct accel_session, se) == 192 &&
                   offsetof(struct accel_session, visits) < 256,
               "pair B, line 1: the entity and the visit count");
_Static_assert(offsetof(struct accel_session, failed) == 256,
               "pair C: the cold rest");
_Static_assert(offsetof(struct accel_session, table_node) == 320 &&
                   offsetof(struct accel_session, refs) +
                           sizeof(uint64_t) <=
                       384,
               "pair C, line 1: the table entry (id, length, hash), refs");
_Static_assert(sizeof(struct accel_session) == 384,
               "the session is three 128-byte pairs");
/* The session's memory (arena.h): the session, then its ring slots
 * (128-byte aligned, since sizeof(accel_session) is a multiple of 128)
 * and the ring's EX side array (ring.h); then its tail, the wait stamps,
 * the batch state's word and the id. A plain allocation holds both, the tail right after the
 * slots (one malloc header, no second alignment pad, ids paid by their
 * length); in the arena's huge-page chunks the tail lies apart, so that
 * the session need not round up to 128 bytes for it. */

/* Set in a hint when the next visit's first slot is the ring's last:
 * the slot after it is then the first (offset sizeof(accel_session)). */
#define ACCEL__HINT_WRAPS (UINT32_C(1) << 31)

/* The holder, before it enqueues s: the next visit begins at position
 * pos (mask: the ring's, from the caller's own half). The scheduler hands
 * this back with accel__sched_peek, and the worker prefetches that slot
 * and the one after it, which the visit's look for more reads (worker.c):
 * the slot's offset from the session, whose slots follow it in the same
 * allocation, and ACCEL__HINT_WRAPS when the slot after is the first. */
static inline void accel__session_set_next(accel_session *s, uint64_t pos,
                                           uint64_t mask)
{
    s->se.hint = (uint32_t)(sizeof(accel_session) +
                            (pos & mask) * sizeof(accel__ring_slot)) |
                 ((pos & mask) == mask ? ACCEL__HINT_WRAPS : 0);
}

/* The session's batch state (batch.h): a word of its tail, right after
 * the stamps, NULL until accel_session_set_batch first sets one; freed
 * with the session. */
struct accel__batch;
static inline struct accel__batch *_Atomic *
accel__session_batch_word(const accel_session *s)
{
    return (struct accel__batch *_Atomic *)(s->stamps +
                                            (size_t)s->stamp_mask + 1);
}

/* The running op's session on this thread (NULL outside ops): EDEADLK
 * checks and close-from-inside. */
extern _Thread_local accel_session *accel__tls_current;

/* Sessions reclaimed after their grace period, process-wide (a count for
 * tests: reclamation must not wait for running ops). */
extern _Atomic uint64_t accel__sessions_reclaimed;

/* Test hook: when set, close calls it between unpublishing the id and its
 * LP (the window in which a new session may already have the id while
 * this one is not yet closed). NULL outside tests. */
extern void (*_Atomic accel__close_window_hook)(accel_session *s);
/* Test hook: when set, the release of a session's last handle calls it
 * right after dropping the handle, before it closes the session. NULL
 * outside tests. */
extern void (*_Atomic accel__release_window_hook)(accel_session *s);

/* Units of the refs word. */
#define ACCEL__SESSION_REF UINT64_C(1)
#define ACCEL__SESSION_HANDLE (UINT64_C(1) << 32)

/* References held (the low half of the refs word). */
static inline uint32_t accel__session_refs_of(uint64_t word)
{
    return (uint32_t)word;
}

/* Takes a reference (the producer whose reservation set SCHED). */
static inline void accel__session_ref(accel_session *s)
{
    /* relaxed: the caller already holds a ref or an RCU read section. */
    atomic_fetch_add_explicit(&s->refs, ACCEL__SESSION_REF,
                              memory_order_relaxed);
}
void accel__session_unref(accel_session *s);

/* Adds `add` (a reference, and for a lookup a handle too) unless the
 * references already dropped to 0 (then the object only waits for its
 * grace period): lookups, the destroy walk. One CAS when uncontended.
 * relaxed: the caller's RCU read section or list lock keeps the object
 * alive while it tries. */
static inline bool accel__session_tryref_add(accel_session *s, uint64_t add)
{
    uint64_t w = atomic_load_explicit(&s->refs, memory_order_relaxed);
    while (accel__session_refs_of(w) != 0 &&
           !atomic_compare_exchange_weak_explicit(&s->refs, &w, w + add,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
    return accel__session_refs_of(w) != 0;
}

static inline bool accel__session_tryref(accel_session *s)
{
    return accel__session_tryref_add(s, ACCEL__SESSION_REF);
}

/* A lookup's new handle and its reference, unless no handle is left: the
 * release of the last one closes the session, so from its drop (one CAS,
 * accel_session_release) the id is no one's to find. relaxed: as
 * accel__session_tryref_add. */
static inline bool accel__session_tryhandle(accel_session *s)
{
    uint64_t w = atomic_load_explicit(&s->refs, memory_order_relaxed);
    while ((w >> 32) != 0 &&
           !atomic_compare_exchange_weak_explicit(
               &s->refs, &w, w + ACCEL__SESSION_HANDLE + ACCEL__SESSION_REF,
               memory_order_relaxed, memory_order_relaxed))
        ;
    return (w >> 32) != 0;
}

/* The full stats of this library's layout (accel_session_get_stats_ex
 * writes them by size; the Prometheus text, metrics.c, formats them): the
 * one reader of a session's counters. */
void accel__session_fill_stats(const accel_session *s,
                               accel_session_stats *out);

/* A session held back to fill a batch (batch.c) goes back to the queue
 * now: close, and a won accel_cancel, after their store. */
void accel__session_kick_hold(accel_session *s);

/* Frees a session with no refs left (runtime destroy). */
void accel__session_free_now(accel_session *s);

#endif
