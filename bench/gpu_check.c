/*
 * accel_gpu_check: the device figures of scripts/gpu-check.sh, one line per
 * figure ("gpu-check <figure> key=value ..."). Exit 77 without a usable
 * device. --smoke: a ~2 s run (CI: it only proves the program starts).
 *
 *   launch     host cost of an empty kernel launch; launch+sync round trip
 *   event      cudaEventRecord, cudaEventQuery on a fired event
 *   alloc      pool alloc+free (stream-ordered) vs cudaMalloc+cudaFree
 *   throughput 17 CUDA sessions, empty ops (host-only and one empty
 *              kernel), 1 and 4 submitting threads
 *   node       weight-100 session's ~20 us kernels vs weight-1 sessions
 *              flooding kernels of 50 us blocks: submit->finish latency,
 *              stream priorities off vs on, interleaved phases, same run
 *   budget     effective cap and the status at the cap
 *   batch      one CUDA session's ops one by one (a launch each) vs the
 *              same ops through a batch function (a launch per batch):
 *              ops/s, launches per op, the ratio; interleaved phases
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include <accel/accel.h>
#include <accel/cuda.h>

#include "cuda_internal.h"
#include "kernels.h"

static double scale = 1.0; /* --smoke: 0.1 */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, int e)
{
    fprintf(stderr, "gpu-check: %s failed (%d)\n", what, e);
    exit(1);
}
#define CU(x)                                                                 \
    do {                                                                      \
        cudaError_t e_ = (x);                                                 \
        if (e_ != cudaSuccess)                                                \
            die(#x, (int)e_);                                                 \
    } while (0)

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t quantile(uint64_t *v, size_t n, double q)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof(*v), cmp_u64);
    size_t i = (size_t)(q * (double)(n - 1) + 0.5);
    return v[i];
}

static unsigned iters(unsigned n)
{
    unsigned k = (unsigned)(n * scale);
    return k ? k : 1;
}

/* ---------------------------------------------------------- raw CUDA */

static void fig_launch_event(void)
{
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int i = 0; i < 1000; i++)
        CU((cudaError_t)accel_k_empty(s));
    CU(cudaStreamSynchronize(s));
    unsigned n = iters(20000);
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < n; i++)
        CU((cudaError_t)accel_k_empty(s));
    uint64_t t1 = now_ns();
    CU(cudaStreamSynchronize(s));
    uint64_t t2 = now_ns();
    unsigned m = iters(2000);
    uint64_t *rt = malloc(m * sizeof(*rt));
    for (unsigned i = 0; i < m; i++) {
        uint64_t a = now_ns();
        CU((cudaError_t)accel_k_empty(s));
        CU(cudaStreamSynchronize(s));
        rt[i] = now_ns() - a;
    }
    printf("gpu-check launch enqueue_ns=%.0f drain_ns_per_kernel=%.0f "
           "launch_sync_p50_ns=%llu n=%u\n",
           (double)(t1 - t0) / n, (double)(t2 - t0) / n,
           (unsigned long long)quantile(rt, m, 0.5), n);

    cudaEvent_t ev;
    CU(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    t0 = now_ns();
    for (unsigned i = 0; i < n; i++)
        CU(cudaEventRecord(ev, s));
    t1 = now_ns();
    CU(cudaStreamSynchronize(s));
    uint64_t q0 = now_ns();
    for (unsigned i = 0; i < n; i++)
        CU(cudaEventQuery(ev));
    uint64_t q1 = now_ns();
    /* Record + poll until fired after an empty kernel: the completion
     * latency a poll loop sees. */
    for (unsigned i = 0; i < m; i++) {
        uint64_t a = now_ns();
        CU((cudaError_t)accel_k_empty(s));
        CU(cudaEventRecord(ev, s));
        while (cudaEventQuery(ev) == cudaErrorNotReady)
            ;
        rt[i] = now_ns() - a;
    }
    printf("gpu-check event record_ns=%.0f query_fired_ns=%.0f "
           "launch_record_poll_p50_ns=%llu\n",
           (double)(t1 - t0) / n, (double)(q1 - q0) / n,
           (unsigned long long)quantile(rt, m, 0.5));
    free(rt);
    CU(cudaEventDestroy(ev));
    CU(cudaStreamDestroy(s));
}

static void fig_alloc(void)
{
    int dev;
    CU(cudaGetDevice(&dev));
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    struct cudaMemPoolProps props = {0};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    cudaMemPool_t pool;
    CU(cudaMemPoolCreate(&pool, &props));
    uint64_t keep = 64ull << 20;
    CU(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    const size_t sz = 1 << 20;
    enum { REPS = 5 };
    uint64_t pool_ns[REPS], malloc_ns[REPS];
    unsigned np = iters(5000), nm = iters(500);
    for (int r = 0; r < REPS; r++) { /* interleaved: A B A B */
        void *p;
        uint64_t t0 = now_ns();
        for (unsigned i = 0; i < np; i++) {
            CU(cudaMallocFromPoolAsync(&p, sz, pool, s));
            CU(cudaFreeAsync(p, s));
        }
        CU(cudaStreamSynchronize(s));
        pool_ns[r] = (now_ns() - t0) / np;
        t0 = now_ns();
        for (unsigned i = 0; i < nm; i++) {
            CU(cudaMalloc(&p, sz));
            CU(cudaFree(p));
        }
        malloc_ns[r] = (now_ns() - t0) / nm;
    }
    uint64_t pm = quantile(pool_ns, REPS, 0.5), mm = quantile(malloc_ns, REPS, 0.5);
    printf("gpu-check alloc bytes=%zu pool_alloc_free_ns=%llu "
           "cudaMalloc_free_ns=%llu ratio=%.1f\n",
           sz, (unsigned long long)pm, (unsigned long long)mm,
           pm ? (double)mm / (double)pm : 0.0);
    CU(cudaMemPoolDestroy(pool));
    CU(cudaStreamDestroy(s));
}

/* ---------------------------------------------------------- accel */

static int op_host_empty(accel_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    return 0;
}

static int op_kernel_empty(accel_ctx *ctx, void *arg)
{
    (void)arg;
    return accel_k_empty(accel_ctx_cuda_stream(ctx));
}

typedef struct tp_arg {
    accel_session **s;
    int ns, first;
    accel_op_fn fn;
    uint64_t deadline, count;
} tp_arg;

static void *tp_thread(void *p)
{
    tp_arg *a = p;
    accel_op op = {a->fn, NULL, NULL};
    int k = a->first;
    while (now_ns() < a->deadline) {
        for (int j = 0; j < 64; j++) {
            if (accel_submit(a->s[k], &op, ACCEL_FOREVER) != ACCEL_OK)
                die("submit", 0);
            k = (k + 1) % a->ns;
            a->count++;
        }
    }
    return NULL;
}

static void fig_throughput(accel_runtime *rt)
{
    enum { NS = 17 };
    accel_session *s[NS];
    for (int k = 0; k < NS; k++) {
        char id[16];
        snprintf(id, sizeof(id), "tp%d", k);
        accel_session_config c = {.id = id, .backend = ACCEL_BACKEND_CUDA};
        if (accel_session_open(rt, &c, &s[k]) != ACCEL_OK)
            die("open", 0);
    }
    const struct {
        const char *name;
        accel_op_fn fn;
    } kinds[] = {{"host_empty", op_host_empty}, {"kernel_empty", op_kernel_empty}};
    for (unsigned ki = 0; ki < 2; ki++)
        for (int threads = 1; threads <= 4; threads += 3) {
            tp_arg a[4];
            pthread_t th[4];
            uint64_t t0 = now_ns();
            uint64_t dl = t0 + (uint64_t)(2e9 * scale);
            for (int t = 0; t < threads; t++) {
                a[t] = (tp_arg){s, NS, t * 4, kinds[ki].fn, dl, 0};
                pthread_create(&th[t], NULL, tp_thread, &a[t]);
            }
            uint64_t total = 0;
            for (int t = 0; t < threads; t++) {
                pthread_join(th[t], NULL);
                total += a[t].count;
            }
            for (int k = 0; k < NS; k++)
                accel_session_sync(s[k], ACCEL_FOREVER);
            double secs = (double)(now_ns() - t0) / 1e9;
            printf("gpu-check throughput sessions=%d op=%s threads=%d "
                   "ops_per_s=%.0f ops=%llu\n",
                   NS, kinds[ki].name, threads, (double)total / secs,
                   (unsigned long long)total);
        }
    for (int k = 0; k < NS; k++)
        accel_session_release(s[k]);
}

/* ---------------------------------------------------------- node */

typedef struct spin_arg {
    unsigned blocks, threads;
    uint64_t ns;
} spin_arg;

static int op_spin(accel_ctx *ctx, void *arg)
{
    spin_arg *a = arg;
    return accel_k_spin(accel_ctx_cuda_stream(ctx), a->blocks, a->threads,
                        a->ns);
}

typedef struct flood_arg {
    accel_session *s;
    spin_arg *spin;
    _Atomic int *stop;
    uint64_t kernels;
} flood_arg;

static void *flood_thread(void *p)
{
    flood_arg *f = p;
    accel_op op = {op_spin, NULL, f->spin};
    while (!atomic_load_explicit(f->stop, memory_order_relaxed)) {
        if (accel_submit(f->s, &op, 50 * 1000000ll) == ACCEL_OK)
            f->kernels++;
    }
    return NULL;
}

typedef struct lat_op {
    spin_arg spin;
    uint64_t submit, finish;
    _Atomic int done;
} lat_op;

static int op_short(accel_ctx *ctx, void *arg)
{
    return op_spin(ctx, &((lat_op *)arg)->spin);
}

static void lat_done(void *arg, int status)
{
    lat_op *l = arg;
    l->finish = now_ns();
    if (status != 0)
        die("short op", status);
    /* release: finish is read by the submitter after its acquire. */
    atomic_store_explicit(&l->done, 1, memory_order_release);
}

/* One phase: NF weight-1 sessions flood kernels of 4 waves of 50 us blocks
 * (queue depth 64, in-flight cap 8 each); a weight-100 session runs one
 * ~20 us kernel at a time, 500 us apart. */
static void node_phase(accel_runtime *rt, int prio_on, uint64_t *lat,
                       size_t *nlat, size_t cap, uint64_t *flood_kernels,
                       double secs)
{
    enum { NF = 8 };
    accel__cuda_set_priorities(rt, prio_on);
    unsigned resident = accel_k_spin_resident_blocks(128);
    if (!resident)
        die("occupancy", 0);
    static spin_arg longk;
    longk = (spin_arg){resident * 4, 128, 50000};
    accel_session *hi, *lo[NF];
    accel_session_config c = {.id = "hi", .backend = ACCEL_BACKEND_CUDA,
                              .priority = ACCEL_PRIORITY_CRITICAL};
    if (accel_session_open(rt, &c, &hi) != ACCEL_OK)
        die("open hi", 0);
    _Atomic int stop = 0;
    flood_arg fa[NF];
    pthread_t th[NF];
    for (int k = 0; k < NF; k++) {
        char id[16];
        snprintf(id, sizeof(id), "lo%d", k);
        accel_session_config lc = {.id = id, .backend = ACCEL_BACKEND_CUDA,
                                   .priority = ACCEL_PRIORITY_LOW,
                                   .queue_depth = 64};
        if (accel_session_open(rt, &lc, &lo[k]) != ACCEL_OK)
            die("open lo", 0);
        fa[k] = (flood_arg){lo[k], &longk, &stop, 0};
        pthread_create(&th[k], NULL, flood_thread, &fa[k]);
    }
    usleep(200000); /* let the flood fill the device */
    uint64_t end = now_ns() + (uint64_t)(secs * 1e9);
    static lat_op l;
    l.spin = (spin_arg){1, 32, 20000};
    while (now_ns() < end && *nlat < cap) {
        atomic_store_explicit(&l.done, 0, memory_order_relaxed);
        l.submit = now_ns();
        accel_op op = {op_short, lat_done, &l};
        if (accel_submit(hi, &op, ACCEL_FOREVER) != ACCEL_OK)
            die("submit hi", 0);
        /* acquire: pairs with the release in lat_done. */
        while (!atomic_load_explicit(&l.done, memory_order_acquire))
            sched_yield();
        lat[(*nlat)++] = l.finish - l.submit;
        usleep(500);
    }
    atomic_store_explicit(&stop, 1, memory_order_relaxed);
    for (int k = 0; k < NF; k++) {
        pthread_join(th[k], NULL);
        *flood_kernels += fa[k].kernels;
        accel_session_close(lo[k], ACCEL_CLOSE_CANCEL);
        accel_session_release(lo[k]);
    }
    accel_session_release(hi);
}

static void fig_node(accel_runtime *rt)
{
    enum { CAP = 100000 };
    static uint64_t lat[2][CAP];
    size_t n[2] = {0, 0};
    uint64_t kern[2] = {0, 0};
    double secs = 6.0 * scale;
    for (int rep = 0; rep < 4; rep++) { /* off on off on */
        int on = rep & 1;
        node_phase(rt, on, lat[on], &n[on], CAP, &kern[on], secs);
    }
    accel__cuda_set_priorities(rt, 1);
    for (int on = 0; on < 2; on++)
        printf("gpu-check node priorities=%s short_p50_us=%.1f "
               "short_p99_us=%.1f samples=%zu flood_kernels_per_s=%.0f\n",
               on ? "on" : "off", quantile(lat[on], n[on], 0.5) / 1e3,
               quantile(lat[on], n[on], 0.99) / 1e3, n[on],
               (double)kern[on] / (2 * secs));
}

/* ---------------------------------------------------------- budget */

typedef struct budget_arg {
    size_t piece;
    int count, status;
    int64_t used;
} budget_arg;

static int op_fill(accel_ctx *ctx, void *arg)
{
    budget_arg *b = arg;
    void *p;
    for (;;) {
        int rc = accel_ctx_alloc(ctx, b->piece, &p);
        if (rc != ACCEL_OK) {
            b->status = rc;
            break;
        }
        b->count++;
    }
    b->used = accel_session_memory_used(accel_ctx_session(ctx));
    return 0; /* left allocated: the close frees it */
}

static void fig_budget(accel_runtime *rt)
{
    const int64_t budget = (100ll << 20) + 12345;
    const size_t pieces[] = {1u << 20, 4097, 1};
    for (unsigned i = 0; i < 3; i++) {
        accel_session *s;
        char id[16];
        snprintf(id, sizeof(id), "bud%u", i);
        int64_t cap = pieces[i] == 1 ? (1 << 20) : budget;
        accel_session_config c = {.id = id, .backend = ACCEL_BACKEND_CUDA,
                                  .memory_budget = cap};
        if (accel_session_open(rt, &c, &s) != ACCEL_OK)
            die("open budget", 0);
        budget_arg b = {.piece = pieces[i]};
        accel_submit_wait(s, op_fill, &b, ACCEL_FOREVER);
        printf("gpu-check budget cap=%lld piece=%zu allocations=%d "
               "effective_bytes=%llu charged=%lld status_at_cap=%s\n",
               (long long)cap, pieces[i], b.count,
               (unsigned long long)b.count * pieces[i], (long long)b.used,
               accel_strerror(b.status));
        accel_session_release(s);
    }
}

/* ---------------------------------------------------------- batch */

static _Atomic uint64_t batch_calls;

static void batch_empty(accel_ctx *ctx, void *const *args, uint32_t n,
                        int *status, void *user)
{
    (void)args, (void)user;
    atomic_fetch_add_explicit(&batch_calls, 1, memory_order_relaxed);
    int e = accel_k_empty(accel_ctx_cuda_stream(ctx)); /* one launch */
    for (uint32_t i = 0; i < n; i++)
        status[i] = e;
}

/* One phase: one thread submits empty-kernel ops to one session for secs,
 * then waits for them; returns ops/s, *launches the launches made. */
static double batch_phase(accel_runtime *rt, int batched, double secs,
                          uint64_t *ops, uint64_t *launches)
{
    accel_session *s;
    accel_session_config c = {.id = batched ? "batched" : "single",
                              .backend = ACCEL_BACKEND_CUDA,
                              .queue_depth = 1024};
    if (accel_session_open(rt, &c, &s) != ACCEL_OK)
        die("open batch", 0);
    accel_batch_config bc = {.fn = batch_empty, .max_ops = ACCEL_BATCH_MAX};
    if (batched && accel_session_set_batch(s, &bc) != ACCEL_OK)
        die("set_batch", 0);
    uint64_t calls0 = atomic_load_explicit(&batch_calls, memory_order_relaxed);
    accel_op op = {op_kernel_empty, NULL, NULL};
    uint64_t n = 0, t0 = now_ns(), dl = t0 + (uint64_t)(secs * 1e9);
    while (now_ns() < dl)
        for (int j = 0; j < 64; j++, n++)
            if (accel_submit(s, &op, ACCEL_FOREVER) != ACCEL_OK)
                die("submit batch", 0);
    if (accel_session_sync(s, ACCEL_FOREVER) != ACCEL_OK)
        die("sync batch", 0);
    double rate = (double)n / ((double)(now_ns() - t0) / 1e9);
    accel_session_stats st;
    if (accel_session_get_stats(s, &st) != ACCEL_OK || st.failed)
        die("batch ops failed", (int)st.failed);
    *ops += n;
    *launches += batched ? atomic_load_explicit(&batch_calls,
                                                memory_order_relaxed) - calls0
                         : n;
    accel_session_release(s);
    return rate;
}

static void fig_batch(accel_runtime *rt)
{
    double rate[2] = {0, 0};
    uint64_t ops[2] = {0, 0}, launches[2] = {0, 0};
    double secs = 1.0 * scale;
    for (int rep = 0; rep < 4; rep++) { /* single batched single batched */
        int b = rep & 1;
        rate[b] += batch_phase(rt, b, secs, &ops[b], &launches[b]) / 2;
    }
    for (int b = 0; b < 2; b++)
        printf("gpu-check batch mode=%s ops_per_s=%.0f ops=%llu "
               "launches=%llu launches_per_op=%.4f\n",
               b ? "batched" : "single", rate[b], (unsigned long long)ops[b],
               (unsigned long long)launches[b],
               ops[b] ? (double)launches[b] / (double)ops[b] : 0.0);
    printf("gpu-check batch ratio ops_per_s_batched_over_single=%.2f "
           "ops_per_launch_batched=%.1f\n",
           rate[0] > 0 ? rate[1] / rate[0] : 0.0,
           launches[1] ? (double)ops[1] / (double)launches[1] : 0.0);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--smoke")) {
            scale = 0.1;
        } else if (!strcmp(argv[i], "--help")) {
            printf("usage: %s [--smoke]\n  prints one 'gpu-check <figure> "
                   "key=value...' line per figure; exit 77 without a "
                   "device\n", argv[0]);
            return 0;
        } else {
            fprintf(stderr, "unknown option %s (try --help)\n", argv[i]);
            return 2;
        }
    }
    accel_runtime *rt;
    if (accel_runtime_create(NULL, &rt) != ACCEL_OK)
        die("runtime", 0);
    int st = accel_runtime_cuda_status(rt);
    if (st != ACCEL_OK) {
        int n = 0;
        cudaError_t e = cudaGetDeviceCount(&n);
        /* 35: the driver is older than this program's CUDA runtime. */
        printf("gpu-check skipped: no usable CUDA device (%s; "
               "cudaGetDeviceCount: %d %s)\n",
               accel_strerror(st), (int)e, cudaGetErrorName(e));
        accel_runtime_destroy(rt);
        return 77;
    }
    struct cudaDeviceProp prop;
    CU(cudaGetDeviceProperties(&prop, 0));
    int least, greatest;
    CU(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    printf("gpu-check device name=\"%s\" sms=%d priorities=%d..%d\n",
           prop.name, prop.multiProcessorCount, least, greatest);
    fig_launch_event();
    fig_alloc();
    fig_throughput(rt);
    fig_node(rt);
    fig_budget(rt);
    fig_batch(rt);
    if (accel_runtime_destroy(rt) != ACCEL_OK)
        die("destroy", 0);
    return 0;
}
