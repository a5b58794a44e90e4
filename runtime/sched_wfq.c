/*
 * Priority-weighted fair scheduler (docs/contract.md, promise 3;
 * docs/scheduler.md): virtual time per entity charged with measured
 * service / weight, a virtual time V_k per class on one shared clock
 * (vnow() = max of them), pick by smallest
 * virtual deadline start + visit_cost / weight over a calendar of deadline
 * buckets (sched_calendar.c).
 *
 * Theory of operation.
 *  - Two classes when a short lane is configured (calendar 1: entities
 *    whose recent per-op cost is <= short_op_ns; calendar 0: the rest),
 *    one otherwise. Lane 1 workers pick from calendar 1 only, lane 0
 *    workers the smaller deadline of both.
 *  - One time line for both classes: virtual times and deadlines of both
 *    calendars are on the same clock, so lane 0's comparison of the two
 *    keys is the fair one. An entity waking (or re-queued too far behind)
 *    is placed against the system virtual time vnow() = max(V_0, V_1),
 *    not against its own class's V alone: a class that sat idle keeps a
 *    stale V, and its sessions would wake with a head start over the
 *    other class as large as that class's whole solo service. Moving
 *    between classes keeps v (it is already on the shared clock). V_k
 *    stays per class as the origin of calendar k's window.
 *  - The calendar window of class k starts R buckets before V_k >> shift
 *    and spans ACCEL__CAL_BUCKETS buckets: deadlines below it go to its first
 *    bucket, beyond it to its last. V_k only moves at a pick, to at most
 *    the picked bucket's start, and a pick takes the first non-empty bucket
 *    of the window, so V never passes a queued entity's bucket: buckets
 *    never alias while queued (except for an enqueue that raced with V
 *    moving more than R buckets, see docs/scheduler.md).
 *  - Every field of an entity except weight/vtime/cls is touched only by
 *    its holder; the calendar's push/pop ([R1]/[A1] there) hand it over.
 *  - V is a monotonic hint: relaxed CAS-max, it publishes nothing.
 */
#include "accel/accel.h"
#include "defaults.h"
#include "alloc.h"
#include "sched_core.h"

#define BUCKETS ACCEL__CAL_BUCKETS
#define BEHIND 512u              /* window buckets before V */
#define AHEAD (BUCKETS - BEHIND)   /* window buckets from V on */

typedef struct vcell {
    _Alignas(64) _Atomic uint64_t v;
} vcell;

struct accel__sched {
    accel__sched_config cfg;
    unsigned shift;
    unsigned ncls;
    vcell V[2];
    accel__sched_nodes nodes;
    accel__sched_cal cal[2];
};

static unsigned log2_floor(uint64_t x)
{
    return x ? 63u - (unsigned)__builtin_clzll(x) : 0u;
}

int accel__sched_create(const accel__sched_config *cfg, accel__sched **out)
{
    accel__sched *s = accel__calloc_aligned(64, sizeof(*s));
    if (!s)
        return ACCEL_ENOMEM;
    s->cfg = *cfg;
    if (!s->cfg.quantum_ns)
        s->cfg.quantum_ns = ACCEL_DEFAULT_QUANTUM_NS;
    if (!s->cfg.quantum_ops)
        s->cfg.quantum_ops = ACCEL_DEFAULT_QUANTUM_OPS;
    /* Bucket width: defaults.h says why quantum / 256. */
    s->shift = cfg->bucket_shift ? cfg->bucket_shift
                                 : log2_floor(s->cfg.quantum_ns /
                                              ACCEL__SCHED_BUCKETS_PER_QUANTUM);
    if (s->shift < ACCEL__SCHED_SHIFT_MIN)
        s->shift = ACCEL__SCHED_SHIFT_MIN;
    if (s->shift > ACCEL__SCHED_SHIFT_MAX)
        s->shift = ACCEL__SCHED_SHIFT_MAX;
    s->ncls = cfg->short_lane_workers ? 2 : 1;
    for (unsigned k = 0; k < 2; k++)
        atomic_init(&s->V[k].v, (uint64_t)(BEHIND + 1) << s->shift);
    if (accel__sched_nodes_init(&s->nodes, cfg->max_entities) != ACCEL_OK) {
        accel__free(s);
        return ACCEL_ENOMEM;
    }
    *out = s;
    return ACCEL_OK;
}

void accel__sched_destroy(accel__sched *s)
{
    if (!s)
        return;
    accel__sched_nodes_fini(&s->nodes);
    accel__free(s);
}

void accel__sched_entity_init(accel__sched *s, accel__sched_entity *e,
                              uint32_t weight, void *owner)
{
    (void)s;
    atomic_store_explicit(&e->weight, weight ? weight : 1,
                          memory_order_relaxed);
    e->w = (uint16_t)(weight ? weight : 1);
    e->owner = owner;
}

/* How far behind V a backlogged entity may fall and keep the difference
 * as credit: about a quantum plus two visits of service, in its virtual
 * time. More is possible only when it cannot use what it is owed (it
 * runs on one worker at a time while others are free), and is dropped. */
static inline uint64_t lag_cap(const accel__sched *s,
                               const accel__sched_entity *e)
{
    return (s->cfg.quantum_ns + 2 * e->visit_cost_ns) / e->w +
           (2ull << s->shift);
}

static void place(accel__sched *s, accel__sched_entity *e, unsigned cls,
                  uint64_t V);
static void vtime_advance(accel__sched *s, unsigned cls, uint64_t to);

/* The system virtual time of both classes (see the top of the file).
 * relaxed: V is a monotonic hint. */
static inline uint64_t vnow(const accel__sched *s)
{
    uint64_t v0 = atomic_load_explicit(&((accel__sched *)s)->V[0].v,
                                       memory_order_relaxed);
    if (s->ncls == 1)
        return v0;
    uint64_t v1 = atomic_load_explicit(&((accel__sched *)s)->V[1].v,
                                       memory_order_relaxed);
    return v0 > v1 ? v0 : v1;
}

/* The enqueue's bookkeeping before the push: weight, class, start tag
 * and deadline. Returns the class. */
static unsigned wfq_prepare(accel__sched *s, accel__sched_entity *e, bool woke)
{
    /* relaxed: set_priority's store; read once per visit. */
    uint32_t w = atomic_load_explicit(&e->weight, memory_order_relaxed);
    if (!w)
        w = 1;
    if (w != e->w) {
        e->w = (uint16_t)w; /* <= ACCEL_PRIORITY_MAX */
        e->vrem = 0;
    }
    unsigned cls = s->ncls > 1 && e->op_cost_ns <= s->cfg.short_op_ns;
    /* A class move keeps v: both classes share one time line. */
    if (cls != atomic_load_explicit(&e->cls, memory_order_relaxed))
        atomic_store_explicit(&e->cls, (uint8_t)cls, memory_order_relaxed);
    uint64_t V = vnow(s);
    uint64_t v = atomic_load_explicit(&e->vtime, memory_order_relaxed);
    if (woke) {
        if (v < V)
            v = V; /* no credit for sleeping */
    } else {
        uint64_t cap = lag_cap(s, e);
        if (v + cap < V)
            v = V - cap;
    }
    /* The coming visit's start tag: vtime, which nothing changes until
     * the worker that picks e charges it. */
    atomic_store_explicit(&e->vtime, v, memory_order_relaxed);
    e->deadline = v + e->visit_cost_ns / w;
    return cls;
}

/* The lanes whose picks see class cls (the other way of lowest_class). */
static inline unsigned lanes_of(unsigned cls)
{
    return cls ? ACCEL__SCHED_LANE_GENERAL | ACCEL__SCHED_LANE_SHORT
               : ACCEL__SCHED_LANE_GENERAL;
}

unsigned accel__sched_enqueue(accel__sched *s, accel__sched_entity *e,
                              bool woke)
{
    unsigned cls = wfq_prepare(s, e, woke);
    /* The window of calendar k is laid out from V_k; a deadline beyond it
     * (V_k stale behind vnow) waits in its last bucket and pick moves V_k
     * on. */
    place(s, e, cls,
          atomic_load_explicit(&s->V[cls].v, memory_order_relaxed));
    return lanes_of(cls);
}

/* The one map from a lane to classes: the lowest class a pick for `lane`
 * looks at. The short lane sees only the short class (1), when there is
 * one; the general lane sees every class from 0. */
static inline unsigned lowest_class(const accel__sched *s, accel__lane lane)
{
    return lane == ACCEL__LANE_SHORT && s->ncls > 1 ? 1 : 0;
}

/* The first non-empty bucket of calendar k within its window from V_k:
 * its bucket and its absolute key. relaxed: V is a hint (see vnow); the
 * bitmap's own loads order the look (sched_calendar.c). */
static inline bool first_bucket(accel__sched *s, unsigned k, unsigned *bucket,
                                uint64_t *key, bool *restored)
{
    uint64_t V = atomic_load_explicit(&s->V[k].v, memory_order_relaxed);
    uint64_t from = (V >> s->shift) - BEHIND;
    int f = accel__sched_cal_first(&s->cal[k], (unsigned)(from & (BUCKETS - 1)),
                                   restored);
    if (f < 0)
        return false;
    *bucket = (unsigned)f;
    *key = from + (((uint64_t)f - from) & (BUCKETS - 1));
    return true;
}

/* Whether a pick by a worker of `lane` right after e's push into bucket
 * b of calendar cls would return e: b is at or before the first
 * non-empty bucket of every calendar that pick looks at, with pick's tie
 * rules (the same bucket of its own calendar: the LIFO pop returns the
 * newest push, e; the same key in the other calendar: the short class
 * wins). relaxed loads: V and the bitmaps are hints here as in pick; a
 * push racing with this look is ordered after it, as it would be after a
 * push and pop of e. */
static bool would_pick(accel__sched *s, accel__lane lane, unsigned cls,
                       uint64_t b)
{
    unsigned lo = lowest_class(s, lane);
    if (cls < lo)
        return false; /* a general entity: a short-lane pick skips it */
    for (unsigned k = lo; k < s->ncls; k++) {
        unsigned bucket;
        uint64_t key;
        if (!first_bucket(s, k, &bucket, &key, NULL))
            continue;
        if (key < b || (key == b && k != cls && k == 1))
            return false;
    }
    return true;
}

unsigned accel__sched_enqueue_or_take(accel__sched *s, accel__sched_entity *e,
                                      bool woke, accel__lane lane,
                                      bool *taken)
{
    unsigned cls = wfq_prepare(s, e, woke);
    uint64_t V = atomic_load_explicit(&s->V[cls].v, memory_order_relaxed);
    uint64_t base = V >> s->shift;
    uint64_t b = e->deadline >> s->shift;
    /* Only a deadline inside the window: place would clamp one outside,
     * and pick would then queue it again (accel__sched_pick). */
    if (b >= base - BEHIND && b <= base + AHEAD - 1 &&
        would_pick(s, lane, cls, b)) {
        /* What pick does with the entity it returns, e's bucket being
         * the first: V moves to at most its start. */
        uint64_t start = atomic_load_explicit(&e->vtime, memory_order_relaxed);
        uint64_t to = b << s->shift;
        vtime_advance(s, cls, start < to ? start : to);
        *taken = true;
        return 0;
    }
    place(s, e, cls, V);
    *taken = false;
    return lanes_of(cls);
}

/* Pushes e into the bucket of its deadline within the window of V. */
static void place(accel__sched *s, accel__sched_entity *e, unsigned cls,
                  uint64_t V)
{
    uint64_t base = V >> s->shift;
    uint64_t b = e->deadline >> s->shift;
    if (b < base - BEHIND)
        b = base - BEHIND;
    else if (b > base + AHEAD - 1)
        b = base + AHEAD - 1;
    uint32_t idx = accel__sched_node_get(&s->nodes);
    /* relaxed: published by the push's CAS; peek reads them as hints. */
    atomic_store_explicit(&s->nodes.v[idx].e, e, memory_order_relaxed);
    atomic_store_explicit(&s->nodes.v[idx].hint, e->hint,
                          memory_order_relaxed);
    accel__sched_cal_push(&s->cal[cls], &s->nodes,
                          (unsigned)(b & (BUCKETS - 1)), idx);
}

static void vtime_advance(accel__sched *s, unsigned cls, uint64_t to)
{
    uint64_t cur = atomic_load_explicit(&s->V[cls].v, memory_order_relaxed);
    /* relaxed: V is a monotonic hint and publishes nothing. */
    while (cur < to &&
           !atomic_compare_exchange_weak_explicit(&s->V[cls].v, &cur, to,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

unsigned accel__sched_peek(accel__sched *s, accel__lane lane,
                          accel__sched_entity **e, uint32_t *hint,
                          unsigned max)
{
    unsigned k = lowest_class(s, lane);
    unsigned bucket;
    uint64_t key;
    if (!first_bucket(s, k, &bucket, &key, NULL))
        return 0;
    /* relaxed (here and below): hints; the nodes are type-stable, so the
     * reads are safe even when a node was popped and reused meanwhile
     * (a reused node's next may lead anywhere in the array, or to 0). */
    uint32_t idx = (uint32_t)atomic_load_explicit(&s->cal[k].heads[bucket],
                                                  memory_order_relaxed);
    unsigned n = 0;
    while (idx && n < max) {
        const accel__sched_node *node = &s->nodes.v[idx];
        hint[n] = atomic_load_explicit(&node->hint, memory_order_relaxed);
        e[n++] = atomic_load_explicit(&node->e, memory_order_relaxed);
        idx = atomic_load_explicit(&node->next, memory_order_relaxed);
        if (idx >= s->nodes.cap)
            break; /* torn by a reuse: stop (a hint) */
    }
    /* The node under the last one is likely the next peek's last: with
     * many entities queued its line is cold, and this peek is a visit
     * ahead of that one. */
    if (idx && idx < s->nodes.cap)
        __builtin_prefetch(&s->nodes.v[idx]);
    return n;
}

unsigned accel__sched_queued(accel__sched *s, accel__lane lane, unsigned max)
{
    unsigned n = 0;
    for (unsigned k = lowest_class(s, lane); k < s->ncls && n < max; k++) {
        unsigned bucket;
        uint64_t key;
        if (!first_bucket(s, k, &bucket, &key, NULL))
            continue;
        unsigned start = bucket, off = 0;
        for (;;) {
            /* relaxed (here and below): a count, read as peek reads
             * (type-stable nodes; a reused node's next may lead anywhere
             * in the array, or to 0). */
            uint32_t idx = (uint32_t)atomic_load_explicit(
                &s->cal[k].heads[bucket], memory_order_relaxed);
            for (uint32_t hops = 0;
                 idx && idx < s->nodes.cap && n < max && hops < s->nodes.cap;
                 hops++) {
                n++;
                idx = atomic_load_explicit(&s->nodes.v[idx].next,
                                           memory_order_relaxed);
            }
            if (n >= max)
                break;
            int f = accel__sched_cal_first(&s->cal[k], bucket + 1, NULL);
            if (f < 0)
                break;
            unsigned d = ((unsigned)f - start) & (BUCKETS - 1);
            if (d <= off)
                break; /* around the calendar once */
            off = d;
            bucket = (unsigned)f;
        }
    }
    return n;
}

/* A pick's repair set a calendar bit back (sched_calendar.c): a look by
 * a worker about to park may have missed that bucket meanwhile, and the
 * push's own wake may have found no one parked, so wake one now. */
static void restored(accel__sched *s, unsigned cls)
{
    if (s->cfg.restored)
        s->cfg.restored(s->cfg.restored_arg, lanes_of(cls));
}

accel__sched_entity *accel__sched_pick(accel__sched *s, accel__lane lane)
{
    unsigned lo = lowest_class(s, lane);
    for (;;) {
        int best = -1;
        unsigned best_bucket = 0;
        uint64_t best_key = 0;
        for (unsigned k = lo; k < s->ncls; k++) {
            unsigned bucket;
            uint64_t key;
            bool back = false;
            bool found = first_bucket(s, k, &bucket, &key, &back);
            if (__builtin_expect(back, 0))
                restored(s, k);
            if (!found)
                continue;
            /* Ties go to the short class: its ops are the short ones. */
            if (best < 0 || key <= best_key) {
                best = (int)k;
                best_bucket = bucket;
                best_key = key;
            }
        }
        if (best < 0)
            return NULL;
        bool back = false;
        uint32_t idx = accel__sched_cal_pop(&s->cal[best], &s->nodes,
                                            best_bucket, &back);
        if (__builtin_expect(back, 0))
            restored(s, (unsigned)best);
        if (!idx)
            continue; /* raced with another picker: its bit is cleared */
        accel__sched_entity *e =
            atomic_load_explicit(&s->nodes.v[idx].e, memory_order_relaxed);
        accel__sched_node_put(&s->nodes, idx);
        uint64_t to = best_key << s->shift;
        if ((e->deadline >> s->shift) > best_key) {
            /* Its deadline lies beyond the window it was queued in, and
             * nothing is queued before that window's end: move V there
             * and queue it again, nearer its true bucket. The bucket grows
             * each time, so this ends. */
            vtime_advance(s, (unsigned)best, to);
            place(s, e, (unsigned)best,
                  atomic_load_explicit(&s->V[best].v, memory_order_relaxed));
            continue;
        }
        uint64_t start =
            atomic_load_explicit(&e->vtime, memory_order_relaxed);
        vtime_advance(s, (unsigned)best, start < to ? start : to);
        return e;
    }
}

uint32_t accel__sched_visit_ops(const accel__sched *s,
                                const accel__sched_entity *e)
{
    /* Cost not measured yet: one op, so that a session of long ops cannot
     * hold a worker for quantum_ops of them on its first visit (the visit
     * loop reads the clock only every few ops, and a run of ops is taken
     * before any of it runs: visit.c). */
    if (!e->seen)
        return 1;
    uint64_t q = s->cfg.quantum_ops;
    /* An op that spends most of its time blocked (a storage read, a
     * signer's round trip) is counted by its served time: its waits hold
     * no CPU, and the visit's clock ends the visit at quantum_ns of wall
     * time, or, where its worker can tell its blocked time, of served
     * time (visit.h, blocked). By its whole time, such a session's every
     * op would be a visit of its own, re-queued and picked again between
     * two ops. A microsecond of slack: op_served is coarse. */
    uint64_t cost = e->op_cost_ns;
    if (__builtin_expect(e->op_served != 0, 0)) {
        uint64_t served = (uint64_t)e->op_served * ACCEL__SCHED_SERVED_UNIT;
        if (served + 1000u <= cost / 2)
            cost = served > 1000u ? served : 1000u;
    }
    if (cost > 0) {
        uint64_t fit = s->cfg.quantum_ns / cost;
        if (fit < q)
            q = fit ? fit : 1;
    }
    return (uint32_t)q;
}

static inline uint64_t ewma(uint64_t avg, uint64_t x, bool first)
{
    return first ? x : avg - avg / 4 + x / 4;
}

/* op_served (sched_core.h): the average of an op's served time, kept
 * while it is under half of op_cost_ns (the ops mostly wait) and fits
 * its 16 bits (4.2 ms: past that, the default quantum's quota is one op
 * either way), 0 (not tracked) once it is not. A session that starts
 * waiting begins at its first such visit's value. */
static void track_served(accel__sched_entity *e, uint64_t served, uint32_t ops)
{
    uint64_t unit = served / ops / ACCEL__SCHED_SERVED_UNIT;
    unit = unit < 1 ? 1 : unit;
    uint64_t avg = ewma(e->op_served ? e->op_served : unit, unit, false);
    if (avg > UINT16_MAX || avg * ACCEL__SCHED_SERVED_UNIT + 1000u > e->op_cost_ns / 2)
        avg = 0;
    e->op_served = (uint16_t)avg;
}

void accel__sched_charge(accel__sched *s, accel__sched_entity *e,
                         uint64_t service_ns, uint64_t blocked_ns,
                         uint32_t ops)
{
    (void)s;
    uint64_t served = blocked_ns < service_ns ? service_ns - blocked_ns : 0;
    uint64_t t = served + e->vrem;
    uint64_t v = atomic_load_explicit(&e->vtime, memory_order_relaxed);
    /* relaxed: only the holder writes; stats read approximately. */
    atomic_store_explicit(&e->vtime, v + t / e->w, memory_order_relaxed);
    e->vrem = (uint16_t)(t % e->w);
    bool first = !e->seen;
    /* The deadline's visit is what the share pays for; the op cost (the
     * lane, and the quota unless the ops mostly wait: op_served) is the
     * op's whole time, waits included: an op that waits is no short op. */
    e->visit_cost_ns = ewma(e->visit_cost_ns, served, first);
    if (ops) {
        e->op_cost_ns = ewma(e->op_cost_ns, service_ns / ops, first);
        /* Tracked only while the ops mostly wait: a visit that blocked
         * nowhere, of a session not tracked, pays one test. */
        if (__builtin_expect((blocked_ns | e->op_served) != 0, 0))
            track_served(e, served, ops);
        e->seen = 1;
    }
}

int64_t accel__sched_hold(accel__sched *s, accel__sched_entity *e,
                          uint64_t service_ns, uint64_t blocked_ns,
                          uint32_t ops)
{
    if (ops) {
        accel__sched_charge(s, e, service_ns, blocked_ns, ops);
    } else {
        uint64_t served =
            blocked_ns < service_ns ? service_ns - blocked_ns : 0;
        uint64_t t = served + e->vrem;
        uint64_t v = atomic_load_explicit(&e->vtime, memory_order_relaxed);
        /* relaxed: only the holder writes; stats read approximately. */
        atomic_store_explicit(&e->vtime, v + t / e->w, memory_order_relaxed);
        e->vrem = (uint16_t)(t % e->w);
    }
    uint64_t v = atomic_load_explicit(&e->vtime, memory_order_relaxed);
    return (int64_t)(v - vnow(s));
}

unsigned accel__sched_release(accel__sched *s, accel__sched_entity *e,
                              int64_t place)
{
    uint64_t V = vnow(s);
    uint64_t v = place < 0 && (uint64_t)-place > V ? 0
                                                   : V + (uint64_t)place;
    /* relaxed: only the holder writes; stats read approximately. */
    atomic_store_explicit(&e->vtime, v, memory_order_relaxed);
    return accel__sched_enqueue(s, e, false);
}

uint64_t accel__sched_vtime_of(const accel__sched *s,
                               const accel__sched_entity *e)
{
    (void)s;
    return atomic_load_explicit(&e->vtime, memory_order_relaxed);
}

int64_t accel__sched_lag(const accel__sched *s, const accel__sched_entity *e)
{
    uint64_t V = vnow(s);
    uint64_t v = atomic_load_explicit(&e->vtime, memory_order_relaxed);
    uint32_t w = atomic_load_explicit(&e->weight, memory_order_relaxed);
    return ((int64_t)V - (int64_t)v) * (int64_t)w;
}
