/*
 * A session's service leaves out the time its worker sat preempted
 * (worker.c, docs/scheduler.md "Preemption"): the runtime's one worker
 * and a spinning thread are pinned to the same CPU, so the OS gives each
 * a part of it, and the session's ops burn 1 ms of their thread's CPU
 * time each (a visit of them is long enough to be measured). The
 * session's service (accel_session_stats.service_ns, what its share and
 * op cost are charged) must be under its ops' CPU time plus half of the
 * time they spent off the CPU; charged its preemption, it is about all
 * of it. A count of where the time went, not a timing threshold: the
 * test says nothing when the worker was never preempted (then it is
 * skipped as inconclusive).
 *
 * Promises: 3
 */
#define _GNU_SOURCE /* CLOCK_THREAD_CPUTIME_ID, CPU_SET */
#include <criterion/criterion.h>

#include <pthread.h>
#include <dirent.h>
#include <sched.h>
#include <time.h>

#include <accel/accel.h>

#include "core_util.h"
#include "unit_watchdog.h"

UNIT_WATCHDOG_SUITE(preempted_visits);

#define OPS 120
#define OP_CPU_NS 1000000u

static _Atomic int stop;
static _Atomic uint64_t cpu_sum, wall_sum;

static uint64_t clock_of(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Burns OP_CPU_NS of this thread's CPU time, however long that takes. */
static int burn(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    uint64_t w0 = clock_of(CLOCK_MONOTONIC), c0 = clock_of(CLOCK_THREAD_CPUTIME_ID), c;
    while ((c = clock_of(CLOCK_THREAD_CPUTIME_ID)) - c0 < OP_CPU_NS)
        ;
    atomic_fetch_add(&cpu_sum, c - c0);
    atomic_fetch_add(&wall_sum, clock_of(CLOCK_MONOTONIC) - w0);
    return 0;
}

static void *spin(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        ;
    return NULL;
}

Test(preempted_visits, service_leaves_out_preemption, .timeout = 120)
{
    cpu_set_t set;
    cr_assert_eq(sched_getaffinity(0, sizeof(set), &set), 0);
    unsigned cpu = 0;
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &set))
        cpu++;
    cr_assert_lt(cpu, CPU_SETSIZE);
    /* One worker on `cpu`; the monitor never counts it blocked (it is
     * runnable, not asleep, but an extra would run unpinned). */
    accel_runtime_config cfg = {.workers = 1,
                                .struct_size = sizeof(cfg),
                                .block_detect_ns = TU_NO_DETECT_NS,
                                .worker_cpus = &cpu,
                                .worker_cpus_count = 1};
    accel_runtime *rt;
    cr_assert_eq(accel_runtime_create(&cfg, &rt), ACCEL_OK);
    accel_session *s = tu_open(rt, "burn", 256, 0);
    cr_assert_not_null(s);
    pthread_t th;
    pthread_attr_t at;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pthread_attr_init(&at);
    cr_assert_eq(pthread_attr_setaffinity_np(&at, sizeof(one), &one), 0);
    cr_assert_eq(pthread_create(&th, &at, spin, NULL), 0);
    pthread_attr_destroy(&at);
    unit_step("submit and run the ops beside the spinner");
    for (int i = 0; i < OPS; i++)
        cr_assert_eq(accel_submit(s, &(accel_op){.fn = burn}, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    atomic_store(&stop, 1);
    pthread_join(th, NULL);
    accel_session_stats st;
    cr_assert_eq(accel_session_get_stats(s, &st), ACCEL_OK);
    uint64_t cpu_ns = atomic_load(&cpu_sum), wall = atomic_load(&wall_sum);
    uint64_t off = wall > cpu_ns ? wall - cpu_ns : 0;
    cr_log_info("ops: %llu ms on a CPU, %llu ms off it; service charged %llu ms in %llu "
                "visits",
                (unsigned long long)(cpu_ns / 1000000), (unsigned long long)(off / 1000000),
                (unsigned long long)(st.service_ns / 1000000),
                (unsigned long long)st.visits);
    cr_assert_eq(accel_session_close(s, 0), ACCEL_OK);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    if (off < cpu_ns / 4)
        cr_skip_test("the worker was hardly preempted (%llu ms off the CPU): inconclusive",
                     (unsigned long long)(off / 1000000));
    cr_expect_lt(st.service_ns, cpu_ns + off / 2,
                 "service %llu ns: ops' CPU %llu ns, off the CPU %llu ns",
                 (unsigned long long)st.service_ns, (unsigned long long)cpu_ns,
                 (unsigned long long)off);
}

/* Open file descriptors of the process (/proc/self/fd's entries). */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    cr_assert_not_null(d);
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* A worker thread that measured a long visit keeps its schedstat file
 * open while it lives, and closes it when it leaves: runtimes created and
 * destroyed one after another leave no descriptor behind. */
Test(preempted_visits, workers_leave_no_descriptor_open, .timeout = 120)
{
    int before = 0;
    for (int round = 0; round < 21; round++) {
        if (round == 1)
            before = open_fds(); /* after one round: anything opened once */
        unit_step("a runtime's long visits, then its destroy");
        accel_runtime *rt = tu_runtime_nodetect(1);
        accel_session *s = tu_open(rt, "burn", 64, 0);
        for (int i = 0; i < 8; i++)
            cr_assert_eq(accel_submit(s, &(accel_op){.fn = burn}, ACCEL_FOREVER),
                         ACCEL_OK);
        cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
        accel_session_release(s);
        cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    }
    unit_step("count the descriptors");
    int after = open_fds();
    cr_assert_eq(after, before, "%d descriptors open after 20 runtimes, %d before",
                 after, before);
}
