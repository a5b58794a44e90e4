/*
 * Ops that block, under stress (runtime/compensate.c): producers submit
 * to 8 sessions of a 2-worker runtime ops that
 *   - submit_wait an op on a session of higher index (chains up to the
 *     last session: no cycle, so every chain can end),
 *   - sync another session of higher index from inside the op,
 *   - nap between accel_blocking_begin/_end,
 *   - nap without an announcement (the monitor's case, block_detect_ns 500 us),
 *   - or spin a little (CPU),
 * while extra workers start, leave when surplus and retire when idle.
 *
 * Checked: every accepted op's done ran exactly once, and the dones of
 * one producer's ops on one session came in submit order (plain counters
 * written by the dones, so TSan checks their hand-over between workers,
 * extra ones included); nested results come back; at the end no worker
 * counts as blocked and every extra worker retires. A hang (a lost
 * hand-off) is caught by a watchdog that names the stuck step.
 *
 * Usage: accel_stress_blocking   (ACCEL_STRESS_SECONDS, default 1)
 * Exit 0 when every check passed, 1 otherwise.
 *
 * Promises: 1, 2, 7
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core_util.h"
#include "stress_fail.h"
#include "stress_watchdog.h"

#define NPROD 3
#define NSESS 8

static accel_runtime *rt;
static accel_session *sess[NSESS];
/* per (producer, session): the next seq its dones must see (plain: the
 * session's dones run one at a time, in order, handed over by the ring) */
static uint64_t next_done[NPROD][NSESS];
static _Atomic uint64_t accepted, done_calls, nested_ok;

typedef struct rec {
    int prod, sess, kind;
    uint64_t seq;
    uint32_t rnd;
} rec;

static int leaf(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    return (int)(intptr_t)arg;
}

static int op_fn(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    rec *r = arg;
    int up = r->sess + 1 + (int)(r->rnd % (NSESS - r->sess > 1
                                               ? (uint32_t)(NSESS - r->sess - 1)
                                               : 1u));
    switch (r->kind) {
    case 0: /* nested submit_wait, further up */
        if (up < NSESS) {
            int v = accel_submit_wait(sess[up], leaf, (void *)(intptr_t)42,
                                      ACCEL_FOREVER);
            if (v != 42 && v != ACCEL_ECLOSED)
                failf("nested submit_wait returned %d", v);
            else
                atomic_fetch_add(&nested_ok, 1);
        }
        break;
    case 1: /* sync of another session */
        if (up < NSESS && accel_session_sync(sess[up], ACCEL_FOREVER) != ACCEL_OK)
            failf("sync from inside an op failed");
        break;
    case 2: /* an announced nap */
        if (accel_blocking_begin() != ACCEL_OK)
            failf("blocking_begin");
        tu_nap_us(200 + r->rnd % 800);
        if (accel_blocking_end() != ACCEL_OK)
            failf("blocking_end");
        break;
    case 3: /* a nap the monitor must find */
        tu_nap_us(500 + r->rnd % 2000);
        break;
    default: { /* CPU */
        volatile uint32_t x = r->rnd;
        for (int i = 0; i < 2000; i++)
            x = x * 1103515245u + 12345u;
        break;
    }
    }
    return 0;
}

static void op_done(void *arg, int status)
{
    rec *r = arg;
    if (status != 0)
        failf("op of session %d ended with %d", r->sess, status);
    uint64_t *next = &next_done[r->prod][r->sess];
    if (r->seq != *next)
        failf("session %d producer %d: done of seq %llu, expected %llu",
              r->sess, r->prod, (unsigned long long)r->seq,
              (unsigned long long)*next);
    *next = r->seq + 1;
    atomic_fetch_add(&done_calls, 1);
    free(r);
}

static double seconds = 1.0;

static void *producer(void *arg)
{
    int p = (int)(intptr_t)arg;
    uint64_t seq[NSESS];
    for (int i = 0; i < NSESS; i++)
        seq[i] = 1;
    uint32_t rnd = 2654435761u * (uint32_t)(p + 1);
    int64_t end = accel_now_ns() + (int64_t)(seconds * 1e9);
    while (accel_now_ns() < end) {
        rnd = rnd * 1664525u + 1013904223u;
        int s = (int)((rnd >> 8) % NSESS);
        rec *r = malloc(sizeof(*r));
        *r = (rec){.prod = p, .sess = s, .kind = (int)((rnd >> 16) % 6),
                   .seq = seq[s], .rnd = rnd >> 4};
        accel_op op = {.fn = op_fn, .done = op_done, .arg = r};
        int rc = accel_submit(sess[s], &op, ACCEL_FOREVER);
        if (rc != ACCEL_OK) {
            failf("submit: %d", rc);
            free(r);
            continue;
        }
        seq[s]++;
        atomic_fetch_add(&accepted, 1);
        if ((rnd & 15) == 0)
            tu_nap_us(100);
    }
    return NULL;
}

int main(void)
{
    const char *env = getenv("ACCEL_STRESS_SECONDS");
    if (env)
        seconds = atof(env);
    /* Each step's limit is many times what it takes on a loaded machine
     * (sanitizer builds included). */
    watchdog_start("stress_blocking");
    watchdog_step("runtime create and session opens", 120);
    accel_runtime_config c = {.workers = 2,
                              .struct_size = sizeof(c),
                              .block_detect_ns = 500000};
    if (accel_runtime_create(&c, &rt) != ACCEL_OK) {
        fprintf(stderr, "FAIL: runtime_create\n");
        return 1;
    }
    for (int i = 0; i < NSESS; i++) {
        char id[16];
        snprintf(id, sizeof(id), "s%d", i);
        accel_session_config sc = {.id = id, .priority = (uint32_t)(1 + i % 3) * 5};
        if (accel_session_open(rt, &sc, &sess[i]) != ACCEL_OK) {
            fprintf(stderr, "FAIL: open\n");
            return 1;
        }
        for (int p = 0; p < NPROD; p++)
            next_done[p][i] = 1;
    }
    watchdog_step("producers submitting", seconds * 20 + 120);
    pthread_t th[NPROD];
    for (int p = 0; p < NPROD; p++)
        pthread_create(&th[p], NULL, producer, (void *)(intptr_t)p);
    for (int p = 0; p < NPROD; p++)
        pthread_join(th[p], NULL);
    watchdog_step("syncing every session", 120);
    for (int i = 0; i < NSESS; i++)
        if (accel_session_sync(sess[i], ACCEL_FOREVER) != ACCEL_OK)
            failf("sync %d", i);
    if (atomic_load(&done_calls) != atomic_load(&accepted))
        failf("%llu dones for %llu accepted ops",
              (unsigned long long)atomic_load(&done_calls),
              (unsigned long long)atomic_load(&accepted));
    accel_runtime_stats st;
    watchdog_step("waiting for blocked == 0 and the extras to retire", 120);
    do {
        tu_nap_us(1000);
        accel_runtime_get_stats(rt, &st, sizeof(st));
    } while (st.blocked != 0 || st.extra_workers != 0);
    printf("stress_blocking: %llu ops accepted, %llu nested, %llu extra "
           "workers started, %llu found blocked by the monitor\n",
           (unsigned long long)atomic_load(&accepted),
           (unsigned long long)atomic_load(&nested_ok),
           (unsigned long long)st.extra_started,
           (unsigned long long)st.blocked_detected);
    watchdog_step("destroy", 120);
    for (int i = 0; i < NSESS; i++)
        accel_session_release(sess[i]);
    if (accel_runtime_destroy(rt) != ACCEL_OK)
        failf("destroy");
    uint64_t f = atomic_load(&stress_failures);
    if (f)
        fprintf(stderr, "stress_blocking: %llu failures\n", (unsigned long long)f);
    return f ? 1 : 0;
}
