#include "arena.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fault.h"

#ifdef MAP_POPULATE
#define ACCEL__MAP_POPULATE MAP_POPULATE
#else
#define ACCEL__MAP_POPULATE 0 /* then faulted in by the first touch */
#endif

#ifdef ACCEL__ARENA_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/lsan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#define LSAN_ROOT(p, n) __lsan_register_root_region((p), (n))
#define LSAN_UNROOT(p, n) __lsan_unregister_root_region((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#define LSAN_ROOT(p, n) ((void)(p), (void)(n))
#define LSAN_UNROOT(p, n) ((void)(p), (void)(n))
#endif

#include "alloc.h"

/* Each chunk's first unit holds its link (the list fini walks). */
struct accel__arena_chunk {
    accel__arena_chunk *next;
};

void accel__arena_init(accel__arena *a)
{
    memset(a, 0, sizeof(*a));
    pthread_mutex_init(&a->lock, NULL);
    a->from = ACCEL__ARENA_FROM;
}

void accel__arena_fini(accel__arena *a)
{
    for (accel__arena_chunk *c = a->chunks, *next; c; c = next) {
        next = c->next;
        LSAN_UNROOT(c, ACCEL__ARENA_CHUNK);
        UNPOISON(c, ACCEL__ARENA_CHUNK);
        munmap(c, ACCEL__ARENA_CHUNK);
    }
    pthread_mutex_destroy(&a->lock);
}

/* A 2 MiB-aligned chunk: map twice the size and trim both ends (mmap
 * itself only aligns to pages). NULL: no memory. */
static accel__arena_chunk *chunk_map(void)
{
    size_t len = 2 * ACCEL__ARENA_CHUNK;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    char *c = (char *)(((uintptr_t)p + ACCEL__ARENA_CHUNK - 1) &
                       ~(uintptr_t)(ACCEL__ARENA_CHUNK - 1));
    if (c > p)
        munmap(p, (size_t)(c - p));
    if (c + ACCEL__ARENA_CHUNK < p + len)
        munmap(c + ACCEL__ARENA_CHUNK,
               (size_t)(p + len - (c + ACCEL__ARENA_CHUNK)));
    /* Advice only: where THP is off the chunk keeps 4 KiB pages. */
    (void)madvise(c, ACCEL__ARENA_CHUNK, MADV_HUGEPAGE);
    LSAN_ROOT(c, ACCEL__ARENA_CHUNK);
    return (accel__arena_chunk *)c;
}

/* Pops a block of n bytes from a free list; NULL if it is empty. */
static void *list_take(void **list, size_t n)
{
    void *p = *list;
    if (p) {
        UNPOISON(p, n);
        *list = *(void **)p;
        memset(p, 0, n); /* freed blocks are dirty */
    }
    return p;
}

static void list_put(void **list, void *p, size_t n)
{
    *(void **)p = *list;
    *list = p;
    /* the link word stays readable for list_take */
    POISON((char *)p + sizeof(void *), n - sizeof(void *));
}

/* A head of hu units and a tail of tu units, from the free lists or the
 * middle of the newest chunk; under the lock. false: no memory. */
static bool blocks_take(accel__arena *a, uint32_t hu, uint32_t tu,
                        void **head, void **tail)
{
    size_t hn = (size_t)hu * ACCEL__ARENA_UNIT;
    size_t tn = (size_t)tu * ACCEL__ARENA_TAIL_UNIT;
    *head = list_take(&a->free[hu], hn);
    *tail = list_take(&a->free_tail[tu], tn);
    size_t need = (*head ? 0 : hn) + (*tail ? 0 : tn);
    if ((size_t)(a->end - a->next) < need) {
        accel__arena_chunk *c = chunk_map();
        if (!c) {
            if (*head)
                list_put(&a->free[hu], *head, hn);
            if (*tail)
                list_put(&a->free_tail[tu], *tail, tn);
            return false;
        }
        c->next = a->chunks;
        a->chunks = c;
        a->nchunks++;
        /* The middle left in the old chunk (less than one session) stays
         * unused. */
        a->next = (char *)c + ACCEL__ARENA_UNIT;
        a->end = (char *)c + ACCEL__ARENA_CHUNK;
        POISON(a->next, (size_t)(a->end - a->next));
    }
    /* fresh from mmap: already zero */
    if (!*head) {
        *head = a->next;
        a->next += hn;
        UNPOISON(*head, hn);
    }
    if (!*tail) {
        a->end -= tn;
        *tail = a->end;
        UNPOISON(*tail, tn);
    }
    return true;
}

/* Zeroed, 128-byte aligned, not a fault site (the caller was one);
 * *units: 0, or ACCEL__ARENA_MAPPED | pages for a mapping (only if
 * may_map). Either way its pages are resident on return (the plain
 * one's memset, the mapping's MAP_POPULATE): a page left to its first
 * touch would fault on the op path instead, a fault per 4 KiB of ring
 * slots in the ring's first lap, not once here at open. */
static void *plain_calloc(size_t n, bool may_map, uint32_t *units)
{
    void *p;
#ifndef ACCEL__ARENA_NO_MAP /* a sanitizer's allocator reports a use after free */
    if (may_map && n >= ACCEL__ARENA_MAP_FROM) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        size_t pages = (n + page - 1) / page;
        p = mmap(NULL, pages * page, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | ACCEL__MAP_POPULATE, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        *units = ACCEL__ARENA_MAPPED | (uint32_t)pages; /* zero from mmap */
        return p;
    }
#else
    (void)may_map, (void)units; /* stays 0: always malloc's */
#endif
    if (posix_memalign(&p, ACCEL__ARENA_UNIT, n) != 0)
        return NULL;
    memset(p, 0, n);
    return p;
}

void *accel__arena_calloc_at(accel__arena *a, size_t head, size_t tail,
                             void **tailp, uint32_t *units, const char *func)
{
    if (accel__fault_hit("alloc", func))
        return NULL;
    void *p = NULL;
    *units = 0;
    uint32_t hu = (uint32_t)((head + ACCEL__ARENA_UNIT - 1) /
                             ACCEL__ARENA_UNIT);
    uint32_t tu = (uint32_t)((tail + ACCEL__ARENA_TAIL_UNIT - 1) /
                             ACCEL__ARENA_TAIL_UNIT);
    pthread_mutex_lock(&a->lock); /* cold: session open */
    a->open++;
    /* Mappings only up to the arena's threshold: at most `from` of them
     * live (each may be a kernel VMA, and vm.max_map_count is finite);
     * a node with more sessions keeps the large ones in malloc. */
    bool may_map = a->open <= a->from;
    if (a->open > a->from && head <= ACCEL__ARENA_MAX &&
        tail <= ACCEL__ARENA_TAIL_MAX && blocks_take(a, hu, tu, &p, tailp)) {
        *units = hu | tu << 16;
        a->live++;
    }
    pthread_mutex_unlock(&a->lock);
    if (!p) { /* below the threshold, too large, or no chunk: plain */
        p = plain_calloc(head + tail, may_map, units);
        if (p) {
            *tailp = (char *)p + head;
        } else {
            pthread_mutex_lock(&a->lock); /* cold: out of memory */
            a->open--;
            pthread_mutex_unlock(&a->lock);
        }
    }
    return p;
}

void accel__arena_free(accel__arena *a, void *p, void *tail, uint32_t units)
{
    if (!p)
        return;
    uint32_t hu = units & 0xffff, tu = units >> 16;
    bool mapped = units & ACCEL__ARENA_MAPPED;
    pthread_mutex_lock(&a->lock); /* cold: session reclamation */
    a->open--;
    if (units && !mapped) {
        list_put(&a->free[hu], p, (size_t)hu * ACCEL__ARENA_UNIT);
        list_put(&a->free_tail[tu], tail, (size_t)tu * ACCEL__ARENA_TAIL_UNIT);
        a->live--;
    }
    pthread_mutex_unlock(&a->lock);
    if (mapped)
        munmap(p, (size_t)(units & ~ACCEL__ARENA_MAPPED) *
                      (size_t)sysconf(_SC_PAGESIZE));
    else if (!units)
        accel__free(p);
}

size_t accel__arena_chunks(accel__arena *a)
{
    pthread_mutex_lock(&a->lock); /* cold: tests */
    size_t n = a->nchunks;
    pthread_mutex_unlock(&a->lock);
    return n;
}

size_t accel__arena_live(accel__arena *a)
{
    pthread_mutex_lock(&a->lock); /* cold: tests */
    size_t n = a->live;
    pthread_mutex_unlock(&a->lock);
    return n;
}
