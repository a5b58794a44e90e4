/*
 * Bounded MPSC ring of ops: one per session.
 *
 * Theory of operation
 * -------------------
 * Positions are 64-bit counters that never wrap in practice. `tail` is the
 * next position to reserve (producers, CAS); `head` the next to consume
 * (the one consumer: whichever worker holds the session's SCHEDULED bit).
 * Bit 63 of `tail` is CLOSED: once set no reservation succeeds, so the
 * value below it is the final count of accepted ops (close's linearization
 * point, see session.c).
 *
 * A producer reserves k positions [t, t+k) with one CAS on tail after
 * checking t + k - head <= capacity, fills each slot and publishes it on
 * its own by storing seq = position + 1 (release). Producers never wait for
 * each other to reserve or publish, but the consumer takes positions in
 * order: a producer preempted between reserve and publish holds back every
 * later op of the session (published or not) until it publishes; other
 * sessions are not affected. The consumer reads slot[head].seq (acquire); == head + 1 means
 * published, anything else means empty or reserved-but-unpublished, and the
 * consumer leaves rather than spins (that producer's publish reschedules
 * the session). A slot's stale seq from an earlier lap is position - cap + 1,
 * never position + 1, so no sequence reset is needed.
 *
 * Litmus shape: message passing, twice.
 *   slot contents --[R1] seq release--> [A1] consumer acquire: reads op
 *   consumer copied op --[R2] head release--> [A2] producer acquire: may
 *   overwrite the slot below head.
 *
 * Cache lines: producers share the tail line (and the session state word
 * that lives beside it, see session.h); the consumer owns the head line.
 *
 * EX slots (per-op deadline and cancel, docs/cancel.md)
 * ------------------------------------------------------
 * An op submitted with a deadline or a ticket is published with the EX
 * flag in its seq and its deadline in a side array right after the slots
 * (`accel__ring_side`), so plain ops keep their 32-byte slot and pay one
 * test of a bit. seq of an EX slot moves, in this lap, only through
 *   (pos+1)|EX --cancel CAS--> (pos+1)|EX|CANCELED
 *   (pos+1)|EX[|CANCELED] --consumer fetch_or--> ...|TAKEN
 * and the canceller's CAS succeeds only from exactly (pos+1)|EX. So the
 * cancel-vs-take race is decided by which RMW comes first in seq's
 * modification order: one of them, exactly once. Positions stay below 2^60
 * (the flags live above); readiness compares the position bits only.
 */
#ifndef ACCEL_RUNTIME_RING_H
#define ACCEL_RUNTIME_RING_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accel/accel.h"
#include "yield.h"

#define ACCEL__RING_CLOSED (UINT64_C(1) << 63)

/* Flags in a slot's seq, above the position bits. */
#define ACCEL__SEQ_EX (UINT64_C(1) << 62)       /* deadline/ticket: side entry */
#define ACCEL__SEQ_TAKEN (UINT64_C(1) << 61)    /* consumer claimed it (EX) */
#define ACCEL__SEQ_CANCELED (UINT64_C(1) << 60) /* a canceller won (EX) */
#define ACCEL__SEQ_POS (ACCEL__SEQ_CANCELED - 1)

/* 32 bytes: two slots per cache line, so a producer and the consumer move
 * one line per two ops. (Wait-time stamps live beside the ring, see
 * session.h, not in every slot.) */
typedef struct accel__ring_slot {
    _Atomic uint64_t seq; /* position + 1 once published */
    accel_op op;
} accel__ring_slot;

typedef struct accel__ring {
    accel__ring_slot *slots;
    uint64_t mask; /* capacity - 1 */
} accel__ring;

/* Bytes a ring of this capacity needs: the slots, then the EX side array
 * (one deadline per slot). */
static inline size_t accel__ring_bytes(uint32_t capacity_pow2)
{
    return (size_t)capacity_pow2 * (sizeof(accel__ring_slot) + sizeof(int64_t));
}

int accel__ring_init(accel__ring *r, uint32_t capacity_pow2);
void accel__ring_fini(accel__ring *r);
/* Over zeroed memory the caller owns, accel__ring_bytes() long (no
 * allocation; no fini). */
static inline void accel__ring_init_at(accel__ring *r, accel__ring_slot *slots,
                                       uint32_t capacity_pow2)
{
    r->slots = slots;
    r->mask = capacity_pow2 - 1;
}

/* Reserves up to want positions: returns how many (0 when full) and the
 * first in *first. Returns -1 if the tail is CLOSED. Lock-free.
 *
 * Room is computed from head_cache, a copy of head kept on the producers'
 * line: the consumer writes head once per op, and if every reservation
 * read it, that line would bounce between the consumer's core and the
 * producers' on every op. The real head is read only when the cached copy
 * shows too little room. The cache may go stale, or even backwards when
 * two producers refresh it at once: a smaller head only understates the
 * room, never overstates it. head_cache NULL: read head every time. */
static inline int64_t accel__ring_reserve_cached(const accel__ring *r,
                                                 _Atomic uint64_t *tail,
                                                 _Atomic uint64_t *head,
                                                 _Atomic uint64_t *head_cache,
                                                 uint64_t want,
                                                 uint64_t *first)
{
    const uint64_t cap = r->mask + 1;
    _Atomic uint64_t *hsrc = head_cache ? head_cache : head;
    uint64_t t = atomic_load_explicit(tail, memory_order_relaxed);
    /* [A2] acquire (here and below): the consumer is done with every slot
     * below the head value read; pairs with [R2] in accel__ring_take(),
     * directly or through head_cache's release store below. */
    uint64_t h = atomic_load_explicit(hsrc, memory_order_acquire);
    for (;;) {
        if (t & ACCEL__RING_CLOSED)
            return -1;
        if (h > t) { /* t is older than h: take a fresh one */
            t = atomic_load_explicit(tail, memory_order_relaxed);
            continue;
        }
        /* A stale cache can lag t by more than cap: no room (and a
         * refresh below), never an underflowed, huge room. */
        uint64_t room = t - h >= cap ? 0 : cap - (t - h);
        if (room < want && head_cache) {
            uint64_t real = atomic_load_explicit(head, memory_order_acquire);
            if (real != h) {
                h = real;
                /* release: passes on what [A2] acquired to producers that
                 * read the cache. */
                atomic_store_explicit(head_cache, h, memory_order_release);
                continue;
            }
        }
        uint64_t k = want < room ? want : room;
        if (k == 0)
            return 0;
        /* LP of acceptance: the CAS that moves tail past our positions.
         * relaxed: it orders nothing by itself; each slot is published by
         * its own [R1], and close reads the final tail from the same
         * modification order. On failure t is reloaded. */
        if (atomic_compare_exchange_weak_explicit(tail, &t, t + k,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed)) {
            *first = t;
            return (int64_t)k;
        }
        ACCEL__YIELD_POINT();
    }
}

static inline int64_t accel__ring_reserve(const accel__ring *r,
                                          _Atomic uint64_t *tail,
                                          _Atomic uint64_t *head,
                                          uint64_t want, uint64_t *first)
{
    return accel__ring_reserve_cached(r, tail, head, NULL, want, first);
}

/* Fills and publishes the slot of a reserved position. Whatever the
 * producer wrote before (a wait stamp) is published with it. */
static inline void accel__ring_publish(accel__ring *r, uint64_t pos,
                                       const accel_op *op)
{
    accel__ring_slot *sl = &r->slots[pos & r->mask];
    sl->op = *op;
    /* [R1] release: publishes op; pairs with [A1]. */
    atomic_store_explicit(&sl->seq, pos + 1, memory_order_release);
}

/* Consumer only: is the slot at head published? (An EX slot's flags do
 * not matter here: a cancelled op is still taken, to complete it.) */
static inline bool accel__ring_ready(const accel__ring *r, uint64_t head)
{
    const accel__ring_slot *sl = &r->slots[head & r->mask];
    /* [A1] acquire: pairs with [R1]; makes the op (and an EX slot's side
     * entry) readable. */
    uint64_t seq = atomic_load_explicit(&sl->seq, memory_order_acquire);
    /* A plain slot compares whole (one compare, as before EX slots). */
    return seq == head + 1 || (seq & ACCEL__SEQ_POS) == head + 1;
}

/* Consumer only: takes the published op at *head (after ring_ready said
 * so; a plain slot: the worker takes with accel__ring_take_claim, which
 * also handles EX slots) and frees its slot (and position h: read anything kept beside the
 * ring for h before this). */
static inline void accel__ring_take(accel__ring *r, _Atomic uint64_t *head,
                                    uint64_t h, accel_op *op)
{
    accel__ring_slot *sl = &r->slots[h & r->mask];
    *op = sl->op;
    /* [R2] release: our reads of the slot happen before a producer's
     * reuse of it; pairs with [A2]. */
    atomic_store_explicit(head, h + 1, memory_order_release);
}

/* ----------------------------------------------------- EX slots */

static inline int64_t *accel__ring_side(const accel__ring *r)
{
    return (int64_t *)(r->slots + r->mask + 1);
}

/* As accel__ring_publish, for an op with a deadline (0: none) or a ticket:
 * the slot becomes cancellable by accel__ring_cancel until the consumer
 * claims it. */
static inline void accel__ring_publish_ex(accel__ring *r, uint64_t pos,
                                          const accel_op *op,
                                          int64_t deadline_ns)
{
    accel__ring_slot *sl = &r->slots[pos & r->mask];
    sl->op = *op;
    accel__ring_side(r)[pos & r->mask] = deadline_ns;
    /* [R1] release: publishes op and the side entry; pairs with [A1]. */
    atomic_store_explicit(&sl->seq, (pos + 1) | ACCEL__SEQ_EX,
                          memory_order_release);
}

/* What the consumer does with the op at head (accel__ring_claim). */
typedef enum accel__claim {
    ACCEL__CLAIM_PLAIN = 0, /* no deadline, no ticket: run it */
    ACCEL__CLAIM_EX,        /* ours: run it unless its deadline passed */
    ACCEL__CLAIM_CANCELED   /* a canceller won: complete with ECANCELED */
} accel__claim;

/* Consumer only, for the EX slot sl at position h (accel__ring_take_claim):
 * claims the op against cancellers and reads its deadline. */
static inline accel__claim accel__ring_claim(accel__ring *r,
                                             accel__ring_slot *sl, uint64_t h,
                                             int64_t *deadline)
{
    *deadline = accel__ring_side(r)[h & r->mask];
    ACCEL__YIELD_POINT(); /* a canceller may come in here */
    /* LP of take (for an EX op): this fetch_or, if it finds CANCELED
     * clear. acquire: pairs with the canceller's release [R7], so that
     * what the canceller did before cancelling happens before done runs
     * with ACCEL_ECANCELED. */
    uint64_t prev = atomic_fetch_or_explicit(&sl->seq, ACCEL__SEQ_TAKEN,
                                             memory_order_acquire);
    return (prev & ACCEL__SEQ_CANCELED) ? ACCEL__CLAIM_CANCELED
                                        : ACCEL__CLAIM_EX;
}

/* Consumer only: accel__ring_take, which for an EX slot first claims the op
 * against cancellers (before [R2] frees the position) and leaves its
 * deadline in *deadline; *deadline is untouched for a plain slot. */
static inline accel__claim accel__ring_take_claim(accel__ring *r,
                                                  _Atomic uint64_t *head,
                                                  uint64_t h, accel_op *op,
                                                  int64_t *deadline)
{
    accel__ring_slot *sl = &r->slots[h & r->mask];
    *op = sl->op;
    accel__claim c = ACCEL__CLAIM_PLAIN;
    /* relaxed: [A1] in ready() already acquired this lap's seq; a later
     * value can differ only by a canceller's flag, which the claim's RMW
     * decides on. */
    if (atomic_load_explicit(&sl->seq, memory_order_relaxed) & ACCEL__SEQ_EX)
        c = accel__ring_claim(r, sl, h, deadline);
    /* [R2] release: as in accel__ring_take. */
    atomic_store_explicit(head, h + 1, memory_order_release);
    return c;
}

/* Any thread: cancels the op published at pos if no consumer has claimed
 * it. true: it will not run (the consumer completes it with ECANCELED when
 * it reaches pos). false: claimed already, already cancelled, never an EX
 * op, or the slot has moved on to a later lap (a stale position never
 * matches: positions are unique). Wait-free: one CAS, no retry. */
static inline bool accel__ring_cancel(accel__ring *r, uint64_t pos)
{
    accel__ring_slot *sl = &r->slots[pos & r->mask];
    uint64_t want = (pos + 1) | ACCEL__SEQ_EX;
    /* LP of cancel: this CAS succeeding. [R7] release: pairs with the
     * acquire of the consumer's fetch_or in accel__ring_claim. Failure
     * relaxed: the value read is not used. */
    return atomic_compare_exchange_strong_explicit(
        &sl->seq, &want, want | ACCEL__SEQ_CANCELED, memory_order_release,
        memory_order_relaxed);
}

#endif
