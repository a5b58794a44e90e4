/*
 * Submit paths: submit, batch, submit_wait, sync; budget reservations.
 *
 * A submit reserves ring positions with one CAS on the tail word (ring.h),
 * which also sets SCHED; it publishes each slot, and then either enqueues
 * the session (its CAS set SCHED) or, after a compiler barrier, loads the
 * ring's `defer` word (almost always 0: nothing more to do). One locked
 * RMW per submit. With the ring full it sleeps on the session's event word
 * until a consumer frees a slot ([R2] then a hot fence and a look at
 * `space_waiters`) or a close wakes it. No lock anywhere.
 */
#include <stdatomic.h>
#include <sched.h>
#include <stdlib.h>

#include "clock.h"
#include "defaults.h"
#include "futex.h"
#include "park.h"
#include "progress.h"
#include "runtime.h"
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
    return accel__progress_wait_room(s, *deadline);
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
 * accel__submit_batch_until (any number, one deadline): published as EX
 * slots (ring.h). */
typedef struct submit_ex {
    int64_t deadline_ns; /* 0: none */
    uint64_t pos;        /* out: the position the first op got */
} submit_ex;

/* Publishes ops[0..n), all with a valid fn. ex: EX ops.
 * take: a host slot of take->lane will pick right after (host.c,
 * accel_host_submit_begin): a session this submit makes runnable goes to
 * it directly when its pick would return it (take->taken). Inlined into
 * each caller, whose constants (one op, no ex, no take) fold the loop and
 * branches away: accel_submit is one straight path. */
static inline __attribute__((always_inline)) int
submit_ops(accel_session *s, const accel_op *ops, size_t n, int64_t timeout_ns,
           size_t *accepted, submit_ex *ex, accel__submit_take *take)
{
    if (accel__fork_stale(s->rt->fork_gen)) {
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
        int64_t k = accel__ring_mp_reserve(ACCEL__RING(s), n - done, &first, &owner);
        if (k < 0) {
            rc = ACCEL_ECLOSED;
            break;
        }
        if (k == 0) {
            /* Full, and we run inside one of s's own ops (or its done):
             * only this thread's worker frees room in s, so waiting would
             * never end. */
            if (timeout_ns != ACCEL_NO_WAIT && accel__tls_current == s) {
                rc = ACCEL_EDEADLK;
                break;
            }
            rc = wait_for_room(s, timeout_ns, &deadline, &yields);
            if (rc != ACCEL_OK)
                break;
            continue;
        }
        ACCEL__YIELD_POINT(); /* between reserve and publish */
        if (owner) {
            /* The enqueue below writes the refs word (pair C) and the
             * entity (pair B): with many sessions both are cold, so their
             * misses overlap the publish's instead of following it. */
            __builtin_prefetch(&s->refs, 1);
            __builtin_prefetch(&s->se, 1);
        }
        if (ex) { /* kept out of the plain loop below */
            if (done == 0)
                ex->pos = first;
            for (int64_t i = 0; i < k; i++) {
                uint64_t pos = first + (uint64_t)i;
                stamp_position(s, pos);
                /* submit(session, id, position, arg) */
                ACCEL_TRACE4(submit, s, s->id, pos,
                             ops[done + (size_t)i].arg);
                accel__ring_mp_publish_ex(ACCEL__RING(s), pos,
                                          &ops[done + (size_t)i],
                                          ex->deadline_ns);
            }
        }
        for (int64_t i = 0; i < k && !ex; i++) {
            uint64_t pos = first + (uint64_t)i;
            stamp_position(s, pos);
            /* submit(session, id, position, arg) */
            ACCEL_TRACE4(submit, s, s->id, pos, ops[done + (size_t)i].arg);
            accel__ring_mp_publish(ACCEL__RING(s), pos, &ops[done + (size_t)i]);
        }
        done += (size_t)k;
        ACCEL__YIELD_POINT(); /* between publish and the kick */
        if (owner) {
            accel__session_set_next(s, first, s->rp.mask);
            if (take && !take->taken)
                take->taken = accel__park_enqueue_or_take(s, take->lane);
            else
                accel__park_enqueue(s, true);
        } else if (accel__ring_mp_claim_deferred(ACCEL__RING(s))) {
            accel__session_set_next(s, first, s->rp.mask); /* about: a hint */
            accel__park_enqueue(s, false);
        }
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

int accel__submit_take_one(accel_session *s, const accel_op *op,
                           int64_t timeout_ns, accel__submit_take *take)
{
    return submit_ops(s, op, 1, timeout_ns, NULL, NULL, take);
}

int accel_submit_ex(accel_session *s, const accel_op *op, int64_t deadline_ns,
                    int64_t timeout_ns, accel_ticket *ticket)
{
    if (ticket)
        *ticket = (accel_ticket){0}; /* a failed submit leaves no ticket */
    if (!s || !op || !op->fn || timeout_ns < ACCEL_FOREVER || deadline_ns < 0)
        return ACCEL_EINVAL;
    if (deadline_ns == 0 && !ticket) /* nothing to check: the plain path */
        return submit_ops(s, op, 1, timeout_ns, NULL, NULL, NULL);
    submit_ex ex = {.deadline_ns = deadline_ns};
    int rc = submit_ops(s, op, 1, timeout_ns, NULL, &ex, NULL);
    if (rc == ACCEL_OK && ticket)
        *ticket = (accel_ticket){
            .session = s, .position = ex.pos, .serial = s->serial};
    return rc;
}

int accel_submit_batch(accel_session *s, const accel_op *ops, size_t n,
                       int64_t timeout_ns, size_t *accepted)
{
    if (accepted)
        *accepted = 0;
    if (!s || (!ops && n) || timeout_ns < ACCEL_FOREVER)
        return ACCEL_EINVAL;
    size_t valid = 0;
    while (valid < n && ops[valid].fn)
        valid++;
    int rc = submit_ops(s, ops, valid, timeout_ns, accepted, NULL, NULL);
    if (rc == ACCEL_OK && valid < n)
        rc = ACCEL_EINVAL;
    return rc;
}

int accel__submit_batch_until(accel_session *s, const accel_op *ops,
                              size_t n, int64_t deadline_ns,
                              int64_t timeout_ns, size_t *accepted)
{
    if (deadline_ns == 0)
        return accel_submit_batch(s, ops, n, timeout_ns, accepted);
    if (accepted)
        *accepted = 0;
    if (!s || (!ops && n) || timeout_ns < ACCEL_FOREVER || deadline_ns < 0)
        return ACCEL_EINVAL;
    size_t valid = 0;
    while (valid < n && ops[valid].fn)
        valid++;
    submit_ex ex = {.deadline_ns = deadline_ns};
    int rc = submit_ops(s, ops, valid, timeout_ns, accepted, &ex, NULL);
    if (rc == ACCEL_OK && valid < n)
        rc = ACCEL_EINVAL;
    return rc;
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

int accel_session_sync(accel_session *s, int64_t timeout_ns)
{
    if (!s || timeout_ns < ACCEL_FOREVER)
        return ACCEL_EINVAL;
    if (accel__tls_current == s)
        return ACCEL_EDEADLK;
    if (accel__fork_stale(s->rt->fork_gen))
        return ACCEL_ECLOSED;
    uint64_t target = accel__ring_submitted(ACCEL__RING(s));
    return accel__progress_wait_finished(s, target,
                                         accel__deadline(timeout_ns));
}

int accel_session_reserve(accel_session *s, int64_t bytes)
{
    if (!s || bytes < 0)
        return ACCEL_EINVAL;
    if (accel_session_is_closed(s))
        return ACCEL_ECLOSED;
    int rc = accel__budget_charge(&s->budget, bytes);
    if (rc == ACCEL_EBUDGET)
        ACCEL_TRACE3(budget_refused, s, s->id, bytes);
    return rc;
}

int accel_session_unreserve(accel_session *s, int64_t bytes)
{
    if (!s)
        return ACCEL_EINVAL;
    return accel__budget_refund(&s->budget, bytes);
}

int64_t accel_session_memory_used(const accel_session *s)
{
    return s ? accel__budget_used(&s->budget) : 0;
}

accel_session *accel_ctx_session(accel_ctx *ctx)
{
    return ctx ? ctx->session : NULL;
}

int accel_ctx_alloc(accel_ctx *ctx, size_t bytes, void **out)
{
    if (!ctx || !out || bytes == 0 || bytes > INT64_MAX)
        return ACCEL_EINVAL;
    accel_session *s = ctx->session;
    size_t charge = s->bops->alloc_charge(s->bstate, bytes);
    int rc = accel__budget_charge(&s->budget, (int64_t)charge);
    if (rc != ACCEL_OK) {
        ACCEL_TRACE3(budget_refused, s, s->id, (int64_t)charge);
        return rc;
    }
    rc = s->bops->alloc(s->bstate, ctx, bytes, out);
    if (rc != ACCEL_OK)
        (void)accel__budget_refund(&s->budget, (int64_t)charge);
    return rc;
}

void accel_ctx_free(accel_ctx *ctx, void *p)
{
    if (!ctx || !p)
        return;
    accel_session *s = ctx->session;
    size_t refund = s->bops->free(s->bstate, ctx, p);
    (void)accel__budget_refund(&s->budget, (int64_t)refund);
}
