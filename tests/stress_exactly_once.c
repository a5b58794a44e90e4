/*
 * Exactly-once stress (promises 1, 2 and 4 of docs/contract.md).
 *
 * 64 sessions of mixed weights and queue depths, 4 producers, 2 workers.
 * Producers submit (single, batch, submit_wait), sync, reserve/unreserve
 * and look sessions up at random; two chaos threads close a quarter of the
 * sessions at random moments (DRAIN or CANCEL, sometimes from inside one of
 * the session's own ops, sometimes both at once) and reopen them under the
 * same id; a third thread storms set_priority and reads stats. At the end
 * some sessions are closed, some only released, some left open with queued
 * ops for accel_runtime_destroy to drain.
 *
 * How exactly-once and FIFO are checked without a per-op record: each
 * producer numbers the ops it gets accepted on a session instance 1, 2, 3...
 * (a rejected op's number is reused by the next op). The done callbacks of
 * one producer's ops must then arrive with exactly 1, 2, 3, ...: a lost op
 * leaves a gap, a duplicate or a rejected op whose done ran repeats a
 * number, a reordering goes backwards. At retirement the last number seen
 * must equal the count accepted. fn runs must be strictly increasing (FIFO,
 * nothing ran twice), a done with a status must follow its own fn, a done
 * with ACCEL_ECLOSED must not. These per-session counters are plain
 * variables written by the session's ops, so ThreadSanitizer also checks
 * that the runtime hands a session from worker to worker with the
 * happens-before edges promise 2 needs.
 *
 * Usage: accel_stress_exactly_once [--seconds S] [--ops N] [--seed N]
 *        [--sessions N] [--producers N] [--workers N] [--quiet]
 * --ops N runs until N ops were accepted (or --seconds passed, default 1 h
 * then). Without either: ACCEL_STRESS_SECONDS (default 2) seconds.
 * Exit 0 when every check passed, 1 otherwise.
 *
 * Promises: 1, 2, 4
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <accel/accel.h>

#include "stress_fail.h"
#include "stress_watchdog.h"
#include "yield.h"

#define MAX_SESSIONS 256
#define MAX_PRODUCERS 16
#define CHAOS_THREADS 2
#define MAX_CH (2 * MAX_PRODUCERS + CHAOS_THREADS)
#define BATCH_MAX 16

/* ------------------------------------------------------------ reporting */

static _Atomic uint64_t checks_passed;
static bool quiet;


#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (cond)                                                            \
            atomic_fetch_add_explicit(&checks_passed, 1,                     \
                                      memory_order_relaxed);                 \
        else                                                                 \
            failf(__VA_ARGS__);                                              \
    } while (0)

/* Per-op checks run on the workers: counted per instance (serial) to keep
 * the shared counter off the hot path, folded in at retirement. */
#define OPCHECK(in, cond, ...)                                               \
    do {                                                                     \
        if (cond)                                                            \
            (in)->op_checks++;                                               \
        else                                                                 \
            failf(__VA_ARGS__);                                              \
    } while (0)

/* ------------------------------------------------------------------ rng */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static uint32_t rng_below(uint64_t *s, uint32_t n)
{
    return (uint32_t)(rng_next(s) % n);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------ instances */

/* One open session: the lifetime between an open and the retirement after
 * its close. Fields by owner: producer channel (next_seq, accepted, wait_*),
 * the session's ops (last_*, runs, dones, op_checks: serial by promise 2). */
typedef struct inst {
    accel_session *s;
    uint32_t gen;
    int entry;
    int64_t budget;
    uint64_t next_seq[MAX_CH];
    uint64_t accepted[MAX_CH];
    uint64_t wait_ran[MAX_CH], wait_eclosed[MAX_CH];
    uint64_t last_run[MAX_CH], last_done[MAX_CH];
    uint64_t runs, dones_ok, dones_failed, dones_canceled, op_checks;
    _Atomic int inflight;
    _Atomic int closed_cancel; /* some close of it used CANCEL */
} inst;

typedef struct entry {
    pthread_rwlock_t lock; /* test-side: retirement excludes producers */
    _Atomic(inst *) cur;
    char id[32];
    bool closable;
    uint32_t weight;
    uint32_t depth;
    int64_t budget;
    uint32_t gens;
} entry;

static accel_runtime *rt;
static entry entries[MAX_SESSIONS];
static int nsessions = 64, nproducers = 4, nworkers = 2;
static _Atomic int stop;
static _Atomic uint64_t ops_done_total; /* done callbacks + waits returned */
static _Atomic uint64_t retired, reopened, rejected_total;

/* op arg encoding: entry 8 | gen 8 | channel 6 | kind 3 | seq 39 */
enum { K_PLAIN, K_ALLOC, K_DEADLK, K_CLOSE_DRAIN, K_CLOSE_CANCEL, K_SPIN };
static void *enc(int sl, uint32_t gen, int ch, int kind, uint64_t seq)
{
    uint64_t v = ((uint64_t)sl << 56) | ((uint64_t)(gen & 0xff) << 48) |
                 ((uint64_t)ch << 42) | ((uint64_t)kind << 39) | seq;
    return (void *)(uintptr_t)v;
}
typedef struct dec {
    int sl, ch, kind;
    uint32_t gen;
    uint64_t seq;
} dec;
static dec decode(void *arg)
{
    uint64_t v = (uint64_t)(uintptr_t)arg;
    dec d = {(int)(v >> 56), (int)((v >> 42) & 0x3f), (int)((v >> 39) & 7),
             (uint32_t)((v >> 48) & 0xff), v & ((1ull << 39) - 1)};
    return d;
}
static int expected_status(uint64_t seq)
{
    return seq % 5 == 0 ? (int)(1 + seq % 3) : 0;
}

static inst *inst_of(const dec *d)
{
    /* acquire: pairs with the release store at (re)open. */
    return atomic_load_explicit(&entries[d->sl].cur, memory_order_acquire);
}

static int nop_fn(accel_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    return 0;
}

static int op_fn(accel_ctx *ctx, void *arg)
{
    dec d = decode(arg);
    inst *in = inst_of(&d);
    if (!in || (in->gen & 0xff) != d.gen) {
        failf("fn of entry %d gen %u ran after its instance retired", d.sl,
              d.gen);
        return 0;
    }
    OPCHECK(in, accel_ctx_session(ctx) == in->s, "ctx session mismatch");
    OPCHECK(in, atomic_exchange(&in->inflight, 1) == 0,
            "entry %d: two ops of one session ran concurrently", d.sl);
    OPCHECK(in, d.seq > in->last_run[d.ch],
            "entry %d ch %d: fn seq %" PRIu64 " after %" PRIu64
            " (FIFO or double run)",
            d.sl, d.ch, d.seq, in->last_run[d.ch]);
    in->last_run[d.ch] = d.seq;
    in->runs++;
    accel_session *s = in->s;
    switch (d.kind) {
    case K_ALLOC: {
        void *p;
        size_t sz = 1 + (size_t)(d.seq * 131 % 3000);
        int rc = accel_ctx_alloc(ctx, sz, &p);
        OPCHECK(in, rc == ACCEL_OK || (rc == ACCEL_EBUDGET && in->budget),
                "ctx_alloc: %d", rc);
        if (rc == ACCEL_OK) {
            memset(p, 0xa5, sz);
            int64_t used = accel_session_memory_used(s);
            OPCHECK(in, used >= (int64_t)sz && (!in->budget || used <= in->budget),
                    "memory_used %" PRId64 " out of [%zu, %" PRId64 "]", used,
                    sz, in->budget);
            accel_ctx_free(ctx, p);
        }
        break;
    }
    case K_DEADLK:
        OPCHECK(in, accel_submit_wait(s, nop_fn, NULL, ACCEL_NO_WAIT) ==
                        ACCEL_EDEADLK,
                "submit_wait from inside not EDEADLK");
        OPCHECK(in, accel_session_sync(s, ACCEL_FOREVER) == ACCEL_EDEADLK,
                "sync from inside not EDEADLK");
        break;
    case K_CLOSE_DRAIN:
    case K_CLOSE_CANCEL:
        if (d.kind == K_CLOSE_CANCEL)
            atomic_store(&in->closed_cancel, 1);
        OPCHECK(in, accel_session_close(s, d.kind == K_CLOSE_CANCEL
                                               ? ACCEL_CLOSE_CANCEL
                                               : ACCEL_CLOSE_DRAIN) ==
                        ACCEL_OK,
                "close from inside failed");
        OPCHECK(in, accel_session_is_closed(s), "not closed after close");
        break;
    case K_SPIN:
        for (volatile int i = 0; i < 2000; i++)
            ;
        break;
    default:
        break;
    }
    atomic_store(&in->inflight, 0);
    return expected_status(d.seq);
}

static void op_done(void *arg, int status)
{
    dec d = decode(arg);
    inst *in = inst_of(&d);
    if (!in || (in->gen & 0xff) != d.gen) {
        failf("done of entry %d gen %u ran after its instance retired", d.sl,
              d.gen);
        return;
    }
    OPCHECK(in, d.seq == in->last_done[d.ch] + 1,
            "entry %d ch %d: done seq %" PRIu64 " after %" PRIu64
            " (lost, duplicated, reordered or rejected op)",
            d.sl, d.ch, d.seq, in->last_done[d.ch]);
    in->last_done[d.ch] = d.seq;
    if (status == ACCEL_ECLOSED) {
        OPCHECK(in, in->last_run[d.ch] < d.seq,
                "canceled op %" PRIu64 " had run", d.seq);
        in->dones_canceled++;
    } else {
        OPCHECK(in, in->last_run[d.ch] == d.seq,
                "done of op %" PRIu64 " whose fn did not run", d.seq);
        OPCHECK(in, status == expected_status(d.seq),
                "done status %d, fn returned %d", status,
                expected_status(d.seq));
        if (status == 0)
            in->dones_ok++;
        else
            in->dones_failed++;
    }
    atomic_fetch_add_explicit(&ops_done_total, 1, memory_order_relaxed);
}

static inst *inst_new(entry *sl)
{
    inst *in = calloc(1, sizeof(*in));
    if (!in) {
        perror("calloc");
        exit(2);
    }
    in->entry = (int)(sl - entries);
    in->gen = sl->gens++;
    in->budget = sl->budget;
    for (int c = 0; c < MAX_CH; c++)
        in->next_seq[c] = 1;
    accel_session_config cfg = {.id = sl->id,
                                .priority = sl->weight,
                                .memory_budget = sl->budget,
                                .backend = ACCEL_BACKEND_CPU,
                                .queue_depth = sl->depth};
    int rc = accel_session_open(rt, &cfg, &in->s);
    CHECK(rc == ACCEL_OK, "open %s (gen %u): %s", sl->id, in->gen,
          accel_strerror(rc));
    if (rc != ACCEL_OK) {
        fprintf(stderr, "cannot continue without session %s\n", sl->id);
        exit(1);
    }
    return in;
}

/* Checks a closed instance. stats_ok: its handle is still valid. */
static void inst_verify(inst *in, bool stats_ok)
{
    uint64_t acc = 0, ran_waits = 0, ecl_waits = 0;
    for (int c = 0; c < MAX_CH; c++) {
        CHECK(in->last_done[c] == in->accepted[c],
              "entry %d gen %u ch %d: %" PRIu64 " accepted, done reached %" PRIu64,
              in->entry, in->gen, c, in->accepted[c], in->last_done[c]);
        acc += in->accepted[c];
        ran_waits += in->wait_ran[c];
        ecl_waits += in->wait_eclosed[c];
    }
    CHECK(atomic_load(&in->inflight) == 0, "inflight left set");
    atomic_fetch_add(&checks_passed, in->op_checks);
    if (!stats_ok)
        return;
    accel_session_stats st;
    CHECK(accel_session_get_stats(in->s, &st) == ACCEL_OK, "get_stats");
    CHECK(accel_session_is_closed(in->s), "closed session not closed");
    CHECK(st.completed + st.failed + st.cancelled == st.submitted,
          "entry %d: completed %" PRIu64 " + failed %" PRIu64
          " + canceled %" PRIu64 " != submitted %" PRIu64,
          in->entry, st.completed, st.failed, st.cancelled, st.submitted);
    CHECK(st.queued == 0, "queued %" PRIu64 " after close", st.queued);
    CHECK(st.dispatched == st.completed + st.failed,
          "dispatched %" PRIu64 " != ran %" PRIu64, st.dispatched,
          st.completed + st.failed);
    CHECK(st.completed + st.failed == in->runs,
          "stats ran %" PRIu64 ", fn ran %" PRIu64, st.completed + st.failed,
          in->runs);
    /* Accepted submit_waits that returned ECLOSED were canceled; those
     * that returned ECLOSED without being accepted are not counted. */
    uint64_t waits_acc = st.submitted - acc - ran_waits;
    CHECK(st.submitted >= acc + ran_waits && waits_acc <= ecl_waits,
          "submitted %" PRIu64 " vs async %" PRIu64 " + waits %" PRIu64
          "..%" PRIu64,
          st.submitted, acc, ran_waits, ran_waits + ecl_waits);
    CHECK(st.cancelled == in->dones_canceled + waits_acc,
          "canceled %" PRIu64 " vs done(ECLOSED) %" PRIu64 " + waits %" PRIu64,
          st.cancelled, in->dones_canceled, waits_acc);
    if (!atomic_load(&in->closed_cancel))
        CHECK(st.cancelled == 0, "DRAIN close canceled %" PRIu64,
              st.cancelled);
    CHECK(st.memory_used == 0, "budget not back to 0: %" PRId64,
          st.memory_used);
}

/* ------------------------------------------------------------ producers */

typedef struct prod {
    int index;
    uint64_t rng;
    _Alignas(64) _Atomic uint64_t accepted;
} prod;
static prod producers[MAX_PRODUCERS];

static int64_t pick_timeout(uint64_t *r)
{
    switch (rng_below(r, 4)) {
    case 0:
        return ACCEL_NO_WAIT;
    case 1:
        return 50000; /* 50 us */
    default:
        return ACCEL_FOREVER;
    }
}

static bool reject_ok(int rc, int64_t timeout, bool closable)
{
    if (rc == ACCEL_ECLOSED)
        return closable;
    if (rc == ACCEL_EAGAIN)
        return timeout == ACCEL_NO_WAIT;
    if (rc == ACCEL_ETIMEDOUT)
        return timeout > 0;
    return false;
}

static int pick_kind(uint64_t *r)
{
    uint32_t k = rng_below(r, 100);
    if (k < 8)
        return K_ALLOC;
    if (k < 9)
        return K_DEADLK;
    if (k < 11)
        return K_SPIN;
    return K_PLAIN;
}

static void producer_step(prod *p, entry *sl, inst *in)
{
    uint64_t *r = &p->rng;
    int ch = p->index;
    uint32_t action = rng_below(r, 1000);
    if (action < 650) { /* single submit */
        int64_t to = pick_timeout(r);
        accel_op op = {op_fn, op_done,
                       enc(in->entry, in->gen, ch, pick_kind(r),
                           in->next_seq[ch])};
        int rc = accel_submit(in->s, &op, to);
        if (rc == ACCEL_OK) {
            in->next_seq[ch]++;
            in->accepted[ch]++;
            atomic_fetch_add_explicit(&p->accepted, 1, memory_order_relaxed);
        } else {
            CHECK(reject_ok(rc, to, sl->closable), "submit: %s (timeout %" PRId64 ")",
                  accel_strerror(rc), to);
            atomic_fetch_add_explicit(&rejected_total, 1, memory_order_relaxed);
        }
    } else if (action < 900) { /* batch */
        accel_op ops[BATCH_MAX];
        size_t n = 1 + rng_below(r, BATCH_MAX);
        size_t nullat = rng_below(r, 20) == 0 ? rng_below(r, (uint32_t)n) : n;
        for (size_t i = 0; i < n; i++)
            ops[i] = (accel_op){i == nullat ? NULL : op_fn, op_done,
                                enc(in->entry, in->gen, ch, pick_kind(r),
                                    in->next_seq[ch] + i)};
        int64_t to = pick_timeout(r);
        size_t acc = 12345;
        int rc = accel_submit_batch(in->s, ops, n, to, &acc);
        CHECK(acc <= n && acc <= nullat, "batch accepted %zu of %zu (NULL at %zu)",
              acc, n, nullat);
        if (rc == ACCEL_OK)
            CHECK(acc == n && nullat == n, "batch OK with %zu of %zu", acc, n);
        else if (rc == ACCEL_EINVAL)
            CHECK(acc == nullat, "batch EINVAL at %zu, NULL at %zu", acc, nullat);
        else
            CHECK(reject_ok(rc, to, sl->closable) && acc < n,
                  "batch: %s accepted %zu/%zu", accel_strerror(rc), acc, n);
        in->next_seq[ch] += acc;
        in->accepted[ch] += acc;
        atomic_fetch_add_explicit(&p->accepted, acc, memory_order_relaxed);
        atomic_fetch_add_explicit(&rejected_total, n - acc, memory_order_relaxed);
    } else if (action < 940) { /* submit_wait */
        int wch = nproducers + p->index;
        uint64_t seq = in->next_seq[wch]++;
        int64_t to = pick_timeout(r);
        int rc = accel_submit_wait(in->s, op_fn,
                                   enc(in->entry, in->gen, wch, K_PLAIN, seq), to);
        if (rc == expected_status(seq)) {
            CHECK(in->last_run[wch] == seq, "submit_wait returned before fn");
            in->wait_ran[wch]++;
            atomic_fetch_add_explicit(&ops_done_total, 1, memory_order_relaxed);
        } else if (rc == ACCEL_ECLOSED) {
            CHECK(sl->closable && in->last_run[wch] < seq,
                  "submit_wait ECLOSED but ran / not closable");
            in->wait_eclosed[wch]++;
        } else {
            CHECK(reject_ok(rc, to, sl->closable), "submit_wait: %d", rc);
        }
    } else if (action < 950) { /* sync */
        uint64_t before = in->accepted[ch];
        int rc = accel_session_sync(in->s, ACCEL_FOREVER);
        CHECK(rc == ACCEL_OK, "sync: %s", accel_strerror(rc));
        /* [A5] in sync orders the done callbacks before us. */
        CHECK(in->last_done[ch] >= before,
              "sync returned with %" PRIu64 " of %" PRIu64 " done",
              in->last_done[ch], before);
    } else if (action < 990) { /* budget */
        int64_t x = 1 + rng_below(r, 5000);
        int rc = accel_session_reserve(in->s, x);
        CHECK(rc == ACCEL_OK || (rc == ACCEL_EBUDGET && in->budget) ||
                  (rc == ACCEL_ECLOSED && sl->closable),
              "reserve: %s", accel_strerror(rc));
        int64_t used = accel_session_memory_used(in->s);
        CHECK(used >= 0 && (!in->budget || used <= in->budget),
              "memory_used %" PRId64 " cap %" PRId64, used, in->budget);
        if (rc == ACCEL_OK)
            CHECK(accel_session_unreserve(in->s, x) == ACCEL_OK, "unreserve");
    } else { /* lookup + release */
        accel_session *h;
        int rc = accel_session_lookup(rt, sl->id, &h);
        if (rc == ACCEL_OK) {
            CHECK(strcmp(accel_session_id(h), sl->id) == 0, "lookup id");
            accel_session_release(h);
        } else {
            CHECK(rc == ACCEL_ENOENT && sl->closable, "lookup %s: %s", sl->id,
                  accel_strerror(rc));
        }
    }
}

static void *producer_main(void *arg)
{
    prod *p = arg;
    accel__yield_thread_index(1 + (uint64_t)p->index); /* replayable seed */
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        entry *sl = &entries[rng_below(&p->rng, (uint32_t)nsessions)];
        pthread_rwlock_rdlock(&sl->lock);
        producer_step(p, sl, atomic_load(&sl->cur));
        pthread_rwlock_unlock(&sl->lock);
    }
    return NULL;
}

/* --------------------------------------------------------------- chaos */

static void retire_and_reopen(entry *sl, accel_session *h)
{
    pthread_rwlock_wrlock(&sl->lock);
    inst *in = atomic_load(&sl->cur);
    if (in->s == h) {
        inst_verify(in, true);
        inst *nin = inst_new(sl);
        /* release: publishes the new instance to its ops (op_fn). */
        atomic_store_explicit(&sl->cur, nin, memory_order_release);
        accel_session_release(in->s);
        free(in);
        atomic_fetch_add(&retired, 1);
        atomic_fetch_add(&reopened, 1);
    }
    pthread_rwlock_unlock(&sl->lock);
}

typedef struct chaos {
    int index;
    uint64_t rng;
} chaos;

static void *chaos_main(void *arg)
{
    chaos *c = arg;
    accel__yield_thread_index(1000 + (uint64_t)c->index);
    int ch = 2 * nproducers + c->index;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        usleep(rng_below(&c->rng, 3000));
        int i = (int)rng_below(&c->rng, (uint32_t)nsessions);
        i = i - i % 4 + 3; /* closable entries: i % 4 == 3 */
        if (i >= nsessions)
            continue;
        entry *sl = &entries[i];
        accel_session *h;
        if (accel_session_lookup(rt, sl->id, &h) != ACCEL_OK)
            continue; /* the other chaos thread is closing it */
        bool cancel = rng_below(&c->rng, 2);
        uint32_t how = rng_below(&c->rng, 4);
        if (how == 0) {
            /* close from inside one of its ops, then from here too */
            pthread_rwlock_rdlock(&sl->lock);
            inst *in = atomic_load(&sl->cur);
            if (in->s == h) {
                accel_op op = {op_fn, op_done,
                               enc(i, in->gen, ch,
                                   cancel ? K_CLOSE_CANCEL : K_CLOSE_DRAIN,
                                   in->next_seq[ch])};
                if (accel_submit(h, &op, ACCEL_NO_WAIT) == ACCEL_OK) {
                    in->next_seq[ch]++;
                    in->accepted[ch]++;
                }
            }
            pthread_rwlock_unlock(&sl->lock);
            usleep(rng_below(&c->rng, 500));
        }
        if (cancel) {
            pthread_rwlock_rdlock(&sl->lock);
            inst *in = atomic_load(&sl->cur);
            if (in->s == h)
                atomic_store(&in->closed_cancel, 1);
            pthread_rwlock_unlock(&sl->lock);
        }
        int rc = accel_session_close(h, cancel ? ACCEL_CLOSE_CANCEL
                                               : ACCEL_CLOSE_DRAIN);
        CHECK(rc == ACCEL_OK, "close: %s", accel_strerror(rc));
        CHECK(accel_session_is_closed(h), "is_closed after close");
        /* The id is free as soon as close began. */
        accel_session *h2;
        rc = accel_session_lookup(rt, sl->id, &h2);
        if (rc == ACCEL_OK) { /* reopened already by the other thread */
            CHECK(h2 != h, "lookup found the closed session");
            accel_session_release(h2);
        }
        retire_and_reopen(sl, h);
        accel_session_release(h);
    }
    return NULL;
}

/* set_priority storms and stats readers. */
static void *prio_main(void *arg)
{
    uint64_t rng = *(uint64_t *)arg;
    accel__yield_thread_index(2000);
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        entry *sl = &entries[rng_below(&rng, (uint32_t)nsessions)];
        pthread_rwlock_rdlock(&sl->lock);
        inst *in = atomic_load(&sl->cur);
        for (int k = 0; k < 16; k++) {
            uint32_t pr = rng_below(&rng, 50) == 0 ? 1001 + rng_below(&rng, 5)
                                                  : rng_below(&rng, 1001);
            int rc = accel_session_set_priority(in->s, pr);
            if (pr > ACCEL_PRIORITY_MAX)
                CHECK(rc == ACCEL_EINVAL, "set_priority(%u): %d", pr, rc);
            else
                CHECK(rc == ACCEL_OK || (rc == ACCEL_ECLOSED && sl->closable),
                      "set_priority(%u): %s", pr, accel_strerror(rc));
            uint32_t got = accel_session_priority(in->s);
            CHECK(got >= ACCEL_PRIORITY_MIN && got <= ACCEL_PRIORITY_MAX,
                  "priority %u out of range", got);
        }
        accel_session_stats st;
        CHECK(accel_session_get_stats(in->s, &st) == ACCEL_OK, "stats");
        CHECK(st.completed + st.failed + st.cancelled <= st.submitted,
              "stats: more finished than submitted");
        CHECK(st.memory_used >= 0 &&
                  (!st.memory_budget || st.memory_used <= st.memory_budget),
              "stats: memory_used %" PRId64 " budget %" PRId64,
              st.memory_used, st.memory_budget);
        pthread_rwlock_unlock(&sl->lock);
        usleep(100);
    }
    return NULL;
}

/* ----------------------------------------------------------------- main */

static void usage(void)
{
    fprintf(stderr,
            "usage: accel_stress_exactly_once [--seconds S] [--ops N] "
            "[--seed N] [--sessions N<=%d] [--producers N<=%d] "
            "[--workers N] [--quiet]\n",
            MAX_SESSIONS, MAX_PRODUCERS);
    exit(2);
}

int main(int argc, char **argv)
{
    double seconds = -1;
    uint64_t target_ops = 0, seed = 1;
    const char *env = getenv("ACCEL_STRESS_SECONDS");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quiet")) {
            quiet = true;
            continue;
        }
        if (!v)
            usage();
        if (!strcmp(a, "--seconds"))
            seconds = atof(v);
        else if (!strcmp(a, "--ops"))
            target_ops = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--seed"))
            seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--sessions"))
            nsessions = atoi(v);
        else if (!strcmp(a, "--producers"))
            nproducers = atoi(v);
        else if (!strcmp(a, "--workers"))
            nworkers = atoi(v);
        else
            usage();
        i++;
    }
    if (nsessions < 4 || nsessions > MAX_SESSIONS || nproducers < 1 ||
        nproducers > MAX_PRODUCERS || nworkers < 1)
        usage();
    if (seconds < 0)
        seconds = target_ops ? 3600 : (env ? atof(env) : 2);

    watchdog_start("stress_exactly_once");
    watchdog_step("runtime create and session setup", 120);
    accel_runtime_config rc_cfg = {.workers = (unsigned)nworkers};
    if (accel_runtime_create(&rc_cfg, &rt) != ACCEL_OK) {
        fprintf(stderr, "runtime_create failed\n");
        return 1;
    }
    static const uint32_t weights[] = {1, 5, 10, 100, 0, 1000, 3, 50};
    static const uint32_t depths[] = {0, 2, 8, 64, 4096, 1, 16, 256};
    static const int64_t budgets[] = {0, 4096, 1 << 20, 3000};
    accel__yield_thread_index(0); /* the main thread's yield stream */
    uint64_t cfg_rng = seed * 7919 + 1;
    for (int i = 0; i < nsessions; i++) {
        entry *sl = &entries[i];
        pthread_rwlockattr_t a;
        pthread_rwlockattr_init(&a);
        pthread_rwlockattr_setkind_np(
            &a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
        pthread_rwlock_init(&sl->lock, &a);
        pthread_rwlockattr_destroy(&a);
        snprintf(sl->id, sizeof(sl->id), "chain-%d", i);
        sl->closable = i % 4 == 3;
        sl->weight = weights[rng_below(&cfg_rng, 8)];
        sl->depth = depths[rng_below(&cfg_rng, 8)];
        sl->budget = budgets[rng_below(&cfg_rng, 4)];
        atomic_store(&sl->cur, inst_new(sl));
    }

    pthread_t pt[MAX_PRODUCERS], ct[CHAOS_THREADS], prt;
    chaos cs[CHAOS_THREADS];
    uint64_t prio_seed = seed * 31 + 17;
    uint64_t t0 = now_ns();
    for (int i = 0; i < nproducers; i++) {
        producers[i].index = i;
        producers[i].rng = seed * 1000003 + (uint64_t)i;
        pthread_create(&pt[i], NULL, producer_main, &producers[i]);
    }
    for (int i = 0; i < CHAOS_THREADS; i++) {
        cs[i] = (chaos){i, seed * 7 + (uint64_t)i * 1315423911u};
        pthread_create(&ct[i], NULL, chaos_main, &cs[i]);
    }
    pthread_create(&prt, NULL, prio_main, &prio_seed);

    uint64_t accepted = 0, seen = UINT64_MAX;
    for (;;) {
        usleep(10000);
        accepted = 0;
        for (int i = 0; i < nproducers; i++)
            accepted += atomic_load_explicit(&producers[i].accepted,
                                             memory_order_relaxed);
        /* re-armed while ops get accepted: the limit is on a run with no
         * progress at all */
        if (accepted != seen) {
            seen = accepted;
            watchdog_step("run: producers submitting (no op accepted)", 120);
        }
        double el = (double)(now_ns() - t0) / 1e9;
        if ((target_ops && accepted >= target_ops) || el >= seconds)
            break;
    }
    atomic_store(&stop, 1);
    watchdog_step("join the producers", 120);
    for (int i = 0; i < nproducers; i++)
        pthread_join(pt[i], NULL);
    watchdog_step("join the chaos threads", 120);
    for (int i = 0; i < CHAOS_THREADS; i++)
        pthread_join(ct[i], NULL);
    pthread_join(prt, NULL);
    watchdog_step("end game: burst and close every session", 120);

    /* End game: queue a burst everywhere, then close (DRAIN or CANCEL),
     * release only, or leave open for runtime destroy. */
    uint64_t end_rng = seed ^ 0xabcdef;
    inst *left[MAX_SESSIONS];
    int nleft = 0;
    for (int i = 0; i < nsessions; i++) {
        entry *sl = &entries[i];
        inst *in = atomic_load(&sl->cur);
        int ch = 0;
        for (int k = 0; k < 40; k++) {
            accel_op op = {op_fn, op_done,
                           enc(i, in->gen, ch, K_PLAIN, in->next_seq[ch])};
            if (accel_submit(in->s, &op, ACCEL_NO_WAIT) != ACCEL_OK)
                break;
            in->next_seq[ch]++;
            in->accepted[ch]++;
            accepted++;
        }
        switch (rng_below(&end_rng, 4)) {
        case 0:
        case 1: {
            bool cancel = rng_below(&end_rng, 2);
            if (cancel)
                atomic_store(&in->closed_cancel, 1);
            CHECK(accel_session_close(in->s, cancel ? ACCEL_CLOSE_CANCEL
                                                    : ACCEL_CLOSE_DRAIN) ==
                      ACCEL_OK,
                  "final close");
            inst_verify(in, true);
            accel_session_release(in->s);
            atomic_store(&sl->cur, NULL);
            free(in);
            break;
        }
        case 2: /* last handle: release closes with DRAIN */
            accel_session_release(in->s);
            left[nleft++] = in;
            break;
        default: /* handle never released: destroy frees it */
            left[nleft++] = in;
            break;
        }
    }
    /* The left sessions' ops may still run: their cur stays until destroy
     * has drained everything. */
    watchdog_step("runtime destroy", 120);
    int drc = accel_runtime_destroy(rt);
    watchdog_step("verify", 120);
    CHECK(drc == ACCEL_OK, "runtime_destroy: %d", drc);
    for (int k = 0; k < nleft; k++) {
        inst_verify(left[k], false);
        free(left[k]);
    }
    for (int i = 0; i < nsessions; i++)
        pthread_rwlock_destroy(&entries[i].lock);
    double el = (double)(now_ns() - t0) / 1e9;
    uint64_t done = atomic_load(&ops_done_total);

    printf("stress_exactly_once: seed %" PRIu64 " sessions %d producers %d "
           "workers %d: %" PRIu64 " ops accepted, %" PRIu64 " done, %" PRIu64
           " rejected, %" PRIu64 " sessions retired+reopened, %.2f s "
           "(%.2f Mops/s)\n",
           seed, nsessions, nproducers, nworkers, accepted, done,
           atomic_load(&rejected_total), atomic_load(&reopened), el,
           (double)done / el / 1e6);
    uint64_t f = atomic_load(&stress_failures);
    printf("stress_exactly_once: %" PRIu64 " passed, %" PRIu64 " failed\n",
           atomic_load(&checks_passed), f);
    return f ? 1 : 0;
}
