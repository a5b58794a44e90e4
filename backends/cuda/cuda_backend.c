/*
 * CUDA backend: one stream and one stream-ordered memory pool per session,
 * completion through events. See cuda_internal.h for who touches what, and
 * docs/cuda.md for the model, its costs and its failure domain.
 *
 * Failure domain: a sticky device error (a faulting kernel) poisons the
 * CUDA context of the whole process. The first API call that returns an
 * error other than cudaErrorNotReady while ops are pending marks the backend
 * failed (g_failed, process-wide): pending ops complete with ACCEL_EBACKEND,
 * later ops of CUDA sessions complete with ACCEL_EBACKEND without running,
 * and probe/session_open answer ACCEL_ENOBACKEND so new sessions go to the
 * CPU (AUTO) or are refused (explicit CUDA). CPU sessions never call CUDA.
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "alloc.h"
#include "fault.h"
#include "cuda_internal.h"

/* Process-wide detection, once (cudaGetDeviceCount initialises the
 * runtime; its answer cannot change during the process). */
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;
static int detect_count; /* usable device count, 0 when none */
static pid_t detect_pid;  /* the process that initialised CUDA */

/* relaxed everywhere: a flag read by polls and opens; what it guards is
 * the driver's own state, which the driver orders. */
static _Atomic int g_failed;
static _Atomic long live_streams, live_pools;

/* The device current on this thread, as far as we set it (-1: unknown). */
static _Thread_local int tl_device = -1;

static void detect(void)
{
    int n = 0;
    detect_pid = getpid();
    cudaError_t e = cudaGetDeviceCount(&n);
    /* cudaErrorInsufficientDriver (35, toolkit without a driver),
     * cudaErrorStubLibrary (34), cudaErrorNoDevice (100) and anything else:
     * no CUDA backend. */
    detect_count = e == cudaSuccess && n > 0 ? n : 0;
    (void)cudaGetLastError();
}

int accel__cuda_failed(void)
{
    return atomic_load_explicit(&g_failed, memory_order_relaxed);
}

static void mark_failed(void)
{
    atomic_store_explicit(&g_failed, 1, memory_order_relaxed);
}

long accel__cuda_live_streams(void)
{
    return atomic_load_explicit(&live_streams, memory_order_relaxed);
}

long accel__cuda_live_pools(void)
{
    return atomic_load_explicit(&live_pools, memory_order_relaxed);
}

static int set_device(int device)
{
    if (tl_device == device)
        return 0;
    if (cudaSetDevice(device) != cudaSuccess)
        return -1;
    tl_device = device;
    return 0;
}

/* Inside an op the user's fn may have called cudaSetDevice itself, which
 * the cache cannot see: ask CUDA (a thread-local read in the runtime) and
 * set the device again when it differs. */
static int set_device_checked(int device)
{
    int cur = -1;
    if (cudaGetDevice(&cur) != cudaSuccess || cur != device) {
        (void)cudaGetLastError();
        tl_device = -1;
    }
    return set_device(device);
}

/* A CUDA error status for a resource that could not be made: out of
 * memory is the caller's to handle (ACCEL_ENOMEM); anything else means the
 * device is unusable for this session (ACCEL_EBACKEND). Neither is
 * ACCEL_ENOBACKEND, which would send AUTO to the CPU on a resource failure
 * that is not the absence of a device. The error is cleared. */
static int open_error(cudaError_t e)
{
    (void)cudaGetLastError();
    return e == cudaErrorMemoryAllocation ? ACCEL_ENOMEM : ACCEL_EBACKEND;
}

uint64_t accel__cuda_pool_max_size(uint64_t budget, uint64_t total_mem)
{
    if (!budget || budget >= total_mem)
        return 0;
    return (budget + ACCEL__CUDA_POOL_CHUNK - 1) / ACCEL__CUDA_POOL_CHUNK *
           ACCEL__CUDA_POOL_CHUNK;
}

int accel__cuda_priority_of(const accel__cuda_rt *rt, uint32_t weight)
{
    int levels = rt->prio_least - rt->prio_greatest;
    if (levels <= 0 || !atomic_load_explicit(&rt->priorities,
                                             memory_order_relaxed))
        return rt->prio_least;
    double f = log((double)(weight ? weight : 1)) / log(100.0);
    if (f > 1.0)
        f = 1.0;
    return rt->prio_least - (int)lround(f * levels);
}

/* ---------------------------------------------------------- runtime */

static int cuda_probe(void **rt_state, const accel__backend_probe_args *args)
{
    int device = args->device;
    pthread_once(&detect_once, detect);
    /* A fork child of a process that initialised CUDA cannot use it
     * (CUDA's rule): no backend there, without calling CUDA at all. */
    if (detect_count == 0 || device < 0 || device >= detect_count ||
        accel__cuda_failed() || getpid() != detect_pid)
        return ACCEL_ENOBACKEND;
    int pools = 0, least = 0, greatest = 0;
    size_t free_mem = 0, total_mem = 0;
    if (cudaSetDevice(device) != cudaSuccess ||
        cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported,
                               device) != cudaSuccess ||
        !pools ||
        cudaDeviceGetStreamPriorityRange(&least, &greatest) != cudaSuccess ||
        cudaMemGetInfo(&free_mem, &total_mem) != cudaSuccess) {
        (void)cudaGetLastError();
        return ACCEL_ENOBACKEND;
    }
    tl_device = device;
    accel__cuda_rt *rt = accel__calloc(1, sizeof(*rt));
    if (!rt)
        return ACCEL_ENOBACKEND;
    rt->device = device;
    rt->total_mem = total_mem;
    rt->prio_least = least;
    rt->prio_greatest = greatest;
    atomic_init(&rt->priorities, 1);
    atomic_init(&rt->inflight_cap, ACCEL__CUDA_INFLIGHT_DEFAULT);
    if (ACCEL__FAULT("cudaStreamCreate") ||
        cudaStreamCreateWithPriority(&rt->shared, cudaStreamNonBlocking,
                                     least) != cudaSuccess) {
        (void)cudaGetLastError();
        accel__free(rt);
        return ACCEL_ENOBACKEND;
    }
    atomic_fetch_add_explicit(&live_streams, 1, memory_order_relaxed);
    *rt_state = rt;
    return ACCEL_OK;
}

static void cuda_runtime_fini(void *rt_state)
{
    accel__cuda_rt *rt = rt_state;
    if (!rt)
        return;
    if (set_device(rt->device) == 0) {
        (void)cudaStreamSynchronize(rt->shared);
        (void)cudaStreamDestroy(rt->shared);
    }
    (void)cudaGetLastError();
    atomic_fetch_sub_explicit(&live_streams, 1, memory_order_relaxed);
    accel__free(rt);
}

/* ---------------------------------------------------------- session */

static void destroy_events(accel__cuda_session *cs, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        (void)cudaEventDestroy(cs->ev[i]);
}

static int cuda_session_open(void *rt_state, accel_session *s,
                             const accel__backend_open_args *args,
                             void **state)
{
    (void)s;
    accel__cuda_rt *rt = rt_state;
    int device = args->device, shared = args->shared;
    uint32_t weight = args->weight;
    /* One device per runtime: the shared stream and the priority range are
     * that device's. */
    if (!rt || accel__cuda_failed() || device != rt->device)
        return ACCEL_ENOBACKEND;
    if (set_device(rt->device) != 0) {
        (void)cudaGetLastError();
        return ACCEL_ENOBACKEND;
    }
    int rc = ACCEL_ENOMEM; /* a fault-injected failure reads as this */
    cudaError_t e;
    accel__cuda_session *cs = accel__calloc_aligned(64, sizeof(*cs));
    if (!cs)
        return ACCEL_ENOMEM;
    cs->rt = rt;
    cs->device = rt->device;
    cs->shared = shared;
    atomic_init(&cs->weight, weight);
    cs->stream_weight = weight;
    cs->cap = atomic_load_explicit(&rt->inflight_cap, memory_order_relaxed);

    unsigned nev = 0;
    for (; nev < ACCEL__CUDA_INFLIGHT_MAX; nev++) {
        if (ACCEL__FAULT("cudaEventCreate"))
            goto fail;
        e = cudaEventCreateWithFlags(&cs->ev[nev], cudaEventDisableTiming);
        if (e != cudaSuccess) {
            rc = open_error(e);
            goto fail;
        }
    }

    if (shared) {
        cs->stream = rt->shared;
        cs->stream_prio = rt->prio_least;
    } else {
        cs->stream_prio = accel__cuda_priority_of(rt, weight);
        if (ACCEL__FAULT("cudaStreamCreate"))
            goto fail;
        e = cudaStreamCreateWithPriority(&cs->stream, cudaStreamNonBlocking,
                                         cs->stream_prio);
        if (e != cudaSuccess) {
            rc = open_error(e);
            goto fail;
        }
        atomic_fetch_add_explicit(&live_streams, 1, memory_order_relaxed);
    }

    struct cudaMemPoolProps props = {0};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = rt->device;
    /* Backstop: the pool itself cannot grow past the budget (rounded up to
     * the physical chunk), whatever the charge accounting says. A budget
     * at or above the device's memory (up to INT64_MAX) bounds nothing the
     * device does not: such a pool gets no maxSize (0, the device's limit)
     * rather than an absurd one. */
    props.maxSize = accel__cuda_pool_max_size((uint64_t)args->budget_cap,
                                              rt->total_mem);
    if (ACCEL__FAULT("cudaMemPoolCreate"))
        goto fail_stream;
    e = cudaMemPoolCreate(&cs->pool, &props);
    if (e != cudaSuccess) {
        rc = open_error(e);
        goto fail_stream;
    }
    /* Keep freed memory in the pool up to its maxSize (or 64 MiB when
     * it has none) instead of returning it at every synchronisation: the
     * pool is the session's, so what it keeps is at most its budget. */
    uint64_t keep = props.maxSize ? props.maxSize : (64ull << 20);
    e = cudaMemPoolSetAttribute(cs->pool, cudaMemPoolAttrReleaseThreshold,
                                &keep);
    if (e != cudaSuccess) {
        /* Not fatal to CUDA, but a session whose pool is not set up as
         * documented is not opened; the error must not outlive the call. */
        rc = open_error(e);
        (void)cudaMemPoolDestroy(cs->pool);
        goto fail_stream;
    }
    atomic_fetch_add_explicit(&live_pools, 1, memory_order_relaxed);
    *state = cs;
    return ACCEL_OK;

fail_stream:
    if (!shared) {
        (void)cudaStreamDestroy(cs->stream);
        atomic_fetch_sub_explicit(&live_streams, 1, memory_order_relaxed);
    }
fail:
    (void)cudaGetLastError();
    destroy_events(cs, nev);
    accel__free(cs);
    return rc;
}

struct drain_arg {
    cudaStream_t stream;
};

static void free_left(uintptr_t key, void *arg)
{
    struct drain_arg *d = arg;
    (void)cudaFreeAsync((void *)key, d->stream);
}

static void cuda_session_free(void *rt_state, accel_session *s, void *state)
{
    (void)rt_state, (void)s;
    accel__cuda_session *cs = state;
    /* May run on an RCU callback thread: make the device current. Every
     * op of this session has completed, so its own stream holds only the
     * frees from now on and waiting for them is short. The shared stream
     * also holds other sessions' work, maybe a kernel that never ends:
     * waiting there would stall every reclamation behind this one, and
     * runtime destroy's barrier. Nothing needs the wait: a pool destroyed
     * with frees still queued, and events destroyed before they fire, are
     * released by CUDA once the device is done with them. */
    if (set_device(cs->device) == 0) {
        struct drain_arg d = {cs->stream};
        accel__cuda_ptrmap_drain(&cs->ptrs, free_left, &d);
        if (!cs->shared)
            (void)cudaStreamSynchronize(cs->stream);
        (void)cudaMemPoolDestroy(cs->pool);
        if (!cs->shared)
            (void)cudaStreamDestroy(cs->stream);
        destroy_events(cs, ACCEL__CUDA_INFLIGHT_MAX);
    } else {
        accel__cuda_ptrmap_drain(&cs->ptrs, NULL, NULL);
    }
    (void)cudaGetLastError();
    atomic_fetch_sub_explicit(&live_pools, 1, memory_order_relaxed);
    if (!cs->shared)
        atomic_fetch_sub_explicit(&live_streams, 1, memory_order_relaxed);
    accel__free(cs);
}

/* A new priority: a new stream that waits for everything on the old one
 * (an event), so the session's device work stays in FIFO order. The old
 * stream is destroyed at once; CUDA releases it when its work is done. */
static void maybe_swap_stream(accel__cuda_session *cs)
{
    uint32_t w = atomic_load_explicit(&cs->weight, memory_order_relaxed);
    if (cs->shared || w == cs->stream_weight)
        return;
    cs->stream_weight = w;
    int prio = accel__cuda_priority_of(cs->rt, w);
    if (prio == cs->stream_prio)
        return;
    cudaStream_t ns;
    cudaEvent_t fence;
    if (ACCEL__FAULT("cudaStreamCreate") ||
        cudaStreamCreateWithPriority(&ns, cudaStreamNonBlocking, prio) !=
            cudaSuccess) {
        (void)cudaGetLastError(); /* keep the old stream */
        return;
    }
    if (ACCEL__FAULT("cudaEventCreate") ||
        cudaEventCreateWithFlags(&fence, cudaEventDisableTiming) !=
            cudaSuccess ||
        cudaEventRecord(fence, cs->stream) != cudaSuccess ||
        cudaStreamWaitEvent(ns, fence, 0) != cudaSuccess) {
        (void)cudaGetLastError();
        (void)cudaStreamDestroy(ns);
        return;
    }
    (void)cudaEventDestroy(fence); /* released once it has fired */
    /* Pending batches keep their events; events ordered on the old stream
     * still fire in order before anything on the new one. */
    (void)cudaStreamDestroy(cs->stream);
    cs->stream = ns;
    cs->stream_prio = prio;
}

static void cuda_set_priority(void *state, uint32_t weight)
{
    accel__cuda_session *cs = state;
    /* relaxed: read by the session's next op (run), "from the next visit". */
    atomic_store_explicit(&cs->weight, weight, memory_order_relaxed);
}

/* Ops run() may take now: one unit each, within the cap and the ring
 * (the ring bound follows from the cap, as batches leave
 * ACCEL__CUDA_INFLIGHT_MAX ops of it to ops run one by one; a guard). */
static uint32_t cuda_capacity(void *state)
{
    accel__cuda_session *cs = state;
    if (cs->units >= cs->cap)
        return 0;
    uint32_t room = cs->cap - cs->units;
    uint64_t free_ops = ACCEL__CUDA_OPS_MAX - (cs->tail - cs->head);
    return free_ops < room ? (uint32_t)free_ops : room;
}

/* Ops the next batch may hold: one unit, within the cap, and ops up to
 * ACCEL__CUDA_OPS_MAX - ACCEL__CUDA_INFLIGHT_MAX (the rest is for the ops
 * a visit may still run one by one, at most the cap: see capacity). */
static uint32_t cuda_batch_room(void *state)
{
    accel__cuda_session *cs = state;
    const uint64_t lim = ACCEL__CUDA_OPS_MAX - ACCEL__CUDA_INFLIGHT_MAX;
    uint64_t pend = cs->tail - cs->head;
    if (cs->units >= cs->cap || pend >= lim)
        return 0;
    return lim - pend < ACCEL_BATCH_MAX ? (uint32_t)(lim - pend)
                                        : ACCEL_BATCH_MAX;
}

static accel__cuda_pending *append(accel__cuda_session *cs, const accel_op *op)
{
    accel__cuda_pending *p = &cs->slot[cs->tail & (ACCEL__CUDA_OPS_MAX - 1)];
    p->op = *op;
    p->ran = 1;
    p->unit_end = 0;
    p->has_event = 0;
    cs->tail++;
    return p;
}

static int cuda_run(void *state, accel_ctx *ctx, const accel_op *op,
                    int *status)
{
    (void)status;
    accel__cuda_session *cs = state;
    accel__cuda_pending *p = append(cs, op);
    p->unit_end = 1;
    cs->units++;
    if (accel__cuda_failed() || set_device(cs->device) != 0) {
        p->status = ACCEL_EBACKEND; /* not run: the context is gone */
    } else {
        maybe_swap_stream(cs);
        p->status = op->fn(ctx, op->arg);
        /* fn may have made another device current: the next op and this
         * visit's poll must find the session's device again. */
        if (set_device_checked(cs->device) != 0)
            (void)cudaGetLastError();
    }
    /* Even a failed or unrun op completes through poll, so that done
     * callbacks keep the session's FIFO order. */
    return ACCEL__PENDING;
}

/* A batch (docs/batching.md): one call of the batch function, which
 * enqueues the batch's device work (one launch, typically) on the stream,
 * as an op's fn does; its n ops are one unit and complete together
 * through poll, each with its own status, once the event after them
 * fired. The ops left out when the batch formed keep their place in the
 * FIFO and their status. A gone device: fn is not called, the run ops
 * complete ACCEL_EBACKEND. */
static bool cuda_run_batch(void *state, accel_ctx *ctx,
                           const accel__backend_batch *b)
{
    accel__cuda_session *cs = state;
    bool usable = !accel__cuda_failed() && set_device(cs->device) == 0;
    bool called = false;
    if (usable && b->m) {
        maybe_swap_stream(cs);
        b->fn(ctx, b->args, b->m, b->status, b->user);
        called = true;
        /* as in run: fn may have made another device current */
        if (set_device_checked(cs->device) != 0)
            (void)cudaGetLastError();
    }
    accel__cuda_pending *p = NULL;
    for (uint32_t i = 0, j = 0; i < b->n; i++) {
        p = append(cs, &b->ops[i]);
        if (b->unrun[i]) {
            p->ran = 0;
            p->status = b->unrun[i];
        } else {
            p->status = usable ? b->status[j] : ACCEL_EBACKEND;
            j++;
        }
    }
    if (p) {
        p->unit_end = 1;
        cs->units++;
    }
    return called;
}

/* Completes the pending ops [head, upto] with status `force` (0: their
 * own status); an op left out of its batch keeps its own (it never ran). */
static void complete_through(accel__cuda_session *cs, accel_session *s,
                             uint64_t upto, int force)
{
    while (cs->head <= upto) {
        accel__cuda_pending *p =
            &cs->slot[cs->head & (ACCEL__CUDA_OPS_MAX - 1)];
        accel_op op = p->op;
        int ran = p->ran;
        int st = force && ran ? force : p->status;
        /* before done: done may submit, and run sees room */
        cs->units -= p->unit_end;
        cs->head++;
        if (ran)
            accel__op_complete(s, &op, st);
        else
            accel__op_complete_unrun(s, &op, st);
    }
}

static uint32_t cuda_poll(void *state, accel_session *s)
{
    accel__cuda_session *cs = state;
    const uint32_t mask = ACCEL__CUDA_OPS_MAX - 1;
    if (cs->head == cs->tail)
        return 0;
    int progressed = 0;
    /* Every path below calls CUDA, also the bare event query of a visit
     * that closed no batch: a worker that never ran this session's ops
     * has not made its device current yet (with cuda_device != 0 CUDA
     * would bind device 0 on this thread instead). */
    if (!accel__cuda_failed() && set_device(cs->device) != 0) {
        (void)cudaGetLastError();
        mark_failed();
    }
    if (cs->closed != cs->tail) {
        /* Close the ops appended since the last poll: one event after the
         * last one's device work. */
        accel__cuda_pending *lp = &cs->slot[(cs->tail - 1) & mask];
        lp->has_event = 1;
        lp->evi = (uint8_t)(cs->nev++ & (ACCEL__CUDA_INFLIGHT_MAX - 1));
        cs->closed = cs->tail;
        progressed = 1;
        if (accel__cuda_failed() ||
            cudaEventRecord(cs->ev[lp->evi], cs->stream) != cudaSuccess) {
            (void)cudaGetLastError();
            mark_failed();
            complete_through(cs, s, cs->tail - 1, ACCEL_EBACKEND);
            return 0;
        }
    }
    while (cs->head != cs->tail) {
        uint64_t end = cs->head;
        while (!cs->slot[end & mask].has_event)
            end++; /* every op up to `closed` is covered by an event */
        if (accel__cuda_failed()) {
            /* The context is gone (maybe set_device above failed): what
             * is pending will never be seen finished. */
            progressed = 1;
            complete_through(cs, s, cs->tail - 1, ACCEL_EBACKEND);
            break;
        }
        cudaError_t e = cudaEventQuery(cs->ev[cs->slot[end & mask].evi]);
        if (e == cudaErrorNotReady) {
            /* Not an error, but the runtime may keep it as the thread's
             * last error; the next op's fn, which reports
             * cudaGetLastError() as its launch status, would read it. */
            (void)cudaGetLastError();
            break;
        }
        progressed = 1;
        if (e != cudaSuccess) {
            /* Sticky or not, an event that cannot be waited for means the
             * device work is lost: fail the backend (see the top). */
            (void)cudaGetLastError();
            mark_failed();
            complete_through(cs, s, end, ACCEL_EBACKEND);
        } else {
            complete_through(cs, s, end, 0);
        }
    }
    uint32_t pending = (uint32_t)(cs->tail - cs->head);
    /* Nothing moved: the worker will re-queue us at once; let other
     * threads of the process run before we are polled again. */
    if (pending && !progressed && ++cs->idle_polls >= 2) {
        cs->idle_polls = 0;
        sched_yield();
    } else if (progressed) {
        cs->idle_polls = 0;
    }
    return pending;
}

/* ---------------------------------------------------------- memory */

static size_t cuda_alloc_charge(void *state, size_t bytes)
{
    (void)state;
    size_t g = 256; /* ACCEL_CUDA_ALLOC_GRANULARITY */
    if (bytes > SIZE_MAX - (g - 1))
        return SIZE_MAX;
    return (bytes + g - 1) & ~(g - 1);
}

static int cuda_alloc(void *state, accel_ctx *ctx, size_t bytes, void **out)
{
    (void)ctx;
    accel__cuda_session *cs = state;
    if (accel__cuda_failed() || set_device_checked(cs->device) != 0) {
        (void)cudaGetLastError();
        return ACCEL_EBACKEND;
    }
    void *p = NULL;
    cudaError_t e = ACCEL__FAULT("cudaMallocFromPoolAsync")
                        ? cudaErrorMemoryAllocation
                        : cudaMallocFromPoolAsync(&p, bytes, cs->pool,
                                                  cs->stream);
    if (e != cudaSuccess) {
        /* Out of memory is the caller's to handle and not sticky; any
         * other error is the device's (a sticky fault the next poll will
         * see, a lost context): not ENOMEM, which would invite a retry. */
        (void)cudaGetLastError();
        return e == cudaErrorMemoryAllocation ? ACCEL_ENOMEM : ACCEL_EBACKEND;
    }
    if (accel__cuda_ptrmap_put(&cs->ptrs, (uintptr_t)p,
                               cuda_alloc_charge(cs, bytes)) != ACCEL_OK) {
        (void)cudaFreeAsync(p, cs->stream);
        return ACCEL_ENOMEM;
    }
    *out = p;
    return ACCEL_OK;
}

static size_t cuda_free(void *state, accel_ctx *ctx, void *p)
{
    (void)ctx;
    accel__cuda_session *cs = state;
    size_t charge = 0;
    if (!accel__cuda_ptrmap_take(&cs->ptrs, (uintptr_t)p, &charge))
        return 0; /* not ours: nothing to refund, nothing freed */
    if (set_device_checked(cs->device) != 0 ||
        cudaFreeAsync(p, cs->stream) != cudaSuccess)
        (void)cudaGetLastError();
    return charge;
}

static int cuda_status(void *rt_state)
{
    if (accel__cuda_failed())
        return ACCEL_EBACKEND;
    return rt_state ? ACCEL_OK : ACCEL_ENOBACKEND;
}

static int cuda_query(void *state, int what, void *out)
{
    accel__cuda_session *cs = state;
    switch (what) {
    case ACCEL__Q_STREAM:
        *(void **)out = (void *)cs->stream;
        return ACCEL_OK;
    case ACCEL__Q_DEVICE:
        *(int *)out = cs->device;
        return ACCEL_OK;
    default:
        return ACCEL_EINVAL;
    }
}

const accel__backend_ops accel__backend_cuda = {
    .version = ACCEL__BACKEND_VERSION,
    .name = "cuda",
    .kind = ACCEL_BACKEND_CUDA,
    .flags = 0,
    .auto_rank = 2, /* AUTO prefers a usable device to the CPU */
    .probe = cuda_probe,
    .runtime_fini = cuda_runtime_fini,
    .status = cuda_status,
    .query = cuda_query,
    .session_open = cuda_session_open,
    .session_free = cuda_session_free,
    .run = cuda_run,
    .poll = cuda_poll,
    .alloc_charge = cuda_alloc_charge,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .set_priority = cuda_set_priority,
    .capacity = cuda_capacity,
    .run_batch = cuda_run_batch,
    .batch_room = cuda_batch_room,
};

