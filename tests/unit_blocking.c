/*
 * Ops that block (accel.h, "Ops that block"): a worker blocked inside an
 * op hands its place on, so other sessions' ops still run.
 *
 * No timing thresholds: each test asserts an order (the quick op completed
 * while every sleeper was still inside its sleep; the nested chain
 * completed at all) or a count (no extra worker for CPU-bound ops; waits
 * of 2.5 monitor ticks of 100 ms counted, which needs the monitor on
 * time within 12 ms, not any speed of the machine). A watchdog names the
 * step a hang is stuck in and fails the test fast.
 *
 * Promises: 6, 7
 */
#define _GNU_SOURCE /* nanosleep, CLOCK_THREAD_CPUTIME_ID */
#include <criterion/criterion.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <accel/accel.h>
#include <accel/host.h>

#include "clock.h"
#include "compensate.h"
#include "futex.h"
#include "runtime_types.h"
#include "core_util.h"
#include "unit_watchdog.h"

/* Each wait names its step (unit_watchdog.h): a hang fails fast and says
 * where. */
UNIT_WATCHDOG_SUITE(blocking);

static accel_runtime *make_rt(unsigned workers, unsigned extra,
                              uint64_t detect_ns)
{
    accel_runtime_config c = {.workers = workers,
                              .struct_size = sizeof(c),
                              .max_extra_workers = extra,
                              .block_detect_ns = detect_ns};
    accel_runtime *rt = NULL;
    cr_assert_eq(accel_runtime_create(&c, &rt), ACCEL_OK);
    return rt;
}

static accel_session *open_s(accel_runtime *rt, int i)
{
    char id[32];
    snprintf(id, sizeof(id), "b%d", i);
    accel_session_config c = {.id = id};
    accel_session *s = NULL;
    cr_assert_eq(accel_session_open(rt, &c, &s), ACCEL_OK);
    return s;
}

static accel_runtime_stats stats_of(accel_runtime *rt)
{
    accel_runtime_stats st;
    cr_assert_eq(accel_runtime_get_stats(rt, &st, sizeof(st)), ACCEL_OK);
    return st;
}

/* ---- nested submit_wait across sessions, one worker */

#define DEPTH 16
static accel_session *chain[DEPTH + 1];

static int nested(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    intptr_t level = (intptr_t)arg;
    if (level == DEPTH)
        return 1000 + (int)level;
    int r = accel_submit_wait(chain[level + 1], nested, (void *)(level + 1),
                              ACCEL_FOREVER);
    return r; /* the innermost result, passed up */
}

Test(blocking, nested_submit_wait_depth_16_one_worker, .timeout = 60)
{
    accel_runtime *rt = make_rt(1, 0, 0); /* the default cap */
    for (int i = 0; i <= DEPTH; i++)
        chain[i] = open_s(rt, i);
    unit_step("the chain of 16 nested submit_wait");
    cr_expect_eq(accel_submit_wait(chain[0], nested, (void *)0, ACCEL_FOREVER),
                 1000 + DEPTH);
    /* Again, from inside: the extras of the first chain have retired or
     * are reused. */
    unit_step("a second chain");
    cr_expect_eq(accel_submit_wait(chain[0], nested, (void *)0, ACCEL_FOREVER),
                 1000 + DEPTH);
    accel_runtime_stats st = stats_of(rt);
    cr_expect_eq(st.blocked, 0, "no worker blocked after the chains");
    cr_expect_geq(st.extra_started, 1);
    cr_expect_leq(st.extra_workers, 64, "the cap holds");
    /* Each wait counted itself at once: the monitor, which would find an
     * uncounted one 1-2 ms in and hide the miss, found none. */
    cr_expect_eq(st.blocked_detected, 0, "the monitor found %llu waits",
                 (unsigned long long)st.blocked_detected);
    unit_step("the idle extras retire");
    while (stats_of(rt).extra_workers != 0)
        tu_nap_us(1000);
    unit_step("destroy");
    for (int i = 0; i <= DEPTH; i++)
        accel_session_release(chain[i]);
    cr_expect_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* The cap: with one extra allowed, announced sleepers on 4 sessions run two
 * at a time (the base worker and the one extra), never more. */
static _Atomic int in_nap, most_in_nap;

static int capped_nap(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    accel_blocking_begin();
    int n = atomic_fetch_add(&in_nap, 1) + 1;
    int m = atomic_load(&most_in_nap);
    while (n > m && !atomic_compare_exchange_weak(&most_in_nap, &m, n))
        ;
    tu_nap_us(100000);
    atomic_fetch_sub(&in_nap, 1);
    accel_blocking_end();
    return 0;
}

Test(blocking, extra_workers_respect_the_cap, .timeout = 60)
{
    accel_runtime *rt = make_rt(1, 1, UINT64_C(60000000000));
    accel_session *s[4];
    for (int i = 0; i < 4; i++)
        s[i] = open_s(rt, i);
    unit_step("4 announced naps, cap 1");
    for (int i = 0; i < 4; i++) {
        accel_op op = {.fn = capped_nap};
        cr_assert_eq(accel_submit(s[i], &op, ACCEL_FOREVER), ACCEL_OK);
    }
    for (int i = 0; i < 4; i++)
        cr_assert_eq(accel_session_sync(s[i], ACCEL_FOREVER), ACCEL_OK);
    cr_expect_eq(atomic_load(&most_in_nap), 2,
                 "base + 1 extra at once, saw %d", atomic_load(&most_in_nap));
    accel_runtime_stats st = stats_of(rt);
    cr_expect_leq(st.extra_workers, 1);
    unit_step("the idle extra retires");
    while (stats_of(rt).extra_workers != 0)
        tu_nap_us(1000);
    for (int i = 0; i < 4; i++)
        accel_session_release(s[i]);
    cr_expect_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

static int quick(accel_ctx *ctx, void *arg);

/* ---- an extra only for a blocked worker no extra covers yet */

static _Atomic int ow_a1_started, ow_b_started, ow_b_stop;
static _Atomic int ow_a2_started, ow_a2_go, ow_a2_blocked;
static tu_latch ow_gate1, ow_gate2;

static int ow_a1(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    atomic_store(&ow_a1_started, 1);
    accel_blocking_begin();
    tu_latch_wait(&ow_gate1);
    accel_blocking_end();
    return 0;
}

/* Holds its worker on a CPU (never counted blocked) until told. */
static int ow_spin(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    atomic_store(&ow_b_started, 1);
    while (!atomic_load(&ow_b_stop))
        sched_yield();
    return 0;
}

static int ow_a2(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    atomic_store(&ow_a2_started, 1);
    while (!atomic_load(&ow_a2_go))
        sched_yield();
    accel_blocking_begin();
    atomic_store(&ow_a2_blocked, 1);
    tu_latch_wait(&ow_gate2);
    accel_blocking_end();
    return 0;
}

/* One worker, cap 4, the monitor off (waits are announced). A1 waits:
 * the next submit (B, a spinning op) starts extra X for it. A1 ends; X
 * stays busy in B. A2 then waits with C queued: X already covers one
 * blocked worker (extras 1, blocked 1), so no second extra starts; C
 * waits for B's end. An extra started for it would run C beside B: two
 * ops computing at once on a runtime of one worker. */
Test(blocking, no_extra_beyond_the_blocked_workers, .timeout = 60)
{
    atomic_store(&ow_a1_started, 0);
    atomic_store(&ow_b_started, 0);
    atomic_store(&ow_b_stop, 0);
    atomic_store(&ow_a2_started, 0);
    atomic_store(&ow_a2_go, 0);
    atomic_store(&ow_a2_blocked, 0);
    ow_gate1 = (tu_latch){0};
    ow_gate2 = (tu_latch){0};
    accel_runtime *rt = make_rt(1, 4, UINT64_C(60000000000));
    accel_session *a = open_s(rt, 0), *b = open_s(rt, 1), *c = open_s(rt, 2);
    accel_op a1 = {.fn = ow_a1}, spin = {.fn = ow_spin}, a2 = {.fn = ow_a2};
    accel_op quick_op = {.fn = quick};
    unit_step("A1 starts and waits, announced");
    cr_assert_eq(accel_submit(a, &a1, ACCEL_FOREVER), ACCEL_OK);
    tu_wait_at_least(&ow_a1_started, 1);
    unit_step("B runs on an extra started for A1's wait");
    cr_assert_eq(accel_submit(b, &spin, ACCEL_FOREVER), ACCEL_OK);
    tu_wait_at_least(&ow_b_started, 1);
    cr_assert_eq(stats_of(rt).extra_started, 1);
    unit_step("A1 ends");
    tu_latch_open(&ow_gate1);
    cr_assert_eq(accel_session_sync(a, ACCEL_FOREVER), ACCEL_OK);
    unit_step("A2 starts on the base worker");
    cr_assert_eq(accel_submit(a, &a2, ACCEL_FOREVER), ACCEL_OK);
    tu_wait_at_least(&ow_a2_started, 1);
    cr_assert_eq(accel_submit(c, &quick_op, ACCEL_FOREVER), ACCEL_OK);
    unit_step("A2 waits, announced, with C queued");
    atomic_store(&ow_a2_go, 1);
    tu_wait_at_least(&ow_a2_blocked, 1);
    accel_runtime_stats st = stats_of(rt);
    cr_expect_eq(st.extra_started, 1,
                 "an extra started for A2's wait though X covered it "
                 "(%llu started, %u running)",
                 (unsigned long long)st.extra_started, st.extra_workers);
    unit_step("B, A2 and C end");
    atomic_store(&ow_b_stop, 1);
    tu_latch_open(&ow_gate2);
    cr_assert_eq(accel_session_sync(a, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_session_sync(b, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_session_sync(c, ACCEL_FOREVER), ACCEL_OK);
    accel_session_release(a);
    accel_session_release(b);
    accel_session_release(c);
    cr_expect_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---- 16 sessions blocked in an op, a 17th session's op runs */

#define SLEEPERS 16
static _Atomic int slept_started, slept_finished;
static _Atomic int started_when_first_finished;
static _Atomic int quick_saw_finished = -1;
static _Atomic int quick_saw_started = -1;

static void sleep_1s(void)
{
    struct timespec ts = {1, 0};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static int sleeper(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    bool announce = arg != NULL;
    atomic_fetch_add(&slept_started, 1);
    if (announce)
        cr_assert_eq(accel_blocking_begin(), ACCEL_OK);
    sleep_1s();
    if (announce)
        cr_assert_eq(accel_blocking_end(), ACCEL_OK);
    int started = atomic_load(&slept_started);
    int expected = -1;
    atomic_compare_exchange_strong(&started_when_first_finished, &expected,
                                   started);
    atomic_fetch_add(&slept_finished, 1);
    return 0;
}

static int quick(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    atomic_store(&quick_saw_finished, atomic_load(&slept_finished));
    atomic_store(&quick_saw_started, atomic_load(&slept_started));
    return 7;
}

static void seventeenth(bool announce, uint64_t detect_ns)
{
    atomic_store(&slept_started, 0);
    atomic_store(&slept_finished, 0);
    atomic_store(&started_when_first_finished, -1);
    atomic_store(&quick_saw_finished, -1);
    accel_runtime *rt = make_rt(1, 32, detect_ns);
    accel_session *s[SLEEPERS + 1];
    for (int i = 0; i <= SLEEPERS; i++)
        s[i] = open_s(rt, i);
    unit_step("submitting the 16 sleepers");
    for (int i = 0; i < SLEEPERS; i++) {
        accel_op op = {.fn = sleeper, .arg = announce ? (void *)1 : NULL};
        cr_assert_eq(accel_submit(s[i], &op, ACCEL_FOREVER), ACCEL_OK);
    }
    unit_step("the 17th session's quick op");
    cr_expect_eq(accel_submit_wait(s[SLEEPERS], quick, NULL, ACCEL_FOREVER), 7);
    cr_expect_eq(atomic_load(&quick_saw_finished), 0,
                 "the quick op ran while every sleeper was still asleep "
                 "(saw %d finished)",
                 atomic_load(&quick_saw_finished));
    unit_step("the sleepers' syncs");
    for (int i = 0; i < SLEEPERS; i++)
        cr_expect_eq(accel_session_sync(s[i], ACCEL_FOREVER), ACCEL_OK);
    cr_expect_eq(atomic_load(&started_when_first_finished), SLEEPERS,
                 "all 16 were inside their sleeps together (%d)",
                 atomic_load(&started_when_first_finished));
    accel_runtime_stats st = stats_of(rt);
    cr_expect_geq(st.extra_started, SLEEPERS - 1);
    if (announce)
        cr_expect_eq(st.blocked_detected, 0,
                     "the announcement compensated, not the monitor");
    unit_step("destroy");
    for (int i = 0; i <= SLEEPERS; i++)
        accel_session_release(s[i]);
    cr_expect_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(blocking, sixteen_sleepers_detected_seventeenth_runs, .timeout = 60)
{
    seventeenth(false, 0);
}

/* The monitor's threshold is far past the test: only the announcement can help. */
Test(blocking, sixteen_sleepers_announced_seventeenth_runs, .timeout = 60)
{
    seventeenth(true, UINT64_C(60000000000));
}

/* Runs `per` ops of fn on each of n new sessions of rt (round after
 * round), waits for them, releases the sessions; returns rt's stats
 * after the ops. */
static accel_runtime_stats run_each(accel_runtime *rt, int n, int per,
                                    accel_op_fn fn)
{
    accel_session *s[16];
    cr_assert(n <= 16);
    for (int i = 0; i < n; i++)
        s[i] = open_s(rt, i);
    for (int r = 0; r < per; r++)
        for (int i = 0; i < n; i++) {
            accel_op op = {.fn = fn};
            cr_assert_eq(accel_submit(s[i], &op, ACCEL_FOREVER), ACCEL_OK);
        }
    for (int i = 0; i < n; i++)
        cr_assert_eq(accel_session_sync(s[i], ACCEL_FOREVER), ACCEL_OK);
    accel_runtime_stats st = stats_of(rt);
    for (int i = 0; i < n; i++)
        accel_session_release(s[i]);
    return st;
}

/* ---- an unannounced wait is counted one tick after the monitor finds it */

#define TICK_NS UINT64_C(100000000) /* block_detect_ns: the monitor's tick */
#define TICK_SESSIONS 4
#define TICK_OPS 8

static int sleep_two_and_a_half_ticks(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    struct timespec ts = {0, (long)(TICK_NS * 5 / 2)};
    while (nanosleep(&ts, &ts) != 0)
        ;
    return 0;
}

/* Waits of 2.5 ticks, while other sessions' waits are queued all along
 * (one worker, one extra at most): the monitor samples each visit at the
 * first tick that finds it (a tick in at the latest) and counts it at
 * the next (2 ticks), so all but the last (nothing queued behind them)
 * are counted. Planted, each of these
 * counts about half of them or fewer: sampling only at the second tick
 * that finds a visit (counted 2 to 3 ticks in), and a worker whose detection
 * the monitor drops for its new visit not sampled at that same tick. Not
 * a bound on how fast anything runs: the tick is 100 ms, and a visit is
 * missed only if the monitor is late by over a quarter of a tick at each
 * of its two looks (25 ms). */
Test(blocking, a_wait_is_detected_a_tick_after_it_is_found, .timeout = 60)
{
    /* each wait the monitor's to find: none presumed from the last */
    atomic_store(&accel__compensate_presume_off, true);
    accel_runtime *rt = make_rt(1, 1, TICK_NS);
    unit_step("4 sessions x 8 waits of 2.5 ticks, one worker and an extra");
    accel_runtime_stats st =
        run_each(rt, TICK_SESSIONS, TICK_OPS, sleep_two_and_a_half_ticks);
    cr_expect_geq(st.blocked_detected * 4, st.visits * 3,
                  "%llu of %llu visits, each a wait of 2.5 ticks, were "
                  "counted blocked (at least 3/4 must be)",
                  (unsigned long long)st.blocked_detected,
                  (unsigned long long)st.visits);
    unit_step("destroy");
    cr_expect_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---- CPU-bound long ops start no extra worker */

static _Atomic uint64_t cpu_sink;

static int cpu_20ms(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    struct timespec t0, t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    volatile uint64_t x = 0;
    do {
        for (int i = 0; i < 10000; i++)
            x += (uint64_t)i;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) <
             20000000L);
    atomic_fetch_add(&cpu_sink, x); /* the loop's work is used */
    return 0;
}

Test(blocking, cpu_bound_20ms_ops_start_no_extra_worker, .timeout = 120)
{
    accel_runtime *rt = make_rt(1, 32, 0);
    unit_step("16 sessions x 2 CPU-bound ops of 20 ms");
    accel_runtime_stats st = run_each(rt, 16, 2, cpu_20ms);
    cr_expect_eq(st.extra_started, 0, "CPU-bound ops started %llu extras",
                 (unsigned long long)st.extra_started);
    cr_expect_eq(st.blocked_detected, 0);
    cr_expect_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* The same on an oversubscribed machine (a co-tenant): spinning threads
 * outside accel, two per CPU, leave the worker well under half of the
 * wall time on a CPU, so its clock alone says "idle"; it is runnable all
 * along, and must not be counted blocked. */
static _Atomic int spin_stop;

static void *cotenant_spin(void *arg)
{
    (void)arg;
    volatile uint64_t x = 0;
    while (!atomic_load_explicit(&spin_stop, memory_order_relaxed))
        x++;
    return NULL;
}

Test(blocking, cpu_bound_ops_beside_a_cotenant_are_not_blocked, .timeout = 120)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    pthread_t spin[32];
    int nspin = ncpu > 0 && ncpu < 16 ? (int)ncpu * 2 : 32;
    atomic_store(&spin_stop, 0);
    for (int i = 0; i < nspin; i++)
        cr_assert_eq(pthread_create(&spin[i], NULL, cotenant_spin, NULL), 0);
    accel_runtime *rt = make_rt(1, 32, 0);
    unit_step("8 sessions x 1 CPU-bound op of 20 ms CPU beside the spinners");
    accel_runtime_stats st = run_each(rt, 8, 1, cpu_20ms);
    atomic_store(&spin_stop, 1);
    for (int i = 0; i < nspin; i++)
        pthread_join(spin[i], NULL);
    cr_expect_eq(st.blocked_detected, 0,
                 "a runnable CPU-bound worker was counted blocked %llu times",
                 (unsigned long long)st.blocked_detected);
    cr_expect_eq(st.extra_started, 0, "CPU-bound ops started %llu extras",
                 (unsigned long long)st.extra_started);
    cr_expect_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---- bad input */

static _Atomic int end_rc = 1, begin_rc = 1, end2_rc = 1;

static int unbalanced(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    atomic_store(&end_rc, accel_blocking_end()); /* no begin: EINVAL */
    atomic_store(&begin_rc, accel_blocking_begin());
    atomic_store(&end2_rc, accel_blocking_end());
    accel_blocking_begin(); /* left open: the visit's end closes it */
    return 0;
}

Test(blocking, announce_bad_input_changes_nothing, .timeout = 60)
{
    unit_step("an op with unbalanced announcements");
    cr_expect_eq(accel_blocking_end(), ACCEL_OK, "outside an op: nothing");
    cr_expect_eq(accel_blocking_begin(), ACCEL_OK);
    accel_runtime_config bad = {.struct_size = sizeof(bad),
                                .max_extra_workers = 4097};
    accel_runtime *rt = NULL;
    cr_expect_eq(accel_runtime_create(&bad, &rt), ACCEL_EINVAL);
    rt = make_rt(1, 0, 0);
    accel_session *s = open_s(rt, 0);
    cr_expect_eq(accel_submit_wait(s, unbalanced, NULL, ACCEL_FOREVER), 0);
    cr_expect_eq(atomic_load(&end_rc), ACCEL_EINVAL);
    cr_expect_eq(atomic_load(&begin_rc), ACCEL_OK);
    cr_expect_eq(atomic_load(&end2_rc), ACCEL_OK);
    /* the announcement left open is closed when the visit ends (after the done
     * that let submit_wait return) */
    while (stats_of(rt).blocked != 0)
        tu_nap_us(1000);
    /* ... and the thread's count with it: a fresh op starts balanced */
    atomic_store(&end_rc, 1);
    cr_expect_eq(accel_submit_wait(s, unbalanced, NULL, ACCEL_FOREVER), 0);
    cr_expect_eq(atomic_load(&end_rc), ACCEL_EINVAL);
    accel_session_release(s);
    cr_expect_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---- sync of another session from inside an op, one worker */

static accel_session *sync_target;
static _Atomic int target_ran;

static int target_op(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    atomic_fetch_add(&target_ran, 1);
    return 0;
}

static int syncing_op(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    accel_op op = {.fn = target_op};
    if (accel_submit(sync_target, &op, ACCEL_FOREVER) != ACCEL_OK)
        return 1;
    return accel_session_sync(sync_target, ACCEL_FOREVER) == ACCEL_OK &&
                   atomic_load(&target_ran) == 1
               ? 0
               : 2;
}

Test(blocking, sync_of_another_session_inside_an_op_one_worker,
     .timeout = 60)
{
    accel_runtime *rt = make_rt(1, 0, 0);
    accel_session *a = open_s(rt, 0);
    sync_target = open_s(rt, 1);
    unit_step("a's op syncs b");
    cr_expect_eq(accel_submit_wait(a, syncing_op, NULL, ACCEL_FOREVER), 0);
    unit_step("destroy");
    accel_session_release(a);
    accel_session_release(sync_target);
    cr_expect_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---- host-driven: a blocked worker's place goes to a worker the host adds */

#include <semaphore.h>

static accel_runtime *hrt;
static sem_t lane_sem, grow_sem;
static _Atomic int h_stop, b_ran, a_done, grow_calls;
static _Thread_local unsigned my_index;

static void h_wake(void *arg, unsigned lane)
{
    (void)arg;
    (void)lane;
    sem_post(&lane_sem);
}

static void h_grow(void *arg)
{
    (void)arg;
    atomic_fetch_add(&grow_calls, 1);
    sem_post(&grow_sem);
}

static int h_a(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    if (accel_host_blocking_begin(hrt, my_index) != ACCEL_OK)
        return 1;
    while (!atomic_load(&b_ran))
        tu_nap_us(200);
    if (accel_host_blocking_end(hrt, my_index) != ACCEL_OK)
        return 2;
    atomic_store(&a_done, 1);
    return 0;
}

/* b's op: it ran (and wakes h_a_unannounced, which sleeps on b_cv). */
static pthread_mutex_t b_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t b_cv = PTHREAD_COND_INITIALIZER;

static int h_b(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    pthread_mutex_lock(&b_mu);
    atomic_store(&b_ran, 1);
    pthread_cond_broadcast(&b_cv);
    pthread_mutex_unlock(&b_mu);
    return 0;
}

/* One visit of worker w, if any: true if it ran one. */
static bool h_visit(unsigned w, bool stop)
{
    accel_op ops[ACCEL_HOST_VISIT_MAX];
    int st[ACCEL_HOST_VISIT_MAX];
    unsigned n;
    if (accel_host_visit_begin(hrt, w, ops, ACCEL_HOST_VISIT_MAX, &n) != ACCEL_OK)
        return false;
    my_index = w;
    for (unsigned i = 0; i < n; i++)
        st[i] = ops[i].fn(NULL, ops[i].arg);
    if (stop)
        accel_host_visit_end_stop(hrt, w, st, n);
    else
        accel_host_visit_end(hrt, w, st, n);
    return true;
}

static void *h_driver(void *arg)
{
    (void)arg;
    while (!atomic_load(&h_stop)) {
        if (h_visit(0, false))
            continue;
        accel_host_idle_begin(hrt, 0);
        if (h_visit(0, false)) {
            accel_host_idle_end(hrt, 0, true);
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        sem_timedwait(&lane_sem, &ts);
        accel_host_idle_end(hrt, 0, false);
    }
    return NULL;
}

static _Atomic int extra_index = -1, leave_rc = 1;

static void *h_grower(void *arg)
{
    (void)arg;
    while (sem_wait(&grow_sem) != 0)
        ;
    if (atomic_load(&h_stop))
        return NULL;
    unsigned w;
    if (accel_host_worker_add(hrt, &w) != ACCEL_OK)
        return NULL;
    atomic_store(&extra_index, (int)w);
    for (;;) {
        if (h_visit(w, true)) {
            int rc = accel_host_worker_leave(hrt, w, ACCEL_HOST_LEAVE_IF_SURPLUS);
            if (rc == ACCEL_OK) {
                atomic_store(&leave_rc, rc);
                return NULL;
            }
            continue;
        }
        if (atomic_load(&a_done)) { /* idle, nothing blocked: leave */
            atomic_store(&leave_rc, accel_host_worker_leave(hrt, w, 0));
            return NULL;
        }
        tu_nap_us(200);
    }
}

Test(blocking, host_worker_blocked_gets_an_added_worker, .timeout = 60)
{
    sem_init(&lane_sem, 0, 0);
    sem_init(&grow_sem, 0, 0);
    accel_runtime_config c = {.workers = 1,
                              .struct_size = sizeof(c),
                              .flags = ACCEL_RUNTIME_HOST_WORKERS,
                              .host_wake = h_wake,
                              .host_grow = h_grow};
    cr_assert_eq(accel_runtime_create(&c, &hrt), ACCEL_OK);
    unsigned w;
    cr_expect_eq(accel_host_worker_add(hrt, &w), ACCEL_EAGAIN,
                 "no worker is owed while nothing blocks");
    cr_expect_eq(accel_host_blocking_end(hrt, 0), ACCEL_EINVAL);
    cr_expect_eq(accel_host_worker_leave(hrt, 0, 0), ACCEL_EINVAL,
                 "a base worker never leaves");
    accel_session *a = open_s(hrt, 0), *b = open_s(hrt, 1);
    pthread_t d, g;
    pthread_create(&d, NULL, h_driver, NULL);
    pthread_create(&g, NULL, h_grower, NULL);
    unit_step("a's op blocks on worker 0 until b's op ran");
    accel_op oa = {.fn = h_a}, ob = {.fn = h_b};
    cr_assert_eq(accel_submit(a, &oa, ACCEL_FOREVER), ACCEL_OK);
    while (accel_runtime_get_stats(hrt, &(accel_runtime_stats){0},
                                   sizeof(accel_runtime_stats)) == ACCEL_OK &&
           stats_of(hrt).blocked == 0)
        tu_nap_us(200);
    cr_assert_eq(accel_submit(b, &ob, ACCEL_FOREVER), ACCEL_OK);
    cr_expect_eq(accel_session_sync(a, ACCEL_FOREVER), ACCEL_OK);
    cr_expect_eq(atomic_load(&a_done), 1);
    unit_step("the added worker leaves");
    pthread_join(g, NULL);
    cr_expect_geq(atomic_load(&grow_calls), 1);
    cr_expect_geq(atomic_load(&extra_index), 1);
    cr_expect_eq(atomic_load(&leave_rc), ACCEL_OK);
    accel_runtime_stats st = stats_of(hrt);
    cr_expect_eq(st.blocked, 0);
    cr_expect_eq(st.extra_workers, 0);
    unit_step("stop and destroy");
    atomic_store(&h_stop, 1);
    sem_post(&lane_sem);
    pthread_join(d, NULL);
    accel_session_release(a);
    accel_session_release(b);
    cr_expect_eq(accel_runtime_destroy(hrt), ACCEL_OK);
    sem_destroy(&lane_sem);
    sem_destroy(&grow_sem);
}

/* A wait the host does not announce (a nap on worker 0, no
 * accel_host_blocking_begin): the monitor watches host workers as it
 * watches its own workers, counts worker 0 blocked while b's op waits, and
 * host_grow gets b an added worker. With the monitor not watching host
 * workers, b's op waits for a's, which waits for b's: the watchdog names
 * the step. */
static _Atomic int a_started;

static int h_a_unannounced(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    atomic_store(&a_started, 1);
    /* Asleep until b's op ran, not polling: a poll of short naps spends
     * a few us of CPU per wake, and on a loaded machine that can pass the
     * share of a window below which a host worker counts as off a CPU
     * (compensate.c), so the monitor would rightly see it computing. */
    pthread_mutex_lock(&b_mu);
    while (!atomic_load(&b_ran))
        pthread_cond_wait(&b_cv, &b_mu);
    pthread_mutex_unlock(&b_mu);
    atomic_store(&a_done, 1);
    return 0;
}

Test(blocking, host_worker_unannounced_wait_is_detected, .timeout = 60)
{
    /* the statics of the test above, as a fresh process has them */
    atomic_store(&h_stop, 0);
    atomic_store(&b_ran, 0);
    atomic_store(&a_done, 0);
    atomic_store(&grow_calls, 0);
    atomic_store(&extra_index, -1);
    atomic_store(&leave_rc, 1);
    sem_init(&lane_sem, 0, 0);
    sem_init(&grow_sem, 0, 0);
    accel_runtime_config c = {.workers = 1,
                              .struct_size = sizeof(c),
                              .flags = ACCEL_RUNTIME_HOST_WORKERS,
                              .host_wake = h_wake,
                              .host_grow = h_grow};
    cr_assert_eq(accel_runtime_create(&c, &hrt), ACCEL_OK);
    accel_session *a = open_s(hrt, 0), *b = open_s(hrt, 1);
    pthread_t d, g;
    pthread_create(&d, NULL, h_driver, NULL);
    pthread_create(&g, NULL, h_grower, NULL);
    unit_step("a's op naps on worker 0 (unannounced) until b's op ran");
    accel_op oa = {.fn = h_a_unannounced}, ob = {.fn = h_b};
    cr_assert_eq(accel_submit(a, &oa, ACCEL_FOREVER), ACCEL_OK);
    while (!atomic_load(&a_started)) /* a first: b cannot run before */
        tu_nap_us(200);
    cr_assert_eq(accel_submit(b, &ob, ACCEL_FOREVER), ACCEL_OK);
    cr_expect_eq(accel_session_sync(a, ACCEL_FOREVER), ACCEL_OK);
    cr_expect_eq(atomic_load(&a_done), 1);
    unit_step("the added worker leaves");
    pthread_join(g, NULL);
    cr_expect_geq(atomic_load(&grow_calls), 1);
    cr_expect_geq(atomic_load(&extra_index), 1);
    accel_runtime_stats st = stats_of(hrt);
    cr_expect_geq(st.blocked_detected, 1, "the monitor detected worker 0");
    cr_expect_eq(st.extra_workers, 0);
    unit_step("stop and destroy");
    atomic_store(&h_stop, 1);
    sem_post(&lane_sem);
    pthread_join(d, NULL);
    accel_session_release(a);
    accel_session_release(b);
    cr_expect_eq(accel_runtime_destroy(hrt), ACCEL_OK);
    sem_destroy(&lane_sem);
    sem_destroy(&grow_sem);
}

/* A host visit of several ops, each a nap of 2.5 ticks (unannounced)
 * and then a tick of CPU work, the host bumping the worker's op word as
 * each op starts (accel_host_op_word), while another session's op waits
 * for the worker (no worker is added: host_grow is NULL): the monitor judges
 * each op's nap on a window of its own, from the first tick that finds
 * the op, so each is counted, not only the visit's first. Each op reads
 * blocked_detected before and after its nap, so an op later in a visit
 * is told from the first. Planted (the monitor ignoring the op word:
 * windows per visit, two ticks after a take-back), a later op's nap is
 * judged on a window that holds the CPU work before it and is seldom
 * counted. Not a bound on speed: the tick is 40 ms, and a nap is missed
 * only if the monitor is late by over a quarter of it (10 ms) at one of
 * its two looks. */
#define OPW_TICK_NS UINT64_C(40000000)
#define OPW_OPS 8

static uint64_t *opw_word;
static accel_session *opw_b;
static int opw_detected[OPW_OPS], opw_first[OPW_OPS], opw_next;

static uint64_t blocked_detected_now(void)
{
    accel_runtime_stats st;
    if (accel_runtime_get_stats(hrt, &st, sizeof(st)) != ACCEL_OK)
        return 0;
    return st.blocked_detected;
}

static int opw_nap_then_work(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    int i = opw_next++;
    if (i == 0) { /* b's op waits behind this visit */
        accel_op ob = {.fn = h_b};
        if (accel_submit(opw_b, &ob, ACCEL_FOREVER) != ACCEL_OK)
            return 1;
    }
    uint64_t d0 = blocked_detected_now();
    struct timespec ts = {0, (long)(OPW_TICK_NS * 5 / 2)};
    while (nanosleep(&ts, &ts) != 0)
        ;
    opw_detected[i] = blocked_detected_now() > d0;
    struct timespec t0, t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    volatile uint64_t x = 0;
    do {
        for (int k = 0; k < 10000; k++)
            x += (uint64_t)k;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    } while ((uint64_t)((t.tv_sec - t0.tv_sec) * 1000000000L +
                        (t.tv_nsec - t0.tv_nsec)) < OPW_TICK_NS);
    atomic_fetch_add(&cpu_sink, x); /* the loop's work is used */
    return 0;
}

Test(blocking, host_ops_of_one_visit_are_judged_each_on_its_own,
     .timeout = 60)
{
    accel_runtime_config c = {.workers = 1,
                              .struct_size = sizeof(c),
                              .flags = ACCEL_RUNTIME_HOST_WORKERS,
                              .block_detect_ns = OPW_TICK_NS,
                              /* a visit holds all of a's ops */
                              .quantum_ns = UINT64_C(60000000000),
                              .host_wake = h_wake};
    atomic_store(&b_ran, 0); /* as a fresh process has it */
    /* each nap the monitor's to find: no visit presumed from the last */
    atomic_store(&accel__compensate_presume_off, true);
    cr_assert_eq(accel_runtime_create(&c, &hrt), ACCEL_OK);
    opw_word = accel_host_op_word(hrt, 0);
    cr_assert(opw_word != NULL);
    cr_expect_eq(accel_host_op_word(hrt, 1 + 4096), NULL);
    cr_expect_eq(accel_host_op_word(NULL, 0), NULL);
    accel_session *a = open_s(hrt, 0), *b = open_s(hrt, 1);
    opw_b = b;
    unit_step("queue a's naps (the first queues b's op)");
    for (int i = 0; i < OPW_OPS; i++) {
        accel_op op = {.fn = opw_nap_then_work};
        cr_assert_eq(accel_submit(a, &op, ACCEL_FOREVER), ACCEL_OK);
    }
    unit_step("worker 0 runs a's visits, then b's");
    accel_op ops[ACCEL_HOST_VISIT_MAX];
    int st[ACCEL_HOST_VISIT_MAX];
    unsigned n;
    int rc;
    while ((!atomic_load(&b_ran) || opw_next < OPW_OPS) &&
           (rc = accel_host_visit_begin(hrt, 0, ops, ACCEL_HOST_VISIT_MAX,
                                        &n)) == ACCEL_OK) {
        for (unsigned i = 0; i < n; i++) {
            if (ops[i].fn == opw_nap_then_work)
                opw_first[opw_next] = i == 0;
            /* relaxed: the monitor's view; only this thread writes it */
            __atomic_add_fetch(opw_word, 1, __ATOMIC_RELAXED);
            st[i] = ops[i].fn(NULL, ops[i].arg);
        }
        cr_assert_eq(accel_host_visit_end(hrt, 0, st, n), ACCEL_OK);
    }
    cr_assert_eq(opw_next, OPW_OPS, "rc %d", rc);
    cr_assert_eq(atomic_load(&b_ran), 1);
    int later = 0, later_detected = 0;
    for (int i = 0; i < OPW_OPS; i++)
        if (!opw_first[i]) {
            later++;
            later_detected += opw_detected[i];
        }
    cr_assert_geq(later, OPW_OPS / 2, "%d of %d ops began a visit of their "
                  "own: the test needs visits of several ops", OPW_OPS - later,
                  OPW_OPS);
    cr_expect_geq(later_detected * 4, later * 3,
                  "%d of %d naps later in a visit were counted blocked (at "
                  "least 3/4 must be)", later_detected, later);
    unit_step("destroy");
    accel_session_release(a);
    accel_session_release(b);
    cr_expect_eq(accel_runtime_destroy(hrt), ACCEL_OK);
}

/* A host worker that waits (a nap of 2.5 ticks, unannounced) while nothing
 * is queued is counted when no general-lane worker is parked: a host's
 * submitter runs an idle session's op itself and a session in a visit is
 * not queued, so a busy host's queue is often empty at a tick, and the
 * next submit that finds no worker parked is owed the waiting worker's place
 * at once. With a second worker parked (idle-announced) it is not counted:
 * that worker takes what comes. Planted (counted only while work is
 * queued), the first nap is not counted. */
static int opw_nap_only(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    struct timespec ts = {0, (long)(OPW_TICK_NS * 5 / 2)};
    while (nanosleep(&ts, &ts) != 0)
        ;
    return 0;
}

/* Worker 0 runs one visit of a's one op; the stats' blocked_detected after.
 * repark: worker 1, parked, takes the wake the submit sent it and parks
 * again once worker 0 has begun (parked, unclaimed). */
static uint64_t nap_on_slot_0(accel_session *a, bool repark)
{
    accel_op op = {.fn = opw_nap_only}, ops[ACCEL_HOST_VISIT_MAX];
    int st[ACCEL_HOST_VISIT_MAX];
    unsigned n;
    cr_assert_eq(accel_submit(a, &op, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_host_visit_begin(hrt, 0, ops, ACCEL_HOST_VISIT_MAX, &n),
                 ACCEL_OK);
    cr_assert_eq(n, 1);
    if (repark) {
        cr_assert_eq(accel_host_idle_end(hrt, 1, false), ACCEL_OK);
        cr_assert_eq(accel_host_idle_begin(hrt, 1), ACCEL_OK);
    }
    __atomic_add_fetch(accel_host_op_word(hrt, 0), 1, __ATOMIC_RELAXED);
    st[0] = ops[0].fn(NULL, ops[0].arg);
    uint64_t d = blocked_detected_now();
    cr_assert_eq(accel_host_visit_end(hrt, 0, st, n), ACCEL_OK);
    return d;
}

Test(blocking, host_worker_waiting_with_none_parked_is_detected_unqueued,
     .timeout = 60)
{
    accel_runtime_config c = {.workers = 2,
                              .struct_size = sizeof(c),
                              .flags = ACCEL_RUNTIME_HOST_WORKERS,
                              .block_detect_ns = OPW_TICK_NS,
                              .host_wake = h_wake};
    cr_assert_eq(accel_runtime_create(&c, &hrt), ACCEL_OK);
    accel_session *a = open_s(hrt, 0);
    unit_step("worker 1 parked: worker 0's nap, nothing queued");
    cr_assert_eq(accel_host_idle_begin(hrt, 1), ACCEL_OK);
    cr_expect_eq(nap_on_slot_0(a, true), 0,
                 "counted blocked while a general worker was parked");
    unit_step("no worker parked: worker 0's nap, nothing queued");
    cr_assert_eq(accel_host_idle_end(hrt, 1, false), ACCEL_OK);
    cr_expect_geq(nap_on_slot_0(a, false), 1,
                  "not counted blocked with no worker parked (nothing queued)");
    unit_step("destroy");
    accel_session_release(a);
    cr_expect_eq(accel_runtime_destroy(hrt), ACCEL_OK);
}

/* A host worker off its CPU while the host's CPUs are all busy (host_cpus
 * set) waits for one of them, as a goroutine waits for a P, and is not
 * counted: an extra worker could not run either. The process's CPU clock
 * comes from the test hook: busy (host_cpus CPUs' worth of the wall
 * time), then idle (flat); then the real clock, with nothing else of
 * this process running. Only while a CPU sits idle is the nap counted.
 * Planted (the monitor not asking host_saturated), the busy nap is
 * counted. */
static _Atomic uint64_t proc_busy_cpus;

static uint64_t proc_cpu_busy(void)
{
    return accel__now_ns() * atomic_load(&proc_busy_cpus);
}

static uint64_t proc_cpu_idle(void) { return 12345; }

Test(blocking, host_worker_waiting_for_a_busy_cpu_is_not_detected,
     .timeout = 60)
{
    accel_runtime_config c = {.workers = 2,
                              .struct_size = sizeof(c),
                              .flags = ACCEL_RUNTIME_HOST_WORKERS,
                              .block_detect_ns = OPW_TICK_NS,
                              .host_wake = h_wake,
                              .host_cpus = 2};
    atomic_store(&proc_busy_cpus, 2);
    atomic_store(&accel__compensate_process_cpu_hook, proc_cpu_busy);
    cr_assert_eq(accel_runtime_create(&c, &hrt), ACCEL_OK);
    /* A session per nap: a session whose last visit was counted blocked
     * begins its next one counted (presumed), which the monitor then
     * does not judge. */
    accel_session *a = open_s(hrt, 0), *a2 = open_s(hrt, 1),
                  *a3 = open_s(hrt, 2);
    unit_step("the host's 2 CPUs busy: worker 0's nap");
    cr_expect_eq(nap_on_slot_0(a, false), 0,
                 "counted blocked while every host CPU was busy");
    unit_step("the host's CPUs idle: worker 0's nap");
    atomic_store(&accel__compensate_process_cpu_hook, proc_cpu_idle);
    cr_expect_geq(nap_on_slot_0(a2, false), 1,
                  "not counted blocked with the host's CPUs idle");
    unit_step("the real process clock, nothing else running: a nap");
    atomic_store(&accel__compensate_process_cpu_hook, NULL);
    uint64_t d0 = blocked_detected_now();
    cr_expect_gt(nap_on_slot_0(a3, false), d0,
                 "not counted blocked by the process's real clock");
    unit_step("destroy");
    accel_session_release(a);
    accel_session_release(a2);
    accel_session_release(a3);
    cr_expect_eq(accel_runtime_destroy(hrt), ACCEL_OK);
}

Test(blocking, host_cpus_only_with_host_workers, .timeout = 30)
{
    accel_runtime_config c = {.workers = 1,
                              .struct_size = sizeof(c),
                              .host_cpus = 1};
    accel_runtime *rt = NULL;
    cr_expect_eq(accel_runtime_create(&c, &rt), ACCEL_EINVAL);
    cr_expect_null(rt);
}

/* ---- idle is idle: once the work is done, the monitor and the workers
 * sleep (their CPU clocks stop), the extras are gone */

#include <dirent.h>

/* Sum of on-CPU ns of this process's threads whose name starts with
 * "accel-" (workers, extras, the monitor); *n: how many. */
static uint64_t accel_threads_cpu(int *n)
{
    uint64_t sum = 0;
    *n = 0;
    DIR *d = opendir("/proc/self/task");
    cr_assert(d != NULL);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char path[300], buf[128];
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        bool ours = fgets(buf, sizeof(buf), f) && strncmp(buf, "accel-", 6) == 0;
        fclose(f);
        if (!ours)
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", de->d_name);
        f = fopen(path, "r");
        unsigned long long on_cpu = 0;
        if (f && fscanf(f, "%llu", &on_cpu) == 1) {
            sum += on_cpu;
            (*n)++;
        }
        if (f)
            fclose(f);
    }
    closedir(d);
    return sum;
}

Test(blocking, idle_after_blocking_uses_no_cpu, .timeout = 60)
{
    accel_runtime *rt = make_rt(1, 8, 1000000);
    accel_session *s[4];
    for (int i = 0; i < 4; i++)
        s[i] = open_s(rt, i);
    unit_step("announced naps and unannounced naps on 4 sessions");
    for (int i = 0; i < 4; i++) {
        accel_op op = {.fn = capped_nap};
        cr_assert_eq(accel_submit(s[i], &op, ACCEL_FOREVER), ACCEL_OK);
    }
    for (int i = 0; i < 4; i++)
        cr_assert_eq(accel_session_sync(s[i], ACCEL_FOREVER), ACCEL_OK);
    unit_step("the extras retire");
    while (stats_of(rt).extra_workers != 0)
        tu_nap_us(1000);
    /* The monitor disarms at its first tick with nothing queued; then no
     * accel thread runs at all: their CPU clocks stand still. */
    unit_step("every accel thread's CPU clock stands still for 200 ms");
    int n0, n1;
    uint64_t c0 = accel_threads_cpu(&n0), c1;
    for (;;) {
        tu_nap_us(200000);
        c1 = accel_threads_cpu(&n1);
        if (c1 == c0 && n1 == n0)
            break;
        c0 = c1;
        n0 = n1;
    }
    cr_expect_eq(n1, 2, "the worker and the monitor (%d threads)", n1);
    for (int i = 0; i < 4; i++)
        accel_session_release(s[i]);
    cr_expect_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---- a submit from inside an op waiting for room in another session's
 * full ring, one worker: only another worker can make the room */

static accel_session *room_target;
static _Atomic int room_ran;

static int room_leaf(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    atomic_fetch_add(&room_ran, 1);
    return 0;
}

static int room_filler(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    accel_op op = {.fn = room_leaf};
    /* depth 1: the second submit waits for the first to be taken */
    for (int i = 0; i < 8; i++)
        if (accel_submit(room_target, &op, ACCEL_FOREVER) != ACCEL_OK)
            return 1;
    return 0;
}

Test(blocking, submit_waiting_for_room_inside_an_op_one_worker,
     .timeout = 60)
{
    accel_runtime *rt = make_rt(1, 0, UINT64_C(60000000000));
    accel_session *a = open_s(rt, 0);
    accel_session_config c = {.id = "room", .queue_depth = 1};
    cr_assert_eq(accel_session_open(rt, &c, &room_target), ACCEL_OK);
    unit_step("a's op submits 8 ops to a ring of depth 1");
    cr_expect_eq(accel_submit_wait(a, room_filler, NULL, ACCEL_FOREVER), 0);
    cr_expect_eq(accel_session_sync(room_target, ACCEL_FOREVER), ACCEL_OK);
    cr_expect_eq(atomic_load(&room_ran), 8);
    unit_step("destroy");
    accel_session_release(a);
    accel_session_release(room_target);
    cr_expect_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---- an extra the monitor detects blocked, leaving as surplus */

struct gate {
    _Atomic int in, rel;
    bool announce;
};

static int gated(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    struct gate *g = arg;
    if (g->announce)
        accel_blocking_begin();
    atomic_store(&g->in, 1);
    while (!atomic_load(&g->rel))
        tu_nap_us(200); /* waits with little CPU, as on I/O */
    if (g->announce)
        accel_blocking_end();
    return 0;
}

static int quick_c(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    return 0;
}

/* The base worker waits inside an announced wait (counted blocked), an extra runs
 * b's unannounced wait, c's quick op waits until the monitor detects that
 * extra too and a second extra runs it; then the announcement ends, so when b's op ends its extra is
 * surplus and leaves straight after the visit, before the monitor's next
 * tick: its detection must leave with it, or `blocked` stays 1 for ever. */
Test(blocking, an_extra_detected_blocked_leaves_undetected, .timeout = 120)
{
    accel_runtime *rt = make_rt(1, 0, 1000000); /* detect after 1 ms */
    for (int round = 0; round < 4; round++) {
        accel_session *a = open_s(rt, 100 + 3 * round);
        accel_session *b = open_s(rt, 101 + 3 * round);
        accel_session *c = open_s(rt, 102 + 3 * round);
        struct gate ga = {.announce = true}, gb = {.announce = false};
        accel_op oa = {.fn = gated, .arg = &ga};
        accel_op ob = {.fn = gated, .arg = &gb};
        accel_op oc = {.fn = quick_c};
        uint64_t seen0 = stats_of(rt).blocked_detected;
        unit_step("a's announced wait holds the base worker");
        cr_assert_eq(accel_submit(a, &oa, ACCEL_FOREVER), ACCEL_OK);
        while (!atomic_load(&ga.in))
            tu_nap_us(100);
        unit_step("b's unannounced wait on an extra, found by the monitor");
        cr_assert_eq(accel_submit(b, &ob, ACCEL_FOREVER), ACCEL_OK);
        while (!atomic_load(&gb.in))
            tu_nap_us(100);
        unit_step("c's quick op waits: the monitor detects b's extra, a "
                "second extra runs c");
        cr_assert_eq(accel_submit(c, &oc, ACCEL_FOREVER), ACCEL_OK);
        cr_assert_eq(accel_session_sync(c, ACCEL_FOREVER), ACCEL_OK);
        cr_assert_neq(stats_of(rt).blocked_detected, seen0);
        unit_step("a's announced wait ends, then b's wait");
        atomic_store(&ga.rel, 1);
        cr_assert_eq(accel_session_sync(a, ACCEL_FOREVER), ACCEL_OK);
        atomic_store(&gb.rel, 1);
        cr_assert_eq(accel_session_sync(b, ACCEL_FOREVER), ACCEL_OK);
        unit_step("no worker counted blocked once every op is done");
        while (stats_of(rt).blocked != 0)
            tu_nap_us(1000);
        accel_session_release(a);
        accel_session_release(b);
        accel_session_release(c);
    }
    unit_step("the extras retire");
    while (stats_of(rt).extra_workers != 0)
        tu_nap_us(1000);
    unit_step("destroy");
    cr_expect_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---- a counted worker that computes again is counted no more */

static _Atomic int wc_phase; /* 1 waiting, 2 computing */
static _Atomic int wc_stop;

static int wait_then_compute(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    atomic_store(&wc_phase, 1);
    struct timespec ts = {0, 150000000}; /* 7.5 ticks of 20 ms */
    while (nanosleep(&ts, &ts) != 0)
        ;
    atomic_store(&wc_phase, 2);
    volatile uint64_t x = 0;
    while (!atomic_load_explicit(&wc_stop, memory_order_relaxed))
        for (int i = 0; i < 10000; i++)
            x += (uint64_t)i;
    atomic_fetch_add(&cpu_sink, x);
    return 0;
}

/* An op waits (the monitor detects it, while another session's op waits
 * for the worker), then computes until told to stop, in the same visit:
 * its worker is no longer blocked, so the monitor must drop its
 * detection (else an extra runs beside a CPU-bound op for the rest of it). A
 * detection kept for the whole visit leaves `blocked` at 1 and the watchdog
 * names the step. */
Test(blocking, a_detected_worker_that_computes_again_is_undetected,
     .timeout = 60)
{
    atomic_store(&wc_phase, 0);
    atomic_store(&wc_stop, 0);
    accel_runtime *rt = make_rt(1, 4, UINT64_C(20000000));
    accel_session *a = open_s(rt, 300), *b = open_s(rt, 301);
    unit_step("a's op starts its wait");
    accel_op oa = {.fn = wait_then_compute};
    cr_assert_eq(accel_submit(a, &oa, ACCEL_FOREVER), ACCEL_OK);
    while (atomic_load(&wc_phase) == 0)
        tu_nap_us(100);
    unit_step("b's op waits behind it: the monitor detects a's worker");
    accel_op ob = {.fn = quick_c};
    cr_assert_eq(accel_submit(b, &ob, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_session_sync(b, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(atomic_load(&wc_phase), 1,
                 "b's op ran while a's op still waited");
    cr_assert_geq(stats_of(rt).blocked_detected, 1);
    unit_step("a's op computes: the monitor drops its detection");
    while (atomic_load(&wc_phase) != 2)
        tu_nap_us(1000);
    while (stats_of(rt).blocked != 0)
        tu_nap_us(1000);
    atomic_store(&wc_stop, 1);
    unit_step("a's op ends");
    cr_assert_eq(accel_session_sync(a, ACCEL_FOREVER), ACCEL_OK);
    unit_step("destroy");
    accel_session_release(a);
    accel_session_release(b);
    cr_expect_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---- a cycle of nested waits: a's op waits on b, b's op on a */

static accel_session *cyc_a, *cyc_b;
static _Atomic int cyc_in_b, cyc_release, cyc_inner_ran;
static _Atomic int cyc_inner_status = 1000, cyc_cancel_rc = 1000;
static _Atomic int cyc_result = 1000;

static int cyc_inner(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    atomic_store(&cyc_inner_ran, 1);
    return 0;
}

static void cyc_inner_done(void *arg, int status)
{
    (void)arg;
    atomic_store(&cyc_inner_status, status);
}

/* b's op submits to a, whose running op waits for this one: the done it
 * waits for cannot come. It waits as the header advises, with a bound of
 * its own (here: until the test lets it give up), then cancels. */
static int cyc_b_op(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    accel_op op = {.fn = cyc_inner, .done = cyc_inner_done};
    accel_ticket t;
    int rc = accel_submit_ex(cyc_a, &op, 0, ACCEL_FOREVER, &t);
    if (rc != ACCEL_OK)
        return 100 - rc;
    atomic_store(&cyc_in_b, 1);
    accel_blocking_begin();
    while (!atomic_load(&cyc_release) && atomic_load(&cyc_inner_status) == 1000)
        tu_nap_us(1000);
    accel_blocking_end();
    atomic_store(&cyc_cancel_rc, accel_cancel(&t));
    return 2;
}

static int cyc_a_op(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    return accel_submit_wait(cyc_b, cyc_b_op, NULL, ACCEL_FOREVER);
}

static void cyc_a_done(void *arg, int status)
{
    (void)arg;
    atomic_store(&cyc_result, status);
}

static int seven(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    return 7;
}

/* With one worker: while the cycle stands a third session's op runs; the
 * cancel of the inner op unwinds it (the inner op never runs, its done
 * gets ACCEL_ECANCELED once a's op is over); a and b go on. */
Test(blocking, a_cycle_of_waits_is_broken_by_a_cancel_one_worker,
     .timeout = 60)
{
    accel_runtime *rt = make_rt(1, 0, 0);
    cyc_a = open_s(rt, 0);
    cyc_b = open_s(rt, 1);
    accel_session *c = open_s(rt, 2);
    accel_op op = {.fn = cyc_a_op, .done = cyc_a_done};
    cr_assert_eq(accel_submit(cyc_a, &op, ACCEL_FOREVER), ACCEL_OK);
    unit_step("b's op inside the cycle");
    while (!atomic_load(&cyc_in_b))
        tu_nap_us(1000);
    unit_step("a third session's op while a and b wait on each other");
    cr_assert_eq(accel_submit_wait(c, seven, NULL, ACCEL_FOREVER), 7);
    cr_assert_eq(atomic_load(&cyc_result), 1000, "the cycle ended by itself");
    atomic_store(&cyc_release, 1);
    unit_step("the cycle unwinds after b's op cancels");
    while (atomic_load(&cyc_result) == 1000 ||
           atomic_load(&cyc_inner_status) == 1000)
        tu_nap_us(1000);
    cr_expect_eq(atomic_load(&cyc_result), 2);
    cr_expect_eq(atomic_load(&cyc_cancel_rc), ACCEL_OK);
    cr_expect_eq(atomic_load(&cyc_inner_status), ACCEL_ECANCELED);
    cr_expect_eq(atomic_load(&cyc_inner_ran), 0, "the canceled op ran");
    unit_step("a and b after the cycle");
    cr_expect_eq(accel_submit_wait(cyc_a, seven, NULL, ACCEL_FOREVER), 7);
    cr_expect_eq(accel_submit_wait(cyc_b, seven, NULL, ACCEL_FOREVER), 7);
    unit_step("destroy");
    accel_session_release(cyc_a);
    accel_session_release(cyc_b);
    accel_session_release(c);
    cr_expect_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---- a visit of ops that wait ends at a quantum of served time */

#define SERVED_QUANTUM_NS UINT64_C(50000000)

/* An announced wait of 60 ms: over the 50 ms quantum of wall time. */
static int announced_60ms(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    cr_assert_eq(accel_blocking_begin(), ACCEL_OK);
    tu_nap_us(60000);
    cr_assert_eq(accel_blocking_end(), ACCEL_OK);
    return 0;
}

/* One worker, `extras` extra workers at most, the 50 ms quantum. */
static accel_runtime *served_rt(unsigned extras)
{
    accel_runtime_config c = {.workers = 1,
                              .struct_size = sizeof(c),
                              .max_extra_workers = extras,
                              .quantum_ns = SERVED_QUANTUM_NS};
    accel_runtime *rt = NULL;
    cr_assert_eq(accel_runtime_create(&c, &rt), ACCEL_OK);
    return rt;
}

/* One op measures s (it waits, nearly unserved); returns s's stats once
 * that op's visit has ended: the visit count is bumped at the visit's
 * end, after its op's completion (which sync waits for). */
static accel_session_stats measured(accel_session *s)
{
    unit_step("one op measures the session: it waits, nearly unserved");
    accel_op w = {.fn = announced_60ms};
    cr_assert_eq(accel_submit(s, &w, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    accel_session_stats st;
    for (;;) {
        cr_assert_eq(accel_session_get_stats_ex(s, &st, sizeof(st)), ACCEL_OK);
        if (st.visits >= 1)
            return st;
        tu_nap_us(1000);
    }
}

/* A visit of s held in a gated wait while four 60 ms ops queue behind
 * it; then the gate opens. */
static void gated_then_four(accel_session *s)
{
    static struct gate g;
    g = (struct gate){.announce = true};
    unit_step("a visit held in a gated wait while four more ops queue");
    accel_op op = {.fn = gated, .arg = &g};
    cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    while (!atomic_load(&g.in))
        tu_nap_us(1000);
    accel_op w = {.fn = announced_60ms};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(accel_submit(s, &w, ACCEL_FOREVER), ACCEL_OK);
    atomic_store(&g.rel, 1);
}

/* A session whose ops each wait 60 ms (announced) with a 50 ms quantum:
 * its worker's place is taken while it waits, so its visit runs on until
 * it has been served a quantum (a few us of CPU an op here), and its four
 * queued ops run in the visit of the op before them. Planted, each of
 * these makes every op a visit of its own (5 visits): the visit's clock
 * by wall time alone, or the session quoted one op a visit by its ops'
 * whole time. Not a speed: the served time is the ops' CPU and their
 * wait for a CPU after each sleep, which would have to reach 50 ms for a
 * visit to end early. */
Test(blocking, a_visit_of_ops_that_wait_ends_at_a_quantum_served,
     .timeout = 60)
{
    accel_runtime *rt = served_rt(2);
    accel_session *s = open_s(rt, 0);
    accel_session_stats st0 = measured(s);
    gated_then_four(s);
    unit_step("the five ops complete");
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats_ex(s, &st, sizeof(st)), ACCEL_OK);
    cr_assert_eq(st.completed - st0.completed, 5);
    cr_assert_leq(st.visits - st0.visits, 2,
                  "5 ops that wait, nearly unserved: %lu visits, want 1 (2 at most)",
                  (unsigned long)(st.visits - st0.visits));
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* The same session at the cap on extra workers (one): another session's
 * op holds the worker in a wait, so the session runs on the one extra,
 * and a wait of its own would have no one in its place. Its visits end
 * at a quantum of wall time, one 60 ms op each (the gated op and the
 * first may share one: 4 visits or 5). Planted (the visit runs on at
 * the cap): 1 or 2. */
Test(blocking, at_the_cap_a_visit_of_ops_that_wait_ends_on_the_wall_clock,
     .timeout = 60)
{
    accel_runtime *rt = served_rt(1);
    accel_session *s = open_s(rt, 0), *b = open_s(rt, 1);
    accel_session_stats st0 = measured(s);
    unit_step("another session's op holds the worker in a wait");
    static struct gate other = {.announce = true};
    accel_op o = {.fn = gated, .arg = &other};
    cr_assert_eq(accel_submit(b, &o, ACCEL_FOREVER), ACCEL_OK);
    while (!atomic_load(&other.in))
        tu_nap_us(1000);
    gated_then_four(s); /* on the extra */
    /* A last op that does not wait: its visit begins after the fifth
     * op's has ended (and counted itself). */
    accel_op last = {.fn = quick_c};
    cr_assert_eq(accel_submit(s, &last, ACCEL_FOREVER), ACCEL_OK);
    unit_step("the five ops and the last complete");
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    accel_runtime_stats rs = stats_of(rt);
    cr_assert_eq(rs.extra_started, 1, "one extra, the cap: %lu",
                 (unsigned long)rs.extra_started);
    atomic_store(&other.rel, 1);
    unit_step("the other session's op completes");
    cr_assert_eq(accel_session_sync(b, ACCEL_FOREVER), ACCEL_OK);
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats_ex(s, &st, sizeof(st)), ACCEL_OK);
    cr_assert_eq(st.completed - st0.completed, 6);
    cr_assert_geq(st.visits - st0.visits, 4,
                  "at the cap, 5 ops of 60 ms: %lu visits, want 4 or 5 (and the last's)",
                  (unsigned long)(st.visits - st0.visits));
    accel_session_release(s);
    accel_session_release(b);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* An op of 110 ms of computing: a session's class by its cost, long
 * against the short lane's 100 ms below (tu_spin_gated: a long op that
 * computes until released). */
static int compute_110ms(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    uint64_t t = accel__now_ns() + 110000000;
    while (accel__now_ns() < t)
        accel__cpu_relax();
    return 0;
}

/* A short-lane worker's visit of ops that wait ends on the wall clock:
 * extras take general workers' places, so a short-lane worker in a wait
 * holds the short lane, and running on for a quantum served would hold
 * it for a quantum of waits. The short lane here takes ops of up to
 * 100 ms, so the session of 60 ms waits is short; the general worker and
 * the one extra compute in b's and c's long ops, so only the short-lane
 * worker runs it, with the cap (2) not reached. Its visits end at the
 * 50 ms quantum of wall time, one 60 ms op each (the gated op and the
 * first may share one: 4 visits or 5). Planted (the served-time run-on
 * on the short lane too): 1 or 2. */
Test(blocking, on_the_short_lane_a_visit_of_ops_that_wait_ends_on_the_wall_clock,
     .timeout = 60)
{
    accel_runtime_config c = {.workers = 2,
                              .short_lane_workers = 1,
                              .short_op_ns = 100000000,
                              .struct_size = sizeof(c),
                              .max_extra_workers = 2,
                              .quantum_ns = SERVED_QUANTUM_NS};
    accel_runtime *rt = NULL;
    cr_assert_eq(accel_runtime_create(&c, &rt), ACCEL_OK);
    accel_session *s = open_s(rt, 0), *b = open_s(rt, 1), *cs = open_s(rt, 2);
    unit_step("b and c are measured long (110 ms of computing)");
    accel_op m = {.fn = compute_110ms};
    cr_assert_eq(accel_submit(b, &m, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_submit(cs, &m, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_session_sync(b, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_session_sync(cs, ACCEL_FOREVER), ACCEL_OK);
    unit_step("b's long op computes on the general worker");
    static tu_spin_gate gb, gc;
    gb = gc = (tu_spin_gate){0};
    accel_op ob = {.fn = tu_spin_gated, .arg = &gb};
    accel_op oc = {.fn = tu_spin_gated, .arg = &gc};
    cr_assert_eq(accel_submit(b, &ob, ACCEL_FOREVER), ACCEL_OK);
    while (!atomic_load(&gb.in))
        tu_nap_us(1000);
    cr_assert_eq(accel_submit(cs, &oc, ACCEL_FOREVER), ACCEL_OK);
    unit_step("s's first wait starts the extra, which takes c's long op");
    accel_session_stats st0 = measured(s);
    while (!atomic_load(&gc.in))
        tu_nap_us(1000);
    gated_then_four(s);
    /* A last op that does not wait: its visit begins after the fifth
     * op's has ended and counted itself (sync returns at the fifth op's
     * completion, before its visit's end is counted: read without it,
     * the count missed that visit under load). */
    accel_op last = {.fn = quick_c};
    cr_assert_eq(accel_submit(s, &last, ACCEL_FOREVER), ACCEL_OK);
    unit_step("s's five ops and the last complete on the short-lane worker");
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    accel_runtime_stats rs = stats_of(rt);
    cr_assert_eq(rs.extra_started, 1, "one extra (c's): %lu",
                 (unsigned long)rs.extra_started);
    atomic_store(&gb.rel, 1);
    atomic_store(&gc.rel, 1);
    unit_step("b's and c's long ops complete");
    cr_assert_eq(accel_session_sync(b, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_session_sync(cs, ACCEL_FOREVER), ACCEL_OK);
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats_ex(s, &st, sizeof(st)), ACCEL_OK);
    cr_assert_eq(st.completed - st0.completed, 6);
    cr_assert_geq(st.visits - st0.visits, 4,
                  "on the short lane, 5 ops of 60 ms: %lu visits, want 4 or 5 (and the last's)",
                  (unsigned long)(st.visits - st0.visits));
    accel_session_release(s);
    accel_session_release(b);
    accel_session_release(cs);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* The leave window (compensate.h's seam): the first extra that takes
 * itself out stops there, before it gives its slot up. */
static tu_seam_stop leave;
static void leave_window(accel__worker *w)
{
    (void)w;
    tu_seam_stop_first(&leave);
}

/* An op of A that waits for an op of C (arg), counted blocked at once. */
static int wait_on_c(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    return accel_submit_wait(arg, quick_c, NULL, ACCEL_FOREVER);
}

/* The state letter of thread tid of this process (R, S, D, ...); 0 if
 * it cannot be read. */
static char thread_state(int tid)
{
    char path[64], buf[256];
    snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : 0;
}

/* An extra that takes itself out while another wait begins leaves no
 * blocked worker without its place. One worker, one extra at most, no
 * monitor detection (only the waits counted at once): A's announced wait
 * starts the extra for B's op; A's wait ends, then B's op, so the extra
 * is surplus and takes itself out, and stops (the seam) before it gives
 * its slot up. Then A's next op waits for an op of C, which only an
 * extra can run: its worker's hand-on counts a new extra and finds the
 * one slot still taken. Planted (the leaving extra neither takes the
 * count back nor hands it on once its slot is free, as before this
 * test): C's op never runs and A's op waits for ever. */
Test(blocking, an_extra_leaving_as_a_wait_begins_leaves_it_a_place,
     .timeout = 60)
{
    leave = (tu_seam_stop){0};
    atomic_store(&accel__compensate_leave_hook, leave_window);
    accel_runtime *rt = make_rt(1, 1, TU_NO_DETECT_NS);
    accel_session *a = open_s(rt, 0), *b = open_s(rt, 1), *c = open_s(rt, 2);
    unit_step("A's op waits on the worker, announced");
    static struct gate ga, gb;
    ga = (struct gate){.announce = true};
    gb = (struct gate){0};
    accel_op oa = {.fn = gated, .arg = &ga};
    cr_assert_eq(accel_submit(a, &oa, ACCEL_FOREVER), ACCEL_OK);
    while (!atomic_load(&ga.in))
        tu_nap_us(100);
    unit_step("B's op runs on the extra started for it");
    accel_op ob = {.fn = gated, .arg = &gb};
    cr_assert_eq(accel_submit(b, &ob, ACCEL_FOREVER), ACCEL_OK);
    while (!atomic_load(&gb.in))
        tu_nap_us(100);
    cr_assert_eq(stats_of(rt).extra_started, 1);
    unit_step("A's wait ends, then B's op: the extra leaves, and stops");
    atomic_store(&ga.rel, 1);
    cr_assert_eq(accel_session_sync(a, ACCEL_FOREVER), ACCEL_OK);
    atomic_store(&gb.rel, 1);
    tu_seam_wait_in(&leave);
    unit_step("A's next op waits for C's op; its hand-on is done");
    accel_op oa2 = {.fn = wait_on_c, .arg = c};
    cr_assert_eq(accel_submit(a, &oa2, ACCEL_FOREVER), ACCEL_OK);
    int tid = atomic_load(&rt->workers[0].tid);
    while (stats_of(rt).blocked != 1 || thread_state(tid) != 'S')
        tu_nap_us(100);
    unit_step("the leaving extra goes on; C's op must run");
    atomic_store(&leave.go, 1);
    int rc = accel_session_sync(a, 20 * INT64_C(1000000000));
    cr_assert_eq(rc, ACCEL_OK,
                 "A's op still waits for C's (%s): the place owed to the "
                 "waiting worker was lost as the extra left",
                 accel_strerror(rc));
    cr_assert_eq(accel_session_sync(c, ACCEL_FOREVER), ACCEL_OK);
    atomic_store(&accel__compensate_leave_hook, NULL);
    accel_session_release(a);
    accel_session_release(b);
    accel_session_release(c);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* The same window on a host-driven runtime, where the host adds the
 * extra workers (host_grow, accel_host_worker_add). One host worker (0)
 * and one extra (x) at most, driven here: 0's visit waits, announced, so
 * x is added for another session's op; the wait ends and x leaves as
 * surplus, and in its window (the seam, on this thread) 0 waits again
 * with that op still queued: the hand-on asks the host for a worker
 * (host_grow), and the host's accel_host_worker_add finds x's slot still
 * taken (ACCEL_EAGAIN). Once x's slot is free the leave must ask the host
 * again. Planted (no look after the free, as before this test): the
 * request is lost and the queued op waits for ever. */
static accel_runtime *lw_rt;
static _Atomic int lw_grows, lw_add_rc = 99;
static void lw_grow(void *arg)
{
    (void)arg;
    atomic_fetch_add(&lw_grows, 1);
}
static void lw_wake(void *arg, unsigned lane)
{
    (void)arg;
    (void)lane;
}
static void lw_host_window(accel__worker *w)
{
    (void)w;
    if (atomic_exchange(&leave.in, 1))
        return;
    cr_assert_eq(accel_host_blocking_begin(lw_rt, 0), ACCEL_OK);
    unsigned y;
    atomic_store(&lw_add_rc, accel_host_worker_add(lw_rt, &y));
}

Test(blocking, a_host_extra_leaving_as_a_wait_begins_asks_again,
     .timeout = 60)
{
    accel_runtime_config c = {.workers = 1,
                              .struct_size = sizeof(c),
                              .max_extra_workers = 1,
                              .block_detect_ns = TU_NO_DETECT_NS,
                              .flags = ACCEL_RUNTIME_HOST_WORKERS,
                              .host_wake = lw_wake,
                              .host_grow = lw_grow};
    cr_assert_eq(accel_runtime_create(&c, &lw_rt), ACCEL_OK);
    accel_session *a = open_s(lw_rt, 0), *b = open_s(lw_rt, 1);
    atomic_store(&lw_grows, 0);
    atomic_store(&leave.in, 0);
    atomic_store(&lw_add_rc, 99);
    unit_step("0's visit of A's op waits, announced; B's op is queued");
    accel_op oa = {.fn = quick_c}, ob = {.fn = quick_c};
    cr_assert_eq(accel_submit(a, &oa, ACCEL_FOREVER), ACCEL_OK);
    accel_op ops[4];
    unsigned n;
    cr_assert_eq(accel_host_visit_begin(lw_rt, 0, ops, 4, &n), ACCEL_OK);
    cr_assert_eq(n, 1);
    cr_assert_eq(accel_host_blocking_begin(lw_rt, 0), ACCEL_OK);
    cr_assert_eq(accel_submit(b, &ob, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_geq(atomic_load(&lw_grows), 1, "B's submit asks for a worker");
    unsigned x;
    cr_assert_eq(accel_host_worker_add(lw_rt, &x), ACCEL_OK);
    unit_step("0's wait ends; x leaves as surplus, and in its window 0 waits again");
    cr_assert_eq(accel_host_blocking_end(lw_rt, 0), ACCEL_OK);
    int g0 = atomic_load(&lw_grows);
    atomic_store(&accel__compensate_leave_hook, lw_host_window);
    cr_assert_eq(accel_host_worker_leave(lw_rt, x, ACCEL_HOST_LEAVE_IF_SURPLUS),
                 ACCEL_OK);
    atomic_store(&accel__compensate_leave_hook, NULL);
    cr_assert_eq(atomic_load(&leave.in), 1);
    cr_assert_eq(atomic_load(&lw_add_rc), ACCEL_EAGAIN,
                 "the add in x's window found its slot free: %d",
                 atomic_load(&lw_add_rc));
    int asked = atomic_load(&lw_grows) - g0;
    cr_assert_eq(asked, 2,
                 "host_grow calls from 0's new wait and from x's leave: %d, "
                 "want 2 (the second asks for the worker the failed add "
                 "dropped)", asked);
    unit_step("the host adds the extra again; it runs B's op");
    unsigned y;
    cr_assert_eq(accel_host_worker_add(lw_rt, &y), ACCEL_OK);
    cr_assert_eq(accel_host_visit_begin(lw_rt, y, ops, 4, &n), ACCEL_OK);
    cr_assert_eq(n, 1);
    int st[4] = {0};
    cr_assert_eq(accel_host_visit_end_stop(lw_rt, y, st, 1), ACCEL_OK);
    cr_assert_eq(accel_host_blocking_end(lw_rt, 0), ACCEL_OK);
    cr_assert_eq(accel_host_visit_end(lw_rt, 0, st, 1), ACCEL_OK);
    cr_assert_eq(accel_host_worker_leave(lw_rt, y, 0), ACCEL_OK);
    cr_assert_eq(accel_session_sync(a, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_session_sync(b, ACCEL_FOREVER), ACCEL_OK);
    accel_session_release(a);
    accel_session_release(b);
    cr_assert_eq(accel_runtime_destroy(lw_rt), ACCEL_OK);
}
