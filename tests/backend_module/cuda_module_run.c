/*
 * The production set-up on a device: the program links the core with the
 * CUDA entry left to the loadable module (libaccel-backend-cuda.so, with
 * its own static CUDA runtime, found in $ACCEL_BACKEND_DIR), and launches
 * its kernels through its own static CUDA runtime on the streams the
 * module made. Public API only. Checks: AUTO binds CUDA; FIFO of device
 * work and done callbacks through a kernel writing to mapped host memory
 * (also on a shared session and across a priority change); the budget
 * against pool allocations; close and destroy return. Exit 77 (skipped)
 * without a usable device.
 */
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "cuda_check.h"
#include "kernels.h"

enum { N = 1000 };

typedef struct logbuf {
    unsigned *hcount, *dcount;
    uint32_t *hlog, *dlog;
    unsigned next_done;
    _Atomic int bad;
} logbuf;

typedef struct logop {
    logbuf *lb;
    uint32_t value;
} logop;

static int op_append(accel_ctx *ctx, void *arg)
{
    logop *o = arg;
    return accel_k_log_append(accel_ctx_cuda_stream(ctx), o->lb->dcount,
                              o->lb->dlog, N, o->value);
}

static void done_ordered(void *arg, int status)
{
    logop *o = arg;
    unsigned seen = *(volatile unsigned *)o->lb->hcount;
    if (status != 0 || o->value != o->lb->next_done || seen <= o->value)
        atomic_fetch_add(&o->lb->bad, 1);
    o->lb->next_done++;
}

static int op_budget(accel_ctx *ctx, void *arg)
{
    (void)arg;
    void *p, *q;
    CHECK_EQ(accel_ctx_alloc(ctx, 1 << 20, &p), ACCEL_OK);
    CHECK_EQ(accel_ctx_alloc(ctx, 1, &q), ACCEL_EBUDGET);
    CHECK_EQ(cudaMemsetAsync(p, 0, 1 << 20, accel_ctx_cuda_stream_t(ctx)),
             cudaSuccess);
    accel_ctx_free(ctx, p);
    return 0;
}

static void run_log(accel_runtime *rt, const char *id, unsigned flags,
                    int change_prio)
{
    static logop ops[N];
    logbuf lb;
    memset(&lb, 0, sizeof(lb));
    CHECK_EQ(cudaHostAlloc((void **)&lb.hcount, sizeof(unsigned),
                           cudaHostAllocMapped), cudaSuccess);
    CHECK_EQ(cudaHostAlloc((void **)&lb.hlog, N * sizeof(uint32_t),
                           cudaHostAllocMapped), cudaSuccess);
    CHECK_EQ(cudaHostGetDevicePointer((void **)&lb.dcount, lb.hcount, 0),
             cudaSuccess);
    CHECK_EQ(cudaHostGetDevicePointer((void **)&lb.dlog, lb.hlog, 0),
             cudaSuccess);
    *lb.hcount = 0;
    cuda_step(id);
    accel_session *s;
    accel_session_config c = {.id = id, .flags = flags};
    CHECK_EQ(accel_session_open(rt, &c, &s), ACCEL_OK);
    CHECK_EQ(accel_session_backend(s), ACCEL_BACKEND_CUDA);
    for (unsigned i = 0; i < N; i++) {
        ops[i] = (logop){&lb, i};
        accel_op op = {op_append, done_ordered, &ops[i]};
        CHECK_EQ(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
        if (change_prio && i % 100 == 0)
            CHECK_EQ(accel_session_set_priority(s, i % 200 ? 100 : 1),
                     ACCEL_OK);
    }
    CHECK_EQ(accel_session_close(s, 0), ACCEL_OK);
    CHECK_EQ(atomic_load(&lb.bad), 0);
    CHECK_EQ(lb.next_done, N);
    CHECK_EQ(*lb.hcount, N);
    for (unsigned i = 0; i < N; i++)
        CHECK_EQ(lb.hlog[i], i);
    accel_session_release(s);
    cudaFreeHost(lb.hcount);
    cudaFreeHost(lb.hlog);
    printf("module %s: %d ops in order through mapped host memory\n", id, N);
}

int main(void)
{
    cuda_watchdog(25); /* under gpu-check.sh's 30 s for this step */
    accel_runtime *rt = cuda_runtime_or_skip(2);
    /* The program's own CUDA runtime must see the device too. */
    CHECK_EQ(cudaSetDevice(0), cudaSuccess);
    run_log(rt, "own", 0, 0);
    run_log(rt, "shared", ACCEL_SESSION_SHARED_DEVICE, 0);
    run_log(rt, "prio", 0, 1);
    cuda_step("budget");
    accel_session *b;
    accel_session_config bc = {.id = "budget", .memory_budget = (1 << 20) + 100};
    CHECK_EQ(accel_session_open(rt, &bc, &b), ACCEL_OK);
    CHECK_EQ(accel_submit_wait(b, op_budget, NULL, ACCEL_FOREVER), 0);
    CHECK_EQ(accel_session_memory_used(b), 0);
    accel_session_release(b);
    CHECK_EQ(accel_runtime_destroy(rt), ACCEL_OK);
    printf("module: ok\n");
    return 0;
}
