/* Sorting, percentiles, medians and a lock-free log-linear histogram. */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_f64(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void bench_sort_u64(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_u64);
}

void bench_sort_f64(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_f64);
}

uint64_t bench_pct_u64(const uint64_t *sorted, size_t n, double p)
{
    if (n == 0)
        return 0;
    double rank = ceil(p / 100.0 * (double)n);
    size_t i = rank < 1 ? 0 : (size_t)rank - 1;
    return sorted[i < n ? i : n - 1];
}

double bench_median_f64(double *v, size_t n)
{
    if (n == 0)
        return 0;
    bench_sort_f64(v, n);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double bench_mean_f64(const double *v, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    return n ? s / (double)n : 0;
}

/* Bucket b < 16 holds the value b; above that, bucket 16*k + s holds the
 * values with highest set bit k+3 and next four bits s. */
static size_t hist_bucket(uint64_t v)
{
    if (v < BENCH_HIST_SUB)
        return (size_t)v;
    int msb = 63 - __builtin_clzll(v);
    size_t sub = (size_t)(v >> (msb - 4)) & (BENCH_HIST_SUB - 1);
    size_t b = (size_t)(msb - 3) * BENCH_HIST_SUB + sub;
    return b < BENCH_HIST_BUCKETS ? b : BENCH_HIST_BUCKETS - 1;
}

/* The largest value in bucket b. */
static uint64_t hist_upper(size_t b)
{
    if (b < BENCH_HIST_SUB)
        return b;
    int msb = (int)(b / BENCH_HIST_SUB) + 3;
    uint64_t sub = b % BENCH_HIST_SUB;
    uint64_t lo = (1ull << msb) | (sub << (msb - 4));
    return lo + (1ull << (msb - 4)) - 1;
}

void bench_hist_reset(bench_hist *h)
{
    for (size_t i = 0; i < BENCH_HIST_BUCKETS; i++)
        atomic_store_explicit(&h->count[i], 0, memory_order_relaxed);
    atomic_store_explicit(&h->n, 0, memory_order_relaxed);
    atomic_store_explicit(&h->sum, 0, memory_order_relaxed);
    atomic_store_explicit(&h->max, 0, memory_order_relaxed);
}

/* Relaxed throughout: counters only, read after the writers are joined
 * (join orders them) or as an approximate live view. */
void bench_hist_add(bench_hist *h, uint64_t v)
{
    atomic_fetch_add_explicit(&h->count[hist_bucket(v)], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->n, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum, v, memory_order_relaxed);
    uint64_t m = atomic_load_explicit(&h->max, memory_order_relaxed);
    while (v > m && !atomic_compare_exchange_weak_explicit(
                        &h->max, &m, v, memory_order_relaxed, memory_order_relaxed)) {
    }
}

uint64_t bench_hist_count(const bench_hist *h)
{
    return atomic_load_explicit(&h->n, memory_order_relaxed);
}

uint64_t bench_hist_max(const bench_hist *h)
{
    return atomic_load_explicit(&h->max, memory_order_relaxed);
}

double bench_hist_mean(const bench_hist *h)
{
    uint64_t n = bench_hist_count(h);
    return n ? (double)atomic_load_explicit(&h->sum, memory_order_relaxed) / (double)n : 0;
}

uint64_t bench_hist_pct(const bench_hist *h, double p)
{
    uint64_t total = 0;
    for (size_t i = 0; i < BENCH_HIST_BUCKETS; i++)
        total += atomic_load_explicit(&h->count[i], memory_order_relaxed);
    if (total == 0)
        return 0;
    uint64_t want = (uint64_t)ceil(p / 100.0 * (double)total);
    if (want == 0)
        want = 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < BENCH_HIST_BUCKETS; i++) {
        seen += atomic_load_explicit(&h->count[i], memory_order_relaxed);
        if (seen >= want) {
            uint64_t up = hist_upper(i), mx = bench_hist_max(h);
            return up < mx || mx == 0 ? up : mx;
        }
    }
    return bench_hist_max(h);
}

void bench_hist_merge(bench_hist *dst, const bench_hist *src)
{
    for (size_t i = 0; i < BENCH_HIST_BUCKETS; i++)
        atomic_fetch_add_explicit(&dst->count[i],
                                  atomic_load_explicit(&src->count[i], memory_order_relaxed),
                                  memory_order_relaxed);
    atomic_fetch_add_explicit(&dst->n, bench_hist_count(src), memory_order_relaxed);
    atomic_fetch_add_explicit(&dst->sum,
                              atomic_load_explicit(&src->sum, memory_order_relaxed),
                              memory_order_relaxed);
    uint64_t m = bench_hist_max(src);
    if (m > bench_hist_max(dst))
        atomic_store_explicit(&dst->max, m, memory_order_relaxed);
}

void bench_hist_cdf(const bench_hist *h, void (*fn)(void *, uint64_t, double), void *arg)
{
    uint64_t total = 0;
    for (size_t i = 0; i < BENCH_HIST_BUCKETS; i++)
        total += atomic_load_explicit(&h->count[i], memory_order_relaxed);
    if (total == 0)
        return;
    uint64_t seen = 0;
    for (size_t i = 0; i < BENCH_HIST_BUCKETS; i++) {
        uint64_t c = atomic_load_explicit(&h->count[i], memory_order_relaxed);
        if (!c)
            continue;
        seen += c;
        fn(arg, hist_upper(i), (double)seen / (double)total);
    }
}
