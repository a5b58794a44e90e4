/*
 * The scheduler's calendar: deadline buckets as tagged Treiber stacks of
 * node indices, with a two-level find-first-set bitmap (docs/scheduler.md).
 *
 * Theory of operation.
 *  - A head is {tag:32, index:32}; every successful CAS bumps the tag, so a
 *    pop that read index i and next j cannot succeed after i was popped
 *    and pushed again (ABA) unless 2^32 CASes happened in between. Nodes
 *    live in one type-stable array, so reading v[i].next of a node popped
 *    by someone else is harmless (it is atomic, and the CAS then fails).
 *  - A pusher publishes node.e and node.next with the head CAS ([R1],
 *    release); a popper's successful CAS acquires them ([A1]). Every write
 *    of a head is an RMW, so the release sequence carries through the
 *    pushes and pops in between.
 *  - Bitmap invariant: a non-empty stack has its bit set once its pusher
 *    returns, and a set word bit has its top bit set once its setter
 *    returns. Clearing is done by whoever sees emptiness: clear, then look
 *    again, and set back if something arrived. The four accesses of each
 *    such pair (push; set bit) vs (clear bit; look at the head) are
 *    seq_cst, so at least one side sees the other ([SC1], [SC2]): either
 *    the clearer sees the push and sets the bit back, or the push's set
 *    comes after the clear. On x86 these are the same instructions as the
 *    weaker orders (RMWs are locked, loads are plain).
 * A look can also miss a completed push while a clearer's clear stands
 * (between its clear and its set back): the push's own wake then may
 * find no parked worker (the parker's fence came after its load), and
 * the parker's pick sees the clear. So only a pick repairs (clears
 * stale bits); looks that do not pop (peek, queued, the enqueue's
 * would-pick, the monitor) read around stale bits. And a
 * repair that sets a bit back reports it (*restored), and the pick
 * wakes a parked worker for it (sched_wfq.c; park.c): its set back is a
 * seq_cst RMW, the push's half of the parking pair, so either the
 * parker's pick sees it or the repairer sees the parker counted.
 *  - A push's seq_cst head CAS and bit set are also the enqueuer's half
 *    of the blocked hand-off (compensate.c; park.c's wake path loads
 *    `blocked` seq_cst after them, with no fence): a blocker's look at the
 *    calendar after its seq_cst fence sees the push unless that load sees
 *    the blocker counted.
 */
#include <sys/mman.h>

#include "accel/accel.h"
#include "fault.h"
#include "sched_core.h"
#include "yield.h"

#define WORDS (ACCEL__CAL_BUCKETS / 64u)

_Static_assert(WORDS == 64, "one top word covers the bitmap");

int accel__sched_nodes_init(accel__sched_nodes *n, uint32_t cap)
{
    n->cap = cap + 1;
    n->map_bytes = (size_t)n->cap * sizeof(accel__sched_node);
    if (ACCEL__FAULT("mmap"))
        return ACCEL_ENOMEM;
    /* Untouched pages of the mapping cost nothing: fresh hands out nodes
     * in order, so only as many pages as runnable entities get used. */
    void *m = mmap(NULL, n->map_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return ACCEL_ENOMEM;
    n->v = m;
    atomic_init(&n->free_head, 0);
    atomic_init(&n->fresh, 1);
    return ACCEL_OK;
}

void accel__sched_nodes_fini(accel__sched_nodes *n)
{
    if (n->v)
        munmap(n->v, n->map_bytes);
    n->v = NULL;
}

static inline uint64_t head_make(uint64_t old, uint32_t idx)
{
    return (((old >> 32) + 1) << 32) | idx;
}

static void stack_push(_Atomic uint64_t *h, accel__sched_node *v,
                       uint32_t idx)
{
    uint64_t old = atomic_load_explicit(h, memory_order_relaxed);
    for (;;) {
        /* relaxed: published by the CAS below. */
        atomic_store_explicit(&v[idx].next, (uint32_t)old,
                              memory_order_relaxed);
        ACCEL__YIELD_POINT();
        /* [R1] release (seq_cst for [SC1] and the blocked hand-off, the
         * top of this file): publishes node.e/next; pairs with [A1]. */
        if (atomic_compare_exchange_weak_explicit(h, &old,
                                                  head_make(old, idx),
                                                  memory_order_seq_cst,
                                                  memory_order_relaxed))
            return;
    }
}

/* Returns the popped index, 0 if empty; *last says whether it was the
 * last one. */
static uint32_t stack_pop(_Atomic uint64_t *h, accel__sched_node *v,
                          bool *last)
{
    /* [A1] acquire: pairs with [R1]; makes v[idx].next readable. */
    uint64_t old = atomic_load_explicit(h, memory_order_acquire);
    for (;;) {
        uint32_t idx = (uint32_t)old;
        if (!idx)
            return 0;
        /* relaxed: if the head is unchanged at the CAS (tag), nobody
         * rewrote next since the push we acquired. */
        uint32_t next = atomic_load_explicit(&v[idx].next,
                                             memory_order_relaxed);
        ACCEL__YIELD_POINT();
        /* [A1] acquire on success: node.e of the push. */
        if (atomic_compare_exchange_weak_explicit(h, &old,
                                                  head_make(old, next),
                                                  memory_order_acquire,
                                                  memory_order_acquire)) {
            *last = next == 0;
            return idx;
        }
    }
}

uint32_t accel__sched_node_get(accel__sched_nodes *n)
{
    bool last;
    uint32_t idx = stack_pop(&n->free_head, n->v, &last);
    if (idx)
        return idx;
    /* relaxed: the node is handed over with its later push ([R1]). */
    idx = atomic_fetch_add_explicit(&n->fresh, 1, memory_order_relaxed);
    if (idx >= n->cap)
        __builtin_trap(); /* more runnable entities than max_entities:
                             the one-entry-per-entity protocol was broken */
    return idx;
}

void accel__sched_node_put(accel__sched_nodes *n, uint32_t idx)
{
    stack_push(&n->free_head, n->v, idx);
}

static void set_top(accel__sched_cal *c, unsigned w)
{
    uint64_t bit = 1ull << w;
    /* [SC2] seq_cst: pairs with the clear-then-recheck in first(), and
     * with a blocker's fence (the blocked hand-off, the top of this
     * file). */
    if (!(atomic_load_explicit(&c->top, memory_order_seq_cst) & bit))
        atomic_fetch_or_explicit(&c->top, bit, memory_order_seq_cst);
}

static void set_bit(accel__sched_cal *c, unsigned bucket)
{
    /* [SC1] seq_cst: pairs with the clear-then-recheck in pop(), and
     * with a blocker's fence (the blocked hand-off, the top of this
     * file). */
    atomic_fetch_or_explicit(&c->words[bucket / 64], 1ull << (bucket % 64),
                             memory_order_seq_cst);
    ACCEL__YIELD_POINT();
    set_top(c, bucket / 64);
}

void (*_Atomic accel__cal_window_hook)(accel__sched_cal *c, unsigned where);

/* A test's seam in a repair's windows (where: 0 a pop that emptied its
 * bucket, before the clear; 1 after it, before the look back; 2 a stale
 * top bit seen, before its clear; 3 after it). relaxed: a test sets it
 * before the calls it watches. */
static inline void window(accel__sched_cal *c, unsigned where)
{
    void (*hook)(accel__sched_cal *, unsigned) =
        atomic_load_explicit(&accel__cal_window_hook, memory_order_relaxed);
    if (__builtin_expect(hook != NULL, 0))
        hook(c, where);
}

void accel__sched_cal_push(accel__sched_cal *c, accel__sched_nodes *n,
                           unsigned bucket, uint32_t idx)
{
    stack_push(&c->heads[bucket], n->v, idx);
    ACCEL__YIELD_POINT();
    set_bit(c, bucket);
}

uint32_t accel__sched_cal_pop(accel__sched_cal *c, accel__sched_nodes *n,
                              unsigned bucket, bool *restored)
{
    bool last = false;
    uint32_t idx = stack_pop(&c->heads[bucket], n->v, &last);
    if (idx && !last)
        return idx;
    window(c, 0);
    /* Empty now: clear the bit, then look again ([SC1]): a push that the
     * look misses sets the bit after our clear. */
    uint64_t bit = 1ull << (bucket % 64);
    atomic_fetch_and_explicit(&c->words[bucket / 64], ~bit,
                              memory_order_seq_cst);
    ACCEL__YIELD_POINT();
    window(c, 1);
    if ((uint32_t)atomic_load_explicit(&c->heads[bucket],
                                       memory_order_seq_cst)) {
        set_bit(c, bucket);
        *restored = true; /* a look meanwhile may have missed it */
    }
    return idx;
}

static inline uint64_t ror64(uint64_t x, unsigned r)
{
    r &= 63;
    return r ? (x >> r) | (x << (64 - r)) : x;
}

int accel__sched_cal_first(accel__sched_cal *c, unsigned from,
                           bool *restored)
{
    from &= ACCEL__CAL_BUCKETS - 1;
    unsigned w0 = from / 64, o0 = from % 64;
    /* seq_cst loads of words and top: [SC1]/[SC2] (plain loads on x86). */
    uint64_t x = atomic_load_explicit(&c->words[w0], memory_order_seq_cst) &
                 (~0ull << o0);
    if (x)
        return (int)(w0 * 64 + (unsigned)__builtin_ctzll(x));
    uint64_t stale = 0; /* a look's stale top bits, read around */
    for (;;) {
        /* Words after w0 in circular order: bit k of r is word w0+1+k;
         * bit 63 (w0 itself) is handled below. */
        uint64_t r = ror64(atomic_load_explicit(&c->top,
                                                memory_order_seq_cst) &
                               ~stale,
                           w0 + 1) &
                     ~(1ull << 63);
        if (!r)
            break;
        unsigned w = (w0 + 1 + (unsigned)__builtin_ctzll(r)) % WORDS;
        x = atomic_load_explicit(&c->words[w], memory_order_seq_cst);
        if (x)
            return (int)(w * 64 + (unsigned)__builtin_ctzll(x));
        if (!restored) {
            stale |= 1ull << w;
            continue;
        }
        window(c, 2);
        /* Stale top bit: clear, look again, set back if a word bit
         * arrived ([SC2]). */
        atomic_fetch_and_explicit(&c->top, ~(1ull << w),
                                  memory_order_seq_cst);
        ACCEL__YIELD_POINT();
        window(c, 3);
        x = atomic_load_explicit(&c->words[w], memory_order_seq_cst);
        if (x) {
            set_top(c, w);
            *restored = true; /* a look meanwhile may have missed it */
            return (int)(w * 64 + (unsigned)__builtin_ctzll(x));
        }
    }
    x = atomic_load_explicit(&c->words[w0], memory_order_seq_cst);
    if (x)
        return (int)(w0 * 64 + (unsigned)__builtin_ctzll(x));
    return -1;
}
