/*
 * White-box tests of the bounded MPSC ring (runtime/ring.h): reserve,
 * publish, ready, take; wraparound, full, the CLOSED bit, and the rule that
 * an unpublished slot is never ready (the consumer leaves instead of
 * spinning), including a stale slot from an earlier lap.
 *
 * Promises: 2, 6
 */
#define _GNU_SOURCE /* nanosleep, clock_gettime, sched_yield */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "ring.h"

typedef struct ring_fixture {
    accel__ring r;
    accel__ring_slot *slots;
} ring_fixture;

static void fx_init(ring_fixture *f, uint32_t cap)
{
    f->slots = calloc(1, accel__ring_bytes(cap)); /* + EX side array */
    cr_assert_not_null(f->slots);
    accel__ring_init(&f->r.prod, &f->r.cons, f->slots, cap);
}

static void fx_fini(ring_fixture *f)
{
    free(f->slots);
    f->slots = NULL;
}

static int64_t reserve(ring_fixture *f, uint64_t want, uint64_t *first)
{
    bool owner;
    return accel__ring_mp_reserve(&f->r.prod, &f->r.cons, want, first, &owner);
}

static uint64_t tail_word(ring_fixture *f)
{
    return atomic_load(&f->r.prod.tail);
}

static uint64_t head_of(ring_fixture *f)
{
    return atomic_load(&f->r.cons.head);
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
    uint64_t h = head_of(f);
    cr_assert(accel__ring_sc_ready(&f->r.prod, &f->r.cons, h));
    accel_op op;
    cr_assert_eq(accel__ring_sc_peek(&f->r.prod, &f->r.cons, h, 1, &op), 1);
    accel__ring_sc_release(&f->r.prod, &f->r.cons, h + 1);
    cr_assert_eq(op.fn, dummy_fn);
    return (uint64_t)(uintptr_t)op.arg;
}

Test(ring, init_capacity, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 8);
    cr_assert_eq(accel__ring_capacity(&f.r.prod, &f.r.cons), 8);
    cr_assert_not(accel__ring_sc_ready(&f.r.prod, &f.r.cons, 0), "a fresh ring is empty");
    fx_fini(&f);
}

Test(ring, reserve_publish_take_in_order, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 8);
    uint64_t first = 99;
    cr_assert_eq(reserve(&f, 3, &first), 3);
    cr_assert_eq(first, 0);
    cr_assert_eq((tail_word(&f) & ACCEL__RING_POS), 3);
    cr_assert_not(accel__ring_sc_ready(&f.r.prod, &f.r.cons, 0), "reserved is not published");
    for (uint64_t i = 0; i < 3; i++) {
        accel_op o = op_with(100 + i);
        accel__ring_mp_publish(&f.r.prod, &f.r.cons, first + i, &o);
    }
    for (uint64_t i = 0; i < 3; i++) {
        uint64_t h = head_of(&f);
        cr_assert_eq(h, i);
        cr_assert(accel__ring_sc_ready(&f.r.prod, &f.r.cons, h));
        accel_op op;
        cr_assert_eq(accel__ring_sc_peek(&f.r.prod, &f.r.cons, h, 1, &op), 1);
        accel__ring_sc_release(&f.r.prod, &f.r.cons, h + 1);
        cr_assert_eq((uintptr_t)op.arg, 100 + i, "the op travels with its slot");
    }
    cr_assert_eq(head_of(&f), 3);
    cr_assert_not(accel__ring_sc_ready(&f.r.prod, &f.r.cons, 3), "drained ring is empty");
    fx_fini(&f);
}

Test(ring, unpublished_slot_is_not_ready, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 4);
    uint64_t a = 0, b = 0;
    cr_assert_eq(reserve(&f, 1, &a), 1);
    cr_assert_eq(reserve(&f, 1, &b), 1);
    cr_assert_eq(a, 0);
    cr_assert_eq(b, 1);
    /* The later producer publishes first: the consumer must not run it
     * ahead of position 0, nor treat 0 as ready. */
    accel_op ob = op_with(2);
    accel__ring_mp_publish(&f.r.prod, &f.r.cons, b, &ob);
    cr_assert_not(accel__ring_sc_ready(&f.r.prod, &f.r.cons, 0),
                  "reserved but unpublished slot reported ready");
    accel_op oa = op_with(1);
    accel__ring_mp_publish(&f.r.prod, &f.r.cons, a, &oa);
    cr_assert_eq(take_value(&f), 1);
    cr_assert_eq(take_value(&f), 2);
    fx_fini(&f);
}

Test(ring, full_and_partial_reservation, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 4);
    uint64_t first = 0;
    cr_assert_eq(reserve(&f, 3, &first), 3);
    /* Only one slot left: a request for 5 gets a prefix of 1. */
    cr_assert_eq(reserve(&f, 5, &first), 1);
    cr_assert_eq(first, 3);
    cr_assert_eq(reserve(&f, 1, &first), 0,
                 "a full ring reserves nothing");
    cr_assert_eq((tail_word(&f) & ACCEL__RING_POS), 4, "a failed reservation moves nothing");
    for (uint64_t i = 0; i < 4; i++) {
        accel_op o = op_with(i);
        accel__ring_mp_publish(&f.r.prod, &f.r.cons, i, &o);
    }
    /* A slot is free once taken (head moved), not earlier. */
    cr_assert_eq(take_value(&f), 0);
    cr_assert_eq(reserve(&f, 2, &first), 1);
    cr_assert_eq(first, 4);
    fx_fini(&f);
}

Test(ring, wraparound_many_laps, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 4);
    uint64_t next_take = 0, next_put = 0;
    /* Uneven batch sizes so reservations straddle the lap boundary. */
    for (int round = 0; round < 1000; round++) {
        uint64_t want = 1 + (uint64_t)(round % 3), first = 0;
        int64_t k = reserve(&f, want, &first);
        cr_assert(k >= 1 && (uint64_t)k <= want);
        cr_assert_eq(first, next_put);
        for (int64_t i = 0; i < k; i++) {
            accel_op o = op_with(first + (uint64_t)i);
            accel__ring_mp_publish(&f.r.prod, &f.r.cons, first + (uint64_t)i, &o);
        }
        next_put += (uint64_t)k;
        /* Drain all but one so the ring stays partly full across laps. */
        while (next_put - next_take > 1)
            cr_assert_eq(take_value(&f), next_take++);
        /* The slot one lap ahead still holds the stale seq of the earlier
         * lap: never ready. */
        cr_assert_not(accel__ring_sc_ready(&f.r.prod, &f.r.cons, next_put + 4));
        cr_assert_not(accel__ring_sc_ready(&f.r.prod, &f.r.cons, next_put));
    }
    while (next_take < next_put)
        cr_assert_eq(take_value(&f), next_take++);
    cr_assert_gt(next_put, 1000);
    fx_fini(&f);
}

Test(ring, stale_seq_of_previous_lap_not_ready, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 2);
    uint64_t first = 0;
    for (uint64_t p = 0; p < 2; p++) {
        cr_assert_eq(reserve(&f, 1, &first), 1);
        accel_op o = op_with(p);
        accel__ring_mp_publish(&f.r.prod, &f.r.cons, first, &o);
        cr_assert_eq(take_value(&f), p);
    }
    /* Position 2 maps to slot 0, whose seq is 1 (position 0 + 1). Reserved
     * but unpublished: not ready. */
    cr_assert_eq(reserve(&f, 1, &first), 1);
    cr_assert_eq(first, 2);
    cr_assert_not(accel__ring_sc_ready(&f.r.prod, &f.r.cons, 2));
    accel_op o = op_with(2);
    accel__ring_mp_publish(&f.r.prod, &f.r.cons, 2, &o);
    cr_assert_eq(take_value(&f), 2);
    fx_fini(&f);
}

Test(ring, closed_bit_stops_reservations, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 8);
    uint64_t first = 0;
    cr_assert_eq(reserve(&f, 2, &first), 2);
    cr_assert_eq(accel__ring_close(&f.r.prod, &f.r.cons), 2,
                 "close returns the accepted count");
    cr_assert(accel__ring_is_closed(&f.r.prod, &f.r.cons));
    cr_assert_eq(reserve(&f, 1, &first), -1);
    cr_assert_eq(tail_word(&f), 2 | ACCEL__RING_CLOSED | ACCEL__RING_SCHED,
                 "a refused reservation leaves the tail alone");
    /* Already-reserved slots can still be published and consumed. */
    for (uint64_t i = 0; i < 2; i++) {
        accel_op o = op_with(i);
        accel__ring_mp_publish(&f.r.prod, &f.r.cons, i, &o);
    }
    cr_assert_eq(take_value(&f), 0);
    cr_assert_eq(take_value(&f), 1);
    /* Closed also beats full. */
    ring_fixture g;
    fx_init(&g, 1);
    cr_assert_eq(reserve(&g, 1, &first), 1);
    accel__ring_close(&g.r.prod, &g.r.cons);
    cr_assert_eq(reserve(&g, 1, &first), -1);
    fx_fini(&g);
    fx_fini(&f);
}

Test(ring, capacity_one, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 1);
    uint64_t first = 0;
    for (uint64_t i = 0; i < 100; i++) {
        cr_assert_eq(reserve(&f, 3, &first), 1);
        cr_assert_eq(first, i);
        cr_assert_eq(reserve(&f, 1, &first), 0);
        accel_op o = op_with(i);
        accel__ring_mp_publish(&f.r.prod, &f.r.cons, i, &o);
        cr_assert_eq(take_value(&f), i);
    }
    fx_fini(&f);
}

/* ---- the handshake in the tail word (SCHED, defer): models/handoff.pml */

Test(ring, reservation_that_sets_sched_owns_the_session, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 8);
    uint64_t first;
    bool owner = false;
    cr_assert_eq(accel__ring_mp_reserve(&f.r.prod, &f.r.cons, 3, &first, &owner), 3);
    cr_assert(owner, "the first reservation sets SCHED");
    cr_assert(tail_word(&f) & ACCEL__RING_SCHED);
    cr_assert_eq(accel__ring_mp_reserve(&f.r.prod, &f.r.cons, 1, &first, &owner), 1);
    cr_assert_not(owner, "SCHED was already set");
    for (uint64_t i = 0; i < 4; i++) {
        accel_op o = op_with(i);
        accel__ring_mp_publish(&f.r.prod, &f.r.cons, i, &o);
    }
    cr_assert_not(accel__ring_mp_claim_deferred(&f.r.prod, &f.r.cons),
                  "nothing deferred: a non-owner has nothing to do");
    for (uint64_t i = 0; i < 4; i++)
        cr_assert_eq(take_value(&f), i);
    cr_assert_eq(accel__ring_sc_leave(&f.r.prod, &f.r.cons, 4), ACCEL__RING_IDLE);
    cr_assert_eq(tail_word(&f), 4, "idle: SCHED clear, pos kept");
    cr_assert_eq(accel__ring_mp_reserve(&f.r.prod, &f.r.cons, 1, &first, &owner), 1);
    cr_assert(owner, "after idle the next reservation owns it again");
    fx_fini(&f);
}

Test(ring, leave_with_published_work_keeps_the_session, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 8);
    uint64_t first;
    bool owner;
    cr_assert_eq(accel__ring_mp_reserve(&f.r.prod, &f.r.cons, 1, &first, &owner), 1);
    accel_op o = op_with(7);
    accel__ring_mp_publish(&f.r.prod, &f.r.cons, first, &o);
    cr_assert_eq(accel__ring_sc_leave(&f.r.prod, &f.r.cons, 0), ACCEL__RING_MORE);
    cr_assert(tail_word(&f) & ACCEL__RING_SCHED);
    cr_assert_eq(atomic_load(&f.r.prod.defer), 0);
    fx_fini(&f);
}

Test(ring, leave_at_unpublished_slot_defers_to_one_producer, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 8);
    uint64_t a, b;
    bool owner;
    cr_assert_eq(accel__ring_mp_reserve(&f.r.prod, &f.r.cons, 1, &a, &owner), 1);
    cr_assert(owner);
    accel_op o = op_with(1);
    accel__ring_mp_publish(&f.r.prod, &f.r.cons, a, &o);
    cr_assert_eq(take_value(&f), 1);
    /* A second producer reserved (SCHED set: not the owner) and has not
     * published: the consumer must not wait for it, nor go idle. */
    cr_assert_eq(accel__ring_mp_reserve(&f.r.prod, &f.r.cons, 1, &b, &owner), 1);
    cr_assert_not(owner);
    cr_assert_eq(accel__ring_sc_leave(&f.r.prod, &f.r.cons, 1), ACCEL__RING_DEFERRED);
    cr_assert(tail_word(&f) & ACCEL__RING_SCHED, "deferred stays claimed");
    o = op_with(2);
    accel__ring_mp_publish(&f.r.prod, &f.r.cons, b, &o);
    cr_assert(accel__ring_mp_claim_deferred(&f.r.prod, &f.r.cons),
              "the producer after its publish owns the session");
    cr_assert_not(accel__ring_mp_claim_deferred(&f.r.prod, &f.r.cons), "exactly one claimer");
    cr_assert_eq(take_value(&f), 2);
    cr_assert_eq(accel__ring_sc_leave(&f.r.prod, &f.r.cons, 2), ACCEL__RING_IDLE);
    fx_fini(&f);
}

Test(ring, close_keeps_sched_out_of_the_count, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 8);
    uint64_t first;
    bool owner;
    cr_assert_eq(accel__ring_mp_reserve(&f.r.prod, &f.r.cons, 5, &first, &owner), 5);
    cr_assert_eq(accel__ring_submitted(&f.r.prod, &f.r.cons), 5);
    cr_assert_eq(accel__ring_count(&f.r.prod, &f.r.cons), 5);
    cr_assert_eq(accel__ring_close(&f.r.prod, &f.r.cons), 5);
    cr_assert_eq(accel__ring_submitted(&f.r.prod, &f.r.cons), 5);
    cr_assert(accel__ring_has_room_or_closed(&f.r.prod, &f.r.cons));
    cr_assert_eq(accel__ring_mp_reserve(&f.r.prod, &f.r.cons, 1, &first, &owner), -1);
    fx_fini(&f);
}

/* EX slots in a run: the copy marks them and takes nothing; each is
 * claimed on its own, against a cancel that may come before or after. */
Test(ring, ex_slots_in_a_run_claimed_per_op, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 8);
    uint64_t first;
    cr_assert_eq(reserve(&f, 4, &first), 4);
    accel_op o0 = op_with(10), o1 = op_with(11), o2 = op_with(12),
             o3 = op_with(13);
    accel__ring_mp_publish(&f.r.prod, &f.r.cons, 0, &o0);
    accel__ring_mp_publish_ex(&f.r.prod, &f.r.cons, 1, &o1, 0);
    accel__ring_mp_publish(&f.r.prod, &f.r.cons, 2, &o2);
    accel__ring_mp_publish_ex(&f.r.prod, &f.r.cons, 3, &o3, 777);
    cr_assert(accel__ring_sc_ready(&f.r.prod, &f.r.cons, 1),
              "an EX slot is ready by its position bits");
    accel_op ops[8];
    uint32_t ex = 0;
    cr_assert_eq(accel__ring_sc_peek_ex(&f.r.prod, &f.r.cons, 0, 8, ops, &ex), 4);
    cr_assert_eq(ex, 0xAu, "bits 1 and 3: the EX ops");
    cr_assert_eq((uintptr_t)ops[3].arg, 13);
    cr_assert_not(accel__ring_cancel(&f.r.prod, &f.r.cons, 0),
                  "a plain op has no ticket");
    /* copied, not claimed: the cancel of op 3 still wins */
    cr_assert(accel__ring_cancel(&f.r.prod, &f.r.cons, 3));
    cr_assert_not(accel__ring_cancel(&f.r.prod, &f.r.cons, 3), "once");
    int64_t dl = -1;
    cr_assert_eq(accel__ring_sc_claim(&f.r.prod, &f.r.cons, 1, &dl),
                 ACCEL__CLAIM_EX);
    cr_assert_eq(dl, 0);
    cr_assert_not(accel__ring_cancel(&f.r.prod, &f.r.cons, 1),
                  "claimed: the cancel loses");
    cr_assert_eq(accel__ring_sc_claim(&f.r.prod, &f.r.cons, 3, &dl),
                 ACCEL__CLAIM_CANCELED);
    cr_assert_eq(dl, 777);
    accel__ring_sc_release(&f.r.prod, &f.r.cons, 4);
    cr_assert_not(accel__ring_sc_ready(&f.r.prod, &f.r.cons, 4));
    fx_fini(&f);
}

/* ---- reserve with the producers' head cache (prod.head_cache) ---- */

static uint64_t cache_of(ring_fixture *f)
{
    return atomic_load(&f->r.prod.head_cache);
}

static void publish_v(ring_fixture *f, uint64_t pos, uint64_t v)
{
    accel_op op = op_with((uintptr_t)v);
    accel__ring_mp_publish(&f->r.prod, &f->r.cons, pos, &op);
}

Test(ring, cached_fresh_cache_reserves_like_uncached, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 8);
    uint64_t first;
    cr_assert_eq(reserve(&f, 3, &first), 3);
    cr_assert_eq(first, 0);
    cr_assert_eq(reserve(&f, 9, &first), 5, "partial: the rest of the room");
    cr_assert_eq(first, 3);
    cr_assert_eq(reserve(&f, 1, &first), 0, "full");
    cr_assert_eq(tail_word(&f) & ACCEL__RING_POS, 8);
    cr_assert_eq(cache_of(&f), 0, "no refresh: the head did not move");
    fx_fini(&f);
}

Test(ring, cached_stale_cache_refreshes_from_head, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 4);
    uint64_t first;
    for (uint64_t v = 0; v < 4; v++) {
        cr_assert_eq(reserve(&f, 1, &first), 1);
        publish_v(&f, first, v);
    }
    cr_assert_eq(take_value(&f), 0);
    cr_assert_eq(take_value(&f), 1);
    /* The cache says full (head 0, pos 4); the real head is 2: the
     * reservation must see the room, and leave the fresh head in the
     * cache for the next producer. */
    cr_assert_eq(reserve(&f, 4, &first), 2);
    cr_assert_eq(first, 4);
    cr_assert_eq(cache_of(&f), 2);
    for (uint64_t v = 4; v < 6; v++)
        publish_v(&f, v, v);
    for (uint64_t v = 2; v < 6; v++)
        cr_assert_eq(take_value(&f), v, "FIFO across the refresh");
    fx_fini(&f);
}

/* A cache lagging pos by more than the capacity (a producer that
 * refreshed it long ago) must read as no room and force a refresh, never
 * as a huge room from an underflowed pos - h: reserving past the capacity
 * overwrites unconsumed slots. Capacity 2, pos 106, head 104, cache 100. */
Test(ring, cached_cache_lagging_more_than_capacity, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 2);
    atomic_store(&f.r.prod.tail, 106 | ACCEL__RING_SCHED);
    atomic_store(&f.r.cons.head, 104);
    atomic_store(&f.r.prod.head_cache, 100);
    uint64_t first = 0;
    cr_assert_eq(reserve(&f, 8, &first), 0, "the ring is full");
    cr_assert_eq(tail_word(&f) & ACCEL__RING_POS, 106, "nothing reserved");
    cr_assert_eq(cache_of(&f), 104, "refreshed from the head");
    atomic_store(&f.r.cons.head, 105); /* the consumer frees one slot */
    cr_assert_eq(reserve(&f, 8, &first), 1);
    cr_assert_eq(first, 106);
    cr_assert_eq(tail_word(&f) & ACCEL__RING_POS, 107);
    fx_fini(&f);
}

Test(ring, cached_closed_tail_refuses, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 4);
    uint64_t first;
    cr_assert_eq(reserve(&f, 1, &first), 1);
    atomic_fetch_or(&f.r.prod.tail, ACCEL__RING_CLOSED);
    cr_assert_eq(reserve(&f, 1, &first), -1);
    cr_assert_eq(tail_word(&f) & ACCEL__RING_POS, 1);
    fx_fini(&f);
}

/* The room check a sleeping producer makes, at its boundary: exactly one
 * free slot is room (a waiter must not sleep on it), none is not; one
 * taken makes room again. */
Test(ring, room_at_exactly_one_free_slot, .timeout = 5)
{
    ring_fixture f;
    fx_init(&f, 8);
    uint64_t first;
    bool owner;
    cr_assert(accel__ring_has_room_or_closed(&f.r.prod, &f.r.cons), "empty");
    cr_assert_eq(accel__ring_mp_reserve(&f.r.prod, &f.r.cons, 7, &first, &owner), 7);
    cr_assert(accel__ring_has_room_or_closed(&f.r.prod, &f.r.cons),
              "7 of 8 used: one free slot is room");
    cr_assert_eq(accel__ring_mp_reserve(&f.r.prod, &f.r.cons, 1, &first, &owner), 1);
    cr_assert_not(accel__ring_has_room_or_closed(&f.r.prod, &f.r.cons),
                  "8 of 8 used: no room");
    cr_assert_eq(accel__ring_mp_reserve(&f.r.prod, &f.r.cons, 1, &first, &owner), 0);
    for (int i = 0; i < 8; i++) {
        accel_op o = op_with(i);
        accel__ring_mp_publish(&f.r.prod, &f.r.cons, (uint64_t)i, &o);
    }
    cr_assert_eq(take_value(&f), 0);
    cr_assert(accel__ring_has_room_or_closed(&f.r.prod, &f.r.cons),
              "one taken: one free slot again");
    fx_fini(&f);
}
