/*
 * Metrics stress: scrapes (accel_runtime_write_prometheus) racing opens,
 * closes and releases. Two threads open "dup", close it and release it
 * over and over (each close naps in the window between unpublishing the
 * id and its LP: session.c's test hook), a third opens, submits to,
 * closes and releases a few other ids, and the main thread scrapes.
 *
 * Checked in every scrape: no session is listed twice (no two samples of
 * accel_session_ops_submitted_total with one label set), and
 * accel_runtime_sessions is the count of sessions listed. Under TSan: the
 * snapshot's reads of a session (its table node, counters and id) race
 * nothing that close, open or the reclamation write.
 *
 * ACCEL_STRESS_SECONDS (default 2) sets the duration. Exit 0 = pass.
 *
 * Promises: none
 */
#define _GNU_SOURCE /* nanosleep, clock_gettime */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_util.h"
#include "session.h" /* accel__close_window_hook */
#include "stress_watchdog.h"

#define SERIES "accel_session_ops_submitted_total{"

static _Atomic int stop;
static accel_runtime *rt;
static _Atomic long opens;

static int op_ok(accel_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    return 0;
}

static void nap_in_close_window(accel_session *s)
{
    (void)s;
    tu_nap_us(20);
}

static void *reopen_main(void *arg)
{
    (void)arg;
    accel_session_config cfg = {.id = "dup", .queue_depth = 4};
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        accel_session *s = NULL;
        if (accel_session_open(rt, &cfg, &s) != ACCEL_OK)
            continue; /* EEXIST: the other thread holds the id */
        atomic_fetch_add_explicit(&opens, 1, memory_order_relaxed);
        accel_session_close(s, ACCEL_CLOSE_DRAIN);
        accel_session_release(s);
    }
    return NULL;
}

static void *churn_main(void *arg)
{
    (void)arg;
    uint64_t seed = 7;
    char id[16];
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        snprintf(id, sizeof(id), "c%d", (int)(tu_rand(&seed) % 4));
        accel_session_config cfg = {.id = id, .queue_depth = 8};
        accel_session *s = NULL;
        if (accel_session_open(rt, &cfg, &s) != ACCEL_OK)
            continue;
        atomic_fetch_add_explicit(&opens, 1, memory_order_relaxed);
        accel_op op = {.fn = op_ok};
        (void)accel_submit(s, &op, ACCEL_NO_WAIT);
        if (tu_rand(&seed) & 1)
            accel_session_close(s, ACCEL_CLOSE_CANCEL);
        accel_session_release(s);
    }
    return NULL;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 0 if the scrape lists no session twice and its gauge is the count
 * listed; else prints why and returns 1. t is modified (cut into lines). */
static int check_scrape(char *t, long k)
{
    static char *series[256];
    int n = 0;
    double gauge = -1;
    for (char *l = t; l && *l;) {
        char *nl = strchr(l, '\n');
        if (nl)
            *nl = 0;
        if (strncmp(l, "accel_runtime_sessions ", 23) == 0)
            gauge = atof(l + 23);
        if (strncmp(l, SERIES, strlen(SERIES)) == 0) {
            char *sp = strrchr(l, ' ');
            if (sp)
                *sp = 0; /* the label set, without the value */
            if (n == 256) {
                fprintf(stderr, "FAIL: scrape %ld: over 256 sessions\n", k);
                return 1;
            }
            series[n++] = l;
        }
        l = nl ? nl + 1 : NULL;
    }
    qsort(series, (size_t)n, sizeof(series[0]), cmp_str);
    for (int i = 1; i < n; i++)
        if (strcmp(series[i - 1], series[i]) == 0) {
            fprintf(stderr, "FAIL: scrape %ld lists a session twice: %s\n",
                    k, series[i]);
            return 1;
        }
    if (gauge != n) {
        fprintf(stderr, "FAIL: scrape %ld: accel_runtime_sessions %g, %d "
                        "sessions listed\n", k, gauge, n);
        return 1;
    }
    return 0;
}

int main(void)
{
    watchdog_start("stress_metrics");
    double secs = tu_stress_seconds();
    rt = tu_runtime(2);
    if (!rt)
        return 1;
    atomic_store(&accel__close_window_hook, nap_in_close_window);
    pthread_t th[3];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, reopen_main, NULL);
    pthread_create(&th[2], NULL, churn_main, NULL);
    watchdog_step("scrapes racing opens and closes", secs + 120);
    static char buf[1 << 16];
    long scrapes = 0, bad = 0;
    double end = tu_now_s() + secs;
    while (tu_now_s() < end && bad < 5) {
        size_t len = 0;
        if (accel_runtime_write_prometheus(rt, buf, sizeof(buf), &len) !=
                ACCEL_OK ||
            len >= sizeof(buf)) {
            fprintf(stderr, "FAIL: scrape %ld: not written whole\n", scrapes);
            bad++;
            break;
        }
        bad += check_scrape(buf, scrapes++);
    }
    atomic_store(&stop, 1);
    watchdog_step("join the opening threads", 120);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    atomic_store(&accel__close_window_hook, NULL);
    watchdog_step("runtime destroy", 120);
    if (accel_runtime_destroy(rt) != ACCEL_OK) {
        fprintf(stderr, "FAIL: destroy\n");
        bad++;
    }
    printf("stress_metrics: %ld scrapes, %ld opens: %s\n", scrapes,
           atomic_load(&opens), bad ? "FAILED" : "ok");
    return bad ? 1 : 0;
}
