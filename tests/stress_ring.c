/*
 * Ring stress: many producers, two would-be consumers, on the bare MPSC
 * ring and its handshake (runtime/ring.h, models/handoff.pml). Producers
 * reserve runs of 1..4 slots with the one CAS that also sets SCHED,
 * sometimes pause between reserve and publish (so a consumer meets
 * unpublished slots and must leave rather than wait), publish, and then
 * "enqueue" the ring (a one-entry queue) if their reservation set SCHED
 * or if they claim a deferral. Two consumer threads pick the ring from the
 * queue, take runs of published slots, and leave: idle, more, or deferred.
 * Checked: the ring is never queued twice nor held by two consumers; every
 * item is consumed exactly once and each producer's items in its own order;
 * at the end the ring is idle (SCHED clear, nothing deferred), and no item
 * is stranded (a stall of 10 s fails the run: a lost wake-up). Runs under
 * TSan: the item payload is plain data published only by the ring's
 * release/acquire pairs.
 *
 * ACCEL_STRESS_SECONDS (default 2) sets the duration. Exit 0 = pass.
 *
 * Promises: 2, 6
 */
#define _GNU_SOURCE /* nanosleep, clock_gettime, sched_yield */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "core_util.h"
#include "stress_watchdog.h"
#include "futex.h"
#include "ring.h"

#define PRODUCERS 4
#define CONSUMERS 2
#define CAPACITY 64
#define RUN 8

static accel__ring ring;
static accel__ring_slot slots[CAPACITY];
static _Atomic int stop, done;
static _Atomic uint32_t queued;   /* the scheduler: the ring at most once */
static _Atomic uint32_t holders;  /* consumers inside a visit */
static _Atomic uint64_t consumed_total;
static uint64_t produced[PRODUCERS];
/* Written only by the holder of the ring, handed over by the handshake. */
static uint64_t next[PRODUCERS], head_pos, not_ready;
static _Atomic uint64_t deferrals; /* counted after a hand-off */

static void fail(const char *what)
{
    fprintf(stderr, "FAIL: %s\n", what);
    exit(1);
}

static void enqueue(void)
{
    /* release: the claim's acquire (and our publish) before the pick. */
    if (atomic_exchange_explicit(&queued, 1, memory_order_acq_rel) != 0)
        fail("the ring was queued twice");
}

static int dummy_fn(accel_ctx *c, void *a)
{
    (void)c, (void)a;
    return 0;
}

static void *producer(void *arg)
{
    uint64_t id = (uint64_t)(uintptr_t)arg, seq = 0, rng = id * 7919 + 1;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        uint64_t want = 1 + tu_rand(&rng) % 4, first;
        bool owner;
        int64_t k = accel__ring_mp_reserve(&ring.prod, &ring.cons, want,
                                           &first, &owner);
        if (k <= 0) {
            if (k < 0)
                fail("reserve saw CLOSED before close");
            sched_yield(); /* full */
            continue;
        }
        if (tu_rand(&rng) % 16 == 0)
            sched_yield(); /* leave the slots reserved but unpublished */
        for (int64_t i = 0; i < k; i++) {
            accel_op op = {.fn = dummy_fn,
                           .arg = (void *)(uintptr_t)((id << 40) | seq)};
            accel__ring_mp_publish(&ring.prod, &ring.cons,
                                   first + (uint64_t)i, &op);
            seq++;
        }
        if (owner || accel__ring_mp_claim_deferred(&ring.prod, &ring.cons))
            enqueue();
    }
    produced[id] = seq;
    return NULL;
}

static void visit(void)
{
    if (atomic_fetch_add_explicit(&holders, 1, memory_order_relaxed) != 0)
        fail("two consumers at once");
    uint64_t h = head_pos;
    for (;;) {
        accel_op ops[RUN];
        uint32_t k = accel__ring_sc_peek(&ring.prod, &ring.cons, h, RUN, ops);
        if (k == 0) {
            not_ready++;
            atomic_fetch_sub_explicit(&holders, 1, memory_order_relaxed);
            accel__ring_leave r = accel__ring_sc_leave(&ring.prod, &ring.cons, h);
            if (r == ACCEL__RING_MORE) {
                if (atomic_fetch_add_explicit(&holders, 1, memory_order_relaxed))
                    fail("leave said MORE while another consumer held the ring");
                continue;
            }
            if (r == ACCEL__RING_DEFERRED)
                atomic_fetch_add_explicit(&deferrals, 1, memory_order_relaxed);
            return;
        }
        if (atomic_load_explicit(&holders, memory_order_relaxed) != 1)
            fail("another consumer took the ring during a visit");
        for (uint32_t i = 0; i < k; i++) {
            uint64_t v = (uint64_t)(uintptr_t)ops[i].arg;
            uint64_t p = v >> 40, seq = v & ((UINT64_C(1) << 40) - 1);
            if (ops[i].fn != dummy_fn || p >= PRODUCERS || seq != next[p]) {
                fprintf(stderr, "FAIL: item %llu: producer %llu seq %llu, "
                        "expected %llu\n",
                        (unsigned long long)(h + i), (unsigned long long)p,
                        (unsigned long long)seq,
                        p < PRODUCERS ? (unsigned long long)next[p] : 0ull);
                exit(1);
            }
            next[p]++;
        }
        h += k;
        head_pos = h;
        accel__ring_sc_release(&ring.prod, &ring.cons, h);
        atomic_fetch_add_explicit(&consumed_total, k, memory_order_relaxed);
    }
}

static void *consumer(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&done, memory_order_acquire)) {
        /* acquire: pairs with enqueue's release. */
        if (atomic_load_explicit(&queued, memory_order_relaxed) &&
            atomic_exchange_explicit(&queued, 0, memory_order_acq_rel)) {
            visit();
            continue;
        }
        sched_yield();
    }
    return NULL;
}

int main(void)
{
    double secs = tu_stress_seconds();
    watchdog_start("stress_ring");
    watchdog_step("producers and consumers run", secs * 20 + 120);
    accel__fence_init();
    accel__ring_init(&ring.prod, &ring.cons, slots, CAPACITY);
    pthread_t th[PRODUCERS], cs[CONSUMERS];
    for (uintptr_t i = 0; i < CONSUMERS; i++)
        pthread_create(&cs[i], NULL, consumer, NULL);
    for (uintptr_t i = 0; i < PRODUCERS; i++)
        pthread_create(&th[i], NULL, producer, (void *)i);
    tu_nap_us((long)(secs * 1e6));
    atomic_store_explicit(&stop, 1, memory_order_relaxed);
    watchdog_step("the producers stop", 120);
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(th[i], NULL);
    uint64_t target = 0;
    for (int i = 0; i < PRODUCERS; i++)
        target += produced[i];
    /* Every item must drain without more submits: nothing stranded. */
    watchdog_step("every item drains", 120); /* its own 10 s bound first */
    double give_up = tu_now_s() + 10;
    while (atomic_load_explicit(&consumed_total, memory_order_relaxed) != target ||
           atomic_load_explicit(&queued, memory_order_relaxed) ||
           (atomic_load(&ring.prod.tail) & ACCEL__RING_SCHED)) {
        if (tu_now_s() > give_up) {
            fprintf(stderr, "FAIL: stalled at %llu of %llu items (tail %#llx, "
                    "defer %llu, queued %u): a lost wake-up\n",
                    (unsigned long long)atomic_load(&consumed_total),
                    (unsigned long long)target,
                    (unsigned long long)atomic_load(&ring.prod.tail),
                    (unsigned long long)atomic_load(&ring.prod.defer), atomic_load(&queued));
            return 1;
        }
        sched_yield();
    }
    atomic_store_explicit(&done, 1, memory_order_release);
    watchdog_step("the consumers stop", 120);
    for (int i = 0; i < CONSUMERS; i++)
        pthread_join(cs[i], NULL);
    for (int i = 0; i < PRODUCERS; i++)
        if (next[i] != produced[i])
            fail("a producer's items were not all consumed");
    if (atomic_load(&ring.prod.defer) != 0 ||
        accel__ring_submitted(&ring.prod, &ring.cons) != target)
        fail("the ring is not idle at the end");
    if (accel__ring_close(&ring.prod, &ring.cons) != target) {
        fail("closed count");
    }
    uint64_t first;
    bool owner;
    if (accel__ring_mp_reserve(&ring.prod, &ring.cons, 1, &first, &owner) != -1)
        fail("reserve after close");
    printf("stress_ring: %d producers, %d consumers, %llu items, each once and "
           "in order (consumers met %llu empty/unpublished slots, deferred %llu "
           "times to a producer)\n",
           PRODUCERS, CONSUMERS, (unsigned long long)target,
           (unsigned long long)not_ready,
           (unsigned long long)atomic_load(&deferrals));
    return 0;
}
