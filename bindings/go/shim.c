/*
 * Op trampolines: a worker runs goaccel_op_fn, which calls into Go
 * (goAccelRun, callback.go) with the record index; done calls into Go only
 * for an op that never ran (closed with ACCEL_CLOSE_CANCEL), so a normal op
 * costs one C->Go crossing.
 */
#include "shim.h"

#include <stdlib.h>

#include "_cgo_export.h"

static int goaccel_op_fn(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    return goAccelRun((uintptr_t)arg);
}

static void goaccel_op_done(void *arg, int status)
{
    /* goAccelRun returns 0 or 1, never a negative status: a negative status
     * here means fn never ran, and the record is still ours to finish. After
     * fn ran, the record may already be reused: do not touch it. */
    if (status < 0)
        goAccelUnrun((uintptr_t)arg, status);
}

int goaccel_submit(accel_session *s, uintptr_t rec, int64_t timeout_ns)
{
    accel_op op = {.fn = goaccel_op_fn, .done = goaccel_op_done,
                   .arg = (void *)rec};
    return accel_submit(s, &op, timeout_ns);
}

int goaccel_submit_batch(accel_session *s, const uintptr_t *recs, size_t n,
                         int64_t timeout_ns, size_t *accepted)
{
    enum { CHUNK = 64 };
    accel_op ops[CHUNK];
    size_t done = 0;
    int rc = ACCEL_OK;
    while (done < n && rc == ACCEL_OK) {
        size_t k = n - done < CHUNK ? n - done : CHUNK, got = 0;
        for (size_t i = 0; i < k; i++)
            ops[i] = (accel_op){.fn = goaccel_op_fn, .done = goaccel_op_done,
                                .arg = (void *)recs[done + i]};
        rc = accel_submit_batch(s, ops, k, timeout_ns, &got);
        done += got;
    }
    *accepted = done;
    return rc;
}

int goaccel_alloc(accel_session *s, size_t bytes, void **out)
{
    if (bytes == 0 || bytes > INT64_MAX)
        return ACCEL_EINVAL;
    int rc = accel_session_reserve(s, (int64_t)bytes);
    if (rc != ACCEL_OK)
        return rc;
    void *p = malloc(bytes);
    if (p == NULL) {
        accel_session_unreserve(s, (int64_t)bytes);
        return ACCEL_ENOMEM;
    }
    *out = p;
    return ACCEL_OK;
}

void goaccel_free(accel_session *s, void *p, size_t bytes)
{
    if (p == NULL)
        return;
    free(p);
    accel_session_unreserve(s, (int64_t)bytes);
}
