/*
 * Fault injection (promises 1, 4 and 5 of docs/contract.md under failure).
 *
 * - site_sweep: runtime/fault.h can fail any fault site of the runtime
 *   (allocations, the calendar's mmap, cds_lfht_new, pthread_create, CUDA
 *   stream/event/pool creation and device allocation). A scripted scenario
 *   (create, open, submit, ops that allocate from their budget, lookup,
 *   sync, close, release, destroy) runs once per hit k of the sites hit off
 *   the worker threads (the same site at each k on every run: checked),
 *   and for the first hits of each site hit on the workers. Every public
 *   call must return a status documented for it (ENOMEM where it may
 *   allocate), a failed call must leave nothing behind (the id stays free,
 *   the budget unchanged), every accepted op completes exactly once, and
 *   under ASan/LSan nothing leaks (checked after each run). The sites
 *   reached must be the whole list; the test prints it.
 * - A "failing backend" session (its ops fail with ACCEL_EBACKEND or their
 *   own errors), a session whose budget runs out mid-run, a session whose
 *   ring is kept full and one closed with CANCEL mid-run, all beside
 *   untargeted sessions that must complete 100% of their ops.
 *
 * Promises: 1, 4, 5
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <accel/accel.h>

#include "core_util.h"
#include "fault.h"
#include "unit_watchdog.h"

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_LSAN 1
#endif
#endif
#ifdef HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

/* A wait that hangs names its step (unit_watchdog.h). */
UNIT_WATCHDOG_SUITE(faults);

static void assert_no_leaks(const char *when)
{
#ifdef HAVE_LSAN
    cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "leak after %s", when);
#else
    (void)when;
#endif
}

/* ----------------------------------------------------------- the sweep */

typedef struct counters {
    _Atomic uint64_t dones, ran, ok, nomem, budget, bad;
    _Atomic uint64_t kept; /* failed allocations whose charge stayed */
} counters;

static int alloc_op(accel_ctx *ctx, void *arg)
{
    counters *c = arg;
    atomic_fetch_add(&c->ran, 1);
    bool host = accel_session_backend(accel_ctx_session(ctx)) ==
                ACCEL_BACKEND_CPU; /* CUDA memory is not ours to touch */
    void *p = NULL;
    /* The session's ops run one at a time: nothing else moves its budget
     * between these two reads. */
    int64_t used0 = accel_session_memory_used(accel_ctx_session(ctx));
    int rc = accel_ctx_alloc(ctx, 100, &p);
    if (rc != ACCEL_OK &&
        accel_session_memory_used(accel_ctx_session(ctx)) != used0)
        atomic_fetch_add(&c->kept, 1);
    if (rc == ACCEL_OK) {
        if (host)
            memset(p, 1, 100);
        accel_ctx_free(ctx, p);
        atomic_fetch_add(&c->ok, 1);
    } else if (rc == ACCEL_ENOMEM) {
        atomic_fetch_add(&c->nomem, 1);
    } else if (rc == ACCEL_EBUDGET) {
        atomic_fetch_add(&c->budget, 1);
    } else {
        return 99; /* undocumented status: counted as failed */
    }
    /* one block left allocated: freed with the session */
    if (accel_ctx_alloc(ctx, 10, &p) == ACCEL_OK && host)
        memset(p, 2, 10);
    return 0;
}

static void count_done(void *arg, int status)
{
    counters *c = arg; /* no cr_assert off the test's thread */
    if (status != 0)
        atomic_fetch_add(&c->bad, 1);
    atomic_fetch_add(&c->dones, 1);
}

#define SWEEP_OPS 40
#define NSESS 4 /* alpha, beta, gamma on the CPU; delta on CUDA if usable */

/* One run of the scenario with whatever fault.h has armed. Every public
 * call returns a status documented for it, a failed call leaves nothing
 * behind, every accepted op completes exactly once, nothing leaks. */
static void scenario(const char *when, bool cuda)
{
    unit_step(when); /* the scenario under this fault */
    counters c;
    memset(&c, 0, sizeof(c));
    accel_runtime *rt = NULL;
    accel_runtime_config rcfg = {.workers = 2};
    int rc = accel_runtime_create(&rcfg, &rt);
    cr_assert(rc == ACCEL_OK || rc == ACCEL_ENOMEM, "%s create: %d", when, rc);
    if (rc != ACCEL_OK) {
        cr_assert_null(rt);
        /* the failure was used up: a retry works */
        cr_assert_eq(accel_runtime_create(&rcfg, &rt), ACCEL_OK);
    }
    const char *ids[NSESS] = {"alpha", "beta", "gamma", "delta"};
    accel_session *s[NSESS] = {0};
    int nsess = cuda ? 4 : 3;
    for (int i = 0; i < nsess; i++) {
        accel_session_config cfg = {
            .id = ids[i], .queue_depth = 16,
            .memory_budget = i == 2 ? 150 : 0,
            .backend = i == 3 ? ACCEL_BACKEND_CUDA : ACCEL_BACKEND_CPU};
        rc = accel_session_open(rt, &cfg, &s[i]);
        /* CUDA: a failed stream, event or pool at open is ENOMEM (an
         * injected failure is out of memory); a failed probe leaves the
         * runtime without the backend (ENOBACKEND) */
        cr_assert(rc == ACCEL_OK || rc == ACCEL_ENOMEM ||
                      (i == 3 && rc == ACCEL_ENOBACKEND),
                  "%s open %s: %d", when, ids[i], rc);
        if (rc != ACCEL_OK) {
            accel_session *h;
            cr_assert_eq(accel_session_lookup(rt, ids[i], &h), ACCEL_ENOENT,
                         "%s: failed open left its id", when);
            rc = accel_session_open(rt, &cfg, &s[i]);
            /* a probe that failed stays failed for this runtime */
            cr_assert(rc == ACCEL_OK || (i == 3 && rc == ACCEL_ENOBACKEND),
                      "%s: reopen %s: %d", when, ids[i], rc);
            if (rc != ACCEL_OK)
                s[i] = NULL;
        }
    }
    /* Metrics take a snapshot of the sessions (an allocation). */
    char text[8192];
    size_t len = 0;
    rc = accel_runtime_write_prometheus(rt, text, sizeof(text), &len);
    cr_assert(rc == ACCEL_OK || rc == ACCEL_ENOMEM, "%s metrics: %d", when, rc);
    if (rc != ACCEL_OK)
        cr_assert_eq(accel_runtime_write_prometheus(rt, text, sizeof(text), &len),
                     ACCEL_OK, "%s: metrics retry", when);
    cr_assert_gt(len, 0);
    if (s[3]) /* a new stream priority at its next visit */
        cr_assert_eq(accel_session_set_priority(s[3], 1000), ACCEL_OK);
    uint64_t accepted = 0;
    for (int n = 0; n < SWEEP_OPS; n++) {
        accel_session *to = s[n % nsess] ? s[n % nsess] : s[0];
        accel_op op = {alloc_op, count_done, &c};
        rc = accel_submit(to, &op, ACCEL_FOREVER);
        cr_assert_eq(rc, ACCEL_OK, "%s submit: %d", when, rc);
        accepted++;
    }
    accel_session *h = NULL;
    cr_assert_eq(accel_session_lookup(rt, "beta", &h), ACCEL_OK);
    cr_assert_eq(h, s[1]);
    cr_assert_eq(accel_session_sync(h, ACCEL_FOREVER), ACCEL_OK);
    accel_session_release(h);
    cr_assert_eq(accel_session_close(s[0], ACCEL_CLOSE_DRAIN), ACCEL_OK);
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats(s[0], &st), ACCEL_OK);
    cr_assert_eq(st.completed + st.failed + st.cancelled, st.submitted);
    cr_assert_eq(st.failed, 0, "%s: an op saw an undocumented status", when);
    accel_session_release(s[0]);
    accel_session_release(s[1]); /* last handle: closes with DRAIN */
    if (s[3])
        accel_session_release(s[3]);
    /* s[2] left open for destroy */
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    cr_assert_eq(atomic_load(&c.dones), accepted, "%s: %" PRIu64
                 " of %" PRIu64 " ops completed", when, atomic_load(&c.dones),
                 accepted);
    cr_assert_eq(atomic_load(&c.ran), accepted);
    cr_assert_eq(atomic_load(&c.bad), 0, "%s: op statuses", when);
    cr_assert_eq(atomic_load(&c.ok) + atomic_load(&c.nomem) + atomic_load(&c.budget),
                 accepted);
    assert_no_leaks(when);
}

static bool cuda_usable_now(void)
{
    accel_runtime *rt = NULL;
    cr_assert_eq(accel_runtime_create(NULL, &rt), ACCEL_OK);
    bool yes = tu_cuda_usable(rt);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    return yes;
}

static void check_no_unknown(const char *when)
{
    const char *last = NULL;
    long n = accel__fault_unknown(&last);
    cr_assert_eq(n, 0, "%s: %ld hits of a site missing from fault.c's list "
                 "(last in %s)", when, n, last ? last : "?");
}

static const char *site_name(int i, char *buf, size_t cap)
{
    if (i < 0)
        snprintf(buf, cap, "(none)");
    else
        snprintf(buf, cap, "%s@%s", accel__fault_site_kind((unsigned)i),
                 accel__fault_site_func((unsigned)i));
    return buf;
}

#define TRACE_CAP 4096
static int trace_a[TRACE_CAP], trace_b[TRACE_CAP];

/*
 * The sweep over every fault site (runtime/fault.c).
 *  1. Two traced runs (nothing fails) must hit the same sites in the same
 *     order off the worker threads: the k-th hit is the same site every run.
 *  2. For each k, the k-th such hit fails; it must be trace[k].
 *  3. Sites hit only on workers (ops' allocations, lazy buckets, CUDA
 *     work) are swept apiece: the k-th hit of that site fails, k < 4.
 * The sites reached must be exactly the list (its CUDA sites only where a
 * device is usable); the test prints each with its failure count.
 */
Test(faults, site_sweep, .timeout = 300)
{
    bool cuda = cuda_usable_now();
    unsigned ns = accel__fault_nsites();
    long fails[64] = {0};
    uint64_t reached = 0;
    char nm[96];

    accel__fault_arm_trace();
    scenario("trace 1", cuda);
    long n = accel__fault_disarm();
    check_no_unknown("trace 1");
    reached |= accel__fault_reached();
    cr_assert_leq(n, TRACE_CAP);
    size_t na = accel__fault_trace(trace_a, TRACE_CAP);
    accel__fault_arm_trace();
    scenario("trace 2", cuda);
    cr_assert_eq(accel__fault_disarm(), n, "the hit count changed between runs");
    size_t nb = accel__fault_trace(trace_b, TRACE_CAP);
    cr_assert_eq(na, nb);
    for (size_t k = 0; k < na; k++)
        cr_assert_eq(trace_a[k], trace_b[k],
                     "hit %zu: %s, then %s: the sweep is not deterministic", k,
                     site_name(trace_a[k], nm, sizeof(nm)),
                     site_name(trace_b[k], nm + 48, 48));
    cr_assert_gt(n, 5, "the hook saw too few hits (%ld)", n);

    for (long k = 0; k < n; k++) {
        char when[48];
        snprintf(when, sizeof(when), "hit %ld", k);
        accel__fault_arm_nth(k);
        scenario(when, cuda);
        accel__fault_disarm();
        check_no_unknown(when);
        int f = accel__fault_failed_site();
        cr_assert_eq(f, trace_a[k], "%s failed %s, the trace has %s", when,
                     site_name(f, nm, sizeof(nm)),
                     site_name(trace_a[k], nm + 48, 48));
        fails[f]++;
        reached |= accel__fault_reached();
    }

    for (unsigned i = 0; i < ns; i++) {
        if (!accel__fault_site_worker(i) || (accel__fault_site_cuda(i) && !cuda))
            continue;
        for (long k = 0; k < 4; k++) {
            char when[128];
            snprintf(when, sizeof(when), "%s #%ld",
                     site_name((int)i, nm, sizeof(nm)), k);
            accel__fault_arm_site(i, k);
            scenario(when, cuda);
            accel__fault_disarm();
            check_no_unknown(when);
            reached |= accel__fault_reached();
            if (accel__fault_failed_site() != (int)i)
                break; /* fewer than k + 1 hits */
            fails[i]++;
        }
    }

    uint64_t want = 0;
    for (unsigned i = 0; i < ns; i++) {
        bool expect = !accel__fault_site_cuda(i) || cuda;
        if (expect)
            want |= 1ull << i;
        printf("fault site %-40s %s, failed %ld time(s)\n",
               site_name((int)i, nm, sizeof(nm)),
               (reached >> i) & 1 ? "reached" : expect ? "NOT REACHED"
                                                         : "skipped (no device)",
               fails[i]);
    }
    fflush(stdout);
    for (unsigned i = 0; i < ns; i++) {
        if ((want >> i) & 1) {
            cr_expect((reached >> i) & 1, "site %s never reached",
                      site_name((int)i, nm, sizeof(nm)));
            cr_expect_gt(fails[i], 0, "site %s never failed",
                         site_name((int)i, nm, sizeof(nm)));
        }
    }
    cr_assert_eq(reached, want, "sites reached %#" PRIx64 ", list %#" PRIx64,
                 reached, want);
}

/* Ops allocating on the workers while the k-th of their allocations
 * fails: statuses only, many times. */
Test(faults, alloc_fail_during_ops, .timeout = 120)
{
    int cpu_alloc_site = -1;
    for (unsigned i = 0; i < accel__fault_nsites(); i++)
        if (!strcmp(accel__fault_site_kind(i), "alloc") &&
            !strcmp(accel__fault_site_func(i), "cpu_alloc"))
            cpu_alloc_site = (int)i;
    cr_assert_geq(cpu_alloc_site, 0);
    uint64_t nomem = 0;
    bool cpu = false; /* the CUDA stand-in's sessions never reach the site */
    for (long k = 0; k < 60; k++) {
        accel_runtime *rt;
        accel_runtime_config rcfg = {.workers = 2};
        cr_assert_eq(accel_runtime_create(&rcfg, &rt), ACCEL_OK);
        accel_session *s;
        accel_session_config cfg = {.id = "w"};
        cr_assert_eq(accel_session_open(rt, &cfg, &s), ACCEL_OK);
        if (accel_session_backend(s) == ACCEL_BACKEND_CPU)
            cpu = true;
        counters c;
        memset(&c, 0, sizeof(c));
        accel__fault_arm_site((unsigned)cpu_alloc_site, k % 7);
        unit_step("50 allocating ops and the close, an allocation failing");
        for (int n = 0; n < 50; n++) {
            accel_op op = {alloc_op, count_done, &c};
            cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
        }
        cr_assert_eq(accel_session_close(s, k % 2), ACCEL_OK);
        accel_session_stats st;
        accel_session_get_stats(s, &st);
        cr_assert_eq(st.completed + st.cancelled, 50);
        cr_assert_eq(st.failed, 0);
        cr_assert_eq(atomic_load(&c.dones), 50);
        cr_assert_eq(atomic_load(&c.bad), st.cancelled); /* ECLOSED only */
        cr_assert_eq(atomic_load(&c.ran), st.completed);
        cr_assert_eq(atomic_load(&c.kept), 0,
                     "%llu failed allocations kept their budget charge",
                     (unsigned long long)atomic_load(&c.kept));
        nomem += atomic_load(&c.nomem);
        accel_session_release(s);
        accel__fault_disarm();
        cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    }
    if (cpu)
        cr_assert_gt(nomem, 0, "no allocation failed: the site was never armed");
    assert_no_leaks("alloc_fail_during_ops");
}

/* ------------------------------------------------------- isolation */

typedef struct sess_ctr {
    _Atomic uint64_t accepted, dones, ok, failed, canceled, ebudget;
    int64_t budget;
    int fail_every; /* 0: never fails */
    bool hoard;     /* keeps a chunk every 3rd op: runs out mid-run */
} sess_ctr;

static int iso_op(accel_ctx *ctx, void *arg)
{
    sess_ctr *c = arg;
    /* budget: take a chunk and keep it (mid-run exhaustion) every 3rd op */
    void *p;
    int rc = accel_ctx_alloc(ctx, 64, &p);
    if (rc == ACCEL_EBUDGET)
        atomic_fetch_add(&c->ebudget, 1);
    else if (rc != ACCEL_OK)
        return 98;
    else if (!c->hoard || atomic_load(&c->dones) % 3 != 0)
        accel_ctx_free(ctx, p);
    int64_t used = accel_session_memory_used(accel_ctx_session(ctx));
    if (used < 0 || (c->budget && used > c->budget))
        return 97;
    if (c->fail_every && atomic_load(&c->dones) % (uint64_t)c->fail_every == 0)
        return ACCEL_EBACKEND; /* the "backend" failed this op */
    return 0;
}

static void iso_done(void *arg, int status)
{
    sess_ctr *c = arg;
    atomic_fetch_add(&c->dones, 1);
    if (status == 0)
        atomic_fetch_add(&c->ok, 1);
    else if (status == ACCEL_ECLOSED)
        atomic_fetch_add(&c->canceled, 1);
    else
        atomic_fetch_add(&c->failed, 1);
}

#define ISO_N 6 /* 0 failing, 1 budget-starved, 2 ring full, 3 closed; 4,5 bystanders */
static accel_session *iso_s[ISO_N];
static sess_ctr iso_c[ISO_N];
static _Atomic int iso_stop;
static _Atomic uint64_t iso_bad_status;

static void *iso_producer(void *arg)
{
    uintptr_t me = (uintptr_t)arg;
    uint64_t n = 0;
    while (!atomic_load(&iso_stop)) {
        int i = (int)((n++ + me) % ISO_N);
        accel_op op = {iso_op, iso_done, &iso_c[i]};
        int64_t to = i == 2 ? ACCEL_NO_WAIT : 1000000;
        int rc = accel_submit(iso_s[i], &op, to);
        if (rc == ACCEL_OK)
            atomic_fetch_add(&iso_c[i].accepted, 1);
        else if (!(rc == ACCEL_EAGAIN || rc == ACCEL_ETIMEDOUT ||
                   (rc == ACCEL_ECLOSED && i == 3)))
            atomic_fetch_add(&iso_bad_status, 1);
    }
    return NULL;
}

Test(faults, targeted_sessions_do_not_touch_others, .timeout = 60)
{
    accel_runtime *rt;
    accel_runtime_config rcfg = {.workers = 2};
    cr_assert_eq(accel_runtime_create(&rcfg, &rt), ACCEL_OK);
    memset(iso_c, 0, sizeof(iso_c));
    atomic_store(&iso_stop, 0);
    atomic_store(&iso_bad_status, 0);
    for (int i = 0; i < ISO_N; i++) {
        char id[8];
        snprintf(id, sizeof(id), "iso%d", i);
        iso_c[i].budget = i == 1 ? 1000 : 1 << 20;
        iso_c[i].fail_every = i == 0 ? 2 : 0;
        iso_c[i].hoard = i == 1;
        accel_session_config cfg = {.id = id,
                                    .memory_budget = iso_c[i].budget,
                                    .queue_depth = i == 2 ? 2 : 256,
                                    .priority = i == 2 ? 1000 : 5};
        cr_assert_eq(accel_session_open(rt, &cfg, &iso_s[i]), ACCEL_OK);
    }
    pthread_t t[3];
    unit_step("producers beside the targeted sessions; the CANCEL close");
    for (uintptr_t i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, iso_producer, (void *)i);
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    cr_assert_eq(accel_session_close(iso_s[3], ACCEL_CLOSE_CANCEL), ACCEL_OK);
    nanosleep(&ts, NULL);
    atomic_store(&iso_stop, 1);
    unit_step("the producers return; sync of every session");
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < ISO_N; i++)
        cr_assert_eq(accel_session_sync(iso_s[i], ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(atomic_load(&iso_bad_status), 0, "undocumented submit status");

    for (int i = 0; i < ISO_N; i++) {
        sess_ctr *c = &iso_c[i];
        accel_session_stats st;
        cr_assert_eq(accel_session_get_stats(iso_s[i], &st), ACCEL_OK);
        cr_assert_eq(atomic_load(&c->dones), atomic_load(&c->accepted),
                     "session %d: %" PRIu64 " of %" PRIu64 " done", i,
                     atomic_load(&c->dones), atomic_load(&c->accepted));
        cr_assert_eq(st.submitted, atomic_load(&c->accepted));
        cr_assert_eq(st.completed + st.failed + st.cancelled, st.submitted);
        cr_assert_eq(st.failed, atomic_load(&c->failed));
        cr_assert(st.memory_used >= 0 && st.memory_used <= c->budget);
        if (i >= 4) { /* bystanders: 100% of their ops succeeded */
            cr_assert_gt(atomic_load(&c->accepted), 0);
            cr_assert_eq(atomic_load(&c->ok), atomic_load(&c->accepted),
                         "bystander %d: %" PRIu64 " ok of %" PRIu64, i,
                         atomic_load(&c->ok), atomic_load(&c->accepted));
            cr_assert_eq(atomic_load(&c->ebudget), 0);
        }
    }
    cr_assert_gt(atomic_load(&iso_c[0].failed), 0, "failing session never failed");
    cr_assert_gt(atomic_load(&iso_c[1].ebudget), 0, "budget never ran out");
    for (int i = 0; i < ISO_N; i++)
        accel_session_release(iso_s[i]);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    assert_no_leaks("isolation");
}
