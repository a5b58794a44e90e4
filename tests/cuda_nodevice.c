/*
 * Backend selection, with or without a device: AUTO binds CUDA exactly when
 * the runtime reports a usable device, explicit CUDA is refused with
 * ACCEL_ENOBACKEND where there is none, and the CUDA accessors answer
 * NULL/-1 for ops of a CPU session. Runs (never skips) on every machine.
 */
#include "cuda_check.h"

static void *seen_stream = (void *)1;
static int seen_device = 7;

static int op_probe(accel_ctx *ctx, void *arg)
{
    (void)arg;
    seen_stream = accel_ctx_cuda_stream(ctx);
    seen_device = accel_ctx_cuda_device(ctx);
    return 42;
}

int main(void)
{
    accel_runtime *rt;
    accel_runtime_config cfg = {.workers = 2};
    CHECK_EQ(accel_runtime_create(&cfg, &rt), ACCEL_OK);
    int st = accel_runtime_cuda_status(rt);
    CHECK(st == ACCEL_OK || st == ACCEL_ENOBACKEND);
    CHECK_EQ(accel_runtime_cuda_status(NULL), ACCEL_EINVAL);
    CHECK_EQ(accel_cuda_alloc_granularity(), ACCEL_CUDA_ALLOC_GRANULARITY);
    CHECK(accel_ctx_cuda_stream(NULL) == NULL);
    CHECK_EQ(accel_ctx_cuda_device(NULL), -1);

    accel_session *a, *c, *x = NULL;
    accel_session_config ac = {.id = "auto"};
    accel_session_config cc = {.id = "cpu", .backend = ACCEL_BACKEND_CPU};
    accel_session_config xc = {.id = "cuda", .backend = ACCEL_BACKEND_CUDA};
    CHECK_EQ(accel_session_open(rt, &ac, &a), ACCEL_OK);
    CHECK_EQ(accel_session_open(rt, &cc, &c), ACCEL_OK);
    CHECK_EQ(accel_session_backend(c), ACCEL_BACKEND_CPU);
    int xr = accel_session_open(rt, &xc, &x);
    if (st == ACCEL_OK) {
        CHECK_EQ(accel_session_backend(a), ACCEL_BACKEND_CUDA);
        CHECK_EQ(xr, ACCEL_OK);
        CHECK_EQ(accel_submit_wait(x, op_probe, NULL, ACCEL_FOREVER), 42);
        CHECK(seen_stream != NULL);
        CHECK(seen_device >= 0);
    } else {
        printf("no device: AUTO binds CPU, explicit CUDA is refused\n");
        CHECK_EQ(accel_session_backend(a), ACCEL_BACKEND_CPU);
        CHECK_EQ(xr, ACCEL_ENOBACKEND);
        CHECK(x == NULL);
        /* The shared-device flag changes nothing without a device. */
        accel_session *sh;
        accel_session_config shc = {.id = "shared",
                                    .flags = ACCEL_SESSION_SHARED_DEVICE};
        CHECK_EQ(accel_session_open(rt, &shc, &sh), ACCEL_OK);
        CHECK_EQ(accel_session_backend(sh), ACCEL_BACKEND_CPU);
        shc.backend = ACCEL_BACKEND_CUDA;
        shc.id = "shared-cuda";
        CHECK_EQ(accel_session_open(rt, &shc, &x), ACCEL_ENOBACKEND);
        accel_session_release(sh);
        /* The refused id was never taken. */
        CHECK_EQ(accel_session_lookup(rt, "cuda", &x), ACCEL_ENOENT);
    }
    /* Ops of a CPU session see no CUDA stream. */
    CHECK_EQ(accel_submit_wait(c, op_probe, NULL, ACCEL_FOREVER), 42);
    CHECK(seen_stream == NULL);
    CHECK_EQ(seen_device, -1);
    if (st == ACCEL_OK)
        accel_session_release(x);
    accel_session_release(a);
    accel_session_release(c);
    CHECK_EQ(accel_runtime_destroy(rt), ACCEL_OK);
    return 0;
}
