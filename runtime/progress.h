/*
 * Progress and the threads that sleep for it: one home for both halves of
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
 * not on every op. Room sleepers count themselves in `space_waiters`; the
 * consumer looks once per run of takes, not per freed slot (a futex wake
 * per op collapses throughput).
 *
 * Hot halves (the consumer, which holds SCHED): inline below. Sleeping
 * halves: progress.c.
 */
#ifndef ACCEL_RUNTIME_PROGRESS_H
#define ACCEL_RUNTIME_PROGRESS_H

#include <stdatomic.h>
#include <stdint.h>

#include "futex.h"
#include "session.h"

/* Wakes every thread sleeping on the session's event word. */
void accel__session_notify(accel_session *s);

/* Sleeps until `finished` >= target: ACCEL_OK, or ACCEL_ETIMEDOUT once
 * deadline (accel__deadline()) passed. */
int accel__session_wait_finished(accel_session *s, uint64_t target,
                                 uint64_t deadline);
/* Sleeps until the ring has room or is closed (then the caller retries):
 * ACCEL_OK, or ACCEL_ETIMEDOUT. */
int accel__session_wait_room(accel_session *s, uint64_t deadline);

/* Consumer, after a release of head ([R2]): wakes producers sleeping for
 * room, if any. */
static inline void accel__progress_room(accel_session *s)
{
    accel__fence_hot();
    /* relaxed: the cold fence on the sleeper's side orders it. */
    if (atomic_load_explicit(&s->space_waiters, memory_order_relaxed))
        accel__session_notify(s);
}

/* Consumer: `finished` += k (one store per run of completions), then
 * wakes completion sleepers whose target it reached. */
static inline void accel__progress_finished(accel_session *s, uint64_t k)
{
    uint64_t f = atomic_load_explicit(&s->finished, memory_order_relaxed) + k;
    /* [R5] release: the done callbacks (and the counters) happen before a
     * closer or syncer that sees the count; pairs with [A5] in
     * progress.c. Single writer, so a store. */
    atomic_store_explicit(&s->finished, f, memory_order_release);
    accel__fence_hot();
    /* relaxed: the sleeper's cold fence orders it. */
    if (f >= atomic_load_explicit(&s->wake_at, memory_order_relaxed)) {
        atomic_store_explicit(&s->wake_at, UINT64_MAX, memory_order_relaxed);
        accel__session_notify(s);
    }
}

#endif
