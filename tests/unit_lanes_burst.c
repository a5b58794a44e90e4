/*
 * A burst on two short-class sessions while a general and a short-lane
 * worker are both parked (promise 6 of docs/contract.md: a published op
 * always gets a worker; no wake-up is lost), traced.
 *
 * The test records, in a ring of its own (no cost in the runtime: the two
 * test seams of park.h, NULL outside tests):
 *   claim  a waker claimed a parked worker of a lane (accel__wake_window_hook,
 *          after the claim, just before the futex wake), and who it was;
 *   park   a worker found nothing and is about to announce itself idle
 *          (accel__park_window_hook), with the ops queued at that moment;
 * and, per op, the worker that ran it and when. For each worker's first
 * op it reads the thread's CPU time and its schedstat run delay (time
 * runnable but not on a CPU), and, with the values from before the burst
 * (both asleep), splits the time from the wake issued to that worker to
 * its first op into: on a CPU, runnable waiting for one, and asleep. A
 * worker asleep after its wake was issued while ops waited is a lost or
 * skipped wake; runnable-but-waiting is preemption. A sampler thread
 * peeks at the scheduler every 50 us (lock-free, read-only) for a session
 * queued for a lane while a worker of that lane is parked and unclaimed,
 * and the trace gives, per session, the longest gap between two of its
 * visits and whether a worker was idle through it.
 *
 * Asserted (behaviour, no timing): every op runs once; the burst's first
 * two wakes claim the two parked workers, one of each lane; no worker
 * goes to sleep (a voluntary context switch after its idle announcement,
 * before its next op) while both sessions had ops waiting; a worker
 * sleeps only in its futex wait after an idle announcement (its
 * voluntary context switches, read at each op's start and end and at
 * each announcement: a preemption is an involuntary one); and neither of
 * the sampler's two states below holds two samples in a row: a worker
 * asleep through a wake already made, or asleep unclaimed while both
 * sessions wait in the scheduler. The figures are printed for every
 * round (ACCEL_BURST_ROUNDS, default 4).
 *
 * Promises: 6
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core_util.h"
#include "park.h"
#include "runtime.h"
#include "sched_core.h"
#include "session.h"
#include "unit_watchdog.h"

UNIT_WATCHDOG_SUITE(lanes_burst);

#define OPS 600          /* per session */
#define OP_NS 20000      /* each op spins 20 us of CPU: short class */
#define MAX_EV 8192

enum { EV_CLAIM, EV_PARK };
enum { WHO_GENERAL, WHO_SHORT, WHO_OTHER };

typedef struct ev {
    int64_t t;
    int kind, who, lane;
    long vcsw;         /* the thread's voluntary context switches */
    int pend_a, pend_b; /* ops submitted and not started, per session */
} ev;

typedef struct op_rec {
    int64_t t;
    int who;
    long vcsw, vcsw_end; /* at its start and at its end */
    uint64_t visit; /* the session's visits ended before this op */
} op_rec;

typedef struct first_op {
    int64_t t, cpu_ns, run_delay_ns;
} first_op;

static struct {
    _Atomic int armed;
    _Atomic int nev;
    ev evs[MAX_EV];
    pid_t tid[2]; /* general, short */
    accel_session *sess[2];
    _Atomic int submitted[2], started[2];
    op_rec ops[2][OPS];
    first_op first[2];
    _Atomic int first_set[2];
    int64_t sum_exec0[2], run_delay0[2];
    pid_t submitter;
    /* Each worker's actions (ops started, idle announcements): a waker
     * that acted after its claim has made its futex wake. */
    _Atomic long acts[2];
    /* The last claim of each lane's worker: who made it and its count of
     * actions then (the submitter's: ops submitted). seq is odd while the
     * claim hook writes them. */
    _Atomic unsigned claim_seq[2];
    _Atomic int claim_waker[2]; /* WHO_*, or 3: the submitter */
    _Atomic long claim_mark[2];
    _Atomic long claim_target[2]; /* the claimed worker's actions then */
} tr;

#define WHO_SUBMITTER 3

static int who_am_i(void)
{
    pid_t me = (pid_t)syscall(SYS_gettid);
    return me == tr.tid[0] ? WHO_GENERAL : me == tr.tid[1] ? WHO_SHORT
                                                           : WHO_OTHER;
}

static long my_vcsw(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_nvcsw;
}

static void record(int kind, unsigned lane)
{
    if (!atomic_load_explicit(&tr.armed, memory_order_acquire))
        return;
    int i = atomic_fetch_add(&tr.nev, 1);
    if (i >= MAX_EV)
        return;
    ev *e = &tr.evs[i];
    e->t = (int64_t)accel_now_ns();
    e->kind = kind;
    e->who = who_am_i();
    e->lane = (int)lane;
    e->vcsw = my_vcsw();
    e->pend_a = atomic_load(&tr.submitted[0]) - atomic_load(&tr.started[0]);
    e->pend_b = atomic_load(&tr.submitted[1]) - atomic_load(&tr.started[1]);
}

static long submitted_total(void)
{
    return atomic_load(&tr.submitted[0]) + atomic_load(&tr.submitted[1]);
}

/* What a waker has done so far (-1: not one the test follows). */
static long acts_of(int who)
{
    return who == WHO_SUBMITTER ? submitted_total()
           : who < 2            ? atomic_load(&tr.acts[who])
                                : -1;
}

static void on_claim(accel_runtime *rt, unsigned lane)
{
    (void)rt;
    if (atomic_load_explicit(&tr.armed, memory_order_acquire)) {
        pid_t me = (pid_t)syscall(SYS_gettid);
        int who = me == tr.submitter ? WHO_SUBMITTER : who_am_i();
        int l = lane == ACCEL__LANE_SHORT;
        atomic_fetch_add(&tr.claim_seq[l], 1); /* odd: writing */
        atomic_store(&tr.claim_waker[l], who);
        atomic_store(&tr.claim_mark[l], acts_of(who));
        atomic_store(&tr.claim_target[l], atomic_load(&tr.acts[l]));
        atomic_fetch_add(&tr.claim_seq[l], 1);
    }
    record(EV_CLAIM, lane);
}

static void on_park(accel_runtime *rt, unsigned lane)
{
    (void)rt;
    int who = who_am_i();
    if (who < 2)
        atomic_fetch_add(&tr.acts[who], 1);
    record(EV_PARK, lane);
}

/* schedstat: ns on a CPU, ns runnable waiting for one. */
static void schedstat(pid_t tid, int64_t *exec, int64_t *delay)
{
    char path[64];
    unsigned long long a = 0, b = 0;
    snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tid);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%llu %llu", &a, &b) != 2)
            a = b = 0;
        fclose(f);
    }
    *exec = (int64_t)a;
    *delay = (int64_t)b;
}

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int op_spin(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    intptr_t k = (intptr_t)arg;
    int sess = (int)(k / OPS), idx = (int)(k % OPS);
    atomic_fetch_add(&tr.started[sess], 1);
    int who = who_am_i();
    if (who < 2)
        atomic_fetch_add(&tr.acts[who], 1);
    op_rec *r = &tr.ops[sess][idx];
    r->t = (int64_t)accel_now_ns();
    r->who = who;
    r->vcsw = my_vcsw();
    /* relaxed: a count bumped at each visit's end (session.h); ops of one
     * visit read one value. */
    r->visit = atomic_load_explicit(&tr.sess[sess]->visits,
                                    memory_order_relaxed);
    if (who != WHO_OTHER && !atomic_exchange(&tr.first_set[who], 1)) {
        pid_t me = (pid_t)syscall(SYS_gettid);
        int64_t exec;
        tr.first[who].t = r->t;
        tr.first[who].cpu_ns = thread_cpu_ns();
        schedstat(me, &exec, &tr.first[who].run_delay_ns);
    }
    int64_t end = thread_cpu_ns() + OP_NS;
    while (thread_cpu_ns() < end)
        ;
    r->vcsw_end = my_vcsw();
    return 0;
}

static int find_workers(void)
{
    static const char *const general[] = {"accel-w"}, *const shortl[] = {"accel-short"};
    tr.tid[0] = tr.tid[1] = 0;
    return tu_tids_named(general, 1, &tr.tid[0], 1) +
           tu_tids_named(shortl, 1, &tr.tid[1], 1);
}


/* A sampler thread during the burst: whether the scheduler holds a
 * session that a worker of a lane would pick (accel__sched_peek:
 * lock-free, read-only) while a worker of that lane is parked and no wake
 * has claimed it. Brief stretches are the moment between an enqueue and
 * its waker's claim, or a re-queue and its worker's own pick; the longest
 * stretch is printed. Two states fail the test when two samples in a row
 * show them (one sample can be torn, the states being read one after the
 * other), each only where nothing the runtime does could still end it:
 *   beside: both sessions queued for a lane whose only parked worker is
 *     asleep (its thread in S) and unclaimed, and the submitter finished
 *     a submit between the two samples (or had submitted the whole
 *     burst): a waker between its push and its claim is the submitter
 *     inside accel_submit, or a worker that will pick one of the two
 *     itself, which leaves the other to the sleeper;
 *   claimed: a lane's only parked worker claimed by a wake, asleep, not
 *     having acted since the claim, while its waker has acted after it
 *     (so its futex wake was made: the wake makes the thread runnable)
 *     and ops are waiting: a worker sleeping through its wake. */
static struct {
    accel_runtime *rt;
    _Atomic int stop, submitted_all;
    int64_t longest[2], since[2], samples, hits[2];
    int64_t beside[2], beside_t[2], claimed[2], claimed_t[2];
} smp;

static uint32_t unclaimed_of(uint64_t v)
{
    return (uint32_t)v - (uint32_t)(v >> 32);
}

static _Atomic uint64_t *idle_word(accel_runtime *rt, int l)
{
    return l ? &rt->idle_short : &rt->idle_workers;
}

static bool ops_waiting(void)
{
    return atomic_load(&tr.submitted[0]) - atomic_load(&tr.started[0]) > 0 ||
           atomic_load(&tr.submitted[1]) - atomic_load(&tr.started[1]) > 0;
}

/* The "claimed" state of lane l now; *seq: the claim it is about. */
static bool claimed_asleep(int l, unsigned *seq)
{
    unsigned q = atomic_load(&tr.claim_seq[l]);
    *seq = q;
    if (q == 0 || (q & 1))
        return false;
    int waker = atomic_load(&tr.claim_waker[l]);
    long mark = atomic_load(&tr.claim_mark[l]);
    long target = atomic_load(&tr.claim_target[l]);
    long acted = acts_of(waker);
    if (mark < 0 || acted <= mark)
        return false; /* the waker may not have made its wake yet */
    uint64_t idle = atomic_load(idle_word(smp.rt, l));
    if ((uint32_t)idle != 1 || (idle >> 32) == 0 || !ops_waiting())
        return false;
    if (atomic_load(&tr.acts[l]) != target)
        return false; /* it has acted since: another claim's turn */
    return tu_thread_state(tr.tid[l]) == 'S' &&
           atomic_load(&tr.claim_seq[l]) == q;
}

static void *sampler_main(void *p)
{
    (void)p;
    bool prev_beside[2] = {false, false}, prev_claimed[2] = {false, false};
    long prev_sub[2] = {0, 0};
    int prev_all[2] = {0, 0};
    unsigned prev_seq[2] = {0, 0};
    for (int l = 0; l < 2; l++) {
        smp.longest[l] = 0;
        smp.since[l] = -1;
        smp.hits[l] = smp.beside[l] = smp.claimed[l] = 0;
        smp.beside_t[l] = smp.claimed_t[l] = 0;
    }
    smp.samples = 0;
    while (!atomic_load_explicit(&smp.stop, memory_order_acquire)) {
        long sub = submitted_total();
        int all = atomic_load(&smp.submitted_all);
        for (int l = 0; l < 2; l++) {
            accel__lane lane = l ? ACCEL__LANE_SHORT : ACCEL__LANE_GENERAL;
            accel__sched_entity *e[1];
            uint32_t h[1];
            bool queued = accel__sched_peek(smp.rt->sched, lane, e, h, 1) > 0;
            uint64_t idle = atomic_load(idle_word(smp.rt, l));
            bool sleeping = unclaimed_of(idle) > 0;
            int64_t now = (int64_t)accel_now_ns();
            if (queued && sleeping) {
                smp.hits[l]++;
                if (smp.since[l] < 0)
                    smp.since[l] = now;
                if (now - smp.since[l] > smp.longest[l])
                    smp.longest[l] = now - smp.since[l];
            } else
                smp.since[l] = -1;

            bool beside =
                (uint32_t)idle == 1 && (idle >> 32) == 0 &&
                accel__sched_queued(smp.rt->sched, lane, 2) >= 2 &&
                tu_thread_state(tr.tid[l]) == 'S';
            if (beside && prev_beside[l] &&
                (sub > prev_sub[l] || prev_all[l]) && smp.beside[l]++ == 0)
                smp.beside_t[l] = now;
            prev_beside[l] = beside;
            prev_sub[l] = sub;
            prev_all[l] = all;

            unsigned seq;
            bool claimed = claimed_asleep(l, &seq);
            if (claimed && prev_claimed[l] && seq == prev_seq[l] &&
                smp.claimed[l]++ == 0)
                smp.claimed_t[l] = now;
            prev_claimed[l] = claimed;
            prev_seq[l] = seq;
        }
        smp.samples++;
        tu_nap_us(50);
    }
    return NULL;
}

static const char *who_name(int w)
{
    return w == WHO_GENERAL ? "general" : w == WHO_SHORT ? "short" : "other";
}

/* Every sleep of a worker is its futex wait after an idle announcement:
 * between the end of one of its ops and the start of its next, with no
 * announcement between, its voluntary context switches do not move (a
 * preemption is an involuntary one); from an announcement to its next
 * op or announcement they move by at most one. Returns how many times
 * that did not hold during the burst. */
typedef struct wev {
    int64_t t;
    long v_in, v_out;
    int park;
} wev;

static int wev_cmp(const void *a, const void *b)
{
    const wev *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

static int sleeps_outside_parking(int nev, int64_t t0)
{
    static wev list[2 * OPS + MAX_EV];
    int bad = 0;
    for (int w = 0; w < 2; w++) {
        int n = 0;
        for (int k = 0; k < 2; k++)
            for (int j = 0; j < OPS; j++)
                if (tr.ops[k][j].who == w)
                    list[n++] = (wev){tr.ops[k][j].t, tr.ops[k][j].vcsw,
                                      tr.ops[k][j].vcsw_end, 0};
        for (int i = 0; i < nev; i++)
            if (tr.evs[i].kind == EV_PARK && tr.evs[i].who == w &&
                tr.evs[i].t >= t0)
                list[n++] = (wev){tr.evs[i].t, tr.evs[i].vcsw,
                                  tr.evs[i].vcsw, 1};
        qsort(list, (size_t)n, sizeof(list[0]), wev_cmp);
        for (int i = 0; i + 1 < n; i++) {
            long slept = list[i + 1].v_in - list[i].v_out;
            if (slept <= list[i].park)
                continue;
            if (bad++ < 8)
                fprintf(stderr,
                        "  FAIL: the %s worker slept %ld times between its "
                        "%s at %.3f ms and its %s at %.3f ms\n",
                        who_name(w), slept,
                        list[i].park ? "idle announcement" : "op",
                        (list[i].t - t0) / 1e6,
                        list[i + 1].park ? "idle announcement" : "op",
                        (list[i + 1].t - t0) / 1e6);
        }
    }
    if (bad)
        fprintf(stderr, "  slept outside parking: %d\n", bad);
    return bad;
}

/* One round: both workers parked, then OPS ops on a and on b from one
 * thread, as fast as it can. Prints the trace; returns the number of
 * sleeps while both sessions had ops waiting. */
static int burst_round(accel_runtime *rt, accel_session *s[2], int round)
{
    unit_step("both workers park");
    for (int k = 0; k < 2; k++) {
        atomic_store(&tr.submitted[k], 0);
        atomic_store(&tr.started[k], 0);
        atomic_store(&tr.first_set[k], 0);
    }
    /* Recording from here: a wake while they settle shows too (at a
     * negative time). The schedstat figures are taken while both sleep
     * (asleep before and after the reading, no claim in between). */
    atomic_store(&tr.nev, 0);
    atomic_store_explicit(&tr.armed, 1, memory_order_release);
    for (;;) {
        while (tu_thread_state(tr.tid[0]) != 'S' ||
               tu_thread_state(tr.tid[1]) != 'S' ||
               (uint32_t)atomic_load(&rt->idle_workers) != 1 ||
               (uint32_t)atomic_load(&rt->idle_short) != 1)
            tu_nap_us(200);
        int before = atomic_load(&tr.nev);
        for (int k = 0; k < 2; k++)
            schedstat(tr.tid[k], &tr.sum_exec0[k], &tr.run_delay0[k]);
        if (tu_thread_state(tr.tid[0]) == 'S' && tu_thread_state(tr.tid[1]) == 'S' &&
            atomic_load(&tr.nev) == before)
            break;
    }
    smp.rt = rt;
    atomic_store(&smp.stop, 0);
    atomic_store(&smp.submitted_all, 0);
    pthread_t sampler;
    cr_assert_eq(pthread_create(&sampler, NULL, sampler_main, NULL), 0);
    int64_t t0 = (int64_t)accel_now_ns();
    unit_step("the burst is submitted");
    for (int i = 0; i < OPS; i++)
        for (int k = 0; k < 2; k++) {
            accel_op op = {.fn = op_spin, .arg = (void *)(intptr_t)(k * OPS + i)};
            cr_assert_eq(accel_submit(s[k], &op, ACCEL_FOREVER), ACCEL_OK);
            atomic_fetch_add(&tr.submitted[k], 1);
        }
    atomic_store(&smp.submitted_all, 1);
    unit_step("the burst runs");
    for (int k = 0; k < 2; k++)
        cr_assert_eq(accel_session_sync(s[k], ACCEL_FOREVER), ACCEL_OK);
    atomic_store_explicit(&tr.armed, 0, memory_order_release);
    int64_t t_end = (int64_t)accel_now_ns();
    atomic_store_explicit(&smp.stop, 1, memory_order_release);
    pthread_join(sampler, NULL);
    int nev = atomic_load(&tr.nev);
    if (nev > MAX_EV)
        nev = MAX_EV;

    /* Who ran what. */
    int by[3] = {0}, by_first[3] = {0};
    int64_t window = (t_end - t0) / 4; /* the first quarter of the burst */
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(atomic_load(&tr.started[k]), OPS,
                     "session %d: %d of %d ops ran", k,
                     atomic_load(&tr.started[k]), OPS);
        for (int i = 0; i < OPS; i++) {
            by[tr.ops[k][i].who]++;
            if (tr.ops[k][i].t - t0 < window)
                by_first[tr.ops[k][i].who]++;
        }
    }
    fprintf(stderr,
            "round %d: burst %.1f ms; ops run by general %d, short %d, other "
            "%d; in its first quarter (%.1f ms): general %d, short %d\n",
            round, (t_end - t0) / 1e6, by[0], by[1], by[2], window / 1e6,
            by_first[0], by_first[1]);

    /* The wakes: every claim, in order. */
    int64_t wake_t[2] = {-1, -1};
    int claims = 0;
    for (int i = 0; i < nev; i++) {
        ev *e = &tr.evs[i];
        if (e->kind != EV_CLAIM)
            continue;
        int w = e->lane == ACCEL__LANE_SHORT ? WHO_SHORT : WHO_GENERAL;
        if (wake_t[w] < 0 && e->t >= t0)
            wake_t[w] = e->t;
        if (claims++ < 12)
            fprintf(stderr,
                    "  claim %d at %8.3f ms by %-7s of the %s worker (queued "
                    "a %d, b %d)\n",
                    claims, (e->t - t0) / 1e6, who_name(e->who),
                    who_name(w), e->pend_a, e->pend_b);
    }
    fprintf(stderr, "  %d claims in all\n", claims);
    cr_assert(wake_t[0] >= 0 && wake_t[1] >= 0,
              "round %d: the burst's wakes did not claim both parked workers "
              "(general %s, short %s)",
              round, wake_t[0] >= 0 ? "claimed" : "never",
              wake_t[1] >= 0 ? "claimed" : "never");

    /* Each worker: wake issued to first op, split. */
    for (int w = 0; w < 2; w++) {
        if (!atomic_load(&tr.first_set[w])) {
            fprintf(stderr, "  %s worker: ran no op of the burst\n",
                    who_name(w));
            continue;
        }
        first_op *f = &tr.first[w];
        int64_t delay = f->t - wake_t[w];
        int64_t cpu = f->cpu_ns - tr.sum_exec0[w];
        int64_t runq = f->run_delay_ns - tr.run_delay0[w];
        fprintf(stderr,
                "  %s worker: wake issued at %.3f ms, first op at %.3f ms: "
                "%.3f ms later = %.3f on a CPU + %.3f runnable waiting for "
                "one + %.3f asleep\n",
                who_name(w), (wake_t[w] - t0) / 1e6, (f->t - t0) / 1e6,
                delay / 1e6, cpu / 1e6, runq / 1e6,
                (delay - cpu - runq) / 1e6);
    }

    /* Idle announcements: did the worker then sleep (a voluntary switch
     * before its next op) while both sessions had ops waiting? */
    int bad = 0;
    for (int i = 0; i < nev; i++) {
        ev *e = &tr.evs[i];
        if (e->kind != EV_PARK || e->who == WHO_OTHER)
            continue;
        int64_t next_t = INT64_MAX;
        long next_v = e->vcsw;
        for (int k = 0; k < 2; k++)
            for (int j = 0; j < OPS; j++) {
                op_rec *r = &tr.ops[k][j];
                if (r->who == e->who && r->t > e->t && r->t < next_t)
                    next_t = r->t, next_v = r->vcsw;
            }
        bool slept = next_t != INT64_MAX && next_v > e->vcsw;
        bool both_wait = e->pend_a > 0 && e->pend_b > 0;
        if (slept && both_wait)
            bad++;
        fprintf(stderr,
                "  park: %s worker at %.3f ms, accepted and not started: a "
                "%d, b %d; its next op %s %.3f ms%s\n",
                who_name(e->who), (e->t - t0) / 1e6, e->pend_a, e->pend_b,
                next_t == INT64_MAX ? "none" : "at",
                next_t == INT64_MAX ? 0.0 : (next_t - t0) / 1e6,
                slept ? ", slept before it" : "");
        /* Who held each session with ops waiting: the worker of its
         * last op before and its first op after the announcement. */
        for (int k = 0; k < 2; k++) {
            if ((k ? e->pend_b : e->pend_a) == 0)
                continue;
            int before = -1, after = -1;
            for (int j = 0; j < OPS; j++) {
                if (tr.ops[k][j].t <= e->t)
                    before = j;
                else if (after < 0)
                    after = j;
            }
            fprintf(stderr,
                    "    %s: op %d by %s at %.3f ms, op %d by %s at %.3f "
                    "ms\n",
                    k ? "b" : "a", before,
                    before < 0 ? "-" : who_name(tr.ops[k][before].who),
                    before < 0 ? 0.0 : (tr.ops[k][before].t - t0) / 1e6,
                    after, after < 0 ? "-" : who_name(tr.ops[k][after].who),
                    after < 0 ? 0.0 : (tr.ops[k][after].t - t0) / 1e6);
        }
    }
    fprintf(stderr, "  slept while both sessions had ops waiting: %d\n",
            bad);
    bad += sleeps_outside_parking(nev, t0);
    fprintf(stderr,
            "  sampler (%lld samples): a session queued for a lane while "
            "a worker of it sat parked unclaimed: general %lld samples, "
            "longest %.3f ms; short %lld samples, longest %.3f ms\n",
            (long long)smp.samples, (long long)smp.hits[0],
            smp.longest[0] / 1e6, (long long)smp.hits[1],
            smp.longest[1] / 1e6);
    for (int l = 0; l < 2; l++) {
        if (smp.beside[l])
            fprintf(stderr,
                    "  FAIL: both sessions queued while the %s worker slept "
                    "parked and unclaimed, %lld times two samples in a row "
                    "(first at %.3f ms)\n",
                    who_name(l), (long long)smp.beside[l],
                    (smp.beside_t[l] - t0) / 1e6);
        if (smp.claimed[l])
            fprintf(stderr,
                    "  FAIL: the %s worker slept on after its wake was "
                    "made, ops waiting, %lld times two samples in a row "
                    "(first at %.3f ms)\n",
                    who_name(l), (long long)smp.claimed[l],
                    (smp.claimed_t[l] - t0) / 1e6);
        bad += (int)(smp.beside[l] + smp.claimed[l]);
    }
    /* Between two visits of a session its ops wait in the scheduler, for
     * any worker: the longest such gap of each session, and whether a
     * worker was idle (announced, no op) through it. */
    for (int k = 0; k < 2; k++) {
        int64_t gap = -1;
        int at = -1;
        for (int j = 0; j + 1 < OPS; j++)
            if (tr.ops[k][j + 1].visit != tr.ops[k][j].visit &&
                tr.ops[k][j + 1].t - tr.ops[k][j].t > gap)
                gap = tr.ops[k][j + 1].t - tr.ops[k][j].t, at = j;
        if (at < 0)
            continue;
        op_rec *x = &tr.ops[k][at], *y = &tr.ops[k][at + 1];
        int idle_through[2] = {0, 0};
        for (int w = 0; w < 2; w++) {
            int64_t last_park = INT64_MIN, last_op = INT64_MIN;
            for (int i = 0; i < nev; i++)
                if (tr.evs[i].kind == EV_PARK && tr.evs[i].who == w &&
                    tr.evs[i].t <= x->t && tr.evs[i].t > last_park)
                    last_park = tr.evs[i].t;
            for (int kk = 0; kk < 2; kk++)
                for (int j = 0; j < OPS; j++)
                    if (tr.ops[kk][j].who == w && tr.ops[kk][j].t <= y->t &&
                        tr.ops[kk][j].t > last_op)
                        last_op = tr.ops[kk][j].t;
            idle_through[w] = last_park != INT64_MIN && last_op < last_park;
        }
        fprintf(stderr,
                "  %s: longest gap across a visit change %.3f ms (op %d by "
                "%s at %.3f ms, visit %llu; op %d by %s at %.3f ms, visit "
                "%llu); idle through it: general %s, short %s\n",
                k ? "b" : "a", gap / 1e6, at, who_name(x->who),
                (x->t - t0) / 1e6, (unsigned long long)x->visit, at + 1,
                who_name(y->who), (y->t - t0) / 1e6,
                (unsigned long long)y->visit, idle_through[0] ? "yes" : "no",
                idle_through[1] ? "yes" : "no");
    }
    return bad;
}

Test(lanes_burst, burst_on_two_short_sessions_traced, .timeout = 120)
{
    memset(&tr, 0, sizeof(tr));
    atomic_store(&accel__wake_window_hook, on_claim);
    atomic_store(&accel__park_window_hook, on_park);
    /* short_op_ns of 1 s: the ops stay short-class, so either lane may
     * run either session. */
    accel_runtime_config c = {.workers = 2, .short_lane_workers = 1,
                              .short_op_ns = 1000000000ull};
    accel_runtime *rt = NULL;
    cr_assert_eq(accel_runtime_create(&c, &rt), ACCEL_OK);
    accel_session *s[2] = {tu_open(rt, "a", 2 * OPS, 0),
                           tu_open(rt, "b", 2 * OPS, 0)};
    cr_assert(s[0] && s[1]);
    tr.sess[0] = s[0];
    tr.sess[1] = s[1];
    tr.submitter = (pid_t)syscall(SYS_gettid);
    cr_assert_eq(find_workers(), 2);
    const char *e = getenv("ACCEL_BURST_ROUNDS");
    int rounds = e && atoi(e) > 0 ? atoi(e) : 4;
    int bad = 0;
    for (int r = 0; r < rounds; r++)
        bad += burst_round(rt, s, r);
    cr_assert_eq(bad, 0,
                 "%d times a worker slept while work waited for it (see "
                 "the FAIL lines and the trace above)",
                 bad);
    atomic_store(&accel__wake_window_hook, NULL);
    atomic_store(&accel__park_window_hook, NULL);
    accel_session_release(s[0]);
    accel_session_release(s[1]);
    unit_step("destroy");
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}
