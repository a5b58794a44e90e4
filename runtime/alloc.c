#include "alloc.h"

#include <stdlib.h>
#include <string.h>

#include "fault.h"

long accel__alloc_fail_after(long k)
{
    long n = accel__fault_disarm();
    if (k >= 0)
        accel__fault_arm_nth(k);
    return n;
}

void *accel__malloc_at(size_t n, const char *func)
{
    return accel__fault_hit("alloc", func) ? NULL : malloc(n);
}

void *accel__calloc_at(size_t n, size_t size, const char *func)
{
    return accel__fault_hit("alloc", func) ? NULL : calloc(n, size);
}

void *accel__calloc_aligned_at(size_t align, size_t n, const char *func)
{
    if (accel__fault_hit("alloc", func))
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

/* The plain functions; the parentheses keep the macros of alloc.h off. */
void *(accel__malloc)(size_t n) { return accel__malloc_at(n, "(unnamed)"); }

void *(accel__calloc)(size_t n, size_t size)
{
    return accel__calloc_at(n, size, "(unnamed)");
}

void *(accel__calloc_aligned)(size_t align, size_t n)
{
    return accel__calloc_aligned_at(align, n, "(unnamed)");
}
