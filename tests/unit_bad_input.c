/*
 * The bad-input table (promise 5 of docs/contract.md): every row is one call with
 * bad (or boundary) input, the status accel.h documents for it, and a check
 * that nothing observable changed: a snapshot of two sessions (one open
 * with a budget half used, one closed), of the ids in the table and of an
 * in-op session is taken before the row and compared after it.
 *
 * Calls that need a running op (ctx_* with bad input, EDEADLK, destroy from
 * inside) run inside an op of session "x" through submit_wait. Boundary
 * cases that succeed (priority 0, depth 0/1/3/max, a 127-byte id) and
 * close from inside an op have their own tests below the table.
 *
 * Out of contract, so not in the table (accel.h says so, like free()):
 * using a released handle, destroying a runtime twice, calling destroy
 * concurrently with other calls on its sessions.
 *
 * Promises: 1, 5
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <accel/accel.h>
#include <accel/host.h>

#include "core_util.h"
#include "unit_watchdog.h"

UNIT_WATCHDOG_SUITE(bad_input);

typedef struct fx {
    accel_runtime *rt;
    accel_session *a; /* "a": open, priority 7, budget 1000, 100 used */
    accel_session *c; /* "c": closed, handle kept */
    accel_session *x; /* "x": ops of the in-op rows run here */
} fx;
static fx F;

static void fx_setup(void)
{
    accel_runtime_config rc = {.workers = 2};
    cr_assert_eq(accel_runtime_create(&rc, &F.rt), ACCEL_OK);
    /* CPU-bound, so the table means the same on a machine with a device. */
    accel_session_config ca = {.id = "a", .priority = 7,
                               .memory_budget = 1000, .queue_depth = 4,
                               .backend = ACCEL_BACKEND_CPU};
    cr_assert_eq(accel_session_open(F.rt, &ca, &F.a), ACCEL_OK);
    cr_assert_eq(accel_session_reserve(F.a, 100), ACCEL_OK);
    accel_session_config cc = {.id = "c", .memory_budget = 50,
                               .backend = ACCEL_BACKEND_CPU};
    cr_assert_eq(accel_session_open(F.rt, &cc, &F.c), ACCEL_OK);
    unit_step("drain close of the idle c (fixture)");
    cr_assert_eq(accel_session_close(F.c, ACCEL_CLOSE_DRAIN), ACCEL_OK);
    accel_session_config cx = {.id = "x", .memory_budget = 64,
                               .backend = ACCEL_BACKEND_CPU};
    cr_assert_eq(accel_session_open(F.rt, &cx, &F.x), ACCEL_OK);
}

static void fx_teardown(void)
{
    unit_step("release of a, c, x and runtime destroy (fixture)");
    accel_session_release(F.a);
    accel_session_release(F.c);
    accel_session_release(F.x);
    cr_assert_eq(accel_runtime_destroy(F.rt), ACCEL_OK);
    memset(&F, 0, sizeof(F));
}

/* ------------------------------------------------------------ snapshot */

typedef struct snap {
    accel_session_stats a, c;
    bool a_closed, c_closed, x_closed;
    int64_t x_used;
    uint32_t a_prio;
    int lookup_a, lookup_c, lookup_new;
} snap;

static int lookup_status(const char *id)
{
    accel_session *h;
    int rc = accel_session_lookup(F.rt, id, &h);
    if (rc == ACCEL_OK)
        accel_session_release(h);
    return rc;
}

static snap take(void)
{
    snap s;
    memset(&s, 0, sizeof(s));
    cr_assert_eq(accel_session_sync(F.a, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_session_sync(F.x, ACCEL_FOREVER), ACCEL_OK);
    accel_session_get_stats_ex(F.a, &s.a, sizeof(s.a));
    accel_session_get_stats_ex(F.c, &s.c, sizeof(s.c));
    s.a_closed = accel_session_is_closed(F.a);
    s.c_closed = accel_session_is_closed(F.c);
    s.x_closed = accel_session_is_closed(F.x);
    s.x_used = accel_session_memory_used(F.x);
    s.a_prio = accel_session_priority(F.a);
    s.lookup_a = lookup_status("a");
    s.lookup_c = lookup_status("c");
    s.lookup_new = lookup_status("new");
    return s;
}

static bool same_stats(const accel_session_stats *p, const accel_session_stats *q)
{
    return p->submitted == q->submitted && p->completed == q->completed &&
           p->failed == q->failed && p->cancelled == q->cancelled &&
           p->expired == q->expired &&
           p->queued == q->queued && p->memory_used == q->memory_used &&
           p->memory_budget == q->memory_budget && p->priority == q->priority;
}

static bool same(const snap *p, const snap *q)
{
    return same_stats(&p->a, &q->a) && same_stats(&p->c, &q->c) &&
           p->a_closed == q->a_closed && p->c_closed == q->c_closed &&
           p->x_closed == q->x_closed && p->x_used == q->x_used &&
           p->a_prio == q->a_prio && p->lookup_a == q->lookup_a &&
           p->lookup_c == q->lookup_c && p->lookup_new == q->lookup_new;
}

/* --------------------------------------------------------------- rows */

static char long_id[ACCEL_ID_MAX + 2]; /* 128 bytes: one too many */

static int noop(accel_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    return 0;
}
static accel_op nullfn_op = {NULL, NULL, NULL};
static accel_op good_op = {noop, NULL, NULL};

static int open_with(accel_session_config cfg)
{
    accel_session *s = NULL;
    int rc = accel_session_open(F.rt, &cfg, &s);
    if (rc == ACCEL_OK) { /* a row expecting failure got a session */
        accel_session_close(s, 0);
        accel_session_release(s);
    }
    return rc;
}

/* runtime */
static int r_rt_create_null_out(void) { return accel_runtime_create(NULL, NULL); }
static int r_rt_create_workers_max(void)
{
    accel_runtime *rt = NULL;
    accel_runtime_config c = {.workers = 1025};
    int rc = accel_runtime_create(&c, &rt);
    if (rc == ACCEL_OK)
        accel_runtime_destroy(rt);
    return rc;
}
static int r_rt_create_short_lane_all(void)
{
    accel_runtime *rt = NULL;
    accel_runtime_config c = {.workers = 2, .short_lane_workers = 2};
    int rc = accel_runtime_create(&c, &rt);
    if (rc == ACCEL_OK)
        accel_runtime_destroy(rt);
    return rc;
}
/* Host-driven workers (accel.h, "Host-driven workers"). */
static void host_wake_nop(void *arg, unsigned lane)
{
    (void)arg;
    (void)lane;
}

static int rt_create_host(unsigned flags, void (*wake)(void *, unsigned),
                          bool pin)
{
    accel_runtime *rt = NULL;
    static const unsigned cpu0[1] = {0};
    accel_runtime_config c = {.workers = 1, .struct_size = sizeof(c),
                              .flags = flags, .host_wake = wake};
    if (pin) {
        c.worker_cpus = cpu0;
        c.worker_cpus_count = 1;
    }
    int rc = accel_runtime_create(&c, &rt);
    if (rc == ACCEL_OK)
        accel_runtime_destroy(rt);
    return rc;
}
static int r_rt_create_host_no_wake(void)
{
    return rt_create_host(ACCEL_RUNTIME_HOST_WORKERS, NULL, false);
}
static int r_rt_create_wake_no_host(void)
{
    return rt_create_host(0, host_wake_nop, false);
}
static int r_rt_create_unknown_flag(void)
{
    return rt_create_host(0x80u, NULL, false);
}
static int r_rt_create_host_pinned(void)
{
    return rt_create_host(ACCEL_RUNTIME_HOST_WORKERS, host_wake_nop, true);
}
static int r_host_begin_threaded_rt(void)
{
    accel_op ops[1];
    unsigned n;
    return accel_host_visit_begin(F.rt, 0, ops, 1, &n);
}
static int r_host_begin_null_rt(void)
{
    accel_op ops[1];
    unsigned n;
    return accel_host_visit_begin(NULL, 0, ops, 1, &n);
}
static int r_host_end_threaded_rt(void)
{
    return accel_host_visit_end(F.rt, 0, NULL, 0);
}
static int r_host_end_stop_threaded_rt(void)
{
    return accel_host_visit_end_stop(F.rt, 0, NULL, 0);
}
static int r_host_end_stop_null_rt(void)
{
    return accel_host_visit_end_stop(NULL, 0, NULL, 0);
}
static int bi_nop_fn(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    return 0;
}
static int r_host_submit_begin_threaded_rt(void)
{
    accel_op op = {.fn = bi_nop_fn}, ops[1];
    unsigned n;
    int begun;
    return accel_host_submit_begin(F.rt, 0, F.a, &op, ACCEL_NO_WAIT, ops, 1,
                                   &n, &begun);
}
static int r_host_submit_begin_null_rt(void)
{
    accel_op op = {.fn = bi_nop_fn}, ops[1];
    unsigned n;
    int begun;
    return accel_host_submit_begin(NULL, 0, F.a, &op, ACCEL_NO_WAIT, ops, 1,
                                   &n, &begun);
}
static int r_host_submit_own_null_rt(void)
{
    accel_op op = {.fn = bi_nop_fn}, ops[1];
    unsigned n;
    int begun;
    return accel_host_submit_own(NULL, 0, F.a, &op, ACCEL_NO_WAIT, ops, 1, &n,
                                 &begun);
}
static int r_host_idle_begin_threaded_rt(void)
{
    return accel_host_idle_begin(F.rt, 0);
}
static int r_host_idle_end_null_rt(void)
{
    return accel_host_idle_end(NULL, 0, false);
}

static int r_rt_create_bad_device(void)
{
    accel_runtime *rt = NULL;
    accel_runtime_config c = {.workers = 1, .cuda_device = -1};
    int rc = accel_runtime_create(&c, &rt);
    if (rc == ACCEL_OK)
        accel_runtime_destroy(rt);
    return rc;
}
static int r_rt_destroy_null(void) { return accel_runtime_destroy(NULL); }

/* open */
static int r_open_null_rt(void)
{
    accel_session *s;
    accel_session_config c = {.id = "new"};
    return accel_session_open(NULL, &c, &s);
}
static int r_open_null_cfg(void)
{
    accel_session *s;
    return accel_session_open(F.rt, NULL, &s);
}
static int r_open_null_out(void)
{
    accel_session_config c = {.id = "new"};
    return accel_session_open(F.rt, &c, NULL);
}
static int r_open_null_id(void) { return open_with((accel_session_config){.id = NULL}); }
static int r_open_empty_id(void) { return open_with((accel_session_config){.id = ""}); }
static int r_open_long_id(void) { return open_with((accel_session_config){.id = long_id}); }
static int r_open_dup_id(void) { return open_with((accel_session_config){.id = "a"}); }
static int r_open_prio_1001(void)
{
    return open_with((accel_session_config){.id = "new", .priority = 1001});
}
static int r_open_prio_max_u32(void)
{
    return open_with((accel_session_config){.id = "new", .priority = UINT32_MAX});
}
static int r_open_budget_neg(void)
{
    return open_with((accel_session_config){.id = "new", .memory_budget = -1});
}
static int r_open_budget_min(void)
{
    return open_with((accel_session_config){.id = "new", .memory_budget = INT64_MIN});
}
static int r_open_depth_over(void)
{
    return open_with((accel_session_config){.id = "new",
                                            .queue_depth = ACCEL_QUEUE_DEPTH_MAX + 1});
}
static int r_open_depth_2p31(void)
{
    return open_with((accel_session_config){.id = "new", .queue_depth = 1u << 31});
}
static int r_open_depth_u32max(void)
{
    return open_with((accel_session_config){.id = "new", .queue_depth = UINT32_MAX});
}
static int r_open_bad_backend(void)
{
    return open_with((accel_session_config){.id = "new", .backend = (accel_backend)7});
}
static int r_open_neg_backend(void)
{
    return open_with((accel_session_config){.id = "new", .backend = (accel_backend)-1});
}
static int r_open_bad_flags(void)
{
    return open_with((accel_session_config){.id = "new", .flags = 0x80});
}
static int r_open_cuda_none(void)
{
    return open_with((accel_session_config){.id = "new", .backend = ACCEL_BACKEND_CUDA});
}

/* lookup */
static int r_lookup_null_rt(void)
{
    accel_session *s;
    return accel_session_lookup(NULL, "a", &s);
}
static int r_lookup_null_id(void)
{
    accel_session *s;
    return accel_session_lookup(F.rt, NULL, &s);
}
static int r_lookup_null_out(void) { return accel_session_lookup(F.rt, "a", NULL); }
static int r_lookup_empty(void)
{
    accel_session *s;
    return accel_session_lookup(F.rt, "", &s);
}
static int r_lookup_long(void)
{
    accel_session *s;
    return accel_session_lookup(F.rt, long_id, &s);
}
static int r_lookup_missing(void)
{
    accel_session *s;
    return accel_session_lookup(F.rt, "nope", &s);
}
static int r_lookup_closed(void)
{
    accel_session *s;
    return accel_session_lookup(F.rt, "c", &s);
}

/* close / release */
static int r_close_null(void) { return accel_session_close(NULL, 0); }
static int r_close_bad_flags(void) { return accel_session_close(F.a, 0x2); }
static int r_close_bad_flags_hi(void) { return accel_session_close(F.a, 0x80000001u); }
static int r_close_twice(void) { return accel_session_close(F.c, ACCEL_CLOSE_CANCEL); }
static int r_release_null(void)
{
    accel_session_release(NULL);
    return ACCEL_OK;
}

/* submit */
static int r_submit_null_s(void) { return accel_submit(NULL, &good_op, 0); }
static int r_submit_null_op(void) { return accel_submit(F.a, NULL, 0); }
static int r_submit_null_fn(void) { return accel_submit(F.a, &nullfn_op, 0); }
static int r_submit_bad_timeout(void) { return accel_submit(F.a, &good_op, -2); }
static int r_submit_min_timeout(void) { return accel_submit(F.a, &good_op, INT64_MIN); }
static int r_submit_closed(void) { return accel_submit(F.c, &good_op, ACCEL_FOREVER); }
static int r_submit_closed_nowait(void) { return accel_submit(F.c, &good_op, 0); }

static size_t batch_acc;
static int r_batch_null_s(void)
{
    return accel_submit_batch(NULL, &good_op, 1, 0, &batch_acc);
}
static int r_batch_null_ops(void)
{
    return accel_submit_batch(F.a, NULL, 3, 0, &batch_acc);
}
static int r_batch_zero(void)
{
    batch_acc = 99;
    int rc = accel_submit_batch(F.a, NULL, 0, 0, &batch_acc);
    return batch_acc == 0 ? rc : -1000;
}
static int r_batch_first_null_fn(void)
{
    accel_op ops[2] = {nullfn_op, good_op};
    batch_acc = 99;
    int rc = accel_submit_batch(F.a, ops, 2, 0, &batch_acc);
    return batch_acc == 0 ? rc : -1000;
}
static int r_batch_closed(void)
{
    accel_op ops[2] = {good_op, good_op};
    batch_acc = 99;
    int rc = accel_submit_batch(F.c, ops, 2, ACCEL_FOREVER, &batch_acc);
    return batch_acc == 0 ? rc : -1000;
}
static int r_batch_bad_timeout(void)
{
    return accel_submit_batch(F.a, &good_op, 1, -3, NULL);
}
static int r_wait_null_s(void) { return accel_submit_wait(NULL, noop, NULL, 0); }
static int r_wait_null_fn(void) { return accel_submit_wait(F.a, NULL, NULL, 0); }
static int r_wait_bad_timeout(void) { return accel_submit_wait(F.a, noop, NULL, -7); }
static int r_wait_closed(void) { return accel_submit_wait(F.c, noop, NULL, ACCEL_FOREVER); }
static int r_sync_null(void) { return accel_session_sync(NULL, ACCEL_FOREVER); }
static int r_sync_bad_timeout(void) { return accel_session_sync(F.a, -2); }
static int r_sync_closed(void) { return accel_session_sync(F.c, 0); }

/* submit_ex / cancel: a failed submit_ex leaves an all-zero ticket */
static accel_ticket ex_t;
static int ex_with(accel_session *s, const accel_op *op, int64_t deadline,
                   int64_t timeout)
{
    memset(&ex_t, 0xAB, sizeof(ex_t));
    int rc = accel_submit_ex(s, op, deadline, timeout, &ex_t);
    return ex_t.session == NULL && ex_t.position == 0 ? rc : -1000;
}
static int r_ex_null_s(void) { return ex_with(NULL, &good_op, 0, 0); }
static int r_ex_null_op(void) { return ex_with(F.a, NULL, 0, 0); }
static int r_ex_null_fn(void) { return ex_with(F.a, &nullfn_op, 0, 0); }
static int r_ex_bad_timeout(void) { return ex_with(F.a, &good_op, 0, -2); }
static int r_ex_neg_deadline(void) { return ex_with(F.a, &good_op, -1, 0); }
static int r_ex_min_deadline(void) { return ex_with(F.a, &good_op, INT64_MIN, 0); }
static int r_ex_closed(void) { return ex_with(F.c, &good_op, 0, ACCEL_FOREVER); }
static int r_ex_closed_deadline(void)
{
    return ex_with(F.c, &good_op, accel_now_ns() + 1000000000, 0);
}
static int r_ex_null_ticket_closed(void)
{
    return accel_submit_ex(F.c, &good_op, 1, 0, NULL);
}
static int r_cancel_null(void) { return accel_cancel(NULL); }
static int r_cancel_zero(void)
{
    accel_ticket t;
    memset(&t, 0, sizeof(t));
    return accel_cancel(&t);
}
static int r_cancel_never_issued(void) /* a position "a" never handed out */
{
    accel_ticket t = {.session = F.a, .position = UINT64_C(1) << 40};
    return accel_cancel(&t);
}
static int r_cancel_pos_max(void)
{
    accel_ticket t = {.session = F.a, .position = UINT64_MAX};
    return accel_cancel(&t);
}
static int r_cancel_closed(void) /* a real ticket; its session closed since */
{
    accel_session *s = NULL;
    accel_session_config c = {.id = "tmp"};
    if (accel_session_open(F.rt, &c, &s) != ACCEL_OK)
        return -1000;
    accel_ticket t;
    int rc = accel_submit_ex(s, &good_op, 0, ACCEL_FOREVER, &t);
    if (rc == ACCEL_OK) {
        accel_session_close(s, ACCEL_CLOSE_DRAIN);
        rc = accel_cancel(&t);
    }
    accel_session_release(s);
    return rc;
}
/* A real ticket of "x" (its op finished), then altered. */
static accel_ticket x_ticket(void)
{
    accel_ticket t;
    memset(&t, 0, sizeof(t));
    if (accel_submit_ex(F.x, &good_op, 0, ACCEL_FOREVER, &t) == ACCEL_OK)
        accel_session_sync(F.x, ACCEL_FOREVER);
    return t;
}
static int r_cancel_finished(void)
{
    accel_ticket t = x_ticket();
    return accel_cancel(&t);
}
static int r_cancel_other_session(void) /* x's ticket, a's pointer */
{
    accel_ticket t = x_ticket();
    t.session = F.a;
    return accel_cancel(&t);
}
static int r_cancel_other_closed(void) /* x's ticket, c's pointer */
{
    accel_ticket t = x_ticket();
    t.session = F.c;
    return accel_cancel(&t);
}
static int r_cancel_bad_serial(void)
{
    accel_ticket t = x_ticket();
    t.serial ^= 1;
    return accel_cancel(&t);
}
static int r_cancel_failed_submit(void) /* the zero ticket of a failed submit */
{
    accel_ticket t;
    (void)accel_submit_ex(F.c, &good_op, 0, 0, &t);
    return accel_cancel(&t);
}
static int r_now_positive(void) { return accel_now_ns() > 0 ? ACCEL_OK : -1000; }

/* budget */
static int r_reserve_null(void) { return accel_session_reserve(NULL, 1); }
static int r_reserve_neg(void) { return accel_session_reserve(F.a, -1); }
static int r_reserve_min(void) { return accel_session_reserve(F.a, INT64_MIN); }
static int r_reserve_over(void) { return accel_session_reserve(F.a, 901); }
static int r_reserve_huge(void) { return accel_session_reserve(F.a, INT64_MAX); }
static int r_reserve_closed(void) { return accel_session_reserve(F.c, 1); }
static int r_reserve_zero(void) { return accel_session_reserve(F.a, 0); }
static int r_unreserve_null(void) { return accel_session_unreserve(NULL, 1); }
static int r_unreserve_more(void) { return accel_session_unreserve(F.a, 101); }
static int r_unreserve_neg(void) { return accel_session_unreserve(F.a, -1); }
static int r_unreserve_huge(void) { return accel_session_unreserve(F.a, INT64_MAX); }
static int r_unreserve_closed_more(void) { return accel_session_unreserve(F.c, 1); }
static int r_used_null(void) { return (int)accel_session_memory_used(NULL); }

/* priority and getters */
static int r_prio_null(void) { return accel_session_set_priority(NULL, 5); }
static int r_prio_1001(void) { return accel_session_set_priority(F.a, 1001); }
static int r_prio_u32max(void) { return accel_session_set_priority(F.a, UINT32_MAX); }
static int r_prio_closed(void) { return accel_session_set_priority(F.c, 5); }
static int r_getters_null(void)
{
    bool ok = accel_session_id(NULL) == NULL && accel_session_priority(NULL) == 0 &&
              accel_session_backend(NULL) == ACCEL_BACKEND_AUTO &&
              accel_session_is_closed(NULL) && accel_ctx_session(NULL) == NULL;
    return ok ? ACCEL_OK : -1000;
}
static int r_stats_null_s(void)
{
    accel_session_stats st;
    return accel_session_get_stats(NULL, &st);
}
static int r_stats_null_out(void) { return accel_session_get_stats(F.a, NULL); }
static int r_strerror_unknown(void)
{
    return strcmp(accel_strerror(12345), "unknown status") == 0 &&
                   strcmp(accel_strerror(INT_MIN), "unknown status") == 0
               ? ACCEL_OK
               : -1000;
}
static int r_ctx_null(void)
{
    void *p = (void *)1;
    int rc = accel_ctx_alloc(NULL, 8, &p);
    accel_ctx_free(NULL, p); /* ignored */
    return rc;
}

/* inside an op of "x": the op's status is the row's status */
typedef int (*inner_fn)(accel_ctx *ctx);
static int run_inside(accel_ctx *ctx, void *arg)
{
    return ((inner_fn)(uintptr_t)arg)(ctx);
}
static int in_op(inner_fn f)
{
    return accel_submit_wait(F.x, run_inside, (void *)(uintptr_t)f, ACCEL_FOREVER);
}
static int i_alloc_zero(accel_ctx *ctx)
{
    void *p;
    return accel_ctx_alloc(ctx, 0, &p);
}
static int i_alloc_null_out(accel_ctx *ctx) { return accel_ctx_alloc(ctx, 8, NULL); }
static int i_alloc_sizemax(accel_ctx *ctx)
{
    void *p;
    return accel_ctx_alloc(ctx, SIZE_MAX, &p);
}
static int i_alloc_over_budget(accel_ctx *ctx)
{
    void *p;
    return accel_ctx_alloc(ctx, 65, &p);
}
static int i_free_null(accel_ctx *ctx)
{
    accel_ctx_free(ctx, NULL);
    return ACCEL_OK;
}
static int i_wait_own(accel_ctx *ctx)
{
    return accel_submit_wait(accel_ctx_session(ctx), noop, NULL, ACCEL_FOREVER);
}
static int i_sync_own(accel_ctx *ctx)
{
    return accel_session_sync(accel_ctx_session(ctx), ACCEL_FOREVER);
}
static int i_destroy(accel_ctx *ctx)
{
    (void)ctx;
    return accel_runtime_destroy(F.rt);
}
static int i_reserve_over(accel_ctx *ctx)
{
    return accel_session_reserve(accel_ctx_session(ctx), 65);
}
static int i_unreserve_more(accel_ctx *ctx)
{
    return accel_session_unreserve(accel_ctx_session(ctx), 1);
}
static int i_close_bad_flags(accel_ctx *ctx)
{
    return accel_session_close(accel_ctx_session(ctx), 4);
}
static int r_in_alloc_zero(void) { return in_op(i_alloc_zero); }
static int r_in_alloc_null_out(void) { return in_op(i_alloc_null_out); }
static int r_in_alloc_sizemax(void) { return in_op(i_alloc_sizemax); }
static int r_in_alloc_over(void) { return in_op(i_alloc_over_budget); }
static int r_in_free_null(void) { return in_op(i_free_null); }
static int r_in_wait_own(void) { return in_op(i_wait_own); }
static int r_in_sync_own(void) { return in_op(i_sync_own); }
static int r_in_destroy(void) { return in_op(i_destroy); }
static int r_in_reserve_over(void) { return in_op(i_reserve_over); }
static int r_in_unreserve_more(void) { return in_op(i_unreserve_more); }
static int r_in_close_bad_flags(void) { return in_op(i_close_bad_flags); }

typedef struct row {
    const char *name;
    int (*fn)(void);
    int want;
    bool no_device; /* bad input only where no CUDA device is usable */
} row;

#define ROW(f, w) {#f, f, w, false}
#define ROW_NO_DEVICE(f, w) {#f, f, w, true}
static const row rows[] = {
    ROW(r_rt_create_null_out, ACCEL_EINVAL),
    ROW(r_rt_create_workers_max, ACCEL_EINVAL),
    ROW(r_rt_create_short_lane_all, ACCEL_EINVAL),
    ROW(r_rt_create_bad_device, ACCEL_EINVAL),
    ROW(r_rt_create_host_no_wake, ACCEL_EINVAL),
    ROW(r_rt_create_wake_no_host, ACCEL_EINVAL),
    ROW(r_rt_create_unknown_flag, ACCEL_EINVAL),
    ROW(r_rt_create_host_pinned, ACCEL_EINVAL),
    ROW(r_host_begin_threaded_rt, ACCEL_EINVAL),
    ROW(r_host_begin_null_rt, ACCEL_EINVAL),
    ROW(r_host_end_threaded_rt, ACCEL_EINVAL),
    ROW(r_host_end_stop_threaded_rt, ACCEL_EINVAL),
    ROW(r_host_end_stop_null_rt, ACCEL_EINVAL),
    ROW(r_host_submit_begin_threaded_rt, ACCEL_EINVAL),
    ROW(r_host_submit_begin_null_rt, ACCEL_EINVAL),
    ROW(r_host_submit_own_null_rt, ACCEL_EINVAL),
    ROW(r_host_idle_begin_threaded_rt, ACCEL_EINVAL),
    ROW(r_host_idle_end_null_rt, ACCEL_EINVAL),
    ROW(r_rt_destroy_null, ACCEL_EINVAL),
    ROW(r_open_null_rt, ACCEL_EINVAL),
    ROW(r_open_null_cfg, ACCEL_EINVAL),
    ROW(r_open_null_out, ACCEL_EINVAL),
    ROW(r_open_null_id, ACCEL_EINVAL),
    ROW(r_open_empty_id, ACCEL_EINVAL),
    ROW(r_open_long_id, ACCEL_EINVAL),
    ROW(r_open_dup_id, ACCEL_EEXIST),
    ROW(r_open_prio_1001, ACCEL_EINVAL),
    ROW(r_open_prio_max_u32, ACCEL_EINVAL),
    ROW(r_open_budget_neg, ACCEL_EINVAL),
    ROW(r_open_budget_min, ACCEL_EINVAL),
    ROW(r_open_depth_over, ACCEL_EINVAL),
    ROW(r_open_depth_2p31, ACCEL_EINVAL),
    ROW(r_open_depth_u32max, ACCEL_EINVAL),
    ROW(r_open_bad_backend, ACCEL_EINVAL),
    ROW(r_open_neg_backend, ACCEL_EINVAL),
    ROW(r_open_bad_flags, ACCEL_EINVAL),
    ROW_NO_DEVICE(r_open_cuda_none, ACCEL_ENOBACKEND),
    ROW(r_lookup_null_rt, ACCEL_EINVAL),
    ROW(r_lookup_null_id, ACCEL_EINVAL),
    ROW(r_lookup_null_out, ACCEL_EINVAL),
    ROW(r_lookup_empty, ACCEL_EINVAL),
    ROW(r_lookup_long, ACCEL_EINVAL),
    ROW(r_lookup_missing, ACCEL_ENOENT),
    ROW(r_lookup_closed, ACCEL_ENOENT),
    ROW(r_close_null, ACCEL_EINVAL),
    ROW(r_close_bad_flags, ACCEL_EINVAL),
    ROW(r_close_bad_flags_hi, ACCEL_EINVAL),
    ROW(r_close_twice, ACCEL_OK),
    ROW(r_release_null, ACCEL_OK),
    ROW(r_submit_null_s, ACCEL_EINVAL),
    ROW(r_submit_null_op, ACCEL_EINVAL),
    ROW(r_submit_null_fn, ACCEL_EINVAL),
    ROW(r_submit_bad_timeout, ACCEL_EINVAL),
    ROW(r_submit_min_timeout, ACCEL_EINVAL),
    ROW(r_submit_closed, ACCEL_ECLOSED),
    ROW(r_submit_closed_nowait, ACCEL_ECLOSED),
    ROW(r_batch_null_s, ACCEL_EINVAL),
    ROW(r_batch_null_ops, ACCEL_EINVAL),
    ROW(r_batch_zero, ACCEL_OK),
    ROW(r_batch_first_null_fn, ACCEL_EINVAL),
    ROW(r_batch_closed, ACCEL_ECLOSED),
    ROW(r_batch_bad_timeout, ACCEL_EINVAL),
    ROW(r_wait_null_s, ACCEL_EINVAL),
    ROW(r_wait_null_fn, ACCEL_EINVAL),
    ROW(r_wait_bad_timeout, ACCEL_EINVAL),
    ROW(r_wait_closed, ACCEL_ECLOSED),
    ROW(r_sync_null, ACCEL_EINVAL),
    ROW(r_sync_bad_timeout, ACCEL_EINVAL),
    ROW(r_sync_closed, ACCEL_OK),
    ROW(r_ex_null_s, ACCEL_EINVAL),
    ROW(r_ex_null_op, ACCEL_EINVAL),
    ROW(r_ex_null_fn, ACCEL_EINVAL),
    ROW(r_ex_bad_timeout, ACCEL_EINVAL),
    ROW(r_ex_neg_deadline, ACCEL_EINVAL),
    ROW(r_ex_min_deadline, ACCEL_EINVAL),
    ROW(r_ex_closed, ACCEL_ECLOSED),
    ROW(r_ex_closed_deadline, ACCEL_ECLOSED),
    ROW(r_ex_null_ticket_closed, ACCEL_ECLOSED),
    ROW(r_cancel_null, ACCEL_EINVAL),
    ROW(r_cancel_zero, ACCEL_EINVAL),
    ROW(r_cancel_never_issued, ACCEL_EINVAL),
    ROW(r_cancel_pos_max, ACCEL_EINVAL),
    ROW(r_cancel_closed, ACCEL_ECLOSED),
    ROW(r_cancel_finished, ACCEL_EALREADY),
    ROW(r_cancel_other_session, ACCEL_EINVAL),
    ROW(r_cancel_other_closed, ACCEL_EINVAL),
    ROW(r_cancel_bad_serial, ACCEL_EINVAL),
    ROW(r_cancel_failed_submit, ACCEL_EINVAL),
    ROW(r_now_positive, ACCEL_OK),
    ROW(r_reserve_null, ACCEL_EINVAL),
    ROW(r_reserve_neg, ACCEL_EINVAL),
    ROW(r_reserve_min, ACCEL_EINVAL),
    ROW(r_reserve_over, ACCEL_EBUDGET),
    ROW(r_reserve_huge, ACCEL_EBUDGET),
    ROW(r_reserve_closed, ACCEL_ECLOSED),
    ROW(r_reserve_zero, ACCEL_OK),
    ROW(r_unreserve_null, ACCEL_EINVAL),
    ROW(r_unreserve_more, ACCEL_EINVAL),
    ROW(r_unreserve_neg, ACCEL_EINVAL),
    ROW(r_unreserve_huge, ACCEL_EINVAL),
    ROW(r_unreserve_closed_more, ACCEL_EINVAL),
    ROW(r_used_null, 0),
    ROW(r_prio_null, ACCEL_EINVAL),
    ROW(r_prio_1001, ACCEL_EINVAL),
    ROW(r_prio_u32max, ACCEL_EINVAL),
    ROW(r_prio_closed, ACCEL_ECLOSED),
    ROW(r_getters_null, ACCEL_OK),
    ROW(r_stats_null_s, ACCEL_EINVAL),
    ROW(r_stats_null_out, ACCEL_EINVAL),
    ROW(r_strerror_unknown, ACCEL_OK),
    ROW(r_ctx_null, ACCEL_EINVAL),
    ROW(r_in_alloc_zero, ACCEL_EINVAL),
    ROW(r_in_alloc_null_out, ACCEL_EINVAL),
    ROW(r_in_alloc_sizemax, ACCEL_EINVAL),
    ROW(r_in_alloc_over, ACCEL_EBUDGET),
    ROW(r_in_free_null, ACCEL_OK),
    ROW(r_in_wait_own, ACCEL_EDEADLK),
    ROW(r_in_sync_own, ACCEL_EDEADLK),
    ROW(r_in_destroy, ACCEL_EDEADLK),
    ROW(r_in_reserve_over, ACCEL_EBUDGET),
    ROW(r_in_unreserve_more, ACCEL_EINVAL),
    ROW(r_in_close_bad_flags, ACCEL_EINVAL),
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

Test(bad_input, table, .init = fx_setup, .fini = fx_teardown, .timeout = 60)
{
    memset(long_id, 'L', ACCEL_ID_MAX + 1);
    long_id[ACCEL_ID_MAX + 1] = '\0';
    cr_assert_geq(NROWS, 40, "the table has %zu rows", NROWS);
    unit_step("the CUDA probe and the snapshot before the first row");
    bool cuda = tu_cuda_usable(F.rt);
    snap before = take();
    cr_assert(before.lookup_a == ACCEL_OK && before.lookup_c == ACCEL_ENOENT &&
              before.lookup_new == ACCEL_ENOENT && before.a.memory_used == 100);
    static char row_step[NROWS][96]; /* each row's step, named below */
    for (size_t i = 0; i < NROWS; i++) {
        if (rows[i].no_device && cuda) {
            cr_log_info("row %zu %s: not bad input with a device", i,
                        rows[i].name);
            continue;
        }
        snprintf(row_step[i], sizeof(row_step[i]),
                 "row %zu %s and the snapshot after it", i, rows[i].name);
        unit_step(row_step[i]);
        int got = rows[i].fn();
        cr_expect_eq(got, rows[i].want, "row %zu %s: got %d (%s), want %d (%s)",
                     i, rows[i].name, got, accel_strerror(got), rows[i].want,
                     accel_strerror(rows[i].want));
        snap after = take();
        cr_expect(same(&before, &after), "row %zu %s changed state", i,
                  rows[i].name);
        before = after;
    }
    /* and the sessions still work */
    unit_step("submit_wait on a and x after the table");
    cr_assert_eq(accel_submit_wait(F.a, noop, NULL, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_submit_wait(F.x, noop, NULL, ACCEL_FOREVER), ACCEL_OK);
}

/* ------------------------------------------- boundaries that succeed */

Test(bad_input, priority_zero_is_normal, .init = fx_setup, .fini = fx_teardown,
     .timeout = 30)
{
    accel_session *s;
    accel_session_config c = {.id = "p0", .priority = 0};
    cr_assert_eq(accel_session_open(F.rt, &c, &s), ACCEL_OK);
    cr_assert_eq(accel_session_priority(s), ACCEL_PRIORITY_NORMAL);
    cr_assert_eq(accel_session_set_priority(s, 1000), ACCEL_OK);
    cr_assert_eq(accel_session_priority(s), 1000);
    cr_assert_eq(accel_session_set_priority(s, 0), ACCEL_OK);
    cr_assert_eq(accel_session_priority(s), ACCEL_PRIORITY_NORMAL);
    cr_assert_eq(accel_session_set_priority(s, 1), ACCEL_OK);
    cr_assert_eq(accel_session_priority(s), 1);
    unit_step("release of p0");
    accel_session_release(s);
}

Test(bad_input, id_of_127_bytes, .init = fx_setup, .fini = fx_teardown,
     .timeout = 30)
{
    char id[ACCEL_ID_MAX + 1];
    memset(id, 'k', ACCEL_ID_MAX);
    id[ACCEL_ID_MAX] = '\0';
    accel_session *s, *h;
    accel_session_config c = {.id = id};
    cr_assert_eq(accel_session_open(F.rt, &c, &s), ACCEL_OK);
    cr_assert_eq(accel_session_lookup(F.rt, id, &h), ACCEL_OK);
    cr_assert_eq(h, s);
    cr_assert_str_eq(accel_session_id(s), id);
    unit_step("release of the lookup's handle and of s");
    accel_session_release(h);
    accel_session_release(s);
}

/* Depth d (after rounding) bounds the ops accepted and not yet started: with
 * the first op running and blocked, exactly d more are accepted. */
static _Atomic int gate_open, gate_started;
static int gate_op(accel_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    atomic_store(&gate_started, 1);
    while (!atomic_load(&gate_open))
        sched_yield();
    return 0;
}

static uint64_t capacity_of(uint32_t depth)
{
    accel_session *s;
    accel_session_config c = {.id = "depth", .queue_depth = depth};
    cr_assert_eq(accel_session_open(F.rt, &c, &s), ACCEL_OK);
    atomic_store(&gate_open, 0);
    atomic_store(&gate_started, 0);
    accel_op g = {gate_op, NULL, NULL};
    cr_assert_eq(accel_submit(s, &g, ACCEL_FOREVER), ACCEL_OK);
    unit_step("the gate op starts");
    while (!atomic_load(&gate_started))
        sched_yield();
    uint64_t n = 0;
    unit_step("NO_WAIT submits until the ring is full");
    while (accel_submit(s, &good_op, ACCEL_NO_WAIT) == ACCEL_OK)
        n++;
    cr_assert_eq(accel_submit(s, &good_op, 1000), ACCEL_ETIMEDOUT);
    atomic_store(&gate_open, 1);
    unit_step("drain close of the full ring once the gate opens");
    cr_assert_eq(accel_session_close(s, ACCEL_CLOSE_DRAIN), ACCEL_OK);
    accel_session_stats st;
    accel_session_get_stats(s, &st);
    cr_assert_eq(st.completed, n + 1);
    unit_step("release of the closed session");
    accel_session_release(s);
    return n;
}

Test(bad_input, queue_depths, .init = fx_setup, .fini = fx_teardown,
     .timeout = 60)
{
    cr_assert_eq(capacity_of(0), ACCEL_QUEUE_DEPTH_DEFAULT);
    cr_assert_eq(capacity_of(1), 1);
    cr_assert_eq(capacity_of(2), 2);
    cr_assert_eq(capacity_of(3), 4);
    cr_assert_eq(capacity_of(1000), 1024);
    cr_assert_eq(capacity_of(ACCEL_QUEUE_DEPTH_MAX), ACCEL_QUEUE_DEPTH_MAX);
}

/* -------------------------------------- close and destroy from inside */

static _Atomic int ran_after, canceled_after;
static int count_op(accel_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    atomic_fetch_add(&ran_after, 1);
    return 0;
}
static void count_done(void *arg, int status)
{
    (void)arg;
    if (status == ACCEL_ECLOSED)
        atomic_fetch_add(&canceled_after, 1);
}
static int close_self(accel_ctx *ctx, void *arg)
{
    unsigned flags = (unsigned)(uintptr_t)arg;
    accel_session *s = accel_ctx_session(ctx);
    /* returns at once: does not wait for the op it runs in */
    int rc = accel_session_close(s, flags);
    if (rc != ACCEL_OK || !accel_session_is_closed(s))
        return 1;
    accel_op op = {noop, NULL, NULL};
    return accel_submit(s, &op, ACCEL_FOREVER) == ACCEL_ECLOSED ? 0 : 2;
}

static void close_inside(unsigned flags)
{
    accel_session *s;
    accel_session_config c = {.id = "selfclose", .queue_depth = 64};
    cr_assert_eq(accel_session_open(F.rt, &c, &s), ACCEL_OK);
    atomic_store(&gate_open, 0);
    atomic_store(&gate_started, 0);
    atomic_store(&ran_after, 0);
    atomic_store(&canceled_after, 0);
    accel_op ops[12];
    ops[0] = (accel_op){gate_op, NULL, NULL};
    ops[1] = (accel_op){close_self, NULL, (void *)(uintptr_t)flags};
    for (int i = 2; i < 12; i++)
        ops[i] = (accel_op){count_op, count_done, NULL};
    size_t acc;
    unit_step("a FOREVER batch of 12 ops");
    cr_assert_eq(accel_submit_batch(s, ops, 12, ACCEL_FOREVER, &acc), ACCEL_OK);
    unit_step("the gate op starts");
    while (!atomic_load(&gate_started))
        sched_yield();
    atomic_store(&gate_open, 1);
    unit_step("close_self closes the session from inside");
    while (!accel_session_is_closed(s)) /* close_self closed it */
        sched_yield();
    unit_step("the outside close of s returns");
    cr_assert_eq(accel_session_close(s, flags), ACCEL_OK);
    accel_session_stats st;
    accel_session_get_stats(s, &st);
    cr_assert_eq(st.submitted, 12);
    cr_assert_eq(st.completed + st.failed + st.cancelled, 12);
    cr_assert_eq(st.failed, 0, "close_self saw a wrong status");
    if (flags == ACCEL_CLOSE_DRAIN) {
        cr_assert_eq(atomic_load(&ran_after), 10);
    } else {
        /* close_self set the cancel before the ops behind it started */
        cr_assert_eq(atomic_load(&ran_after), 0);
        cr_assert_eq(atomic_load(&canceled_after), 10);
        cr_assert_eq(st.cancelled, (uint64_t)atomic_load(&canceled_after),
                     "stats canceled %" PRIu64 ", done(ECLOSED) %d, ran %d",
                     st.cancelled, atomic_load(&canceled_after),
                     atomic_load(&ran_after));
    }
    unit_step("release of the closed s");
    accel_session_release(s);
}

Test(bad_input, close_from_inside_drain, .init = fx_setup, .fini = fx_teardown,
     .timeout = 30)
{
    close_inside(ACCEL_CLOSE_DRAIN);
}

Test(bad_input, close_from_inside_cancel, .init = fx_setup, .fini = fx_teardown,
     .timeout = 30)
{
    close_inside(ACCEL_CLOSE_CANCEL);
}

static int release_last_inside(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    /* The last handle dropped from inside the session's own op: closes
     * with DRAIN without waiting for this op. */
    accel_session_release((accel_session *)arg);
    return 0;
}

Test(bad_input, release_last_handle_from_inside, .init = fx_setup,
     .fini = fx_teardown, .timeout = 30)
{
    accel_session *s;
    accel_session_config c = {.id = "selfrelease"};
    cr_assert_eq(accel_session_open(F.rt, &c, &s), ACCEL_OK);
    atomic_store(&ran_after, 0);
    accel_op ops[3] = {{release_last_inside, NULL, s},
                       {count_op, NULL, NULL},
                       {count_op, NULL, NULL}};
    unit_step("a FOREVER batch of 3 ops");
    cr_assert_eq(accel_submit_batch(s, ops, 3, ACCEL_FOREVER, NULL), ACCEL_OK);
    /* the id is freed when the close begins; wait for that */
    accel_session *h;
    unit_step("the release from inside frees the id");
    while (accel_session_lookup(F.rt, "selfrelease", &h) == ACCEL_OK) {
        accel_session_release(h);
        sched_yield();
    }
    /* The close is DRAIN: both ops behind the releasing one run. No handle
     * is left to sync on, so wait for them (a 10 s watchdog, not a
     * threshold: they run as soon as the worker reaches them). */
    unit_step("the 2 ops behind the release run");
    for (int i = 0; i < 10000 && atomic_load(&ran_after) < 2; i++)
        tu_nap_us(1000);
    cr_assert_eq(atomic_load(&ran_after), 2,
                 "the ops behind the last release ran (%d of 2)",
                 atomic_load(&ran_after));
}
