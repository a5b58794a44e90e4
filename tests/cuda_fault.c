/*
 * A faulting kernel poisons the process's CUDA context. The backend must
 * notice without hanging: the session's pending ops complete with
 * ACCEL_EBACKEND, the backend is marked failed (new CUDA opens get
 * ACCEL_ENOBACKEND, AUTO binds the CPU), other CUDA sessions' ops complete
 * with ACCEL_EBACKEND, and CPU sessions keep working. Own process: the
 * fault cannot be undone. Skipped (77) without a usable device.
 */
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include "cuda_check.h"
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

int main(void)
{
    cuda_watchdog(30); /* under gpu-check.sh's 35 s for this step */
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
