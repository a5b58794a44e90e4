/*
 * Stand-in scheduler: a bounded lock-free MPMC FIFO of runnable entities
 * (Dmitry Vyukov's bounded queue), round robin with quanta. It keeps the
 * interface honest until the fair scheduler replaces it; weights only
 * scale the visit quantum.
 *
 * Theory of operation: each cell has a sequence number. A cell at index i
 * is free for the enqueuer of position p when seq == p, and holds data for
 * the dequeuer of p when seq == p + 1. Enqueuers and dequeuers claim
 * positions with a CAS on their own counter, then hand the cell over with
 * a release store of seq ([R3] enqueue, [R4] dequeue) that the other side
 * acquires ([A3], [A4]). The cells live in an anonymous mapping and are
 * stored as seq - i, so the zero pages already mean "free for lap 0" and
 * a capacity of a million costs only the pages that get used.
 *
 * Why not Concurrency Kit or liburcu here: ck_fifo_mpmc and
 * rculfqueue need a node allocation (and SMR) per enqueue; wfcqueue's
 * dequeue needs a mutex among dequeuers.
 */
#include <stdlib.h>
#include <sys/mman.h>

#include "accel/accel.h"
#include "alloc.h"
#include "sched.h"
#include "yield.h"

typedef struct cell {
    _Atomic uint64_t seq; /* stored as seq - index */
    accel__sched_entity *e;
} cell;

struct accel__sched {
    _Alignas(64) _Atomic uint64_t enq;
    _Alignas(64) _Atomic uint64_t deq;
    _Alignas(64) cell *cells;
    uint64_t mask;
    size_t map_bytes;
    accel__sched_config cfg;
};

int accel__sched_create(const accel__sched_config *cfg, accel__sched **out)
{
    accel__sched *s = accel__calloc_aligned(64, sizeof(*s));
    if (!s)
        return ACCEL_ENOMEM;
    uint64_t cap = 1;
    while (cap < cfg->max_entities)
        cap <<= 1;
    s->map_bytes = cap * sizeof(cell);
    void *m = mmap(NULL, s->map_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        accel__free(s);
        return ACCEL_ENOMEM;
    }
    s->cells = m;
    s->mask = cap - 1;
    s->cfg = *cfg;
    *out = s;
    return ACCEL_OK;
}

void accel__sched_destroy(accel__sched *s)
{
    if (!s)
        return;
    munmap(s->cells, s->map_bytes);
    accel__free(s);
}

void accel__sched_entity_init(accel__sched *s, accel__sched_entity *e,
                              uint32_t weight, void *owner)
{
    (void)s;
    atomic_store_explicit(&e->weight, weight, memory_order_relaxed);
    e->owner = owner;
}

void accel__sched_enqueue(accel__sched *s, accel__sched_entity *e, bool woke)
{
    (void)woke;
    uint64_t pos = atomic_load_explicit(&s->enq, memory_order_relaxed);
    for (;;) {
        cell *c = &s->cells[pos & s->mask];
        /* [A4] acquire: the dequeuer of the previous lap is done with the
         * cell; pairs with [R4]. */
        uint64_t seq = atomic_load_explicit(&c->seq, memory_order_acquire) +
                       (pos & s->mask);
        int64_t dif = (int64_t)(seq - pos);
        if (dif == 0) {
            /* LP of enqueue; relaxed: the cell hand-off is [R3]. */
            if (atomic_compare_exchange_weak_explicit(
                    &s->enq, &pos, pos + 1, memory_order_relaxed,
                    memory_order_relaxed)) {
                ACCEL__YIELD_POINT();
                c->e = e;
                /* [R3] release: publishes c->e; pairs with [A3]. */
                atomic_store_explicit(&c->seq, pos + 1 - (pos & s->mask),
                                      memory_order_release);
                return;
            }
        } else if (dif < 0) {
            /* Cannot happen: capacity >= entities, and an entity is queued
             * at most once. */
            abort();
        } else {
            pos = atomic_load_explicit(&s->enq, memory_order_relaxed);
        }
    }
}

accel__sched_entity *accel__sched_pick(accel__sched *s, unsigned lane)
{
    (void)lane;
    uint64_t pos = atomic_load_explicit(&s->deq, memory_order_relaxed);
    for (;;) {
        cell *c = &s->cells[pos & s->mask];
        /* [A3] acquire: pairs with [R3]; makes c->e readable. */
        uint64_t seq = atomic_load_explicit(&c->seq, memory_order_acquire) +
                       (pos & s->mask);
        int64_t dif = (int64_t)(seq - (pos + 1));
        if (dif == 0) {
            /* LP of dequeue; relaxed: the hand-off is [A3]/[R4]. */
            if (atomic_compare_exchange_weak_explicit(
                    &s->deq, &pos, pos + 1, memory_order_relaxed,
                    memory_order_relaxed)) {
                accel__sched_entity *e = c->e;
                /* [R4] release: our read of c->e precedes the cell's
                 * reuse; pairs with [A4]. */
                atomic_store_explicit(&c->seq,
                                      pos + s->mask + 1 - (pos & s->mask),
                                      memory_order_release);
                return e;
            }
        } else if (dif < 0) {
            return NULL; /* empty, or the enqueuer has not published yet:
                            its publish is followed by a worker wake-up */
        } else {
            pos = atomic_load_explicit(&s->deq, memory_order_relaxed);
        }
    }
}

uint32_t accel__sched_visit_ops(const accel__sched *s,
                                const accel__sched_entity *e)
{
    uint64_t q = s->cfg.quantum_ops;
    if (e->op_cost_ns > 0) {
        uint64_t fit = s->cfg.quantum_ns / e->op_cost_ns;
        if (fit < q)
            q = fit ? fit : 1;
    }
    return (uint32_t)q;
}

void accel__sched_charge(accel__sched *s, accel__sched_entity *e,
                         uint64_t service_ns, uint32_t ops)
{
    (void)s;
    uint32_t w = atomic_load_explicit(&e->weight, memory_order_relaxed);
    e->vtime += service_ns / w;
    e->service_ns += service_ns;
    e->visits++;
    e->visit_cost_ns = (e->visit_cost_ns * 7 + service_ns) / 8;
    if (ops)
        e->op_cost_ns = (e->op_cost_ns * 7 + service_ns / ops) / 8;
}

uint64_t accel__sched_vtime(const accel__sched *s)
{
    (void)s;
    return 0;
}

uint64_t accel__sched_vtime_of(const accel__sched *s,
                               const accel__sched_entity *e)
{
    (void)s;
    (void)e;
    return 0;
}

int64_t accel__sched_lag(const accel__sched *s, const accel__sched_entity *e)
{
    (void)s;
    (void)e;
    return 0;
}
