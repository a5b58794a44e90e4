/*
 * A stand-in backend built as a loadable module exactly as a real one is
 * (with backends/module_host.c), claiming the CUDA entry: it runs ops on the
 * worker through run() and answers the device query with 42. The module
 * test (backend_module_test.c) loads it with ACCEL_BACKEND_DIR to check
 * loading, the host table, AUTO's choice and the public accessors, with
 * no GPU and no CUDA.
 */
#include "alloc.h"
#include "backend.h"

typedef struct fake_session {
    long runs;
} fake_session;

static int fake_probe(void **rt_state, const accel__backend_probe_args *args)
{
    (void)args;
    *rt_state = accel__malloc(16); /* runtime-level state, via the host */
    return *rt_state ? ACCEL_OK : ACCEL_ENOBACKEND;
}

static void fake_runtime_fini(void *rt_state)
{
    accel__free(rt_state);
}

static int fake_open(void *rt_state, accel_session *s,
                     const accel__backend_open_args *args, void **state)
{
    (void)rt_state, (void)s;
    if (args->device != 0)
        return ACCEL_ENOBACKEND; /* AUTO falls back to the CPU */
    *state = accel__calloc(1, sizeof(fake_session));
    return *state ? ACCEL_OK : ACCEL_ENOMEM;
}

static void fake_free(void *rt_state, accel_session *s, void *state)
{
    (void)rt_state, (void)s;
    accel__free(state);
}

static int fake_run(void *state, accel_ctx *ctx, const accel_op *op,
                    int *status)
{
    ((fake_session *)state)->runs++;
    *status = op->fn(ctx, op->arg);
    return 0;
}

static size_t fake_charge(void *state, size_t bytes)
{
    (void)state;
    return bytes;
}

static int fake_alloc(void *state, accel_ctx *ctx, size_t bytes, void **out)
{
    (void)state, (void)ctx;
    *out = accel__malloc(bytes);
    return *out ? ACCEL_OK : ACCEL_ENOMEM;
}

static size_t fake_free_mem(void *state, accel_ctx *ctx, void *p)
{
    (void)state, (void)ctx;
    accel__free(p);
    return 0; /* the test frees only what it sized itself */
}

static int fake_query(void *state, int what, void *out)
{
    if (what == ACCEL__Q_DEVICE) {
        *(int *)out = 42;
        return ACCEL_OK;
    }
    if (what == ACCEL__Q_STREAM) {
        *(void **)out = state;
        return ACCEL_OK;
    }
    return ACCEL_EINVAL;
}

const accel__backend_ops fake_backend_ops = {
    .version = ACCEL__BACKEND_VERSION,
    .name = "fake",
    .kind = ACCEL_BACKEND_CUDA,
    .auto_rank = 2,
    .probe = fake_probe,
    .runtime_fini = fake_runtime_fini,
    .session_open = fake_open,
    .session_free = fake_free,
    .run = fake_run,
    .alloc_charge = fake_charge,
    .alloc = fake_alloc,
    .free = fake_free_mem,
    .query = fake_query,
};
