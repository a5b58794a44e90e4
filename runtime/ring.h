/*
 * Bounded MPSC ring of ops (one per session), and the handshake that makes
 * its session runnable. MP: any number of producers (accel__ring_mp_*);
 * SC: one consumer at a time (accel__ring_sc_*), whoever holds SCHED.
 *
 * Theory of operation
 * -------------------
 * Positions are counters that never wrap in practice. The tail word is
 *   bits 0..60  pos: the next position to reserve
 *   bit 61      (unused)
 *   bit 62      SCHED: the session is queued in the scheduler or held by a
 *               consumer (or deferred, below). Invariant: SCHED clear =>
 *               every reserved position was consumed (head == pos).
 *   bit 63      CLOSED: no reservation succeeds any more; pos is then the
 *               final count of accepted ops (close's LP, session.c).
 * `head` is the next position to consume (the consumer's own word).
 *
 * Producer (accel__ring_mp_reserve, _publish, _claim_deferred): ONE CAS
 * moves pos past k free positions and sets SCHED. That CAS is the op's
 * acceptance and also its kick: if SCHED was clear, the producer owns the
 * session and enqueues it once its slots are published. Each slot is
 * published on its own (seq = position + 1, release); producers never wait
 * for each other to reserve or publish, but the consumer takes positions
 * in order: a producer preempted between reserve and publish holds back
 * every later op of its session (published or not) until it publishes;
 * other sessions are not affected. A producer that found SCHED set then looks at `defer`
 * (a compiler barrier and a plain load of a read-mostly line): nothing to
 * do unless a consumer left at an unpublished slot.
 *
 * Consumer (accel__ring_sc_*): reads slot[head].seq (acquire); == head + 1
 * means published. It copies a run of published ops out and releases head
 * once for the run. It never waits on an unpublished slot. At the end of a
 * visit it leaves (accel__ring_sc_leave):
 *   pos == head: CAS SCHED away: idle. (A producer that reserves after sees
 *     SCHED clear and enqueues the session itself.)
 *   slot at head published meanwhile: keep the session (more work).
 *   slot at head reserved but unpublished: set `defer`, fence, look at the
 *     slot again. Still unpublished: leave the session to that producer,
 *     which will see `defer` after its publish and claim it (an exchange
 *     on defer: exactly one claimer). Published: take `defer` back with a
 *     CAS of the value we stored (head + 1); if a producer won it first,
 *     that producer owns the session.
 * The store->load pairs (producer: publish seq, load defer; consumer: set
 * defer, load seq) are the asymmetric fence pair of futex.h, so one of the
 * two sees the other: no op is stranded. Spin: models/handoff.pml.
 *
 * Litmus shapes:
 *   slot contents --[R1] seq release--> [A1] consumer acquire: reads op
 *   consumer copied ops --[R2] head release--> [A2] producer acquire: may
 *     overwrite the slots below head
 *   holder's writes --[R3] leave CAS / defer RMW (release)--> [A3] the next
 *     owner's reserve CAS / defer claim (acquire): the consumer-side state
 *     (head, counters, scheduler entity) changes hands.
 *
 * Cache lines: two halves, each at the start of its own 128-byte pair
 * (adjacent-line prefetch moves lines in pairs), like DPDK's prod/cons:
 *   producers' half: tail, head_cache, a read-only copy of slots/mask,
 *     defer (read by every producer after its publish, on the line its
 *     CAS just owned; written only at a deferral)
 *   consumer's half: head and the consumer's copy of slots/mask
 * struct accel__ring is a ring on its own; the session embeds the two
 * halves itself, so that each side's other per-op fields share its pair
 * (session.h). Every function takes both halves.
 *
 * EX slots (per-op deadline and cancel, docs/cancel.md)
 * ------------------------------------------------------
 * An op submitted with a deadline or a ticket is published with the EX
 * flag in its seq and its deadline in a side array right after the slots
 * (`accel__ring_side`), so plain ops keep their 32-byte slot and pay one
 * compare. seq of an EX slot moves, in this lap, only through
 *   (pos+1)|EX --cancel CAS--> (pos+1)|EX|CANCELED
 *   (pos+1)|EX[|CANCELED] --consumer fetch_or (accel__ring_sc_claim)--> ...|TAKEN
 * and the canceller's CAS succeeds only from exactly (pos+1)|EX. So the
 * cancel-vs-take race is decided by which RMW comes first in seq's
 * modification order: one of them, exactly once. The consumer copies a
 * run of ops out at once (accel__ring_sc_peek) but claims each EX op on its
 * own, right before that op runs, and releases head only up to the first
 * unclaimed EX slot: a copied op is not yet taken, and a cancel of an op
 * later in the run still wins while an earlier op runs. Positions stay
 * below 2^60 (the flags live above); readiness compares the position bits
 * only. These flags are the slot's, not the tail word's.
 */
#ifndef ACCEL_RUNTIME_RING_H
#define ACCEL_RUNTIME_RING_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accel/accel.h"
#include "futex.h"
#include "yield.h"

#define ACCEL__RING_CLOSED (UINT64_C(1) << 63)
#define ACCEL__RING_SCHED (UINT64_C(1) << 62)
#define ACCEL__RING_POS ((UINT64_C(1) << 61) - 1)

/* Flags in a slot's seq, above the position bits (EX slots, above). */
#define ACCEL__SEQ_EX (UINT64_C(1) << 62)       /* deadline/ticket: side entry */
#define ACCEL__SEQ_TAKEN (UINT64_C(1) << 61)    /* consumer claimed it (EX) */
#define ACCEL__SEQ_CANCELED (UINT64_C(1) << 60) /* a canceller won (EX) */
#define ACCEL__SEQ_POS (ACCEL__SEQ_CANCELED - 1)

/* 32 bytes: two slots per cache line. (Wait-time stamps live beside the
 * ring, see session.h, not in every slot.) */
typedef struct accel__ring_slot {
    _Atomic uint64_t seq; /* position + 1 once published */
    accel_op op;
} accel__ring_slot;

/* The producers' half: on the producers' line (tail CAS). slots/mask are
 * a read-only copy; defer is read by every producer after its publish
 * (from the line its CAS just owned) and written only at a deferral. */
typedef struct accel__ring_prod {
    _Atomic uint64_t tail;       /* pos | SCHED | CLOSED */
    _Atomic uint64_t head_cache; /* producers' copy of head */
    accel__ring_slot *slots;
    uint64_t mask;               /* capacity - 1 */
    _Atomic uint64_t defer;      /* 0, or head + 1 of a consumer that
                                    left at an unpublished slot (the
                                    producer that clears it owns the
                                    session), or a hold's mark
                                    (ACCEL__RING_DEFER_HELD) */
} accel__ring_prod;

/* The consumer's half: on the consumer's line. */
typedef struct accel__ring_cons {
    _Atomic uint64_t head;
    accel__ring_slot *slots;
    uint64_t mask;
} accel__ring_cons;

/* A ring on its own: each half at the start of its own 128-byte pair
 * (like DPDK's prod/cons). An owner may instead embed the two halves in
 * its own struct, each in a pair of its own, to keep its per-side fields
 * in the rest of that pair (the session does, session.h); every function
 * takes the two halves. */
typedef struct accel__ring {
    alignas(128) accel__ring_prod prod;
    alignas(128) accel__ring_cons cons;
} accel__ring;

/* Bytes a ring of this capacity needs: the slots, then the EX side array
 * (one deadline per slot). */
static inline size_t accel__ring_bytes(uint32_t capacity_pow2)
{
    return (size_t)capacity_pow2 *
           (sizeof(accel__ring_slot) + sizeof(int64_t));
}

/* The EX side array: one deadline per slot, right after the slots. */
static inline int64_t *accel__ring_side(accel__ring_slot *slots,
                                        uint64_t mask)
{
    return (int64_t *)(slots + mask + 1);
}

/* Over zeroed memory the caller owns, accel__ring_bytes() long (no
 * allocation; no fini). */
static inline void accel__ring_init(accel__ring_prod *p, accel__ring_cons *c,
                                    accel__ring_slot *slots,
                                    uint32_t capacity_pow2)
{
    p->slots = c->slots = slots;
    p->mask = c->mask = capacity_pow2 - 1;
    atomic_init(&p->tail, 0);
    atomic_init(&p->head_cache, 0);
    atomic_init(&p->defer, 0);
    atomic_init(&c->head, 0);
}

static inline uint64_t accel__ring_capacity(const accel__ring_prod *p,
                                            const accel__ring_cons *c)
{
    (void)c;
    return p->mask + 1;
}

/* ------------------------------------------------------- any thread */

/* Ops accepted so far (the final count once closed). relaxed: a snapshot. */
static inline uint64_t accel__ring_submitted(const accel__ring_prod *p,
                                             const accel__ring_cons *c)
{
    (void)c;
    return atomic_load_explicit(&((accel__ring_prod *)p)->tail,
                                memory_order_relaxed) & ACCEL__RING_POS;
}

/* Accepted and not yet taken (approximate while it moves). */
static inline uint64_t accel__ring_count(const accel__ring_prod *p,
                                         const accel__ring_cons *c)
{
    uint64_t h = atomic_load_explicit(&((accel__ring_cons *)c)->head,
                                      memory_order_relaxed);
    uint64_t t = accel__ring_submitted(p, c);
    return t > h ? t - h : 0;
}

static inline bool accel__ring_is_closed(const accel__ring_prod *p,
                                         const accel__ring_cons *c)
{
    (void)c;
    /* acquire: pairs with the release of accel__ring_close (a caller that
     * sees CLOSED sees what the closer did before it). */
    return (atomic_load_explicit(&((accel__ring_prod *)p)->tail,
                                 memory_order_acquire) &
            ACCEL__RING_CLOSED) != 0;
}

/* Sets CLOSED; returns the final count of accepted ops. LP of close:
 * a reservation before it in tail's modification order was accepted, any
 * after it fails. release: what the closer did before (the table removal)
 * is seen by whoever sees CLOSED with acquire. */
static inline uint64_t accel__ring_close(accel__ring_prod *p,
                                         accel__ring_cons *c)
{
    (void)c;
    return atomic_fetch_or_explicit(&p->tail, ACCEL__RING_CLOSED,
                                    memory_order_release) &
           ACCEL__RING_POS;
}

/* For room sleepers: is there a free slot (or is the ring closed)?
 * relaxed: the sleeper's fence orders it (futex.h). */
static inline bool accel__ring_has_room_or_closed(const accel__ring_prod *p,
                                                  const accel__ring_cons *c)
{
    uint64_t t = atomic_load_explicit(&((accel__ring_prod *)p)->tail,
                                      memory_order_relaxed);
    if (t & ACCEL__RING_CLOSED)
        return true;
    uint64_t h = atomic_load_explicit(&((accel__ring_cons *)c)->head,
                                      memory_order_relaxed);
    return (t & ACCEL__RING_POS) - h <= p->mask;
}

/* -------------------------------------------------------- producers */

/* Reserves up to want positions: returns how many (0 when full) and the
 * first in *first; *owner is set when this reservation set SCHED (the
 * caller must enqueue the session once its slots are published). Returns
 * -1 if CLOSED. Lock-free: one CAS in the common case.
 *
 * Room is computed from head_cache, a copy of head on the producers' line:
 * the consumer writes head once per run of takes, and if every reservation
 * read it that line would bounce between the consumer's core and the
 * producers'. The real head is read only when the cache shows too little
 * room. The cache may go stale, or even backwards when two producers
 * refresh it at once: a smaller head only understates the room. */
static inline int64_t accel__ring_mp_reserve(accel__ring_prod *p,
                                             accel__ring_cons *c,
                                             uint64_t want, uint64_t *first,
                                             bool *owner)
{
    const uint64_t cap = p->mask + 1;
    uint64_t t = atomic_load_explicit(&p->tail, memory_order_relaxed);
    /* [A2] acquire (here and below): the consumer is done with every slot
     * below the head value read; pairs with [R2], directly or through
     * head_cache's release store below. */
    uint64_t h = atomic_load_explicit(&p->head_cache,
                                      memory_order_acquire);
    for (;;) {
        if (t & ACCEL__RING_CLOSED)
            return -1;
        uint64_t pos = t & ACCEL__RING_POS;
        if (h > pos) { /* t is older than h: take a fresh one */
            t = atomic_load_explicit(&p->tail, memory_order_relaxed);
            continue;
        }
        /* A stale cache can lag pos by more than cap: no room (and a
         * refresh below), never an underflowed, huge room. */
        uint64_t room = pos - h >= cap ? 0 : cap - (pos - h);
        if (room < want) {
            uint64_t real = atomic_load_explicit(&c->head,
                                                 memory_order_acquire);
            if (real != h) {
                h = real;
                /* release: passes on what [A2] acquired to producers that
                 * read the cache. */
                atomic_store_explicit(&p->head_cache, h,
                                      memory_order_release);
                continue;
            }
        }
        uint64_t k = want < room ? want : room;
        if (k == 0)
            return 0;
        /* LP of acceptance, and the kick: the CAS that moves pos past our
         * positions and sets SCHED. [A3] acquire on success: if SCHED was
         * clear, the last holder's leave CAS [R3] happens before our
         * enqueue. Each slot is published by its own [R1]. */
        if (atomic_compare_exchange_weak_explicit(
                &p->tail, &t, (t + k) | ACCEL__RING_SCHED,
                memory_order_acq_rel, memory_order_relaxed)) {
            *first = pos;
            *owner = !(t & ACCEL__RING_SCHED);
            return (int64_t)k;
        }
        ACCEL__YIELD_POINT();
    }
}

/* Fills and publishes the slot of a reserved position. Whatever the
 * producer wrote before (a wait stamp) is published with it. */
static inline void accel__ring_mp_publish(accel__ring_prod *p,
                                          accel__ring_cons *c, uint64_t pos,
                                          const accel_op *op)
{
    (void)c;
    accel__ring_slot *sl = &p->slots[pos & p->mask];
    sl->op = *op;
    /* [R1] release: publishes op; pairs with [A1]. */
    atomic_store_explicit(&sl->seq, pos + 1, memory_order_release);
}

/* As accel__ring_mp_publish, for an op with a deadline (0: none) or a
 * ticket: the slot becomes cancellable by accel__ring_cancel until the
 * consumer claims it (accel__ring_sc_claim). */
static inline void accel__ring_mp_publish_ex(accel__ring_prod *p,
                                             accel__ring_cons *c,
                                             uint64_t pos, const accel_op *op,
                                             int64_t deadline_ns)
{
    (void)c;
    accel__ring_slot *sl = &p->slots[pos & p->mask];
    sl->op = *op;
    /* relaxed (the [R1] below publishes it): atomic because the
     * hold-back's second look (batch.c) may read the entry of a lap it
     * no longer owns; it only ever lowers a release time with it. */
    atomic_store_explicit(
        (_Atomic int64_t *)&accel__ring_side(p->slots, p->mask)[pos & p->mask],
        deadline_ns, memory_order_relaxed);
    /* [R1] release: publishes op and the side entry; pairs with [A1]. */
    atomic_store_explicit(&sl->seq, (pos + 1) | ACCEL__SEQ_EX,
                          memory_order_release);
}

/* The flag of defer's values while the session is held back (batching's
 * hold-back, batch.c: the flag and the hold's generation below it):
 * SCHED stays set and no consumer holds the session, which is in no
 * queue until a release puts it back. Not a deferral: no producer claims
 * it (a position + 1 stays below 2^61); a producer that sees it tells
 * the batch code (it may release the session). The holder stores it
 * while it is the consumer (defer is 0 then): that store is the hold;
 * the one CAS that takes it out is the release, before anyone can hold
 * the session again. */
#define ACCEL__RING_DEFER_HELD (UINT64_C(1) << 63)

/* After publishing, when the reservation did not make us the owner: did a
 * consumer leave the session to us (see the top)? true: we own it now and
 * must enqueue it. *held: the session is held back (the mark above),
 * false otherwise. */
static inline bool accel__ring_mp_claim_deferred_ex(accel__ring_prod *p,
                                                    accel__ring_cons *c,
                                                    bool *held)
{
    (void)c;
    *held = false;
    /* Hot side of the fence pair: our [R1] before the load of defer;
     * pairs with accel__fence_cold in accel__ring_sc_leave (and in the
     * hold-back's publish, batch.c). */
    accel__fence_hot();
    /* relaxed: ordered by the fence pair; the claim below acquires. */
    uint64_t d = atomic_load_explicit(&p->defer, memory_order_relaxed);
    if (__builtin_expect(!d, 1))
        return false;
    ACCEL__YIELD_POINT();
    /* [A3] acquire: pairs with the consumer's [R3] setting defer. One
     * claimer: whoever swaps a deferral for 0. A CAS, not an exchange:
     * the hold mark is never claimed (an exchange could take a mark
     * stored after our load). A mark seen here (by the relaxed load
     * above or a failed CAS) is only looked at again, with acquire, by
     * the batch code (accel__batch_kick). */
    while (d && !(d & ACCEL__RING_DEFER_HELD)) {
        if (atomic_compare_exchange_weak_explicit(&p->defer, &d, 0,
                                                  memory_order_acq_rel,
                                                  memory_order_acquire))
            return true;
    }
    *held = (d & ACCEL__RING_DEFER_HELD) != 0;
    return false;
}

static inline bool accel__ring_mp_claim_deferred(accel__ring_prod *p,
                                                 accel__ring_cons *c)
{
    bool held;
    return accel__ring_mp_claim_deferred_ex(p, c, &held);
}

/* --------------------------------------------------------- consumer */

/* seq of a slot published for position h: h + 1, plus EX flags for an EX
 * slot (a plain slot compares whole: one compare). */
static inline bool accel__ring_seq_ready(uint64_t seq, uint64_t h)
{
    return seq == h + 1 || (seq & ACCEL__SEQ_POS) == h + 1;
}

/* Is the slot at h published? (An EX slot's flags do not matter here: a
 * canceled op is still taken, to complete it.) */
static inline bool accel__ring_sc_ready(const accel__ring_prod *p,
                                        const accel__ring_cons *c, uint64_t h)
{
    (void)p;
    const accel__ring_slot *sl = &c->slots[h & c->mask];
    /* [A1] acquire: pairs with [R1]; makes the op (and an EX slot's side
     * entry) readable. */
    return accel__ring_seq_ready(
        atomic_load_explicit(&sl->seq, memory_order_acquire), h);
}

/* Copies the published ops at [h, h + max) out, stopping at the first
 * unpublished slot; returns how many, and in *ex a bit per EX op (bit i:
 * ops[i]; max <= 32). Copying takes nothing: the slots stay the
 * consumer's, and an EX op stays cancellable, until the consumer claims
 * it (accel__ring_sc_claim) and releases its position
 * (accel__ring_sc_release). */
static inline uint32_t accel__ring_sc_peek_ex(const accel__ring_prod *p,
                                              const accel__ring_cons *c,
                                              uint64_t h, uint32_t max,
                                              accel_op *ops, uint32_t *ex)
{
    (void)p;
    uint32_t n = 0, mask = 0;
    while (n < max) {
        const accel__ring_slot *sl = &c->slots[(h + n) & c->mask];
        /* [A1] acquire: pairs with [R1]; makes the op (and an EX slot's
         * side entry) readable. */
        uint64_t seq = atomic_load_explicit(&sl->seq, memory_order_acquire);
        if (seq != h + n + 1) {
            if ((seq & ACCEL__SEQ_POS) != h + n + 1)
                break;
            mask |= UINT32_C(1) << n;
        }
        ops[n] = sl->op;
        n++;
    }
    *ex = mask;
    return n;
}

/* accel__ring_sc_peek_ex without the EX bits (rings that hold no EX ops). */
static inline uint32_t accel__ring_sc_peek(const accel__ring_prod *p,
                                           const accel__ring_cons *c,
                                           uint64_t h, uint32_t max,
                                           accel_op *ops)
{
    uint32_t ex;
    return accel__ring_sc_peek_ex(p, c, h, max, ops, &ex);
}

/* What the consumer does with an EX op (accel__ring_sc_claim). */
typedef enum accel__claim {
    ACCEL__CLAIM_PLAIN = 0, /* no deadline, no ticket: run it */
    ACCEL__CLAIM_EX,        /* ours: run it unless its deadline passed */
    ACCEL__CLAIM_CANCELED   /* a canceller won: complete with ECANCELED */
} accel__claim;

/* Consumer only, for the published EX slot at h, before its position is
 * released: claims the op against cancellers and reads its deadline. Call
 * it right before the op would run (the cancel-vs-take decision is per
 * op). */
static inline accel__claim accel__ring_sc_claim(accel__ring_prod *p,
                                                accel__ring_cons *c,
                                                uint64_t h, int64_t *deadline)
{
    (void)p;
    accel__ring_slot *sl = &c->slots[h & c->mask];
    *deadline = accel__ring_side(c->slots, c->mask)[h & c->mask];
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

/* Frees every slot below h (and its position: read anything kept beside
 * the ring for them before; claim every EX op below h first). One release
 * per run of takes (per claimed EX op within a run). */
static inline void accel__ring_sc_release(accel__ring_prod *p,
                                          accel__ring_cons *c, uint64_t h)
{
    (void)p;
    /* [R2] release: our reads of the slots happen before a producer's
     * reuse of them; pairs with [A2]. */
    atomic_store_explicit(&c->head, h, memory_order_release);
}

typedef enum accel__ring_leave {
    ACCEL__RING_IDLE,     /* SCHED cleared: the holder drops its claim */
    ACCEL__RING_MORE,     /* published work at h: still the holder */
    ACCEL__RING_DEFERRED, /* a producer owns the session now (or will,
                             once it publishes): hands off */
} accel__ring_leave;

/* The end of a visit that found the slot at h (== head) not ready. Only
 * the holder. See the top for the three ways out. */
static inline accel__ring_leave accel__ring_sc_leave(accel__ring_prod *p,
                                                     accel__ring_cons *c,
                                                     uint64_t h)
{
    uint64_t t = atomic_load_explicit(&p->tail, memory_order_relaxed);
    for (;;) {
        if ((t & ACCEL__RING_POS) == h) {
            ACCEL__YIELD_POINT();
            /* [R3] release: the holder's writes happen before the next
             * owner's [A3]. On failure (a reservation or close came in
             * between) t is reloaded. */
            if (atomic_compare_exchange_weak_explicit(
                    &p->tail, &t, t & ~ACCEL__RING_SCHED,
                    memory_order_acq_rel, memory_order_relaxed))
                return ACCEL__RING_IDLE;
            continue;
        }
        /* Reserved beyond h: published by now, or not yet. */
        if (accel__ring_sc_ready(p, c, h))
            return ACCEL__RING_MORE;
        ACCEL__YIELD_POINT();
        /* [R3] release: our writes happen before a claimer's [A3]. A
         * plain store: while a consumer holds the session defer is 0, and
         * only the holder sets it. */
        atomic_store_explicit(&p->defer, h + 1, memory_order_release);
        /* Cold side of the fence pair: defer before the look at the slot;
         * pairs with the fence_hot in accel__ring_mp_claim_deferred. */
        accel__fence_cold();
        if (!accel__ring_sc_ready(p, c, h))
            return ACCEL__RING_DEFERRED; /* its producer will claim it */
        ACCEL__YIELD_POINT();
        /* Published after all: take OUR deferral back, unless a producer
         * won it. Not an exchange: by now a producer may have claimed it,
         * another consumer run and deferred at a later head, and taking
         * that one would resume us at a stale h (models/handoff.pml,
         * BROKEN_ABA). An equal value means the other consumer deferred
         * at the same head, having taken nothing: resuming at h is right.
         * [A3] acquire: pairs with that consumer's [R3]. */
        uint64_t mine = h + 1;
        if (atomic_compare_exchange_strong_explicit(
                &p->defer, &mine, 0, memory_order_acq_rel,
                memory_order_relaxed))
            return ACCEL__RING_MORE;
        return ACCEL__RING_DEFERRED;
    }
}

/* ------------------------------------------------------- cancellers */

/* Any thread: cancels the op published at pos if no consumer has claimed
 * it. true: it will not run (the consumer completes it with ECANCELED when
 * it reaches pos). false: claimed already, already canceled, never an EX
 * op, or the slot has moved on to a later lap (a stale position never
 * matches: positions are unique). Wait-free: one CAS, no retry. The slot
 * cannot be reused under it while pos is unclaimed: the consumer releases
 * an EX op's position only after claiming it. */
static inline bool accel__ring_cancel(accel__ring_prod *p,
                                      accel__ring_cons *c, uint64_t pos)
{
    (void)c;
    accel__ring_slot *sl = &p->slots[pos & p->mask];
    uint64_t want = (pos + 1) | ACCEL__SEQ_EX;
    /* LP of cancel: this CAS succeeding. [R7] release: pairs with the
     * acquire of the consumer's fetch_or in accel__ring_sc_claim. Failure
     * relaxed: the value read is not used. */
    return atomic_compare_exchange_strong_explicit(
        &sl->seq, &want, want | ACCEL__SEQ_CANCELED, memory_order_release,
        memory_order_relaxed);
}

#endif
