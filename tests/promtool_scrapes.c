/*
 * Writes Prometheus scrapes (accel_runtime_write_prometheus) of chosen
 * runtimes into files of a directory, for tests/check_promtool_metrics.sh
 * to feed to Prometheus' own parser (promtool check metrics):
 *
 *   empty.prom          a runtime with no session
 *   odd_ids.prom        ids with quotes, backslashes, newlines, control
 *                       bytes, label syntax, bytes that are not UTF-8,
 *                       well-formed UTF-8, the longest id; priorities 1
 *                       and 1000; ops that failed, were canceled or
 *                       expired; batched sessions, some held back (an
 *                       id cannot hold a NUL: C strings)
 *   many_sessions.prom  2000 sessions that ran ops
 *   reopen_window.prom  a session closing (held between unpublishing its
 *                       id and its LP: session.c's test hook) while
 *                       another is open with its id
 *   churn_NN.prom       scrapes while threads open, close and reopen ids
 *
 * Usage: promtool_scrapes DIR. Exit 0 when every file was written. A wait
 * that hangs fails the run naming its step (stress_watchdog.h: exit 124).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_util.h"
#include "session.h" /* accel__close_window_hook */
#include "stress_watchdog.h"

#define CHURN_SCRAPES 40
#define STEP_S 60 /* a watchdog: each step takes milliseconds */

static const char *dir;

static int fail(const char *what)
{
    fprintf(stderr, "promtool_scrapes: %s\n", what);
    return 1;
}

/* Scrapes rt into DIR/name. 0 on success. */
static int write_scrape(accel_runtime *rt, const char *name)
{
    size_t need = 0;
    if (accel_runtime_write_prometheus(rt, NULL, 0, &need) != ACCEL_OK)
        return fail("write_prometheus (length)");
    char *buf = NULL;
    for (;;) {
        size_t cap = need + need / 4 + 4096;
        free(buf);
        buf = malloc(cap);
        if (!buf)
            return fail("out of memory");
        if (accel_runtime_write_prometheus(rt, buf, cap, &need) != ACCEL_OK)
            return free(buf), fail("write_prometheus");
        if (need < cap)
            break;
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    int rc = !f || fwrite(buf, 1, need, f) != need;
    if (f && fclose(f) != 0)
        rc = 1;
    free(buf);
    return rc ? fail(path) : 0;
}

static int op_ok(accel_ctx *c, void *a)
{
    (void)c, (void)a;
    return 0;
}

static int op_fail(accel_ctx *c, void *a)
{
    (void)c, (void)a;
    return 3;
}

/* A batch function (odd_ids' batched sessions: the ops-per-batch
 * histogram and the held-back time in the scrape). */
static void batch_ok(accel_ctx *c, void *const *args, uint32_t n, int *status,
                     void *user)
{
    (void)c, (void)args, (void)n, (void)status, (void)user;
}

static accel_session *open_id(accel_runtime *rt, const char *id)
{
    accel_session_config c = {.id = id, .queue_depth = 8,
                              .memory_budget = 1 << 20};
    accel_session *s = NULL;
    return accel_session_open(rt, &c, &s) == ACCEL_OK ? s : NULL;
}

static int odd_ids(void)
{
    static char longest[ACCEL_ID_MAX + 1];
    memset(longest, 'L', ACCEL_ID_MAX);
    static const char *const ids[] = {
        "plain",
        "quote\"d",
        "back\\slash",
        "trailing\\",
        "new\nline",
        "\\\"\n",
        "\\n not a newline",
        "tab\tand\rcr",
        "ctl\x01\x1f\x7f",
        "{label=\"syntax\",x}",
        "# not a comment",
        "spaces  in it ",
        "b\xff" "a\xc3(",                           /* not UTF-8 */
        "\xc0\xaf" "\xed\xa0\x80" "\xf0\x9f\x98",    /* overlong, surrogate,
                                                        cut */
        "caf\xc3\xa9-\xf0\x9f\x98\x80",              /* UTF-8 */
        longest,
    };
    size_t n = sizeof(ids) / sizeof(ids[0]);
    accel_runtime *rt = tu_runtime(2);
    if (!rt)
        return fail("runtime");
    accel_session *ss[sizeof(ids) / sizeof(ids[0])];
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        ss[i] = open_id(rt, ids[i]);
        if (!ss[i])
            return fail("open of an odd id");
        accel_session_set_priority(ss[i], i == 0 ? 1000 : (uint32_t)(i % 3 + 1));
        /* every other one batched, every fourth held back 1 ms */
        accel_batch_config bc = {.fn = batch_ok, .max_ops = 4,
                                 .max_delay_ns = i % 4 == 0 ? 1000000 : 0};
        if (i % 2 == 0 && accel_session_set_batch(ss[i], &bc) != ACCEL_OK)
            return fail("set_batch");
        accel_submit_wait(ss[i], op_ok, NULL, ACCEL_FOREVER);
        accel_submit_wait(ss[i], op_fail, NULL, ACCEL_FOREVER);
        accel_session_reserve(ss[i], 100);
    }
    /* a canceled and an expired op */
    accel_op op = {.fn = op_ok};
    accel_ticket t;
    if (accel_submit_ex(ss[1], &op, 1, ACCEL_FOREVER, NULL) != ACCEL_OK ||
        accel_submit_ex(ss[2], &op, 0, ACCEL_FOREVER, &t) != ACCEL_OK)
        return fail("submit_ex");
    (void)accel_cancel(&t);
    watchdog_step("odd ids: the ops complete (sync)", STEP_S);
    for (size_t i = 0; i < n; i++)
        accel_session_sync(ss[i], ACCEL_FOREVER);
    watchdog_step("odd ids: scrape, release, destroy", STEP_S);
    rc |= write_scrape(rt, "odd_ids.prom");
    for (size_t i = 0; i < n; i++)
        accel_session_release(ss[i]);
    accel_runtime_destroy(rt);
    return rc;
}

static int many_sessions(void)
{
    accel_runtime *rt = tu_runtime(2);
    if (!rt)
        return fail("runtime");
    enum { N = 2000 };
    static accel_session *ss[N];
    for (int i = 0; i < N; i++) {
        char id[32];
        snprintf(id, sizeof(id), "vm-%04d", i);
        if (!(ss[i] = open_id(rt, id)))
            return fail("open");
        accel_op op = {.fn = i % 5 ? op_ok : op_fail};
        (void)accel_submit(ss[i], &op, ACCEL_FOREVER);
    }
    watchdog_step("many sessions: the ops complete (sync)", STEP_S);
    for (int i = 0; i < N; i++)
        accel_session_sync(ss[i], ACCEL_FOREVER);
    watchdog_step("many sessions: scrape, release, destroy", STEP_S);
    int rc = write_scrape(rt, "many_sessions.prom");
    for (int i = 0; i < N; i++)
        accel_session_release(ss[i]);
    accel_runtime_destroy(rt);
    return rc;
}

static tu_latch window_entered, window_leave;
static accel_session *_Atomic window_target;

static void hold_close_window(accel_session *s)
{
    if (s != atomic_load(&window_target))
        return;
    tu_latch_open(&window_entered);
    tu_latch_wait(&window_leave);
}

static int reopen_window(void)
{
    accel_runtime *rt = tu_runtime(1);
    accel_session *old = rt ? open_id(rt, "dup") : NULL;
    if (!old)
        return fail("open");
    accel_submit_wait(old, op_ok, NULL, ACCEL_FOREVER);
    atomic_store(&window_target, old);
    atomic_store(&accel__close_window_hook, hold_close_window);
    closer_arg ca = {.s = old, .flags = ACCEL_CLOSE_DRAIN};
    pthread_t th;
    if (pthread_create(&th, NULL, closer_main, &ca) != 0)
        return fail("thread");
    watchdog_step("reopen window: the closer reaches its close window "
                  "(latch)", STEP_S);
    tu_latch_wait(&window_entered);
    watchdog_step("reopen window: reopen and scrape", STEP_S);
    accel_session *reopened = open_id(rt, "dup");
    int rc = reopened ? write_scrape(rt, "reopen_window.prom")
                      : fail("reopen in the close window");
    tu_latch_open(&window_leave);
    watchdog_step("reopen window: the closer's close returns (join)",
                  STEP_S);
    pthread_join(th, NULL);
    watchdog_step("reopen window: release and destroy", STEP_S);
    atomic_store(&accel__close_window_hook, NULL);
    accel_session_release(old);
    accel_session_release(reopened);
    accel_runtime_destroy(rt);
    return rc;
}

static _Atomic int churn_stop;
static accel_runtime *churn_rt;

static void nap_in_close_window(accel_session *s)
{
    (void)s;
    tu_nap_us(20);
}

static void *churn_main(void *arg)
{
    uint64_t seed = (uintptr_t)arg + 1; /* the thread's index */
    accel_runtime *rt = churn_rt;
    char id[16];
    while (!atomic_load_explicit(&churn_stop, memory_order_relaxed)) {
        snprintf(id, sizeof(id), "churn-%d", (int)(tu_rand(&seed) % 3));
        accel_session *s = open_id(rt, id);
        if (!s)
            continue;
        accel_op op = {.fn = op_ok};
        (void)accel_submit(s, &op, ACCEL_NO_WAIT);
        tu_nap_us(200); /* open a while: listed */
        accel_session_close(s, tu_rand(&seed) & 1 ? ACCEL_CLOSE_CANCEL
                                                  : ACCEL_CLOSE_DRAIN);
        accel_session_release(s);
    }
    return NULL;
}

static int churn(void)
{
    accel_runtime *rt = churn_rt = tu_runtime(2);
    if (!rt)
        return fail("runtime");
    atomic_store(&accel__close_window_hook, nap_in_close_window);
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, churn_main, (void *)(uintptr_t)i);
    int rc = 0;
    watchdog_step("churn: scrapes while threads open and close", STEP_S);
    for (int k = 0; k < CHURN_SCRAPES && !rc; k++) {
        char name[32];
        snprintf(name, sizeof(name), "churn_%02d.prom", k);
        rc = write_scrape(rt, name);
        tu_nap_us(500);
    }
    atomic_store(&churn_stop, 1);
    watchdog_step("churn: the churning threads stop (join)", STEP_S);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    watchdog_step("churn: destroy", STEP_S);
    atomic_store(&accel__close_window_hook, NULL);
    accel_runtime_destroy(rt);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    watchdog_start("promtool_scrapes");
    watchdog_step("empty runtime: scrape and destroy", STEP_S);
    accel_runtime *rt = tu_runtime(1);
    int rc = !rt || write_scrape(rt, "empty.prom");
    if (rt)
        accel_runtime_destroy(rt);
    watchdog_step("odd ids: open, submit, cancel", STEP_S);
    rc |= odd_ids();
    watchdog_step("many sessions: open and submit", STEP_S);
    rc |= many_sessions();
    watchdog_step("reopen window: open and start the closer", STEP_S);
    rc |= reopen_window();
    rc |= churn();
    watchdog_step("exit", STEP_S);
    return rc;
}
