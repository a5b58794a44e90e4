/*
 * The id table grows with the sessions (session.c asks cds_lfht for one
 * bucket per session, resizing in the opening thread): lookups running
 * through every resize find every id that is open, never one that is
 * closed, and opens and closes from several threads leave the table exact.
 *
 * Promises: none
 */
#define _GNU_SOURCE /* nanosleep, clock_gettime (core_util.h) */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "core_util.h"
#include "runtime.h"
#include "unit_watchdog.h"

/* A wait that hangs names its step (unit_watchdog.h). */
UNIT_WATCHDOG_SUITE(table_grow);

#define OPENERS 2
#define PER_OPENER 3000 /* 6,000 sessions: resizes at 65, 129, ... 4097 */

typedef struct shared {
    accel_runtime *rt;
    _Atomic unsigned opened[OPENERS]; /* opener i's sessions 0..opened-1 */
    _Atomic int done;
    _Atomic unsigned misses; /* an open id the lookup did not find */
} shared;

typedef struct opener {
    shared *sh;
    unsigned index;
    accel_session *s[PER_OPENER];
} opener;

static void id_of(char *buf, size_t cap, unsigned opener, unsigned i)
{
    snprintf(buf, cap, "grow-%u-%u", opener, i);
}

static void *open_all(void *arg)
{
    opener *o = arg;
    for (unsigned i = 0; i < PER_OPENER; i++) {
        char id[32];
        id_of(id, sizeof id, o->index, i);
        accel_session_config sc = {.id = id, .backend = ACCEL_BACKEND_CPU};
        cr_assert_eq(accel_session_open(o->sh->rt, &sc, &o->s[i]), ACCEL_OK);
        /* release: the lookup thread that reads the count (acquire) finds
         * session i published in the table. */
        atomic_store_explicit(&o->sh->opened[o->index], i + 1,
                              memory_order_release);
    }
    return NULL;
}

static void *look_up(void *arg)
{
    shared *sh = arg;
    unsigned x = 1;
    while (!atomic_load_explicit(&sh->done, memory_order_relaxed)) {
        for (unsigned o = 0; o < OPENERS; o++) {
            unsigned n = atomic_load_explicit(&sh->opened[o],
                                              memory_order_acquire);
            if (!n)
                continue;
            x = x * 1103515245u + 12345u;
            char id[32];
            id_of(id, sizeof id, o, (x >> 8) % n);
            accel_session *l;
            if (accel_session_lookup(sh->rt, id, &l) == ACCEL_OK)
                accel_session_release(l);
            else
                atomic_fetch_add_explicit(&sh->misses, 1,
                                          memory_order_relaxed);
        }
    }
    return NULL;
}

Test(table_grow, lookups_find_every_open_id_through_resizes, .timeout = 60)
{
    static shared sh;
    static opener op[OPENERS];
    sh.rt = tu_runtime(1);
    pthread_t lk, th[OPENERS];
    cr_assert_eq(pthread_create(&lk, NULL, look_up, &sh), 0);
    for (unsigned i = 0; i < OPENERS; i++) {
        op[i] = (opener){.sh = &sh, .index = i};
        cr_assert_eq(pthread_create(&th[i], NULL, open_all, &op[i]), 0);
    }
    unit_step("the openers return");
    for (unsigned i = 0; i < OPENERS; i++)
        pthread_join(th[i], NULL);
    atomic_store_explicit(&sh.done, 1, memory_order_relaxed);
    unit_step("the lookup thread returns");
    pthread_join(lk, NULL);
    unit_step("lookups, closes and reopens of every id; destroy");
    cr_assert_eq(atomic_load(&sh.misses), 0,
                 "%u lookups missed an open id", atomic_load(&sh.misses));

    accel_runtime_stats st;
    cr_assert_eq(accel_runtime_get_stats(sh.rt, &st, sizeof st), ACCEL_OK);
    cr_assert_eq(st.sessions, OPENERS * PER_OPENER);
    /* Every id once, then closed ones gone and their ids free again. */
    for (unsigned o = 0; o < OPENERS; o++)
        for (unsigned i = 0; i < PER_OPENER; i++) {
            char id[32];
            id_of(id, sizeof id, o, i);
            accel_session *l;
            cr_assert_eq(accel_session_lookup(sh.rt, id, &l), ACCEL_OK);
            cr_assert_eq(l, op[o].s[i]);
            accel_session_release(l);
            if (i % 2) {
                cr_assert_eq(accel_session_close(op[o].s[i], 0), ACCEL_OK);
                accel_session_release(op[o].s[i]);
                cr_assert_eq(accel_session_lookup(sh.rt, id, &l),
                             ACCEL_ENOENT);
            }
        }
    for (unsigned o = 0; o < OPENERS; o++)
        for (unsigned i = 1; i < PER_OPENER; i += 2) {
            char id[32];
            id_of(id, sizeof id, o, i);
            accel_session_config sc = {.id = id, .backend = ACCEL_BACKEND_CPU};
            cr_assert_eq(accel_session_open(sh.rt, &sc, &op[o].s[i]),
                         ACCEL_OK, "a closed id can be opened again");
        }
    cr_assert_eq(accel_runtime_destroy(sh.rt), ACCEL_OK);
}

/* The open that crosses a power of two asks for a larger table; when that
 * open fails with EEXIST the request must still be carried out (else the
 * table stays at half size until the count doubles again). */
Test(table_grow, a_failed_open_at_the_growth_point_still_grows, .timeout = 60)
{
    accel_runtime *rt = tu_runtime(1);
    unsigned long b0 = rt->table_buckets;
    char id[32];
    accel_session **s = calloc(b0, sizeof(*s));
    cr_assert_not_null(s);
    for (unsigned long i = 0; i < b0; i++) {
        snprintf(id, sizeof(id), "g-%lu", i);
        s[i] = tu_open(rt, id, 4, 0);
        cr_assert_not_null(s[i]);
    }
    cr_assert_eq(rt->table_buckets, b0, "no growth up to one per bucket");
    /* session b0 + 1, an id already open: EEXIST */
    accel_session_config c = {.id = "g-0"};
    accel_session *dup = NULL;
    cr_assert_eq(accel_session_open(rt, &c, &dup), ACCEL_EEXIST);
    cr_assert_gt(rt->table_want, b0);
    cr_assert_eq(rt->table_buckets, rt->table_want,
                 "the failed open's resize request was carried out");
    for (unsigned long i = 0; i < b0; i++)
        accel_session_release(s[i]);
    free(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}
