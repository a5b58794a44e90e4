/*
 * Ring stress: many producers, one consumer, on the bare MPSC ring
 * (runtime/ring.h). Producers reserve runs of 1..4 slots, sometimes pause
 * between reserve and publish (so the consumer meets unpublished slots and
 * must not take them), and tag each item with (producer, sequence). The
 * consumer counts every item exactly once and checks each producer's items
 * arrive in its own order. Odd producers reserve through a shared head
 * cache, as submit does (accel__ring_reserve_cached). Runs under TSan: the item payload is plain data
 * published only by the ring's release/acquire pairs.
 *
 * ACCEL_STRESS_SECONDS (default 2) sets the duration. Exit 0 = pass.
 */
#define _GNU_SOURCE /* nanosleep, clock_gettime, sched_yield */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "core_util.h"
#include "ring.h"

#define PRODUCERS 4
#define CAPACITY 64

static accel__ring ring;
static _Atomic uint64_t tail, head;
/* The producers' copy of head (submit's path): odd producers use it. */
static _Atomic uint64_t head_cache;
static _Atomic int stop;
static uint64_t produced[PRODUCERS];

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
        int64_t k = accel__ring_reserve_cached(
            &ring, &tail, &head, id % 2 ? &head_cache : NULL, want, &first);
        if (k <= 0) {
            if (k < 0) {
                fprintf(stderr, "reserve saw CLOSED before close\n");
                exit(1);
            }
            sched_yield(); /* full */
            continue;
        }
        if (tu_rand(&rng) % 16 == 0)
            sched_yield(); /* leave the slots reserved but unpublished */
        for (int64_t i = 0; i < k; i++) {
            accel_op op = {.fn = dummy_fn,
                           .arg = (void *)(uintptr_t)((id << 40) | seq)};
            accel__ring_publish(&ring, first + (uint64_t)i, &op);
            seq++;
        }
    }
    produced[id] = seq;
    return NULL;
}

int main(void)
{
    double secs = tu_stress_seconds();
    if (accel__ring_init(&ring, CAPACITY) != ACCEL_OK)
        return 1;
    pthread_t th[PRODUCERS];
    for (uintptr_t i = 0; i < PRODUCERS; i++)
        pthread_create(&th[i], NULL, producer, (void *)i);

    uint64_t next[PRODUCERS] = {0}, consumed = 0, not_ready = 0;
    uint64_t h = 0, target = UINT64_MAX;
    double end = tu_now_s() + secs;
    int joined = 0;
    while (consumed != target) {
        if (!joined && tu_now_s() >= end) {
            atomic_store_explicit(&stop, 1, memory_order_relaxed);
            for (int i = 0; i < PRODUCERS; i++)
                pthread_join(th[i], NULL);
            joined = 1;
            target = 0;
            for (int i = 0; i < PRODUCERS; i++)
                target += produced[i];
        }
        if (!accel__ring_ready(&ring, h)) {
            not_ready++;
            sched_yield();
            continue;
        }
        accel_op op;
        accel__ring_take(&ring, &head, h, &op);
        h++;
        uint64_t v = (uint64_t)(uintptr_t)op.arg;
        uint64_t p = v >> 40, seq = v & ((UINT64_C(1) << 40) - 1);
        if (op.fn != dummy_fn || p >= PRODUCERS || seq != next[p]) {
            fprintf(stderr,
                    "FAIL: item %llu: producer %llu seq %llu, expected %llu\n",
                    (unsigned long long)h - 1, (unsigned long long)p,
                    (unsigned long long)seq,
                    p < PRODUCERS ? (unsigned long long)next[p] : 0ull);
            return 1;
        }
        next[p]++;
        consumed++;
    }
    for (int i = 0; i < PRODUCERS; i++) {
        if (next[i] != produced[i]) {
            fprintf(stderr, "FAIL: producer %d: consumed %llu of %llu\n", i,
                    (unsigned long long)next[i],
                    (unsigned long long)produced[i]);
            return 1;
        }
    }
    if (accel__ring_ready(&ring, h) ||
        atomic_load(&tail) != h) {
        fprintf(stderr, "FAIL: items left after the count was reached\n");
        return 1;
    }
    /* Close: no more reservations, the count below the bit is final. */
    uint64_t prev = atomic_fetch_or(&tail, ACCEL__RING_CLOSED), first;
    if (prev != consumed ||
        accel__ring_reserve(&ring, &tail, &head, 1, &first) != -1) {
        fprintf(stderr, "FAIL: closed bit\n");
        return 1;
    }
    accel__ring_fini(&ring);
    printf("stress_ring: %d producers, %llu items, each once and in order "
           "(consumer met %llu empty/unpublished slots)\n",
           PRODUCERS, (unsigned long long)consumed,
           (unsigned long long)not_ready);
    return 0;
}
