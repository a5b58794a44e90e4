/*
 * Budget stress: threads reserve and unreserve random sizes on one capped
 * session while its ops allocate and free through accel_ctx_alloc, and a
 * watcher samples the counter. The counter must never pass the cap nor go
 * negative, and at the end must equal exactly what the threads still hold.
 * A second session with its own cap runs the same mix to show budgets do
 * not leak into each other. Runs under TSan.
 *
 * ACCEL_STRESS_SECONDS (default 2) sets the duration. Exit 0 = pass.
 *
 * Promises: 4
 */
#define _GNU_SOURCE /* nanosleep, clock_gettime */
#include <pthread.h>
#include <stdio.h>

#include "core_util.h"
#include "stress_watchdog.h"

#define SESSIONS 2
#define RESERVERS 2 /* per session */
static const int64_t caps[SESSIONS] = {4096, 1000};

static _Atomic int stop;
static _Atomic long violations, op_errors, op_allocs, reserves, refusals;

typedef struct reserver {
    accel_session *s;
    int64_t cap, held;
    uint64_t seed;
    long errors;
} reserver;

static void *reserver_main(void *p)
{
    reserver *r = p;
    int64_t stack[128];
    int depth = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        if (depth == 128 || (depth > 0 && tu_rand(&r->seed) % 2)) {
            int64_t b = stack[--depth];
            if (accel_session_unreserve(r->s, b) != ACCEL_OK)
                r->errors++;
            r->held -= b;
        } else {
            int64_t b = (int64_t)(tu_rand(&r->seed) % (uint64_t)(r->cap / 3));
            int rc = accel_session_reserve(r->s, b);
            if (rc == ACCEL_OK) {
                stack[depth++] = b;
                r->held += b;
                atomic_fetch_add_explicit(&reserves, 1, memory_order_relaxed);
            } else if (rc == ACCEL_EBUDGET) {
                atomic_fetch_add_explicit(&refusals, 1, memory_order_relaxed);
            } else {
                r->errors++;
            }
        }
    }
    return NULL;
}

typedef struct sess {
    accel_session *s;
    int64_t cap;
} sess;

static void *watcher_main(void *p)
{
    sess *ss = p;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        for (int i = 0; i < SESSIONS; i++) {
            int64_t u = accel_session_memory_used(ss[i].s);
            if (u < 0 || u > ss[i].cap)
                atomic_fetch_add(&violations, 1);
        }
    return NULL;
}

static int op_alloc(accel_ctx *ctx, void *arg)
{
    uint64_t seed = (uint64_t)(uintptr_t)arg;
    int64_t cap = (int64_t)(seed >> 48); /* the session's cap, see main */
    void *p[8];
    int n = 0;
    for (int i = 0; i < 8; i++) {
        size_t b = (size_t)(tu_rand(&seed) % (uint64_t)(cap / 4)) + 1;
        int rc = accel_ctx_alloc(ctx, b, &p[n]);
        if (rc == ACCEL_OK) {
            ((unsigned char *)p[n])[b - 1] = 1; /* it is real memory */
            n++;
            atomic_fetch_add_explicit(&op_allocs, 1, memory_order_relaxed);
        } else if (rc != ACCEL_EBUDGET) {
            atomic_fetch_add(&op_errors, 1);
        }
    }
    while (n > 0)
        accel_ctx_free(ctx, p[--n]);
    return 0;
}

int main(void)
{
    double secs = tu_stress_seconds();
    watchdog_start("stress_budget");
    watchdog_step("setup", 120);
    accel_runtime *rt = tu_runtime(2);
    if (!rt)
        return 1;
    sess ss[SESSIONS];
    reserver rs[SESSIONS * RESERVERS];
    pthread_t th[SESSIONS * RESERVERS], wt;
    for (int i = 0; i < SESSIONS; i++) {
        char id[16];
        snprintf(id, sizeof(id), "b%d", i);
        ss[i] = (sess){.s = tu_open(rt, id, 64, caps[i]), .cap = caps[i]};
        if (!ss[i].s)
            return 1;
    }
    for (int i = 0; i < SESSIONS * RESERVERS; i++) {
        rs[i] = (reserver){.s = ss[i % SESSIONS].s,
                           .cap = caps[i % SESSIONS],
                           .seed = 99 + (uint64_t)i};
        pthread_create(&th[i], NULL, reserver_main, &rs[i]);
    }
    pthread_create(&wt, NULL, watcher_main, ss);

    /* This thread feeds both sessions allocating ops. The op's seed carries
     * the session's cap in its top bits. */
    watchdog_step("run: submitting allocating ops", secs + 120);
    double end = tu_now_s() + secs;
    uint64_t seed = 5, submitted = 0;
    while (tu_now_s() < end) {
        for (int i = 0; i < SESSIONS; i++) {
            uint64_t a = ((uint64_t)caps[i] << 48) |
                         (tu_rand(&seed) & ((UINT64_C(1) << 48) - 1));
            accel_op op = {.fn = op_alloc, .arg = (void *)(uintptr_t)a};
            if (accel_submit(ss[i].s, &op, ACCEL_FOREVER) != ACCEL_OK)
                atomic_fetch_add(&op_errors, 1);
            submitted++;
        }
    }
    watchdog_step("sync every session", 120);
    for (int i = 0; i < SESSIONS; i++)
        accel_session_sync(ss[i].s, ACCEL_FOREVER);
    atomic_store(&stop, 1);
    watchdog_step("join the reservers and the watcher", 120);
    long errors = 0;
    int64_t held[SESSIONS] = {0};
    for (int i = 0; i < SESSIONS * RESERVERS; i++) {
        pthread_join(th[i], NULL);
        errors += rs[i].errors;
        held[i % SESSIONS] += rs[i].held;
    }
    pthread_join(wt, NULL);
    int fail = 0;
    for (int i = 0; i < SESSIONS; i++) {
        int64_t u = accel_session_memory_used(ss[i].s);
        if (u != held[i]) {
            fprintf(stderr, "FAIL: session %d: used %lld, threads hold %lld\n",
                    i, (long long)u, (long long)held[i]);
            fail = 1;
        }
        if (accel_session_unreserve(ss[i].s, held[i]) != ACCEL_OK ||
            accel_session_memory_used(ss[i].s) != 0)
            fail = 1;
        accel_session_release(ss[i].s);
    }
    watchdog_step("runtime destroy", 120);
    if (accel_runtime_destroy(rt) != ACCEL_OK)
        fail = 1;
    if (errors || atomic_load(&violations) || atomic_load(&op_errors)) {
        fprintf(stderr, "FAIL: errors %ld, cap violations %ld, op errors %ld\n",
                errors, atomic_load(&violations), atomic_load(&op_errors));
        fail = 1;
    }
    if (atomic_load(&refusals) == 0 || atomic_load(&op_allocs) == 0) {
        fprintf(stderr, "FAIL: the cap was never hit or no op allocated\n");
        fail = 1;
    }
    printf("stress_budget: %llu ops, %ld op allocations, %ld reserves, %ld "
           "refused at the cap, 0 violations%s\n",
           (unsigned long long)submitted, atomic_load(&op_allocs),
           atomic_load(&reserves), atomic_load(&refusals),
           fail ? " [FAILED]" : "");
    return fail;
}
