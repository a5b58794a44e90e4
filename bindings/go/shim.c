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
#include "../../runtime/session.h" /* accel__tls_current */

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

int goaccel_submit(accel_session *s, uintptr_t rec, int64_t timeout_ns,
                   int sync)
{
    /* A synchronous submit from inside one of the session's own ops would
     * wait for itself. */
    if (sync && accel__tls_current == s)
        return ACCEL_EDEADLK;
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
