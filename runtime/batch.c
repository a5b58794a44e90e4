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
 * canceled or expired before its batch forms is left out, and no
 * position is released past an unclaimed EX op. Then one call of the
 * batch function, then every op's done in FIFO order.
 *
 * Holding back (max_delay_ns > 0; docs/batching.md). A batch visit that
 * finds fewer than max_ops ops, before their release time (the first hold
 * of the forming batch + max_delay_ns, or earlier, the earliest deadline
 * among them - the expected cost of a full batch), takes nothing: it ends
 * (hold_end), and instead of re-queueing the session it holds it. A held
 * session keeps SCHED (producers do not enqueue it) and the scheduler's
 * reference, and is in no queue: no worker sees it, none waits for it.
 * The hold is ring.h's mark in `defer` (its HELD flag and the hold's
 * generation), which the holder stores while it is the session's
 * consumer (defer is 0 then): that store is the hold's LP, and the one
 * CAS that takes that mark out of defer is the release. Exactly one of
 * the timer, a producer (fill, or a deadline that moves the release time
 * up), close, accel_cancel, set_batch and the holder's own second look
 * wins it and enqueues the session (accel__sched_release: its place
 * against the virtual time is what it was when held). One word for both
 * matters: with the hold in a word of its own and the mark stored after
 * it, a release could land in between, the session be visited and left
 * to a producer (a deferral in defer), and the holder's late mark then
 * overwrite that deferral, stranding the session with ops queued
 * (unit_batch_hold's a_release_in_the_holders_window_keeps_a_deferral).
 * Producers learn of a hold from the mark, which they load after each
 * publish anyway: a session without a hold pays nothing. The holder's
 * mark and the producer's publish are the asymmetric fence pair of
 * futex.h (holder: mark, fence_cold, second look at tail and slots;
 * producer: publish, fence_hot, load of defer): an op the second look
 * misses was published by a producer that sees the mark. Close, cancel
 * and set_batch store, fence (seq_cst) and load defer: the holder's
 * membarrier orders its side.
 *
 * The timer is a thread per runtime (started by the first set_batch with
 * a delay): each hold pushes a node (its mark, a session ref) onto
 * its incoming stack and wakes it when its release time is before the
 * timer's; it sleeps on a futex until the earliest release time it knows,
 * releases what is due and drops nodes whose hold ended. Parked workers
 * with a timeout would need one elected to time and every busy worker to
 * look at release times between visits, a load on every visit of every
 * session; the blocked-op monitor ticks at block_detect_ns and sleeps when
 * idle. A thread of its own costs sessions without a delay nothing.
 */

#include "batch.h"

#include <limits.h>
#include <pthread.h>
#include <string.h>

#include "abi.h"
#include "alloc.h"
#include "clock.h"
#include "fault.h"
#include "fork.h"
#include "futex.h"
#include "park.h"
#include "waiters.h"
#include "rcu.h"
#include "runtime_types.h"
#include "session.h"
#include "trace.h"
#include "visit.h"

_Static_assert(ACCEL_BATCH_MAX < (1u << ACCEL_BATCH_HIST_BUCKETS),
               "every batch size has a bucket");

typedef struct batch_cfg {
    accel_batch_fn fn;
    void *user;
    uint32_t max_ops;
    uint64_t max_delay_ns, cost_fixed_ns, cost_per_op_ns;
} batch_cfg;

/* The expected cost of a full batch (saturating). */
static uint64_t cost_full(const batch_cfg *c)
{
    uint64_t per;
    if (__builtin_mul_overflow(c->cost_per_op_ns, (uint64_t)c->max_ops, &per))
        return UINT64_MAX;
    return c->cost_fixed_ns > UINT64_MAX - per ? UINT64_MAX
                                               : c->cost_fixed_ns + per;
}

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
        c->max_delay_ns =
            atomic_load_explicit(&b->max_delay_ns, memory_order_relaxed);
        c->cost_fixed_ns =
            atomic_load_explicit(&b->cost_fixed_ns, memory_order_relaxed);
        c->cost_per_op_ns =
            atomic_load_explicit(&b->cost_per_op_ns, memory_order_relaxed);
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
    atomic_store_explicit(&b->max_delay_ns, c->max_delay_ns,
                          memory_order_relaxed);
    atomic_store_explicit(&b->cost_fixed_ns, c->cost_fixed_ns,
                          memory_order_relaxed);
    atomic_store_explicit(&b->cost_per_op_ns, c->cost_per_op_ns,
                          memory_order_relaxed);
    /* relaxed: a hint to the next visit, which reads the configuration
     * itself (a visit that sees the flag and no function runs the ops
     * one by one). Inside the write, so the last writer's value stays. */
    atomic_store_explicit(&s->batched, c->fn ? 1 : 0, memory_order_relaxed);
    /* release: publishes the fields; pairs with cfg_read's acquire and
     * the next writer's CAS. */
    atomic_store_explicit(&b->seq, q + 2, memory_order_release);
}

/* ------------------------------------------------------------ holding back */

/* The mark of the hold after the one whose mark was x (0: none yet):
 * ring.h's HELD flag and the next generation in the position bits (never
 * 0), so that the timer's release of one hold never takes a later one's
 * mark (a stale release CAS fails on the generation). */
static uint64_t next_mark(uint64_t x)
{
    uint64_t g = ((x & ACCEL__RING_POS) + 1) & ACCEL__RING_POS;
    return ACCEL__RING_DEFER_HELD | (g ? g : 1);
}

/* A hold the timer times: its mark and a reference on the session. */
typedef struct hold_node {
    struct hold_node *next;
    struct accel__batch *b;
    uint64_t hold;
} hold_node;

struct accel__batch_timer {
    accel_runtime *rt;
    pthread_t thread;
    /* holds pushed by their holders (a Treiber stack; the timer takes it
     * whole) */
    alignas(64) _Atomic(hold_node *) incoming;
    /* when the timer wakes next (UINT64_MAX: it knows no hold) */
    _Atomic uint64_t target;
    /* the timer's futex word: bumped by a hold due before target, and
     * by stop */
    _Atomic uint32_t word;
    _Atomic uint32_t stop;
};

/* Test seam (unit_batch_hold.c): when set, the timer calls it before it
 * releases a due hold, and releases only when it returns true. NULL
 * outside tests. */
bool (*_Atomic accel__batch_timer_hook)(accel_session *s);
void (*_Atomic accel__batch_hold_hook)(accel_session *s);
void (*_Atomic accel__batch_release_hook)(accel_session *s);

/* The release: the one CAS that takes the hold's mark `x` out of defer.
 * The winner counts the held time and enqueues the session at the place
 * it held (accel__sched_release), waking a worker with wake (the holder's
 * own second look does not: its worker picks next). Returns enqueue's
 * lanes, 0 when another won or x is no hold. */
static unsigned hold_release(struct accel__batch *b, uint64_t x, bool wake)
{
    if (!(x & ACCEL__RING_DEFER_HELD))
        return 0;
    accel_session *s = b->s;
    /* acquire: pairs with the holder's release store of the mark (its
     * fields, the entity, what its visit did); one winner. defer is 0
     * from here until the next consumer defers or holds: the enqueue
     * below is what lets one hold the session. */
    if (!atomic_compare_exchange_strong_explicit(&s->rp.defer, &x, 0,
                                                 memory_order_acquire,
                                                 memory_order_relaxed))
        return 0;
    if (wake) {
        /* relaxed: a test sets it before the runtime exists. */
        void (*hook)(accel_session *) = atomic_load_explicit(
            &accel__batch_release_hook, memory_order_relaxed);
        if (__builtin_expect(hook != NULL, 0))
            hook(s);
    }
    uint64_t now = accel__now_ns();
    uint64_t held = now > b->hold_t0 ? now - b->hold_t0 : 0;
    accel__bump(&b->held_ns, held);
    b->held_batch_ns += held;
    unsigned lanes = accel__sched_release(s->rt->sched, &s->se, b->place);
    if (wake)
        accel__park_wake_lanes(s->rt, lanes);
    return lanes;
}

static void node_drop(hold_node *n)
{
    accel__session_unref(n->b->s);
    accel__free(n);
}

enum { HOLD_RUN, HOLD_KEEP, HOLD_EMPTY };

/* Ops queued that fill a batch: max_ops, or a full ring (whose producers
 * would otherwise wait for room until the delay ran out). */
static uint64_t fill_of(const accel_session *s, const batch_cfg *c)
{
    uint64_t cap = s->rc.mask + 1;
    return c->max_ops < cap ? c->max_ops : cap;
}

/* Whether the ops queued at h may be held back now (at now; the forming
 * batch first held at form_t0, 0: now): HOLD_RUN when close has begun,
 * a batch's fill is reserved (fill_of), an op is canceled (its done is
 * owed, and the ops ahead of it complete first) or the release time has come; HOLD_EMPTY
 * when none is published; else HOLD_KEEP with the release time in
 * *release: form_t0 + max_delay_ns, or earlier, the earliest deadline of
 * the published ops less the expected cost of a full batch. Published
 * ops only: an op reserved and not yet published is its producer's to
 * look at (it sees the mark). Any thread that holds the session or its
 * hold; reads only. */
static int hold_decide(accel_session *s, uint64_t h, const batch_cfg *c,
                       uint64_t now, uint64_t form_t0, uint64_t *release)
{
    /* relaxed: tail's CLOSED and count; the fence pair (the top of the
     * file) orders the look, or the caller owns the session. */
    uint64_t t = atomic_load_explicit(&s->rp.tail, memory_order_relaxed);
    if (t & ACCEL__RING_CLOSED)
        return HOLD_RUN;
    /* A runtime being destroyed holds nothing: on a host-driven one its
     * destroy runs what is left on its own thread, and a hold would
     * wait for a worker that never comes. relaxed: set before destroy
     * runs anything (runtime.c), on the thread that runs it. */
    if (atomic_load_explicit(&s->rt->stopping, memory_order_relaxed))
        return HOLD_RUN;
    uint64_t pos = t & ACCEL__RING_POS;
    if (pos - h >= fill_of(s, c))
        return HOLD_RUN;
    uint64_t r = (form_t0 ? form_t0 : now) + c->max_delay_ns;
    uint64_t cost = cost_full(c);
    int64_t *side = accel__ring_side(s->rc.slots, s->rc.mask);
    uint32_t n = 0;
    for (uint64_t p = h; p < pos; p++) {
        const accel__ring_slot *sl = &s->rc.slots[p & s->rc.mask];
        /* [A1] acquire: pairs with [R1]; the side entry is readable. */
        uint64_t seq = atomic_load_explicit(&sl->seq, memory_order_acquire);
        if ((seq & ACCEL__SEQ_POS) != p + 1)
            continue; /* not published yet */
        n++;
        if (!(seq & ACCEL__SEQ_EX))
            continue;
        if (seq & ACCEL__SEQ_CANCELED)
            return HOLD_RUN;
        /* relaxed, atomic: the holder's second look (hold_end) may run
         * after another thread released the session and a producer
         * reuses this slot (ring.h's publish_ex stores it atomically);
         * such a stale look only releases early, or lowers a release
         * time, which is always allowed. */
        int64_t d = atomic_load_explicit(
            (_Atomic int64_t *)&side[p & s->rc.mask], memory_order_relaxed);
        if (d > 0) {
            uint64_t rd = (uint64_t)d > cost ? (uint64_t)d - cost : 0;
            if (rd < r)
                r = rd;
        }
    }
    if (n == 0)
        return HOLD_EMPTY;
    if (now >= r)
        return HOLD_RUN;
    *release = r;
    return HOLD_KEEP;
}

/* Pushes the hold's node to the timer and wakes it when the hold is due
 * before the timer's next wake. */
static void hold_notify(struct accel__batch_timer *tm, hold_node *n,
                        uint64_t release_at)
{
    hold_node *h = atomic_load_explicit(&tm->incoming, memory_order_relaxed);
    do
        n->next = h;
    /* seq_cst: publishes the node (release) to the timer's exchange, and
     * is the holder's half of a Dekker pair with the timer (its store of
     * target, fence, load of incoming): either the timer sees the node
     * before it sleeps, or the load of target below sees the timer's
     * latest store. */
    while (!atomic_compare_exchange_weak_explicit(&tm->incoming, &h, n,
                                                  memory_order_seq_cst,
                                                  memory_order_relaxed));
    if (release_at < atomic_load_explicit(&tm->target, memory_order_seq_cst)) {
        /* release: pairs with the timer's acquire load of its word. */
        atomic_fetch_add_explicit(&tm->word, 1, memory_order_release);
        accel__futex_wake(&tm->word, 1);
    }
}

/* The end of a visit that holds its session back (accel__visit_end
 * hands it over, visit.h): charges the service and takes the session's
 * place (accel__sched_hold), publishes the hold and the mark, looks
 * again after the fence (what came in meanwhile may release it at once)
 * and hands the hold to the timer. Returns lanes as the visit's end does
 * (the session re-queued by its own second look), else 0. */
static unsigned hold_end(accel__visit *v, uint64_t service_ns)
{
    accel_session *s = v->s;
    accel_runtime *rt = v->rt;
    /* acquire: pairs with set_batch's release CAS of the batch word. */
    struct accel__batch *b =
        atomic_load_explicit(accel__session_batch_word(s), memory_order_acquire);
    int64_t place = accel__sched_hold(rt->sched, &s->se, service_ns,
                                      v->blocked_ns, v->n);
    accel__session_set_next(s, v->h, s->rc.mask);
    /* acquire: pairs with timer_get's release CAS. */
    struct accel__batch_timer *tm =
        atomic_load_explicit(&rt->batch_timer, memory_order_acquire);
    hold_node *node = tm ? accel__malloc(sizeof(*node)) : NULL;
    if (!node) /* no hold without its timer: the ops run now */
        return accel__sched_release(rt->sched, &s->se, place);
    uint64_t form_t0 = b->form_t0; /* the visits' (read before the hold) */
    b->place = place;
    b->hold_t0 = v->t0 + service_ns;
    /* relaxed: published by the mark's release store below (and a later
     * change by the node's push). */
    atomic_store_explicit(&b->release_at, v->release_at, memory_order_relaxed);
    accel__session_ref(s); /* the node's: s outlives the timer's look */
    /* relaxed: only a holder writes it (the last hold's mark). */
    uint64_t held = next_mark(atomic_load_explicit(&b->hold, memory_order_relaxed));
    atomic_store_explicit(&b->hold, held, memory_order_relaxed);
    node->b = b;
    node->hold = held;
    /* LP of the hold: the mark in defer, which is 0 while this visit's
     * worker is the session's consumer (ring.h). release: the fields
     * above go to the releaser's acquire CAS and to a producer's acquire
     * load of the mark (accel__batch_kick). From here another thread may
     * release the session: s stays alive by the node's reference. */
    atomic_store_explicit(&s->rp.defer, held, memory_order_release);
    {
        void (*hook)(accel_session *) = atomic_load_explicit(
            &accel__batch_hold_hook, memory_order_relaxed);
        if (__builtin_expect(hook != NULL, 0))
            hook(s);
    }
    /* Cold side of the fence pair (the top of this file): the mark
     * before the second look at tail, the slots and the configuration. */
    accel__fence_cold();
    batch_cfg c;
    cfg_read(b, &c);
    uint64_t r = 0;
    int d = c.fn && c.max_delay_ns
                ? hold_decide(s, v->h, &c, accel__now_ns(), form_t0, &r)
                : HOLD_RUN;
    if (d != HOLD_KEEP) {
        unsigned lanes = hold_release(b, held, false);
        node_drop(node);
        return lanes;
    }
    uint64_t rel = v->release_at;
    if (r < rel) {
        /* Earlier, by what came in meanwhile: lowered, never raised (a
         * newer hold may have stored its own time by now; an earlier
         * release is always allowed). relaxed: the node's push
         * publishes it to the timer; a kick that reads the older, later
         * time only releases sooner. */
        uint64_t cur =
            atomic_load_explicit(&b->release_at, memory_order_relaxed);
        while (r < cur &&
               !atomic_compare_exchange_weak_explicit(&b->release_at, &cur, r,
                                                      memory_order_relaxed,
                                                      memory_order_relaxed))
            ;
        rel = r;
    }
    hold_notify(tm, node, rel);
    return 0;
}

/* A visit's look at holding back, before it forms a batch (c: the
 * configuration it read): HOLD_RUN (form now; also without a delay),
 * HOLD_EMPTY (nothing published), or HOLD_KEEP: the visit ends taking
 * nothing and its end (hold_end, through accel__visit_end) holds the
 * session until the release time, kept in v. The visiting worker's (or
 * host worker's) own call. */
static int hold_start(accel__visit *v, struct accel__batch *b,
                      const batch_cfg *c)
{
    if (!c->max_delay_ns)
        return HOLD_RUN;
    uint64_t now = accel__now_ns(), r;
    int d = hold_decide(v->s, v->h, c, now, b->form_t0, &r);
    if (d == HOLD_KEEP) {
        if (!b->form_t0)
            b->form_t0 = now;
        v->hold_end = hold_end;
        v->release_at = r;
    }
    return d;
}

void accel__batch_kick(accel_session *s, int64_t deadline)
{
    /* acquire: pairs with set_batch's release CAS of the batch word. */
    struct accel__batch *b =
        atomic_load_explicit(accel__session_batch_word(s), memory_order_acquire);
    if (!b)
        return;
    if (deadline == ACCEL__BATCH_KICK_FORCE) {
        /* The caller's store (close's CLOSED, a cancel's CAS, the new
         * configuration) before the look at the mark: pairs with the
         * holder's fence_cold (the top of this file). */
        atomic_thread_fence(memory_order_seq_cst);
    }
    /* acquire: pairs with the holder's release store of the mark (the
     * hold's fields: release_at). */
    uint64_t x = atomic_load_explicit(&s->rp.defer, memory_order_acquire);
    if (!(x & ACCEL__RING_DEFER_HELD))
        return; /* not held, or released meanwhile */
    bool go = deadline == ACCEL__BATCH_KICK_FORCE;
    if (!go) {
        batch_cfg c;
        cfg_read(b, &c);
        /* relaxed: counts, as in hold_decide (the submitter's fence_hot
         * ordered its publish before its load of the mark). */
        uint64_t t = atomic_load_explicit(&s->rp.tail, memory_order_relaxed);
        uint64_t h = atomic_load_explicit(&s->rc.head, memory_order_relaxed);
        if (!c.fn || !c.max_delay_ns || (t & ACCEL__RING_CLOSED) ||
            (t & ACCEL__RING_POS) - h >= fill_of(s, &c)) {
            go = true;
        } else if (deadline > 0) {
            uint64_t cost = cost_full(&c);
            uint64_t rd = (uint64_t)deadline > cost
                              ? (uint64_t)deadline - cost
                              : 0;
            /* relaxed: published by the mark (acquired above) */
            go = rd < atomic_load_explicit(&b->release_at,
                                           memory_order_relaxed);
        }
    }
    if (go)
        hold_release(b, x, true);
}

static void *timer_main(void *arg)
{
    struct accel__batch_timer *tm = arg;
    accel__rcu_register(); /* its unrefs may reclaim a session */
    hold_node *pending = NULL;
    for (;;) {
        /* acquire: pairs with a holder's and stop's release bump. */
        uint32_t w = atomic_load_explicit(&tm->word, memory_order_acquire);
        /* acquire: pairs with accel__batch_timer_stop's store. */
        if (atomic_load_explicit(&tm->stop, memory_order_acquire))
            break;
        /* acquire: pairs with the holders' push (hold_notify). */
        hold_node *in =
            atomic_exchange_explicit(&tm->incoming, NULL, memory_order_acquire);
        while (in) {
            hold_node *next = in->next;
            in->next = pending;
            pending = in;
            in = next;
        }
        uint64_t now = accel__now_ns(), next = UINT64_MAX;
        for (hold_node **pp = &pending; *pp;) {
            hold_node *n = *pp;
            /* acquire: pairs with the holder's release store of the mark
             * (release_at as of the hold; a later one came with the
             * node's push). */
            uint64_t x = atomic_load_explicit(&n->b->s->rp.defer,
                                              memory_order_acquire);
            if (x == n->hold) {
                uint64_t r = atomic_load_explicit(&n->b->release_at,
                                                  memory_order_relaxed);
                if (r > now) {
                    if (r < next)
                        next = r;
                    pp = &n->next;
                    continue;
                }
                /* relaxed: a test sets it before the runtime exists. */
                bool (*hook)(accel_session *) = atomic_load_explicit(
                    &accel__batch_timer_hook, memory_order_relaxed);
                if (__builtin_expect(hook != NULL, 0) && !hook(n->b->s)) {
                    /* held on (a test's stalled timer): look again in
                     * a millisecond */
                    if (now + 1000000 < next)
                        next = now + 1000000;
                    pp = &n->next;
                    continue;
                }
                hold_release(n->b, x, true);
            }
            *pp = n->next; /* its hold ended (or we ended it) */
            node_drop(n);
        }
        /* seq_cst: the timer's half of the Dekker pair with a holder
         * (hold_notify). */
        atomic_store_explicit(&tm->target, next, memory_order_seq_cst);
        atomic_thread_fence(memory_order_seq_cst);
        if (atomic_load_explicit(&tm->incoming, memory_order_seq_cst))
            continue;
        int64_t wait = -1;
        if (next != UINT64_MAX) {
            uint64_t t = accel__now_ns();
            if (t >= next)
                continue;
            wait = (int64_t)(next - t);
        }
        accel__futex_wait(&tm->word, w, wait);
    }
    /* Stopped (runtime destroy, every session closed): drop the nodes.
     * acquire: pairs with the holders' push (hold_notify), as above. */
    hold_node *in =
        atomic_exchange_explicit(&tm->incoming, NULL, memory_order_acquire);
    while (in) {
        hold_node *next = in->next;
        node_drop(in);
        in = next;
    }
    while (pending) {
        hold_node *next = pending->next;
        node_drop(pending);
        pending = next;
    }
    return NULL;
}

static void timer_join_free(struct accel__batch_timer *tm)
{
    /* release: pairs with the timer's acquire load of stop. */
    atomic_store_explicit(&tm->stop, 1, memory_order_release);
    atomic_fetch_add_explicit(&tm->word, 1, memory_order_release);
    accel__futex_wake(&tm->word, INT_MAX);
    pthread_join(tm->thread, NULL);
    accel__free(tm);
}

/* The runtime's timer, started on first use. */
static int timer_get(accel_runtime *rt)
{
    /* acquire: pairs with the release CAS below. */
    if (atomic_load_explicit(&rt->batch_timer, memory_order_acquire))
        return ACCEL_OK;
    struct accel__batch_timer *tm = accel__calloc_aligned(64, sizeof(*tm));
    if (!tm)
        return ACCEL_ENOMEM;
    tm->rt = rt;
    atomic_init(&tm->incoming, NULL);
    atomic_init(&tm->target, UINT64_MAX);
    if (ACCEL__FAULT("pthread_create") ||
        pthread_create(&tm->thread, NULL, timer_main, tm) != 0) {
        accel__free(tm);
        return ACCEL_ENOMEM;
    }
    pthread_setname_np(tm->thread, "accel-batch");
    struct accel__batch_timer *none = NULL;
    /* release: publishes the timer to holders (hold_end's acquire);
     * acquire on failure: the winner's. */
    if (!atomic_compare_exchange_strong_explicit(&rt->batch_timer, &none, tm,
                                                 memory_order_acq_rel,
                                                 memory_order_acquire))
        timer_join_free(tm);
    return ACCEL_OK;
}

void accel__batch_timer_stop(accel_runtime *rt)
{
    /* acq_rel: acquire pairs with timer_get's release CAS that published
     * the timer (its fields initialized); release orders nothing here
     * beyond the exchange itself (destroy is the last caller). */
    struct accel__batch_timer *tm =
        atomic_exchange_explicit(&rt->batch_timer, NULL, memory_order_acq_rel);
    if (tm)
        timer_join_free(tm);
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
        c = (batch_cfg){.fn = cfg.fn,
                        .user = cfg.user,
                        .max_ops = cfg.max_ops,
                        .max_delay_ns = cfg.max_delay_ns,
                        .cost_fixed_ns = cfg.cost_fixed_ns,
                        .cost_per_op_ns = cfg.cost_per_op_ns};
    }
    /* closed, or a parent's session in a fork child (fork.c) */
    if (accel__fork_stale(s->rt->fork_gen) ||
        accel__ring_is_closed(ACCEL__RING(s)))
        return ACCEL_ECLOSED;
    /* The worker calls fn itself only where an op's run is its fn (the
     * CPU backend); a device backend runs batches with run_batch; a host
     * worker hands a batch to its host (accel__batch_host_form). */
    if (!((s->bops->flags & ACCEL__BACKEND_RUNS_INLINE) || s->bops->run_batch))
        return ACCEL_ENOTSUP;
    /* The hold-back holds what a worker runs inline (accel's own, or a
     * host's: accel__batch_host_form); a device backend's batches go out
     * as soon as they form. */
    if (c.max_delay_ns && s->bops->run_batch)
        return ACCEL_ENOTSUP;
    /* The hold-back's timer, before anything changes: its failure leaves
     * the session as it was. */
    if (c.max_delay_ns && timer_get(s->rt) != ACCEL_OK)
        return ACCEL_ENOMEM;
    struct accel__batch *_Atomic *word = accel__session_batch_word(s);
    /* acquire: pairs with the release CAS below (another setter's
     * initialized state). */
    struct accel__batch *b = atomic_load_explicit(word, memory_order_acquire);
    if (!b) {
        if (!c.fn)
            return ACCEL_OK; /* nothing to clear */
        struct accel__batch *nb = accel__calloc_aligned(64, sizeof(*nb));
        if (!nb)
            return ACCEL_ENOMEM;
        nb->run = accel__batch_visit_run;
        nb->kick = accel__batch_kick;
        nb->s = s;
        /* release: publishes the zeroed state to the visit's acquire load
         * (accel__batch_visit_run) and other setters; acquire on failure:
         * the winner's state. */
        if (atomic_compare_exchange_strong_explicit(word, &b, nb,
                                                    memory_order_acq_rel,
                                                    memory_order_acquire))
            b = nb;
        else
            accel__free(nb);
    }
    cfg_write(s, b, &c);
    /* A session held under the old configuration runs by the new one
     * (cleared: one by one; no delay: at once). */
    accel__batch_kick(s, ACCEL__BATCH_KICK_FORCE);
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

/* Takes what is published now, up to max_ops, into ops[] with each op's
 * unrun status (0: runs; form_status), a batch's forming for a worker's
 * visit and for a host visit alike: the ops taken. */
static uint32_t form_take(accel__visit *v, accel_op *ops, int *unrun,
                          uint32_t max_ops)
{
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
    return n;
}

static unsigned hist_bucket(uint32_t n)
{
    return 31u - (unsigned)__builtin_clz(n); /* n >= 1 */
}

bool accel__batch_visit_run(accel__visit *v)
{
    accel_session *s = v->s;
    /* acquire: pairs with set_batch's release CAS of the batch word. */
    struct accel__batch *b =
        atomic_load_explicit(accel__session_batch_word(s), memory_order_acquire);
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
        /* A device backend bounds a batch by what it can hold in flight;
         * none now: the visit's end polls it and re-queues the session. */
        if (s->bops->batch_room) {
            uint32_t room = s->bops->batch_room(s->bstate);
            if (room == 0)
                break;
            if (room < c.max_ops)
                c.max_ops = room;
        }
        /* Hold back while the batch may still fill (the top of the
         * file): the visit ends here, taking nothing. */
        int d = hold_start(v, b, &c);
        if (d == HOLD_EMPTY)
            break;
        if (d == HOLD_KEEP)
            return true;
        /* Form: what is published now, up to max_ops. */
        uint32_t n = form_take(v, ops, unrun, c.max_ops);
        if (n == 0)
            break;
        /* A batch formed: what is held from now on is the next one. */
        b->form_t0 = 0;
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
            accel__bump(&s->canceled, gone);
        uint64_t t1 = 0;
        /* A device backend (run_batch) calls fn itself, with its device
         * current, and completes all n ops, run or not, in FIFO order once
         * the device work fn enqueued is done. */
        bool device = s->bops->run_batch != NULL;
        if (m || device) {
            accel__bump(&s->dispatched, m);
            uint64_t t0 = accel__now_ns();
            bool called = true;
            if (device)
                called = s->bops->run_batch(
                    s->bstate, &ctx,
                    &(accel__backend_batch){.fn = c.fn, .user = c.user,
                                            .ops = ops, .unrun = unrun,
                                            .n = n, .args = args,
                                            .status = status, .m = m});
            else
                c.fn(&ctx, args, m, status, c.user);
            t1 = accel__now_ns();
            if (called) {
                /* batch(session, ops, ns of the call, ns it was held back) */
                ACCEL_TRACE4(batch, s, m, t1 - t0, b->held_batch_ns);
                accel__bump(&b->batches, 1);
                accel__bump(&b->ops, m);
                accel__bump(&b->hist[hist_bucket(m)], 1);
            }
        }
        b->held_batch_ns = 0;
        /* Every op's done in FIFO order, ran or not. */
        for (uint32_t i = 0, j = 0; i < n && !device; i++) {
            if (unrun[i])
                accel__visit_op_done(s, &ops[i], unrun[i], false);
            else
                accel__visit_op_done(s, &ops[i], status[j++], true);
        }
        if (!device)
            accel__waiters_finished(&s->waiters, n);
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
        atomic_load_explicit(accel__session_batch_word(s), memory_order_acquire);
    if (!b)
        return false;
    /* Read once the batch's first op is seen published, as above. */
    if (!accel__ring_sc_ready(ACCEL__RING(s), v->h))
        return true; /* nothing to form: an empty visit */
    batch_cfg c;
    cfg_read(b, &c);
    if (!c.fn)
        return false;
    /* Hold back as accel's own worker does (accel__batch_visit_run):
     * the visit hands out nothing, and its end (accel__visit_end, through
     * hold_end) holds the session until the release. */
    if (hold_start(v, b, &c) != HOLD_RUN)
        return true;
    uint32_t max_ops = c.max_ops < cap ? c.max_ops : cap;
    uint32_t n = form_take(v, ops, unrun, max_ops);
    /* A batch formed: what is held from now on is the next one (the
     * batch's held time goes to its probe, accel__batch_host_ran). */
    b->form_t0 = 0;
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
        accel__bump(&s->canceled, gone);
    if (m) {
        accel__bump(&s->dispatched, m);
        *t0 = accel__now_ns();
    } else {
        b->held_batch_ns = 0; /* no batch runs: no probe to carry it */
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
        atomic_load_explicit(accel__session_batch_word(s), memory_order_acquire);
    uint64_t t1 = accel__now_ns();
    /* batch(session, ops, ns from hand-out to the host's report, ns it
     * was held back) */
    ACCEL_TRACE4(batch, s, m, t1 - t0, b->held_batch_ns);
    b->held_batch_ns = 0;
    accel__bump(&b->batches, 1);
    accel__bump(&b->ops, m);
    accel__bump(&b->hist[hist_bucket(m)], 1);
}
