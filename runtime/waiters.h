/*
 * The waiters of a session: the threads that sleep until its ops finish
 * (sync, close) or until its queue has room (submit), and the consumer's
 * halves that wake them; one home for both halves of
 * the completion and room-wait protocols.
 *
 * A sleeper announces what it waits for, then re-checks after the cold
 * fence; the consumer stores its progress ([R5] finished, [R2] head), then
 * after a hot fence loads the announcement (futex.h: one of the two sees
 * the other). The futex word `event` is read before the announcement, so
 * a notify in between makes futex_wait return at once.
 *
 * Completion sleepers (sync, close) announce by lowering `wake_at` to
 * their target: the consumer wakes them once, when finished reaches it,
 * not on every op. Room sleepers raise the flag `room_waiters`; the
 * release of head that next frees room sees it, clears it and wakes them
 * all, before any op it took runs (an op may wait for a producer the ring
 * holds back). The flag, not a count: one wake per announcement, not a
 * futex wake per release while producers sleep, which collapses
 * throughput. A sleeper that timed out leaves the flag raised: one spare
 * wake later.
 *
 * Hot halves (the consumer, which holds SCHED): inline below. Sleeping
 * halves: waiters.c.
 */
#ifndef ACCEL_RUNTIME_WAITERS_H
#define ACCEL_RUNTIME_WAITERS_H

#include <stdatomic.h>
#include <stdint.h>

#include "futex.h"
#include "ring.h"

/* The words of both protocols, embedded in their owner (a session). The
 * consumer reads the first three on every visit and few write them
 * (sleepers about to sleep, the consumer that wakes them); `finished` is
 * the consumer's own store, once per run. Hence the order: `finished`
 * last, so that the owner can lay the struct across a line boundary, the
 * first three on a line that few write and `finished` opening the
 * consumer's line (session.h). */
typedef struct accel__waiters {
    _Atomic uint64_t wake_at;       /* lowest `finished` a sleeper waits
                                       for; UINT64_MAX: none */
    _Atomic uint32_t event;         /* futex word, bumped on progress */
    _Atomic uint32_t room_waiters; /* 1: a producer may sleep for room
                                       (set by it, cleared by the waking
                                       consumer) */
    _Atomic uint64_t finished;      /* ops whose done callback has
                                       returned */
} accel__waiters;

/* Before the owner is shared: no sleeper, nothing finished. */
static inline void accel__waiters_init(accel__waiters *p)
{
    atomic_init(&p->wake_at, UINT64_MAX);
    atomic_init(&p->event, 0);
    atomic_init(&p->room_waiters, 0);
    atomic_init(&p->finished, 0);
}

/* The block hook: a worker thread installs it for itself (compensate.c,
 * a layer above) so that accel's own waits inside an op can tell it they
 * are about to sleep, and when they stop. NULL on every other thread.
 * begin/end nest; a wait calls begin only once it is going to sleep. */
typedef struct accel__block_hook {
    void (*begin)(void *arg);
    void (*end)(void *arg);
    void *arg;
} accel__block_hook;
extern _Thread_local const accel__block_hook *accel__tls_block_hook;

static inline void accel__block_begin(void)
{
    const accel__block_hook *h = accel__tls_block_hook;
    if (h)
        h->begin(h->arg);
}

static inline void accel__block_end(void)
{
    const accel__block_hook *h = accel__tls_block_hook;
    if (h)
        h->end(h->arg);
}

/* Wakes every thread sleeping on the event word. */
void accel__waiters_wake(accel__waiters *p);

/* Sleeps until `finished` >= target: ACCEL_OK, or ACCEL_ETIMEDOUT once
 * deadline (accel__deadline()) passed. */
int accel__waiters_wait_finished(accel__waiters *p, uint64_t target,
                                  uint64_t deadline);
/* Sleeps until the ring (prod, cons: the owner's) has room or is closed (then
 * the caller retries): ACCEL_OK, or ACCEL_ETIMEDOUT. */
int accel__waiters_wait_room(accel__waiters *p, const accel__ring_prod *prod,
                              const accel__ring_cons *cons, uint64_t deadline);

/* Consumer, after each release of head ([R2]): wakes the producers
 * sleeping for room, if one announced itself since the last wake. When no
 * one waits: a compiler barrier and a relaxed load. */
static inline void accel__waiters_room(accel__waiters *p)
{
    accel__fence_hot();
    /* relaxed load and exchange: the sleeper's cold fence orders its
     * announcement against our head store (futex.h); the notify's release
     * bump of `event` publishes the head to the woken. Only the consumer
     * clears the flag, so one announcement gets one wake. */
    if (atomic_load_explicit(&p->room_waiters, memory_order_relaxed) &&
        atomic_exchange_explicit(&p->room_waiters, 0, memory_order_relaxed))
        accel__waiters_wake(p);
}

/* Consumer: `finished` += k (one store per run of completions), then
 * wakes completion sleepers whose target it reached. */
static inline void accel__waiters_finished(accel__waiters *p, uint64_t k)
{
    uint64_t f = atomic_load_explicit(&p->finished, memory_order_relaxed) + k;
    /* [R5] release: the done callbacks (and the counters) happen before a
     * closer or syncer that sees the count; pairs with [A5] in
     * waiters.c. Single writer, so a store. */
    atomic_store_explicit(&p->finished, f, memory_order_release);
    accel__fence_hot();
    /* relaxed: the sleeper's cold fence orders it. */
    if (f >= atomic_load_explicit(&p->wake_at, memory_order_relaxed)) {
        atomic_store_explicit(&p->wake_at, UINT64_MAX, memory_order_relaxed);
        accel__waiters_wake(p);
    }
}

#endif
