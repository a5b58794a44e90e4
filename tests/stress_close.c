/*
 * Close stress: rounds of a runtime with a few session ids. Producer
 * threads look sessions up by id (racing with close), submit single ops
 * and batches, and release their lookup handles. A closer thread closes
 * random sessions with DRAIN or CANCEL (sometimes two closers at once),
 * releases them and reopens the same id at once. Some ops close their own
 * session from inside. Each round ends with accel_runtime_destroy while
 * sessions are still open and some handles were never released. Every
 * other round the sessions' memory comes from the runtime's arena.
 *
 * Checked: every accepted op completes exactly once (ran, or ECLOSED
 * without running), nothing unaccepted runs, closers return only after
 * their session's ops are done, and stats add up for each closed session.
 * Runs under TSan and ASan.
 *
 * ACCEL_STRESS_SECONDS (default 2) sets the duration. Exit 0 = pass.
 *
 * Promises: 1
 */
#define _GNU_SOURCE /* nanosleep, clock_gettime */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core_util.h"
#include "runtime.h" /* rt->arena.from */
#include "stress_watchdog.h"

#define IDS 6
#define PRODUCERS 3
#define PER_PRODUCER 20000

typedef struct rec {
    _Atomic int fn_calls, done_calls, status, accepted;
} rec;

static _Atomic int stop, fails;
static accel_runtime *rt;

#define FAIL(...)                                                              \
    do {                                                                       \
        fprintf(stderr, "FAIL: " __VA_ARGS__);                                 \
        fputc('\n', stderr);                                                   \
        atomic_fetch_add(&fails, 1);                                           \
    } while (0)

static int op_fn(accel_ctx *ctx, void *arg)
{
    rec *r = arg;
    atomic_fetch_add_explicit(&r->fn_calls, 1, memory_order_relaxed);
    uintptr_t k = (uintptr_t)r / sizeof(rec);
    if (k % 997 == 0) /* now and then an op closes its own session */
        accel_session_close(accel_ctx_session(ctx),
                            k & 1 ? ACCEL_CLOSE_CANCEL : ACCEL_CLOSE_DRAIN);
    return k % 7 == 0 ? 5 : 0;
}

static void done_fn(void *arg, int status)
{
    rec *r = arg;
    atomic_store_explicit(&r->status, status, memory_order_relaxed);
    /* release: the checker reads status after seeing done_calls. */
    atomic_fetch_add_explicit(&r->done_calls, 1, memory_order_release);
}

typedef struct producer {
    rec *recs;
    int used;
    uint64_t seed;
} producer;

static void *producer_main(void *p)
{
    producer *a = p;
    char id[16];
    while (!atomic_load_explicit(&stop, memory_order_relaxed) &&
           a->used < PER_PRODUCER - 8) {
        snprintf(id, sizeof(id), "c%d", (int)(tu_rand(&a->seed) % IDS));
        accel_session *s = NULL;
        int rc = accel_session_lookup(rt, id, &s);
        if (rc == ACCEL_ENOENT)
            continue;
        if (rc != ACCEL_OK) {
            FAIL("lookup %d", rc);
            continue;
        }
        int burst = 1 + (int)(tu_rand(&a->seed) % 32);
        for (int b = 0; b < burst && a->used < PER_PRODUCER - 8; b++) {
            if (tu_rand(&a->seed) % 4 == 0) {
                accel_op ops[8];
                for (int i = 0; i < 8; i++)
                    ops[i] = (accel_op){.fn = op_fn, .done = done_fn,
                                        .arg = &a->recs[a->used + i]};
                size_t acc = 0;
                rc = accel_submit_batch(s, ops, 8, ACCEL_FOREVER, &acc);
                for (size_t i = 0; i < acc; i++)
                    atomic_store_explicit(&a->recs[a->used + (int)i].accepted,
                                          1, memory_order_relaxed);
                a->used += (int)acc;
            } else {
                rec *r = &a->recs[a->used];
                accel_op op = {.fn = op_fn, .done = done_fn, .arg = r};
                rc = accel_submit(s, &op, tu_rand(&a->seed) % 2
                                              ? ACCEL_FOREVER
                                              : ACCEL_NO_WAIT);
                if (rc == ACCEL_OK) {
                    atomic_store_explicit(&r->accepted, 1,
                                          memory_order_relaxed);
                    a->used++;
                }
            }
            if (rc == ACCEL_ECLOSED)
                break;
            if (rc != ACCEL_OK && rc != ACCEL_EAGAIN)
                FAIL("submit %d", rc);
        }
        accel_session_release(s);
    }
    return NULL;
}

static void *second_closer(void *p)
{
    closer_arg *c = p; /* core_util.h */
    if (accel_session_close(c->s, c->flags) != ACCEL_OK)
        FAIL("second close");
    return NULL;
}

static accel_session *open_id(int i)
{
    char id[16];
    snprintf(id, sizeof(id), "c%d", i);
    accel_session_config c = {.id = id, .queue_depth = 1u << (i % 6)};
    accel_session *s = NULL;
    int rc = accel_session_open(rt, &c, &s);
    if (rc != ACCEL_OK)
        FAIL("open %s: %d", id, rc);
    return rc == ACCEL_OK ? s : NULL;
}

static void check_closed_stats(accel_session *s)
{
    accel_session_stats st;
    accel_session_get_stats(s, &st);
    if (st.completed + st.failed + st.cancelled != st.submitted ||
        st.queued != 0 || st.dispatched != st.completed + st.failed)
        FAIL("stats after close: submitted %llu completed %llu failed %llu "
             "canceled %llu queued %llu",
             (unsigned long long)st.submitted,
             (unsigned long long)st.completed, (unsigned long long)st.failed,
             (unsigned long long)st.cancelled, (unsigned long long)st.queued);
}

static long closes, reopens;

static void closer_loop(accel_session **open_h, uint64_t *seed, double until)
{
    while (tu_now_s() < until && !atomic_load(&fails)) {
        tu_nap_us((long)(tu_rand(seed) % 500));
        int i = (int)(tu_rand(seed) % IDS);
        unsigned flags = tu_rand(seed) % 2 ? ACCEL_CLOSE_CANCEL : 0;
        closer_arg c2 = {.s = open_h[i], .flags = flags ^ 1};
        pthread_t t2;
        int two = tu_rand(seed) % 4 == 0;
        if (two)
            pthread_create(&t2, NULL, second_closer, &c2);
        if (accel_session_close(open_h[i], flags) != ACCEL_OK)
            FAIL("close");
        check_closed_stats(open_h[i]); /* close waited: all done */
        if (two)
            pthread_join(t2, NULL);
        accel_session_release(open_h[i]);
        closes++;
        open_h[i] = open_id(i); /* the id is free again */
        reopens++;
    }
}

int main(void)
{
    double secs = tu_stress_seconds(), end = tu_now_s() + secs;
    watchdog_start("stress_close");
    uint64_t seed = 42;
    long rounds = 0, accepted = 0, ran = 0, canceled = 0;
    producer pr[PRODUCERS];
    for (int i = 0; i < PRODUCERS; i++)
        pr[i].recs = malloc(PER_PRODUCER * sizeof(rec));
    do {
        watchdog_step("round: create, open, start producers", 120);
        rt = tu_runtime(2);
        if (!rt)
            return 1;
        /* Every other round takes its sessions from the arena (arena.h)
         * from the first one: its reuse of a closed session's memory for
         * the reopened id is then checked here too. */
        if (rounds % 2 == 0)
            rt->arena.from = 0;
        accel_session *open_h[IDS];
        for (int i = 0; i < IDS; i++)
            open_h[i] = open_id(i);
        atomic_store(&stop, 0);
        pthread_t th[PRODUCERS];
        for (int i = 0; i < PRODUCERS; i++) {
            memset(pr[i].recs, 0, PER_PRODUCER * sizeof(rec));
            pr[i].used = 0;
            pr[i].seed = tu_rand(&seed) | 1;
            pthread_create(&th[i], NULL, producer_main, &pr[i]);
        }
        /* The closer runs on this thread until the round ends. */
        watchdog_step("round: closes and reopens racing the producers", 120);
        closer_loop(open_h, &seed, tu_now_s() + 0.25);
        atomic_store(&stop, 1);
        watchdog_step("round: join the producers", 120);
        for (int i = 0; i < PRODUCERS; i++)
            pthread_join(th[i], NULL);
        watchdog_step("round: release and runtime destroy", 120);
        /* Leave half the open handles unreleased: destroy frees them. */
        for (int i = 0; i < IDS; i += 2)
            accel_session_release(open_h[i]);
        if (accel_runtime_destroy(rt) != ACCEL_OK)
            FAIL("destroy");
        for (int p = 0; p < PRODUCERS; p++)
            for (int k = 0; k < PER_PRODUCER; k++) {
                rec *r = &pr[p].recs[k];
                int acc = atomic_load(&r->accepted);
                int dc = atomic_load_explicit(&r->done_calls,
                                              memory_order_acquire);
                int fc = atomic_load(&r->fn_calls), st = atomic_load(&r->status);
                if (!acc) {
                    if (dc || fc)
                        FAIL("round %ld: unaccepted op ran", rounds);
                    continue;
                }
                accepted++;
                if (dc != 1)
                    FAIL("round %ld p%d op %d: done called %d times", rounds,
                         p, k, dc);
                else if (st == ACCEL_ECLOSED && fc == 0)
                    canceled++;
                else if ((st == 0 || st == 5) && fc == 1)
                    ran++;
                else
                    FAIL("op %d: status %d after %d runs", k, st, fc);
            }
        rounds++;
    } while (tu_now_s() < end && !atomic_load(&fails));
    for (int i = 0; i < PRODUCERS; i++)
        free(pr[i].recs);
    printf("stress_close: %ld rounds, %ld closes+reopens, %ld accepted ops: "
           "%ld ran, %ld canceled, %d failures\n",
           rounds, closes, accepted, ran, canceled, atomic_load(&fails));
    (void)reopens;
    return atomic_load(&fails) ? 1 : 0;
}
