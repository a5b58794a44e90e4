/*
 * Small helpers shared by the core runtime tests (unit_ring, unit_lifecycle,
 * unit_budget, unit_submit, unit_close and the stress programs): latches,
 * naps, a blocking op, a seeded RNG.
 *
 * Nothing here asserts: Criterion assertions must run on the test's main
 * thread, so threads and ops record failures in counters that the test
 * checks afterwards. Waits poll without a deadline; the test names each
 * wait as a step of its watchdog (unit_watchdog.h, stress_watchdog.h),
 * which turns a hang into a failure that says where (no timing
 * thresholds).
 */
#ifndef ACCEL_TESTS_CORE_UTIL_H
#define ACCEL_TESTS_CORE_UTIL_H

#include <dirent.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <accel/accel.h>
#include <accel/host.h>

static inline void tu_nap_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* A stop in a test seam (a hook the runtime calls in a window the test
 * wants to act in): the first thread through it marks `in` and waits
 * until the test sets `go`; later ones pass. Reset both before use. */
typedef struct tu_seam_stop {
    _Atomic int in, go;
} tu_seam_stop;

static inline void tu_seam_stop_first(tu_seam_stop *g)
{
    if (atomic_exchange(&g->in, 1))
        return;
    while (!atomic_load(&g->go))
        tu_nap_us(100);
}

/* Waits until a thread is stopped in g. */
static inline void tu_seam_wait_in(tu_seam_stop *g)
{
    while (!atomic_load(&g->in))
        tu_nap_us(100);
}

/* This thread's CPU time in ns. */
static inline uint64_t tu_thread_cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Burns ns of this thread's CPU: work on a CPU, no wait, however long a
 * loaded machine makes it take. */
static inline void tu_burn_cpu_ns(uint64_t ns)
{
    static _Atomic uint64_t sink; /* the loop's result, kept */
    uint64_t t0 = tu_thread_cpu_ns();
    volatile uint64_t x = 0;
    while (tu_thread_cpu_ns() - t0 < ns)
        for (int i = 0; i < 1000; i++)
            x += (uint64_t)i;
    atomic_fetch_add_explicit(&sink, x, memory_order_relaxed);
}

/* A one-shot gate. acquire/release: what the opener did before opening is
 * visible to whoever passes. */
typedef struct tu_latch {
    _Atomic int open;
} tu_latch;

static inline void tu_latch_open(tu_latch *l)
{
    atomic_store_explicit(&l->open, 1, memory_order_release);
}

static inline void tu_latch_wait(tu_latch *l)
{
    while (!atomic_load_explicit(&l->open, memory_order_acquire))
        tu_nap_us(50);
}

/* Polls until *flag >= v. */
static inline void tu_wait_at_least(_Atomic int *flag, int v)
{
    while (atomic_load_explicit(flag, memory_order_acquire) < v)
        tu_nap_us(50);
}

/* An op that says it started, then blocks until its gate opens. */
typedef struct tu_blocker {
    tu_latch gate;
    _Atomic int started;
    _Atomic int finished;
    _Atomic int done_calls;
    _Atomic int done_status;
} tu_blocker;

static inline int tu_blocker_fn(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    tu_blocker *b = arg;
    atomic_fetch_add_explicit(&b->started, 1, memory_order_release);
    tu_latch_wait(&b->gate);
    atomic_fetch_add_explicit(&b->finished, 1, memory_order_release);
    return 0;
}

static inline void tu_blocker_done(void *arg, int status)
{
    tu_blocker *b = arg;
    atomic_store_explicit(&b->done_status, status, memory_order_relaxed);
    atomic_fetch_add_explicit(&b->done_calls, 1, memory_order_release);
}

static inline accel_op tu_blocker_op(tu_blocker *b)
{
    accel_op op = {.fn = tu_blocker_fn, .done = tu_blocker_done, .arg = b};
    return op;
}

/* An op that computes on its CPU from `in` until `rel` is set: it holds
 * its worker as long as a test wants, and the monitor never counts it
 * blocked. */
typedef struct tu_spin_gate {
    _Atomic int in, rel;
} tu_spin_gate;

static inline int tu_spin_gated(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    tu_spin_gate *g = arg;
    atomic_store(&g->in, 1);
    static _Atomic uint64_t sink; /* the loop's result, kept */
    uint64_t x = 0;
    while (!atomic_load_explicit(&g->rel, memory_order_relaxed))
        for (int i = 0; i < 1000; i++)
            x += (uint64_t)i;
    atomic_fetch_add_explicit(&sink, x, memory_order_relaxed);
    return 0;
}

/* A thread that closes a session and says when close returned. */
/* One op's record: how often fn and done ran, done's status and, when seq
 * is set, the order in which done ran (drawn from the shared counter).
 * Zero-initialize it before use. */
typedef struct tu_rec {
    _Atomic int fn_calls, done_calls, status, done_seq;
    _Atomic int *seq;
} tu_rec;

static inline int tu_rec_fn(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    tu_rec *r = arg;
    atomic_fetch_add(&r->fn_calls, 1);
    return 0;
}

static inline void tu_rec_done(void *arg, int status)
{
    tu_rec *r = arg;
    atomic_store(&r->status, status);
    if (r->seq)
        atomic_store(&r->done_seq, atomic_fetch_add(r->seq, 1));
    atomic_fetch_add(&r->done_calls, 1);
}

static inline accel_op tu_rec_op(tu_rec *r)
{
    accel_op op = {.fn = tu_rec_fn, .done = tu_rec_done, .arg = r};
    return op;
}

typedef struct closer_arg {
    accel_session *s;
    unsigned flags;
    int rc;
    _Atomic int returned;
} closer_arg;

static inline void *closer_main(void *p)
{
    closer_arg *a = p;
    a->rc = accel_session_close(a->s, a->flags);
    atomic_store_explicit(&a->returned, 1, memory_order_release);
    return NULL;
}

static inline accel_runtime *tu_runtime(unsigned workers)
{
    accel_runtime_config c = {.workers = workers};
    accel_runtime *rt = NULL;
    return accel_runtime_create(&c, &rt) == ACCEL_OK ? rt : NULL;
}

/* A runtime whose blocked-op monitor never counts an op blocked within a
 * test (block_detect_ns an hour, its most): for tests that hold the only
 * worker with an op that sleeps (a tu_blocker's latch, a nap) and count on
 * it staying held. With the default 1 ms the monitor detects such an op
 * blocked 1-2 ms into its sleep, while work waits, and starts an extra
 * worker that runs the queued ops in its place. */
#define TU_NO_DETECT_NS (UINT64_C(3600) * 1000000000)

static inline accel_runtime *tu_runtime_nodetect(unsigned workers)
{
    accel_runtime_config c = {.workers = workers,
                              .struct_size = sizeof(c),
                              .block_detect_ns = TU_NO_DETECT_NS};
    accel_runtime *rt = NULL;
    return accel_runtime_create(&c, &rt) == ACCEL_OK ? rt : NULL;
}

static inline accel_session *tu_open(accel_runtime *rt, const char *id,
                                     uint32_t depth, int64_t budget)
{
    accel_session_config c = {.id = id,
                              .queue_depth = depth,
                              .memory_budget = budget,
                              .backend = ACCEL_BACKEND_CPU};
    accel_session *s = NULL;
    return accel_session_open(rt, &c, &s) == ACCEL_OK ? s : NULL;
}

/* Whether rt can open CUDA sessions (a usable device, and the library
 * built with CUDA): opens and closes one under a scratch id. Tests whose
 * expectation depends on the device ask this instead of assuming none. */
static inline bool tu_cuda_usable(accel_runtime *rt)
{
    accel_session_config c = {.id = "tu-cuda-probe",
                              .backend = ACCEL_BACKEND_CUDA};
    accel_session *s = NULL;
    if (accel_session_open(rt, &c, &s) != ACCEL_OK)
        return false;
    accel_session_release(s);
    return true;
}

/* xorshift64*: seeded, per caller. */
static inline uint64_t tu_rand(uint64_t *st)
{
    uint64_t x = *st ? *st : 0x9E3779B97F4A7C15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *st = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* Seconds for a stress program: ACCEL_STRESS_SECONDS, default 2. */
static inline double tu_stress_seconds(void)
{
    const char *e = getenv("ACCEL_STRESS_SECONDS");
    double s = e ? atof(e) : 2.0;
    return s > 0 ? s : 2.0;
}

static inline double tu_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Leak check now (ASan builds): the number of leaks found, else 0.
 * Criterion ignores LeakSanitizer's report at the exit of a passed test
 * (ctest fails it on the report's text, tests/CMakeLists.txt); tests that
 * promise "no leak" at a given point call this and assert on it. */
#if defined(__SANITIZE_ADDRESS__)
#define TU_HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TU_HAVE_LSAN 1
#endif
#endif
#ifdef TU_HAVE_LSAN
int __lsan_do_recoverable_leak_check(void);
static inline int tu_leak_check(void) { return __lsan_do_recoverable_leak_check(); }
#else
static inline int tu_leak_check(void) { return 0; }
#endif

/* The scheduling state letter of a thread of this process, from
 * /proc/self/task/TID/stat ('S': asleep in a syscall, 'R': running or
 * runnable; '?' if it cannot be read). */
static inline char tu_thread_state(int tid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return '?';
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    return p && p[1] && p[2] ? p[2] : '?';
}

/* The threads of this process whose name (comm) begins with one of
 * prefixes[0..np), by tid. How many, at most max. */
static inline int tu_tids_named(const char *const *prefixes, int np,
                                int *tids, int max)
{
    int n = 0;
    char path[300], comm[32];
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < max) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof(comm), f))
            for (int i = 0; i < np; i++)
                if (strncmp(comm, prefixes[i], strlen(prefixes[i])) == 0) {
                    tids[n++] = atoi(de->d_name);
                    break;
                }
        fclose(f);
    }
    closedir(d);
    return n;
}

/* The library's threads of this process, by tid: its workers (accel-w*,
 * accel-short*), or with every_thread all of them (accel-*: the monitor
 * and extras too). How many, at most max. */
static inline int tu_accel_tids(int *tids, int max, bool every_thread)
{
    static const char *const all[] = {"accel-"};
    static const char *const workers[] = {"accel-w", "accel-short"};
    return every_thread ? tu_tids_named(all, 1, tids, max)
                        : tu_tids_named(workers, 2, tids, max);
}

#endif
