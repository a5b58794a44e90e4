/*
 * accel_runtime_write_prometheus: the text checked with a small parser of
 * the exposition format (HELP/TYPE before samples, families contiguous,
 * names and escaped label values well-formed, values numbers), the values
 * of a known session, escaping, snprintf-like truncation, and scrapes
 * racing opens and closes (ASan: no use after free), an id listed once
 * while opens of it fail and while it closes and is opened again (the
 * sessions gauge counting what is listed), non-UTF-8 ids replaced.
 *
 * Promises: 5
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <errno.h>
#include <iconv.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_util.h"
#include "session.h"
#include "unit_watchdog.h"

UNIT_WATCHDOG_SUITE(metrics);

#define MAX_FAMILIES 64

typedef struct prom {
    char family[MAX_FAMILIES][96];
    char type[MAX_FAMILIES][16];
    int nfam;
    int samples;
    char err[1400];
} prom;

static int name_ok(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    c == '_' || c == ':';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
            return 0;
    }
    return 1;
}

static int fam_index(prom *p, const char *name, size_t n)
{
    for (int i = 0; i < p->nfam; i++)
        if (strlen(p->family[i]) == n && strncmp(p->family[i], name, n) == 0)
            return i;
    return -1;
}

/* Parses one line; 0 or -1 with p->err set. */
static int parse_line(prom *p, const char *l, size_t len)
{
    char line[1024];
    if (len >= sizeof(line))
        return snprintf(p->err, sizeof(p->err), "line too long"), -1;
    memcpy(line, l, len);
    line[len] = 0;
    if (strncmp(line, "# HELP ", 7) == 0 || strncmp(line, "# TYPE ", 7) == 0) {
        int help = line[2] == 'H';
        char *name = line + 7, *sp = strchr(name, ' ');
        if (!sp || !name_ok(name, (size_t)(sp - name)))
            return snprintf(p->err, sizeof(p->err), "bad name: %s", line), -1;
        int i = fam_index(p, name, (size_t)(sp - name));
        if (help) {
            if (i >= 0)
                return snprintf(p->err, sizeof(p->err), "family repeated: %s",
                                line), -1;
            if (p->nfam == MAX_FAMILIES || sp - name >= 96)
                return snprintf(p->err, sizeof(p->err), "too many"), -1;
            memcpy(p->family[p->nfam], name, (size_t)(sp - name));
            p->family[p->nfam][sp - name] = 0;
            p->type[p->nfam][0] = 0;
            p->nfam++;
            if (!sp[1])
                return snprintf(p->err, sizeof(p->err), "empty help"), -1;
        } else {
            if (i != p->nfam - 1)
                return snprintf(p->err, sizeof(p->err),
                                "TYPE not right after its HELP: %s", line), -1;
            if (strcmp(sp + 1, "counter") && strcmp(sp + 1, "gauge") &&
                strcmp(sp + 1, "histogram"))
                return snprintf(p->err, sizeof(p->err), "type: %s", line), -1;
            snprintf(p->type[i], sizeof(p->type[i]), "%s", sp + 1);
        }
        return 0;
    }
    if (line[0] == '#')
        return snprintf(p->err, sizeof(p->err), "comment: %s", line), -1;
    /* sample: name[{k="v",...}] value */
    size_t n = strcspn(line, "{ ");
    if (!name_ok(line, n))
        return snprintf(p->err, sizeof(p->err), "sample name: %s", line), -1;
    int i = fam_index(p, line, n);
    /* a histogram's samples: its name + _bucket, _sum, _count */
    static const char *const hsuf[] = {"_bucket", "_sum", "_count"};
    for (int h = 0; i < 0 && h < 3; h++) {
        size_t sl = strlen(hsuf[h]);
        if (n > sl && strncmp(line + n - sl, hsuf[h], sl) == 0) {
            i = fam_index(p, line, n - sl);
            if (i >= 0 && strcmp(p->type[i], "histogram") != 0)
                i = -1;
        }
    }
    if (i < 0 || i != p->nfam - 1 || !p->type[i][0])
        return snprintf(p->err, sizeof(p->err),
                        "sample outside its family block: %s", line), -1;
    if (strcmp(p->type[i], "counter") == 0 &&
        (n < 6 || strncmp(line + n - 6, "_total", 6) != 0))
        return snprintf(p->err, sizeof(p->err), "counter without _total"), -1;
    const char *c = line + n;
    if (*c == '{') {
        c++;
        for (;;) {
            size_t k = strcspn(c, "=");
            if (!name_ok(c, k) || c[k] != '=' || c[k + 1] != '"')
                return snprintf(p->err, sizeof(p->err), "label: %s", line), -1;
            c += k + 2;
            while (*c && *c != '"') {
                if (*c == '\\') {
                    if (c[1] != '\\' && c[1] != '"' && c[1] != 'n')
                        return snprintf(p->err, sizeof(p->err), "escape"), -1;
                    c++;
                }
                c++;
            }
            if (*c != '"')
                return snprintf(p->err, sizeof(p->err), "unterminated"), -1;
            c++;
            if (*c == ',') {
                c++;
                continue;
            }
            if (*c != '}')
                return snprintf(p->err, sizeof(p->err), "labels end"), -1;
            c++;
            break;
        }
    }
    if (*c != ' ')
        return snprintf(p->err, sizeof(p->err), "no value: %s", line), -1;
    char *end;
    strtod(c + 1, &end);
    if (end == c + 1 || *end)
        return snprintf(p->err, sizeof(p->err), "value: %s", line), -1;
    p->samples++;
    return 0;
}

static int parse(prom *p, const char *text, size_t len)
{
    memset(p, 0, sizeof(*p));
    if (len == 0 || text[len - 1] != '\n')
        return snprintf(p->err, sizeof(p->err), "no final newline"), -1;
    size_t at = 0;
    while (at < len) {
        const char *nl = memchr(text + at, '\n', len - at);
        if (parse_line(p, text + at, (size_t)(nl - (text + at))) != 0)
            return -1;
        at = (size_t)(nl - text) + 1;
    }
    return 0;
}

static char *scrape(accel_runtime *rt, size_t *len)
{
    size_t need = 0;
    cr_assert_eq(accel_runtime_write_prometheus(rt, NULL, 0, &need), ACCEL_OK);
    for (;;) {
        size_t cap = need + 4096;
        char *buf = malloc(cap);
        cr_assert_not_null(buf);
        cr_assert_eq(accel_runtime_write_prometheus(rt, buf, cap, &need),
                     ACCEL_OK);
        if (need < cap) {
            cr_assert_eq(buf[need], 0);
            *len = need;
            return buf;
        }
        free(buf);
    }
}

/* The value of the sample starting with prefix, or -1. */
static double value_of(const char *text, const char *prefix)
{
    const char *at = text;
    size_t n = strlen(prefix);
    while ((at = strstr(at, prefix))) {
        if (at == text || at[-1] == '\n')
            return strtod(at + n, NULL);
        at += n;
    }
    return -1;
}

static int op_ok(accel_ctx *c, void *a)
{
    (void)c, (void)a;
    return 0;
}
static int op_fail(accel_ctx *c, void *a)
{
    (void)c, (void)a;
    return 7;
}

Test(metrics, format_parses_and_values_match, .timeout = 30)
{
    accel_runtime *rt = tu_runtime(2);
    accel_session *a = tu_open(rt, "chain-a", 0, 4096);
    cr_assert_eq(accel_session_set_priority(a, 10), ACCEL_OK);
    accel_session *b = tu_open(rt, "we\"ird\\id\nx", 0, 0);
    for (int i = 0; i < 40; i++)
        cr_assert_eq(accel_submit_wait(a, op_ok, NULL, ACCEL_FOREVER), 0);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(accel_submit_wait(a, op_fail, NULL, ACCEL_FOREVER), 7);
    cr_assert_eq(accel_session_reserve(a, 1000), ACCEL_OK);

    size_t len;
    char *t = scrape(rt, &len);
    prom p;
    cr_assert_eq(parse(&p, t, len), 0, "%s\n--- text:\n%s", p.err, t);
    cr_assert_geq(p.nfam, 17);
    cr_assert_geq(p.samples, 7 + 2 * 10);

    cr_assert_eq(value_of(t, "accel_runtime_workers "), 2);
    cr_assert_eq(value_of(t, "accel_runtime_sessions "), 2);
    cr_assert_geq(value_of(t, "accel_runtime_visits_total "), 1);
    const char *la = "{session=\"chain-a\",priority=\"10\"} ";
    char k[256];
#define VAL(name) (snprintf(k, sizeof(k), "%s%s", name, la), value_of(t, k))
    cr_assert_eq(VAL("accel_session_ops_submitted_total"), 43, "%s", t);
    cr_assert_eq(VAL("accel_session_ops_completed_total"), 40);
    cr_assert_eq(VAL("accel_session_ops_failed_total"), 3);
    cr_assert_eq(VAL("accel_session_ops_cancelled_total"), 0);
    cr_assert_eq(VAL("accel_session_ops_expired_total"), 0);
    cr_assert_eq(VAL("accel_session_queue_depth"), 0);
    cr_assert_eq(VAL("accel_session_memory_used_bytes"), 1000);
    cr_assert_eq(VAL("accel_session_memory_budget_bytes"), 4096);
    cr_assert_gt(VAL("accel_session_service_seconds_total"), 0);
    cr_assert_geq(VAL("accel_session_wait_p99_seconds"),
                  VAL("accel_session_wait_p50_seconds"));
    /* the odd id, escaped, default priority */
    cr_assert_geq(value_of(t, "accel_session_ops_submitted_total{session="
                              "\"we\\\"ird\\\\id\\nx\",priority=\"5\"} "),
                  0, "escaped id present:\n%s", t);
    free(t);

    /* a closed session is no longer listed */
    cr_assert_eq(accel_session_close(b, 0), ACCEL_OK);
    t = scrape(rt, &len);
    cr_assert_eq(parse(&p, t, len), 0, "%s", p.err);
    cr_assert_null(strstr(t, "ird"));
    cr_assert_eq(value_of(t, "accel_runtime_sessions "), 1);
    free(t);
    accel_session_release(b);
    accel_session_release(a);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

static void batch_noop(accel_ctx *c, void *const *args, uint32_t n,
                       int *status, void *user)
{
    (void)c, (void)args, (void)n, (void)status, (void)user;
}

Test(metrics, batch_histogram_and_held_time, .timeout = 30)
{
    /* One batch of 5 ops, held back until the delay (1 ms) released it:
     * the ops-per-batch histogram (cumulative buckets, _sum the ops,
     * _count the calls) and the held-back time. */
    accel_runtime *rt = tu_runtime(1);
    accel_session *a = tu_open(rt, "bat", 64, 0);
    accel_batch_config c = {.fn = batch_noop, .max_ops = 64,
                            .max_delay_ns = 1000000};
    cr_assert_eq(accel_session_set_batch(a, &c), ACCEL_OK);
    accel_op op = {.fn = op_ok};
    for (int i = 0; i < 5; i++)
        cr_assert_eq(accel_submit(a, &op, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_session_sync(a, ACCEL_FOREVER), ACCEL_OK);
    size_t len;
    char *t = scrape(rt, &len);
    prom p;
    cr_assert_eq(parse(&p, t, len), 0, "%s\n--- text:\n%s", p.err, t);
    const char *la = "{session=\"bat\",priority=\"5\"";
    char k[256];
#define BK(le)                                                                 \
    (snprintf(k, sizeof(k), "accel_session_batch_size_bucket%s,le=\"%s\"} ", \
              la, le),                                                         \
     value_of(t, k))
    double calls = 0;
    snprintf(k, sizeof(k), "accel_session_batch_size_count%s} ", la);
    calls = value_of(t, k);
    cr_assert_geq(calls, 1, "%s", t);
    cr_assert_eq(BK("1"), 0, "no batch of one:\n%s", t);
    cr_assert_eq(BK("+Inf"), calls);
    snprintf(k, sizeof(k), "accel_session_batch_size_sum%s} ", la);
    cr_assert_eq(value_of(t, k), 5, "the ops");
    snprintf(k, sizeof(k), "accel_session_batch_held_seconds_total%s} ", la);
    cr_assert_gt(value_of(t, k), 0, "held back:\n%s", t);
#undef BK
    free(t);
    accel_session_release(a);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(metrics, truncation_is_snprintf_like, .timeout = 30)
{
    accel_runtime *rt = tu_runtime(1);
    accel_session *a = tu_open(rt, "trunc", 0, 0);
    size_t full;
    char *t = scrape(rt, &full);
    /* The runtime's counters (picks, parks, parked) move between scrapes
     * even when idle, so only the text's stable head (the worker count)
     * is compared byte for byte; the rest is checked structurally. */
    const char *head = strstr(t, "# HELP accel_runtime_short_lane_workers");
    cr_assert_not_null(head);
    size_t stable = (size_t)(head - t);
    for (size_t cap = 1; cap < full + 200; cap += 97) {
        char *buf = malloc(cap + 1);
        memset(buf, 'Z', cap + 1);
        size_t len = 0;
        cr_assert_eq(accel_runtime_write_prometheus(rt, buf, cap, &len),
                     ACCEL_OK);
        cr_assert_gt(len, stable);
        size_t w = cap < len ? cap : len;
        cr_assert_eq(memcmp(buf, t, w < stable ? w : stable), 0,
                     "a prefix of the text");
        cr_assert_eq(memchr(buf, 0, w), NULL, "text bytes only");
        cr_assert_eq(buf[cap], 'Z', "nothing written past cap");
        if (len < cap) {
            cr_assert_eq(buf[len], 0, "NUL-terminated when it fits");
            prom p;
            cr_assert_eq(parse(&p, buf, len), 0, "%s", p.err);
        } else if (len == cap) {
            cr_assert_eq(buf[len - 1], '\n', "complete, no room for NUL");
        }
        free(buf);
    }
    size_t len;
    char c;
    cr_assert_eq(accel_runtime_write_prometheus(NULL, &c, 1, &len),
                 ACCEL_EINVAL);
    cr_assert_eq(accel_runtime_write_prometheus(rt, &c, 1, NULL),
                 ACCEL_EINVAL);
    cr_assert_eq(accel_runtime_write_prometheus(rt, NULL, 5, &len),
                 ACCEL_EINVAL);
    free(t);
    accel_session_release(a);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

typedef struct churn {
    accel_runtime *rt;
    _Atomic int stop;
    _Atomic long bad;
} churn;

static void *churner(void *arg)
{
    churn *c = arg;
    char id[32];
    for (unsigned i = 0;
         !atomic_load_explicit(&c->stop, memory_order_relaxed); i++) {
        snprintf(id, sizeof(id), "churn-%u", i % 8);
        accel_session_config cfg = {.id = id};
        accel_session *s;
        if (accel_session_open(c->rt, &cfg, &s) != ACCEL_OK)
            continue;
        accel_op op = {.fn = op_ok};
        accel_submit(s, &op, ACCEL_NO_WAIT);
        if (i & 1)
            accel_session_close(s, ACCEL_CLOSE_CANCEL);
        accel_session_release(s);
    }
    return NULL;
}

Test(metrics, scrapes_race_open_and_close, .timeout = 60)
{
    accel_runtime *rt = tu_runtime(2);
    churn c = {.rt = rt};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, churner, &c);
    unit_step("300 scrapes while two threads open and close");
    for (int i = 0; i < 300; i++) {
        size_t len;
        char *t = scrape(rt, &len);
        prom p;
        if (parse(&p, t, len) != 0)
            atomic_fetch_add(&c.bad, 1);
        free(t);
    }
    atomic_store(&c.stop, 1);
    unit_step("the churning threads return");
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    cr_assert_eq(atomic_load(&c.bad), 0);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* An open that fails with EEXIST must never show in a scrape: an id
 * listed twice (the copy all zeros) is an invalid exposition. Scrapes run
 * while another thread's opens of an open id fail; no scrape may list
 * that id more than once. */
typedef struct dup_opener {
    accel_runtime *rt;
    _Atomic int done;
    _Atomic long failed;
} dup_opener;

static void *dup_open_main(void *arg)
{
    dup_opener *d = arg;
    accel_session_config cfg = {.id = "dup"};
    for (int i = 0; i < 200000; i++) {
        accel_session *s = NULL;
        if (accel_session_open(d->rt, &cfg, &s) == ACCEL_EEXIST)
            atomic_fetch_add(&d->failed, 1);
        else if (s)
            accel_session_release(s);
    }
    atomic_store(&d->done, 1);
    return NULL;
}

static int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

Test(metrics, an_open_failing_eexist_is_never_listed, .timeout = 120)
{
    accel_runtime *rt = tu_runtime(1);
    accel_session *s = tu_open(rt, "dup", 4, 0);
    dup_opener d = {.rt = rt};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, dup_open_main, &d), 0);
    long scrapes = 0, twice = 0;
    unit_step("scrapes while another thread's opens of \"dup\" fail");
    while (!atomic_load(&d.done)) {
        size_t len;
        char *t = scrape(rt, &len);
        if (count_of(t, "accel_session_ops_submitted_total{session=\"dup\"") != 1)
            twice++;
        free(t);
        scrapes++;
    }
    pthread_join(th, NULL);
    cr_assert_eq(d.failed, 200000, "every open of the open id: EEXIST");
    cr_assert_eq(twice, 0, "%ld of %ld scrapes listed the id other than once",
                 twice, scrapes);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* Close unpublishes the id (so that it is free as soon as close begins)
 * and only then marks the session closed (its LP). A session opened with
 * the id in between is listed by a scrape taken before the old one is
 * marked closed: the old one must not be listed with it (two series with
 * the same labels: Prometheus rejects the whole scrape), and the sessions
 * gauge counts what the scrape lists. The close window is held open by
 * session.c's test hook (accel__close_window_hook). */
#define DUP_LINE "accel_session_ops_submitted_total{session=\"dup\""

/* The lines of t that begin with prefix, into out (cut at cap). */
static void lines_of(const char *t, const char *prefix, char *out, size_t cap)
{
    size_t n = strlen(prefix), w = 0;
    out[0] = 0;
    for (const char *l = t; *l && w + 1 < cap;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) : strlen(l);
        if (len >= n && strncmp(l, prefix, n) == 0)
            w += (size_t)snprintf(out + w, cap - w, "  %.*s\n", (int)len, l);
        if (!nl)
            break;
        l = nl + 1;
    }
}

/* A scrape's verdict: 0 if "dup" is listed at most once and the sessions
 * gauge is the count of sessions listed, else 1 with why in err. */
static int check_dup_scrape(const char *t, char *err, size_t cap)
{
    int dups = count_of(t, DUP_LINE);
    int listed = count_of(t, "\naccel_session_ops_submitted_total{");
    double gauge = value_of(t, "accel_runtime_sessions ");
    if (dups <= 1 && gauge == listed)
        return 0;
    char lines[1024];
    lines_of(t, "accel_session_ops_submitted_total{", lines, sizeof(lines));
    snprintf(err, cap, "\"dup\" listed %d times, accel_runtime_sessions %g, "
             "%d sessions listed:\n%s", dups, gauge, listed, lines);
    return 1;
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

Test(metrics, a_closing_id_reopened_is_listed_once, .timeout = 60)
{
    accel_runtime *rt = tu_runtime(1);
    accel_session *other = tu_open(rt, "other", 4, 0);
    accel_session *old = tu_open(rt, "dup", 4, 0);
    cr_assert(other && old);
    unit_step("three ops on the first \"dup\"");
    for (int i = 0; i < 3; i++)
        cr_assert_eq(accel_submit_wait(old, op_ok, NULL, ACCEL_FOREVER), 0);
    atomic_store(&window_target, old);
    atomic_store(&accel__close_window_hook, hold_close_window);
    closer_arg ca = {.s = old, .flags = ACCEL_CLOSE_DRAIN};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, closer_main, &ca), 0);
    unit_step("the close of the first \"dup\" unpublishes its id");
    tu_latch_wait(&window_entered);
    accel_session *reopened = tu_open(rt, "dup", 4, 0);
    cr_assert_not_null(reopened, "the id is free once close has begun");
    size_t len;
    char *t = scrape(rt, &len);
    char err[2048];
    int bad = check_dup_scrape(t, err, sizeof(err));
    tu_latch_open(&window_leave);
    unit_step("the close of the first \"dup\" returns");
    pthread_join(th, NULL);
    atomic_store(&accel__close_window_hook, NULL);
    cr_assert_eq(ca.rc, ACCEL_OK);
    cr_assert_eq(bad, 0, "a scrape between the reopen and the old close's "
                         "LP: %s", err);
    cr_assert_eq(value_of(t, DUP_LINE ",priority=\"5\"} "), 0,
                 "the open \"dup\" is the one listed:\n%s", t);
    cr_assert_eq(value_of(t, "accel_runtime_sessions "), 2, "%s", t);
    free(t);
    unit_step("release and runtime destroy");
    accel_session_release(old);
    accel_session_release(reopened);
    accel_session_release(other);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* The same as it happens: two threads open "dup", close it and release
 * it, over and over, while this thread scrapes; no scrape may list "dup"
 * twice. Every close naps a little in its window (the hook): without
 * that, its few instructions are rarely hit on 2 cores. Bounded: each
 * thread stops after REOPEN_ROUNDS opens, or at the first bad scrape. */
#define REOPEN_ROUNDS 20000

typedef struct reopener {
    accel_runtime *rt;
    _Atomic int *stop;
    _Atomic int done;
    long opened;
} reopener;

static void *reopen_main(void *arg)
{
    reopener *r = arg;
    accel_session_config cfg = {.id = "dup", .queue_depth = 4};
    for (int i = 0; i < REOPEN_ROUNDS &&
                    !atomic_load_explicit(r->stop, memory_order_relaxed);
         i++) {
        accel_session *s = NULL;
        if (accel_session_open(r->rt, &cfg, &s) != ACCEL_OK)
            continue; /* EEXIST: the other thread holds the id */
        r->opened++;
        accel_session_close(s, ACCEL_CLOSE_DRAIN);
        accel_session_release(s);
    }
    atomic_store_explicit(&r->done, 1, memory_order_release);
    return NULL;
}

static void nap_in_close_window(accel_session *s)
{
    (void)s;
    tu_nap_us(20);
}

Test(metrics, a_closing_id_reopened_under_churn_is_listed_once,
     .timeout = 120)
{
    accel_runtime *rt = tu_runtime(1);
    accel_session *other = tu_open(rt, "other", 4, 0);
    cr_assert_not_null(other);
    atomic_store(&accel__close_window_hook, nap_in_close_window);
    _Atomic int stop = 0;
    reopener r[2] = {{.rt = rt, .stop = &stop}, {.rt = rt, .stop = &stop}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, reopen_main, &r[i]), 0);
    static char buf[1 << 16];
    char first_bad[2048] = "";
    long scrapes = 0, bad = 0;
    unit_step("scrapes while two threads reopen \"dup\"");
    while (!atomic_load_explicit(&r[0].done, memory_order_acquire) ||
           !atomic_load_explicit(&r[1].done, memory_order_acquire)) {
        size_t len = 0;
        cr_assert_eq(accel_runtime_write_prometheus(rt, buf, sizeof(buf),
                                                    &len),
                     ACCEL_OK);
        cr_assert_lt(len, sizeof(buf));
        scrapes++;
        char err[1536];
        if (check_dup_scrape(buf, err, sizeof(err))) {
            if (!bad++)
                snprintf(first_bad, sizeof(first_bad), "scrape %ld: %s",
                         scrapes, err);
            atomic_store_explicit(&stop, 1, memory_order_relaxed);
        }
    }
    unit_step("the reopening threads return");
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    atomic_store(&accel__close_window_hook, NULL);
    cr_log_info("%ld scrapes, %ld + %ld opens of \"dup\"", scrapes,
                r[0].opened, r[1].opened);
    cr_assert_gt(r[0].opened + r[1].opened, 0);
    cr_assert_eq(bad, 0, "%ld of %ld scrapes bad; the first, %s", bad,
                 scrapes, first_bad);
    unit_step("release and runtime destroy");
    accel_session_release(other);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

/* Well-formed UTF-8, as glibc's iconv decides (not the code under test). */
static bool utf8_ok(const char *t, size_t len)
{
    iconv_t cd = iconv_open("UTF-32LE", "UTF-8");
    cr_assert_neq(cd, (iconv_t)-1);
    char *in = (char *)t;
    size_t inleft = len;
    bool ok = true;
    while (inleft && ok) {
        char buf[4096], *outp = buf;
        size_t outleft = sizeof(buf);
        if (iconv(cd, &in, &inleft, &outp, &outleft) == (size_t)-1 &&
            errno != E2BIG)
            ok = false;
    }
    iconv_close(cd);
    return ok;
}

/* Ids are bytes, the exposition is UTF-8: each byte that does not begin
 * a well-formed sequence becomes U+FFFD, well-formed ones (é, 😀) stay. */
Test(metrics, non_utf8_ids_are_replaced, .timeout = 30)
{
    accel_runtime *rt = tu_runtime(1);
    /* a lone 0xff, a lead byte without its continuation, an overlong '/',
     * a surrogate, a truncated 4-byte sequence at the end */
    const char *bad = "b\xff" "a\xc3(" "\xc0\xaf" "\xed\xa0\x80" "\xf0\x9f\x98";
    const char *good = "caf\xc3\xa9-\xf0\x9f\x98\x80";
    accel_session *s1 = tu_open(rt, bad, 4, 0);
    accel_session *s2 = tu_open(rt, good, 4, 0);
    cr_assert(s1 && s2);
    size_t len;
    char *t = scrape(rt, &len);
    cr_assert(utf8_ok(t, len), "the scrape is UTF-8:\n%s", t);
    prom p;
    cr_assert_eq(parse(&p, t, len), 0, "%s", p.err);
    const char *want_bad = "session=\"b\xef\xbf\xbd" "a\xef\xbf\xbd("
                           "\xef\xbf\xbd\xef\xbf\xbd"
                           "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                           "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"";
    cr_assert_not_null(strstr(t, want_bad), "replaced per byte:\n%s", t);
    char want_good[64];
    snprintf(want_good, sizeof(want_good), "session=\"%s\"", good);
    cr_assert_not_null(strstr(t, want_good), "kept:\n%s", t);
    free(t);
    accel_session_release(s1);
    accel_session_release(s2);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}
