/*
 * What an op reaches through its ctx: its session, and memory from the
 * session's backend charged to the session's budget (refunded on free);
 * and what a backend reaches through it: its session state, its query.
 */
#include <stddef.h>
#include <stdint.h>

#include "accel/accel.h"
#include "budget.h"
#include "session.h"
#include "trace.h"

accel_session *accel_ctx_session(accel_ctx *ctx)
{
    return ctx ? ctx->session : NULL;
}

int accel_ctx_alloc(accel_ctx *ctx, size_t bytes, void **out)
{
    if (!ctx || !out || bytes == 0 || bytes > INT64_MAX)
        return ACCEL_EINVAL;
    accel_session *s = ctx->session;
    size_t charge = s->bops->alloc_charge(s->bstate, bytes);
    int rc = accel__budget_charge(&s->budget, (int64_t)charge);
    if (rc != ACCEL_OK) {
        ACCEL_TRACE3(budget_refused, s, s->id, (int64_t)charge);
        return rc;
    }
    rc = s->bops->alloc(s->bstate, ctx, bytes, out);
    if (rc != ACCEL_OK)
        (void)accel__budget_refund(&s->budget, (int64_t)charge);
    return rc;
}

void accel_ctx_free(accel_ctx *ctx, void *p)
{
    if (!ctx || !p)
        return;
    accel_session *s = ctx->session;
    size_t refund = s->bops->free(s->bstate, ctx, p);
    (void)accel__budget_refund(&s->budget, (int64_t)refund);
}

/* ---- accessors for backends (backend.h) */

void *accel__ctx_backend_state(accel_ctx *ctx, accel_backend kind)
{
    if (!ctx || !ctx->session || ctx->session->backend != kind)
        return NULL;
    return ctx->session->bstate;
}

int accel__ctx_backend_query(accel_ctx *ctx, accel_backend kind, int what,
                             void *out)
{
    void *state = accel__ctx_backend_state(ctx, kind);
    if (!state || !out || !ctx->session->bops->query)
        return ACCEL_EINVAL;
    return ctx->session->bops->query(state, what, out);
}
