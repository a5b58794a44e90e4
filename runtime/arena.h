/*
 * Session memory on transparent huge pages.
 *
 * With 100k sessions every visit and every submit touches lines of a
 * session nobody touched for a while, and on a VM each TLB miss is a
 * two-dimensional page walk: with 4 KiB pages the walks, not the lines,
 * were most of the cost (docs/ring.md has the measurements). So once a
 * runtime has ACCEL__ARENA_FROM sessions open, new sessions come from
 * 2 MiB chunks advised MADV_HUGEPAGE, carved in units and kept on one
 * free list per size. Below that count a session is a plain
 * allocation: a node with a few dozen sessions does not pay 2 MiB of
 * resident memory for them.
 *
 * Chunks go back to the system when the runtime is destroyed, not
 * before: a runtime that once had 100k sessions keeps their memory for
 * the next ones. A session larger than ACCEL__ARENA_MAX (a deep ring) is
 * always a plain allocation.
 *
 * Thread-safety: every call takes the arena's mutex (cold paths: session
 * open and reclamation).
 *
 * Sanitizers: under AddressSanitizer free blocks and the unused middle
 * of a chunk are poisoned, and each chunk is a LeakSanitizer root region
 * (a session holds the only pointer to its backend state). Under
 * ThreadSanitizer a reused block is ordinary memory: the RCU annotations
 * (rcu.h) order a session's last accesses before its reclamation, and the
 * arena's lock orders that free before the next allocation of the block
 * (stress_close takes every other round's sessions from the arena).
 */
#ifndef ACCEL_RUNTIME_ARENA_H
#define ACCEL_RUNTIME_ARENA_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Built with AddressSanitizer: blocks are poisoned. Under it or
 * ThreadSanitizer large plain blocks stay malloc's (ACCEL__ARENA_NO_MAP):
 * a use after free is then a sanitizer's report, not a fault on an
 * unmapped page (tests/tsan_sees_reclaim.c relies on it). */
#if defined(__SANITIZE_ADDRESS__)
#define ACCEL__ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ACCEL__ARENA_ASAN 1
#endif
#endif
#if defined(ACCEL__ARENA_ASAN) || defined(__SANITIZE_THREAD__)
#define ACCEL__ARENA_NO_MAP 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ACCEL__ARENA_NO_MAP 1
#endif
#endif

#define ACCEL__ARENA_UNIT 128     /* heads */
#define ACCEL__ARENA_TAIL_UNIT 16 /* tails */
#define ACCEL__ARENA_MAX (32 * 1024)
#define ACCEL__ARENA_TAIL_MAX 2048
#define ACCEL__ARENA_CHUNK ((size_t)2 << 20)
#define ACCEL__ARENA_MAPPED (1u << 31) /* in *units: above any chunk's */
/* A plain allocation this large is a mapping of its own (not under a
 * sanitizer): malloc would keep it, once freed, in the arena of
 * whichever thread opened the session, and open/close churn across
 * threads left tens of MB free but resident there. Only while at most
 * ACCEL__ARENA_FROM sessions are open (a mapping may be a kernel VMA of
 * its own, and their number is bounded). */
#define ACCEL__ARENA_MAP_FROM (32 * 1024)
/* Sessions open before the arena is used (plain allocations until then). */
#define ACCEL__ARENA_FROM 1024

typedef struct accel__arena_chunk accel__arena_chunk;

typedef struct accel__arena {
    pthread_mutex_t lock;
    size_t open;                /* sessions allocated and not freed, both kinds */
    size_t from;                /* `open` at which the arena starts */
    char *next, *end;           /* unused middle of the newest chunk:
                                   heads go up from next, tails down
                                   from end */
    accel__arena_chunk *chunks; /* every chunk, for fini */
    size_t nchunks;
    size_t live;                /* arena blocks allocated and not freed */
    void *free[ACCEL__ARENA_MAX / ACCEL__ARENA_UNIT + 1]; /* by units */
    void *free_tail[ACCEL__ARENA_TAIL_MAX / ACCEL__ARENA_TAIL_UNIT + 1];
} accel__arena;

void accel__arena_init(accel__arena *a);
/* Unmaps every chunk; every block must have been freed or be garbage. */
void accel__arena_fini(accel__arena *a);

/* Zeroed memory for a session: a head of `head` bytes, 128-byte aligned,
 * and a tail of `tail` bytes, 8-byte aligned (*tailp; head is a multiple
 * of 8). A plain
 * allocation holds both, the tail right after the head; in a chunk,
 * heads are carved upwards in 128-byte units and tails downwards in
 * 16-byte units, so the ring's slots need no padding for the few bytes
 * of the wait stamps and the id. *units says which for accel__arena_free
 * (0: plain malloc; ACCEL__ARENA_MAPPED | pages: a mapping). NULL: no
 * memory (or a fault injected at site "alloc@func"). */
void *accel__arena_calloc_at(accel__arena *a, size_t head, size_t tail,
                             void **tailp, uint32_t *units, const char *func);
#define accel__arena_calloc(a, head, tail, tailp, units) \
    accel__arena_calloc_at((a), (head), (tail), (tailp), (units), __func__)
void accel__arena_free(accel__arena *a, void *p, void *tail, uint32_t units);

/* For tests: chunks mapped, arena blocks live. */
size_t accel__arena_chunks(accel__arena *a);
size_t accel__arena_live(accel__arena *a);

#endif
