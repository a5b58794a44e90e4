/*
 * Submit paths: submit, submit_ex, batch, submit_wait.
 *
 * A submit reserves ring positions with one CAS on the tail word (ring.h),
 * which also sets SCHED; it publishes each slot, and then either enqueues
 * the session (its CAS set SCHED) or, after a compiler barrier, loads the
 * ring's `defer` word (almost always 0: nothing more to do). One locked
 * RMW per submit. With the ring full it sleeps on the session's event word
 * until a consumer frees a slot ([R2] then a hot fence and a look at
 * `room_waiters`) or a close wakes it. No lock anywhere.
 */
#include <stdatomic.h>
#include <sched.h>
#include <stdlib.h>

#include "batch.h"
#include "clock.h"
#include "defaults.h"
#include "fork.h"
#include "futex.h"
#include "park.h"
#include "waiters.h"
#include "runtime_types.h"
#include "session.h"
#include "submit.h"
#include "trace.h"

/* The ring was full: a few yields first (on a 2-core machine the consumer
 * often just needs the CPU), then sleep until room, close or the deadline. */
static int wait_for_room(accel_session *s, int64_t timeout_ns,
                         uint64_t *deadline, unsigned *yields)
{
    if (timeout_ns == ACCEL_NO_WAIT)
        return ACCEL_EAGAIN;
    if (*deadline == 0)
        *deadline = accel__deadline(timeout_ns);
    if (*yields < ACCEL__SUBMIT_YIELDS) {
        (*yields)++;
        sched_yield();
        return accel__remaining(*deadline) == 0 ? ACCEL_ETIMEDOUT : ACCEL_OK;
    }
    return accel__waiters_wait_room(&s->waiters, ACCEL__RING(s), *deadline);
}

/* Only sampled positions read the clock (waitstat.h); the stamp is
 * published by the slot's [R1]. */
static inline void stamp_position(accel_session *s, uint64_t pos)
{
    if ((pos % ACCEL__WAIT_SAMPLE) == 0)
        s->stamps[(pos / ACCEL__WAIT_SAMPLE) & s->stamp_mask] =
            accel__now_ns();
}

/* Ops of accel_submit_ex (one, with a ticket) or of
 * accel_submit_batch_ex (any number, one deadline): published as EX
 * slots (ring.h). */
typedef struct submit_ex {
    int64_t deadline_ns; /* 0: none */
    uint64_t pos;        /* out: the position the first op got */
} submit_ex;

/* Every helper of submit_ops is forced inline like it: the folding of
 * its callers' constants reaches into them. */
#define SUBMIT_INLINE static inline __attribute__((always_inline))

/* A child of fork() must not touch its parent's sessions (fork.c): one
 * load and compare of the runtime's generation, before any write to the
 * ring. */
SUBMIT_INLINE bool submit_forked(const accel_session *s)
{
    return accel__fork_stale(s->rt->fork_gen);
}

/* Reserves up to want positions (one CAS, ring.h), or waits for room
 * while the ring is full: returns how many (the first in *first, *owner
 * as accel__ring_mp_reserve's); 0 after a wait that ended in room (the
 * caller tries again); -1 with *rc the error. The retry is the caller's
 * loop, not one in here, so that the compiler lays out the one-CAS path
 * straight. The wait's deadline and yields live in the caller, so a batch
 * that fills the ring more than once has one deadline for all its waits. */
SUBMIT_INLINE int64_t submit_reserve(accel_session *s, size_t want,
                                     int64_t timeout_ns, uint64_t *deadline,
                                     unsigned *yields, uint64_t *first,
                                     bool *owner, int *rc)
{
    int64_t k = accel__ring_mp_reserve(ACCEL__RING(s), want, first, owner);
    if (k < 0) {
        *rc = ACCEL_ECLOSED;
        return -1;
    }
    if (k == 0) {
        /* Full, and we run inside one of s's own ops (or its done):
         * only this thread's worker frees room in s, so waiting would
         * never end. */
        if (timeout_ns != ACCEL_NO_WAIT && accel__tls_current == s) {
            *rc = ACCEL_EDEADLK;
            return -1;
        }
        *rc = wait_for_room(s, timeout_ns, deadline, yields);
        if (*rc != ACCEL_OK)
            return -1;
    }
    return k;
}

/* Publishes ops[done..done+k) at positions first.. (each slot's [R1],
 * ring.h), plain or, with ex, as EX slots carrying the deadline. ex is a
 * constant in every inlined caller, so the plain loop keeps no per-slot
 * test of it. */
SUBMIT_INLINE void submit_publish(accel_session *s, const accel_op *ops,
                                  size_t done, uint64_t first, int64_t k,
                                  submit_ex *ex)
{
    if (ex && done == 0)
        ex->pos = first;
    for (int64_t i = 0; i < k; i++) {
        uint64_t pos = first + (uint64_t)i;
        const accel_op *op = &ops[done + (size_t)i];
        stamp_position(s, pos);
        /* submit(session, id, position, arg) */
        ACCEL_TRACE4(submit, s, s->id, pos, op->arg);
        if (ex)
            accel__ring_mp_publish_ex(ACCEL__RING(s), pos, op,
                                      ex->deadline_ns);
        else
            accel__ring_mp_publish(ACCEL__RING(s), pos, op);
    }
}

/* Before the publish, when this reservation set SCHED: the kick's
 * enqueue writes the refs word (pair C) and the entity (pair B); with many
 * sessions both are cold, so their misses overlap the publish's instead
 * of following it. */
SUBMIT_INLINE void submit_kick_prefetch(accel_session *s, bool owner)
{
    if (owner) {
        __builtin_prefetch(&s->refs, 1);
        __builtin_prefetch(&s->se, 1);
    }
}

/* Cold: the session is held back to fill a batch (ring.h's hold mark):
 * its batch state may release it now that these ops are published (the
 * fill, or their deadline: batch.c), through its hook. */
__attribute__((noinline, cold)) static void submit_held(accel_session *s,
                                                        int64_t deadline)
{
    /* acquire: pairs with set_batch's release CAS of the slot. */
    struct accel__batch *b = atomic_load_explicit(
        accel__session_batch_word(s), memory_order_acquire);
    if (b)
        b->kick(s, deadline);
}

/* After the publish: the owner (its CAS set SCHED) hands the session to
 * the scheduler, or to the caller's host worker with take; anyone else
 * looks at the ring's defer word (a compiler barrier and, almost always, a
 * load of 0) in case a consumer left the session to it, or it is held
 * back (ring.h). deadline: the published ops' (0: none). */
SUBMIT_INLINE void submit_kick(accel_session *s, uint64_t first, bool owner,
                               accel__submit_take *take, int64_t deadline)
{
    bool held;
    if (owner) {
        accel__session_set_next(s, first, s->rp.mask);
        if (take && !take->taken)
            take->taken = accel__park_enqueue_or_take(s, take->lane);
        else
            accel__park_enqueue(s, true);
    } else if (accel__ring_mp_claim_deferred_ex(ACCEL__RING(s), &held)) {
        accel__session_set_next(s, first, s->rp.mask); /* about: a hint */
        accel__park_enqueue(s, false);
    } else if (__builtin_expect(held, 0)) {
        submit_held(s, deadline);
    }
}

/* Publishes ops[0..n), all with a valid fn. ex: EX ops.
 * take: a host worker of take->lane will pick right after (host.c,
 * accel_host_submit_begin): a session this submit makes runnable goes to
 * it directly when its pick would return it (take->taken). Inlined into
 * each caller, whose constants (one op, no ex, no take) fold the loop and
 * branches away: accel_submit is one straight path. */
SUBMIT_INLINE int submit_ops(accel_session *s, const accel_op *ops, size_t n,
                             int64_t timeout_ns, size_t *accepted,
                             submit_ex *ex, accel__submit_take *take)
{
    if (submit_forked(s)) {
        if (accepted)
            *accepted = 0;
        return ACCEL_ECLOSED; /* the parent's session (fork.c) */
    }
    size_t done = 0;
    uint64_t deadline = 0;
    unsigned yields = 0;
    int rc = ACCEL_OK;
    while (done < n) {
        uint64_t first;
        bool owner;
        int64_t k = submit_reserve(s, n - done, timeout_ns, &deadline,
                                   &yields, &first, &owner, &rc);
        if (k < 0)
            break;
        if (k == 0)
            continue; /* waited for room */
        ACCEL__YIELD_POINT(); /* between reserve and publish */
        submit_kick_prefetch(s, owner);
        submit_publish(s, ops, done, first, k, ex);
        done += (size_t)k;
        ACCEL__YIELD_POINT(); /* between publish and the kick */
        submit_kick(s, first, owner, take, ex ? ex->deadline_ns : 0);
    }
    if (accepted)
        *accepted = done;
    return rc;
}

int accel_submit(accel_session *s, const accel_op *op, int64_t timeout_ns)
{
    if (!s || !op || !op->fn || timeout_ns < ACCEL_FOREVER)
        return ACCEL_EINVAL;
    return submit_ops(s, op, 1, timeout_ns, NULL, NULL, NULL);
}

/* accel_submit_ex, and with take its host hand-off: inlined into both, so
 * that accel_submit_ex folds the take away. */
SUBMIT_INLINE int submit_one_ex(accel_session *s, const accel_op *op,
                                int64_t deadline_ns, int64_t timeout_ns,
                                accel_ticket *ticket,
                                accel__submit_take *take)
{
    if (ticket)
        *ticket = (accel_ticket){0}; /* a failed submit leaves no ticket */
    if (!s || !op || !op->fn || timeout_ns < ACCEL_FOREVER || deadline_ns < 0)
        return ACCEL_EINVAL;
    if (deadline_ns == 0 && !ticket) /* nothing to check: the plain path */
        return submit_ops(s, op, 1, timeout_ns, NULL, NULL, take);
    submit_ex ex = {.deadline_ns = deadline_ns};
    int rc = submit_ops(s, op, 1, timeout_ns, NULL, &ex, take);
    if (rc == ACCEL_OK && ticket)
        *ticket = (accel_ticket){
            .session = s, .position = ex.pos, .serial = s->serial};
    return rc;
}

int accel_submit_ex(accel_session *s, const accel_op *op, int64_t deadline_ns,
                    int64_t timeout_ns, accel_ticket *ticket)
{
    return submit_one_ex(s, op, deadline_ns, timeout_ns, ticket, NULL);
}

int accel__submit_take_one_ex(accel_session *s, const accel_op *op,
                              int64_t deadline_ns, int64_t timeout_ns,
                              accel_ticket *ticket, accel__submit_take *take)
{
    return submit_one_ex(s, op, deadline_ns, timeout_ns, ticket, take);
}

/* accel_submit_batch, with ex its EX form (one deadline for all). */
SUBMIT_INLINE int submit_batch(accel_session *s, const accel_op *ops,
                               size_t n, int64_t timeout_ns,
                               size_t *accepted, submit_ex *ex)
{
    if (accepted)
        *accepted = 0;
    if (!s || (!ops && n) || timeout_ns < ACCEL_FOREVER)
        return ACCEL_EINVAL;
    size_t valid = 0;
    while (valid < n && ops[valid].fn)
        valid++;
    int rc = submit_ops(s, ops, valid, timeout_ns, accepted, ex, NULL);
    if (rc == ACCEL_OK && valid < n)
        rc = ACCEL_EINVAL;
    return rc;
}

int accel_submit_batch(accel_session *s, const accel_op *ops, size_t n,
                       int64_t timeout_ns, size_t *accepted)
{
    return submit_batch(s, ops, n, timeout_ns, accepted, NULL);
}

int accel_submit_batch_ex(accel_session *s, const accel_op *ops, size_t n,
                          int64_t deadline_ns, int64_t timeout_ns,
                          size_t *accepted)
{
    if (deadline_ns < 0) {
        if (accepted)
            *accepted = 0;
        return ACCEL_EINVAL;
    }
    if (deadline_ns == 0)
        return submit_batch(s, ops, n, timeout_ns, accepted, NULL);
    submit_ex ex = {.deadline_ns = deadline_ns};
    return submit_batch(s, ops, n, timeout_ns, accepted, &ex);
}

typedef struct wait_op {
    accel_op_fn fn;
    void *arg;
    int status;
    _Atomic uint32_t done;
} wait_op;

static int wait_op_run(accel_ctx *ctx, void *arg)
{
    wait_op *w = arg;
    return w->fn(ctx, w->arg);
}

static void wait_op_done(void *arg, int status)
{
    wait_op *w = arg;
    w->status = status;
    /* [R6] release: publishes status; pairs with [A6]. After this store
     * the waiter may return and its frame be reused: the wake below uses
     * the address only as a futex key. */
    atomic_store_explicit(&w->done, 1, memory_order_release);
    accel__futex_wake(&w->done, 1);
}

int accel_submit_wait(accel_session *s, accel_op_fn fn, void *arg,
                      int64_t timeout_ns)
{
    if (!s || !fn || timeout_ns < ACCEL_FOREVER)
        return ACCEL_EINVAL;
    if (accel__tls_current == s)
        return ACCEL_EDEADLK;
    wait_op w = {.fn = fn, .arg = arg};
    atomic_init(&w.done, 0);
    accel_op op = {.fn = wait_op_run, .done = wait_op_done, .arg = &w};
    int rc = submit_ops(s, &op, 1, timeout_ns, NULL, NULL, NULL);
    if (rc != ACCEL_OK)
        return rc;
    /* [A6] acquire: pairs with [R6]. */
    if (!atomic_load_explicit(&w.done, memory_order_acquire)) {
        accel__block_begin(); /* inside an op: another worker takes over */
        while (!atomic_load_explicit(&w.done, memory_order_acquire))
            accel__futex_wait(&w.done, 0, -1);
        accel__block_end();
    }
    return w.status;
}
