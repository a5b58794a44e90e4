/*
 * The session arena (runtime/arena.h): heads and tails carved from 2 MiB
 * chunks never overlap, come back zeroed and aligned, are reused once
 * freed; small counts and large sessions stay plain allocations; and a
 * runtime whose sessions come from the arena keeps their ids, runs their
 * ops and returns every block when they close.
 *
 * Promises: 1, 4
 */
#define _GNU_SOURCE /* nanosleep (core_util.h) */
#include <criterion/criterion.h>
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "arena.h"
#include "core_util.h"
#include "rcu.h"
#include "runtime.h"
#include "session.h"

#define N 6000 /* about 4 chunks of heads and tails below */

typedef struct block {
    unsigned char *head, *tail;
    size_t hn, tn;
    uint32_t units;
} block;

static block blocks[N];

/* Sizes that vary, so that several free lists and both ends of a chunk
 * are in use. */
static size_t head_of(unsigned i) { return 384 + 40 * (size_t)(1u << (i % 5)); }
static size_t tail_of(unsigned i) { return 8 + 1 + i % 40; }

static bool all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

static void take(accel__arena *a, unsigned i)
{
    block *b = &blocks[i];
    void *tail;
    b->hn = head_of(i);
    b->tn = tail_of(i);
    b->head = accel__arena_calloc(a, b->hn, b->tn, &tail, &b->units);
    cr_assert_not_null(b->head);
    b->tail = tail;
    cr_assert_eq((uintptr_t)b->head % 128, 0, "head %u not 128-aligned", i);
    cr_assert_eq((uintptr_t)b->tail % 8, 0, "tail %u not 8-aligned", i);
    cr_assert(all_zero(b->head, b->hn) && all_zero(b->tail, b->tn),
              "block %u not zeroed", i);
    /* a pattern that names the block: an overlap shows when checked */
    memset(b->head, (int)(i * 7 + 1) & 0xff, b->hn);
    memset(b->tail, (int)(i * 7 + 2) & 0xff, b->tn);
}

static void check(unsigned i)
{
    block *b = &blocks[i];
    for (size_t k = 0; k < b->hn; k++)
        cr_assert_eq(b->head[k], (unsigned char)(i * 7 + 1),
                     "head %u overwritten at %zu", i, k);
    for (size_t k = 0; k < b->tn; k++)
        cr_assert_eq(b->tail[k], (unsigned char)(i * 7 + 2),
                     "tail %u overwritten at %zu", i, k);
}

Test(arena, blocks_never_overlap_and_come_back_zeroed)
{
    accel__arena a;
    accel__arena_init(&a);
    a.from = 0;
    for (unsigned i = 0; i < N; i++)
        take(&a, i);
    for (unsigned i = 0; i < N; i++) {
        cr_assert_neq(blocks[i].units, 0, "block %u is plain", i);
        check(i);
    }
    size_t chunks = accel__arena_chunks(&a);
    cr_assert_gt(chunks, 1, "the test must cross chunks");
    cr_assert_eq(accel__arena_live(&a), N);

    /* Free every other block, take them again: the same memory, zeroed,
     * no new chunk. */
    for (unsigned i = 0; i < N; i += 2)
        accel__arena_free(&a, blocks[i].head, blocks[i].tail, blocks[i].units);
    cr_assert_eq(accel__arena_live(&a), N / 2);
    for (unsigned i = 0; i < N; i += 2)
        take(&a, i);
    cr_assert_eq(accel__arena_chunks(&a), chunks, "freed blocks not reused");
    for (unsigned i = 0; i < N; i++)
        check(i);
    for (unsigned i = 0; i < N; i++)
        accel__arena_free(&a, blocks[i].head, blocks[i].tail, blocks[i].units);
    cr_assert_eq(accel__arena_live(&a), 0);
    accel__arena_fini(&a);
}

/* Heads of one unit and tails of 48 bytes: 11914 pairs fill a chunk's
 * 2 MiB - 128 bytes but for 160 bytes, enough for the next head and not
 * for its tail as well, so the 11915th pair needs a new chunk. */
#define FILL 11914
static unsigned char *fill_head[FILL + 1], *fill_tail[FILL + 1];
static uint32_t fill_units[FILL + 1];

Test(arena, a_chunk_is_full_when_a_head_and_its_tail_do_not_both_fit)
{
    accel__arena a;
    accel__arena_init(&a);
    a.from = 0;
    for (unsigned i = 0; i <= FILL; i++) {
        void *t;
        fill_head[i] = accel__arena_calloc(&a, 128, 48, &t, &fill_units[i]);
        cr_assert_not_null(fill_head[i]);
        fill_tail[i] = t;
        memset(fill_head[i], (int)(i & 0x7f), 128);
        memset(fill_tail[i], (int)(i & 0x7f) | 0x80, 48);
        cr_assert_eq(accel__arena_chunks(&a), i < FILL ? 1u : 2u,
                     "pair %u: wrong chunk count", i);
    }
    for (unsigned i = 0; i <= FILL; i++) {
        for (int k = 0; k < 128; k++)
            cr_assert_eq(fill_head[i][k], (unsigned char)(i & 0x7f),
                         "head %u overwritten", i);
        for (int k = 0; k < 48; k++)
            cr_assert_eq(fill_tail[i][k], (unsigned char)((i & 0x7f) | 0x80),
                         "tail %u overwritten", i);
    }
    for (unsigned i = 0; i <= FILL; i++)
        accel__arena_free(&a, fill_head[i], fill_tail[i], fill_units[i]);
    accel__arena_fini(&a);
}

Test(arena, plain_below_the_threshold_and_above_the_largest_size)
{
    accel__arena a;
    accel__arena_init(&a);
    a.from = 2;
    void *tails[4];
    uint32_t units[4];
    void *p[4];
    for (int i = 0; i < 3; i++)
        p[i] = accel__arena_calloc(&a, 512, 24, &tails[i], &units[i]);
    cr_assert_eq(units[0], 0, "first session: plain");
    cr_assert_eq(units[1], 0, "second session: plain");
    cr_assert_neq(units[2], 0, "third session: from a chunk");
    cr_assert_eq((char *)tails[0], (char *)p[0] + 512,
                 "a plain tail follows its head");
    p[3] = accel__arena_calloc(&a, ACCEL__ARENA_MAX + 128, 24, &tails[3],
                               &units[3]);
    cr_assert_eq(units[3], 0, "a session larger than the arena's largest, "
                              "past the threshold: malloc's, not a mapping");
    cr_assert_eq(accel__arena_live(&a), 1);
    for (int i = 0; i < 4; i++)
        accel__arena_free(&a, p[i], tails[i], units[i]);
    cr_assert_eq(accel__arena_live(&a), 0);
    accel__arena_fini(&a);
}

/* A large plain block is a mapping of its own, zeroed, and goes back to
 * the system when freed: mincore() on a page no longer mapped fails with
 * ENOMEM. (A freed malloc block would stay mapped in malloc's arena.) */
Test(arena, a_large_plain_block_is_unmapped_when_freed)
{
#ifdef ACCEL__ARENA_NO_MAP
    cr_skip_test("under a sanitizer large blocks are malloc's");
#else
    accel__arena a;
    accel__arena_init(&a); /* below `from`: plain */
    size_t head = ACCEL__ARENA_MAP_FROM + 4096, tail = 40;
    void *t;
    uint32_t units;
    unsigned char *p = accel__arena_calloc(&a, head, tail, &t, &units);
    cr_assert_not_null(p);
    cr_assert_eq(units & ACCEL__ARENA_MAPPED, ACCEL__ARENA_MAPPED);
    cr_assert_eq((unsigned char *)t, p + head, "the tail follows its head");
    for (size_t i = 0; i < head + tail; i += 512)
        cr_assert_eq(p[i], 0, "byte %zu not zero", i);
    memset(p, 0xa5, head + tail);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char vec[1];
    cr_assert_eq(mincore(p, page, vec), 0, "mapped while allocated");
    accel__arena_free(&a, p, t, units);
    errno = 0;
    cr_assert_eq(mincore(p, page, vec), -1, "still mapped after free");
    cr_assert_eq(errno, ENOMEM);
    accel__arena_fini(&a);
#endif
}

/* A large plain block's pages are resident when it is handed out (a
 * mapping is populated, as malloc's block is by the zeroing memset): a
 * session's ring is not faulted in page by page by its first ops.
 * mincore() before any access from here. */
Test(arena, a_large_plain_block_is_resident_when_handed_out)
{
    accel__arena a;
    accel__arena_init(&a); /* below `from`: plain */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t head = ACCEL__ARENA_MAP_FROM + 4 * page, tail = 40;
    void *t;
    uint32_t units;
    unsigned char *p = accel__arena_calloc(&a, head, tail, &t, &units);
    cr_assert_not_null(p);
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(page - 1);
    size_t pages = ((uintptr_t)p + head + tail - lo + page - 1) / page;
    unsigned char vec[64];
    cr_assert_leq(pages, sizeof vec);
    cr_assert_eq(mincore((void *)lo, pages * page, vec), 0);
    for (size_t i = 0; i < pages; i++)
        cr_assert_eq(vec[i] & 1, 1, "page %zu of %zu not resident at hand-out",
                     i, pages);
    accel__arena_free(&a, p, t, units);
    accel__arena_fini(&a);
}

static int op_add(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    atomic_fetch_add((_Atomic int *)arg, 1);
    return 0;
}

#define SESSIONS (ACCEL__ARENA_FROM + 600)

Test(arena, sessions_from_the_arena_keep_ids_run_ops_and_return_blocks)
{
    accel_runtime_config cfg = {.workers = 2};
    accel_runtime *rt;
    cr_assert_eq(accel_runtime_create(&cfg, &rt), ACCEL_OK);
    static accel_session *s[SESSIONS];
    _Atomic int ran = 0;
    size_t chunks = 0;
    for (int round = 0; round < 2; round++) {
        for (unsigned i = 0; i < SESSIONS; i++) {
            char id[32];
            snprintf(id, sizeof id, "arena-%u-%d", i, round);
            accel_session_config sc = {.id = id, .queue_depth = 4};
            cr_assert_eq(accel_session_open(rt, &sc, &s[i]), ACCEL_OK);
            accel_op op = {.fn = op_add, .arg = (void *)&ran};
            cr_assert_eq(accel_submit(s[i], &op, ACCEL_FOREVER), ACCEL_OK);
        }
        cr_assert_eq(s[SESSIONS - 1]->arena_units != 0, true,
                     "the last sessions come from the arena");
        cr_assert_eq(s[0]->arena_units, 0, "the first sessions are plain");
        for (unsigned i = 0; i < SESSIONS; i++) {
            char id[32];
            snprintf(id, sizeof id, "arena-%u-%d", i, round);
            cr_assert_str_eq(accel_session_id(s[i]), id);
            accel_session *found;
            cr_assert_eq(accel_session_lookup(rt, id, &found), ACCEL_OK);
            cr_assert_eq(found, s[i]);
            accel_session_release(found);
        }
        if (round == 0)
            chunks = accel__arena_chunks(&rt->arena);
        else
            cr_assert_eq(accel__arena_chunks(&rt->arena), chunks,
                         "the second round did not reuse the first's blocks");
        for (unsigned i = 0; i < SESSIONS; i++) {
            cr_assert_eq(accel_session_close(s[i], ACCEL_CLOSE_DRAIN),
                         ACCEL_OK);
            accel_session_release(s[i]);
        }
        accel__rcu_barrier(); /* the reclamations have run */
        cr_assert_eq(accel__arena_live(&rt->arena), 0,
                     "closed sessions left blocks behind");
    }
    cr_assert_eq(atomic_load(&ran), 2 * SESSIONS);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}
