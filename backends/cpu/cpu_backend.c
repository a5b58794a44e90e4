/*
 * CPU backend: the worker calls the op. Allocations are malloc'ed with a
 * small header that records their size (the refund) and links them into the
 * session's list, so that what an op leaves allocated is freed with the
 * session. Only the session's ops touch the list, and they are serial (the
 * session state word hands the consumer role over with acquire/release), so
 * the list needs no atomics.
 */
#include <stdalign.h>
#include <stdlib.h>

#include "alloc.h"
#include "backend.h"

typedef struct cpu_block {
    struct cpu_block *prev, *next;
    size_t bytes;
    alignas(max_align_t) unsigned char data[];
} cpu_block;

typedef struct cpu_session {
    cpu_block head; /* sentinel of the allocation list */
} cpu_session;

static int cpu_session_open(void *rt_state, accel_session *s,
                            const accel__backend_open_args *args, void **state)
{
    (void)rt_state, (void)s, (void)args;
    cpu_session *cs = accel__malloc(sizeof(*cs));
    if (!cs)
        return ACCEL_ENOMEM;
    cs->head.prev = cs->head.next = &cs->head;
    *state = cs;
    return ACCEL_OK;
}

static void cpu_session_free(void *rt_state, accel_session *s, void *state)
{
    (void)rt_state, (void)s;
    cpu_session *cs = state;
    cpu_block *b = cs->head.next;
    while (b != &cs->head) {
        cpu_block *n = b->next;
        free(b);
        b = n;
    }
    accel__free(cs);
}

static int cpu_run(void *state, accel_ctx *ctx, const accel_op *op,
                   int *status)
{
    (void)state;
    *status = op->fn(ctx, op->arg);
    return 0;
}

static size_t cpu_alloc_charge(void *state, size_t bytes)
{
    (void)state;
    return bytes;
}

static int cpu_alloc(void *state, accel_ctx *ctx, size_t bytes, void **out)
{
    (void)ctx;
    cpu_session *cs = state;
    if (bytes > SIZE_MAX - sizeof(cpu_block))
        return ACCEL_ENOMEM;
    cpu_block *b = accel__malloc(sizeof(cpu_block) + bytes);
    if (!b)
        return ACCEL_ENOMEM;
    b->bytes = bytes;
    b->next = cs->head.next;
    b->prev = &cs->head;
    cs->head.next->prev = b;
    cs->head.next = b;
    *out = b->data;
    return ACCEL_OK;
}

static size_t cpu_free(void *state, accel_ctx *ctx, void *p)
{
    (void)state, (void)ctx;
    cpu_block *b = (cpu_block *)((unsigned char *)p - offsetof(cpu_block, data));
    b->prev->next = b->next;
    b->next->prev = b->prev;
    size_t bytes = b->bytes;
    free(b);
    return bytes;
}

const accel__backend_ops accel__backend_cpu = {
    .version = ACCEL__BACKEND_VERSION,
    .name = "cpu",
    .kind = ACCEL_BACKEND_CPU,
    .flags = ACCEL__BACKEND_RUNS_INLINE, /* run() is fn: called directly */
    .auto_rank = 1,
    .probe = NULL,
    .runtime_fini = NULL,
    .session_open = cpu_session_open,
    .session_free = cpu_session_free,
    .run = cpu_run,
    .poll = NULL,
    .alloc_charge = cpu_alloc_charge,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .set_priority = NULL,
};
