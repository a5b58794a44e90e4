/*
 * The calendar's repairs and the wake-ups they owe (sched_calendar.c, the
 * top of the file): one thread drives the real scheduler through the
 * calendar's window seam, staging the interleaving in which a parking
 * worker's look misses a completed push.
 *
 * A pick that empties a bucket clears its bit, then looks back at the
 * head and sets the bit back if a push came. A push that lands before
 * the clear finds its bit already set and its wake may find no worker
 * parked yet; a worker that parks and looks between the clear and the
 * set back sees nothing and sleeps. The repair that sets the bit back is
 * then the only one who knows: the scheduler must report it (the
 * `restored` hook, which the runtime turns into a push's whole wake
 * path). Likewise for a stale summary bit, and for a worker that counts
 * itself blocked in that window (its hand-off's look misses the push);
 * and a look that does not pop must not clear at all.
 *
 * Promises: 1, 6
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <time.h>
#include <string.h>

#include <accel/accel.h>

#include "core_util.h"
#include "park.h"
#include "runtime_types.h"
#include "sched_core.h"
#include "unit_watchdog.h"
#include "worker_types.h"

/* A wait that hangs names its step (unit_watchdog.h). */
UNIT_WATCHDOG_SUITE(runtime_repair);

static accel__sched *repair_sched;
static accel__sched_entity *pushed_in_window;
static unsigned push_at, look_at;
static int pushes, looks;
static accel__sched_entity *look_found;
static int restores;
static unsigned restored_lanes;

static void on_restored(void *arg, unsigned lanes)
{
    cr_assert_eq(arg, (void *)&repair_sched);
    restores++;
    restored_lanes |= lanes;
}

/* The seam: at push_at a producer's push lands (the bit it sets is
 * already set); at look_at a parking worker looks (its pick, the seam
 * off meanwhile). */
static void window(accel__sched_cal *c, unsigned where)
{
    (void)c;
    if (where == push_at && !pushes) {
        pushes++;
        accel__sched_enqueue(repair_sched, pushed_in_window, true);
    } else if (where == look_at && pushes && !looks) {
        looks++;
        atomic_store(&accel__cal_window_hook, NULL);
        look_found = accel__sched_pick(repair_sched, ACCEL__LANE_GENERAL);
        atomic_store(&accel__cal_window_hook, window);
    }
}

static void never(accel__sched_cal *c, unsigned where)
{
    (void)c;
    cr_assert_fail("a look that does not pop entered the repair window %u",
                   where);
}

static void setup(void)
{
    accel__sched_config cfg = {.workers = 1, .quantum_ops = 32,
                               .quantum_ns = 2000000, .max_entities = 8,
                               .restored = on_restored,
                               .restored_arg = &repair_sched};
    cr_assert_eq(accel__sched_create(&cfg, &repair_sched), 0);
    pushes = looks = restores = 0;
    restored_lanes = 0;
    look_found = NULL;
}

static void teardown(void)
{
    atomic_store(&accel__cal_window_hook, NULL);
    accel__sched_destroy(repair_sched);
}

TestSuite(sched_repair, .init = setup, .fini = teardown);

Test(sched_repair, a_pop_that_sets_its_bit_back_reports_it, .timeout = 60)
{
    accel__sched_entity a, x;
    memset(&a, 0, sizeof(a));
    memset(&x, 0, sizeof(x));
    accel__sched_entity_init(repair_sched, &a, 1, NULL);
    accel__sched_entity_init(repair_sched, &x, 1, NULL);
    accel__sched_enqueue(repair_sched, &a, true);
    /* x lands in a's bucket (same weight, same start) after a's pop took
     * the last node and before its clear; the look comes after the clear. */
    pushed_in_window = &x;
    push_at = 0;
    look_at = 1;
    atomic_store(&accel__cal_window_hook, window);
    accel__sched_entity *got = accel__sched_pick(repair_sched,
                                                 ACCEL__LANE_GENERAL);
    atomic_store(&accel__cal_window_hook, NULL);
    cr_assert_eq(got, &a);
    cr_assert_eq(pushes, 1, "the push in the window did not happen");
    cr_assert_eq(looks, 1, "the look in the window did not happen");
    cr_assert_null(look_found,
                   "the look between the clear and the set back found the "
                   "push: the window this test stages is gone");
    cr_assert_eq(restores, 1,
                 "the pick set x's bit back after a look missed it and "
                 "reported %d restores: a parked worker would sleep beside "
                 "x",
                 restores);
    cr_assert(restored_lanes & ACCEL__SCHED_LANE_GENERAL);
    cr_assert_eq(accel__sched_pick(repair_sched, ACCEL__LANE_GENERAL), &x);
}

Test(sched_repair, a_pick_that_sets_a_stale_summary_bit_back_reports_it,
     .timeout = 60)
{
    /* Weight 1: a's deadline lies a few words of buckets past the word a
     * pick starts from, so after its pop that word's summary bit is
     * stale (the word is empty, the summary still says it may not be). */
    accel__sched_entity a, x;
    memset(&a, 0, sizeof(a));
    memset(&x, 0, sizeof(x));
    accel__sched_entity_init(repair_sched, &a, 1, NULL);
    accel__sched_entity_init(repair_sched, &x, 1, NULL);
    accel__sched_enqueue(repair_sched, &a, true);
    cr_assert_eq(accel__sched_pick(repair_sched, ACCEL__LANE_GENERAL), &a);
    /* x lands in that word after the next pick saw it empty and before it
     * clears the summary bit; the look comes after the clear. */
    pushed_in_window = &x;
    push_at = 2;
    look_at = 3;
    atomic_store(&accel__cal_window_hook, window);
    accel__sched_entity *got = accel__sched_pick(repair_sched,
                                                 ACCEL__LANE_GENERAL);
    atomic_store(&accel__cal_window_hook, NULL);
    cr_assert_eq(pushes, 1,
                 "no stale summary bit: a's bucket shares the pick's first "
                 "word, so this test stages nothing");
    cr_assert_eq(looks, 1, "the look in the window did not happen");
    cr_assert_null(look_found,
                   "the look between the clear and the set back found the "
                   "push: the window this test stages is gone");
    cr_assert_eq(got, &x);
    cr_assert_eq(restores, 1,
                 "the pick set the summary bit back after a look missed x "
                 "and reported %d restores",
                 restores);
}

Test(sched_repair, looks_that_do_not_pop_leave_stale_bits, .timeout = 60)
{
    /* The monitor's look, the visit end's and the enqueue's read around a
     * stale bit: a clear by a thread that will not pop leaves no one to
     * answer for a push that a parking worker misses meanwhile. */
    accel__sched_entity a, b;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    accel__sched_entity_init(repair_sched, &a, 1, NULL);
    accel__sched_entity_init(repair_sched, &b, 100, NULL);
    accel__sched_enqueue(repair_sched, &a, true);
    cr_assert_eq(accel__sched_pick(repair_sched, ACCEL__LANE_GENERAL), &a);
    atomic_store(&accel__cal_window_hook, never);
    cr_assert_eq(accel__sched_queued(repair_sched, ACCEL__LANE_GENERAL, 8), 0);
    accel__sched_entity *e = NULL;
    uint32_t hint = 0;
    cr_assert_eq(accel__sched_peek(repair_sched, ACCEL__LANE_GENERAL, &e,
                                   &hint, 1),
                 0);
    bool taken = true;
    accel__sched_enqueue_or_take(repair_sched, &b, true, ACCEL__LANE_GENERAL,
                                 &taken);
    atomic_store(&accel__cal_window_hook, NULL);
    if (!taken)
        cr_assert_eq(accel__sched_pick(repair_sched, ACCEL__LANE_GENERAL),
                     &b);
}

/* ---- The same window with the runtime's workers: the report wakes.
 *
 * Two workers, P and W. A's submit wakes P; P's pick pops A's session
 * (the last node of its bucket) and the seam holds P before the clear.
 * D's submit wakes W, which runs D (another bucket) and, parking again,
 * reads its futex word and stops in its park window, before it
 * announces. Then P, still before its clear, submits X to a session of
 * A's bucket: X's wake finds no one parked. P clears, lets W go and
 * waits until W has looked (the clear hides X) and counted its park,
 * with no wake since it read its futex word: W sleeps. P's look back
 * sets X's bit back, and only the runtime's `restored` hook can wake W.
 * A spins until X has run, so without that wake nobody runs X: A gives
 * up after 10 s and says so. */
static accel_runtime *rr_rt;
static _Atomic(accel_session *) rr_sx;
static _Atomic int rr_hold, rr_held, rr_release, rr_go, rr_staged, rr_x_ran,
    rr_a_gave_up;
static _Atomic int rr_state; /* 0 armed, 1 P held, 2 X submitted, 3 done */
static int rr_mode;          /* 0: W parks in the window; 1: W blocks */
static _Atomic int rr_b_started, rr_b_go, rr_b_blocked;
static _Thread_local bool rr_is_p;
static tu_rec rr_x_rec;

static uint64_t rr_parks(void)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < rr_rt->nworkers; i++)
        n += atomic_load(&rr_rt->workers[i].parks);
    return n;
}

static bool rr_wait(_Atomic int *flag, int v)
{
    for (int i = 0; i < 100000 && atomic_load(flag) < v; i++)
        tu_nap_us(100);
    return atomic_load(flag) >= v;
}

static void rr_park_window(accel_runtime *rt, unsigned lane)
{
    (void)rt, (void)lane;
    if (!atomic_load(&rr_hold) || atomic_exchange(&rr_held, 1))
        return;
    rr_wait(&rr_release, 1); /* the test fails on its own flags if not */
}

static int rr_x_op(accel_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    atomic_store(&rr_x_ran, 1);
    return 0;
}

static int rr_a_op(accel_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    if (!rr_wait(&rr_x_ran, 1))
        atomic_store(&rr_a_gave_up, 1);
    return 0;
}

static void rr_cal_window(accel__sched_cal *c, unsigned where)
{
    (void)c;
    int armed = 0;
    if (where == 0 && !rr_is_p &&
        atomic_compare_exchange_strong(&rr_state, &armed, 1)) {
        rr_is_p = true; /* the one pick that empties A's bucket first */
        rr_wait(&rr_go, 1);
        accel_op op = {rr_x_op, tu_rec_done, &rr_x_rec};
        if (accel_submit(atomic_load(&rr_sx), &op, ACCEL_NO_WAIT) != ACCEL_OK)
            return; /* state stays 1: reported below */
        atomic_store(&rr_state, 2);
    } else if (where == 1 && rr_is_p && atomic_load(&rr_state) == 2 &&
               rr_mode == 1) {
        /* W, in B's op, counts itself blocked and looks for work to
         * hand its place to: the clear hides X, so it starts no one. */
        atomic_store(&rr_state, 3);
        atomic_store(&rr_b_go, 1);
        rr_wait(&rr_b_blocked, 1);
        atomic_store(&rr_staged, atomic_load(&rr_b_blocked) &&
                                     !atomic_load(&rr_x_ran) &&
                                     !atomic_load(&rr_rt->extra_active));
    } else if (where == 1 && rr_is_p && atomic_load(&rr_state) == 2) {
        atomic_store(&rr_state, 3);
        uint64_t parks = rr_parks();
        atomic_store(&rr_release, 1);
        for (int i = 0; i < 100000 && rr_parks() == parks &&
                        !atomic_load(&rr_x_ran);
             i++)
            tu_nap_us(100);
        tu_nap_us(1000); /* W from its count to its futex wait */
        atomic_store(&rr_staged,
                     rr_parks() != parks && !atomic_load(&rr_x_ran));
    }
}

/* B's op: runs on W until P's window, then announces a wait (the
 * blocked hand-off looks at the calendar) and waits until X has run or
 * A has given up on it. Not a timeout of its own: W, freed, would run X,
 * and a race between two 10 s waits would let a stranded X pass. */
static int rr_b_op(accel_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    atomic_store(&rr_b_started, 1);
    if (!rr_wait(&rr_b_go, 1))
        return 0;
    if (accel_blocking_begin() != ACCEL_OK)
        return 0;
    atomic_store(&rr_b_blocked, 1);
    for (int i = 0; i < 300000 && !atomic_load(&rr_x_ran) &&
                    !atomic_load(&rr_a_gave_up);
         i++)
        tu_nap_us(100);
    accel_blocking_end();
    return 0;
}

static accel_session *rr_open(const char *id, uint32_t priority)
{
    accel_session_config c = {.id = id, .queue_depth = 16,
                              .priority = priority,
                              .backend = ACCEL_BACKEND_CPU};
    accel_session *s = NULL;
    cr_assert_eq(accel_session_open(rr_rt, &c, &s), ACCEL_OK);
    return s;
}

/* Two workers, both parked; A and X share a bucket (weight 1, both
 * idle); the third session (weight 1000) lies in an earlier one. */
static void rr_start(const char *third, accel_session **sa,
                     accel_session **s3)
{
    rr_rt = tu_runtime_nodetect(2);
    cr_assert_not_null(rr_rt);
    *sa = rr_open("repair-a", 1);
    atomic_store(&rr_sx, rr_open("repair-x", 1));
    *s3 = rr_open(third, 1000);
    unit_step("both workers parked");
    for (int i = 0; i < 100000 && (uint32_t)atomic_load(&rr_rt->idle_workers) != 2; i++)
        tu_nap_us(100);
    cr_assert_eq((uint32_t)atomic_load(&rr_rt->idle_workers), 2);
}

/* Waits (up to 30 s) until every record in recs has its done. */
static void rr_wait_done(tu_rec *const *recs, int n)
{
    for (int i = 0; i < 300000; i++) {
        int k = 0;
        while (k < n && atomic_load(&recs[k]->done_calls) >= 1)
            k++;
        if (k == n)
            return;
        tu_nap_us(100);
    }
}

/* A's and the third op's completion, the staging and the verdict, then
 * X's completion and the teardown. */
static void rr_finish(accel_session *sa, accel_session *s3,
                      const tu_rec *a_rec, const tu_rec *rec3,
                      const char *name3, const char *unstaged,
                      const char *stranded)
{
    cr_assert_eq(atomic_load(&a_rec->done_calls), 1, "A never completed");
    cr_assert_eq(atomic_load(&rec3->done_calls), 1, "%s never completed",
                 name3);
    cr_assert_eq(atomic_load(&rr_state), 3,
                 "P's windows did not run as staged (state %d)",
                 atomic_load(&rr_state));
    cr_assert(atomic_load(&rr_staged), "%s", unstaged);
    cr_assert_not(atomic_load(&rr_a_gave_up), "%s", stranded);
    cr_assert(rr_wait(&rr_x_rec.done_calls, 1), "X never completed");
    accel_session_release(atomic_load(&rr_sx));
    accel_session_release(sa);
    accel_session_release(s3);
    cr_assert_eq(accel_runtime_destroy(rr_rt), ACCEL_OK);
}

Test(runtime_repair, a_worker_that_parks_in_a_repair_window_is_woken,
     .timeout = 120)
{
    accel_session *sa, *sd;
    rr_start("repair-d", &sa, &sd);
    atomic_store(&accel__cal_window_hook, rr_cal_window);
    unit_step("P's pick of A held before its clear");
    tu_rec a_rec = {0}, d_rec = {0};
    accel_op a = {rr_a_op, tu_rec_done, &a_rec};
    cr_assert_eq(accel_submit(sa, &a, ACCEL_NO_WAIT), ACCEL_OK);
    cr_assert(rr_wait(&rr_state, 1), "no pick emptied A's bucket");
    unit_step("W runs D and stops in its park window");
    atomic_store(&rr_hold, 1);
    atomic_store(&accel__park_window_hook, rr_park_window);
    accel_op d = tu_rec_op(&d_rec);
    cr_assert_eq(accel_submit(sd, &d, ACCEL_NO_WAIT), ACCEL_OK);
    cr_assert(rr_wait(&rr_held, 1), "W did not reach its park window");
    unit_step("X submitted in P's window, A waits for it");
    atomic_store(&rr_go, 1);
    rr_wait_done((tu_rec *const[]){&a_rec}, 1);
    atomic_store(&accel__cal_window_hook, NULL);
    atomic_store(&accel__park_window_hook, NULL);
    atomic_store(&rr_release, 1);
    rr_finish(sa, sd, &a_rec, &d_rec, "D",
              "W's look found X or W never counted its park: nothing was "
              "staged",
              "X sat queued for 10 s beside a parked worker: the pick "
              "that set its bit back woke no one");
}

/* The same window, with W blocked instead of parked: W's op announces a
 * wait between P's clear and its set back, and the blocked hand-off's
 * look at the calendar misses X; X's own wake came before W counted
 * itself blocked. The set back's wake must then start an extra worker
 * for X (the wake path's starved-worker look), or X waits for W's wait,
 * which waits for X. */
Test(runtime_repair, a_worker_that_blocks_in_a_repair_window_is_replaced,
     .timeout = 120)
{
    rr_mode = 1;
    accel_session *sa, *sb;
    rr_start("repair-b", &sa, &sb);
    unit_step("W runs B's op");
    tu_rec a_rec = {0}, b_rec = {0};
    accel_op b = {rr_b_op, tu_rec_done, &b_rec};
    cr_assert_eq(accel_submit(sb, &b, ACCEL_NO_WAIT), ACCEL_OK);
    cr_assert(rr_wait(&rr_b_started, 1), "B's op never started");
    unit_step("P's pick of A held before its clear, X submitted, W blocks");
    atomic_store(&accel__cal_window_hook, rr_cal_window);
    atomic_store(&rr_go, 1);
    accel_op a = {rr_a_op, tu_rec_done, &a_rec};
    cr_assert_eq(accel_submit(sa, &a, ACCEL_NO_WAIT), ACCEL_OK);
    rr_wait_done((tu_rec *const[]){&a_rec, &b_rec}, 2);
    atomic_store(&accel__cal_window_hook, NULL);
    atomic_store(&rr_b_go, 1);
    rr_finish(sa, sb, &a_rec, &b_rec, "B",
              "W did not count itself blocked before X ran: nothing was "
              "staged",
              "X sat queued for 10 s beside a blocked worker: the pick "
              "that set its bit back started no one in its place");
}
