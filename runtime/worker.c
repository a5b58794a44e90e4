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

#include "clock.h"
#include "compensate.h"
#include "cpu_limits.h"
#include "fault.h"
#include "futex.h"
#include "park.h"
#include "presume.h"
#include "rcu.h"
#include "runtime_types.h"
#include "session.h"
#include "visit.h"
#include "worker.h"
#include "yield.h"

/* A parked worker that no wake has claimed yet: its count word
 * (runtime_types.h: parked in the low 32 bits, claimed in the high). */
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
    /* seq_cst loads (plain on x86): pair with the parker's seq_cst fence
     * between its announce and its second pick (park.c): either these
     * loads see it parked, or that pick sees the sessions whose seq_cst
     * pushes precede them in S. Counts: the calendar publishes the
     * sessions, and a claim publishes nothing. */
    uint64_t is = atomic_load_explicit(&rt->idle_short, memory_order_seq_cst);
    uint64_t iw =
        atomic_load_explicit(&rt->idle_workers, memory_order_seq_cst);
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

/* The time w sat blocked in its visit begun at t0, to now (the visit's
 * hook, visit.h, and its end). relaxed: a look at whether the monitor
 * detected w, or dropped a detection back in this visit (the call reads
 * what it published with either as a seqlock: compensate.c). */
static inline uint64_t visit_blocked(accel__worker *w, uint64_t t0)
{
    if (__builtin_expect(
            (w->own_ns | w->block_depth |
             atomic_load_explicit(&w->block, memory_order_relaxed)) != 0 ||
                atomic_load_explicit(&w->detected_bank_vis,
                                     memory_order_relaxed) ==
                    atomic_load_explicit(&w->visits, memory_order_relaxed),
            0))
        return accel__compensate_visit_blocked_ns(w, t0);
    return 0;
}

/* The visit's hook (visit.h): its blocked time so far, or 0 (the visit
 * ends at a quantum of wall time) once every extra the cap allows is
 * running. The visit's end credits a wait that had no one in its place
 * at its own time (extras_short); between ops, with the worker's own
 * wait over, the counts cannot tell whether the next one will: an
 * announced wait that begins at the cap is not replaced. */
static uint64_t visit_blocked_hook(void *arg, uint64_t t0)
{
    accel__worker *w = arg;
    if (accel__compensate_at_cap(w->rt))
        return 0;
    return visit_blocked(w, t0);
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
    accel__visit_begin(&v, rt, s, *now);
    if (w) {
        /* A session whose ops mostly wait, tracked from its visits so
         * far (the others keep the plain clock check), on a general-lane
         * worker: extras take general workers' places, so a short-lane
         * worker's wait holds the short lane. */
        if (__builtin_expect(accel__sched_entity_waits(&s->se), 0) &&
            w->lane == ACCEL__LANE_GENERAL) {
            v.blocked = visit_blocked_hook;
            v.blocked_arg = w;
        }
        accel__presume_begin(w, s);
    }
    accel__visit_run(&v);
    if (w) {
        wake_for_queued(rt, &v);
        accel__presume_judge(w, s);
    }
    if (w)
        v.blocked_ns = visit_blocked(w, v.t0);
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
    accel__compensate_thread_begin(w);
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
            accel__compensate_visit_done(w); /* an announcement left open by the op */
        /* An extra worker more than the blocked ones need leaves after
         * its visit (not after a wake: it may hold a wake's claim). It
         * will not pick again, so a session it re-queued wakes a worker
         * (as accel_host_visit_end_stop). */
        if (w->extra && accel__compensate_surplus(rt)) {
            if (lanes)
                accel__park_wake_lanes(rt, lanes);
            break;
        }
        /* Re-queued for lanes we are not in (a short-lane worker's session
         * turned long): a worker that may run it must not stay parked. */
        if (lanes && !(lanes & accel__lane_mask(w->lane)))
            accel__park_wake_lanes(rt, lanes);
    }
    accel__compensate_thread_end();
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

void accel__worker_run_queued(accel_runtime *rt)
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

static const accel__compensate_ops comp_ops = {
    .run_extra = worker_loop, .wake_parked = accel__park_wake_general};

int accel__worker_start(accel_runtime *rt)
{
    if (rt->cfg.flags & ACCEL_RUNTIME_HOST_WORKERS) {
        /* The host runs the workers (host.c); the monitor watches them. */
        return accel__compensate_start(rt, &comp_ops);
    }
    for (unsigned i = 0; i < rt->nworkers; i++) {
        accel__worker *w = &rt->workers[i];
        w->rt = rt;
        w->index = i;
        w->lane = accel__lane_of_worker(i, rt->cfg.short_lane_workers);
        if (ACCEL__FAULT("pthread_create") ||
            pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            rt->nworkers = i;
            accel__worker_stop(rt);
            return ACCEL_ENOMEM;
        }
        setup_thread(rt, w);
    }
    if (accel__compensate_start(rt, &comp_ops) != ACCEL_OK) {
        accel__worker_stop(rt);
        return ACCEL_ENOMEM;
    }
    return ACCEL_OK;
}

void accel__worker_stop(accel_runtime *rt)
{
    /* release: pairs with the acquire loads in worker_loop and
     * accel__park_worker. */
    atomic_store_explicit(&rt->stopping, 1, memory_order_release);
    if (rt->cfg.flags & ACCEL_RUNTIME_HOST_WORKERS) {
        /* no worker threads (the host stopped its host workers: accel.h); the
         * monitor */
        accel__compensate_stop(rt);
        return;
    }
    atomic_fetch_add_explicit(&rt->park_seq, 1, memory_order_release);
    accel__futex_wake(&rt->park_seq, INT_MAX);
    atomic_fetch_add_explicit(&rt->park_seq_short, 1, memory_order_release);
    accel__futex_wake(&rt->park_seq_short, INT_MAX);
    for (unsigned i = 0; i < rt->nworkers; i++)
        pthread_join(rt->workers[i].thread, NULL);
    accel__compensate_stop(rt); /* the monitor, then the extra workers */
}
