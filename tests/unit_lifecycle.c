/*
 * Runtime and session lifecycle: create/destroy, open/id/priority/close
 * (double and concurrent close), empty id, duplicate and reused ids,
 * lookup handles, release of the last handle, set_priority, strerror, the
 * default runtime, calls from fresh threads, destroy draining everything
 * (also sessions whose handles were never released).
 *
 * Promises: 1, 5
 */
#define _GNU_SOURCE /* nanosleep, clock_gettime, sched_yield */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "core_util.h"
#include "rcu.h"
#include "session.h"
#include "unit_watchdog.h"

UNIT_WATCHDOG_SUITE(lifecycle);

static _Atomic int counter;

static int op_count(accel_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
    return 0;
}

static int op_slow_count(accel_ctx *ctx, void *arg)
{
    tu_nap_us(100); /* keeps ops queued when close/destroy starts */
    return op_count(ctx, arg);
}

Test(lifecycle, runtime_create_destroy, .timeout = 10)
{
    accel_runtime *rt = NULL;
    cr_assert_eq(accel_runtime_create(NULL, &rt), ACCEL_OK);
    cr_assert_not_null(rt);
    unit_step("runtime destroy (default config)");
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    for (unsigned w = 1; w <= 3; w++) {
        rt = tu_runtime(w);
        cr_assert_not_null(rt);
        unit_step("runtime destroy (1..3 workers)");
        cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    }
}

Test(lifecycle, open_id_priority_backend_close, .timeout = 10)
{
    accel_runtime *rt = tu_runtime(2);
    char idbuf[16] = "vm-1";
    accel_session_config c = {.id = idbuf};
    accel_session *s = NULL;
    cr_assert_eq(accel_session_open(rt, &c, &s), ACCEL_OK);
    strcpy(idbuf, "zzzz"); /* the id is copied */
    cr_assert_str_eq(accel_session_id(s), "vm-1");
    cr_assert_eq(accel_session_priority(s), ACCEL_PRIORITY_NORMAL,
                 "priority 0 means NORMAL");
    /* AUTO binds CUDA when a device is usable, else the CPU. */
    accel_backend want_auto =
        tu_cuda_usable(rt) ? ACCEL_BACKEND_CUDA : ACCEL_BACKEND_CPU;
    cr_assert_eq(accel_session_backend(s), want_auto,
                 "AUTO binds CUDA with a usable device, else CPU");
    cr_assert_not(accel_session_is_closed(s));
    cr_assert_eq(accel_session_memory_used(s), 0);

    accel_session_config c2 = {.id = "vm-2",
                               .priority = ACCEL_PRIORITY_CRITICAL,
                               .backend = ACCEL_BACKEND_CPU};
    accel_session *s2 = NULL;
    cr_assert_eq(accel_session_open(rt, &c2, &s2), ACCEL_OK);
    cr_assert_eq(accel_session_priority(s2), 100);
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats(s2, &st), ACCEL_OK);
    cr_assert_eq(st.priority, 100);

    unit_step("drain close of the idle s, twice, then a cancel close");
    cr_assert_eq(accel_session_close(s, ACCEL_CLOSE_DRAIN), ACCEL_OK);
    cr_assert(accel_session_is_closed(s));
    cr_assert_eq(accel_session_close(s, ACCEL_CLOSE_DRAIN), ACCEL_OK,
                 "double close is fine");
    cr_assert_eq(accel_session_close(s, ACCEL_CLOSE_CANCEL), ACCEL_OK);
    /* Getters and stats keep working on a closed session until release. */
    cr_assert_str_eq(accel_session_id(s), "vm-1");
    cr_assert_eq(accel_session_priority(s), ACCEL_PRIORITY_NORMAL);
    cr_assert_eq(accel_session_get_stats(s, &st), ACCEL_OK);
    cr_assert_eq(st.submitted, 0);
    accel_op op = {.fn = op_count};
    cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_ECLOSED);
    cr_assert_not(accel_session_is_closed(s2), "closing s never touches s2");
    unit_step("submit_wait on s2");
    cr_assert_eq(accel_submit_wait(s2, op_count, NULL, ACCEL_FOREVER), 0);
    unit_step("release of s and s2 and runtime destroy");
    accel_session_release(s);
    accel_session_release(s2);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(lifecycle, empty_id_rejected, .timeout = 10)
{
    accel_runtime *rt = tu_runtime(1);
    accel_session *s = (accel_session *)&counter; /* must stay untouched */
    accel_session_config c = {.id = ""};
    cr_assert_eq(accel_session_open(rt, &c, &s), ACCEL_EINVAL);
    cr_assert_eq(s, (accel_session *)&counter);
    accel_session *l = NULL;
    cr_assert_eq(accel_session_lookup(rt, "", &l), ACCEL_EINVAL);
    unit_step("runtime destroy");
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(lifecycle, id_max_length_and_duplicate, .timeout = 10)
{
    accel_runtime *rt = tu_runtime(1);
    char id[ACCEL_ID_MAX + 1];
    memset(id, 'x', ACCEL_ID_MAX);
    id[ACCEL_ID_MAX] = 0;
    accel_session *s = tu_open(rt, id, 0, 0);
    cr_assert_not_null(s, "an id of ACCEL_ID_MAX bytes is valid");
    cr_assert_eq(strlen(accel_session_id(s)), ACCEL_ID_MAX);
    accel_session_config c = {.id = id};
    accel_session *d = NULL;
    cr_assert_eq(accel_session_open(rt, &c, &d), ACCEL_EEXIST);
    cr_assert_null(d);
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(lifecycle, lookup_gives_a_new_handle, .timeout = 10)
{
    accel_runtime *rt = tu_runtime(2);
    accel_session *s = tu_open(rt, "vm", 0, 0);
    accel_session *l = NULL;
    cr_assert_eq(accel_session_lookup(rt, "vm", &l), ACCEL_OK);
    cr_assert_eq(l, s, "the handle names the same session");
    cr_assert_eq(accel_session_lookup(rt, "nope", &l), ACCEL_ENOENT);
    cr_assert_eq(l, s, "a failed lookup leaves *out alone");
    /* Dropping the lookup's handle does not close: the opener's remains. */
    accel_session_release(l);
    cr_assert_not(accel_session_is_closed(s));
    atomic_store(&counter, 0);
    unit_step("submit_wait on s");
    cr_assert_eq(accel_submit_wait(s, op_count, NULL, ACCEL_FOREVER), 0);
    /* Two lookups, released in any order around the opener's handle. */
    accel_session *a = NULL, *b = NULL;
    cr_assert_eq(accel_session_lookup(rt, "vm", &a), ACCEL_OK);
    cr_assert_eq(accel_session_lookup(rt, "vm", &b), ACCEL_OK);
    accel_session_release(s);
    cr_assert_not(accel_session_is_closed(a), "handles remain");
    unit_step("submit_wait on a");
    cr_assert_eq(accel_submit_wait(a, op_count, NULL, ACCEL_FOREVER), 0);
    unit_step("release of a, then of b, the last handle");
    accel_session_release(a);
    cr_assert_not(accel_session_is_closed(b));
    accel_session_release(b); /* last handle: closes and frees */
    cr_assert_eq(accel_session_lookup(rt, "vm", &l), ACCEL_ENOENT);
    cr_assert_eq(atomic_load(&counter), 2);
    unit_step("runtime destroy");
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(lifecycle, id_free_and_lookup_enoent_as_soon_as_close_begins,
     .timeout = 10)
{
    accel_runtime *rt = tu_runtime(2);
    accel_session *s = tu_open(rt, "vm", 0, 0);
    tu_blocker b = {0};
    accel_op op = tu_blocker_op(&b);
    cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    unit_step("the blocking op starts");
    tu_wait_at_least(&b.started, 1);

    closer_arg ca = {.s = s, .flags = ACCEL_CLOSE_DRAIN};
    pthread_t th;
    pthread_create(&th, NULL, closer_main, &ca);
    unit_step("the close of s begins");
    while (!accel_session_is_closed(s))
        tu_nap_us(50);
    /* Close has begun and is waiting for the blocked op. */
    accel_session *l = NULL;
    cr_assert_eq(accel_session_lookup(rt, "vm", &l), ACCEL_ENOENT);
    accel_session *s2 = tu_open(rt, "vm", 0, 0);
    cr_assert_not_null(s2, "the id is free once close begins");
    cr_assert_neq(s2, s);
    cr_assert_eq(accel_session_lookup(rt, "vm", &l), ACCEL_OK);
    cr_assert_eq(l, s2, "lookup finds the new session");
    accel_session_release(l);
    unit_step("submit_wait on s2 while s is closing");
    cr_assert_eq(accel_submit_wait(s2, op_count, NULL, ACCEL_FOREVER), 0,
                 "the new session runs while the old one is closing");
    cr_assert_eq(atomic_load(&ca.returned), 0,
                 "close returned before its accepted op completed");

    tu_latch_open(&b.gate);
    unit_step("the close of s returns once its blocking op is let go");
    pthread_join(th, NULL);
    cr_assert_eq(ca.rc, ACCEL_OK);
    cr_assert_eq(atomic_load(&b.done_calls), 1);
    cr_assert_eq(atomic_load(&b.done_status), 0);
    unit_step("release of s and s2 and runtime destroy");
    accel_session_release(s);
    accel_session_release(s2);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(lifecycle, concurrent_closers_all_wait, .timeout = 10)
{
    accel_runtime *rt = tu_runtime(2);
    accel_session *s = tu_open(rt, "vm", 0, 0);
    tu_blocker b = {0};
    accel_op op = tu_blocker_op(&b);
    cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    unit_step("the blocking op starts");
    tu_wait_at_least(&b.started, 1);
    enum { N = 4 };
    closer_arg ca[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        ca[i] = (closer_arg){.s = s, .flags = i & 1 ? ACCEL_CLOSE_CANCEL : 0};
        pthread_create(&th[i], NULL, closer_main, &ca[i]);
    }
    unit_step("the close of s begins (4 closers)");
    while (!accel_session_is_closed(s))
        tu_nap_us(50);
    tu_nap_us(2000); /* give a wrong closer time to return early */
    for (int i = 0; i < N; i++)
        cr_assert_eq(atomic_load(&ca[i].returned), 0,
                     "closer %d returned while an accepted op ran", i);
    tu_latch_open(&b.gate);
    unit_step("the 4 closers return once the blocking op is let go");
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(ca[i].rc, ACCEL_OK);
    }
    cr_assert_eq(atomic_load(&b.done_calls), 1);
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(lifecycle, release_of_last_handle_closes_with_drain, .timeout = 10)
{
    accel_runtime *rt = tu_runtime(2);
    accel_session *s = tu_open(rt, "vm", 0, 0);
    accel_session *l = NULL;
    cr_assert_eq(accel_session_lookup(rt, "vm", &l), ACCEL_OK);
    atomic_store(&counter, 0);
    accel_op op = {.fn = op_slow_count};
    unit_step("200 FOREVER submits of slow ops");
    for (int i = 0; i < 200; i++)
        cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    accel_session_release(s);
    cr_assert_not(accel_session_is_closed(l));
    unit_step("release of the last handle drains 200 ops");
    accel_session_release(l); /* last: drains all 200, then drops */
    cr_assert_eq(atomic_load(&counter), 200,
                 "release of the last handle must drain, not cancel");
    accel_session *x = NULL;
    cr_assert_eq(accel_session_lookup(rt, "vm", &x), ACCEL_ENOENT);
    /* And the id can be opened again. */
    accel_session *s2 = tu_open(rt, "vm", 0, 0);
    cr_assert_not_null(s2);
    unit_step("release of s2 and runtime destroy");
    accel_session_release(s2);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* The release of the last handle closes the session: from the moment it
 * dropped that handle, a lookup of its id gets ACCEL_ENOENT, not a new
 * handle to a session no one asked to keep (which the close then closes
 * under it). The seam stops the release right after the drop, before its
 * close takes the id out of the table, and looks the id up there.
 * Planted (a lookup that takes a handle while references remain, as
 * before this test): the lookup gets a handle (ACCEL_OK) and the session
 * behind it is closed once the release returns. */
static accel_runtime *rw_rt;
static _Atomic int rw_rc = 99;
static accel_session *_Atomic rw_got;
static void lookup_in_release_window(accel_session *s)
{
    (void)s;
    accel_session *h = NULL;
    atomic_store(&rw_rc, accel_session_lookup(rw_rt, "last", &h));
    atomic_store(&rw_got, h);
}

Test(lifecycle, a_lookup_as_the_last_handle_goes_finds_nothing,
     .timeout = 10)
{
    rw_rt = tu_runtime(1);
    accel_session *s = tu_open(rw_rt, "last", 0, 0);
    cr_assert_not_null(s);
    atomic_store(&rw_got, NULL);
    atomic_store(&accel__release_window_hook, lookup_in_release_window);
    unit_step("the last handle's release, a lookup in its window");
    accel_session_release(s);
    atomic_store(&accel__release_window_hook, NULL);
    accel_session *h = atomic_load(&rw_got);
    int rc = atomic_load(&rw_rc);
    bool closed = h && accel_session_is_closed(h);
    if (h)
        accel_session_release(h);
    cr_assert_eq(rc, ACCEL_ENOENT,
                 "a lookup after the last handle went: %s (a handle to a "
                 "session %s)", accel_strerror(rc),
                 closed ? "closed under it" : "still open");
    cr_assert_eq(accel_runtime_destroy(rw_rt), ACCEL_OK);
}

Test(lifecycle, release_after_explicit_close, .timeout = 10)
{
    accel_runtime *rt = tu_runtime(1);
    accel_session *s = tu_open(rt, "vm", 0, 0);
    accel_op op = {.fn = op_count};
    atomic_store(&counter, 0);
    unit_step("10 FOREVER submits");
    for (int i = 0; i < 10; i++)
        cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    unit_step("drain close of s with 10 ops");
    cr_assert_eq(accel_session_close(s, ACCEL_CLOSE_DRAIN), ACCEL_OK);
    cr_assert_eq(atomic_load(&counter), 10);
    uint64_t before = atomic_load(&accel__sessions_reclaimed);
    unit_step("release of s, the last handle");
    accel_session_release(s);
    accel_session_release(NULL); /* ignored */
    /* the closed session's last handle gone: it is reclaimed after a
     * grace period, not only at destroy. The worker may still hold the
     * scheduler's reference for the end of its last visit: wait for it
     * (a 10 s watchdog, not a threshold). */
    unit_step("the closed session is reclaimed after its release");
    for (int i = 0; i < 10000; i++) {
        accel__rcu_barrier();
        if (atomic_load(&accel__sessions_reclaimed) > before)
            break;
        tu_nap_us(1000);
    }
    cr_assert_eq(atomic_load(&accel__sessions_reclaimed), before + 1,
                 "reclaimed after its release");
    unit_step("runtime destroy");
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(lifecycle, set_priority, .timeout = 10)
{
    accel_runtime *rt = tu_runtime(1);
    accel_session *s = tu_open(rt, "vm", 0, 0);
    cr_assert_eq(accel_session_set_priority(s, ACCEL_PRIORITY_HIGH), ACCEL_OK);
    cr_assert_eq(accel_session_priority(s), 10);
    cr_assert_eq(accel_session_set_priority(s, 1000), ACCEL_OK);
    cr_assert_eq(accel_session_priority(s), 1000);
    cr_assert_eq(accel_session_set_priority(s, 1001), ACCEL_EINVAL);
    cr_assert_eq(accel_session_priority(s), 1000, "EINVAL changes nothing");
    cr_assert_eq(accel_session_set_priority(s, 0), ACCEL_OK);
    cr_assert_eq(accel_session_priority(s), ACCEL_PRIORITY_NORMAL);
    cr_assert_eq(accel_session_set_priority(s, 1), ACCEL_OK);
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats(s, &st), ACCEL_OK);
    cr_assert_eq(st.priority, 1);
    /* Ops still run after a change. */
    unit_step("submit_wait on s");
    cr_assert_eq(accel_submit_wait(s, op_count, NULL, ACCEL_FOREVER), 0);
    cr_assert_eq(accel_session_set_priority(NULL, 5), ACCEL_EINVAL);
    unit_step("drain close of s");
    cr_assert_eq(accel_session_close(s, 0), ACCEL_OK);
    cr_assert_eq(accel_session_set_priority(s, 7), ACCEL_ECLOSED);
    cr_assert_eq(accel_session_priority(s), 1);
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(lifecycle, strerror_every_status, .timeout = 5)
{
    static const int codes[] = {
        ACCEL_OK,        ACCEL_EINVAL,   ACCEL_ENOMEM,     ACCEL_EEXIST,
        ACCEL_ENOENT,    ACCEL_ECLOSED,  ACCEL_EAGAIN,     ACCEL_ETIMEDOUT,
        ACCEL_ECANCELED, ACCEL_EBUDGET,  ACCEL_ENOBACKEND, ACCEL_EDEADLK,
        ACCEL_EBACKEND,  ACCEL_EEXPIRED, ACCEL_EALREADY,   ACCEL_ENOTSUP};
    enum { N = sizeof(codes) / sizeof(codes[0]) };
    const char *unknown = accel_strerror(1);
    cr_assert_not_null(unknown);
    cr_assert_str_eq(unknown, "unknown status");
    cr_assert_eq(ACCEL_OK, 0);
    for (int i = 0; i < N; i++) {
        if (i > 0)
            cr_assert_lt(codes[i], 0, "errors are negative");
        const char *m = accel_strerror(codes[i]);
        cr_assert_not_null(m);
        cr_assert_gt(strlen(m), 0);
        cr_assert_str_neq(m, "unknown status", "code %d", codes[i]);
        for (int j = 0; j < i; j++) {
            cr_assert_neq(codes[i], codes[j], "codes are distinct");
            cr_assert_str_neq(m, accel_strerror(codes[j]),
                              "messages of %d and %d are equal", codes[i],
                              codes[j]);
        }
    }
    static const int bad[] = {1, 2, -16, -100, 1000, INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_str_eq(accel_strerror(bad[i]), "unknown status", "%d",
                         bad[i]);
}

Test(lifecycle, runtime_default, .timeout = 10)
{
    accel_runtime *rt = accel_runtime_default();
    cr_assert_not_null(rt);
    cr_assert_eq(accel_runtime_default(), rt, "one process-wide runtime");
    accel_session *s = tu_open(rt, "default-vm", 0, 0);
    cr_assert_not_null(s);
    atomic_store(&counter, 0);
    unit_step("submit_wait on the default runtime's s");
    cr_assert_eq(accel_submit_wait(s, op_count, NULL, ACCEL_FOREVER), 0);
    cr_assert_eq(atomic_load(&counter), 1);
    accel_session *l = NULL;
    cr_assert_eq(accel_session_lookup(rt, "default-vm", &l), ACCEL_OK);
    accel_session_release(l);
    unit_step("drain close of s and its release");
    cr_assert_eq(accel_session_close(s, 0), ACCEL_OK);
    accel_session_release(s);
    /* A session left open stays open until the process exits (the
     * default runtime is never destroyed). */
    accel_session *left = tu_open(rt, "left-open", 0, 0);
    cr_assert_not_null(left);
    accel_op op = {.fn = op_count};
    unit_step("FOREVER submit to the session left open");
    cr_assert_eq(accel_submit(left, &op, ACCEL_FOREVER), ACCEL_OK);
}

/* Everything from a thread the library has never seen; it then exits, and
 * later fresh threads do it again (lazy registration and unregistration). */
typedef struct fresh_arg {
    accel_runtime *rt;
    int idx;
    int errors;
} fresh_arg;

static void *fresh_main(void *p)
{
    fresh_arg *a = p;
    char id[32];
    snprintf(id, sizeof(id), "fresh-%d", a->idx);
    accel_session *s = tu_open(a->rt, id, 4, 1000);
    if (!s) {
        a->errors++;
        return NULL;
    }
    accel_op op = {.fn = op_count};
    accel_session *l = NULL;
    accel_session_stats st;
    size_t acc = 0;
    accel_op ops[3] = {op, op, op};
    a->errors += accel_submit(s, &op, ACCEL_FOREVER) != ACCEL_OK;
    a->errors += accel_submit_batch(s, ops, 3, ACCEL_FOREVER, &acc) != ACCEL_OK;
    a->errors += accel_submit_wait(s, op_count, NULL, ACCEL_FOREVER) != 0;
    a->errors += accel_session_sync(s, ACCEL_FOREVER) != ACCEL_OK;
    a->errors += accel_session_lookup(a->rt, id, &l) != ACCEL_OK;
    accel_session_release(l);
    a->errors += accel_session_reserve(s, 10) != ACCEL_OK;
    a->errors += accel_session_unreserve(s, 10) != ACCEL_OK;
    a->errors += accel_session_set_priority(s, 3) != ACCEL_OK;
    a->errors += accel_session_get_stats(s, &st) != ACCEL_OK;
    a->errors += accel_session_close(s, ACCEL_CLOSE_DRAIN) != ACCEL_OK;
    a->errors += accel_session_get_stats(s, &st) != ACCEL_OK;
    a->errors += st.submitted != 5 || st.completed != 5;
    accel_session_release(s);
    return NULL;
}

static void *fresh_runtime_main(void *p)
{
    fresh_arg *a = p;
    accel_runtime *rt = tu_runtime(1);
    if (!rt) {
        a->errors++;
        return NULL;
    }
    fresh_arg inner = {.rt = rt, .idx = 1000 + a->idx};
    fresh_main(&inner);
    a->errors += inner.errors;
    a->errors += accel_runtime_destroy(rt) != ACCEL_OK;
    return NULL;
}

Test(lifecycle, fresh_threads_can_call_everything, .timeout = 20)
{
    accel_runtime *rt = tu_runtime(2);
    atomic_store(&counter, 0);
    enum { ROUNDS = 5, PER = 4 };
    for (int r = 0; r < ROUNDS; r++) {
        fresh_arg a[PER];
        pthread_t th[PER];
        for (int i = 0; i < PER; i++) {
            a[i] = (fresh_arg){.rt = rt, .idx = r * PER + i};
            pthread_create(&th[i], NULL, fresh_main, &a[i]);
        }
        unit_step("the round's 4 fresh threads return");
        for (int i = 0; i < PER; i++) {
            pthread_join(th[i], NULL);
            cr_assert_eq(a[i].errors, 0, "round %d thread %d", r, i);
        }
    }
    cr_assert_eq(atomic_load(&counter), ROUNDS * PER * 5);
    /* A fresh thread that creates and destroys its own runtime. */
    fresh_arg a = {.idx = 1};
    pthread_t th;
    pthread_create(&th, NULL, fresh_runtime_main, &a);
    unit_step("the fresh thread with its own runtime returns");
    pthread_join(th, NULL);
    cr_assert_eq(a.errors, 0);
    unit_step("runtime destroy");
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* Destroy: every op accepted before it completes exactly once, on open
 * sessions whose handles were never released, on closed-unreleased ones
 * and with lookup handles outstanding; memory an op left allocated is freed
 * (ASan's leak check covers this). */
static _Atomic int done_ok, done_other;

static void done_count(void *arg, int status)
{
    (void)arg;
    atomic_fetch_add_explicit(status == 0 ? &done_ok : &done_other, 1,
                              memory_order_relaxed);
}

static int op_leak_alloc(accel_ctx *ctx, void *arg)
{
    (void)arg;
    void *p = NULL;
    if (accel_ctx_alloc(ctx, 64, &p) != ACCEL_OK)
        return 1;
    memset(p, 0xab, 64); /* left allocated on purpose */
    return op_slow_count(ctx, arg);
}

Test(lifecycle, destroy_drains_everything, .timeout = 20)
{
    accel_runtime *rt = tu_runtime(2);
    atomic_store(&counter, 0);
    atomic_store(&done_ok, 0);
    atomic_store(&done_other, 0);
    enum { S = 6, OPS = 50 };
    accel_session *s[S];
    for (int i = 0; i < S; i++) {
        char id[16];
        snprintf(id, sizeof(id), "s%d", i);
        s[i] = tu_open(rt, id, 16, 0);
        cr_assert_not_null(s[i]);
        accel_op op = {.fn = i % 2 ? op_slow_count : op_leak_alloc,
                       .done = done_count};
        unit_step("50 FOREVER submits to a ring of 16");
        for (int k = 0; k < OPS; k++)
            cr_assert_eq(accel_submit(s[i], &op, ACCEL_FOREVER), ACCEL_OK);
    }
    accel_session *extra = NULL;
    cr_assert_eq(accel_session_lookup(rt, "s0", &extra), ACCEL_OK);
    (void)extra; /* never released */
    unit_step("drain close of s1 with 50 ops");
    cr_assert_eq(accel_session_close(s[1], ACCEL_CLOSE_DRAIN), ACCEL_OK);
    unit_step("release of s2, the last handle, with 50 ops");
    accel_session_release(s[2]);
    /* s[0], s[3..5] left open with queued ops; s[1] closed unreleased. */
    unit_step("runtime destroy draining the sessions left open");
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    cr_assert_eq(atomic_load(&counter), S * OPS, "destroy must drain");
    cr_assert_eq(atomic_load(&done_ok), S * OPS);
    cr_assert_eq(atomic_load(&done_other), 0);
    cr_assert_eq(tu_leak_check(), 0, "destroy leaked (see LeakSanitizer)");
}

static _Atomic int destroy_rc_inside;

static int op_destroy_inside(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    atomic_store(&destroy_rc_inside, accel_runtime_destroy(arg));
    return 0;
}

Test(lifecycle, destroy_from_inside_an_op_is_edeadlk, .timeout = 10)
{
    accel_runtime *rt = tu_runtime(1);
    accel_session *s = tu_open(rt, "vm", 0, 0);
    atomic_store(&destroy_rc_inside, 1);
    unit_step("submit_wait of the op that destroys its runtime");
    cr_assert_eq(accel_submit_wait(s, op_destroy_inside, rt, ACCEL_FOREVER),
                 0);
    cr_assert_eq(atomic_load(&destroy_rc_inside), ACCEL_EDEADLK);
    /* Nothing was done: the runtime still works. */
    unit_step("submit_wait on s");
    cr_assert_eq(accel_submit_wait(s, op_count, NULL, ACCEL_FOREVER), 0);
    unit_step("release of s and runtime destroy");
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* Regression: close used to set CLOSED (is_closed() true) before it took
 * the id out of the table, so a thread that saw the session closed could
 * still look it up, or get ACCEL_EEXIST reopening its id. */
static accel_session *race_victim;
static _Atomic int race_go;

static void *race_closer(void *p)
{
    (void)p;
    while (!atomic_load_explicit(&race_go, memory_order_acquire))
        sched_yield();
    accel_session_close(race_victim, ACCEL_CLOSE_DRAIN);
    return NULL;
}

Test(lifecycle, closed_means_id_free_and_lookup_enoent, .timeout = 20)
{
    accel_runtime *rt = tu_runtime(1);
    int found = 0, eexist = 0;
    for (int i = 0; i < 500; i++) {
        race_victim = tu_open(rt, "x", 0, 0);
        cr_assert_not_null(race_victim);
        atomic_store(&race_go, 0);
        pthread_t t;
        pthread_create(&t, NULL, race_closer, NULL);
        atomic_store_explicit(&race_go, 1, memory_order_release);
        unit_step("the racing close of x begins");
        while (!accel_session_is_closed(race_victim))
            sched_yield();
        accel_session *l = NULL;
        if (accel_session_lookup(rt, "x", &l) == ACCEL_OK) {
            found++;
            accel_session_release(l);
        }
        accel_session *n = tu_open(rt, "x", 0, 0);
        eexist += n == NULL;
        unit_step("the closer thread returns");
        pthread_join(t, NULL);
        unit_step("release of the closed x and the new x");
        accel_session_release(race_victim);
        accel_session_release(n);
    }
    cr_assert_eq(found, 0, "lookup found a session already seen closed");
    cr_assert_eq(eexist, 0, "id of a session seen closed was not free");
    unit_step("runtime destroy");
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* A session opened by an op that runs while destroy drains another one
 * (it is linked at the head of the list, behind destroy's walk) is still
 * closed by destroy: its op sees it closed. The op waits for that at most
 * 10 s (a watchdog, not a threshold: with the walk fixed it sees it as
 * soon as the close begins; without, never). */
typedef struct opener {
    accel_runtime *rt;
    accel_session *late;
    _Atomic int opened, submitted, saw_closed, ran;
} opener;

static int wait_closed(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    opener *o = arg;
    for (int i = 0; i < 10000 && !accel_session_is_closed(o->late); i++)
        tu_nap_us(1000);
    atomic_store(&o->saw_closed, accel_session_is_closed(o->late));
    atomic_fetch_add(&o->ran, 1);
    return 0;
}

static int open_during_destroy(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    opener *o = arg;
    accel_session_config c = {.id = "late"};
    if (accel_session_open(o->rt, &c, &o->late) != ACCEL_OK)
        return 0;
    atomic_store(&o->opened, 1);
    accel_op op = {.fn = wait_closed, .arg = o};
    atomic_store(&o->submitted,
                 accel_submit(o->late, &op, ACCEL_NO_WAIT) == ACCEL_OK);
    return 0; /* the handle is left to destroy */
}

typedef struct gate_when_closed {
    accel_session *s;
    tu_latch *gate;
} gate_when_closed;

/* Opens the gate once destroy has begun closing s: the op behind it then
 * runs inside destroy's drain. */
static void *gate_when_closed_main(void *arg)
{
    gate_when_closed *g = arg;
    while (!accel_session_is_closed(g->s))
        sched_yield();
    tu_latch_open(g->gate);
    return NULL;
}

Test(lifecycle, destroy_closes_sessions_opened_during_its_walk, .timeout = 60)
{
    accel_runtime *rt = tu_runtime(2);
    accel_session *s = tu_open(rt, "first", 16, 0);
    tu_blocker b = {0};
    accel_op hold = tu_blocker_op(&b);
    cr_assert_eq(accel_submit(s, &hold, ACCEL_NO_WAIT), ACCEL_OK);
    opener o = {.rt = rt};
    accel_op op = {.fn = open_during_destroy, .arg = &o};
    cr_assert_eq(accel_submit(s, &op, ACCEL_NO_WAIT), ACCEL_OK);
    gate_when_closed g = {.s = s, .gate = &b.gate};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, gate_when_closed_main, &g), 0);
    unit_step("runtime destroy while an op opens a session");
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    unit_step("the gate thread returns");
    pthread_join(th, NULL);
    cr_assert_eq(o.opened, 1);
    cr_assert_eq(o.submitted, 1);
    cr_assert_eq(o.ran, 1, "the late session's op ran once");
    cr_assert_eq(o.saw_closed, 1, "destroy closed the late session");
}
