/* Fault injection (fault.h). Only the slow path, taken while armed. */
#include "fault.h"

#include <string.h>

typedef struct site {
    const char *kind, *func;
    bool cuda, worker;
} site;

/* Every fault site of the library. Keep in step with the ACCEL__FAULT and
 * accel__malloc/calloc call sites (the sweep fails on an unlisted hit) and
 * with docs/reliability.md. */
static const site sites[] = {
    {"alloc", "accel_runtime_create", false, false},   /* runtime, workers */
    {"alloc", "accel__sched_create", false, false},
    {"mmap", "accel__sched_nodes_init", false, false}, /* calendar nodes */
    {"cds_lfht_new", "accel__table_create", false, false},
    {"pthread_create", "accel__worker_start", false, false},
    {"alloc", "session_alloc", false, false},      /* accel_session_open */
    {"alloc", "cpu_session_open", false, false},
    {"alloc", "snapshot", false, false}, /* accel_runtime_write_prometheus */
    {"alloc", "cpu_alloc", false, true},               /* accel_ctx_alloc */
    {"alloc", "accel__waitstat_record", false, true},  /* lazy buckets */
    {"alloc", "cuda_probe", true, false},
    {"cudaStreamCreate", "cuda_probe", true, false},   /* shared stream */
    {"alloc", "cuda_session_open", true, false},
    {"cudaEventCreate", "cuda_session_open", true, false},
    {"cudaStreamCreate", "cuda_session_open", true, false},
    {"cudaMemPoolCreate", "cuda_session_open", true, false},
    {"cudaMallocFromPoolAsync", "cuda_alloc", true, true},
    {"alloc", "grow", true, true},                     /* CUDA pointer map */
    {"cudaStreamCreate", "maybe_swap_stream", true, true}, /* new priority */
    {"cudaEventCreate", "maybe_swap_stream", true, true},
};
#define NSITES (sizeof(sites) / sizeof(sites[0]))
_Static_assert(NSITES <= 64, "reached is a 64-bit mask");

enum { MODE_OFF, MODE_TRACE, MODE_NTH, MODE_SITE };
#define TRACE_MAX 65536

_Atomic int accel__fault_mode;
/* All relaxed: the test arms, runs a scenario whose threads it joins or
 * syncs with, then reads; those hand-offs order the counters. */
static _Atomic long countdown, counted, unknown;
static _Atomic int target_site = -1, failed_site = -1;
static _Atomic uint64_t reached;
static const char *_Atomic unknown_last;
static int trace_buf[TRACE_MAX];
static _Atomic size_t trace_n;
static _Thread_local bool is_worker;

void accel__fault_thread_is_worker(void) { is_worker = true; }

bool accel__fault_hit_ext(const char *kind, const char *func)
{
    return accel__fault_hit(kind, func);
}

static int find(const char *kind, const char *func)
{
    for (unsigned i = 0; i < NSITES; i++)
        if (!strcmp(sites[i].kind, kind) && !strcmp(sites[i].func, func))
            return (int)i;
    return -1;
}

bool accel__fault_hit_slow(const char *kind, const char *func)
{
    int mode = atomic_load_explicit(&accel__fault_mode, memory_order_relaxed);
    int i = find(kind, func);
    if (i < 0) {
        atomic_fetch_add_explicit(&unknown, 1, memory_order_relaxed);
        atomic_store_explicit(&unknown_last, func, memory_order_relaxed);
    } else {
        atomic_fetch_or_explicit(&reached, 1ull << i, memory_order_relaxed);
    }
    bool counts = mode == MODE_SITE
                      ? i >= 0 && i == atomic_load_explicit(
                                           &target_site, memory_order_relaxed)
                      : !is_worker;
    if (!counts)
        return false;
    atomic_fetch_add_explicit(&counted, 1, memory_order_relaxed);
    if (mode != MODE_SITE) {
        size_t n = atomic_fetch_add_explicit(&trace_n, 1, memory_order_relaxed);
        if (n < TRACE_MAX)
            trace_buf[n] = i;
    }
    if (mode == MODE_TRACE)
        return false;
    if (atomic_fetch_sub_explicit(&countdown, 1, memory_order_relaxed) != 0)
        return false;
    atomic_store_explicit(&failed_site, i, memory_order_relaxed);
    return true;
}

static void arm(int mode, int site_i, long k)
{
    atomic_store_explicit(&accel__fault_mode, MODE_OFF, memory_order_relaxed);
    atomic_store_explicit(&countdown, k, memory_order_relaxed);
    atomic_store_explicit(&counted, 0, memory_order_relaxed);
    atomic_store_explicit(&unknown, 0, memory_order_relaxed);
    atomic_store_explicit(&unknown_last, NULL, memory_order_relaxed);
    atomic_store_explicit(&target_site, site_i, memory_order_relaxed);
    atomic_store_explicit(&failed_site, -1, memory_order_relaxed);
    atomic_store_explicit(&reached, 0, memory_order_relaxed);
    atomic_store_explicit(&trace_n, 0, memory_order_relaxed);
    atomic_store_explicit(&accel__fault_mode, mode, memory_order_relaxed);
}

void accel__fault_arm_trace(void) { arm(MODE_TRACE, -1, -1); }
void accel__fault_arm_nth(long k) { arm(MODE_NTH, -1, k); }
void accel__fault_arm_site(unsigned i, long k) { arm(MODE_SITE, (int)i, k); }

long accel__fault_disarm(void)
{
    atomic_store_explicit(&accel__fault_mode, MODE_OFF, memory_order_relaxed);
    return atomic_load_explicit(&counted, memory_order_relaxed);
}

unsigned accel__fault_nsites(void) { return (unsigned)NSITES; }
const char *accel__fault_site_kind(unsigned i) { return sites[i].kind; }
const char *accel__fault_site_func(unsigned i) { return sites[i].func; }
bool accel__fault_site_cuda(unsigned i) { return sites[i].cuda; }
bool accel__fault_site_worker(unsigned i) { return sites[i].worker; }

uint64_t accel__fault_reached(void)
{
    return atomic_load_explicit(&reached, memory_order_relaxed);
}

int accel__fault_failed_site(void)
{
    return atomic_load_explicit(&failed_site, memory_order_relaxed);
}

long accel__fault_unknown(const char **last)
{
    if (last)
        *last = atomic_load_explicit(&unknown_last, memory_order_relaxed);
    return atomic_load_explicit(&unknown, memory_order_relaxed);
}

size_t accel__fault_trace(int *out, size_t cap)
{
    size_t n = atomic_load_explicit(&trace_n, memory_order_relaxed);
    if (n > TRACE_MAX)
        n = TRACE_MAX;
    for (size_t j = 0; j < n && j < cap; j++)
        out[j] = trace_buf[j];
    return n;
}
