/*
 * White-box tests of the bounded MPSC ring (runtime/ring.h): reserve,
 * publish, ready, take; wraparound, full, the CLOSED bit, and the rule that
 * an unpublished slot is never ready (the consumer leaves instead of
 * spinning), including a stale slot from an earlier lap.
 */
#define _GNU_SOURCE /* nanosleep, clock_gettime, sched_yield */
#include <criterion/criterion.h>
#include <stdint.h>

#include "ring.h"

typedef struct ring_fixture {
    accel__ring r;
    _Atomic uint64_t tail, head;
} ring_fixture;

static void fx_init(ring_fixture *f, uint32_t cap)
{
    cr_assert_eq(accel__ring_init(&f->r, cap), ACCEL_OK);
    atomic_init(&f->tail, 0);
    atomic_init(&f->head, 0);
}

static int dummy_fn(accel_ctx *c, void *a)
{
    (void)c, (void)a;
    return 0;
}

static accel_op op_with(uintptr_t v)
{
    accel_op op = {.fn = dummy_fn, .done = NULL, .arg = (void *)v};
    return op;
}

static uint64_t take_value(ring_fixture *f)
{
    uint64_t h = atomic_load(&f->head);
    cr_assert(accel__ring_ready(&f->r, h));
    accel_op op;
    accel__ring_take(&f->r, &f->head, h, &op);
    cr_assert_eq(op.fn, dummy_fn);
    return (uint64_t)(uintptr_t)op.arg;
}

Test(ring, init_capacity, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 8);
    cr_assert_eq(f.r.mask, 7);
    cr_assert_not(accel__ring_ready(&f.r, 0), "a fresh ring is empty");
    accel__ring_fini(&f.r);
    cr_assert_null(f.r.slots);
}

Test(ring, reserve_publish_take_in_order, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 8);
    uint64_t first = 99;
    cr_assert_eq(accel__ring_reserve(&f.r, &f.tail, &f.head, 3, &first), 3);
    cr_assert_eq(first, 0);
    cr_assert_eq(atomic_load(&f.tail), 3);
    cr_assert_not(accel__ring_ready(&f.r, 0), "reserved is not published");
    for (uint64_t i = 0; i < 3; i++) {
        accel_op o = op_with(100 + i);
        accel__ring_publish(&f.r, first + i, &o);
    }
    for (uint64_t i = 0; i < 3; i++) {
        uint64_t h = atomic_load(&f.head);
        cr_assert_eq(h, i);
        cr_assert(accel__ring_ready(&f.r, h));
        accel_op op;
        accel__ring_take(&f.r, &f.head, h, &op);
        cr_assert_eq((uintptr_t)op.arg, 100 + i, "the op travels with its slot");
    }
    cr_assert_eq(atomic_load(&f.head), 3);
    cr_assert_not(accel__ring_ready(&f.r, 3), "drained ring is empty");
    accel__ring_fini(&f.r);
}

Test(ring, unpublished_slot_is_not_ready, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 4);
    uint64_t a = 0, b = 0;
    cr_assert_eq(accel__ring_reserve(&f.r, &f.tail, &f.head, 1, &a), 1);
    cr_assert_eq(accel__ring_reserve(&f.r, &f.tail, &f.head, 1, &b), 1);
    cr_assert_eq(a, 0);
    cr_assert_eq(b, 1);
    /* The later producer publishes first: the consumer must not run it
     * ahead of position 0, nor treat 0 as ready. */
    accel_op ob = op_with(2);
    accel__ring_publish(&f.r, b, &ob);
    cr_assert_not(accel__ring_ready(&f.r, 0),
                  "reserved but unpublished slot reported ready");
    accel_op oa = op_with(1);
    accel__ring_publish(&f.r, a, &oa);
    cr_assert_eq(take_value(&f), 1);
    cr_assert_eq(take_value(&f), 2);
    accel__ring_fini(&f.r);
}

Test(ring, full_and_partial_reservation, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 4);
    uint64_t first = 0;
    cr_assert_eq(accel__ring_reserve(&f.r, &f.tail, &f.head, 3, &first), 3);
    /* Only one slot left: a request for 5 gets a prefix of 1. */
    cr_assert_eq(accel__ring_reserve(&f.r, &f.tail, &f.head, 5, &first), 1);
    cr_assert_eq(first, 3);
    cr_assert_eq(accel__ring_reserve(&f.r, &f.tail, &f.head, 1, &first), 0,
                 "a full ring reserves nothing");
    cr_assert_eq(atomic_load(&f.tail), 4, "a failed reservation moves nothing");
    for (uint64_t i = 0; i < 4; i++) {
        accel_op o = op_with(i);
        accel__ring_publish(&f.r, i, &o);
    }
    /* A slot is free once taken (head moved), not earlier. */
    cr_assert_eq(take_value(&f), 0);
    cr_assert_eq(accel__ring_reserve(&f.r, &f.tail, &f.head, 2, &first), 1);
    cr_assert_eq(first, 4);
    accel__ring_fini(&f.r);
}

Test(ring, wraparound_many_laps, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 4);
    uint64_t next_take = 0, next_put = 0;
    /* Uneven batch sizes so reservations straddle the lap boundary. */
    for (int round = 0; round < 1000; round++) {
        uint64_t want = 1 + (uint64_t)(round % 3), first = 0;
        int64_t k = accel__ring_reserve(&f.r, &f.tail, &f.head, want, &first);
        cr_assert(k >= 1 && (uint64_t)k <= want);
        cr_assert_eq(first, next_put);
        for (int64_t i = 0; i < k; i++) {
            accel_op o = op_with(first + (uint64_t)i);
            accel__ring_publish(&f.r, first + (uint64_t)i, &o);
        }
        next_put += (uint64_t)k;
        /* Drain all but one so the ring stays partly full across laps. */
        while (next_put - next_take > 1)
            cr_assert_eq(take_value(&f), next_take++);
        /* The slot one lap ahead still holds the stale seq of the earlier
         * lap: never ready. */
        cr_assert_not(accel__ring_ready(&f.r, next_put + 4));
        cr_assert_not(accel__ring_ready(&f.r, next_put));
    }
    while (next_take < next_put)
        cr_assert_eq(take_value(&f), next_take++);
    cr_assert_gt(next_put, 1000);
    accel__ring_fini(&f.r);
}

Test(ring, stale_seq_of_previous_lap_not_ready, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 2);
    uint64_t first = 0;
    for (uint64_t p = 0; p < 2; p++) {
        cr_assert_eq(accel__ring_reserve(&f.r, &f.tail, &f.head, 1, &first), 1);
        accel_op o = op_with(p);
        accel__ring_publish(&f.r, first, &o);
        cr_assert_eq(take_value(&f), p);
    }
    /* Position 2 maps to slot 0, whose seq is 1 (position 0 + 1). Reserved
     * but unpublished: not ready. */
    cr_assert_eq(accel__ring_reserve(&f.r, &f.tail, &f.head, 1, &first), 1);
    cr_assert_eq(first, 2);
    cr_assert_not(accel__ring_ready(&f.r, 2));
    accel_op o = op_with(2);
    accel__ring_publish(&f.r, 2, &o);
    cr_assert_eq(take_value(&f), 2);
    accel__ring_fini(&f.r);
}

Test(ring, closed_bit_stops_reservations, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 8);
    uint64_t first = 0;
    cr_assert_eq(accel__ring_reserve(&f.r, &f.tail, &f.head, 2, &first), 2);
    uint64_t prev = atomic_fetch_or(&f.tail, ACCEL__RING_CLOSED);
    cr_assert_eq(prev, 2, "the value below the bit is the accepted count");
    cr_assert_eq(accel__ring_reserve(&f.r, &f.tail, &f.head, 1, &first), -1);
    cr_assert_eq(atomic_load(&f.tail), 2 | ACCEL__RING_CLOSED,
                 "a refused reservation leaves the tail alone");
    /* Already-reserved slots can still be published and consumed. */
    for (uint64_t i = 0; i < 2; i++) {
        accel_op o = op_with(i);
        accel__ring_publish(&f.r, i, &o);
    }
    cr_assert_eq(take_value(&f), 0);
    cr_assert_eq(take_value(&f), 1);
    /* Closed also beats full. */
    ring_fixture g;
    fx_init(&g, 1);
    cr_assert_eq(accel__ring_reserve(&g.r, &g.tail, &g.head, 1, &first), 1);
    atomic_fetch_or(&g.tail, ACCEL__RING_CLOSED);
    cr_assert_eq(accel__ring_reserve(&g.r, &g.tail, &g.head, 1, &first), -1);
    accel__ring_fini(&g.r);
    accel__ring_fini(&f.r);
}

Test(ring, capacity_one, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 1);
    uint64_t first = 0;
    for (uint64_t i = 0; i < 100; i++) {
        cr_assert_eq(accel__ring_reserve(&f.r, &f.tail, &f.head, 3, &first), 1);
        cr_assert_eq(first, i);
        cr_assert_eq(accel__ring_reserve(&f.r, &f.tail, &f.head, 1, &first), 0);
        accel_op o = op_with(i);
        accel__ring_publish(&f.r, i, &o);
        cr_assert_eq(take_value(&f), i);
    }
    accel__ring_fini(&f.r);
}

/* ---- the production path: reserve with the producers' head cache ---- */

typedef struct cached_fixture {
    ring_fixture f;
    _Atomic uint64_t cache;
} cached_fixture;

static int64_t reserve_c(cached_fixture *c, uint64_t want, uint64_t *first)
{
    return accel__ring_reserve_cached(&c->f.r, &c->f.tail, &c->f.head,
                                      &c->cache, want, first);
}

Test(ring, cached_fresh_cache_reserves_like_uncached, .timeout = 5)
{
    cached_fixture c;
    fx_init(&c.f, 8);
    atomic_init(&c.cache, 0);
    uint64_t first;
    cr_assert_eq(reserve_c(&c, 3, &first), 3);
    cr_assert_eq(first, 0);
    cr_assert_eq(reserve_c(&c, 9, &first), 5, "partial: the rest of the room");
    cr_assert_eq(first, 3);
    cr_assert_eq(reserve_c(&c, 1, &first), 0, "full");
    cr_assert_eq(atomic_load(&c.f.tail), 8);
    cr_assert_eq(atomic_load(&c.cache), 0, "no refresh: the head did not move");
    accel__ring_fini(&c.f.r);
}

Test(ring, cached_stale_cache_refreshes_from_head, .timeout = 5)
{
    cached_fixture c;
    fx_init(&c.f, 4);
    atomic_init(&c.cache, 0);
    uint64_t first;
    for (uint64_t v = 0; v < 4; v++) {
        cr_assert_eq(reserve_c(&c, 1, &first), 1);
        accel__ring_publish(&c.f.r, first, &(accel_op){.fn = dummy_fn,
                                                       .arg = (void *)v});
    }
    cr_assert_eq(take_value(&c.f), 0);
    cr_assert_eq(take_value(&c.f), 1);
    /* The cache says full (head 0, tail 4); the real head is 2: the
     * reservation must see the room, and leave the fresh head in the
     * cache for the next producer. */
    cr_assert_eq(reserve_c(&c, 4, &first), 2);
    cr_assert_eq(first, 4);
    cr_assert_eq(atomic_load(&c.cache), 2);
    for (uint64_t v = 4; v < 6; v++)
        accel__ring_publish(&c.f.r, v, &(accel_op){.fn = dummy_fn,
                                                   .arg = (void *)v});
    for (uint64_t v = 2; v < 6; v++)
        cr_assert_eq(take_value(&c.f), v, "FIFO across the refresh");
    accel__ring_fini(&c.f.r);
}

/* A cache lagging the tail by more than the capacity (a producer that
 * refreshed it long ago) must read as no room and force a refresh, never
 * as a huge room from an underflowed t - h: reserving past the capacity
 * overwrites unconsumed slots. Capacity 2, tail 106, head 104, cache 100. */
Test(ring, cached_cache_lagging_more_than_capacity, .timeout = 5)
{
    cached_fixture c;
    fx_init(&c.f, 2);
    atomic_store(&c.f.tail, 106);
    atomic_store(&c.f.head, 104);
    atomic_init(&c.cache, 100);
    uint64_t first = 0;
    cr_assert_eq(reserve_c(&c, 8, &first), 0, "the ring is full");
    cr_assert_eq(atomic_load(&c.f.tail), 106, "nothing reserved");
    cr_assert_eq(atomic_load(&c.cache), 104, "refreshed from the head");
    atomic_store(&c.f.head, 105); /* the consumer frees one slot */
    cr_assert_eq(reserve_c(&c, 8, &first), 1);
    cr_assert_eq(first, 106);
    cr_assert_eq(atomic_load(&c.f.tail), 107);
    accel__ring_fini(&c.f.r);
}

Test(ring, cached_closed_tail_refuses, .timeout = 5)
{
    cached_fixture c;
    fx_init(&c.f, 4);
    atomic_init(&c.cache, 0);
    uint64_t first;
    cr_assert_eq(reserve_c(&c, 1, &first), 1);
    atomic_fetch_or(&c.f.tail, ACCEL__RING_CLOSED);
    cr_assert_eq(reserve_c(&c, 1, &first), -1);
    cr_assert_eq(atomic_load(&c.f.tail) & ~ACCEL__RING_CLOSED, 1);
    accel__ring_fini(&c.f.r);
}
