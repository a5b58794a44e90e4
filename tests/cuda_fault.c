/*
 * A faulting kernel poisons the process's CUDA context. The backend must
 * notice without hanging: the session's pending ops complete with
 * ACCEL_EBACKEND, the backend is marked failed (new CUDA opens get
 * ACCEL_ENOBACKEND, AUTO binds the CPU), other CUDA sessions' ops complete
 * with ACCEL_EBACKEND, and CPU sessions keep working. Own process: the
 * fault cannot be undone. Skipped (77) without a usable device.
 * With the argument "batch" the faulting kernel is the one launch of a
 * batch (a session with a batch function): every op of that batch
 * completes ACCEL_EBACKEND, once each, in FIFO order; later batches of the
 * session complete ACCEL_EBACKEND without a call.
 */
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "cuda_check.h"
#include "cuda_internal.h"
#include "kernels.h"

static int status_of[3] = {1, 1, 1};

static void done_rec(void *arg, int status)
{
    status_of[(int)(intptr_t)arg] = status;
}

static int op_empty(accel_ctx *ctx, void *arg)
{
    (void)arg;
    return accel_k_empty(accel_ctx_cuda_stream(ctx));
}

static int op_fault(accel_ctx *ctx, void *arg)
{
    (void)arg;
    return accel_k_fault(accel_ctx_cuda_stream(ctx));
}

static int op_cpu(accel_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    return 7;
}

/* ----------------------------------------------------------------- batch */

enum { NB = 40 };

typedef struct fop {
    unsigned idx;
    int gated; /* the batch's kernel waits on the gate, faults otherwise */
    int status;
    _Atomic int dones;
} fop;

static unsigned *hgate, *dgate, *hcount, *dcount, *hlaunch, *dlaunch;
static uint32_t *hlog, *dlog;
static _Atomic unsigned calls;
static unsigned done_next, done_bad; /* the session's worker only */

static void batch_fault(accel_ctx *ctx, void *const *args, uint32_t n,
                        int *status, void *user)
{
    (void)user;
    atomic_fetch_add(&calls, 1);
    void *st = accel_ctx_cuda_stream(ctx);
    int e = ((fop *)args[0])->gated
                ? accel_k_log_append_batch(st, dcount, dlog, 4, 0, n, dlaunch,
                                           dgate)
                : accel_k_fault(st);
    for (uint32_t i = 0; i < n; i++)
        status[i] = e;
}

static void done_fop(void *arg, int status)
{
    fop *o = arg;
    o->status = status;
    if (atomic_fetch_add(&o->dones, 1) != 0 || o->idx != done_next)
        done_bad++;
    done_next++;
}

static int op_unused(accel_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    return -1; /* a batched session never calls it */
}

static int run_batch_fault(void)
{
    accel_runtime *rt = cuda_runtime_or_skip(2);
    /* One unit in flight: the N ops are queued before their batch forms. */
    CHECK_EQ(accel__cuda_set_inflight_cap(rt, 1), ACCEL_OK);
    CHECK_EQ(cudaHostAlloc((void **)&hgate, sizeof(unsigned),
                           cudaHostAllocMapped), cudaSuccess);
    CHECK_EQ(cudaHostAlloc((void **)&hcount, sizeof(unsigned),
                           cudaHostAllocMapped), cudaSuccess);
    CHECK_EQ(cudaHostAlloc((void **)&hlaunch, sizeof(unsigned),
                           cudaHostAllocMapped), cudaSuccess);
    CHECK_EQ(cudaHostAlloc((void **)&hlog, 4 * sizeof(uint32_t),
                           cudaHostAllocMapped), cudaSuccess);
    CHECK_EQ(cudaHostGetDevicePointer((void **)&dgate, hgate, 0), cudaSuccess);
    CHECK_EQ(cudaHostGetDevicePointer((void **)&dcount, hcount, 0), cudaSuccess);
    CHECK_EQ(cudaHostGetDevicePointer((void **)&dlaunch, hlaunch, 0),
             cudaSuccess);
    CHECK_EQ(cudaHostGetDevicePointer((void **)&dlog, hlog, 0), cudaSuccess);
    *hgate = *hcount = *hlaunch = 0;
    accel_session *a, *c;
    accel_session_config ca = {.id = "a", .backend = ACCEL_BACKEND_CUDA};
    accel_session_config cc = {.id = "c", .backend = ACCEL_BACKEND_CPU};
    CHECK_EQ(accel_session_open(rt, &ca, &a), ACCEL_OK);
    CHECK_EQ(accel_session_open(rt, &cc, &c), ACCEL_OK);
    accel_batch_config bc = {.fn = batch_fault, .max_ops = ACCEL_BATCH_MAX};
    CHECK_EQ(accel_session_set_batch(a, &bc), ACCEL_OK);

    static fop o[1 + NB + NB];
    unsigned k = 0;
    o[k] = (fop){.idx = k, .gated = 1};
    accel_op op = {op_unused, done_fop, &o[k++]};
    CHECK_EQ(accel_submit(a, &op, ACCEL_FOREVER), ACCEL_OK);
    cuda_step("batch: the gated batch's call");
    while (atomic_load(&calls) < 1)
        usleep(1000);
    for (int i = 0; i < NB; i++, k++) {
        o[k] = (fop){.idx = k};
        op = (accel_op){op_unused, done_fop, &o[k]};
        CHECK_EQ(accel_submit(a, &op, ACCEL_FOREVER), ACCEL_OK);
    }
    __atomic_store_n(hgate, 1u, __ATOMIC_SEQ_CST);
    cuda_step("batch: sync after the faulting batch (the sticky error)");
    CHECK_EQ(accel_session_sync(a, 25ll * 1000000000), ACCEL_OK);
    printf("batch: calls %u, gated op %d, faulted batch's ops %d ... %d\n",
           atomic_load(&calls), o[0].status, o[1].status, o[NB].status);
    CHECK_EQ(atomic_load(&calls), 2);
    CHECK_EQ(o[0].status, 0);
    for (int i = 1; i <= NB; i++)
        CHECK_EQ(o[i].status, ACCEL_EBACKEND);
    CHECK_EQ(accel_runtime_cuda_status(rt), ACCEL_EBACKEND);

    /* After the fault: the session's next batch completes ACCEL_EBACKEND
     * without a call. */
    cuda_step("batch: a batch after the fault");
    for (int i = 0; i < NB; i++, k++) {
        o[k] = (fop){.idx = k};
        op = (accel_op){op_unused, done_fop, &o[k]};
        CHECK_EQ(accel_submit(a, &op, ACCEL_FOREVER), ACCEL_OK);
    }
    CHECK_EQ(accel_session_sync(a, 5ll * 1000000000), ACCEL_OK);
    CHECK_EQ(atomic_load(&calls), 2);
    for (unsigned i = 1 + NB; i < k; i++)
        CHECK_EQ(o[i].status, ACCEL_EBACKEND);
    CHECK_EQ(done_bad, 0);
    CHECK_EQ(done_next, k);
    for (unsigned i = 0; i < k; i++)
        CHECK_EQ(atomic_load(&o[i].dones), 1);
    CHECK_EQ(accel_submit_wait(c, op_cpu, NULL, ACCEL_FOREVER), 7);

    accel_session_stats st;
    cuda_step("batch: close and destroy after the fault");
    CHECK_EQ(accel_session_close(a, 0), ACCEL_OK);
    CHECK_EQ(accel_session_get_stats(a, &st), ACCEL_OK);
    CHECK_EQ(st.submitted, k);
    CHECK_EQ(st.completed, 1);
    CHECK_EQ(st.failed, k - 1);
    accel_session_release(a);
    accel_session_release(c);
    CHECK_EQ(accel_runtime_destroy(rt), ACCEL_OK);
    /* The context is lost: the host memory goes with the process. */
    printf("fault batch: ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    cuda_watchdog(30); /* under gpu-check.sh's 35 s for this step */
    if (argc > 1 && !strcmp(argv[1], "batch"))
        return run_batch_fault();
    accel_runtime *rt = cuda_runtime_or_skip(2);
    accel_session *a, *b, *c;
    accel_session_config ca = {.id = "a", .backend = ACCEL_BACKEND_CUDA};
    accel_session_config cb = {.id = "b", .backend = ACCEL_BACKEND_CUDA};
    accel_session_config cc = {.id = "c", .backend = ACCEL_BACKEND_CPU};
    CHECK_EQ(accel_session_open(rt, &ca, &a), ACCEL_OK);
    CHECK_EQ(accel_session_open(rt, &cb, &b), ACCEL_OK);
    CHECK_EQ(accel_session_open(rt, &cc, &c), ACCEL_OK);
    CHECK_EQ(accel_submit_wait(b, op_empty, NULL, ACCEL_FOREVER), 0);

    accel_op ops[3] = {{op_empty, done_rec, (void *)0},
                       {op_fault, done_rec, (void *)1},
                       {op_empty, done_rec, (void *)2}};
    cuda_step("submitting the faulting kernel");
    for (int i = 0; i < 3; i++)
        CHECK_EQ(accel_submit(a, &ops[i], ACCEL_FOREVER), ACCEL_OK);
    cuda_step("sync after the fault (the sticky error must be seen)");
    CHECK_EQ(accel_session_sync(a, 25ll * 1000000000), ACCEL_OK);
    printf("statuses: %d %d %d\n", status_of[0], status_of[1], status_of[2]);
    CHECK(status_of[0] == 0 || status_of[0] == ACCEL_EBACKEND);
    CHECK_EQ(status_of[1], ACCEL_EBACKEND);
    CHECK_EQ(status_of[2], ACCEL_EBACKEND);
    CHECK_EQ(accel_runtime_cuda_status(rt), ACCEL_EBACKEND);

    cuda_step("another CUDA session's op after the fault");
    /* Another CUDA session: its ops complete, with ACCEL_EBACKEND. */
    CHECK_EQ(accel_submit_wait(b, op_empty, NULL, 5ll * 1000000000),
             ACCEL_EBACKEND);
    /* New sessions: explicit CUDA refused, AUTO on the CPU. */
    accel_session *x;
    accel_session_config cx = {.id = "x", .backend = ACCEL_BACKEND_CUDA};
    CHECK_EQ(accel_session_open(rt, &cx, &x), ACCEL_ENOBACKEND);
    cx.backend = ACCEL_BACKEND_AUTO;
    CHECK_EQ(accel_session_open(rt, &cx, &x), ACCEL_OK);
    CHECK_EQ(accel_session_backend(x), ACCEL_BACKEND_CPU);
    CHECK_EQ(accel_submit_wait(x, op_cpu, NULL, ACCEL_FOREVER), 7);
    CHECK_EQ(accel_submit_wait(c, op_cpu, NULL, ACCEL_FOREVER), 7);

    accel_session_stats st;
    cuda_step("close and destroy after the fault");
    CHECK_EQ(accel_session_close(a, 0), ACCEL_OK);
    CHECK_EQ(accel_session_get_stats(a, &st), ACCEL_OK);
    CHECK_EQ(st.completed + st.failed, st.submitted);
    accel_session_release(a);
    accel_session_release(b);
    accel_session_release(c);
    accel_session_release(x);
    CHECK_EQ(accel_runtime_destroy(rt), ACCEL_OK);
    /* A second runtime of this process finds no CUDA backend. */
    accel_runtime *rt2;
    CHECK_EQ(accel_runtime_create(NULL, &rt2), ACCEL_OK);
    CHECK_EQ(accel_runtime_cuda_status(rt2), ACCEL_EBACKEND);
    CHECK_EQ(accel_runtime_destroy(rt2), ACCEL_OK);
    printf("fault: ok\n");
    return 0;
}
