/*
 * accel_runtime_write_prometheus: the Prometheus text exposition format
 * (version 0.0.4) for a runtime and its open sessions.
 *
 * Two phases, so that the list lock is held only while copying numbers:
 *   1. snapshot: under list_lock (cold path: it is the lock open and the
 *      final unref take, never a hot path), copy each open session's
 *      counters and id into an array. A session in the list is not freed
 *      while the lock is held (accel__session_unref unlinks under the lock
 *      before it defers the free), so reading it is safe even if its last
 *      handle is being released right now.
 *   2. format: families one after the other (the format wants all samples
 *      of a family together), into the caller's buffer, counting what
 *      would not fit.
 *
 * No hot path takes a lock or pays anything for this: the counters are
 * read by the one function that fills accel_session_get_stats_ex
 * (accel__session_fill_stats: relaxed loads).
 */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "fork.h"
#include "runtime_types.h"
#include "session.h"
#include "table.h"

/* A session's stats as accel_session_get_stats_ex fills them (one reader
 * of the counters, session.c), and its id. */
typedef struct snap {
    accel_session_stats st;
    char id[ACCEL_ID_MAX + 1];
} snap;

/* snprintf-like output: writes what fits, counts everything. */
typedef struct out {
    char *buf;
    size_t cap, len;
} out;

static void put(out *o, const char *s, size_t n)
{
    if (o->len < o->cap) {
        size_t room = o->cap - o->len;
        memcpy(o->buf + o->len, s, n < room ? n : room);
    }
    o->len += n;
}

static void puts_(out *o, const char *s)
{
    put(o, s, strlen(s));
}

static void put_u64(out *o, uint64_t v)
{
    char tmp[24];
    int i = (int)sizeof(tmp);
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(o, tmp + i, sizeof(tmp) - (size_t)i);
}

static void put_i64(out *o, int64_t v)
{
    if (v < 0) {
        put(o, "-", 1);
        put_u64(o, (uint64_t)0 - (uint64_t)v);
    } else {
        put_u64(o, (uint64_t)v);
    }
}

/* ns as seconds with nanosecond precision, e.g. 1.000250000 */
static void put_secs(out *o, uint64_t ns)
{
    put_u64(o, ns / 1000000000u);
    char frac[10];
    uint64_t f = ns % 1000000000u;
    frac[0] = '.';
    for (int i = 9; i >= 1; i--) {
        frac[i] = (char)('0' + f % 10);
        f /= 10;
    }
    put(o, frac, sizeof(frac));
}

/* The length of the well-formed UTF-8 sequence at p (RFC 3629: no
 * overlong forms, no surrogates, nothing past U+10FFFF), 0 if there is
 * none. p is NUL-terminated, so a truncated sequence stops at the NUL. */
static size_t utf8_len(const unsigned char *p)
{
    unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range */
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else
        return 0;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return n;
}

/* A label value: backslash, double quote and newline escaped. The format
 * is UTF-8 (a scrape with anything else is rejected whole): each byte
 * that does not begin a well-formed sequence is replaced with U+FFFD
 * (docs/metrics.md). */
static void put_label(out *o, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = utf8_len(p);
        if (n == 0) {
            put(o, "\xef\xbf\xbd", 3);
            p++;
            continue;
        }
        if (*p == '\\')
            put(o, "\\\\", 2);
        else if (*p == '"')
            put(o, "\\\"", 2);
        else if (*p == '\n')
            put(o, "\\n", 2);
        else
            put(o, (const char *)p, n);
        p += n;
    }
}

static void family(out *o, const char *name, const char *type,
                   const char *help)
{
    puts_(o, "# HELP ");
    puts_(o, name);
    put(o, " ", 1);
    puts_(o, help);
    puts_(o, "\n# TYPE ");
    puts_(o, name);
    put(o, " ", 1);
    puts_(o, type);
    put(o, "\n", 1);
}

static void sample_u64(out *o, const char *name, uint64_t v)
{
    puts_(o, name);
    put(o, " ", 1);
    put_u64(o, v);
    put(o, "\n", 1);
}

/* A runtime-wide family of one unlabelled sample. */
static void runtime_metric(out *o, const char *name, const char *type,
                           const char *help, uint64_t v)
{
    family(o, name, type, help);
    sample_u64(o, name, v);
}

static void session_labels(out *o, const char *name, const snap *s)
{
    puts_(o, name);
    puts_(o, "{session=\"");
    put_label(o, s->id);
    puts_(o, "\",priority=\"");
    put_u64(o, s->st.priority);
    puts_(o, "\"} ");
}

enum kind { K_U64, K_I64, K_SECS };

typedef struct sess_family {
    const char *name, *type, *help;
    size_t off;
    enum kind kind;
} sess_family;

#define F(field) offsetof(snap, st.field)
static const sess_family sess_families[] = {
    {"accel_session_ops_submitted_total", "counter",
     "Ops accepted by the session.", F(submitted), K_U64},
    {"accel_session_ops_completed_total", "counter",
     "Ops that ran and returned 0.", F(completed), K_U64},
    {"accel_session_ops_failed_total", "counter",
     "Ops that ran and returned an error.", F(failed), K_U64},
    {"accel_session_ops_cancelled_total", "counter",
     "Ops completed without running: close with cancel, or accel_cancel.",
     F(cancelled), K_U64},
    {"accel_session_ops_expired_total", "counter",
     "Ops completed without running: their deadline passed first.",
     F(expired), K_U64},
    {"accel_session_batches_total", "counter",
     "Calls of the session's batch function.", F(batches), K_U64},
    {"accel_session_batch_ops_total", "counter",
     "Ops run by calls of the session's batch function.", F(batch_ops),
     K_U64},
    {"accel_session_batch_held_seconds_total", "counter",
     "Time the session was held back to fill batches (max_delay_ns).",
     F(batch_held_ns), K_SECS},
    {"accel_session_service_seconds_total", "counter",
     "Time the session's ops ran on workers.", F(service_ns), K_SECS},
    {"accel_session_wait_p50_seconds", "gauge",
     "Median submit-to-start wait over sampled ops (bucket upper edge).",
     F(wait_p50_ns), K_SECS},
    {"accel_session_wait_p99_seconds", "gauge",
     "99th percentile submit-to-start wait over sampled ops (bucket upper "
     "edge).",
     F(wait_p99_ns), K_SECS},
    {"accel_session_queue_depth", "gauge",
     "Ops accepted and not yet started.", F(queued), K_U64},
    {"accel_session_memory_used_bytes", "gauge",
     "Bytes charged to the session's budget.", F(memory_used), K_I64},
    {"accel_session_memory_budget_bytes", "gauge",
     "The session's memory budget in bytes (0: unlimited).", F(memory_budget),
     K_I64},
};
#undef F

/* Ops per batch call, as a histogram (sessions that ran a batch): bucket
 * i of batch_size_hist holds 2^i <= n < 2^(i+1), so le = 2^(i+1) - 1
 * counts buckets 0..i (whole ops); the last bucket (256 only, as
 * ACCEL_BATCH_MAX) is +Inf's. _sum: the ops, _count: the calls. */
static void batch_size_histogram(out *o, const snap *v, long n)
{
    static const char name[] = "accel_session_batch_size";
    family(o, name, "histogram", "Ops per call of the session's batch "
                                 "function.");
    for (long i = 0; i < n; i++) {
        const accel_session_stats *st = &v[i].st;
        if (!st->batches)
            continue;
        uint64_t cum = 0;
        for (unsigned b = 0; b < ACCEL_BATCH_HIST_BUCKETS; b++) {
            cum += st->batch_size_hist[b];
            puts_(o, "accel_session_batch_size_bucket{session=\"");
            put_label(o, v[i].id);
            puts_(o, "\",priority=\"");
            put_u64(o, st->priority);
            puts_(o, "\",le=\"");
            if (b + 1 < ACCEL_BATCH_HIST_BUCKETS)
                put_u64(o, (UINT64_C(2) << b) - 1);
            else
                puts_(o, "+Inf");
            puts_(o, "\"} ");
            put_u64(o, cum);
            put(o, "\n", 1);
        }
        session_labels(o, "accel_session_batch_size_sum", &v[i]);
        put_u64(o, st->batch_ops);
        put(o, "\n", 1);
        session_labels(o, "accel_session_batch_size_count", &v[i]);
        put_u64(o, cum); /* the buckets' sum: one consistent histogram
                            while a batch's counters move */
        put(o, "\n", 1);
    }
}

static void take_snap(accel_session *s, snap *d)
{
    /* The reads of accel_session_get_stats_ex (relaxed: each counter
     * exact, the set not one instant; completion side first, so queued
     * never underflows). */
    accel__session_fill_stats(s, &d->st);
    memcpy(d->id, s->id, s->table_node.len + 1);
}

/* Copies every open session (cold path: list_lock). Returns the count, or
 * -1 when memory could not be had. *out is malloc'ed (NULL when none). */
static long snapshot(accel_runtime *rt, snap **outp)
{
    *outp = NULL;
    snap *v = NULL;
    size_t cap = 0;
    for (;;) {
        pthread_mutex_lock(&rt->list_lock); /* cold path: metrics scrape */
        size_t need = rt->nsessions;
        if (need <= cap) {
            size_t n = 0;
            for (struct cds_list_head *pos = rt->sessions.next;
                 pos != &rt->sessions; pos = pos->next) {
                accel_session *s =
                    caa_container_of(pos, accel_session, rt_link);
                /* Listed: the sessions whose id is still published.
                 * Close unpublishes the id before its LP, and a session
                 * opened with the id meanwhile may already be linked:
                 * listing the old one too would write two series with
                 * one label set. A scrape cannot see the new one linked
                 * and the old node not removed: the new one's insert saw
                 * the old node removed and is followed by a full barrier
                 * (cds_lfht_add_unique), then it was linked under
                 * list_lock, which we hold, so the removal happens
                 * before this load. list_lock keeps s (and its node)
                 * allocated. A closed session's id was removed before its
                 * LP, and one awaiting reclamation was closed: the other
                 * two tests are belts. */
                if (accel__table_node_removed(&s->table_node) ||
                    accel__session_refs_of(atomic_load_explicit(
                        &s->refs, memory_order_relaxed)) == 0 ||
                    accel__ring_is_closed(ACCEL__RING(s)))
                    continue;
                take_snap(s, &v[n++]);
            }
            pthread_mutex_unlock(&rt->list_lock);
            *outp = v;
            return (long)n;
        }
        pthread_mutex_unlock(&rt->list_lock);
        /* Grew (or first pass): allocate outside the lock with headroom,
         * then look again. */
        accel__free(v);
        cap = need + need / 8 + 16;
        v = accel__malloc(cap * sizeof(*v));
        if (!v)
            return -1;
    }
}

int accel_runtime_write_prometheus(accel_runtime *rt, char *buf, size_t cap,
                                   size_t *len_out)
{
    if (!rt || !len_out || (!buf && cap))
        return ACCEL_EINVAL;
    if (accel__fork_stale(rt->fork_gen))
        return ACCEL_ECLOSED; /* the parent's list lock may be held (fork.c) */
    snap *v;
    long n = snapshot(rt, &v);
    if (n < 0)
        return ACCEL_ENOMEM;
    accel_runtime_stats st;
    accel_runtime_get_stats(rt, &st, sizeof(st));

    out o = {.buf = buf, .cap = cap, .len = 0};
    runtime_metric(&o, "accel_runtime_workers", "gauge", "Worker threads.",
                   st.workers);
    runtime_metric(&o, "accel_runtime_short_lane_workers", "gauge",
                   "Worker threads of the short lane.", st.short_lane_workers);
    runtime_metric(&o, "accel_runtime_parked_workers", "gauge",
                   "Workers asleep waiting for work.", st.parked);
    runtime_metric(&o, "accel_runtime_sessions", "gauge", "Open sessions.",
                   (uint64_t)n);
    runtime_metric(&o, "accel_runtime_visits_total", "counter",
                   "Session visits run by workers.", st.visits);
    runtime_metric(&o, "accel_runtime_picks_total", "counter",
                   "Scheduler picks tried by workers (visits plus empty "
                   "picks).",
                   st.picks);
    runtime_metric(&o, "accel_runtime_parks_total", "counter",
                   "Times a worker went to sleep.", st.parks);
    runtime_metric(&o, "accel_runtime_blocked_workers", "gauge",
                   "Workers blocked inside an op now.", st.blocked);
    runtime_metric(&o, "accel_runtime_extra_workers", "gauge",
                   "Extra workers running in place of blocked ones.",
                   st.extra_workers);
    runtime_metric(&o, "accel_runtime_extra_workers_started_total",
                   "counter", "Extra workers started for blocked ones.",
                   st.extra_started);
    runtime_metric(&o, "accel_runtime_blocked_detected_total", "counter",
                   "Workers the monitor found blocked in a wait accel "
                   "cannot see.",
                   st.blocked_detected);
    runtime_metric(&o, "accel_runtime_blocked_presumed_total", "counter",
                   "Visits begun counted blocked because their session's "
                   "last visit waited off a CPU.",
                   st.blocked_presumed);

    for (size_t f = 0; f < sizeof(sess_families) / sizeof(sess_families[0]);
         f++) {
        const sess_family *sf = &sess_families[f];
        family(&o, sf->name, sf->type, sf->help);
        for (long i = 0; i < n; i++) {
            const char *field = (const char *)&v[i] + sf->off;
            session_labels(&o, sf->name, &v[i]);
            if (sf->kind == K_I64) {
                int64_t x;
                memcpy(&x, field, sizeof(x));
                put_i64(&o, x);
            } else {
                uint64_t x;
                memcpy(&x, field, sizeof(x));
                if (sf->kind == K_SECS)
                    put_secs(&o, x);
                else
                    put_u64(&o, x);
            }
            put(&o, "\n", 1);
        }
    }
    batch_size_histogram(&o, v, n);
    accel__free(v);
    if (o.len < cap)
        buf[o.len] = '\0';
    *len_out = o.len;
    return ACCEL_OK;
}
