#include "alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Fault injection: relaxed is enough, the tests drive it from one thread. */
static _Atomic long fail_countdown = -1;
static _Atomic long alloc_count;

static int should_fail(void)
{
    /* Unarmed (the normal case): one load of a read-mostly word, no RMW
     * on a line that every allocating thread would share. */
    long c = atomic_load_explicit(&fail_countdown, memory_order_relaxed);
    if (c < 0)
        return 0;
    atomic_fetch_add_explicit(&alloc_count, 1, memory_order_relaxed);
    c = atomic_fetch_sub_explicit(&fail_countdown, 1, memory_order_relaxed);
    return c == 0;
}

long accel__alloc_fail_after(long k)
{
    atomic_store_explicit(&fail_countdown, k, memory_order_relaxed);
    return atomic_exchange_explicit(&alloc_count, 0, memory_order_relaxed);
}

void *accel__malloc(size_t n) { return should_fail() ? NULL : malloc(n); }

void *accel__calloc(size_t n, size_t size)
{
    return should_fail() ? NULL : calloc(n, size);
}

void *accel__calloc_aligned(size_t align, size_t n)
{
    if (should_fail())
        return NULL;
    /* posix_memalign: no need to round the size up to the alignment
     * (aligned_alloc's rule), which would waste up to align - 1 bytes per
     * session. */
    void *p;
    if (posix_memalign(&p, align, n ? n : 1) != 0)
        return NULL;
    memset(p, 0, n);
    return p;
}

void accel__free(void *p) { free(p); }
