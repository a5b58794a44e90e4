/*
 * Linked into a backend built as a loadable module, never into libaccel.
 * The backend's code calls the runtime's functions by their usual names
 * (backend.h, alloc.h); a module cannot link libaccel's hidden symbols, so
 * this file defines those names inside the module, forwarding to the table
 * libaccel hands over when it loads the module (runtime/backend_module.c).
 * ACCEL__MODULE_OPS is the backend's ops object (set by its CMake target).
 */
#include "alloc.h"
#include "backend.h"
#include "backend_registry.h"
#include "fault.h"

#ifndef ACCEL__MODULE_OPS
#error "define ACCEL__MODULE_OPS to the backend's accel__backend_ops object"
#endif

extern const accel__backend_ops ACCEL__MODULE_OPS;

/* Written once by the entry point, before libaccel calls any op (dlopen
 * and the call happen under the runtime's module lock). */
static const accel__backend_host *host;

__attribute__((visibility("default"))) const accel__backend_ops *
accel_backend_module_entry(const accel__backend_host *h)
{
    if (!h || h->version != ACCEL__BACKEND_VERSION)
        return NULL;
    host = h;
    return &ACCEL__MODULE_OPS;
}

void accel__op_complete(accel_session *s, const accel_op *op, int status)
{
    host->op_complete(s, op, status);
}

void accel__op_complete_unrun(accel_session *s, const accel_op *op,
                              int status)
{
    host->op_complete_unrun(s, op, status);
}

void *accel__ctx_backend_state(accel_ctx *ctx, accel_backend kind)
{
    return host->ctx_backend_state(ctx, kind);
}

void *accel__backend_registry_state(accel_runtime *rt, accel_backend kind)
{
    return host->runtime_backend_state(rt, kind);
}

int accel__backend_registry_status(accel_runtime *rt, accel_backend kind)
{
    return host->runtime_backend_status(rt, kind);
}

/* The parentheses keep alloc.h's site-naming macros off the names. */
void *(accel__malloc)(size_t n)
{
    return host->malloc(n);
}

void *(accel__calloc)(size_t n, size_t size)
{
    return host->calloc(n, size);
}

void *(accel__calloc_aligned)(size_t align, size_t n)
{
    return host->calloc_aligned(align, n);
}

void *accel__malloc_at(size_t n, const char *func)
{
    return host->malloc_at(n, func);
}

void *accel__calloc_at(size_t n, size_t size, const char *func)
{
    return host->calloc_at(n, size, func);
}

void *accel__calloc_aligned_at(size_t align, size_t n, const char *func)
{
    return host->calloc_aligned_at(align, n, func);
}

bool accel__fault_hit_ext(const char *kind, const char *func)
{
    return host->fault_hit(kind, func);
}

void accel__free(void *p)
{
    host->free(p);
}
