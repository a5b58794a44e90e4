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

int accel__ring_init(accel__ring *r, uint32_t capacity_pow2);
void accel__ring_fini(accel__ring *r);
/* Over zeroed slots the caller owns (no allocation; no fini). */
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

/* Consumer only: is the slot at head published? */
static inline bool accel__ring_ready(const accel__ring *r, uint64_t head)
{
    const accel__ring_slot *sl = &r->slots[head & r->mask];
    /* [A1] acquire: pairs with [R1]; makes the op readable. */
    return atomic_load_explicit(&sl->seq, memory_order_acquire) == head + 1;
}

/* Consumer only: takes the published op at *head (after ring_ready said
 * so) and frees its slot (and position h: read anything kept beside the
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

#endif
