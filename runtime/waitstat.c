#include "waitstat.h"

#include "alloc.h"

static unsigned bucket_of(uint64_t ns)
{
    if (ns < ACCEL__WAIT_SUB)
        return (unsigned)ns;
    unsigned msb = 63u - (unsigned)__builtin_clzll(ns);
    unsigned sub = (unsigned)(ns >> (msb - 2)) & (ACCEL__WAIT_SUB - 1);
    unsigned b = (msb - 1) * ACCEL__WAIT_SUB + sub;
    return b < ACCEL__WAIT_BUCKETS ? b : ACCEL__WAIT_BUCKETS - 1;
}

static uint64_t bucket_top(unsigned b)
{
    if (b < ACCEL__WAIT_SUB)
        return b;
    unsigned msb = b / ACCEL__WAIT_SUB + 1;
    uint64_t sub = b % ACCEL__WAIT_SUB;
    return ((UINT64_C(4) + sub + 1) << (msb - 2)) - 1;
}

void accel__waitstat_record(accel__waitstat *w, uint64_t ns)
{
    /* relaxed everywhere: single writer (the session's consumer, handed
     * over by the ring's [R3]/[A3] hand-off), approximate readers. */
    _Atomic uint32_t *b = atomic_load_explicit(&w->buckets,
                                               memory_order_relaxed);
    if (!b) {
        b = accel__calloc(ACCEL__WAIT_BUCKETS, sizeof(*b));
        if (!b)
            return;
        /* release: the zeroed array before its pointer; pairs with the
         * acquire in accel__waitstat_quantile(). */
        atomic_store_explicit(&w->buckets, b, memory_order_release);
    }
    unsigned i = bucket_of(ns);
    atomic_store_explicit(&b[i],
                          atomic_load_explicit(&b[i], memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_store_explicit(&w->samples,
                          atomic_load_explicit(&w->samples,
                                               memory_order_relaxed) + 1,
                          memory_order_relaxed);
    if (ns > atomic_load_explicit(&w->max_ns, memory_order_relaxed))
        atomic_store_explicit(&w->max_ns, ns, memory_order_relaxed);
}

uint64_t accel__waitstat_quantile(const accel__waitstat *w, double q)
{
    accel__waitstat *mw = (accel__waitstat *)w;
    /* acquire: pairs with the release store of the array in
     * accel__waitstat_record (its zeroing is visible). */
    _Atomic uint32_t *b = atomic_load_explicit(&mw->buckets,
                                               memory_order_acquire);
    if (!b)
        return 0;
    uint64_t counts[ACCEL__WAIT_BUCKETS], total = 0;
    for (unsigned i = 0; i < ACCEL__WAIT_BUCKETS; i++) {
        counts[i] = atomic_load_explicit(&b[i], memory_order_relaxed);
        total += counts[i];
    }
    if (!total)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)total);
    if (rank >= total)
        rank = total - 1;
    uint64_t seen = 0;
    uint64_t max = atomic_load_explicit(&mw->max_ns, memory_order_relaxed);
    for (unsigned i = 0; i < ACCEL__WAIT_BUCKETS; i++) {
        seen += counts[i];
        if (seen > rank) {
            uint64_t top = bucket_top(i);
            return top < max ? top : max;
        }
    }
    return max;
}

void accel__waitstat_fini(accel__waitstat *w)
{
    accel__free((void *)atomic_load_explicit(&w->buckets,
                                             memory_order_relaxed));
}
