/*
 * Stress of the CUDA backend on the stand-in device (standin.h): 12 CUDA
 * sessions (every fourth on the shared stream, every third with a 64 KiB
 * budget) and one CPU session, 4 producer threads, a thread changing
 * priorities all the time, CANCEL closes in the middle of the run (the
 * session is then replaced by a new one), spinning kernels so that device
 * work is pending, with argument "fault" a faulting kernel mid-run, and
 * with "batch" the priority thread also gives CUDA sessions a batch
 * function and takes it away (a batch's ops mixed with ops run one by one,
 * in a session's FIFO and in one visit). Checks:
 *   exactly once  every accepted op's done runs once, a refused one's never
 *   FIFO          done callbacks run in acceptance order per session, and
 *                 the device log of each session is in that order
 *   cap           at most 8 launch units (ops run one by one, batches) of a
 *                 session between fn and done
 *   budget        memory_used never exceeds the budget; EBUDGET exactly
 *                 when the charge does not fit
 *   statuses      0 (ran), ACCEL_ECLOSED (canceled unrun), ACCEL_EBACKEND
 *                 (only after the fault); the CPU session is unaffected
 * At exit the stand-in checks that every stream, event, pool and device
 * allocation was released (without the fault). A watchdog names the step
 * that hung.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda_check.h"
#include "cuda_internal.h"
#include "kernels.h"
#include "standin.h"

#define NS 12
#define NPROD 4
#define PER 3000 /* ops per session entry */
#define CAP 8    /* ACCEL__CUDA_INFLIGHT_DEFAULT */
#define BUDGET (64 << 10)
#define HELD 8

/* The step the watchdog names; relaxed: producers set it concurrently and
 * the handler only needs some recent value. */
static _Atomic(const char *) step = "start";

static void set_step(const char *what)
{
    atomic_store_explicit(&step, what, memory_order_relaxed);
}
static int fault_mode, batch_mode;
static _Atomic int faulted;
static _Atomic int stop_chaos;
/* Violation counters: seq_cst, read after the producers are joined
 * (pthread_join orders every increment before the reads). */
static _Atomic long bad_once, bad_fifo, bad_cap, bad_budget, bad_status;
/* For the log line only (relaxed: read after the joins). */
static _Atomic long n_ran, n_canceled, n_failed, n_swaps, n_batch_sets;
static _Atomic long n_batches, n_batch_ops, n_big_batches;

typedef struct entry entry;

typedef struct opx {
    entry *sl;
    uint32_t seq;
    int kind; /* 0 log, 1 alloc/free, 2 spin, 3 fault, 4 cpu */
    int accepted, ran;
    int unit_end; /* last op of its unit (set when it runs) */
    _Atomic int done_count; /* read by the producer after close returned
                               (close waits for every done: orders them) */
    int status;
} opx;

struct entry {
    pthread_mutex_t mu; /* guards s against the chaos thread */
    accel_session *s;
    int k, gen, cpu;
    int no_batch; /* under mu: the chaos thread sets no batch function */
    int64_t budget;
    unsigned *count;
    uint32_t *log;
    /* Touched by fn and done, which run on the session's consumer one at a
     * time; atomic because the consumer may change between visits (the
     * runtime's hand-off orders one visit before the next). */
    _Atomic int inflight;
    _Atomic uint32_t next_done;
    void *held[HELD];
    int nheld;
    opx *ops; /* PER per generation */
};

static entry entries[NS + 1];
static accel_runtime *rt;

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "watchdog: stuck at: ";
    (void)!write(2, msg, sizeof(msg) - 1);
    const char *at = atomic_load_explicit(&step, memory_order_relaxed);
    (void)!write(2, at, strlen(at));
    (void)!write(2, "\n", 1);
    _exit(1);
}

static uint64_t rnd(uint64_t *st)
{
    *st ^= *st >> 12;
    *st ^= *st << 25;
    *st ^= *st >> 27;
    return *st * 0x2545F4914F6CDD1Dull;
}

/* One launch unit begins: at most CAP of a session in flight. */
static void unit_begin(entry *sl, opx *last)
{
    last->unit_end = 1;
    if (atomic_fetch_add(&sl->inflight, 1) + 1 > CAP)
        atomic_fetch_add(&bad_cap, 1);
}

static int work(accel_ctx *ctx, opx *o);

static int op_fn(accel_ctx *ctx, void *arg)
{
    opx *o = arg;
    o->ran = 1;
    if (o->kind == 4)
        return 0;
    unit_begin(o->sl, o);
    return work(ctx, o);
}

/* A batch: one unit, each op's work enqueued in FIFO order. */
static void batch_fn(accel_ctx *ctx, void *const *args, uint32_t n,
                     int *status, void *user)
{
    (void)user;
    opx *last = args[n - 1];
    unit_begin(last->sl, last);
    for (uint32_t i = 0; i < n; i++) {
        opx *o = args[i];
        o->ran = 1;
        status[i] = work(ctx, o);
    }
}

static int work(accel_ctx *ctx, opx *o)
{
    entry *sl = o->sl;
    void *st = accel_ctx_cuda_stream(ctx);
    switch (o->kind) {
    case 0:
        return accel_k_log_append(st, sl->count, sl->log, PER, o->seq);
    case 1: {
        /* This session's ops run one at a time: the budget is ours. */
        size_t bytes = 1 + (o->seq * 2654435761u) % 9000;
        int64_t before = accel_session_memory_used(accel_ctx_session(ctx));
        int64_t charge = (int64_t)((bytes + 255) & ~(size_t)255);
        void *p;
        int rc = accel_ctx_alloc(ctx, bytes, &p);
        int64_t after = accel_session_memory_used(accel_ctx_session(ctx));
        int fits = !sl->budget || before + charge <= sl->budget;
        if (rc == ACCEL_OK) {
            if (!fits || after != before + charge)
                atomic_fetch_add(&bad_budget, 1);
            if (sl->nheld == HELD) {
                accel_ctx_free(ctx, sl->held[0]);
                memmove(sl->held, sl->held + 1, sizeof(void *) * (HELD - 1));
                sl->nheld--;
            }
            sl->held[sl->nheld++] = p;
        } else if (rc == ACCEL_EBUDGET) {
            if (fits || after != before)
                atomic_fetch_add(&bad_budget, 1);
        } else if (!(rc == ACCEL_EBACKEND && atomic_load(&faulted))) {
            /* Before the fault nothing but EBUDGET may refuse; after it
             * the device's errors read as EBACKEND, never ENOMEM. */
            atomic_fetch_add(&bad_budget, 1);
        }
        if (sl->budget && after > sl->budget)
            atomic_fetch_add(&bad_budget, 1);
        return accel_k_empty(st);
    }
    case 2:
        return accel_k_spin(st, 1, 1, 20000);
    default:
        atomic_store(&faulted, 1);
        return accel_k_fault(st);
    }
}

static void op_done(void *arg, int status)
{
    opx *o = arg;
    entry *sl = o->sl;
    if (atomic_fetch_add(&o->done_count, 1) != 0)
        atomic_fetch_add(&bad_once, 1);
    if (o->ran && o->unit_end)
        atomic_fetch_sub(&sl->inflight, 1);
    uint32_t want = atomic_exchange(&sl->next_done, o->seq + 1);
    if (want != o->seq)
        atomic_fetch_add(&bad_fifo, 1);
    o->status = status;
    atomic_fetch_add_explicit(o->ran && status == 0 ? &n_ran
                              : status == ACCEL_ECLOSED ? &n_canceled
                                                        : &n_failed,
                              1, memory_order_relaxed);
    int ok = (o->ran && status == 0) || (!o->ran && status == ACCEL_ECLOSED) ||
             (fault_mode && !sl->cpu && status == ACCEL_EBACKEND) ||
             (o->kind == 3 && status != 0);
    if (!ok) {
        fprintf(stderr, "session %d gen %d op %u kind %d ran %d: status %d\n",
                sl->k, sl->gen, o->seq, o->kind, o->ran, status);
        atomic_fetch_add(&bad_status, 1);
    }
}

static void entry_open(entry *sl)
{
    char id[24];
    snprintf(id, sizeof(id), "s%d.%d", sl->k, sl->gen);
    accel_session_config c = {
        .id = id,
        .backend = sl->cpu ? ACCEL_BACKEND_CPU : ACCEL_BACKEND_CUDA,
        .priority = 1 + (uint32_t)(sl->k * 37 % 200),
        .flags = !sl->cpu && sl->k % 4 == 3 ? ACCEL_SESSION_SHARED_DEVICE : 0,
        .memory_budget = sl->budget,
        .queue_depth = batch_mode ? 256 : 64};
    pthread_mutex_lock(&sl->mu);
    CHECK_EQ(accel_session_open(rt, &c, &sl->s), ACCEL_OK);
    sl->no_batch = 0;
    pthread_mutex_unlock(&sl->mu);
    sl->count = calloc(1, sizeof(unsigned));
    sl->log = calloc(PER, sizeof(uint32_t));
    sl->ops = calloc(PER, sizeof(opx));
    CHECK(sl->count && sl->log && sl->ops);
    atomic_store(&sl->next_done, 0);
    atomic_store(&sl->inflight, 0);
    sl->nheld = 0;
}

static int free_held(accel_ctx *ctx, void *arg)
{
    entry *sl = arg;
    for (int i = 0; i < sl->nheld; i++)
        accel_ctx_free(ctx, sl->held[i]);
    sl->nheld = 0;
    return 0;
}

/* Closes (CANCEL or DRAIN) and checks the entry's generation. */
static void entry_close(entry *sl, unsigned flags, uint32_t submitted)
{
    if (!atomic_load(&faulted) && !flags) {
        /* free_held's arg is no opx: it must run one by one. */
        pthread_mutex_lock(&sl->mu);
        sl->no_batch = 1;
        CHECK_EQ(accel_session_set_batch(sl->s, NULL), ACCEL_OK);
        pthread_mutex_unlock(&sl->mu);
        set_step("close: freeing held memory");
        (void)accel_submit_wait(sl->s, free_held, sl, ACCEL_FOREVER);
    }
    set_step(flags ? "CANCEL close with device work pending" : "DRAIN close");
    CHECK_EQ(accel_session_close(sl->s, flags), ACCEL_OK);
    accel_session_stats st;
    CHECK_EQ(accel_session_get_stats_ex(sl->s, &st, sizeof(st)), ACCEL_OK);
    atomic_fetch_add_explicit(&n_batches, (long)st.batches, memory_order_relaxed);
    atomic_fetch_add_explicit(&n_batch_ops, (long)st.batch_ops,
                              memory_order_relaxed);
    for (int b = 5; b < ACCEL_BATCH_HIST_BUCKETS; b++) /* 32 ops or more */
        atomic_fetch_add_explicit(&n_big_batches, (long)st.batch_size_hist[b],
                                  memory_order_relaxed);
    /* close returned: every accepted op completed, done returned. */
    for (uint32_t i = 0; i < submitted; i++) {
        opx *o = &sl->ops[i];
        int n = atomic_load(&o->done_count);
        if (n != (o->accepted ? 1 : 0)) {
            fprintf(stderr, "session %d gen %d op %u: done ran %d times\n",
                    sl->k, sl->gen, i, n);
            atomic_fetch_add(&bad_once, 1);
        }
    }
    if (!sl->cpu) {
        unsigned n = *(volatile unsigned *)sl->count;
        for (unsigned i = 1; i < n && i < PER; i++)
            if (sl->log[i] <= sl->log[i - 1])
                atomic_fetch_add(&bad_fifo, 1);
        if (atomic_load(&sl->inflight) != 0)
            atomic_fetch_add(&bad_cap, 1);
    }
    pthread_mutex_lock(&sl->mu);
    accel_session_release(sl->s);
    sl->s = NULL;
    pthread_mutex_unlock(&sl->mu);
    free(sl->count);
    free(sl->log);
    free(sl->ops);
}

static void *producer(void *arg)
{
    int p = (int)(intptr_t)arg;
    uint64_t r = 0x9E3779B97F4A7C15ull * (uint64_t)(p + 1);
    for (int k = p; k <= NS; k += NPROD) {
        entry *sl = &entries[k];
        /* Two generations; the first ends with a CANCEL close at a random
         * point (not in fault mode, where a new CUDA session is refused). */
        for (int gen = 0; gen < 2; gen++) {
            uint32_t cut = gen == 0 && !fault_mode && !sl->cpu
                               ? PER / 4 + (uint32_t)(rnd(&r) % (PER / 2))
                               : PER;
            uint32_t i = 0;
            for (; i < cut; i++) {
                opx *o = &sl->ops[i];
                o->sl = sl;
                o->seq = i;
                unsigned x = (unsigned)(rnd(&r) % 16);
                o->kind = sl->cpu ? 4 : x < 2 ? 1 : x < 4 ? 2 : 0;
                if (fault_mode && k == 0 && i == PER / 2)
                    o->kind = 3;
                accel_op op = {op_fn, op_done, o};
                int rc = accel_submit(sl->s, &op, ACCEL_FOREVER);
                CHECK_EQ(rc, ACCEL_OK);
                o->accepted = 1;
            }
            if (cut < PER) {
                entry_close(sl, ACCEL_CLOSE_CANCEL, i);
                sl->gen++;
                entry_open(sl);
            } else {
                set_step("sync at the end of a generation");
                CHECK_EQ(accel_session_sync(sl->s, ACCEL_FOREVER), ACCEL_OK);
                if (gen == 1 || fault_mode) {
                    entry_close(sl, k % 2 ? ACCEL_CLOSE_CANCEL : 0, i);
                    break;
                }
                entry_close(sl, 0, i);
                sl->gen++;
                entry_open(sl);
            }
        }
    }
    return NULL;
}

static void *chaos(void *arg)
{
    (void)arg;
    uint64_t r = 12345;
    static const uint32_t w[] = {1, 3, 10, 50, 100, 1000};
    while (!atomic_load(&stop_chaos)) {
        entry *sl = &entries[rnd(&r) % NS];
        pthread_mutex_lock(&sl->mu);
        if (sl->s) {
            int rc = accel_session_set_priority(sl->s, w[rnd(&r) % 6]);
            CHECK(rc == ACCEL_OK || rc == ACCEL_ECLOSED);
            atomic_fetch_add_explicit(&n_swaps, rc == ACCEL_OK,
                                      memory_order_relaxed);
        }
        if (sl->s && batch_mode && !sl->no_batch) {
            /* on three times in four, of up to 1..256 ops */
            accel_batch_config bc = {
                .fn = batch_fn,
                .max_ops = 1 + (uint32_t)(rnd(&r) % ACCEL_BATCH_MAX)};
            int rc = accel_session_set_batch(sl->s,
                                             rnd(&r) % 4 ? &bc : NULL);
            CHECK(rc == ACCEL_OK || rc == ACCEL_ECLOSED);
            atomic_fetch_add_explicit(&n_batch_sets, rc == ACCEL_OK,
                                      memory_order_relaxed);
        }
        pthread_mutex_unlock(&sl->mu);
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    signal(SIGALRM, on_alarm);
    alarm(150);
    for (int i = 1; i < argc; i++) {
        fault_mode |= !strcmp(argv[i], "fault");
        batch_mode |= !strcmp(argv[i], "batch");
    }
    accel_runtime_config cfg = {.workers = 4};
    CHECK_EQ(accel_runtime_create(&cfg, &rt), ACCEL_OK);
    CHECK_EQ(accel_runtime_cuda_status(rt), ACCEL_OK);
    for (int k = 0; k <= NS; k++) {
        entry *sl = &entries[k];
        pthread_mutex_init(&sl->mu, NULL);
        sl->k = k;
        sl->cpu = k == NS;
        sl->budget = !sl->cpu && k % 3 == 0 ? BUDGET : 0;
        entry_open(sl);
    }
    pthread_t th[NPROD], ch;
    CHECK_EQ(pthread_create(&ch, NULL, chaos, NULL), 0);
    for (int p = 0; p < NPROD; p++)
        CHECK_EQ(pthread_create(&th[p], NULL, producer, (void *)(intptr_t)p), 0);
    for (int p = 0; p < NPROD; p++)
        pthread_join(th[p], NULL);
    atomic_store(&stop_chaos, 1);
    pthread_join(ch, NULL);
    printf("exactly-once %ld, fifo %ld, cap %ld, budget %ld, status %ld "
           "violations; fault %s\n",
           atomic_load(&bad_once), atomic_load(&bad_fifo),
           atomic_load(&bad_cap), atomic_load(&bad_budget),
           atomic_load(&bad_status), fault_mode ? "injected" : "none");
    printf("ops ran %ld, canceled unrun %ld, failed %ld; priority changes "
           "%ld, batch function changes %ld; %ld batches of %ld ops (%ld of "
           "32 ops or more)\n", atomic_load(&n_ran),
           atomic_load(&n_canceled), atomic_load(&n_failed),
           atomic_load(&n_swaps), atomic_load(&n_batch_sets),
           atomic_load(&n_batches), atomic_load(&n_batch_ops),
           atomic_load(&n_big_batches));
    if (batch_mode && !fault_mode)
        CHECK(atomic_load(&n_batches) > 0);
    CHECK_EQ(atomic_load(&bad_once), 0);
    CHECK_EQ(atomic_load(&bad_fifo), 0);
    CHECK_EQ(atomic_load(&bad_cap), 0);
    CHECK_EQ(atomic_load(&bad_budget), 0);
    CHECK_EQ(atomic_load(&bad_status), 0);
    CHECK_EQ(accel_runtime_cuda_status(rt),
             fault_mode ? ACCEL_EBACKEND : ACCEL_OK);
    set_step("runtime destroy");
    CHECK_EQ(accel_runtime_destroy(rt), ACCEL_OK);
    printf("stress%s: ok\n", fault_mode ? " (fault)" : "");
    return 0;
}
