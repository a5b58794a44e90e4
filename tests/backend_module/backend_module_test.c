/*
 * Backends as modules (docs/backends.md), one mode per process (a module
 * is looked for once per process):
 *   fake    ACCEL_BACKEND_DIR holds the stand-in module of fake_backend.c:
 *           AUTO binds it, ops run through its run(), the public CUDA
 *           accessors reach it through query(), a device it refuses falls
 *           back to the CPU, explicit CPU stays CPU.
 *   absent  no module anywhere: AUTO is CPU, explicit CUDA is
 *           ACCEL_ENOBACKEND, the accessors say so.
 *   real    ACCEL_BACKEND_DIR holds the real CUDA module: it loads; with no
 *           device it answers ACCEL_ENOBACKEND and AUTO is CPU (with a
 *           device, AUTO is CUDA: either is accepted, the status decides).
 *   cwd DIR DIR holds the stand-in module, and the test runs itself again
 *           from DIR with a bare argv[0] (as if started through $PATH) and
 *           no ACCEL_BACKEND_DIR: the module in the working directory must
 *           not load (AUTO is CPU, CUDA is ACCEL_ENOBACKEND).
 * Exit 0 on success, 1 with a message otherwise.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <accel/accel.h>
#include <accel/cuda.h>

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c);            \
            return 1;                                                          \
        }                                                                      \
    } while (0)

typedef struct probe {
    int device;
    void *stream;
} probe;

static int look(accel_ctx *ctx, void *arg)
{
    probe *p = arg;
    p->device = accel_ctx_cuda_device(ctx);
    p->stream = accel_ctx_cuda_stream(ctx);
    return 0;
}

static void batch_none(accel_ctx *ctx, void *const *args, uint32_t n,
                       int *status, void *user)
{
    (void)ctx, (void)args, (void)n, (void)status, (void)user;
}

static int open_as(accel_runtime *rt, const char *id, accel_backend b,
                   int device, accel_session **s)
{
    accel_session_config c = {.id = id, .backend = b, .device = device};
    return accel_session_open(rt, &c, s);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "cwd") == 0) {
        CHECK(argc > 2 && chdir(argv[2]) == 0);
        CHECK(unsetenv("ACCEL_BACKEND_DIR") == 0);
        char *args[] = {"accel_backend_module_test", "absent", NULL};
        execv("/proc/self/exe", args);
        perror("execv");
        return 1;
    }
    accel_runtime_config rc = {.workers = 1};
    accel_runtime *rt;
    CHECK(accel_runtime_create(&rc, &rt) == ACCEL_OK);
    accel_session *s;
    probe p = {-7, NULL};

    if (strcmp(mode, "fake") == 0) {
        CHECK(accel_runtime_cuda_status(rt) == ACCEL_OK);
        CHECK(open_as(rt, "auto", ACCEL_BACKEND_AUTO, 0, &s) == ACCEL_OK);
        CHECK(accel_session_backend(s) == ACCEL_BACKEND_CUDA);
        CHECK(accel_submit_wait(s, look, &p, ACCEL_FOREVER) == 0);
        CHECK(p.device == 42 && p.stream != NULL);
        /* A device backend without run_batch cannot batch. */
        accel_batch_config bc = {.fn = batch_none, .max_ops = 4};
        CHECK(accel_session_set_batch(s, &bc) == ACCEL_ENOTSUP);
        accel_session_release(s);
        /* the module refuses device 1: AUTO falls back to the CPU */
        CHECK(open_as(rt, "fallback", ACCEL_BACKEND_AUTO, 1, &s) == ACCEL_OK);
        CHECK(accel_session_backend(s) == ACCEL_BACKEND_CPU);
        accel_session_release(s);
        CHECK(open_as(rt, "cuda1", ACCEL_BACKEND_CUDA, 1, &s) ==
              ACCEL_ENOBACKEND);
        CHECK(open_as(rt, "cpu", ACCEL_BACKEND_CPU, 0, &s) == ACCEL_OK);
        CHECK(accel_session_backend(s) == ACCEL_BACKEND_CPU);
        p.device = -7;
        CHECK(accel_submit_wait(s, look, &p, ACCEL_FOREVER) == 0);
        CHECK(p.device == -1 && p.stream == NULL);
        accel_session_release(s);
    } else if (strcmp(mode, "absent") == 0 || strcmp(mode, "real") == 0) {
        int st = accel_runtime_cuda_status(rt);
        int want_auto = ACCEL_BACKEND_CPU;
        if (strcmp(mode, "real") == 0 && st == ACCEL_OK)
            want_auto = ACCEL_BACKEND_CUDA; /* a machine with a device */
        else
            CHECK(st == ACCEL_ENOBACKEND);
        CHECK(open_as(rt, "auto", ACCEL_BACKEND_AUTO, 0, &s) == ACCEL_OK);
        CHECK((int)accel_session_backend(s) == want_auto);
        accel_session_release(s);
        if (st != ACCEL_OK)
            CHECK(open_as(rt, "cuda", ACCEL_BACKEND_CUDA, 0, &s) ==
                  ACCEL_ENOBACKEND);
    } else {
        fprintf(stderr, "usage: %s fake|absent|real\n", argv[0]);
        return 2;
    }
    CHECK(accel_runtime_destroy(rt) == ACCEL_OK);
    printf("backend module test (%s): ok\n", mode);
    return 0;
}
