/*
 * Dynamic batching (docs/batching.md).
 *
 * A session's batch state lives in a word of its tail (session.h),
 * allocated by the first accel_session_set_batch and freed with the
 * session: its configuration, which any thread may change at any time,
 * and the counters of its batches, written by the visiting worker only.
 * The session's `batched` flag, on the line a visit loads anyway, is the
 * one thing the op path reads: a visit of a session without a batch
 * function pays one load and one branch (visit.c).
 *
 * The configuration is a seqlock: writers take the sequence from even to
 * odd with a CAS (they are serialized by it), store the fields and make
 * it even again; a visit reads the fields between two loads of an even,
 * unchanged sequence. A reader spins only while a writer is between its
 * CAS and its last store (a few stores).
 *
 * Forming a batch: the visit takes what is published (runs of up to
 * ACCEL__TAKE_MAX ops), up to max_ops, and claims every EX op of a run
 * (cancel, deadline, close) before it takes the next run, exactly as a
 * one-by-one visit claims an op right before it would run: so an op
 * cancelled or expired before its batch forms is left out, and no
 * position is released past an unclaimed EX op. Then one call of the
 * batch function, then every op's done in FIFO order.
 */

#include "batch.h"

#include <string.h>

#include "abi.h"
#include "alloc.h"
#include "clock.h"
#include "fork.h"
#include "futex.h"
#include "progress.h"
#include "runtime.h"
#include "session.h"
#include "trace.h"
#include "visit.h"

_Static_assert(ACCEL_BATCH_MAX < (1u << ACCEL_BATCH_HIST_BUCKETS),
               "every batch size has a bucket");

typedef struct batch_cfg {
    accel_batch_fn fn;
    void *user;
    uint32_t max_ops;
} batch_cfg;

static void cfg_read(struct accel__batch *b, batch_cfg *c)
{
    for (;;) {
        /* acquire: pairs with the writer's release store of the even
         * sequence, so the fields it stored before are seen. */
        uint64_t q = atomic_load_explicit(&b->seq, memory_order_acquire);
        if (q & 1) {
            accel__cpu_relax();
            continue;
        }
        c->fn = atomic_load_explicit(&b->fn, memory_order_relaxed);
        c->user = atomic_load_explicit(&b->user, memory_order_relaxed);
        c->max_ops = atomic_load_explicit(&b->max_ops, memory_order_relaxed);
        /* acquire fence: the field loads above come before the second
         * load of seq; pairs with the writer's release fence after its
         * odd store (a field stored by a newer writer means seq moved). */
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&b->seq, memory_order_relaxed) == q)
            return;
    }
}

static void cfg_write(accel_session *s, struct accel__batch *b,
                      const batch_cfg *c)
{
    uint64_t q = atomic_load_explicit(&b->seq, memory_order_relaxed);
    for (;;) {
        /* acquire: pairs with the previous writer's release store, so
         * writers apply one after the other, each whole. */
        if (!(q & 1) &&
            atomic_compare_exchange_weak_explicit(&b->seq, &q, q + 1,
                                                  memory_order_acquire,
                                                  memory_order_relaxed))
            break;
        if (q & 1) {
            accel__cpu_relax();
            q = atomic_load_explicit(&b->seq, memory_order_relaxed);
        }
    }
    /* release fence: the odd sequence is ordered before the field stores
     * below; pairs with a reader's acquire fence (cfg_read). */
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&b->fn, c->fn, memory_order_relaxed);
    atomic_store_explicit(&b->user, c->user, memory_order_relaxed);
    atomic_store_explicit(&b->max_ops, c->max_ops, memory_order_relaxed);
    /* relaxed: a hint to the next visit, which reads the configuration
     * itself (a visit that sees the flag and no function runs the ops
     * one by one). Inside the write, so the last writer's value stays. */
    atomic_store_explicit(&s->batched, c->fn ? 1 : 0, memory_order_relaxed);
    /* release: publishes the fields; pairs with cfg_read's acquire and
     * the next writer's CAS. */
    atomic_store_explicit(&b->seq, q + 2, memory_order_release);
}

int accel_session_set_batch(accel_session *s, const accel_batch_config *ucfg)
{
    if (!s)
        return ACCEL_EINVAL;
    batch_cfg c = {0};
    if (ucfg) {
        accel_batch_config cfg;
        if (accel__config_copy(&cfg, sizeof(cfg), ucfg, ucfg->struct_size,
                               sizeof(cfg)) != 0)
            return ACCEL_EINVAL;
        if (!cfg.fn || cfg.max_ops == 0 || cfg.max_ops > ACCEL_BATCH_MAX ||
            cfg.max_delay_ns > ACCEL_BATCH_DELAY_MAX)
            return ACCEL_EINVAL;
        if (!cfg.max_delay_ns && (cfg.cost_fixed_ns || cfg.cost_per_op_ns))
            return ACCEL_EINVAL; /* a cost serves only the hold-back */
        if (cfg.max_delay_ns)
            return ACCEL_ENOTSUP; /* no hold-back in this release */
        c = (batch_cfg){.fn = cfg.fn, .user = cfg.user, .max_ops = cfg.max_ops};
    }
    /* closed, or a parent's session in a fork child (fork.c) */
    if (accel__fork_stale(s->rt->fork_gen) ||
        accel__ring_is_closed(ACCEL__RING(s)))
        return ACCEL_ECLOSED;
    if (s->backend != ACCEL_BACKEND_CPU)
        return ACCEL_ENOTSUP;
    struct accel__batch *_Atomic *slot = accel__session_batch_slot(s);
    /* acquire: pairs with the release CAS below (another setter's
     * initialized state). */
    struct accel__batch *b = atomic_load_explicit(slot, memory_order_acquire);
    if (!b) {
        if (!c.fn)
            return ACCEL_OK; /* nothing to clear */
        struct accel__batch *nb = accel__calloc_aligned(64, sizeof(*nb));
        if (!nb)
            return ACCEL_ENOMEM;
        nb->run = accel__batch_visit_run;
        /* release: publishes the zeroed state to the visit's acquire load
         * (accel__batch_visit_run) and other setters; acquire on failure:
         * the winner's state. */
        if (atomic_compare_exchange_strong_explicit(slot, &b, nb,
                                                    memory_order_acq_rel,
                                                    memory_order_acquire))
            b = nb;
        else
            accel__free(nb);
    }
    cfg_write(s, b, &c);
    return ACCEL_OK;
}

/* The status of ops[i] of a run of k just taken at h0, decided now, as the
 * batch forms: an EX op is claimed (cancel, close, deadline), a plain one
 * sees close(CANCEL)'s flag, as in a one-by-one visit. 0: it runs. */
static int form_status(accel__visit *v, uint64_t h0, uint32_t i,
                       uint32_t *ex, uint32_t k)
{
    if (*ex & (UINT32_C(1) << i))
        return accel__visit_claim(v, h0, i, ex, k);
    /* relaxed: close's flag, as in run_ops. */
    if (atomic_load_explicit(&v->s->close_cancels, memory_order_relaxed))
        return ACCEL_ECLOSED;
    return 0;
}

static unsigned hist_bucket(uint32_t n)
{
    return 31u - (unsigned)__builtin_clz(n); /* n >= 1 */
}

bool accel__batch_visit_run(accel__visit *v)
{
    accel_session *s = v->s;
    /* acquire: pairs with set_batch's release CAS of the slot. */
    struct accel__batch *b =
        atomic_load_explicit(accel__session_batch_slot(s), memory_order_acquire);
    if (!b)
        return false;
    accel_op ops[ACCEL_BATCH_MAX];
    void *args[ACCEL_BATCH_MAX];
    int status[ACCEL_BATCH_MAX];
    int unrun[ACCEL_BATCH_MAX];
    accel_ctx ctx = {.session = s};
    for (;;) {
        /* The configuration is read per batch, once its first op is seen
         * published ([A1] acquire in ready): a set_batch that happened
         * before that op's submit is seen, so every op accepted after a
         * clear runs one by one (the caller's loop, for the rest of the
         * visit). */
        if (!accel__ring_sc_ready(ACCEL__RING(s), v->h))
            break;
        batch_cfg c;
        cfg_read(b, &c);
        if (!c.fn)
            return false;
        /* Form: what is published now, up to max_ops. */
        uint32_t n = 0;
        while (n < c.max_ops) {
            uint32_t max = c.max_ops - n;
            if (max > ACCEL__TAKE_MAX)
                max = ACCEL__TAKE_MAX;
            uint32_t ex;
            uint32_t k = accel__visit_take(v, ops + n, max, &ex);
            uint64_t h0 = v->h - k;
            for (uint32_t i = 0; i < k; i++)
                unrun[n + i] = form_status(v, h0, i, &ex, k);
            n += k;
            if (k < max)
                break; /* nothing more published */
        }
        if (n == 0)
            break;
        uint32_t m = 0;
        uint64_t gone = 0, expired = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (!unrun[i]) {
                args[m] = ops[i].arg;
                status[m++] = 0;
            } else if (unrun[i] == ACCEL_EEXPIRED) {
                expired++;
            } else {
                gone++;
            }
        }
        if (expired)
            accel__bump(&s->expired, expired);
        if (gone)
            accel__bump(&s->cancelled, gone);
        uint64_t t1 = 0;
        if (m) {
            accel__bump(&s->dispatched, m);
            uint64_t t0 = accel__now_ns();
            c.fn(&ctx, args, m, status, c.user);
            t1 = accel__now_ns();
            /* batch(session, ops, ns of the call) */
            ACCEL_TRACE3(batch, s, m, t1 - t0);
            accel__bump(&b->batches, 1);
            accel__bump(&b->ops, m);
            accel__bump(&b->hist[hist_bucket(m)], 1);
        }
        /* Every op's done in FIFO order, ran or not. */
        for (uint32_t i = 0, j = 0; i < n; i++) {
            if (unrun[i])
                accel__visit_op_done(s, &ops[i], unrun[i], false);
            else
                accel__visit_op_done(s, &ops[i], status[j++], true);
        }
        accel__progress_finished(&s->progress, n);
        /* To the scheduler a batch is one op: the session's cost per op
         * (its quota, its lane: docs/scheduler.md) is the batch's, as it
         * holds a worker that long. */
        v->n += 1;
        if (!t1)
            t1 = accel__now_ns();
        if (t1 - v->t0 >= v->rt->cfg.quantum_ns)
            break;
    }
    return true;
}

/* Host-driven runtimes (host.c): a host visit of a batched session forms
 * one batch, exactly as each batch above is formed (the same takes and
 * claims, up to max_ops and the host's cap), and hands the ops that run
 * to the host, which runs them its own way (the Go binding: one call of
 * its batch function) and reports their statuses in the visit's end
 * (accel__batch_host_ran, then the dones in FIFO order). Returns the ops
 * taken into ops[0..n), unrun[i] the status ops[i] completes with unrun
 * (0: it runs), *ran how many run and *t0 when they were handed out;
 * false when the session has no batch function now (nothing taken: the
 * visit runs one by one). To the scheduler a batch is one op. */
bool accel__batch_host_form(accel__visit *v, uint32_t cap, accel_op *ops,
                            int *unrun, uint32_t *taken, uint32_t *ran,
                            uint64_t *t0)
{
    accel_session *s = v->s;
    *taken = *ran = 0;
    /* acquire: pairs with set_batch's release CAS of the slot. */
    struct accel__batch *b =
        atomic_load_explicit(accel__session_batch_slot(s), memory_order_acquire);
    if (!b)
        return false;
    /* Read once the batch's first op is seen published, as above. */
    if (!accel__ring_sc_ready(ACCEL__RING(s), v->h))
        return true; /* nothing to form: an empty visit */
    batch_cfg c;
    cfg_read(b, &c);
    if (!c.fn)
        return false;
    uint32_t max_ops = c.max_ops < cap ? c.max_ops : cap;
    uint32_t n = 0;
    while (n < max_ops) {
        uint32_t max = max_ops - n;
        if (max > ACCEL__TAKE_MAX)
            max = ACCEL__TAKE_MAX;
        uint32_t ex;
        uint32_t k = accel__visit_take(v, ops + n, max, &ex);
        uint64_t h0 = v->h - k;
        for (uint32_t i = 0; i < k; i++)
            unrun[n + i] = form_status(v, h0, i, &ex, k);
        n += k;
        if (k < max)
            break; /* nothing more published */
    }
    uint32_t m = 0;
    uint64_t gone = 0, expired = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!unrun[i])
            m++;
        else if (unrun[i] == ACCEL_EEXPIRED)
            expired++;
        else
            gone++;
    }
    if (expired)
        accel__bump(&s->expired, expired);
    if (gone)
        accel__bump(&s->cancelled, gone);
    if (m) {
        accel__bump(&s->dispatched, m);
        *t0 = accel__now_ns();
    }
    v->n = n ? 1 : 0;
    *taken = n;
    *ran = m;
    return true;
}

/* The host ran the m ops of the visit's batch, handed out at t0: the
 * batch's counters and probe, as after a call of the batch function. */
void accel__batch_host_ran(accel__visit *v, uint32_t m, uint64_t t0)
{
    if (!m)
        return;
    accel_session *s = v->s;
    /* acquire: as in accel__batch_host_form (set before the batch formed). */
    struct accel__batch *b =
        atomic_load_explicit(accel__session_batch_slot(s), memory_order_acquire);
    uint64_t t1 = accel__now_ns();
    /* batch(session, ops, ns from hand-out to the host's report) */
    ACCEL_TRACE3(batch, s, m, t1 - t0);
    accel__bump(&b->batches, 1);
    accel__bump(&b->ops, m);
    accel__bump(&b->hist[hist_bucket(m)], 1);
}
