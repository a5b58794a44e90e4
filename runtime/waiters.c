/*
 * The sleeping halves of the completion and room-wait protocols
 * (waiters.h has the theory and the consumer's halves).
 */
#include "waiters.h"

#include <limits.h>
#include <stdbool.h>

#include "clock.h"

_Thread_local const accel__block_hook *accel__tls_block_hook;

void accel__waiters_wake(accel__waiters *p)
{
    /* release: pairs with the acquire load of event in waiters, so that
     * what changed before the bump is seen after the wake. */
    atomic_fetch_add_explicit(&p->event, 1, memory_order_release);
    accel__futex_wake(&p->event, INT_MAX);
}

static bool finished_reached(accel__waiters *p, uint64_t target)
{
    /* [A5] acquire: pairs with [R5] in the worker; the done callbacks of
     * the counted ops happen before our return. */
    return atomic_load_explicit(&p->finished, memory_order_acquire) >= target;
}

static int wait_finished(accel__waiters *p, uint64_t target,
                         uint64_t deadline, bool *blocking)
{
    for (;;) {
        if (finished_reached(p, target))
            return ACCEL_OK;
        /* acquire: pairs with the release bump in accel__waiters_wake. */
        uint32_t ev = atomic_load_explicit(&p->event, memory_order_acquire);
        uint64_t w = atomic_load_explicit(&p->wake_at, memory_order_relaxed);
        /* relaxed CAS-min: the fence below orders it against the worker. */
        while (target < w &&
               !atomic_compare_exchange_weak_explicit(
                   &p->wake_at, &w, target, memory_order_relaxed,
                   memory_order_relaxed))
            ;
        accel__fence_cold();
        if (finished_reached(p, target))
            return ACCEL_OK;
        int64_t rem = accel__remaining(deadline);
        if (rem == 0)
            return ACCEL_ETIMEDOUT;
        if (!*blocking) { /* from here this thread sleeps */
            *blocking = true;
            accel__block_begin();
        }
        accel__futex_wait(&p->event, ev, rem);
    }
}

int accel__waiters_wait_finished(accel__waiters *p, uint64_t target,
                                  uint64_t deadline)
{
    bool blocking = false;
    int rc = wait_finished(p, target, deadline, &blocking);
    if (blocking)
        accel__block_end();
    return rc;
}

int accel__waiters_wait_room(accel__waiters *p, const accel__ring_prod *prod,
                              const accel__ring_cons *cons, uint64_t deadline)
{
    /* acquire: pairs with the release bump in accel__waiters_wake. */
    uint32_t ev = atomic_load_explicit(&p->event, memory_order_acquire);
    /* relaxed: the cold fence orders it against the consumer's head store
     * and flag load (accel__waiters_room). */
    atomic_store_explicit(&p->room_waiters, 1, memory_order_relaxed);
    accel__fence_cold();
    int rc = ACCEL_OK;
    if (!accel__ring_has_room_or_closed(prod, cons)) {
        int64_t rem = accel__remaining(deadline);
        if (rem == 0)
            rc = ACCEL_ETIMEDOUT;
        else {
            accel__block_begin();
            accel__futex_wait(&p->event, ev, rem);
            accel__block_end();
        }
    }
    return rc;
}

