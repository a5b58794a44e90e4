/*
 * Per-op cancellation through a ticket, and the clock deadlines use.
 *
 * The race with the consumer is decided in the ring (ring.h, "EX slots"):
 * the canceller's CAS on the slot's seq against the consumer's fetch_or,
 * whichever comes first in seq's modification order. The done callback of
 * a canceled op runs later on the worker that reaches its position, so
 * done calls stay in FIFO order and `finished` keeps its single writer
 * (docs/cancel.md).
 */
#include "clock.h"
#include "fork.h"
#include "runtime_types.h"
#include "session.h"

int64_t accel_now_ns(void)
{
    return (int64_t)accel__now_ns();
}

int accel_cancel(const accel_ticket *t)
{
    if (!t || !t->session)
        return ACCEL_EINVAL;
    accel_session *s = t->session;
    if (t->serial != s->serial) /* not made by submit on this session */
        return ACCEL_EINVAL;
    /* A parent's session in a fork child (fork.c): its workers are not
     * here, so a done promised by ACCEL_OK would never run; and the ring
     * is the parent's, not to be written. Before any load of the ring. */
    if (accel__fork_stale(s->rt->fork_gen))
        return ACCEL_ECLOSED;
    /* acquire: as accel_session_is_closed(). Once close has begun it alone
     * decides the fate of queued ops (DRAIN runs them, CANCEL completes
     * them with ECLOSED). A cancel whose CAS lands after close's LP but
     * whose load saw the session open is ordered before the close: the op
     * was still unclaimed at that load, since it is at the CAS. */
    uint64_t tail = atomic_load_explicit(&s->rp.tail, memory_order_acquire);
    if (tail & ACCEL__RING_CLOSED)
        return ACCEL_ECLOSED;
    /* never handed out: not a ticket of s */
    if (t->position >= (tail & ACCEL__RING_POS))
        return ACCEL_EINVAL;
    ACCEL__YIELD_POINT(); /* the consumer may claim the op here */
    if (!accel__ring_cancel(ACCEL__RING(s), t->position))
        return ACCEL_EALREADY;
    /* A session held back to fill a batch runs now, so that the op's done
     * comes. */
    accel__session_kick_hold(s);
    return ACCEL_OK;
}
