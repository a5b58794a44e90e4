/*
 * The worker pool: accel's worker threads, started and stopped with the
 * runtime. Each loops: picks a runnable session from the scheduler, runs
 * one visit of it (visit.c), and with nothing runnable parks (park.c)
 * until a wake. Extra workers (compensate.c) run the same loop until they
 * are surplus or idle a while.
 */

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/resource.h>

#include "clock.h"
#include "compensate.h"
#include "cpu_limits.h"
#include "fault.h"
#include "futex.h"
#include "park.h"
#include "rcu.h"
#include "runtime.h"
#include "session.h"
#include "visit.h"
#include "worker.h"
#include "yield.h"

/* A parked worker that no wake has claimed yet: its count word
 * (runtime.h: parked in the low 32 bits, claimed in the high). */
static inline bool has_unclaimed(uint64_t idle)
{
    return (uint32_t)idle != (uint32_t)(idle >> 32);
}

/* Before the visit's end re-queues s (s has more ops ready): if another
 * session already waits in the scheduler for a lane whose worker sleeps
 * unclaimed, this worker will take only one of the two next, so wake that
 * worker now: once per visit, and only then (no wake when s is the only
 * ready session: this worker takes it). Done before the re-queue, so
 * that two ready sessions never sit beside a sleeping worker that nobody
 * is waking while this worker is preempted between its re-queue and its
 * pick. A help, not a wake-up the enqueues owe: every queued session's
 * enqueuer woke a worker or was one. */
static void wake_for_queued(accel_runtime *rt, const accel__visit *v)
{
    /* Pairs with the parker's fence_cold between its announce and its
     * second pick (park.c): either these loads see it parked, or that pick
     * sees the sessions queued before them. relaxed: counts; the calendar
     * publishes the sessions, and a claim publishes nothing. */
    accel__fence_hot();
    uint64_t is = atomic_load_explicit(&rt->idle_short, memory_order_relaxed);
    uint64_t iw =
        atomic_load_explicit(&rt->idle_workers, memory_order_relaxed);
    if (__builtin_expect(!has_unclaimed(is) && !has_unclaimed(iw), 1))
        return;
    if (!accel__ring_sc_ready(ACCEL__RING(v->s), v->h))
        return; /* s goes idle: this worker takes the other one */
    if (has_unclaimed(is) &&
        accel__sched_queued(rt->sched, ACCEL__LANE_SHORT, 1))
        /* The short lane's mask only: its claim and wake. The blocked
         * hand-off that needs a push right before it (park.h) is on the
         * general lane's path, which this call does not take. */
        accel__park_wake_lanes(rt, ACCEL__SCHED_LANE_SHORT);
    else if (has_unclaimed(iw) &&
             accel__sched_queued(rt->sched, ACCEL__LANE_GENERAL, 1))
        accel__park_wake_general(rt);
}

/* This thread's CPU time and voluntary context switches (getrusage of the
 * thread: one syscall). false: none to read. */
static bool thread_usage(uint64_t *cpu_ns, long *nvcsw)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        return false;
    *cpu_ns = ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) *
                  UINT64_C(1000000000) +
              ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) *
                  UINT64_C(1000);
    *nvcsw = ru.ru_nvcsw;
    return true;
}

/* Whether a visit never slept since t0 (read beside cpu0 and nvcsw0):
 * its thread made no voluntary context switch in it. Then all its time
 * off a CPU was spent preempted (runnable), and goes to *off. false when
 * it slept (it keeps the accounting of its waits, compensate.c: there,
 * sleeping and preemption cannot be told apart) or usage cannot be read. */
static bool never_slept(uint64_t t0, uint64_t cpu0, long nvcsw0, uint64_t *off)
{
    uint64_t cpu;
    long nvcsw;
    if (!thread_usage(&cpu, &nvcsw) || nvcsw != nvcsw0 || cpu < cpu0)
        return false;
    uint64_t wall = accel__now_ns() - t0, used = cpu - cpu0;
    *off = used < wall ? wall - used : 0;
    return true;
}

/* Runs one visit of s starting at *now (the clock read when the visit
 * began: the end of the previous visit when the worker went straight on),
 * and leaves the visit's end time in *now. w: the worker thread running
 * it, whose blocked time in the visit is not charged to the session's
 * share; NULL (a stopping runtime's last runs): all of it is. Returns the
 * lanes that may run s if it was re-queued, else 0. */
__attribute__((noinline)) /* a frame of its own: profiles (callgrind,
                             perf) count a visit apart from pick and park */
static unsigned run_visit(accel_runtime *rt, accel__worker *w,
                          accel_session *s, uint64_t *now)
{
    accel__visit v;
    if (w)
        w->own_ns = 0;
    /* A long visit: the time its thread waits for a CPU (other threads,
     * other processes) is not service (see never_slept;
     * docs/scheduler.md, "Preemption"). */
    uint64_t cpu0 = 0, u0 = 0;
    long nvcsw0 = 0;
    bool usage = w && accel__sched_visit_measures_cpu(rt->sched, &s->se) &&
                 thread_usage(&cpu0, &nvcsw0);
    if (usage)
        u0 = accel__now_ns();
    accel__visit_begin(&v, rt, s, *now);
    accel__visit_run(&v);
    if (w)
        wake_for_queued(rt, &v);
    /* relaxed: a look at whether the monitor marked w, or took a mark
     * back in this visit (the call reads what it published with either as
     * a seqlock: compensate.c). */
    if (w && __builtin_expect(
                 (w->own_ns | w->block_depth |
                  atomic_load_explicit(&w->block, memory_order_relaxed)) !=
                         0 ||
                     atomic_load_explicit(&w->seen_bank_vis,
                                          memory_order_relaxed) ==
                         atomic_load_explicit(&w->visits,
                                              memory_order_relaxed),
                 0))
        v.blocked_ns = accel__comp_visit_blocked_ns(w, v.t0);
    /* A visit that never slept: its service is its time on a CPU,
     * starting that much later (neither its share nor its op cost, quota
     * and lane, pays for the time it sat preempted), and nothing more is
     * left out (the off-CPU time of its own hints, blocked_ns, is in
     * that time already). */
    uint64_t off;
    if (usage && never_slept(u0, cpu0, nvcsw0, &off)) {
        v.t0 += off;
        v.blocked_ns = 0;
    }
    return accel__visit_end(&v, now);
}

/* Sessions prefetched ahead of the visits: the next one, and the one
 * after it (with 100k sessions a visit is shorter than a miss to memory
 * on a loaded host; the next one's lines, prefetched a visit ago as the
 * one after, are then mostly in). */
#define ACCEL__PEEK_AHEAD 2

/* Prefetches what a visit of the peeked entity's session touches: pair B
 * (the consumer's line and the entity's line), line A1 (read-only for the
 * visit), the producers' line A0 (for write: the visit's leave CAS, or a
 * resubmit from a done callback, writes it), the slot where the visit
 * begins and the slot after it, which the visit's look for more reads
 * (the entity's hint, an offset from the session: session.h). Only
 * addresses are computed from the peek: the entity may be picked by
 * another worker or its session freed by now, and a prefetch never
 * faults. */
static inline void prefetch_session(const accel__sched_entity *e,
                                    uint32_t hint)
{
    if (!e)
        return;
    const char *s = (const char *)e - offsetof(accel_session, se);
    __builtin_prefetch(s + offsetof(accel_session, rc), 1);
    __builtin_prefetch(s + offsetof(accel_session, se), 1);
    __builtin_prefetch(s + offsetof(accel_session, rt), 0);
    __builtin_prefetch(s + offsetof(accel_session, rp), 1);
    uint32_t slot = hint & ~ACCEL__HINT_WRAPS;
    __builtin_prefetch(s + slot, 0);
    __builtin_prefetch(s + (hint & ACCEL__HINT_WRAPS
                                ? (uint32_t)sizeof(accel_session)
                                : slot + (uint32_t)sizeof(accel__ring_slot)),
                       0);
}

/* The loop of a base worker (until the runtime stops) and of an extra
 * one (compensate.c: until it is surplus or idle a while). */
static void worker_loop(accel__worker *w)
{
    accel_runtime *rt = w->rt;
    accel__fault_thread_is_worker();
    accel__yield_thread_index((UINT64_C(1) << 32) + w->index);
    accel__rcu_register();
    accel__comp_thread_begin(w);
    uint64_t now = 0; /* end of the last visit; 0: read the clock */
    for (;;) {
        accel__sched_entity *e = accel__sched_pick(rt->sched, w->lane);
        accel__bump(&w->picks, 1);
        if (!e) {
            /* acquire: pairs with the release store in workers_stop. */
            if (atomic_load_explicit(&rt->stopping, memory_order_acquire))
                break;
            now = 0;
            bool timed_out = false;
            e = accel__park_worker(rt, w, w->extra ? ACCEL__EXTRA_IDLE_NS : -1,
                                   &timed_out);
            if (!e && timed_out)
                break; /* an idle extra retired (accel__park_worker) */
            if (!e)
                continue;
        }
        accel__bump(&w->visits, 1);
        if (!now)
            now = accel__now_ns();
        /* While this visit runs, bring in the lines the next one will
         * touch: with many sessions each visit's are cold. */
        accel__sched_entity *next[ACCEL__PEEK_AHEAD];
        uint32_t hint[ACCEL__PEEK_AHEAD];
        unsigned ahead = accel__sched_peek(rt->sched, w->lane, next, hint,
                                           ACCEL__PEEK_AHEAD);
        for (unsigned i = 0; i < ahead; i++)
            prefetch_session(next[i], hint[i]);
        /* relaxed: the monitor's heuristic view (compensate.c); this
         * worker's own line. */
        atomic_store_explicit(&w->in_visit, 1, memory_order_relaxed);
        unsigned lanes = run_visit(rt, w, e->owner, &now);
        atomic_store_explicit(&w->in_visit, 0, memory_order_relaxed);
        if (__builtin_expect(w->block_depth != 0, 0))
            accel__comp_visit_done(w); /* a hint left open by the op */
        /* An extra worker more than the blocked ones need leaves after
         * its visit (not after a wake: it may hold a wake's claim). It
         * will not pick again, so a session it re-queued wakes a worker
         * (as accel_host_visit_end_stop). */
        if (w->extra && accel__comp_surplus(rt)) {
            if (lanes)
                accel__park_wake_lanes(rt, lanes);
            break;
        }
        /* Re-queued for lanes we are not in (a short-lane worker's session
         * turned long): a worker that may run it must not stay parked. */
        if (lanes && !(lanes & accel__lane_mask(w->lane)))
            accel__park_wake_lanes(rt, lanes);
    }
}

/* Names a started worker's thread (accel-w<k>, accel-short<k>) and pins it
 * when the config has worker_cpus. */
static void setup_thread(accel_runtime *rt, accel__worker *w)
{
    /* The k-th worker of its lane: short-lane workers come first. */
    unsigned nshort = rt->cfg.short_lane_workers;
    char name[16];
    if (w->lane == ACCEL__LANE_SHORT)
        snprintf(name, sizeof(name), "accel-short%u", w->index % 10000u);
    else
        snprintf(name, sizeof(name), "accel-w%u",
                 (w->index - nshort) % 10000u);
    pthread_setname_np(w->thread, name);
    w->cpu = -1;
    if (rt->cfg.worker_cpus_count) {
        unsigned cpu = rt->cfg.worker_cpus[w->index % rt->cfg.worker_cpus_count];
        /* The CPUs were checked against the affinity mask at create; a
         * later failure (the mask shrank since) leaves the worker free. */
        if (accel__thread_pin(w->thread, cpu) == ACCEL_OK)
            w->cpu = (int)cpu;
    }
}

static void *worker_main(void *arg)
{
    worker_loop(arg);
    return NULL;
}

void accel__workers_run_queued(accel_runtime *rt)
{
    uint64_t now = 0;
    for (accel__lane lane = ACCEL__LANE_GENERAL; lane < ACCEL__LANES; lane++) {
        accel__sched_entity *e;
        while ((e = accel__sched_pick(rt->sched, lane)) != NULL) {
            now = accel__now_ns();
            run_visit(rt, NULL, e->owner, &now);
        }
    }
}

static const accel__comp_ops comp_ops = {
    .run_extra = worker_loop, .wake_parked = accel__park_wake_general};

int accel__workers_start(accel_runtime *rt)
{
    if (rt->cfg.flags & ACCEL_RUNTIME_HOST_WORKERS) {
        /* The host drives the slots (host.c); the monitor watches them. */
        return accel__comp_start(rt, &comp_ops);
    }
    for (unsigned i = 0; i < rt->nworkers; i++) {
        accel__worker *w = &rt->workers[i];
        w->rt = rt;
        w->index = i;
        w->lane = accel__lane_of_slot(i, rt->cfg.short_lane_workers);
        if (ACCEL__FAULT("pthread_create") ||
            pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            rt->nworkers = i;
            accel__workers_stop(rt);
            return ACCEL_ENOMEM;
        }
        setup_thread(rt, w);
    }
    if (accel__comp_start(rt, &comp_ops) != ACCEL_OK) {
        accel__workers_stop(rt);
        return ACCEL_ENOMEM;
    }
    return ACCEL_OK;
}

void accel__workers_stop(accel_runtime *rt)
{
    /* release: pairs with the acquire loads in worker_loop and
     * accel__park_worker. */
    atomic_store_explicit(&rt->stopping, 1, memory_order_release);
    if (rt->cfg.flags & ACCEL_RUNTIME_HOST_WORKERS) {
        /* no worker threads (the host stopped its drivers: accel.h); the
         * monitor */
        accel__comp_stop(rt);
        return;
    }
    atomic_fetch_add_explicit(&rt->park_seq, 1, memory_order_release);
    accel__futex_wake(&rt->park_seq, INT_MAX);
    atomic_fetch_add_explicit(&rt->park_seq_short, 1, memory_order_release);
    accel__futex_wake(&rt->park_seq_short, INT_MAX);
    for (unsigned i = 0; i < rt->nworkers; i++)
        pthread_join(rt->workers[i].thread, NULL);
    accel__comp_stop(rt); /* the monitor, then the extra workers */
}
