/*
 * Op trampolines: a worker runs goaccel_op_fn, which calls into Go
 * (goAccelRun, callback.go) with the record index; done calls into Go only
 * for an op that never ran (closed with ACCEL_CLOSE_CANCEL), so a normal op
 * costs one C->Go crossing.
 */
#include "shim.h"

#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdlib.h>
#include <time.h>

#include "_cgo_export.h"

/* Wakes for parked host workers that C asked for (host_wake) during the
 * current call on this thread: general lane in the low 16 bits, short
 * lane in the high 16. Every shim call that can make work runnable hands
 * them back to Go in the high 32 bits of its result (wakes_out), and Go
 * posts them to the lanes' channels (hostworker.go). Thread-local: a cgo
 * call runs on one thread from entry to return. */
static _Thread_local uint32_t goaccel_wakes;

static void goaccel_host_wake(void *arg, unsigned lane)
{
    (void)arg;
    goaccel_wakes += lane == ACCEL_HOST_LANE_SHORT ? 0x10000u : 1u;
}

/* rc in the low 32 bits, the call's wakes in the high 32. */
static int64_t wakes_out(int rc)
{
    uint32_t w = goaccel_wakes;
    goaccel_wakes = 0;
    return (int64_t)((uint64_t)w << 32 | (uint32_t)rc);
}

/* The runtime whose visit this thread's host worker has open (the
 * goroutine is locked to the thread during a visit), else NULL. */
static _Thread_local accel_runtime *goaccel_visiting;

int goaccel_in_visit(accel_runtime *rt) { return goaccel_visiting == rt; }

int goaccel_runtime_create(accel_runtime_config *c, int host,
                           accel_runtime **out)
{
    if (host) {
        c->flags = ACCEL_RUNTIME_HOST_WORKERS;
        c->host_wake = goaccel_host_wake;
        c->struct_size = sizeof(*c);
    }
    return accel_runtime_create(c, out);
}

int64_t goaccel_host_step(accel_runtime *rt, unsigned w, unsigned mode,
                          const int *status, unsigned nprev, uintptr_t *recs,
                          unsigned cap, unsigned *n)
{
    accel_op ops[ACCEL_HOST_VISIT_MAX];
    if (mode & GOACCEL_STEP_END) {
        /* A slot that stops wakes a worker for what its end re-queues. */
        if (mode & GOACCEL_STEP_STOP)
            accel_host_visit_end_stop(rt, w, status, nprev);
        else
            accel_host_visit_end(rt, w, status, nprev);
        goaccel_visiting = NULL;
    }
    if (mode & GOACCEL_STEP_UNIDLE)
        accel_host_idle_end(rt, w, false);
    if (mode & GOACCEL_STEP_IDLE)
        accel_host_idle_begin(rt, w);
    if (mode & GOACCEL_STEP_STOP)
        return wakes_out(ACCEL_EAGAIN);
    if (cap > ACCEL_HOST_VISIT_MAX)
        cap = ACCEL_HOST_VISIT_MAX;
    goaccel_visiting = rt; /* a device visit runs its ops in begin */
    int rc = accel_host_visit_begin(rt, w, ops, cap, n);
    if (rc != ACCEL_OK)
        goaccel_visiting = NULL;
    if (rc == ACCEL_OK) {
        for (unsigned i = 0; i < *n; i++)
            recs[i] = (uintptr_t)ops[i].arg;
        if (mode & GOACCEL_STEP_IDLE)
            accel_host_idle_end(rt, w, true);
    }
    return wakes_out(rc);
}

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

int64_t goaccel_submit(accel_session *s, uintptr_t rec, int64_t timeout_ns,
                       int sync)
{
    /* A synchronous submit from inside one of the session's own ops would
     * wait for itself. */
    if (sync && accel_current_session() == s)
        return wakes_out(ACCEL_EDEADLK);
    accel_op op = {.fn = goaccel_op_fn, .done = goaccel_op_done,
                   .arg = (void *)rec};
    int64_t r = wakes_out(accel_submit(s, &op, timeout_ns));
    /* Inside a visit the caller runs an op: it must not drive another
     * slot (hostworker.go, help). */
    if (sync && goaccel_visiting != NULL)
        r |= GOACCEL_IN_VISIT;
    return r;
}

int64_t goaccel_submit_help(accel_runtime *rt, accel_session *s,
                            uintptr_t rec, unsigned w, uintptr_t *recs,
                            unsigned cap, unsigned *n, int *begun)
{
    *begun = ACCEL_EAGAIN;
    *n = 0;
    /* As goaccel_submit's sync checks: no waiting for the own session,
     * and no second visit on a thread that runs an op (a plain submit;
     * the caller gives the slot back). */
    if (accel_current_session() == s)
        return wakes_out(ACCEL_EDEADLK);
    accel_op op = {.fn = goaccel_op_fn, .done = goaccel_op_done,
                   .arg = (void *)rec};
    if (goaccel_visiting != NULL)
        return wakes_out(accel_submit(s, &op, ACCEL_NO_WAIT)) |
               GOACCEL_IN_VISIT;
    accel_op ops[ACCEL_HOST_VISIT_MAX];
    if (cap > ACCEL_HOST_VISIT_MAX)
        cap = ACCEL_HOST_VISIT_MAX;
    goaccel_visiting = rt; /* a device visit runs its ops in begin */
    int rc = accel_host_submit_begin(rt, w, s, &op, ACCEL_NO_WAIT, ops, cap,
                                     n, begun);
    if (rc != ACCEL_OK || *begun != ACCEL_OK) {
        goaccel_visiting = NULL;
        return wakes_out(rc);
    }
    for (unsigned i = 0; i < *n; i++)
        recs[i] = (uintptr_t)ops[i].arg;
    return wakes_out(rc);
}

static int goaccel_submit_batch_ops(accel_session *s, const uintptr_t *recs,
                                    size_t n, int64_t timeout_ns,
                                    size_t *accepted);

int64_t goaccel_submit_batch(accel_session *s, const uintptr_t *recs,
                             size_t n, int64_t timeout_ns, size_t *accepted)
{
    return wakes_out(goaccel_submit_batch_ops(s, recs, n, timeout_ns,
                                              accepted));
}

static int goaccel_submit_batch_ops(accel_session *s, const uintptr_t *recs,
                                    size_t n, int64_t timeout_ns,
                                    size_t *accepted)
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

void goaccel_wait(uint32_t *w, uint32_t base, uint32_t mask)
{
    _Atomic uint32_t *aw = (_Atomic uint32_t *)w;
    for (int i = 0; i < 64; i++) {
        /* [A] acquire: pairs with the setter's CAS (setWake; Go's atomics
         * are sequentially consistent). */
        uint32_t v = atomic_load_explicit(aw, memory_order_acquire);
        if ((v & mask) || (v >> 3) != (base >> 3))
            return;
#if defined(__x86_64__) || defined(__i386__)
        __asm__ __volatile__("pause");
#endif
    }
    for (;;) {
        uint32_t v = atomic_load_explicit(aw, memory_order_acquire);
        if ((v & mask) || (v >> 3) != (base >> 3))
            return;
        if (!(v & 4u)) {
            /* Announce the sleep: a setter whose CAS comes after this one
             * sees bit 2 and wakes us; one before it makes this CAS fail. */
            if (!atomic_compare_exchange_strong_explicit(
                    aw, &v, v | 4u, memory_order_acq_rel,
                    memory_order_acquire))
                continue;
            v |= 4u;
        }
        syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
    }
}

void goaccel_wake(uint32_t *w)
{
    syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

void goaccel_nop(void) {}

struct cb_bench {
    uint64_t n, ns;
};

static void *cb_bench_thread(void *p)
{
    struct cb_bench *b = p;
    goAccelNop(); /* the thread's first callback binds it to a Go M */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (uint64_t i = 0; i < b->n; i++)
        goAccelNop();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    b->ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u +
            (uint64_t)t1.tv_nsec - (uint64_t)t0.tv_nsec;
    return NULL;
}

uint64_t goaccel_callback_bench(uint64_t n)
{
    struct cb_bench b = {.n = n};
    pthread_t t;
    if (pthread_create(&t, NULL, cb_bench_thread, &b) != 0)
        return 0;
    pthread_join(t, NULL);
    return b.ns;
}
