/*
 * The stand-in CUDA runtime: see standin.h for what it checks and what it
 * cannot. One mutex (g.mu) guards all of the emulated device's state; the
 * device thread holds it except while a test's device function runs, so a
 * host call and a device step never interleave inside the bookkeeping.
 * Objects are never freed (a destroyed one is marked dead and kept), so a
 * use after destroy is detected instead of being undefined behaviour; they
 * stay reachable, so LSan does not count them.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "standin.h"

#define TOTAL_MEM (80ull << 30)
#define PRIO_LEAST 0
#define PRIO_GREATEST (-5)

enum { M_STREAM = 0x5354524d, M_EVENT = 0x4556454e, M_POOL = 0x504f4f4c };
enum kind { IT_FN, IT_FIRE, IT_WAIT, IT_FREE, IT_COPY, IT_SET, IT_FAULT };

struct CUevent_st {
    int magic, device, dead;
    uint64_t rec, done; /* records made / fired, in order */
    struct CUevent_st *all;
};

struct CUmemPoolHandle_st {
    int magic, device, dead;
    size_t max, used, keep;
    struct CUmemPoolHandle_st *all;
};

typedef struct alloc {
    void *p;
    size_t charge;
    struct CUmemPoolHandle_st *pool; /* NULL: host allocation */
    int freeing;                     /* a free is queued */
    struct alloc *next;
} alloc;

typedef struct item {
    struct item *next;
    enum kind kind;
    void (*fn)(void *);
    void *arg;
    int owned; /* arg is malloc'd for this item */
    const _Atomic int *gate;
    struct CUevent_st *ev;
    uint64_t seq;
    alloc *al;
    void *dst;
    const void *src;
    size_t n;
    int val;
} item;

struct CUstream_st {
    int magic, device, dead, busy, prio;
    item *head, *tail;
    struct CUstream_st *all;
};

#define NBUCKET 4096
static struct {
    pthread_mutex_t mu;
    pthread_cond_t work, idle;
    int ndev;
    uint64_t rng;
    cudaError_t sticky;
    struct CUstream_st *streams;
    struct CUevent_st *events;
    struct CUmemPoolHandle_st *pools;
    struct CUstream_st **act; /* streams not retired (alive or with work) */
    size_t nact, capact;
    alloc *bucket[NBUCKET];
    size_t used[4];
    size_t last_pool_max;
    long launches; /* kernel launches queued */
    char fail_call[64];
    int fail_n;
    cudaError_t fail_e;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER,
       .work = PTHREAD_COND_INITIALIZER,
       .idle = PTHREAD_COND_INITIALIZER};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pid_t init_pid;
static _Thread_local int tl_dev = -1;
static _Thread_local cudaError_t tl_last;

static _Noreturn void die(const char *call, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "cuda stand-in: %s: ", call);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

static void leak_report(void)
{
    pthread_mutex_lock(&g.mu);
    if (g.sticky) {
        pthread_mutex_unlock(&g.mu);
        fprintf(stderr, "cuda stand-in: context lost (%d): no leak check\n",
                (int)g.sticky);
        return;
    }
    long ns = 0, ne = 0, np = 0, na = 0, nh = 0;
    for (struct CUstream_st *s = g.streams; s; s = s->all)
        ns += !s->dead;
    for (struct CUevent_st *e = g.events; e; e = e->all)
        ne += !e->dead;
    for (struct CUmemPoolHandle_st *p = g.pools; p; p = p->all)
        np += !p->dead;
    for (int b = 0; b < NBUCKET; b++)
        for (alloc *a = g.bucket[b]; a; a = a->next)
            a->pool ? na++ : nh++;
    pthread_mutex_unlock(&g.mu);
    if (ns || ne || np || na || nh) {
        fprintf(stderr, "cuda stand-in: leaked at exit: %ld streams, %ld "
                "events, %ld pools, %ld device and %ld host allocations\n",
                ns, ne, np, na, nh);
        fflush(stderr);
        _exit(3);
    }
}

static int ready(const item *it)
{
    /* [G2] acquire: pairs with [G1] in standin_checks.c (open_gate), so
     * what the test wrote before opening is seen by the kernel. The device
     * looks again at least every millisecond: a missed kick only delays. */
    if (it->gate && !atomic_load_explicit(it->gate, memory_order_acquire))
        return 0;
    if (it->kind == IT_WAIT && it->ev->done < it->seq)
        return 0;
    return 1;
}

static void release_alloc(alloc *a)
{
    alloc **pp = &g.bucket[((uintptr_t)a->p >> 8) % NBUCKET];
    while (*pp != a)
        pp = &(*pp)->next;
    *pp = a->next;
    if (a->pool) {
        a->pool->used -= a->charge;
        g.used[a->pool->device] -= a->charge;
    }
    free(a->p);
    free(a);
}

static void retire_if_done(struct CUstream_st *s)
{
    if (!s->dead || s->head || s->busy)
        return;
    for (size_t i = 0; i < g.nact; i++)
        if (g.act[i] == s) {
            g.act[i] = g.act[--g.nact];
            return;
        }
}

static uint64_t rnd(void)
{
    g.rng ^= g.rng >> 12;
    g.rng ^= g.rng << 25;
    g.rng ^= g.rng >> 27;
    return g.rng * 0x2545F4914F6CDD1Dull;
}

/* The device: one step at a time, from a random stream whose first item
 * may run. */
static void *device_main(void *arg)
{
    (void)arg;
    struct CUstream_st **cand = NULL;
    size_t ccap = 0;
    pthread_mutex_lock(&g.mu);
    for (;;) {
        if (ccap < g.nact) {
            ccap = g.nact * 2;
            cand = realloc(cand, ccap * sizeof(*cand));
            if (!cand)
                die("device", "out of memory");
        }
        size_t n = 0;
        for (size_t i = 0; i < g.nact; i++)
            if (g.act[i]->head && ready(g.act[i]->head))
                cand[n++] = g.act[i];
        if (!n) {
            /* Gates open without telling us: look again soon. */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&g.work, &g.mu, &ts);
            continue;
        }
        struct CUstream_st *s = cand[rnd() % n];
        item *it = s->head;
        s->head = it->next;
        if (!s->head)
            s->tail = NULL;
        s->busy = 1;
        if (g.sticky) {
            /* The context is lost: queued work never runs. */
        } else {
            switch (it->kind) {
            case IT_FN:
                pthread_mutex_unlock(&g.mu);
                it->fn(it->arg);
                pthread_mutex_lock(&g.mu);
                break;
            case IT_FIRE:
                if (it->ev->done < it->seq)
                    it->ev->done = it->seq;
                break;
            case IT_WAIT:
                break;
            case IT_FREE:
                release_alloc(it->al);
                break;
            case IT_COPY:
                memmove(it->dst, it->src, it->n);
                break;
            case IT_SET:
                memset(it->dst, it->val, it->n);
                break;
            case IT_FAULT:
                g.sticky = cudaErrorIllegalAddress;
                break;
            }
        }
        if (it->owned)
            free(it->arg);
        free(it);
        s->busy = 0;
        retire_if_done(s);
        pthread_cond_broadcast(&g.idle);
    }
    return NULL;
}

static void init(void)
{
    const char *d = getenv("ACCEL_STANDIN_DEVICES");
    g.ndev = d ? atoi(d) : 1;
    if (g.ndev < 1 || g.ndev > 4)
        g.ndev = 1;
    const char *sd = getenv("ACCEL_STANDIN_SEED");
    g.rng = sd ? strtoull(sd, NULL, 0) : (uint64_t)time(NULL) ^ (uint64_t)getpid();
    if (!g.rng)
        g.rng = 1;
    fprintf(stderr, "cuda stand-in: %d device(s), ACCEL_STANDIN_SEED=%llu\n",
            g.ndev, (unsigned long long)g.rng);
    init_pid = getpid();
    pthread_t t;
    if (pthread_create(&t, NULL, device_main, NULL) != 0)
        die("init", "cannot start the device thread");
    pthread_detach(t);
    atexit(leak_report);
}

/* Every call but the device-independent ones: the thread must have set a
 * device, and the call may be armed to fail. Returns with g.mu held. */
static cudaError_t enter(const char *call, int need_dev)
{
    pthread_once(&once, init);
    if (getpid() != init_pid)
        die(call, "called in a fork child of the process that initialised "
            "CUDA (CUDA cannot be used there)");
    if (need_dev && tl_dev < 0)
        die(call, "called from a thread that never called cudaSetDevice");
    pthread_mutex_lock(&g.mu);
    if (g.fail_n > 0 && !strcmp(g.fail_call, call)) {
        g.fail_n--;
        return g.fail_e;
    }
    return g.sticky;
}

static cudaError_t leave(cudaError_t e)
{
    pthread_mutex_unlock(&g.mu);
    if (e != cudaSuccess)
        tl_last = e;
    return e;
}

static void check_stream(const char *call, struct CUstream_st *s)
{
    if (!s)
        die(call, "the legacy default stream (the backend never uses it)");
    if (s->magic != M_STREAM)
        die(call, "not a stream");
    if (s->dead)
        die(call, "stream %p used after cudaStreamDestroy", (void *)s);
    if (s->device != tl_dev)
        die(call, "stream of device %d used with device %d current",
            s->device, tl_dev);
}

static void check_event(const char *call, struct CUevent_st *e)
{
    if (!e || e->magic != M_EVENT)
        die(call, "not an event");
    if (e->dead)
        die(call, "event %p used after cudaEventDestroy", (void *)e);
    if (e->device != tl_dev)
        die(call, "event of device %d used with device %d current",
            e->device, tl_dev);
}

static void check_pool(const char *call, struct CUmemPoolHandle_st *p)
{
    if (!p || p->magic != M_POOL)
        die(call, "not a memory pool");
    if (p->dead)
        die(call, "pool %p used after cudaMemPoolDestroy", (void *)p);
}

static void push(struct CUstream_st *s, item *it)
{
    it->next = NULL;
    if (s->tail)
        s->tail->next = it;
    else
        s->head = it;
    s->tail = it;
    pthread_cond_signal(&g.work);
}

static item *new_item(enum kind k)
{
    item *it = calloc(1, sizeof(*it));
    if (!it)
        die("stand-in", "out of memory");
    it->kind = k;
    return it;
}

static alloc *find_alloc(void *p)
{
    for (alloc *a = g.bucket[((uintptr_t)p >> 8) % NBUCKET]; a; a = a->next)
        if (a->p == p)
            return a;
    return NULL;
}

static alloc *add_alloc(size_t bytes, struct CUmemPoolHandle_st *pool)
{
    size_t charge = (bytes + 255) & ~(size_t)255;
    alloc *a = calloc(1, sizeof(*a));
    void *p = aligned_alloc(256, charge ? charge : 256);
    if (!a || !p)
        die("stand-in", "out of host memory for an emulated allocation");
    a->p = p;
    a->charge = charge;
    a->pool = pool;
    alloc **b = &g.bucket[((uintptr_t)p >> 8) % NBUCKET];
    a->next = *b;
    *b = a;
    return a;
}

/* ------------------------------------------------------------- device */

cudaError_t cudaGetDeviceCount(int *count)
{
    cudaError_t e = enter("cudaGetDeviceCount", 0);
    if (!e)
        *count = g.ndev;
    return leave(e);
}

cudaError_t cudaSetDevice(int device)
{
    cudaError_t e = enter("cudaSetDevice", 0);
    if (!e && (device < 0 || device >= g.ndev))
        e = cudaErrorInvalidDevice;
    if (!e)
        tl_dev = device;
    return leave(e);
}

cudaError_t cudaGetDevice(int *device)
{
    pthread_once(&once, init);
    *device = tl_dev < 0 ? 0 : tl_dev;
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void)
{
    pthread_once(&once, init);
    pthread_mutex_lock(&g.mu);
    cudaError_t e = g.sticky ? g.sticky : tl_last;
    pthread_mutex_unlock(&g.mu);
    tl_last = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void)
{
    pthread_once(&once, init);
    pthread_mutex_lock(&g.mu);
    cudaError_t e = g.sticky ? g.sticky : tl_last;
    pthread_mutex_unlock(&g.mu);
    return e;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr,
                                   int device)
{
    cudaError_t e = enter("cudaDeviceGetAttribute", 0);
    if (!e && (device < 0 || device >= g.ndev))
        e = cudaErrorInvalidDevice;
    if (!e)
        *value = attr == cudaDevAttrMemoryPoolsSupported ? 1 : 0;
    return leave(e);
}

cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest)
{
    cudaError_t e = enter("cudaDeviceGetStreamPriorityRange", 1);
    if (!e) {
        *least = PRIO_LEAST;
        *greatest = PRIO_GREATEST;
    }
    return leave(e);
}

cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total)
{
    cudaError_t e = enter("cudaMemGetInfo", 1);
    if (!e) {
        *total = TOTAL_MEM;
        *free_b = TOTAL_MEM - g.used[tl_dev];
    }
    return leave(e);
}

/* ------------------------------------------------------------- streams */

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *ps, unsigned flags,
                                         int prio)
{
    cudaError_t e = enter("cudaStreamCreateWithPriority", 1);
    if (!e && flags != cudaStreamNonBlocking && flags != cudaStreamDefault)
        e = cudaErrorInvalidValue;
    if (!e) {
        struct CUstream_st *s = calloc(1, sizeof(*s));
        if (!s)
            die("cudaStreamCreateWithPriority", "out of memory");
        s->magic = M_STREAM;
        s->device = tl_dev;
        s->prio = prio < PRIO_GREATEST ? PRIO_GREATEST
                  : prio > PRIO_LEAST  ? PRIO_LEAST
                                       : prio;
        s->all = g.streams;
        g.streams = s;
        if (g.nact == g.capact) {
            g.capact = g.capact ? g.capact * 2 : 64;
            g.act = realloc(g.act, g.capact * sizeof(*g.act));
            if (!g.act)
                die("cudaStreamCreateWithPriority", "out of memory");
        }
        g.act[g.nact++] = s;
        *ps = s;
    }
    return leave(e);
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    cudaError_t e = enter("cudaStreamDestroy", 1);
    check_stream("cudaStreamDestroy", s);
    /* Queued work still runs (CUDA releases the stream after it). */
    s->dead = 1;
    retire_if_done(s);
    return leave(e);
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    cudaError_t e = enter("cudaStreamSynchronize", 1);
    check_stream("cudaStreamSynchronize", s);
    while (!e && (s->head || s->busy)) {
        pthread_cond_wait(&g.idle, &g.mu);
        e = g.sticky;
    }
    return leave(e);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t ev,
                                unsigned flags)
{
    (void)flags;
    cudaError_t e = enter("cudaStreamWaitEvent", 1);
    check_stream("cudaStreamWaitEvent", s);
    check_event("cudaStreamWaitEvent", ev);
    if (!e && ev->rec) {
        item *it = new_item(IT_WAIT);
        it->ev = ev;
        it->seq = ev->rec;
        push(s, it);
    }
    return leave(e);
}

/* -------------------------------------------------------------- events */

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *pe, unsigned flags)
{
    (void)flags;
    cudaError_t e = enter("cudaEventCreateWithFlags", 1);
    if (!e) {
        struct CUevent_st *ev = calloc(1, sizeof(*ev));
        if (!ev)
            die("cudaEventCreateWithFlags", "out of memory");
        ev->magic = M_EVENT;
        ev->device = tl_dev;
        ev->all = g.events;
        g.events = ev;
        *pe = ev;
    }
    return leave(e);
}

cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t s)
{
    cudaError_t e = enter("cudaEventRecord", 1);
    check_event("cudaEventRecord", ev);
    check_stream("cudaEventRecord", s);
    if (!e) {
        item *it = new_item(IT_FIRE);
        it->ev = ev;
        it->seq = ++ev->rec;
        push(s, it);
    }
    return leave(e);
}

cudaError_t cudaEventQuery(cudaEvent_t ev)
{
    cudaError_t e = enter("cudaEventQuery", 1);
    check_event("cudaEventQuery", ev);
    /* NotReady is kept as the thread's last error (leave): the strictest
     * reading of the API, which production code must survive. */
    if (!e && ev->done < ev->rec)
        e = cudaErrorNotReady;
    return leave(e);
}

cudaError_t cudaEventDestroy(cudaEvent_t ev)
{
    cudaError_t e = enter("cudaEventDestroy", 1);
    check_event("cudaEventDestroy", ev);
    /* A pending record still fires; nobody may look at it any more. */
    ev->dead = 1;
    return leave(e);
}

/* --------------------------------------------------------------- pools */

cudaError_t cudaMemPoolCreate(cudaMemPool_t *pp,
                              const struct cudaMemPoolProps *props)
{
    cudaError_t e = enter("cudaMemPoolCreate", 1);
    if (!e && (props->location.type != cudaMemLocationTypeDevice ||
               props->location.id < 0 || props->location.id >= g.ndev ||
               props->allocType != cudaMemAllocationTypePinned))
        e = cudaErrorInvalidValue;
    if (!e && props->maxSize > TOTAL_MEM)
        e = cudaErrorInvalidValue; /* stricter than documented: a bound
                                      past the device is a caller's bug */
    if (!e) {
        struct CUmemPoolHandle_st *p = calloc(1, sizeof(*p));
        if (!p)
            die("cudaMemPoolCreate", "out of memory");
        p->magic = M_POOL;
        p->device = props->location.id;
        p->max = props->maxSize;
        p->all = g.pools;
        g.pools = p;
        g.last_pool_max = p->max;
        *pp = p;
    }
    return leave(e);
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t p, enum cudaMemPoolAttr a,
                                    void *value)
{
    cudaError_t e = enter("cudaMemPoolSetAttribute", 1);
    check_pool("cudaMemPoolSetAttribute", p);
    if (!e && a == cudaMemPoolAttrReleaseThreshold)
        p->keep = (size_t)*(uint64_t *)value;
    return leave(e);
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t p)
{
    cudaError_t e = enter("cudaMemPoolDestroy", 1);
    check_pool("cudaMemPoolDestroy", p);
    /* Allocations still out stay valid until freed (CUDA's contract). */
    p->dead = 1;
    return leave(e);
}

cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t p,
                                    cudaStream_t s)
{
    cudaError_t e = enter("cudaMallocFromPoolAsync", 1);
    check_pool("cudaMallocFromPoolAsync", p);
    check_stream("cudaMallocFromPoolAsync", s);
    size_t charge = (size + 255) & ~(size_t)255;
    if (!e && (!size || (p->max && p->used + charge > p->max) ||
               g.used[p->device] + charge > TOTAL_MEM))
        e = size ? cudaErrorMemoryAllocation : cudaErrorInvalidValue;
    if (!e) {
        alloc *a = add_alloc(size, p);
        p->used += a->charge;
        g.used[p->device] += a->charge;
        *ptr = a->p;
    }
    return leave(e);
}

cudaError_t cudaFreeAsync(void *ptr, cudaStream_t s)
{
    cudaError_t e = enter("cudaFreeAsync", 1);
    check_stream("cudaFreeAsync", s);
    alloc *a = find_alloc(ptr);
    if (!a || !a->pool)
        die("cudaFreeAsync", "%p: unknown pointer", ptr);
    if (a->freeing)
        die("cudaFreeAsync", "%p: double free", ptr);
    a->freeing = 1;
    item *it = new_item(IT_FREE);
    it->al = a;
    push(s, it);
    return leave(e);
}

/* ---------------------------------------------------------- host memory */

cudaError_t cudaHostAlloc(void **ph, size_t size, unsigned flags)
{
    (void)flags;
    cudaError_t e = enter("cudaHostAlloc", 1);
    if (!e) {
        alloc *a = add_alloc(size, NULL);
        memset(a->p, 0, a->charge ? a->charge : 256);
        *ph = a->p;
    }
    return leave(e);
}

cudaError_t cudaHostGetDevicePointer(void **pd, void *ph, unsigned flags)
{
    (void)flags;
    cudaError_t e = enter("cudaHostGetDevicePointer", 1);
    alloc *a = find_alloc(ph);
    if (!a || a->pool)
        die("cudaHostGetDevicePointer", "%p: not from cudaHostAlloc", ph);
    *pd = ph; /* one address space */
    return leave(e);
}

cudaError_t cudaFreeHost(void *ph)
{
    cudaError_t e = enter("cudaFreeHost", 1);
    alloc *a = find_alloc(ph);
    if (!a || a->pool)
        die("cudaFreeHost", "%p: unknown or double free", ph);
    release_alloc(a);
    return leave(e);
}

static cudaError_t copy_or_set(const char *call, enum kind k, void *dst,
                               const void *src, int val, size_t n,
                               cudaStream_t s)
{
    cudaError_t e = enter(call, 1);
    check_stream(call, s);
    if (!e) {
        item *it = new_item(k);
        it->dst = dst;
        it->src = src;
        it->val = val;
        it->n = n;
        push(s, it);
    }
    return leave(e);
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t n, cudaStream_t s)
{
    return copy_or_set("cudaMemsetAsync", IT_SET, dst, NULL, value, n, s);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n,
                            enum cudaMemcpyKind kind, cudaStream_t s)
{
    (void)kind;
    return copy_or_set("cudaMemcpyAsync", IT_COPY, dst, src, 0, n, s);
}

/* ------------------------------------------------------------ test side */

static int launch(const char *call, void *stream, enum kind k,
                  void (*fn)(void *), void *arg, int owned,
                  const _Atomic int *gate)
{
    cudaError_t e = enter(call, 1);
    check_stream(call, stream);
    if (!e) {
        item *it = new_item(k);
        it->fn = fn;
        it->arg = arg;
        it->owned = owned;
        it->gate = gate;
        push(stream, it);
        if (k == IT_FN)
            g.launches++;
    } else if (owned) {
        free(arg);
    }
    return (int)leave(e);
}

int accel_standin_launch(void *stream, void (*fn)(void *), void *arg,
                         const _Atomic int *gate)
{
    return launch("kernel launch", stream, IT_FN, fn, arg, 0, gate);
}

int accel__standin_launch_owned(void *stream, void (*fn)(void *), void *arg)
{
    return launch("kernel launch", stream, IT_FN, fn, arg, 1, NULL);
}

int accel__standin_fault(void *stream)
{
    return launch("kernel launch", stream, IT_FAULT, NULL, NULL, 0, NULL);
}

int accel__standin_launch_owned_gated(void *stream, void (*fn)(void *),
                                      void *arg, const _Atomic int *gate)
{
    return launch("kernel launch", stream, IT_FN, fn, arg, 1, gate);
}

/* A launch refused at once (a grid of 0 blocks): not queued, not sticky. */
int accel__standin_bad_launch(void *stream)
{
    cudaError_t e = enter("kernel launch", 1);
    check_stream("kernel launch", stream);
    return (int)leave(e ? e : cudaErrorInvalidConfiguration);
}

long accel_standin_launches(void)
{
    pthread_mutex_lock(&g.mu);
    long n = g.launches;
    pthread_mutex_unlock(&g.mu);
    return n;
}

void accel_standin_fail_next(const char *call, int n, int e)
{
    pthread_once(&once, init);
    pthread_mutex_lock(&g.mu);
    snprintf(g.fail_call, sizeof(g.fail_call), "%s", call);
    g.fail_n = n;
    g.fail_e = (cudaError_t)e;
    pthread_mutex_unlock(&g.mu);
}

size_t accel_standin_last_pool_max(void)
{
    pthread_mutex_lock(&g.mu);
    size_t m = g.last_pool_max;
    pthread_mutex_unlock(&g.mu);
    return m;
}

void accel_standin_live(long *streams, long *events, long *pools,
                        long *allocs)
{
    long ns = 0, ne = 0, np = 0, na = 0;
    pthread_mutex_lock(&g.mu);
    for (struct CUstream_st *s = g.streams; s; s = s->all)
        ns += !s->dead;
    for (struct CUevent_st *e = g.events; e; e = e->all)
        ne += !e->dead;
    for (struct CUmemPoolHandle_st *p = g.pools; p; p = p->all)
        np += !p->dead;
    for (int b = 0; b < NBUCKET; b++)
        for (alloc *a = g.bucket[b]; a; a = a->next)
            na += a->pool != NULL;
    pthread_mutex_unlock(&g.mu);
    *streams = ns, *events = ne, *pools = np, *allocs = na;
}

size_t accel_standin_total_mem(void)
{
    return TOTAL_MEM;
}

void accel_standin_kick(void)
{
    pthread_mutex_lock(&g.mu);
    pthread_cond_broadcast(&g.work);
    pthread_mutex_unlock(&g.mu);
}
