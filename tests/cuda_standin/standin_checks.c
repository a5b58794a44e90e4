/*
 * Regression checks of the CUDA backend on the stand-in device
 * (standin.h), one per argument. Each names the defect it guards against;
 * the stand-in aborts on a protocol violation, which fails the test too.
 *   notready       a NotReady event poll leaves no error for the next op
 *   setdevice_poll every worker that polls has set the device (device 1)
 *   stale_device   an op that calls cudaSetDevice itself does not leave
 *                  the next op or the poll on the wrong device
 *   pool_clamp     a huge budget gives no absurd pool maxSize
 *   open_errors    a stream/event/pool failure at open is ENOMEM/EBACKEND,
 *                  AUTO does not fall back to the CPU, nothing is left
 *   pool_attr      a failed release-threshold set fails the open cleanly
 *   shared_free    freeing a shared session does not wait for other
 *                  sessions' work on the shared stream
 *   fork_child     a runtime made in a fork child finds no CUDA backend and
 *                  calls no CUDA (AUTO on the CPU)
 *   alloc_error    a device allocation failing with another error than out
 *                  of memory is ACCEL_EBACKEND, out of memory ACCEL_ENOMEM;
 *                  both refund the charge and leave no error set
 *   batch_launches a batched session's N queued ops are one call and one
 *                  launch (the stand-in counts launches; one by one: N);
 *                  ops canceled or expired before their batch formed are
 *                  not passed to it and keep their FIFO place and status
 * A watchdog (alarm) names the step that hung.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "cuda_check.h"
#include "cuda_internal.h"
#include "kernels.h"
#include "rcu.h"
#include "standin.h"

static const char *volatile step = "start";

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "watchdog: stuck at: ";
    (void)!write(2, msg, sizeof(msg) - 1);
    (void)!write(2, step, strlen(step));
    (void)!write(2, "\n", 1);
    _exit(1);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static accel_runtime *runtime(unsigned workers, int device)
{
    accel_runtime *rt;
    accel_runtime_config cfg = {.workers = workers, .cuda_device = device};
    CHECK_EQ(accel_runtime_create(&cfg, &rt), ACCEL_OK);
    CHECK_EQ(accel_runtime_cuda_status(rt), ACCEL_OK);
    return rt;
}

static accel_session *open_cuda(accel_runtime *rt, const char *id,
                                int device, unsigned flags, int64_t budget)
{
    accel_session *s;
    accel_session_config c = {.id = id, .backend = ACCEL_BACKEND_CUDA,
                              .device = device, .flags = flags,
                              .memory_budget = budget};
    CHECK_EQ(accel_session_open(rt, &c, &s), ACCEL_OK);
    return s;
}

/* ------------------------------------------------------------- helpers */

/* gate: see [G1]/[G2]. gated_ran (seq_cst) is set by the device and read
 * by the test. */
static _Atomic int gate;
static _Atomic int gated_ran;

static void k_gated(void *arg)
{
    (void)arg;
    atomic_store(&gated_ran, 1);
}

/* Device work that cannot finish before the test opens the gate. */
static int op_gated(accel_ctx *ctx, void *arg)
{
    (void)arg;
    int e = accel_standin_launch(accel_ctx_cuda_stream(ctx), k_gated, NULL,
                                 &gate);
    (void)cudaGetLastError();
    return e;
}

static void open_gate(void)
{
    /* [G1] release: pairs with [G2] in standin.c (ready). */
    atomic_store_explicit(&gate, 1, memory_order_release);
    accel_standin_kick();
}

static int op_empty(accel_ctx *ctx, void *arg)
{
    (void)arg;
    return accel_k_empty(accel_ctx_cuda_stream(ctx));
}

/* Set on a worker, read by the test thread: seq_cst; status is read only
 * after sync, which orders every done before it returns. */
typedef struct rec {
    _Atomic int ran;
    _Atomic int status; /* -1 until done */
} rec;

static int op_empty_mark(accel_ctx *ctx, void *arg)
{
    rec *r = arg;
    int e = accel_k_empty(accel_ctx_cuda_stream(ctx));
    atomic_store(&r->ran, 1);
    return e;
}

static void done_rec(void *arg, int status)
{
    atomic_store(&((rec *)arg)->status, status);
}

static void wait_flag(_Atomic int *f, const char *what)
{
    step = what;
    while (!atomic_load(f))
        sleep_ms(1);
}

/* ------------------------------------------------------------ notready */

/* An op behind a pending one: the worker's polls in between saw
 * cudaErrorNotReady; the op's launch must still report success. */
static void run_notready(void)
{
    accel_runtime *rt = runtime(1, 0);
    accel_session *s = open_cuda(rt, "n", 0, 0, 0);
    accel_op a = {op_gated, NULL, NULL};
    CHECK_EQ(accel_submit(s, &a, ACCEL_FOREVER), ACCEL_OK);
    static rec r[7];
    for (int i = 0; i < 7; i++) {
        atomic_init(&r[i].status, -1);
        accel_op b = {op_empty_mark, done_rec, &r[i]};
        CHECK_EQ(accel_submit(s, &b, ACCEL_FOREVER), ACCEL_OK);
        /* One at a time: each runs in a visit after a NotReady poll. */
        wait_flag(&r[i].ran, "notready: op behind the gated one runs");
    }
    open_gate();
    step = "notready: sync after the gate opened";
    CHECK_EQ(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    for (int i = 0; i < 7; i++) {
        if (atomic_load(&r[i].status) != 0)
            fprintf(stderr, "op %d behind a pending one reported %d\n", i,
                    atomic_load(&r[i].status));
        CHECK_EQ(atomic_load(&r[i].status), 0);
    }
    accel_session_release(s);
    CHECK_EQ(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ------------------------------------------------------ setdevice_poll */

/* Device 1, 4 workers, 8 sessions each with device work pending for a
 * while: the sessions' poll-only visits move between workers, including
 * ones that never ran a CUDA op. The stand-in aborts on a CUDA call from a
 * thread that never set the device. */
static void run_setdevice_poll(void)
{
    accel_runtime *rt = runtime(4, 1);
    accel_session *s[8];
    for (int k = 0; k < 8; k++) {
        char id[8];
        snprintf(id, sizeof(id), "p%d", k);
        s[k] = open_cuda(rt, id, 1, 0, 0);
        accel_op a = {op_gated, NULL, NULL};
        CHECK_EQ(accel_submit(s[k], &a, ACCEL_FOREVER), ACCEL_OK);
    }
    step = "setdevice_poll: polls while the gate is closed";
    sleep_ms(300);
    open_gate();
    step = "setdevice_poll: sync";
    for (int k = 0; k < 8; k++) {
        CHECK_EQ(accel_session_sync(s[k], ACCEL_FOREVER), ACCEL_OK);
        CHECK_EQ(accel_submit_wait(s[k], op_empty, NULL, ACCEL_FOREVER), 0);
        accel_session_release(s[k]);
    }
    CHECK_EQ(accel_runtime_destroy(rt), ACCEL_OK);
}

/* -------------------------------------------------------- stale_device */

static int op_switch_device(accel_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    return (int)cudaSetDevice(0);
}

static int op_current_device(accel_ctx *ctx, void *arg)
{
    (void)arg;
    int d = -1;
    if (cudaGetDevice(&d) != cudaSuccess)
        return -2;
    /* accel/cuda.h: the session's device is current in an op. */
    return d == accel_ctx_cuda_device(ctx) ? accel_k_empty(
                                                 accel_ctx_cuda_stream(ctx))
                                           : 100 + d;
}

static void run_stale_device(void)
{
    accel_runtime *rt = runtime(1, 1);
    accel_session *s = open_cuda(rt, "d", 1, 0, 0);
    step = "stale_device: op that switches the device";
    CHECK_EQ(accel_submit_wait(s, op_switch_device, NULL, ACCEL_FOREVER), 0);
    step = "stale_device: next op";
    CHECK_EQ(accel_submit_wait(s, op_current_device, NULL, ACCEL_FOREVER), 0);
    accel_session_release(s);
    CHECK_EQ(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---------------------------------------------------------- pool_clamp */

static int op_alloc3m(accel_ctx *ctx, void *arg)
{
    (void)arg;
    void *p;
    int rc = accel_ctx_alloc(ctx, 3u << 20, &p);
    if (rc == ACCEL_OK)
        accel_ctx_free(ctx, p);
    return rc;
}

static void run_pool_clamp(void)
{
    accel_runtime *rt = runtime(1, 0);
    size_t total = accel_standin_total_mem();
    accel_session *s = open_cuda(rt, "huge", 0, 0, INT64_MAX);
    printf("budget INT64_MAX: pool maxSize %zu\n", accel_standin_last_pool_max());
    CHECK(accel_standin_last_pool_max() <= total);
    CHECK_EQ(accel_submit_wait(s, op_alloc3m, NULL, ACCEL_FOREVER), ACCEL_OK);
    accel_session_release(s);
    s = open_cuda(rt, "total", 0, 0, (int64_t)total);
    CHECK(accel_standin_last_pool_max() <= total);
    accel_session_release(s);
    s = open_cuda(rt, "small", 0, 0, (1 << 20) + 100);
    CHECK_EQ(accel_standin_last_pool_max(), 2u << 20);
    accel_session_release(s);
    CHECK_EQ(accel__cuda_pool_max_size(0, total), 0);
    CHECK_EQ(accel__cuda_pool_max_size(1, total), 2u << 20);
    CHECK_EQ(accel__cuda_pool_max_size(INT64_MAX, total), 0);
    CHECK_EQ(accel_runtime_destroy(rt), ACCEL_OK);
}

/* --------------------------------------------------------- open_errors */

static void live_now(long l[4])
{
    accel_standin_live(&l[0], &l[1], &l[2], &l[3]);
}

static void expect_open_fails(accel_runtime *rt, const char *call, int err,
                              int want)
{
    long before[4], after[4];
    /* The previous round's session is freed after a grace period. */
    step = "open_errors: the previous session's reclamation";
    while (accel__cuda_live_pools() != 0) {
        accel__rcu_barrier();
        sleep_ms(1);
    }
    live_now(before);
    for (int autob = 0; autob < 2; autob++) {
        accel_session *s = NULL;
        accel_session_config c = {
            .id = "e",
            .backend = autob ? ACCEL_BACKEND_AUTO : ACCEL_BACKEND_CUDA};
        accel_standin_fail_next(call, 1, err);
        int rc = accel_session_open(rt, &c, &s);
        accel_standin_fail_next(call, 0, 0);
        printf("%s failing with %d, %s open: %s\n", call, err,
               autob ? "AUTO" : "CUDA", accel_strerror(rc));
        CHECK_EQ(rc, want);
        CHECK(s == NULL);
        CHECK_EQ(accel_session_lookup(rt, "e", &s), ACCEL_ENOENT);
        live_now(after);
        for (int i = 0; i < 4; i++)
            CHECK_EQ(after[i], before[i]);
        CHECK_EQ(accel_runtime_cuda_status(rt), ACCEL_OK);
    }
    /* The next open works, and its ops see no error left behind. */
    accel_session *s = open_cuda(rt, "e", 0, 0, 1 << 20);
    CHECK_EQ(accel_submit_wait(s, op_empty, NULL, ACCEL_FOREVER), 0);
    CHECK_EQ(accel_session_close(s, 0), ACCEL_OK);
    accel_session_release(s);
}

static void run_open_errors(void)
{
    accel_runtime *rt = runtime(2, 0);
    expect_open_fails(rt, "cudaStreamCreateWithPriority",
                      cudaErrorMemoryAllocation, ACCEL_ENOMEM);
    expect_open_fails(rt, "cudaStreamCreateWithPriority", cudaErrorUnknown,
                      ACCEL_EBACKEND);
    expect_open_fails(rt, "cudaEventCreateWithFlags",
                      cudaErrorMemoryAllocation, ACCEL_ENOMEM);
    expect_open_fails(rt, "cudaEventCreateWithFlags", cudaErrorUnknown,
                      ACCEL_EBACKEND);
    expect_open_fails(rt, "cudaMemPoolCreate", cudaErrorMemoryAllocation,
                      ACCEL_ENOMEM);
    expect_open_fails(rt, "cudaMemPoolCreate", cudaErrorInvalidValue,
                      ACCEL_EBACKEND);
    CHECK_EQ(accel_runtime_destroy(rt), ACCEL_OK);
}

static void run_pool_attr(void)
{
    accel_runtime *rt = runtime(2, 0);
    expect_open_fails(rt, "cudaMemPoolSetAttribute", cudaErrorInvalidValue,
                      ACCEL_EBACKEND);
    CHECK_EQ(accel_runtime_destroy(rt), ACCEL_OK);
}

/* --------------------------------------------------------- shared_free */

static void run_shared_free(void)
{
    accel_runtime *rt = runtime(2, 0);
    long pools0 = accel__cuda_live_pools();
    accel_session *a = open_cuda(rt, "a", 0, ACCEL_SESSION_SHARED_DEVICE, 0);
    accel_session *b = open_cuda(rt, "b", 0, ACCEL_SESSION_SHARED_DEVICE, 0);
    /* a's kernel will not end until the gate opens: "endless". */
    accel_op ga = {op_gated, NULL, NULL};
    CHECK_EQ(accel_submit(a, &ga, ACCEL_FOREVER), ACCEL_OK);
    /* b's own ops are done before its close returns. */
    step = "shared_free: b's close";
    CHECK_EQ(accel_session_close(b, 0), ACCEL_OK);
    accel_session_release(b);
    step = "shared_free: b's state freed while a's kernel runs";
    int t = 0;
    for (; t < 1000 && accel__cuda_live_pools() != pools0 + 1; t++)
        sleep_ms(10);
    if (accel__cuda_live_pools() != pools0 + 1)
        fprintf(stderr, "shared_free: b's pool still live after 10 s: its "
                "free waits for the shared stream\n");
    CHECK_EQ(accel__cuda_live_pools(), pools0 + 1);
    CHECK_EQ(atomic_load(&gated_ran), 0);
    open_gate();
    step = "shared_free: a's close after the gate opened";
    CHECK_EQ(accel_session_close(a, 0), ACCEL_OK);
    accel_session_release(a);
    step = "shared_free: runtime destroy";
    CHECK_EQ(accel_runtime_destroy(rt), ACCEL_OK);
}

/* --------------------------------------------------------- alloc_error */

static int op_alloc_fails(accel_ctx *ctx, void *arg)
{
    const int *e = arg;
    void *p;
    accel_standin_fail_next("cudaMallocFromPoolAsync", 1, *e);
    int rc = accel_ctx_alloc(ctx, 1000, &p);
    accel_standin_fail_next("cudaMallocFromPoolAsync", 0, 0);
    if (accel_session_memory_used(accel_ctx_session(ctx)) != 0)
        return 1000; /* the charge was not refunded */
    if (rc == ACCEL_OK)
        return 1001;
    /* The next allocation works, and no error is left for the launch. */
    void *q;
    if (accel_ctx_alloc(ctx, 1000, &q) != ACCEL_OK)
        return 1002;
    accel_ctx_free(ctx, q);
    int le = accel_k_empty(accel_ctx_cuda_stream(ctx));
    return le ? 2000 + le : rc;
}

static void run_alloc_error(void)
{
    accel_runtime *rt = runtime(1, 0);
    accel_session *s = open_cuda(rt, "m", 0, 0, 1 << 20);
    int e = cudaErrorInvalidValue;
    CHECK_EQ(accel_submit_wait(s, op_alloc_fails, &e, ACCEL_FOREVER),
             ACCEL_EBACKEND);
    e = cudaErrorMemoryAllocation;
    CHECK_EQ(accel_submit_wait(s, op_alloc_fails, &e, ACCEL_FOREVER),
             ACCEL_ENOMEM);
    CHECK_EQ(accel_runtime_cuda_status(rt), ACCEL_OK);
    accel_session_release(s);
    CHECK_EQ(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ---------------------------------------------------------- fork_child */

static int op_seven(accel_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    return 7;
}

static void run_fork_child(void)
{
    accel_runtime *rt = runtime(1, 0);
    accel_session *s = open_cuda(rt, "parent", 0, 0, 0);
    CHECK_EQ(accel_submit_wait(s, op_empty, NULL, ACCEL_FOREVER), 0);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        alarm(30);
        accel_runtime *c;
        accel_runtime_config cfg = {.workers = 1};
        CHECK_EQ(accel_runtime_create(&cfg, &c), ACCEL_OK);
        CHECK_EQ(accel_runtime_cuda_status(c), ACCEL_ENOBACKEND);
        accel_session *x;
        accel_session_config xc = {.id = "child"};
        CHECK_EQ(accel_session_open(c, &xc, &x), ACCEL_OK);
        CHECK_EQ(accel_session_backend(x), ACCEL_BACKEND_CPU);
        CHECK_EQ(accel_submit_wait(x, op_seven, NULL, ACCEL_FOREVER), 7);
        accel_session_release(x);
        xc.backend = ACCEL_BACKEND_CUDA;
        CHECK_EQ(accel_session_open(c, &xc, &x), ACCEL_ENOBACKEND);
        CHECK_EQ(accel_runtime_destroy(c), ACCEL_OK);
        fflush(NULL);
        _exit(0); /* the parent's CUDA objects are the parent's */
    }
    int st = 0;
    step = "fork_child: waiting for the child";
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_EQ(accel_submit_wait(s, op_empty, NULL, ACCEL_FOREVER), 0);
    accel_session_release(s);
    CHECK_EQ(accel_runtime_destroy(rt), ACCEL_OK);
}

/* ------------------------------------------------------ batch_launches */

typedef struct sbop {
    unsigned idx;     /* FIFO place */
    int want, expect; /* status fn writes / status done must get */
    _Atomic int ran;  /* set by its kernel */
    _Atomic int dones;
} sbop;

typedef struct marks {
    unsigned n;
    sbop *o[ACCEL_BATCH_MAX];
} marks;

static _Atomic unsigned sb_calls, sb_last_n;
static unsigned sb_next, sb_bad; /* the session's worker only */

static void k_mark(void *arg)
{
    marks *m = arg;
    for (unsigned i = 0; i < m->n; i++)
        atomic_store(&m->o[i]->ran, 1);
    free(m);
}

static int launch_marks(void *stream, sbop *const *o, unsigned n, int gated)
{
    marks *m = malloc(sizeof(*m));
    CHECK(m);
    m->n = n;
    memcpy(m->o, o, n * sizeof(*o));
    int e = accel_standin_launch(stream, k_mark, m, gated ? &gate : NULL);
    (void)cudaGetLastError();
    return e;
}

static void batch_mark(accel_ctx *ctx, void *const *args, uint32_t n,
                       int *status, void *user)
{
    atomic_fetch_add(&sb_calls, 1);
    atomic_store(&sb_last_n, n);
    sbop *const *o = (sbop *const *)args;
    /* The cap of one unit in flight: a batch forms only once the one
     * before it completed (user: that batch's first op). */
    sbop *gated = user;
    if (o[0] != gated && !atomic_load(&gated->dones))
        sb_bad++;
    int e = launch_marks(accel_ctx_cuda_stream(ctx), o, n, o[0]->idx == 0);
    for (uint32_t i = 0; i < n; i++)
        status[i] = e ? e : o[i]->want;
}

static int op_mark(accel_ctx *ctx, void *arg)
{
    sbop *o = arg;
    int e = launch_marks(accel_ctx_cuda_stream(ctx), &o, 1, 0);
    return e ? e : o->want;
}

/* Once, in FIFO order, its own status; an op that ran only after its
 * kernel did. */
static void done_mark(void *arg, int status)
{
    sbop *o = arg;
    if (atomic_fetch_add(&o->dones, 1) != 0 || o->idx != sb_next ||
        status != o->expect ||
        (status == o->want && !atomic_load(&o->ran)))
        sb_bad++;
    sb_next++;
}

/* Waits until the session's visits, counted at their end, grew by n: with
 * n = 2 a whole visit began after the call. */
static void wait_visits(accel_session *s, uint64_t n)
{
    accel_session_stats st;
    CHECK_EQ(accel_session_get_stats(s, &st), ACCEL_OK);
    uint64_t v0 = st.visits;
    do {
        sleep_ms(1);
        CHECK_EQ(accel_session_get_stats(s, &st), ACCEL_OK);
    } while (st.visits < v0 + n);
}

static void run_batch_launches(void)
{
    enum { N = 100 };
    accel_runtime *rt = runtime(2, 0);
    /* One unit in flight: the gated batch holds the next one back until
     * all N ops are queued. */
    CHECK_EQ(accel__cuda_set_inflight_cap(rt, 1), ACCEL_OK);
    accel_session *s = open_cuda(rt, "b", 0, 0, 0);
    static sbop o[1 + 2 * N];
    accel_batch_config bc = {.fn = batch_mark, .user = &o[0],
                             .max_ops = ACCEL_BATCH_MAX};
    CHECK_EQ(accel_session_set_batch(s, &bc), ACCEL_OK);
    unsigned k = 0, nfail = 0;
    o[k] = (sbop){.idx = k};
    accel_op op = {op_mark, done_mark, &o[k++]};
    CHECK_EQ(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    step = "batch_launches: the gated batch's call";
    while (atomic_load(&sb_calls) < 1)
        sleep_ms(1);
    long l0 = accel_standin_launches();
    for (int i = 1; i <= N; i++, k++) {
        o[k] = (sbop){.idx = k, .want = i % 7 == 0 ? 500 + i : 0};
        o[k].expect = o[k].want;
        op = (accel_op){op_mark, done_mark, &o[k]};
        if (i == 40) {
            accel_ticket tk;
            CHECK_EQ(accel_submit_ex(s, &op, 0, ACCEL_FOREVER, &tk), ACCEL_OK);
            CHECK_EQ(accel_cancel(&tk), ACCEL_OK);
            o[k].expect = ACCEL_ECANCELED;
        } else if (i == 70) {
            /* a deadline already past: expires when its batch forms */
            CHECK_EQ(accel_submit_ex(s, &op, 1, ACCEL_FOREVER, NULL), ACCEL_OK);
            o[k].expect = ACCEL_EEXPIRED;
        } else {
            CHECK_EQ(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
            nfail += o[k].want != 0;
        }
    }
    /* A whole visit after the submits, before the gate opens: it must
     * form no batch (the cap) and leave the N ops to one. */
    step = "batch_launches: a visit while the gated batch is in flight";
    wait_visits(s, 2);
    open_gate();
    step = "batch_launches: sync after the batch";
    CHECK_EQ(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    long batched = accel_standin_launches() - l0;
    printf("batch_launches: %u calls, %ld launch(es) for %d queued ops "
           "(fn got %u)\n", atomic_load(&sb_calls), batched, N,
           atomic_load(&sb_last_n));
    CHECK_EQ(sb_bad, 0);
    CHECK_EQ(sb_next, k);
    CHECK_EQ(atomic_load(&sb_calls), 2);
    CHECK_EQ(atomic_load(&sb_last_n), N - 2);
    CHECK_EQ(batched, 1);
    accel_session_stats st;
    CHECK_EQ(accel_session_get_stats_ex(s, &st, sizeof(st)), ACCEL_OK);
    CHECK_EQ(st.cancelled, 1);
    CHECK_EQ(st.expired, 1);
    CHECK_EQ(st.batches, 2);
    CHECK_EQ(st.batch_ops, N - 1);
    CHECK_EQ(st.failed, nfail);
    CHECK_EQ(st.completed, N - 1 - nfail);

    /* The same ops one by one: one launch each. */
    CHECK_EQ(accel_session_set_batch(s, NULL), ACCEL_OK);
    long l1 = accel_standin_launches();
    for (int i = 1; i <= N; i++, k++) {
        o[k] = (sbop){.idx = k, .want = i % 7 == 0 ? 500 + i : 0};
        o[k].expect = o[k].want;
        op = (accel_op){op_mark, done_mark, &o[k]};
        CHECK_EQ(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    }
    step = "batch_launches: sync after the ops one by one";
    CHECK_EQ(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    long single = accel_standin_launches() - l1;
    printf("batch_launches: one by one, %ld launches for %d ops\n", single, N);
    CHECK_EQ(sb_bad, 0);
    CHECK_EQ(sb_next, k);
    CHECK_EQ(single, N);
    CHECK_EQ(atomic_load(&sb_calls), 2);
    accel_session_release(s);
    CHECK_EQ(accel_runtime_destroy(rt), ACCEL_OK);
}

int main(int argc, char **argv)
{
    signal(SIGALRM, on_alarm);
    alarm(60);
    const char *t = argc > 1 ? argv[1] : "";
    if (!strcmp(t, "notready"))
        run_notready();
    else if (!strcmp(t, "setdevice_poll"))
        run_setdevice_poll();
    else if (!strcmp(t, "stale_device"))
        run_stale_device();
    else if (!strcmp(t, "pool_clamp"))
        run_pool_clamp();
    else if (!strcmp(t, "open_errors"))
        run_open_errors();
    else if (!strcmp(t, "pool_attr"))
        run_pool_attr();
    else if (!strcmp(t, "shared_free"))
        run_shared_free();
    else if (!strcmp(t, "fork_child"))
        run_fork_child();
    else if (!strcmp(t, "alloc_error"))
        run_alloc_error();
    else if (!strcmp(t, "batch_launches"))
        run_batch_launches();
    else {
        fprintf(stderr, "usage: %s notready|setdevice_poll|stale_device|"
                "pool_clamp|open_errors|pool_attr|shared_free|fork_child|"
                "alloc_error|batch_launches\n", argv[0]);
        return 2;
    }
    printf("%s: ok\n", t);
    return 0;
}
