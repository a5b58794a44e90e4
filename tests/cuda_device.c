/*
 * CUDA device tests (skipped, exit 77, without a usable device).
 * One program, one sub-test per argument:
 *   fifo       ops of a session reach the device in acceptance order (a
 *              kernel appends to a log in mapped host memory), and each done
 *              callback runs after its op's device work finished
 *   shared     the same for several ACCEL_SESSION_SHARED_DEVICE sessions
 *   priority   FIFO holds across priority changes (stream swaps)
 *   budget     the budget holds against real pool allocations
 *   close      closing sessions frees their streams, pools and memory
 *   sessions17 17 sessions, 4 submitting threads, all ops complete in order
 *   batch      a session with a batch function: N queued ops reach one call
 *              and one kernel launch on the session's stream; each op's
 *              done runs once, in FIFO order, with its own status, after
 *              the launch ran; a failing launch fails all N, once each
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "cuda_check.h"
#include "kernels.h"
#include "rcu.h"

#include "cuda_internal.h"

typedef struct logbuf {
    unsigned *hcount, *dcount;
    uint32_t *hlog, *dlog;
    unsigned cap;
    unsigned done_next; /* next value expected by done (one producer) */
    _Atomic unsigned done_bad;
} logbuf;

typedef struct logop {
    logbuf *lb;
    uint32_t value;
    unsigned index; /* position in the log it must land at (one producer) */
} logop;

static void log_init(logbuf *lb, unsigned cap)
{
    memset(lb, 0, sizeof(*lb));
    lb->cap = cap;
    CHECK_EQ(cudaHostAlloc((void **)&lb->hcount, sizeof(unsigned),
                           cudaHostAllocMapped), cudaSuccess);
    CHECK_EQ(cudaHostAlloc((void **)&lb->hlog, cap * sizeof(uint32_t),
                           cudaHostAllocMapped), cudaSuccess);
    CHECK_EQ(cudaHostGetDevicePointer((void **)&lb->dcount, lb->hcount, 0),
             cudaSuccess);
    CHECK_EQ(cudaHostGetDevicePointer((void **)&lb->dlog, lb->hlog, 0),
             cudaSuccess);
    *lb->hcount = 0;
}

static void log_fini(logbuf *lb)
{
    cudaFreeHost(lb->hcount);
    cudaFreeHost(lb->hlog);
}

static int op_append(accel_ctx *ctx, void *arg)
{
    logop *o = arg;
    return accel_k_log_append(accel_ctx_cuda_stream(ctx), o->lb->dcount,
                              o->lb->dlog, o->lb->cap, o->value);
}

/* One producer per log: the op at index i must be the i-th to finish and
 * its kernel must have run (the count passed it) before done. */
static void done_ordered(void *arg, int status)
{
    logop *o = arg;
    logbuf *lb = o->lb;
    unsigned seen = *(volatile unsigned *)lb->hcount;
    if (status != 0 || o->index != lb->done_next || seen <= o->index)
        atomic_fetch_add(&lb->done_bad, 1);
    lb->done_next++;
}

static void run_fifo(int nsess, unsigned flags, int change_prio)
{
    accel_runtime *rt = cuda_runtime_or_skip(4);
    enum { N = 3000 };
    accel_session *s[4];
    logbuf lb[4];
    static logop ops[4][N];
    for (int k = 0; k < nsess; k++) {
        char id[16];
        snprintf(id, sizeof(id), "s%d", k);
        accel_session_config c = {.id = id, .backend = ACCEL_BACKEND_CUDA,
                                  .flags = flags, .priority = 10};
        CHECK_EQ(accel_session_open(rt, &c, &s[k]), ACCEL_OK);
        log_init(&lb[k], N);
    }
    const uint32_t weights[] = {1, 5, 10, 100, 1000};
    cuda_step("fifo: submitting (the log kernel writes mapped host memory)");
    for (unsigned i = 0; i < N; i++) {
        for (int k = 0; k < nsess; k++) {
            ops[k][i] = (logop){.lb = &lb[k], .value = i, .index = i};
            accel_op op = {op_append, done_ordered, &ops[k][i]};
            CHECK_EQ(accel_submit(s[k], &op, ACCEL_FOREVER), ACCEL_OK);
            if (change_prio && i % 50 == 0)
                CHECK_EQ(accel_session_set_priority(
                             s[k], weights[(i / 50 + k) % 5]), ACCEL_OK);
        }
    }
    cuda_step("fifo: sync (waits for every op's device work)");
    for (int k = 0; k < nsess; k++) {
        CHECK_EQ(accel_session_sync(s[k], ACCEL_FOREVER), ACCEL_OK);
        CHECK_EQ(atomic_load(&lb[k].done_bad), 0);
        CHECK_EQ(lb[k].done_next, N);
        CHECK_EQ(*lb[k].hcount, N);
        for (unsigned i = 0; i < N; i++)
            CHECK_EQ(lb[k].hlog[i], i);
        accel_session_stats st;
        CHECK_EQ(accel_session_get_stats(s[k], &st), ACCEL_OK);
        CHECK_EQ(st.completed, N);
        CHECK_EQ(accel_session_close(s[k], 0), ACCEL_OK);
        accel_session_release(s[k]);
        log_fini(&lb[k]);
    }
    CHECK_EQ(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---------------------------------------------------------------- budget */

#define BUDGET ((int64_t)(1 << 20) + 100)
#define PIECE 4097u /* charges 4352 */

typedef struct budget_arg {
    void *p[1024];
    int n, stop_status;
    int64_t used_at_stop;
    unsigned char *host; /* pinned, receives a copy of p[0] */
} budget_arg;

static int op_fill(accel_ctx *ctx, void *arg)
{
    budget_arg *b = arg;
    cudaStream_t st = accel_ctx_cuda_stream_t(ctx);
    for (;;) {
        void *p;
        int rc = accel_ctx_alloc(ctx, PIECE, &p);
        if (rc != ACCEL_OK) {
            b->stop_status = rc;
            break;
        }
        CHECK(b->n < 1024);
        b->p[b->n++] = p;
        /* Real memory: write it on the session's stream. */
        CHECK_EQ(cudaMemsetAsync(p, 0xab, PIECE, st), cudaSuccess);
    }
    b->used_at_stop = accel_session_memory_used(accel_ctx_session(ctx));
    CHECK_EQ(cudaMemcpyAsync(b->host, b->p[0], PIECE, cudaMemcpyDeviceToHost,
                             st), cudaSuccess);
    return 0;
}

static int op_free_all(accel_ctx *ctx, void *arg)
{
    budget_arg *b = arg;
    for (int i = 0; i < b->n; i++)
        accel_ctx_free(ctx, b->p[i]);
    b->n = 0;
    return 0;
}

static int op_edges(accel_ctx *ctx, void *arg)
{
    (void)arg;
    void *p, *q;
    CHECK_EQ(accel_ctx_alloc(ctx, (size_t)BUDGET + 1, &p), ACCEL_EBUDGET);
    CHECK_EQ(accel_ctx_alloc(ctx, 0, &p), ACCEL_EINVAL);
    /* 1 MiB + 100 admits exactly 1 MiB of 256-byte granules. */
    CHECK_EQ(accel_ctx_alloc(ctx, 1 << 20, &p), ACCEL_OK);
    CHECK_EQ(accel_ctx_alloc(ctx, 1, &q), ACCEL_EBUDGET);
    CHECK_EQ(accel_session_memory_used(accel_ctx_session(ctx)), 1 << 20);
    accel_ctx_free(ctx, p);
    CHECK_EQ(accel_ctx_alloc(ctx, 1, &q), ACCEL_OK);
    CHECK_EQ(accel_session_memory_used(accel_ctx_session(ctx)), 256);
    accel_ctx_free(ctx, q);
    return 0;
}

static void run_budget(void)
{
    accel_runtime *rt = cuda_runtime_or_skip(2);
    accel_session *s;
    accel_session_config c = {.id = "b", .backend = ACCEL_BACKEND_CUDA,
                              .memory_budget = BUDGET};
    CHECK_EQ(accel_session_open(rt, &c, &s), ACCEL_OK);
    static budget_arg b;
    CHECK_EQ(cudaHostAlloc((void **)&b.host, PIECE, 0), cudaSuccess);
    memset(b.host, 0, PIECE);
    cuda_step("budget: fill to EBUDGET from the 2 MiB pool");
    CHECK_EQ(accel_submit_wait(s, op_fill, &b, ACCEL_FOREVER), 0);
    const int64_t charge = (PIECE + 255) / 256 * 256;
    CHECK_EQ(b.stop_status, ACCEL_EBUDGET);
    CHECK_EQ(b.used_at_stop, b.n * charge);
    CHECK(b.used_at_stop <= BUDGET);
    CHECK(b.used_at_stop + charge > BUDGET);
    /* submit_wait returned after the op's device work: the copy is done. */
    for (unsigned i = 0; i < PIECE; i++)
        CHECK_EQ(b.host[i], 0xab);
    CHECK_EQ(accel_submit_wait(s, op_free_all, &b, ACCEL_FOREVER), 0);
    CHECK_EQ(accel_session_memory_used(s), 0);
    cuda_step("budget: 1 MiB contiguous after the frees");
    CHECK_EQ(accel_submit_wait(s, op_edges, NULL, ACCEL_FOREVER), 0);
    CHECK_EQ(accel_session_memory_used(s), 0);
    accel_session_release(s);
    cudaFreeHost(b.host);
    CHECK_EQ(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ----------------------------------------------------------------- close */

static int op_leak(accel_ctx *ctx, void *arg)
{
    (void)arg;
    void *p;
    for (int i = 0; i < 2; i++) /* left allocated: the close frees them */
        CHECK_EQ(accel_ctx_alloc(ctx, 32u << 20, &p), ACCEL_OK);
    return 0;
}

static void run_close(void)
{
    accel_runtime *rt = cuda_runtime_or_skip(2);
    long streams0 = accel__cuda_live_streams();
    long pools0 = accel__cuda_live_pools();
    size_t free0, free1, total;
    CHECK_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
    for (int i = 0; i < 40; i++) {
        accel_session *s[2];
        accel_session_config c = {.id = "c0", .backend = ACCEL_BACKEND_CUDA};
        CHECK_EQ(accel_session_open(rt, &c, &s[0]), ACCEL_OK);
        c.id = "c1";
        c.flags = ACCEL_SESSION_SHARED_DEVICE;
        CHECK_EQ(accel_session_open(rt, &c, &s[1]), ACCEL_OK);
        CHECK_EQ(accel__cuda_live_pools(), pools0 + 2);
        for (int k = 0; k < 2; k++) {
            CHECK_EQ(accel_submit_wait(s[k], op_leak, NULL, ACCEL_FOREVER), 0);
            CHECK_EQ(accel_session_memory_used(s[k]), 64 << 20);
            CHECK_EQ(accel_session_close(s[k], 0), ACCEL_OK);
            accel_session_release(s[k]);
        }
        cuda_step("close: waiting for the closed sessions to be freed");
        /* Session objects are freed after a grace period, once the worker
         * also dropped its reference: wait for it, boundedly. */
        for (int t = 0; t < 1000 && (accel__cuda_live_streams() != streams0 ||
                                     accel__cuda_live_pools() != pools0);
             t++) {
            accel__rcu_barrier();
            usleep(10000);
        }
        CHECK_EQ(accel__cuda_live_streams(), streams0);
        CHECK_EQ(accel__cuda_live_pools(), pools0);
    }
    CHECK_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
    /* 40 x 128 MiB went through; what is not back is at most noise. */
    printf("device free before %zu MiB, after %zu MiB\n", free0 >> 20,
           free1 >> 20);
    CHECK(free1 + (256u << 20) >= free0);
    CHECK_EQ(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ------------------------------------------------------------ sessions17 */

#define NS 17
#define NP 4
#define PER 400 /* ops per producer per session */

static accel_session *s17[NS];
static logbuf lb17[NS];
static logop ops17[NP][NS][PER];

static void *producer17(void *arg)
{
    int p = (int)(intptr_t)arg;
    for (unsigned i = 0; i < PER; i++)
        for (int k = 0; k < NS; k++) {
            ops17[p][k][i] = (logop){.lb = &lb17[k],
                                     .value = ((uint32_t)p << 16) | i};
            accel_op op = {op_append, NULL, &ops17[p][k][i]};
            CHECK_EQ(accel_submit(s17[k], &op, ACCEL_FOREVER), ACCEL_OK);
        }
    return NULL;
}

static void run_sessions17(void)
{
    accel_runtime *rt = cuda_runtime_or_skip(4);
    const uint32_t w[] = {1, 5, 10, 100};
    for (int k = 0; k < NS; k++) {
        char id[16];
        snprintf(id, sizeof(id), "v%d", k);
        accel_session_config c = {.id = id, .backend = ACCEL_BACKEND_CUDA,
                                  .priority = w[k % 4],
                                  .flags = k == 16 ? ACCEL_SESSION_SHARED_DEVICE
                                                   : 0};
        CHECK_EQ(accel_session_open(rt, &c, &s17[k]), ACCEL_OK);
        log_init(&lb17[k], NP * PER);
    }
    pthread_t th[NP];
    cuda_step("sessions17: submitting from 4 threads");
    for (int p = 0; p < NP; p++)
        CHECK_EQ(pthread_create(&th[p], NULL, producer17, (void *)(intptr_t)p), 0);
    for (int p = 0; p < NP; p++)
        pthread_join(th[p], NULL);
    cuda_step("sessions17: close (waits for every op)");
    for (int k = 0; k < NS; k++) {
        CHECK_EQ(accel_session_close(s17[k], 0), ACCEL_OK);
        accel_session_stats st;
        CHECK_EQ(accel_session_get_stats(s17[k], &st), ACCEL_OK);
        CHECK_EQ(st.submitted, NP * PER);
        CHECK_EQ(st.completed, NP * PER);
        CHECK_EQ(*lb17[k].hcount, NP * PER);
        /* Each producer's ops appear in its submission order. */
        unsigned next[NP] = {0};
        for (unsigned i = 0; i < NP * PER; i++) {
            uint32_t v = lb17[k].hlog[i];
            unsigned p = v >> 16;
            CHECK(p < NP);
            CHECK_EQ(v & 0xffff, next[p]);
            next[p]++;
        }
        accel_session_release(s17[k]);
        log_fini(&lb17[k]);
    }
    CHECK_EQ(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ----------------------------------------------------------------- batch */

typedef struct bat {
    logbuf lb;
    unsigned *hlaunch, *dlaunch; /* launches the device ran (mapped) */
    unsigned *hgate, *dgate;     /* two gates (mapped) */
    _Atomic unsigned calls;      /* batch function calls */
    _Atomic unsigned last_n;     /* n of the last call */
    _Atomic int bad;             /* the next call's launch fails */
    struct bop *_Atomic gated;   /* the latest gated op */
} bat;

typedef struct bop {
    bat *t;
    unsigned idx;   /* its place in the session's FIFO */
    uint32_t value; /* its place in the log (consecutive in a batch) */
    int gate;       /* -1: none, else the gate its batch's kernel waits on */
    int want;       /* the status the batch function writes for it */
    int expect;     /* the status its done must get */
    _Atomic int dones;
} bop;

/* One call, one launch for the n ops; status[i] is ops[i]'s own. */
static void batch_log(accel_ctx *ctx, void *const *args, uint32_t n,
                      int *status, void *user)
{
    bat *t = user;
    atomic_fetch_add(&t->calls, 1);
    atomic_store(&t->last_n, n);
    const bop *o0 = args[0];
    /* The cap of one unit in flight: a batch forms only once the gated
     * one before it completed. */
    bop *g = atomic_load(&t->gated);
    if (g && o0 != g && !atomic_load(&g->dones))
        atomic_fetch_add(&t->lb.done_bad, 1);
    int gaps = 0;
    for (uint32_t i = 0; i < n; i++)
        gaps |= ((const bop *)args[i])->value != o0->value + i;
    void *st = accel_ctx_cuda_stream(ctx);
    int e = atomic_load(&t->bad)
                ? accel_k_bad_launch(st)
                : accel_k_log_append_batch(
                      st, t->lb.dcount, t->lb.dlog, t->lb.cap, o0->value, n,
                      t->dlaunch, o0->gate >= 0 ? &t->dgate[o0->gate] : NULL);
    for (uint32_t i = 0; i < n; i++)
        status[i] = gaps ? -1 : e ? e : ((const bop *)args[i])->want;
}

/* FIFO (one producer), once, its own status, after its kernel ran. */
static void done_batch(void *arg, int status)
{
    bop *o = arg;
    logbuf *lb = &o->t->lb;
    unsigned seen = *(volatile unsigned *)lb->hcount;
    if (atomic_fetch_add(&o->dones, 1) != 0 || status != o->expect ||
        o->idx != lb->done_next || (status == o->want && seen <= o->value))
        atomic_fetch_add(&lb->done_bad, 1);
    lb->done_next++;
}

static void wait_calls(bat *t, unsigned n, const char *what)
{
    cuda_step(what);
    while (atomic_load(&t->calls) < n)
        usleep(1000);
}

/* Waits until the session's visits, counted at their end, grew by 2: a
 * whole visit began after the call (one that must form no batch while a
 * gated one is in flight, the cap being one). */
static void wait_a_visit(accel_session *s)
{
    accel_session_stats st;
    CHECK_EQ(accel_session_get_stats(s, &st), ACCEL_OK);
    uint64_t v0 = st.visits;
    do {
        usleep(1000);
        CHECK_EQ(accel_session_get_stats(s, &st), ACCEL_OK);
    } while (st.visits < v0 + 2);
}

static void open_dev_gate(bat *t, int g)
{
    /* seq_cst: the kernel polls the mapped word (volatile) */
    __atomic_store_n(&t->hgate[g], 1u, __ATOMIC_SEQ_CST);
}

static void run_batch(void)
{
    accel_runtime *rt = cuda_runtime_or_skip(2);
    /* One unit in flight: the gated batch holds the session's next batch
     * back until every op of it is queued, whatever the timing. */
    CHECK_EQ(accel__cuda_set_inflight_cap(rt, 1), ACCEL_OK);
    enum { N = 200, M = 50 };
    static bat t;
    static bop o[1 + N + 1 + M + 1];
    log_init(&t.lb, 1 + N + 1 + 1);
    CHECK_EQ(cudaHostAlloc((void **)&t.hlaunch, sizeof(unsigned),
                           cudaHostAllocMapped), cudaSuccess);
    CHECK_EQ(cudaHostAlloc((void **)&t.hgate, 2 * sizeof(unsigned),
                           cudaHostAllocMapped), cudaSuccess);
    CHECK_EQ(cudaHostGetDevicePointer((void **)&t.dlaunch, t.hlaunch, 0),
             cudaSuccess);
    CHECK_EQ(cudaHostGetDevicePointer((void **)&t.dgate, t.hgate, 0),
             cudaSuccess);
    *t.hlaunch = 0;
    t.hgate[0] = t.hgate[1] = 0;
    accel_session *s;
    accel_session_config c = {.id = "bat", .backend = ACCEL_BACKEND_CUDA,
                              .queue_depth = 512};
    CHECK_EQ(accel_session_open(rt, &c, &s), ACCEL_OK);
    accel_batch_config bc = {.fn = batch_log, .user = &t,
                             .max_ops = ACCEL_BATCH_MAX};
    CHECK_EQ(accel_session_set_batch(s, &bc), ACCEL_OK);

    /* 1 gated op, then N ops: one call and one launch for the N. */
    uint32_t v = 0;
    unsigned k = 0, nfail = 0;
    o[k] = (bop){.t = &t, .idx = k, .value = v++, .gate = 0};
    atomic_store(&t.gated, &o[k]);
    accel_op op = {op_append, done_batch, &o[k++]};
    CHECK_EQ(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    wait_calls(&t, 1, "batch: the gated batch's call");
    for (int i = 0; i < N; i++, k++) {
        int want = i % 5 == 3 ? 1000 + i : 0;
        nfail += want != 0;
        o[k] = (bop){.t = &t, .idx = k, .value = v++, .gate = -1, .want = want,
                     .expect = want};
        op = (accel_op){op_append, done_batch, &o[k]};
        CHECK_EQ(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    }
    cuda_step("batch: a visit while the gated batch is in flight");
    wait_a_visit(s);
    open_dev_gate(&t, 0);
    cuda_step("batch: sync after N ops (one launch)");
    CHECK_EQ(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    printf("batch: %u calls, %u launches for %d ops, last call n=%u\n",
           atomic_load(&t.calls), *(volatile unsigned *)t.hlaunch, 1 + N,
           atomic_load(&t.last_n));
    CHECK_EQ(atomic_load(&t.lb.done_bad), 0);
    CHECK_EQ(t.lb.done_next, 1 + N);
    CHECK_EQ(atomic_load(&t.calls), 2);
    CHECK_EQ(atomic_load(&t.last_n), N);
    CHECK_EQ(*(volatile unsigned *)t.hlaunch, 2);
    CHECK_EQ(*(volatile unsigned *)t.lb.hcount, 1 + N);
    for (unsigned i = 0; i < 1 + N; i++)
        CHECK_EQ(t.lb.hlog[i], i);

    /* A failing launch: 1 gated op, then M ops whose one launch fails:
     * each of the M completes once with the launch's error, in order. */
    o[k] = (bop){.t = &t, .idx = k, .value = v++, .gate = 1};
    atomic_store(&t.gated, &o[k]);
    op = (accel_op){op_append, done_batch, &o[k++]};
    CHECK_EQ(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    wait_calls(&t, 3, "batch: the second gated batch's call");
    atomic_store(&t.bad, 1);
    for (int i = 0; i < M; i++, k++) {
        /* consecutive values, none logged: the launch fails */
        o[k] = (bop){.t = &t, .idx = k, .value = v + (uint32_t)i, .gate = -1,
                     .expect = (int)cudaErrorInvalidConfiguration};
        op = (accel_op){op_append, done_batch, &o[k]};
        CHECK_EQ(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    }
    cuda_step("batch: a visit while the second gated batch is in flight");
    wait_a_visit(s);
    open_dev_gate(&t, 1);
    cuda_step("batch: sync after the failed launch");
    CHECK_EQ(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    CHECK_EQ(atomic_load(&t.lb.done_bad), 0);
    CHECK_EQ(atomic_load(&t.calls), 4);
    CHECK_EQ(atomic_load(&t.last_n), M);
    CHECK_EQ(*(volatile unsigned *)t.hlaunch, 3);
    /* The error is not sticky: the session's next batch runs. */
    atomic_store(&t.bad, 0);
    o[k] = (bop){.t = &t, .idx = k, .value = v++, .gate = -1};
    op = (accel_op){op_append, done_batch, &o[k++]};
    cuda_step("batch: a batch after the failed launch");
    CHECK_EQ(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    CHECK_EQ(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    CHECK_EQ(atomic_load(&t.lb.done_bad), 0);
    CHECK_EQ(*(volatile unsigned *)t.hlaunch, 4);
    for (unsigned i = 0; i < k; i++)
        CHECK_EQ(atomic_load(&o[i].dones), 1);

    accel_session_stats st;
    CHECK_EQ(accel_session_get_stats_ex(s, &st, sizeof(st)), ACCEL_OK);
    CHECK_EQ(st.batches, 5);
    CHECK_EQ(st.batch_ops, k);
    CHECK_EQ(st.completed, k - nfail - M);
    CHECK_EQ(st.failed, nfail + M);
    CHECK_EQ(accel_session_close(s, 0), ACCEL_OK);
    accel_session_release(s);
    cudaFreeHost(t.hlaunch);
    cudaFreeHost(t.hgate);
    log_fini(&t.lb);
    CHECK_EQ(accel_runtime_destroy(rt), ACCEL_OK);
}

int main(int argc, char **argv)
{
    const char *t = argc > 1 ? argv[1] : "";
    cuda_watchdog(20); /* under gpu-check.sh's 25 s for each sub-test */
    cuda_step(t);
    if (!strcmp(t, "fifo"))
        run_fifo(1, 0, 0);
    else if (!strcmp(t, "shared"))
        run_fifo(3, ACCEL_SESSION_SHARED_DEVICE, 0);
    else if (!strcmp(t, "priority"))
        run_fifo(2, 0, 1);
    else if (!strcmp(t, "budget"))
        run_budget();
    else if (!strcmp(t, "close"))
        run_close();
    else if (!strcmp(t, "sessions17"))
        run_sessions17();
    else if (!strcmp(t, "batch"))
        run_batch();
    else {
        fprintf(stderr, "usage: %s fifo|shared|priority|budget|close|sessions17|batch\n",
                argv[0]);
        return 2;
    }
    printf("%s: ok\n", t);
    return 0;
}
