/*
 * libFuzzer API fuzzer: each input is a program of API calls over four
 * session entries, run by two threads at once against a fresh runtime.
 *
 * Input layout: byte 0 chooses how the input is split between the main
 * thread and the helper thread; after that each call is an opcode byte
 * followed by its argument bytes (missing bytes read as 0). The main
 * thread owns the entries' handles (open, close, release); the helper takes
 * its own handles with lookup and releases them itself, so no handle is
 * used after its release (undefined by contract). At the end the input
 * either releases everything or leaves handles and open sessions with
 * queued ops to accel_runtime_destroy.
 *
 * Checked besides ASan/UBSan/LSan: every status is one documented for its
 * call; every accepted op's done runs exactly once, none for a rejected
 * op (per-op tokens); memory_used stays within [0, budget]; an op whose
 * cancel said ACCEL_OK completes with ACCEL_ECANCELED and never runs, and
 * only such ops do; only ops with a deadline expire. A thread cancels
 * only with tickets of sessions it still holds a handle to.
 *
 * Build and run: fuzz/run.sh (see there and docs/reliability.md).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <accel/accel.h>

#define NENTRY 4
#define MAXTOK 4096
#define MAXRETIRED 64

static void die(const char *what, int line, int rc)
{
    fprintf(stderr, "api_fuzz: %s (line %d, status %d %s)\n", what, line, rc,
            accel_strerror(rc));
    abort();
}
#define EXPECT(cond, rc)                                                     \
    do {                                                                     \
        if (!(cond))                                                         \
            die(#cond, __LINE__, (rc));                                      \
    } while (0)

/* ------------------------------------------------------------- tokens */

typedef struct token {
    _Atomic int state; /* 0 free, 1 accepted-pending, 2 done */
    int kind;
    int entry;
    bool deadline;           /* submitted with one (submit_ex) */
    _Atomic int done_status; /* as done got it */
    _Atomic int cancel_ok;   /* accel_cancel said ACCEL_OK */
    _Atomic int ran;
} token;

static token toks[MAXTOK];
static _Atomic int ntok;
static _Atomic int submitted_rejected_done; /* a rejected op's done ran */

static token *tok_new(int kind, int entry)
{
    int i = atomic_fetch_add(&ntok, 1);
    if (i >= MAXTOK)
        return NULL;
    toks[i].kind = kind;
    toks[i].entry = entry;
    toks[i].deadline = false;
    atomic_store(&toks[i].done_status, 0);
    atomic_store(&toks[i].cancel_ok, 0);
    atomic_store(&toks[i].ran, 0);
    atomic_store(&toks[i].state, 0);
    return &toks[i];
}

/* ------------------------------------------------------------- reader */

typedef struct rd {
    const uint8_t *p;
    size_t n;
} rd;
static uint8_t u8(rd *r)
{
    if (!r->n)
        return 0;
    r->n--;
    return *r->p++;
}
static uint32_t u32(rd *r)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = v << 8 | u8(r);
    return v;
}

/* ----------------------------------------------------------------- ops */

enum { OK_RET0, OK_RETERR, OK_ALLOC, OK_KEEP, OK_CLOSE_DRAIN, OK_CLOSE_CANCEL,
       OK_DEADLK, OK_SPIN, OK_NKINDS };

static int op_fn(accel_ctx *ctx, void *arg)
{
    token *t = arg;
    accel_session *s = accel_ctx_session(ctx);
    EXPECT(s != NULL, 0);
    EXPECT(atomic_load(&t->state) == 1, atomic_load(&t->state));
    EXPECT(!atomic_load(&t->cancel_ok), 0); /* a canceled op never runs */
    atomic_store(&t->ran, 1);
    int64_t used0 = accel_session_memory_used(s);
    EXPECT(used0 >= 0, (int)used0);
    void *p;
    int rc;
    switch (t->kind) {
    case OK_RETERR:
        return 1 + t->entry;
    case OK_ALLOC:
        rc = accel_ctx_alloc(ctx, 1 + (size_t)(t - toks) % 300, &p);
        EXPECT(rc == ACCEL_OK || rc == ACCEL_EBUDGET, rc);
        if (rc == ACCEL_OK)
            accel_ctx_free(ctx, p);
        break;
    case OK_KEEP: /* left allocated: freed with the session */
        rc = accel_ctx_alloc(ctx, 24, &p);
        EXPECT(rc == ACCEL_OK || rc == ACCEL_EBUDGET, rc);
        break;
    case OK_CLOSE_DRAIN:
    case OK_CLOSE_CANCEL:
        rc = accel_session_close(s, t->kind == OK_CLOSE_CANCEL);
        EXPECT(rc == ACCEL_OK, rc);
        break;
    case OK_DEADLK:
        EXPECT(accel_session_sync(s, 0) == ACCEL_EDEADLK, 0);
        EXPECT(accel_submit_wait(s, op_fn, t, 0) == ACCEL_EDEADLK, 0);
        break;
    case OK_SPIN:
        for (volatile int i = 0; i < 1000; i++)
            ;
        break;
    default:
        break;
    }
    accel_session_stats st;
    EXPECT(accel_session_get_stats(s, &st) == ACCEL_OK, 0);
    EXPECT(st.memory_used >= 0 &&
               (!st.memory_budget || st.memory_used <= st.memory_budget),
           (int)st.memory_used);
    return 0;
}

static void op_done(void *arg, int status)
{
    token *t = arg;
    int was = atomic_exchange(&t->state, 2);
    if (was != 1)
        atomic_fetch_add(&submitted_rejected_done, 1);
    EXPECT(was == 1, was); /* exactly once, and only when accepted */
    EXPECT(status == 0 || status == ACCEL_ECLOSED || status == 1 + t->entry ||
               status == ACCEL_ECANCELED ||
               (status == ACCEL_EEXPIRED && t->deadline),
           status);
    atomic_store(&t->done_status, status);
}

static int wait_fn(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    return (int)(uintptr_t)arg;
}

/* -------------------------------------------------------------- state */

static accel_runtime *rt;
static accel_session *main_h[NENTRY];
static accel_session *retired[MAXRETIRED];
static int nretired;

static const char *entry_id(int i)
{
    static const char *ids[NENTRY] = {"f0", "f1", "f2", "f3"};
    return ids[i & (NENTRY - 1)];
}

static int64_t timeout_of(uint8_t b)
{
    switch (b & 3) {
    case 0:
        return ACCEL_NO_WAIT;
    case 1:
        return 20000; /* 20 us */
    case 2:
        return (b & 4) ? -2 : ACCEL_FOREVER; /* -2: invalid */
    default:
        return 1000000;
    }
}

static bool is_submit_rc(int rc, int64_t to)
{
    if (to < ACCEL_FOREVER)
        return rc == ACCEL_EINVAL;
    return rc == ACCEL_OK || rc == ACCEL_ECLOSED ||
           (rc == ACCEL_EAGAIN && to == ACCEL_NO_WAIT) ||
           (rc == ACCEL_ETIMEDOUT && to > 0);
}

/* Tickets a thread got from submit_ex, usable while the thread still holds
 * the handle it submitted with: hgen counts each thread's handle changes
 * per entry. [0]: main thread, [1]: helper. */
#define NTICKET 8
typedef struct held_ticket {
    accel_ticket t;
    token *tok;
    int entry;
    unsigned gen;
    bool used;
} held_ticket;
static held_ticket tickets[2][NTICKET];
static unsigned hgen[2][NENTRY];

/* One call. own: the thread's handle array (main: main_h; helper: its
 * lookups). main: whether this thread may open/release main handles. */
static void step(rd *r, accel_session **own, bool main)
{
    uint8_t op = u8(r) % 16;
    int sl = u8(r) % NENTRY;
    accel_session *s = own[sl];
    int rc;
    switch (op) {
    case 0: { /* open */
        if (!main)
            break;
        uint8_t b = u8(r);
        accel_session_config cfg = {
            .id = (b & 0x80) ? "" : entry_id(sl),
            .priority = (b & 1) ? 1001 : u8(r) * 4u,
            .memory_budget = (b & 2) ? -1 : (int64_t)u8(r) * 16,
            .queue_depth = (b & 4) ? (1u << 31) : u8(r) % 9,
            .backend = (b & 8) ? ACCEL_BACKEND_CPU : ACCEL_BACKEND_AUTO,
            .flags = (b & 0x10) ? 0x40 : 0,
        };
        accel_session *ns = NULL;
        rc = accel_session_open(rt, &cfg, &ns);
        EXPECT(rc == ACCEL_OK || rc == ACCEL_EINVAL || rc == ACCEL_EEXIST, rc);
        if (rc == ACCEL_OK) {
            EXPECT(cfg.priority <= 1000 && cfg.memory_budget >= 0, rc);
            if (s && nretired < MAXRETIRED)
                retired[nretired++] = s;
            else if (s)
                accel_session_release(s);
            own[sl] = ns;
            hgen[0][sl]++;
        } else {
            EXPECT(ns == NULL, rc);
        }
        break;
    }
    case 1: { /* close */
        unsigned fl = u8(r) % 3; /* 2: invalid */
        rc = accel_session_close(s, fl);
        EXPECT(rc == ((!s || fl == 2) ? ACCEL_EINVAL : ACCEL_OK), rc);
        if (s && fl != 2)
            EXPECT(accel_session_is_closed(s), 0);
        break;
    }
    case 2: /* release */
        accel_session_release(s);
        own[sl] = NULL;
        hgen[!main][sl]++;
        break;
    case 3: { /* lookup */
        accel_session *h = NULL;
        uint8_t b = u8(r);
        const char *id = (b & 3) == 0 ? NULL : (b & 3) == 1 ? "" : entry_id(sl);
        rc = accel_session_lookup(rt, id, &h);
        EXPECT(rc == ACCEL_OK || rc == ACCEL_ENOENT ||
                   (rc == ACCEL_EINVAL && (b & 3) < 2),
               rc);
        if (rc == ACCEL_OK) {
            EXPECT(strcmp(accel_session_id(h), entry_id(sl)) == 0, rc);
            if (!main && !own[sl]) {
                own[sl] = h; /* the helper keeps it */
                hgen[1][sl]++;
            }
            else
                accel_session_release(h);
        }
        break;
    }
    case 4: { /* submit */
        int kind = u8(r) % OK_NKINDS;
        int64_t to = timeout_of(u8(r));
        token *t = tok_new(kind, sl);
        if (!t)
            break;
        accel_op o = {op_fn, op_done, t};
        atomic_store(&t->state, 1); /* before: the op may run at once */
        rc = accel_submit(s, &o, to);
        if (!s)
            EXPECT(rc == ACCEL_EINVAL, rc);
        else
            EXPECT(is_submit_rc(rc, to), rc);
        if (rc != ACCEL_OK)
            EXPECT(atomic_exchange(&t->state, 3) == 1, rc);
        break;
    }
    case 5: { /* batch */
        size_t n = u8(r) % 9;
        size_t nullat = u8(r) % 12;
        int64_t to = timeout_of(u8(r));
        accel_op ops[8];
        token *ts[8];
        size_t made = 0;
        for (; made < n; made++) {
            ts[made] = tok_new(u8(r) % OK_NKINDS, sl);
            if (!ts[made])
                break;
            atomic_store(&ts[made]->state, 1);
            ops[made] = (accel_op){made == nullat ? NULL : op_fn, op_done,
                                   ts[made]};
        }
        size_t acc = 999;
        rc = accel_submit_batch(s, ops, made, to, &acc);
        EXPECT(acc <= made && (made <= nullat || acc <= nullat), (int)acc);
        if (!s)
            EXPECT(rc == ACCEL_EINVAL && acc == 0, rc);
        else if (rc == ACCEL_OK)
            EXPECT(acc == made, rc);
        else
            EXPECT(rc == ACCEL_EINVAL || is_submit_rc(rc, to), rc);
        for (size_t i = acc; i < made; i++)
            EXPECT(atomic_exchange(&ts[i]->state, 3) == 1, rc);
        break;
    }
    case 6: { /* submit_wait */
        uint8_t v = u8(r) % 3;
        int64_t to = timeout_of(u8(r));
        rc = accel_submit_wait(s, wait_fn, (void *)(uintptr_t)v, to);
        if (!s)
            EXPECT(rc == ACCEL_EINVAL, rc);
        else
            EXPECT(rc == (int)v || (rc != ACCEL_OK && is_submit_rc(rc, to)),
                   rc);
        break;
    }
    case 7: /* sync */
        rc = accel_session_sync(s, (u8(r) & 1) ? ACCEL_FOREVER : -5);
        EXPECT(rc == ACCEL_OK || rc == ACCEL_EINVAL, rc);
        break;
    case 8: { /* reserve */
        int64_t b = (int64_t)(int32_t)u32(r) >> 16;
        rc = accel_session_reserve(s, b);
        EXPECT(rc == ACCEL_OK || rc == ACCEL_EINVAL || rc == ACCEL_EBUDGET ||
                   rc == ACCEL_ECLOSED,
               rc);
        if (b < 0 || !s)
            EXPECT(rc == ACCEL_EINVAL, rc);
        break;
    }
    case 9: { /* unreserve */
        int64_t b = (int64_t)(int32_t)u32(r) >> 16;
        int64_t before = accel_session_memory_used(s);
        rc = accel_session_unreserve(s, b);
        EXPECT(rc == ACCEL_OK || rc == ACCEL_EINVAL, rc);
        EXPECT(accel_session_memory_used(s) >= 0, rc);
        if (b < 0 || !s)
            EXPECT(rc == ACCEL_EINVAL, rc);
        (void)before;
        break;
    }
    case 10: { /* set_priority */
        uint32_t p = u8(r) * 5u; /* up to 1275: some invalid */
        rc = accel_session_set_priority(s, p);
        if (!s || p > 1000)
            EXPECT(rc == ACCEL_EINVAL, rc);
        else
            EXPECT(rc == ACCEL_OK || rc == ACCEL_ECLOSED, rc);
        if (s) {
            uint32_t got = accel_session_priority(s);
            EXPECT(got >= 1 && got <= 1000, (int)got);
        }
        break;
    }
    case 11: { /* stats and getters */
        accel_session_stats st;
        rc = accel_session_get_stats(s, &st);
        EXPECT(rc == (s ? ACCEL_OK : ACCEL_EINVAL), rc);
        if (s) {
            EXPECT(st.completed + st.failed + st.cancelled <= st.submitted, 0);
            EXPECT(st.memory_used >= 0, 0);
            EXPECT(accel_session_backend(s) == ACCEL_BACKEND_CPU ||
                       accel_session_backend(s) == ACCEL_BACKEND_CUDA,
                   0);
            EXPECT(accel_session_id(s) != NULL, 0);
        }
        break;
    }
    case 12: { /* submit a burst to fill small rings */
        for (int k = 0; k < 8 && s; k++) {
            token *t = tok_new(OK_RET0, sl);
            if (!t)
                break;
            atomic_store(&t->state, 1);
            accel_op o = {op_fn, op_done, t};
            rc = accel_submit(s, &o, ACCEL_NO_WAIT);
            EXPECT(is_submit_rc(rc, ACCEL_NO_WAIT), rc);
            if (rc != ACCEL_OK)
                EXPECT(atomic_exchange(&t->state, 3) == 1, rc);
        }
        break;
    }
    case 14: { /* submit_ex: deadline none/past/far/near, maybe a ticket */
        uint8_t b = u8(r);
        int kind = u8(r) % OK_NKINDS;
        int64_t to = timeout_of(u8(r));
        int64_t now = accel_now_ns();
        int64_t dl = (b & 8)        ? -1 /* invalid */
                     : (b & 3) == 0 ? 0
                     : (b & 3) == 1 ? 1
                     : (b & 3) == 2 ? now + INT64_C(3600000000000)
                                    : now + (int64_t)u8(r) * 1000;
        token *t = tok_new(kind, sl);
        if (!t)
            break;
        t->deadline = dl > 0;
        accel_op o = {op_fn, op_done, t};
        accel_ticket tk;
        atomic_store(&t->state, 1);
        rc = accel_submit_ex(s, &o, dl, to, (b & 4) ? &tk : NULL);
        if (!s || dl < 0)
            EXPECT(rc == ACCEL_EINVAL, rc);
        else
            EXPECT(is_submit_rc(rc, to), rc);
        if (rc != ACCEL_OK) {
            EXPECT(atomic_exchange(&t->state, 3) == 1, rc);
            if (b & 4)
                EXPECT(tk.session == NULL, rc); /* zeroed */
        } else if (b & 4) {
            held_ticket *h = &tickets[!main][(t - toks) % NTICKET];
            *h = (held_ticket){tk, t, sl, hgen[!main][sl], true};
        }
        break;
    }
    case 15: { /* cancel a held ticket (or a bad one) */
        uint8_t b = u8(r);
        held_ticket *h = &tickets[!main][b % NTICKET];
        if (b & 0x80) {
            accel_ticket z;
            memset(&z, 0, sizeof(z));
            EXPECT(accel_cancel((b & 0x40) ? NULL : &z) == ACCEL_EINVAL, 0);
            break;
        }
        if (!h->used || hgen[!main][h->entry] != h->gen)
            break; /* its handle is gone: the ticket may not be used */
        rc = accel_cancel(&h->t);
        EXPECT(rc == ACCEL_OK || rc == ACCEL_EALREADY || rc == ACCEL_ECLOSED,
               rc);
        if (rc == ACCEL_OK) {
            EXPECT(!atomic_load(&h->tok->cancel_ok), 0); /* once only */
            atomic_store(&h->tok->cancel_ok, 1);
        }
        break;
    }
    default: /* strerror on any value */
        EXPECT(accel_strerror((int)u32(r)) != NULL, 0);
        break;
    }
}

typedef struct helper {
    rd r;
    accel_session *h[NENTRY];
} helper;

static void *helper_main(void *arg)
{
    helper *hp = arg;
    while (hp->r.n)
        step(&hp->r, hp->h, false);
    for (int i = 0; i < NENTRY; i++)
        accel_session_release(hp->h[i]);
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    atomic_store(&ntok, 0);
    accel_runtime_config cfg = {.workers = 1 + (data[0] & 1)};
    if (accel_runtime_create(&cfg, &rt) != ACCEL_OK)
        abort();
    /* byte 0: split point of the rest between main and helper */
    size_t rest = size - 1;
    size_t cut = rest * (data[0] >> 1) / 127;
    if (cut > rest)
        cut = rest;
    rd mr = {data + 1, cut};
    helper hp;
    memset(&hp, 0, sizeof(hp));
    hp.r = (rd){data + 1 + cut, rest - cut};
    memset(main_h, 0, sizeof(main_h));
    memset(tickets, 0, sizeof(tickets));
    memset(hgen, 0, sizeof(hgen));
    nretired = 0;
    pthread_t th;
    bool threaded = hp.r.n > 0 && pthread_create(&th, NULL, helper_main, &hp) == 0;
    while (mr.n)
        step(&mr, main_h, true);
    if (threaded)
        pthread_join(th, NULL);
    /* The end: release all (data[0] & 2) or leave the rest to destroy. */
    if (data[0] & 2) {
        for (int i = 0; i < NENTRY; i++)
            accel_session_release(main_h[i]);
        for (int i = 0; i < nretired; i++)
            accel_session_release(retired[i]);
    }
    EXPECT(accel_runtime_destroy(rt) == ACCEL_OK, 0);
    int n = atomic_load(&ntok);
    if (n > MAXTOK)
        n = MAXTOK;
    for (int i = 0; i < n; i++) {
        int st = atomic_load(&toks[i].state);
        EXPECT(st == 2 || st == 3, st); /* accepted: done ran; else rejected */
        int ds = atomic_load(&toks[i].done_status);
        EXPECT(atomic_load(&toks[i].cancel_ok) == (st == 2 && ds == ACCEL_ECANCELED),
               ds);
        if (ds == ACCEL_ECANCELED || ds == ACCEL_EEXPIRED || ds == ACCEL_ECLOSED)
            EXPECT(!atomic_load(&toks[i].ran), ds);
    }
    EXPECT(atomic_load(&submitted_rejected_done) == 0, 0);
    rt = NULL;
    return 0;
}
