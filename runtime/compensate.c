/*
 * Compensation for blocked workers (compensate.h has the rules).
 *
 * Handing a blocked worker's place on (a wait the worker announces):
 *   blocker:   blocked++; block |= ANNOUNCED; seq_cst fence;
 *              wake a parked general worker, else if work is queued and
 *              extra_active < blocked: extra_active++, start an extra
 *   submitter: enqueue (the push's seq_cst RMWs); fence_hot; no parked
 *              general worker to claim; seq_cst load of blocked; if
 *              blocked > extra_active: the same start (starved)
 * Either the blocker's look at the scheduler sees the submitter's work, or
 * the submitter's load sees the blocker counted (the blocker's fence and
 * the submitter's push and load are seq_cst: whichever side is first in
 * their total order has its store seen by the other side's load): new
 * work never waits behind a blocked worker with no one sent for it. Not
 * the asymmetric pair of futex.h: its membarrier, on every begin, IPIs
 * each CPU running the process and serializes in the kernel (a blocking
 * op's begin is not rare under load); the submitter pays no fence (its
 * push's RMWs are locked anyway on x86, and its seq_cst load is a plain
 * one there). models/blocked.pml checks this hand-off with the park/wake
 * protocol of park.c.
 *
 * A presumed visit (a session whose last visit waited: "sessions whose
 * ops wait" below) is an announced wait from its begin to its end: the
 * same hand-off, the same count and the same credit.
 *
 * Counting: `blocked` is raised before a worker's block word goes from 0
 * to non-zero and lowered after it goes back to 0, by whoever made that
 * transition (the worker for ANNOUNCED, the monitor for DETECTED; a raise that did
 * not make the transition is undone), so it never reads below the number
 * of blocked workers: an extra is never retired for a count that is only
 * late.
 *
 * The monitor (of accel's own threads and of a host's workers alike: host.c
 * keeps a host worker's in_visit, visits and tid as worker.c keeps a
 * worker's) sleeps on monitor_armed while it
 * is 0. The wake path arms it when it finds no parked worker for new work;
 * the monitor disarms itself when nothing is queued and no worker is
 * counted blocked by it, with the asymmetric fence pair of futex.h (it
 * clears the flag, fence_cold, looks at the scheduler; a submitter
 * enqueues, fence_hot, loads the flag; the monitor pays, once a sleep):
 * so an idle runtime's monitor sleeps, and work that waits always has it
 * armed. Armed, it ticks every block_detect_ns and looks at each worker's
 * visit count and in-visit flag: a worker is sampled (its CPU clock) at
 * the first tick that finds it in a visit, and if at the next it is still
 * there with less than half the time on a CPU and is neither running nor
 * runnable (its /proc stat state, read only then), it is counted blocked
 * (DETECTED) while work waits: 1 to 2 ticks into a wait that begins its visit
 * (a sample taken only at the second look would make that 2 to 3, and
 * most 1-5 ms storage waits would end uncounted and charged). Windows
 * after a visit's first are two ticks long (a long CPU-bound visit is
 * looked at half as often): a wait that begins later in a visit is
 * counted 1 to 3 ticks in. The detection goes at the first tick that finds the
 * worker in another visit or none (a new visit is sampled at that same
 * tick), or on a CPU again in the same visit: half the time since the
 * last tick on it, or over 1/64 of it and running or runnable now (an op
 * that waited and then computes must not keep an extra beside it).
 * Host workers: a host worker whose host bumps its op word at each op's start
 * (accel_host_op_word) is sampled afresh, and its detection goes, at the first
 * tick that finds another op of the visit, as for a new visit: a wait in
 * a later op is judged on a window of its own, not on one that holds the
 * CPU work of the ops before it. "Work waits" for a host worker is also "no
 * general-lane worker parked unclaimed" (place_owed): a host's submitter
 * runs an idle session's op itself, so a busy host's queue is often empty
 * at a tick; a host worker counted then hands its place to the next submit that
 * finds no host worker parked (starved). "Off a CPU" is under 1/64 of the
 * window, not under half (off_cpu_div): a host may put the thread of an op that computes to
 * sleep (Go takes the P from a goroutine inside a long op every 10 ms,
 * and its locked thread sleeps until the P comes back, hundreds of us on
 * a loaded machine), so a window of a CPU-bound op can hold only a few us
 * on a CPU. What the thread's clock cannot tell there: a goroutine that
 * waits for a P a whole window looks blocked. The process's clock can: a
 * host that gives its workers host_cpus CPUs (Go: GOMAXPROCS) and used
 * host_cpus - 1/2 of them or more over the window has no CPU for an extra
 * worker either (host_saturated), so no count begins after such a
 * window; under that, a CPU sits idle and the wait is counted. A count
 * is not dropped when the host later gets busy: the extra worker it
 * started is what keeps the CPUs busy, and dropping it then would start
 * and retire extras by turns. Without host_cpus (0), or on a machine
 * whose other processes leave the host less than that, a goroutine
 * waiting a whole window for a P is counted; its extra then waits for a
 * P too, and goes at the end of its visit once the detection is
 * dropped.
 *
 * Charging: a visit's time its worker sat blocked while another ran in
 * its place is not charged to its session's share (sched_core.h): in its
 * own waits and announced waits, their time off a CPU (the clock less the thread's
 * CPU clock, read at the outermost begin and end); in a wait the monitor
 * counted (DETECTED), the time from the count to the visit's end, or to the
 * tick that dropped the detection, that the thread was neither on a CPU nor
 * waiting for one (/proc schedstat, read by the monitor when it counts;
 * by the worker at the end of such a visit, or by the monitor when it
 * drops a detection: that credit is banked for the visit's end,
 * bank_detected). Before the monitor detects it no one runs in its place, and
 * past the cap on extras no one may: that time is charged. Time a thread
 * sat preempted (runnable) is not credited: every visit is charged its
 * preemption (docs/scheduler.md, "Preemption"). A host worker's visit is
 * credited its announced waits (and a presumed visit's time off a CPU,
 * below) alone (host.c), by the CPU clock of the
 * thread that drives it (a goroutine that, after its wait, waits for a P,
 * its locked thread asleep until the P comes, is credited that too);
 * its detected waits are charged (compensate.h says why).
 */
#include "compensate.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "accel/host.h"

#include "clock.h"
#include "futex.h"
#include "waiters.h"
#include "runtime_types.h"
#include "session.h"
#include "trace.h"
#include "worker_types.h"

#define DETECT_NS_DEFAULT 1000000u
#define DETECT_NS_MAX UINT64_C(3600000000000)

void accel__compensate_init(accel_runtime *rt, unsigned extra_max,
                            uint64_t detect_ns)
{
    accel__compensate *c = &rt->comp;
    c->extra_max = extra_max;
    /* An hour at most: the tick is a futex timeout in signed ns, and a
     * window twice it must not wrap. */
    c->detect_ns = !detect_ns                    ? DETECT_NS_DEFAULT
                   : detect_ns > DETECT_NS_MAX ? DETECT_NS_MAX
                                               : detect_ns;
    pthread_mutex_init(&c->lock, NULL);
}

void accel__compensate_fini(accel_runtime *rt)
{
    pthread_mutex_destroy(&rt->comp.lock);
}

/* Something is queued (a peek of each class, as a general worker's pick
 * looks at both: lock-free, read-only, and never dereferenced). */
static bool work_waits(accel_runtime *rt)
{
    accel__sched_entity *e;
    uint32_t hint;
    return accel__sched_peek(rt->sched, 0, &e, &hint, 1) > 0 ||
           accel__sched_peek(rt->sched, 1, &e, &hint, 1) > 0;
}

/* A host worker that leaves takes the monitor's detection with it: the monitor looks
 * only at running host workers, so it would never lower `blocked` for a host worker
 * that left while detected (an extra whose op the monitor saw waiting, that
 * ended it and left before the next tick). Under c->lock, as the
 * monitor's watch(), so the two never both lower it for one detection. */
static void drop_detected(accel_runtime *rt, accel__worker *w)
{
    /* relaxed: the count rule at the top of this file; c->lock orders this
     * against the monitor's clear. */
    if (atomic_fetch_and_explicit(&w->block, ~ACCEL__BLOCK_DETECTED,
                                  memory_order_relaxed) == ACCEL__BLOCK_DETECTED)
        atomic_fetch_sub_explicit(&rt->blocked, 1, memory_order_relaxed);
    w->m_phase = 0;
}

void (*_Atomic accel__compensate_leave_hook)(accel__worker *w);

/* Under c->lock, from an extra that has taken itself out of the count
 * and still holds its slot: counts it in again if a blocked worker is
 * owed an extra (more blocked than active, under the cap) and work
 * waits for it (as a hand-on asks: an extra idle with nothing queued
 * leaves, and the next submit that finds no worker starts one). An extra
 * that takes itself out uncounts first and gives its slot up after, so
 * a hand-on in between (a new wait: spawn_if_owed, host_add) counts an
 * extra, finds every slot taken and uncounts it again; the slot search
 * and that undo are under c->lock, so the leaver's look here sees either
 * the undo (and stays) or the extra started (and goes). relaxed: counts,
 * as spawn_if_owed. */
static bool owed_back(accel_runtime *rt)
{
    /* Our uncount before the look at the scheduler (work_waits), as the
     * blocker's count before its look (the top of this file): pairs with
     * a submitter's seq_cst push and its seq_cst load of extra_active
     * (accel__compensate_starved): either that load sees the uncount and
     * starts an extra, or this look sees the work. The lock alone does
     * not order a relaxed RMW before a later load. */
    atomic_thread_fence(memory_order_seq_cst);
    if (rt->comp.stopping ||
        atomic_load_explicit(&rt->stopping, memory_order_relaxed) ||
        !work_waits(rt))
        return false;
    uint32_t a = atomic_load_explicit(&rt->extra_active, memory_order_relaxed);
    do {
        if (a >= atomic_load_explicit(&rt->blocked, memory_order_relaxed) ||
            a >= rt->comp.extra_max)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(
        &rt->extra_active, &a, a + 1, memory_order_relaxed,
        memory_order_relaxed));
    return true;
}

static void *extra_entry(void *arg)
{
    accel__worker *w = arg;
    accel_runtime *rt = w->rt;
    for (;;) {
        rt->comp.ops.run_extra(w);
        /* relaxed: a test sets it before the runtime exists. */
        void (*hook)(accel__worker *) = atomic_load_explicit(
            &accel__compensate_leave_hook, memory_order_relaxed);
        if (__builtin_expect(hook != NULL, 0))
            hook(w);
        pthread_mutex_lock(&rt->comp.lock); /* cold: a retiring extra */
        if (!owed_back(rt))
            break;
        pthread_mutex_unlock(&rt->comp.lock); /* counted again: runs on */
    }
    drop_detected(rt, w);
    w->extra_state = ACCEL__EXTRA_EXITED;       /* joined by the next spawn or stop */
    pthread_mutex_unlock(&rt->comp.lock);
    /* retire(worker index, extra workers still active) */
    ACCEL_TRACE2(retire, w->index,
                 atomic_load_explicit(&rt->extra_active, memory_order_relaxed));
    /* relaxed: a statistic. */
    atomic_fetch_add_explicit(&rt->comp.retired, 1, memory_order_relaxed);
    return NULL;
}

/* Starts one extra worker; the caller has counted it in extra_active.
 * On failure (no host worker, no thread) it is uncounted again: the blocked op's
 * wait then lasts as long as it would without compensation. */
static void spawn(accel_runtime *rt)
{
    accel__compensate *c = &rt->comp;
    bool ok = false;
    pthread_mutex_lock(&c->lock); /* cold: starting an extra worker */
    for (unsigned i = 0; i < c->extra_max && !c->stopping; i++) {
        accel__worker *w = &rt->workers[rt->nworkers + i];
        if (w->extra_state == ACCEL__EXTRA_RUN)
            continue;
        if (w->extra_state == ACCEL__EXTRA_EXITED)
            pthread_join(w->thread, NULL); /* it has returned: no wait */
        w->extra_state = ACCEL__EXTRA_FREE;
        w->rt = rt;
        w->index = rt->nworkers + i;
        w->lane = ACCEL__LANE_GENERAL;
        w->extra = true;
        w->cpu = -1;
        w->m_phase = 0;
        if (pthread_create(&w->thread, NULL, extra_entry, w) != 0)
            break;
        w->extra_state = ACCEL__EXTRA_RUN;
        ok = true;
        if (i >= c->extras_used)
            c->extras_used = i + 1;
        char name[16];
        snprintf(name, sizeof(name), "accel-x%u", i % 10000u);
        pthread_setname_np(w->thread, name); /* a name, or the spawner's */
        /* relaxed: a statistic. */
        atomic_fetch_add_explicit(&c->started, 1, memory_order_relaxed);
        /* compensate(worker index, workers blocked now) */
        ACCEL_TRACE2(compensate, w->index,
                     atomic_load_explicit(&rt->blocked, memory_order_relaxed));
        break;
    }
    /* Uncounted under the lock: a leaving extra's look (owed_back) sees
     * the undo. relaxed: the count alone; nothing was published. */
    if (!ok)
        atomic_fetch_sub_explicit(&rt->extra_active, 1, memory_order_relaxed);
    pthread_mutex_unlock(&c->lock);
}

/* Counts one more active extra if blocked workers are owed one and the
 * cap allows, then starts it. relaxed: counts; the fence pair at the top
 * orders them against the work they are for. */
static void spawn_if_owed(accel_runtime *rt)
{
    if (atomic_load_explicit(&rt->stopping, memory_order_relaxed))
        return;
    if (rt->cfg.flags & ACCEL_RUNTIME_HOST_WORKERS) {
        /* The host starts the host worker; its accel_host_worker_add counts it
         * (relaxed: the same counts, read only). */
        uint32_t a =
            atomic_load_explicit(&rt->extra_active, memory_order_relaxed);
        if (rt->cfg.host_grow && a < rt->comp.extra_max &&
            a < atomic_load_explicit(&rt->blocked, memory_order_relaxed))
            rt->cfg.host_grow(rt->cfg.host_wake_arg);
        return;
    }
    uint32_t a = atomic_load_explicit(&rt->extra_active, memory_order_relaxed);
    do {
        if (a >= atomic_load_explicit(&rt->blocked, memory_order_relaxed) ||
            a >= rt->comp.extra_max)
            return;
    } while (!atomic_compare_exchange_weak_explicit(
        &rt->extra_active, &a, a + 1, memory_order_relaxed,
        memory_order_relaxed));
    spawn(rt);
}

/* A worker was just counted blocked: its place goes on. */
static void hand_on(accel_runtime *rt)
{
    if (!rt->comp.ops.wake_parked)
        return; /* no runtime set it (worker.c sets it for both kinds) */
    /* The blocker's half of the pair at the top: blocked++ before, the
     * look at the scheduler after (the submitter's half, its push and its
     * seq_cst load of blocked, is in park.c's wake_lanes). */
    atomic_thread_fence(memory_order_seq_cst);
    if (rt->comp.ops.wake_parked(rt))
        return;
    if (work_waits(rt))
        spawn_if_owed(rt);
}

void accel__compensate_starved(accel_runtime *rt)
{
    /* relaxed: the submitter's half of the pair at the top was its
     * seq_cst load of blocked in the wake path (park.c); this load of the
     * same word after it reads that value or a later one. seq_cst for
     * extra_active: the submitter's half against a leaving extra's
     * uncount, fence and look at the scheduler (owed_back): after its
     * seq_cst push, either this load sees the uncount or that look sees
     * the push. */
    if (atomic_load_explicit(&rt->blocked, memory_order_relaxed) >
        atomic_load_explicit(&rt->extra_active, memory_order_seq_cst))
        spawn_if_owed(rt);
    if (!atomic_load_explicit(&rt->monitor_armed, memory_order_relaxed) &&
        rt->comp.monitor_started) {
        uint32_t z = 0;
        /* relaxed: the flag is ordered against the monitor's look at the
         * scheduler by the fence pair (the top of this file). */
        if (atomic_compare_exchange_strong_explicit(&rt->monitor_armed, &z, 1,
                                                    memory_order_relaxed,
                                                    memory_order_relaxed))
            accel__futex_wake(&rt->monitor_armed, 1);
    }
}

bool accel__compensate_surplus(accel_runtime *rt)
{
    /* relaxed: counts. blocked never reads low (the top of this file), so
     * a surplus seen here is real. */
    uint32_t a = atomic_load_explicit(&rt->extra_active, memory_order_relaxed);
    while (a > atomic_load_explicit(&rt->blocked, memory_order_relaxed)) {
        if (atomic_compare_exchange_weak_explicit(&rt->extra_active, &a, a - 1,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed))
            return true;
    }
    return false;
}

void accel__compensate_retire_idle(accel_runtime *rt)
{
    /* relaxed: a count. Blocked workers it leaves owed get a new extra
     * from the next submit that finds no parked worker (starved). */
    atomic_fetch_sub_explicit(&rt->extra_active, 1, memory_order_relaxed);
}

/* ---- a worker's own waits and announced waits */

/* This thread's CPU clock (0 if it has none: then a wait counts whole). */
static uint64_t thread_cpu_ns(void)
{
    uint64_t ns;
    (void)accel__clock_ns(CLOCK_THREAD_CPUTIME_ID, &ns);
    return ns;
}

/* The calling thread's /proc schedstat, opened once per thread and read
 * with one pread each time (the file is generated at every read). */
static _Thread_local int tls_schedstat_fd = -1;

bool accel__compensate_self_schedstat(uint64_t *cpu, uint64_t *rd)
{
    if (tls_schedstat_fd < 0) {
        tls_schedstat_fd =
            open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
        if (tls_schedstat_fd < 0) {
            tls_schedstat_fd = -2; /* none here: not tried again */
            return false;
        }
    }
    if (tls_schedstat_fd == -2)
        return false;
    char buf[96];
    ssize_t n = pread(tls_schedstat_fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0)
        return false;
    buf[n] = 0;
    char *end, *p;
    *cpu = strtoull(buf, &end, 10);
    if (end == buf)
        return false;
    p = end;
    *rd = strtoull(p, &end, 10);
    return end != p;
}

/* Marks the start of w's outermost wait (its own thread): the clock, the
 * thread's CPU clock, and its run-queue time (schedstat). The CPU time
 * comes from the clock, not from schedstat's first field: the kernel
 * brings that field up to date for a running thread only at its ticks
 * and switches, so read at a wait's end it misses up to a tick of the
 * CPU just used, and a short visit that only computed would read as
 * asleep. A host's thread takes the CPU clock alone: it is the host's,
 * and a schedstat file kept open for it would outlive the thread
 * (accel's own threads close theirs at exit,
 * accel__compensate_thread_end). Nor is a schedstat that reads 0 CPU
 * time (a kernel whose scheduler statistics are off) taken. */
static void own_mark(accel__worker *w)
{
    w->own_thread = pthread_self();
    w->own_t0 = accel__now_ns();
    w->own_cpu0 = thread_cpu_ns();
    uint64_t cpu;
    if ((w->rt->cfg.flags & ACCEL_RUNTIME_HOST_WORKERS) ||
        !accel__compensate_self_schedstat(&cpu, &w->own_rd0) || cpu == 0)
        w->own_rd0 = UINT64_MAX;
}

/* The time asleep in w's open outermost wait, to now (its own thread):
 * the wall time less what the thread spent on a CPU and waiting for one.
 * An announcement around work that uses the CPU gets no credit for it,
 * nor for the time that work waited on a run queue: a visit that does
 * not announce is charged its wall time, run-queue waits included, so
 * the two stay comparable on a loaded machine. Without schedstat (and
 * on a host's threads) only the CPU time is taken off. A host calls
 * accel_host_blocking_begin/_end from the thread driving the visit
 * (host.h), so both ends read one thread's clock; a visit moved to
 * another thread takes each thread's part apart
 * (accel__compensate_visit_detach, _attach). Read on a thread that did
 * not mark it (a host that calls out of host.h's order), or with no
 * thread marking it, it is 0: another thread's clock would make it
 * anything up to the wall time, and a part banked at a detach would
 * count again. *on: the time it spent on a CPU (0 where the time asleep
 * is 0 for want of a clock), which a presumed visit's judge weighs. */
static uint64_t off_cpu_since(accel__worker *w, uint64_t now, uint64_t *on)
{
    *on = 0;
    if (w->own_t0 == 0 || !pthread_equal(w->own_thread, pthread_self()))
        return 0;
    uint64_t wall = now - w->own_t0;
    *on = w->own_cpu0 ? thread_cpu_ns() - w->own_cpu0 : 0;
    uint64_t busy = *on, cpu, rd;
    if (w->own_rd0 != UINT64_MAX && accel__compensate_self_schedstat(&cpu, &rd) &&
        rd >= w->own_rd0)
        busy += rd - w->own_rd0; /* complete: a running thread's last wait
                                    was added as it began to run */
    return busy < wall ? wall - busy : 0;
}

static void own_begin(void *arg)
{
    accel__worker *w = arg;
    if (w->block_depth++ != 0)
        return;
    own_mark(w);
    accel_runtime *rt = w->rt;
    /* relaxed: counts (the top of this file): raised before the bit. */
    atomic_fetch_add_explicit(&rt->blocked, 1, memory_order_relaxed);
    if (atomic_fetch_or_explicit(&w->block, ACCEL__BLOCK_ANNOUNCED,
                                 memory_order_relaxed) != 0) {
        /* the monitor detected this worker already */
        atomic_fetch_sub_explicit(&rt->blocked, 1, memory_order_relaxed);
        return;
    }
    hand_on(rt);
}

static void own_end(void *arg)
{
    accel__worker *w = arg;
    if (w->block_depth == 0 || --w->block_depth != 0)
        return;
    uint64_t on;
    w->own_ns += off_cpu_since(w, accel__now_ns(), &on);
    w->own_on_ns += on;
    /* relaxed: counts; lowered after the word went back to 0. */
    if (atomic_fetch_and_explicit(&w->block, ~ACCEL__BLOCK_ANNOUNCED,
                                  memory_order_relaxed) == ACCEL__BLOCK_ANNOUNCED)
        atomic_fetch_sub_explicit(&w->rt->blocked, 1, memory_order_relaxed);
}

static _Thread_local accel__block_hook tls_hook;
/* Announced waits open on this thread (accel_blocking_begin - _end). */
static _Thread_local unsigned tls_announced;

void accel__compensate_thread_begin(accel__worker *w)
{
    tls_hook = (accel__block_hook){.begin = own_begin, .end = own_end,
                                   .arg = w};
    accel__tls_block_hook = &tls_hook;
    /* relaxed: read by the monitor only to find the thread's /proc stat. */
    atomic_store_explicit(&w->tid, (int)syscall(SYS_gettid),
                          memory_order_relaxed);
}

void accel__compensate_thread_end(void)
{
    if (tls_schedstat_fd >= 0)
        close(tls_schedstat_fd);
    tls_schedstat_fd = -1;
}

void accel__compensate_visit_done(accel__worker *w)
{
    if (__builtin_expect(w->block_depth != 0, 0)) {
        w->block_depth = 1; /* the op left an announcement open: close it */
        own_end(w);
        tls_announced = 0;
    }
}

static bool read_schedstat(accel__worker *w, uint64_t *cpu, uint64_t *rd);

/* The time w's thread spent asleep (neither on a CPU nor waiting for
 * one) from the count published at ts with its schedstat (cpu0, rd0) to
 * now, by its schedstat now (read here); 0 if that cannot be read. The
 * worker at its visit's end and the monitor dropping a detection both
 * credit this. */
static uint64_t asleep_since(accel__worker *w, uint64_t ts, uint64_t cpu0,
                             uint64_t rd0, uint64_t now)
{
    uint64_t cpu, rd;
    if (now <= ts || !read_schedstat(w, &cpu, &rd))
        return 0;
    uint64_t used = (cpu - cpu0) + (rd - rd0);
    return used < now - ts ? now - ts - used : 0;
}

/* At the cap, with more workers blocked than extras running, some
 * blocked worker has no one in its place: its visit is charged whole, as
 * without compensation. relaxed: counts. */
static bool extras_short(const accel_runtime *rt)
{
    uint32_t extras = atomic_load_explicit(&rt->extra_active,
                                           memory_order_relaxed);
    return extras >= rt->comp.extra_max &&
           atomic_load_explicit(&rt->blocked, memory_order_relaxed) > extras;
}

bool accel__compensate_at_cap(const accel_runtime *rt)
{
    /* relaxed: counts (the top of this file) */
    return atomic_load_explicit(&rt->extra_active, memory_order_relaxed) >=
           rt->comp.extra_max;
}

/* w's own and announced waits off a CPU in its visit, to now; *on: their
 * time on a CPU (the presumed visit's judge). */
static uint64_t own_off_cpu(accel__worker *w, uint64_t now, uint64_t *on)
{
    uint64_t own = w->own_ns, o = 0;
    if (w->block_depth != 0)
        own += off_cpu_since(w, now, &o); /* an announcement still open: to here */
    *on = w->own_on_ns + o;
    return own;
}

void accel__compensate_visit_detach(accel__worker *w, bool parked, bool lent)
{
    /* Parked: no thread runs the visit's code until the attach, so that
     * time is off a CPU on any clock; lent: the time is another visit's,
     * charged to its own session. The attach credits either. */
    if (parked || lent) {
        w->parked_t0 = accel__now_ns();
        w->parked_lent = lent;
    }
    /* This thread's part of an open wait, on its own clock (none if
     * another thread attached meanwhile and marked it: then the mark is
     * that one's and stays). Until an attach marks again, the visit's
     * time is on no thread: it is charged, none of it credited as off a
     * CPU, and a presumed visit's judge weighs it on neither side. */
    if (w->block_depth == 0 || !pthread_equal(w->own_thread, pthread_self()))
        return;
    uint64_t on;
    w->own_ns += off_cpu_since(w, accel__now_ns(), &on);
    w->own_on_ns += on;
    w->own_t0 = 0;
}

void accel__compensate_visit_attach(accel__worker *w)
{
    if (w->parked_t0 != 0) {
        uint64_t now = accel__now_ns();
        uint64_t span = now > w->parked_t0 ? now - w->parked_t0 : 0;
        if (w->parked_lent)
            w->lent_ns += span;
        else
            w->own_ns += span;
        w->parked_t0 = 0;
    }
    /* From here on this thread's clock: a mark from another thread would
     * subtract two threads' CPU times (an unsigned wrap: no time off a
     * CPU at all), and one from before the visit would credit the visit
     * with the time between visits. */
    if (w->block_depth != 0)
        own_mark(w);
}

uint64_t accel__compensate_visit_announced_ns(accel__worker *w, uint64_t t0)
{
    uint64_t now = accel__now_ns(), on;
    uint64_t own = extras_short(w->rt) ? 0 : own_off_cpu(w, now, &on);
    own += w->lent_ns; /* another visit's time, charged to its session */
    /* An announcement still open goes on past this visit (a host may end
     * it with no visit open: host.h): its mark moves to here, so that no
     * later visit is credited this visit's part of it again. */
    if (w->block_depth != 0)
        own_mark(w);
    return own < now - t0 ? own : now - t0;
}

uint64_t accel__compensate_visit_blocked_ns(accel__worker *w, uint64_t t0)
{
    if (extras_short(w->rt))
        return 0;
    uint64_t now = accel__now_ns();
    uint64_t span = now - t0, on;
    uint64_t own = own_off_cpu(w, now, &on);
    uint64_t seen = 0;
    /* Counts whose detection the monitor dropped in this visit (the worker
     * was found on a CPU again): their time asleep, banked (bank_detected),
     * read before the detection: the monitor clears a detection before it banks
     * its time, so a bank read here is of a detection the load below finds
     * gone, or of an earlier count than the one it finds; never the same
     * time twice. acquire: pairs with bank_detected's release store of
     * detected_bank_vis (and so orders the clear before it against the load
     * of the detection). A bank missed here (written after, or found being
     * rewritten: all of it then, earlier take-backs' part too) is lost:
     * charged, never credited twice. */
    uint64_t vis = atomic_load_explicit(&w->visits, memory_order_relaxed);
    uint64_t bv = atomic_load_explicit(&w->detected_bank_vis, memory_order_acquire);
    uint64_t bank = atomic_load_explicit(&w->detected_bank, memory_order_relaxed);
    /* acquire fence: the bank's load before the second load of its visit
     * number; pairs with bank_detected's release fence. A bank written twice
     * in one visit only grows: either value is a credit it earned. */
    atomic_thread_fence(memory_order_acquire);
    if (bv == vis &&
        atomic_load_explicit(&w->detected_bank_vis, memory_order_relaxed) == bv)
        seen = bank;
    /* acquire: pairs with the release CAS that set the detection (watch):
     * the detected_t read below is this detection's count or a later one, never an
     * earlier count of this visit whose time is already in the bank. What
     * the monitor published with the detection is read as a seqlock
     * (publish_detected). A detection left from an earlier visit (the monitor
     * drops it at its next tick) was counted before t0 and counts
     * nothing. */
    if (atomic_load_explicit(&w->block, memory_order_acquire) &
        ACCEL__BLOCK_DETECTED) {
        /* acquire: pairs with publish_detected's release store of detected_t */
        uint64_t ts = atomic_load_explicit(&w->detected_t, memory_order_acquire);
        uint64_t cpu0 = atomic_load_explicit(&w->detected_cpu,
                                             memory_order_relaxed);
        uint64_t rd0 = atomic_load_explicit(&w->detected_rd, memory_order_relaxed);
        /* acquire fence: the data's loads before the second load of
         * detected_t; pairs with publish_detected's release fence. */
        atomic_thread_fence(memory_order_acquire);
        if (ts >= t0 &&
            atomic_load_explicit(&w->detected_t, memory_order_relaxed) == ts)
            seen += asleep_since(w, ts, cpu0, rd0, now);
    }
    /* Own waits after the count are in `seen` too: the larger, not the
     * sum. */
    uint64_t b = own > seen ? own : seen;
    return b < span ? b : span;
}

/* ---- sessions whose ops wait: counted blocked from a visit's begin
 *
 * The monitor finds an unannounced wait 1 to 3 ticks into it, and until
 * then the worker's place sits idle. A session whose ops wait (a storage
 * read, a remote signer before each op's work) would cost that at every
 * op. So a visit whose session's last visit waited off a CPU begins
 * counted blocked, as an announced wait (own_begin: its place goes on at
 * once, the monitor does not judge it), and its time off a CPU is not
 * charged. Its end judges it again: a visit that spent less time asleep
 * than on a CPU clears the mark, so a session that stops waiting costs
 * one visit beside an extra worker. Time the thread waited for a CPU
 * (schedstat's run-queue time; a host's thread cannot tell it from
 * sleep) and a moved visit's time on no thread (detach to attach) weigh
 * on neither side: a loaded machine, or a host slow to move a visit,
 * does not turn a wait into work. */

_Atomic bool accel__compensate_presume_off;

/* presume.h: s is marked. */
void accel__compensate_presume_begin(accel__worker *w, accel_session *s)
{
    /* relaxed: a test's switch, set before its runtime */
    if (atomic_load_explicit(&accel__compensate_presume_off,
                             memory_order_relaxed))
        return;
    w->presumed = true;
    w->own_on_ns = 0; /* the judge's: this visit's time on a CPU */
    /* relaxed: the visiting worker's own counter (visit.h, accel__bump) */
    w->dispatched_seen =
        atomic_load_explicit(&s->dispatched, memory_order_relaxed);
    /* relaxed: a statistic */
    atomic_fetch_add_explicit(&w->rt->comp.presumed, 1, memory_order_relaxed);
    own_begin(w);
}

/* presume.h: the end of a visit that began counted blocked; returns
 * whether its session stays marked. */
bool accel__compensate_presume_judge(accel__worker *w, accel_session *s)
{
    uint64_t now = accel__now_ns();
    w->presumed = false;
    /* Outermost (the visit's own waits nest inside): its end adds its
     * time off a CPU to own_ns, unless an announcement the op left
     * open keeps it open; own_off_cpu then reads that one's to now. */
    own_end(w);
    uint64_t on;
    uint64_t off = own_off_cpu(w, now, &on);
    /* A visit that ran no op (its ops expired, were canceled or closed)
     * says nothing of how they wait: the mark stays. relaxed: the
     * visiting worker's own counter. */
    if (atomic_load_explicit(&s->dispatched, memory_order_relaxed) ==
        w->dispatched_seen)
        return true;
    /* A host thread's time off its CPU may also be a wait for one of the
     * host's CPUs (Go: a P), which its clock cannot tell from a wait;
     * clearing the mark over a visit in which the host's CPUs were all
     * busy (host_saturated's rule) took back nearly all of the gain in
     * the Go node example's blocking scenario (work against the old
     * design 0.79x, as without marks), so it is not done: the mark rests
     * on a detection, which that rule gates. Asleep against on a CPU,
     * not against the visit's wall time: a visit whose thread waited long
     * on a run queue after its wait (a loaded machine) or whose host took
     * long to move it between threads waited no less (0 asleep: no
     * clock, or nothing but work; the mark goes). */
    return off != 0 && off >= on;
}

int accel_blocking_begin(void)
{
    if (!accel__tls_current)
        return ACCEL_OK; /* not inside an op: no worker is held */
    if (tls_announced == UINT32_MAX)
        return ACCEL_EINVAL;
    tls_announced++;
    accel__block_begin();
    return ACCEL_OK;
}

int accel_blocking_end(void)
{
    if (!accel__tls_current)
        return ACCEL_OK;
    if (tls_announced == 0)
        return ACCEL_EINVAL; /* no begin open: nothing changes */
    tls_announced--;
    accel__block_end();
    return ACCEL_OK;
}

/* ---- host workers (host.c checks the index) */

int accel__compensate_host_block(accel_runtime *rt, accel__worker *w, bool begin)
{
    w->rt = rt; /* host workers are not started as threads: set here */
    if (begin) {
        if (w->block_depth == UINT32_MAX)
            return ACCEL_EINVAL;
        own_begin(w);
        return ACCEL_OK;
    }
    /* A presumed visit's count is the outermost and the visit's own: an
     * end with none of the host's begins open is refused. */
    if (w->block_depth <= (w->presumed ? 1u : 0u))
        return ACCEL_EINVAL;
    own_end(w);
    return ACCEL_OK;
}

int accel__compensate_host_add(accel_runtime *rt, unsigned *worker)
{
    accel__compensate *c = &rt->comp;
    /* relaxed: counts, as spawn_if_owed. */
    uint32_t a = atomic_load_explicit(&rt->extra_active, memory_order_relaxed);
    do {
        if (a >= atomic_load_explicit(&rt->blocked, memory_order_relaxed) ||
            a >= c->extra_max)
            return ACCEL_EAGAIN;
    } while (!atomic_compare_exchange_weak_explicit(
        &rt->extra_active, &a, a + 1, memory_order_relaxed,
        memory_order_relaxed));
    int rc = ACCEL_EAGAIN;
    pthread_mutex_lock(&c->lock); /* cold: a host worker added */
    for (unsigned i = 0; i < c->extra_max; i++) {
        accel__worker *w = &rt->workers[rt->nworkers + i];
        if (w->extra_state != ACCEL__EXTRA_FREE)
            continue;
        w->extra_state = ACCEL__EXTRA_RUN;
        w->rt = rt;
        w->index = rt->nworkers + i;
        w->extra = true;
        w->m_phase = 0;
        if (i >= c->extras_used) /* the monitor scans it */
            c->extras_used = i + 1;
        *worker = w->index;
        rc = ACCEL_OK;
        /* relaxed: a statistic. */
        atomic_fetch_add_explicit(&c->started, 1, memory_order_relaxed);
        /* compensate(worker index, workers blocked now) */
        ACCEL_TRACE2(compensate, w->index,
                     atomic_load_explicit(&rt->blocked, memory_order_relaxed));
        break;
    }
    /* Uncounted under the lock, as spawn's (a leaving host worker's look
     * in accel__compensate_host_leave sees it). */
    if (rc != ACCEL_OK)
        atomic_fetch_sub_explicit(&rt->extra_active, 1, memory_order_relaxed);
    pthread_mutex_unlock(&c->lock);
    return rc;
}

int accel__compensate_host_leave(accel_runtime *rt, accel__worker *w,
                                 bool surplus_only)
{
    if (surplus_only) {
        if (!accel__compensate_surplus(rt))
            return ACCEL_EAGAIN;
    } else {
        accel__compensate_retire_idle(rt);
    }
    /* relaxed: a test sets it before the runtime exists. */
    void (*hook)(accel__worker *) = atomic_load_explicit(
        &accel__compensate_leave_hook, memory_order_relaxed);
    if (__builtin_expect(hook != NULL, 0))
        hook(w);
    if (w->block_depth) { /* a begin left open: closed with the host worker */
        w->block_depth = 1;
        own_end(w);
    }
    /* retire(worker index, extra workers still active) */
    ACCEL_TRACE2(retire, w->index,
                 atomic_load_explicit(&rt->extra_active, memory_order_relaxed));
    atomic_fetch_add_explicit(&rt->comp.retired, 1,
                              memory_order_relaxed); /* relaxed: a statistic */
    pthread_mutex_lock(&rt->comp.lock); /* cold: a host worker leaves */
    drop_detected(rt, w);
    w->extra_state = ACCEL__EXTRA_FREE;
    /* A host_add between our uncount and this free found no slot and
     * uncounted again (under the lock): owed an extra now, the host is
     * asked for one (its accel_host_worker_add finds this slot). The
     * fence: our uncount before the look at the scheduler, as in
     * owed_back. relaxed: counts, as spawn_if_owed. */
    atomic_thread_fence(memory_order_seq_cst);
    uint32_t a = atomic_load_explicit(&rt->extra_active, memory_order_relaxed);
    bool owed = !rt->comp.stopping && rt->cfg.host_grow &&
                a < rt->comp.extra_max &&
                a < atomic_load_explicit(&rt->blocked, memory_order_relaxed) &&
                work_waits(rt);
    pthread_mutex_unlock(&rt->comp.lock);
    if (owed)
        rt->cfg.host_grow(rt->cfg.host_wake_arg);
    return ACCEL_OK;
}

/* ---- the monitor */

/* w's thread's kernel id; 0 before the thread has started. */
static int tid_of(accel__worker *w)
{
    /* relaxed: written once by the thread at its start. */
    return atomic_load_explicit(&w->tid, memory_order_relaxed);
}

/* Reads /proc/self/task/<tid>/<name> into buf (NUL-terminated); the
 * bytes read, or -1 (no tid yet, or no procfs). */
static ssize_t read_task_file(int tid, const char *name, char *buf,
                              size_t size)
{
    if (tid <= 0)
        return -1;
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%d/%s", tid, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    return n;
}

/* ns the thread has spent on a CPU (its CPU clock: one syscall). *ok
 * false: no CPU clock. The kernel's run delay (schedstat) is not read
 * here: that is an open, a read and a close of a /proc file at every
 * sample, and the monitor samples every visit it finds at a tick (most
 * long visits of a loaded runtime). A thread that looks idle by its clock
 * is asked instead whether it is running or runnable (thread_runnable),
 * which covers what the run delay did, and costs a /proc read only when
 * the clock alone would count it blocked. */
static uint64_t busy_ns(accel_runtime *rt, accel__worker *w, bool *ok)
{
    clockid_t cid;
    uint64_t ns = 0;
    if (rt->cfg.flags & ACCEL_RUNTIME_HOST_WORKERS) {
        /* A host thread has no pthread_t here (and one that has exited
         * would leave it dangling): Linux's clock id of a thread of this
         * process by its kernel id, MAKE_THREAD_CPUCLOCK(tid,
         * CPUCLOCK_SCHED), what pthread_getcpuclockid returns. A thread
         * that has gone gives EINVAL: no clock. */
        int tid = tid_of(w);
        *ok = tid > 0 && accel__clock_ns(
                             (clockid_t)((~(unsigned)tid << 3) | 6u), &ns);
        return ns;
    }
    *ok = pthread_getcpuclockid(w->thread, &cid) == 0 &&
          accel__clock_ns(cid, &ns);
    return ns;
}

/* Whether w's thread is running or runnable now ('R' in
 * /proc/self/task/<tid>/stat; one that sleeps, on a futex or in I/O, is
 * 'S' or 'D'): a CPU-bound op on an overloaded machine gets under half of
 * the time on a CPU and looks idle by its clock alone, but it is
 * runnable. Unknown (no such thread, no procfs): true, so that no thread
 * is counted blocked on a guess. */
static bool thread_runnable(accel__worker *w)
{
    char buf[256];
    if (read_task_file(tid_of(w), "stat", buf, sizeof(buf)) < 0)
        return true;
    const char *p = strrchr(buf, ')'); /* the name may hold anything */
    return !p || p[1] != ' ' || p[2] == 'R';
}

/* A worker whose thread spent under 1/off_cpu_div of a window on a CPU
 * is off it (the top of this file): half for accel's own threads, 1/64
 * for a host's. */
static uint64_t off_cpu_div(const accel_runtime *rt)
{
    return (rt->cfg.flags & ACCEL_RUNTIME_HOST_WORKERS) ? 64 : 2;
}

/* The thread's time on a CPU and waiting on a run queue, in ns (its
 * /proc schedstat; the monitor for any worker, a worker for itself).
 * false: no schedstat here (then nothing detected by the monitor goes
 * uncharged). */
static bool read_schedstat(accel__worker *w, uint64_t *cpu, uint64_t *rd)
{
    char buf[96];
    if (read_task_file(tid_of(w), "schedstat", buf, sizeof(buf)) < 0)
        return false;
    char *end;
    *cpu = strtoull(buf, &end, 10);
    if (end == buf)
        return false;
    char *p = end;
    *rd = strtoull(p, &end, 10);
    return end != p;
}

/* Publishes where the monitor detected w blocked (the write side of a
 * seqlock whose read side is accel__compensate_visit_blocked_ns): detected_t goes
 * to 0, then the data, then the time. Not a lock: the reader, on w at its
 * visit's end, skips a count it saw change. Nothing published (no
 * schedstat): the reader finds detected_t 0, before any visit. */
static void publish_detected(accel__worker *w)
{
    uint64_t cpu, rd;
    atomic_store_explicit(&w->detected_t, 0, memory_order_relaxed);
    if (!read_schedstat(w, &cpu, &rd))
        return;
    uint64_t t = accel__now_ns(); /* next to the read */
    /* release fence: the 0 before the data; pairs with the reader's
     * acquire fence (a reader that saw the new data sees the 0 or the
     * new time at its second load). */
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&w->detected_cpu, cpu, memory_order_relaxed);
    atomic_store_explicit(&w->detected_rd, rd, memory_order_relaxed);
    /* release: the data before the time; pairs with the reader's first
     * (acquire) load of detected_t. */
    atomic_store_explicit(&w->detected_t, t, memory_order_release);
}

/* The detection of w is dropped within its visit `vis` (it was found on a
 * CPU again): its time asleep since the count (as the worker would have
 * found at its visit's end) goes to the bank that visit's end reads. The
 * write side of a seqlock whose read side is accel__compensate_visit_blocked_ns:
 * detected_bank_vis goes to 0, then the sum, then the visit's number. The
 * caller has cleared the detection before (the reader relies on that order). */
static void bank_detected(accel__worker *w, uint64_t vis)
{
    /* relaxed: the monitor's own writes (publish_detected), read back. */
    uint64_t ts = atomic_load_explicit(&w->detected_t, memory_order_relaxed);
    if (ts == 0)
        return; /* nothing published at the count: no credit */
    uint64_t sum = asleep_since(
        w, ts, atomic_load_explicit(&w->detected_cpu, memory_order_relaxed),
        atomic_load_explicit(&w->detected_rd, memory_order_relaxed),
        accel__now_ns());
    if (atomic_load_explicit(&w->detected_bank_vis, memory_order_relaxed) == vis)
        sum += atomic_load_explicit(&w->detected_bank, memory_order_relaxed);
    atomic_store_explicit(&w->detected_bank_vis, 0, memory_order_relaxed);
    /* release fence: the 0 before the sum; pairs with the reader's
     * acquire fence (a reader that saw the new sum sees the 0 or the
     * number again at its second load). */
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&w->detected_bank, sum, memory_order_relaxed);
    /* release: the sum before the number; pairs with the reader's first
     * (acquire) load of detected_bank_vis. */
    atomic_store_explicit(&w->detected_bank_vis, vis, memory_order_release);
}

uint64_t (*_Atomic accel__compensate_process_cpu_hook)(void);

/* The process's CPU time in ns, its threads' sum (0 if unreadable). */
static uint64_t process_cpu_ns(void)
{
    /* relaxed: a test's hook, set before the runtime it watches. */
    uint64_t (*hook)(void) = atomic_load_explicit(
        &accel__compensate_process_cpu_hook, memory_order_relaxed);
    uint64_t ns;
    if (hook)
        return hook();
    return accel__clock_ns(CLOCK_PROCESS_CPUTIME_ID, &ns) ? ns : 0;
}

/* A window of w's starts at this tick (now, proc: the tick's clock and
 * the process's CPU time). */
static void window_begin(accel__worker *w, uint64_t now, uint64_t proc)
{
    w->m_pt0 = now;
    w->m_proc0 = proc;
}

/* Whether the host's CPUs were all in use over w's window (the top of
 * this file): the process ran on host_cpus - 1/2 CPUs or more from the
 * window's start to this tick. Then a host worker off its CPU waits for
 * one of the host's (Go: a P), and an extra worker could run no sooner.
 * false without host_cpus. */
static bool host_saturated(const accel_runtime *rt, const accel__worker *w,
                           uint64_t now, uint64_t proc)
{
    if (!rt->cfg.host_cpus || now <= w->m_pt0 || proc < w->m_proc0)
        return false;
    /* double: host_cpus x an hour's window would wrap 64 bits */
    return 2.0 * (double)(proc - w->m_proc0) >=
           (2.0 * rt->cfg.host_cpus - 1.0) * (double)(now - w->m_pt0);
}

/* One worker at one tick (now, and proc: the process's CPU time then,
 * read when host_cpus is set); true while it is counted blocked by the
 * monitor or being sampled. */
static bool watch(accel_runtime *rt, accel__worker *w, uint64_t now,
                  uint64_t proc, bool waits)
{
    accel__compensate *c = &rt->comp;
    /* relaxed: a heuristic view of the worker's own counters; the block
     * word's transitions are RMWs (the top of this file). */
    uint64_t vis = atomic_load_explicit(&w->visits, memory_order_relaxed);
    bool inv = atomic_load_explicit(&w->in_visit, memory_order_relaxed);
    uint32_t st = atomic_load_explicit(&w->block, memory_order_relaxed);
    /* A host worker's visit that moved to another thread (accel_host_visit_
     * attach) is a new visit to the monitor: the last sample is of
     * another thread's clock. */
    int tid = tid_of(w);
    bool same = vis == w->m_visits && tid == w->m_tid;
    /* A host worker's next op in the same visit (its op word moved: 0 for
     * accel's own workers) is judged afresh, as a new visit is: the CPU
     * work of the op before it is not in its window. relaxed: as above. */
    bool same_op = same && atomic_load_explicit(&w->ops,
                                                memory_order_relaxed) ==
                               w->m_ops;
    uint64_t div = off_cpu_div(rt);
    bool ok;
    if (st & ACCEL__BLOCK_DETECTED) {
        if (inv && same_op) {
            /* Still in the counted visit: counted while it stays mostly
             * off a CPU since the last tick and, if it ran over 1/64 of
             * that, is not runnable (one woken beside a co-tenant gets
             * under half a CPU; a sleeping one none, and costs no /proc
             * read). A worker that computes again (an op that waited,
             * then works) is no longer owed a place: an extra beside it
             * would oversubscribe the CPUs. */
            uint64_t busy = busy_ns(rt, w, &ok);
            uint64_t t = accel__now_ns();
            uint64_t d = busy - w->m_busy0, win = t - w->m_t0;
            if (ok && d * div < win &&
                (d * 64 < win || !thread_runnable(w))) {
                w->m_busy0 = busy;
                w->m_t0 = t;
                return true;
            }
            /* Dropped: the detection goes first, then its time to the bank
             * (the reader's order relies on it). The next window is two
             * ticks: an op that wakes now and then is counted and
             * uncounted (an extra started and retired) at most every
             * third tick, not every other one. */
            if (atomic_fetch_and_explicit(&w->block, ~ACCEL__BLOCK_DETECTED,
                                          memory_order_relaxed) ==
                ACCEL__BLOCK_DETECTED)
                atomic_fetch_sub_explicit(&rt->blocked, 1,
                                          memory_order_relaxed);
            bank_detected(w, vis);
            w->m_busy0 = busy;
            w->m_t0 = t;
            window_begin(w, now, proc);
            w->m_phase = ok ? 2 : 0;
            return true;
        }
        if (atomic_fetch_and_explicit(&w->block, ~ACCEL__BLOCK_DETECTED,
                                      memory_order_relaxed) ==
            ACCEL__BLOCK_DETECTED)
            atomic_fetch_sub_explicit(&rt->blocked, 1, memory_order_relaxed);
        /* Another op of the counted visit: the count's time asleep is the
         * visit's credit (the detection went first: bank_detected's order). */
        if (inv && same)
            bank_detected(w, vis);
        w->m_phase = 0;
        st &= ~ACCEL__BLOCK_DETECTED; /* a new visit or op is sampled now */
    }
    if (!inv || (st & ACCEL__BLOCK_ANNOUNCED)) {
        w->m_phase = 0; /* idle, or counted by its own wait */
        return false;
    }
    if (w->m_phase == 0 || !same_op) {
        /* First seen in this visit (or a host worker's op): sample at once,
         * so that a wait is counted one tick after the monitor first
         * finds it, not two (a CPU-clock read, about 0.2 us, for every
         * visit found at a tick; skipping young visits saved little and
         * counted later). */
        w->m_visits = vis;
        w->m_tid = tid;
        /* relaxed: as above (the op found now, or a later one: then the
         * next tick samples again). */
        w->m_ops = atomic_load_explicit(&w->ops, memory_order_relaxed);
        w->m_busy0 = busy_ns(rt, w, &ok);
        w->m_t0 = accel__now_ns(); /* next to the read: the monitor may
                                      itself have waited for a CPU */
        window_begin(w, now, proc);
        w->m_phase = ok ? 1 : 0;
        return true;
    }
    /* The first window of a visit is one tick (a wait that begins the
     * visit, as a storage read before the work, is counted soon); later
     * ones two: a long CPU-bound visit is looked at half as often (each
     * look a CPU-clock read, and a /proc read when it was preempted). */
    if (now - w->m_t0 < (w->m_phase == 1 ? c->detect_ns : 2 * c->detect_ns))
        return true;
    uint64_t tick = now;
    uint64_t busy = busy_ns(rt, w, &ok);
    now = accel__now_ns();
    if (!ok || busy < w->m_busy0) { /* no clock, or another thread's */
        w->m_phase = 0;
        return false;
    }
    busy -= w->m_busy0;
    uint64_t wall = now - w->m_t0;
    if (busy * div >= wall || !waits || host_saturated(rt, w, tick, proc) ||
        thread_runnable(w)) {
        /* working (or nothing waits for it, or it waits for one of the
         * host's busy CPUs): a new window from here */
        w->m_busy0 += busy;
        w->m_t0 = now;
        window_begin(w, tick, proc);
        w->m_phase = 2;
        return true;
    }
    /* Before the detection: a worker that sees the detection finds this count's
     * time, or a 0 (no credit). */
    publish_detected(w);
    atomic_fetch_add_explicit(&rt->blocked, 1, memory_order_relaxed);
    uint32_t zero = 0;
    /* release: publish_detected's writes before the detection; pairs with the
     * acquire load of the detection in accel__compensate_visit_blocked_ns (a reader
     * that finds this count's detection finds this count's detected_t, not an
     * earlier count's of the same visit whose time is in the bank). */
    if (!atomic_compare_exchange_strong_explicit(&w->block, &zero,
                                                 ACCEL__BLOCK_DETECTED,
                                                 memory_order_release,
                                                 memory_order_relaxed)) {
        atomic_fetch_sub_explicit(&rt->blocked, 1, memory_order_relaxed);
        w->m_phase = 0;
        return false;
    }
    /* The window of the checks while counted (above) starts here. */
    w->m_busy0 += busy;
    w->m_t0 = now;
    /* relaxed: a statistic; and the visit found, which that visit
     * compares with its own number at its end (presume.h: a hint). vis
     * is the visit sampled (same above), so a detection that lands after
     * the visit ended names a number no later visit has. */
    atomic_fetch_add_explicit(&c->detected, 1, memory_order_relaxed);
    atomic_store_explicit(&w->detected_visit, vis, memory_order_relaxed);
    pthread_mutex_unlock(&c->lock); /* hand_on may spawn: it takes it */
    hand_on(rt);
    pthread_mutex_lock(&c->lock); /* cold: back from a detection's hand-off */
    return true;
}

/* Whether a waiting host worker of a host is owed its place now: work is queued,
 * or no general-lane worker is parked unclaimed. A host's submitter runs
 * the op of an idle session itself (accel_host_submit_own) and a session
 * in a visit is not queued, so the queue of a busy host is often empty at
 * a tick while every host worker is taken; a host worker counted then hands its place
 * on to the next submit that finds none parked (accel__compensate_starved).
 * accel's own workers: work is queued. relaxed: a heuristic view of the
 * parking word (park.c). */
static bool place_owed(accel_runtime *rt, bool waits)
{
    if (waits || !(rt->cfg.flags & ACCEL_RUNTIME_HOST_WORKERS))
        return waits;
    uint64_t v = atomic_load_explicit(&rt->idle_workers, memory_order_relaxed);
    return (uint32_t)v == (uint32_t)(v >> 32); /* parked == claimed */
}

static void *monitor_main(void *arg)
{
    accel_runtime *rt = arg;
    accel__compensate *c = &rt->comp;
    /* acquire: pairs with the release store of monitor_stop in
     * accel__compensate_stop. */
    while (!atomic_load_explicit(&c->monitor_stop, memory_order_acquire)) {
        /* relaxed: the flag and its futex (the top of this file). */
        if (!atomic_load_explicit(&rt->monitor_armed, memory_order_relaxed)) {
            accel__futex_wait(&rt->monitor_armed, 0, -1);
            continue;
        }
        accel__futex_wait(&c->monitor_stop, 0, (int64_t)c->detect_ns);
        uint64_t now = accel__now_ns();
        /* Read once a tick, next to `now`, and only when host_saturated
         * asks (a syscall that sums the process's threads). */
        uint64_t proc = rt->cfg.host_cpus ? process_cpu_ns() : 0;
        bool waits = work_waits(rt);
        bool busy = false;
        pthread_mutex_lock(&c->lock); /* cold: one tick; extras stay put */
        for (unsigned i = 0; i < rt->nworkers + c->extras_used; i++) {
            accel__worker *w = &rt->workers[i];
            if (i >= rt->nworkers && w->extra_state != ACCEL__EXTRA_RUN)
                continue;
            busy |= watch(rt, w, now, proc, place_owed(rt, waits));
        }
        pthread_mutex_unlock(&c->lock);
        if (busy || waits)
            continue;
        /* Nothing queued, no one sampled or counted: sleep until a
         * starved wake arms us (the fence pair, the top of this file). */
        atomic_store_explicit(&rt->monitor_armed, 0, memory_order_relaxed);
        accel__fence_cold();
        if (work_waits(rt))
            atomic_store_explicit(&rt->monitor_armed, 1,
                                  memory_order_relaxed);
    }
    return NULL;
}

int accel__compensate_start(accel_runtime *rt, const accel__compensate_ops *ops)
{
    accel__compensate *c = &rt->comp;
    c->ops = *ops;
    if (pthread_create(&c->monitor, NULL, monitor_main, rt) != 0)
        return ACCEL_ENOMEM;
    pthread_setname_np(c->monitor, "accel-monitor");
    c->monitor_started = true;
    return ACCEL_OK;
}

void accel__compensate_stop(accel_runtime *rt)
{
    accel__compensate *c = &rt->comp;
    bool host = (rt->cfg.flags & ACCEL_RUNTIME_HOST_WORKERS) != 0;
    if (c->monitor_started) {
        /* release: pairs with the monitor's acquire load. */
        atomic_store_explicit(&c->monitor_stop, 1, memory_order_release);
        accel__futex_wake(&c->monitor_stop, 1);
        atomic_store_explicit(&rt->monitor_armed, 1, memory_order_relaxed);
        accel__futex_wake(&rt->monitor_armed, 1);
        pthread_join(c->monitor, NULL);
        c->monitor_started = false;
    }
    pthread_mutex_lock(&c->lock); /* cold: runtime destroy */
    c->stopping = true;
    pthread_mutex_unlock(&c->lock);
    if (host)
        return; /* a host's extra workers are its own, not threads */
    /* No spawn from here; extras exit on `stopping` (they were woken with
     * the base workers) and set their extra_state under the lock, so it is not
     * held while joining. Only this thread joins now. */
    for (unsigned i = 0; i < c->extra_max; i++) {
        accel__worker *w = &rt->workers[rt->nworkers + i];
        pthread_mutex_lock(&c->lock); /* cold: runtime destroy */
        unsigned state = w->extra_state;
        pthread_mutex_unlock(&c->lock);
        if (state != ACCEL__EXTRA_FREE)
            pthread_join(w->thread, NULL);
        w->extra_state = ACCEL__EXTRA_FREE;
    }
}
