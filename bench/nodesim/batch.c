/*
 * The batch scenario: a batchable consensus chain beside the real
 * single-op bodies of the other chains, run four ways on the same
 * arrivals (same seed, same slices):
 *
 *   accel batching   accel (node); the chain's session has a batch function
 *                    (accel_session_set_batch, up to NS_BATCH_MAX ops a
 *                    call, no added wait: a batch is what is queued when a
 *                    worker visits the session)
 *   accel batch+hold the same, held back to fill a batch: max_delay_ns is
 *                    --batch-delay-ms (default the hand batcher's 10 ms
 *                    window, so both bound the added wait alike), and the
 *                    model's costs go in cost_fixed_ns / cost_per_op_ns, so
 *                    the runtime releases the session by the earliest
 *                    deadline less a full batch's cost when that comes
 *                    first. The runtime has no load signal: at low load a
 *                    hold never fills and runs its whole delay, which is
 *                    why the low-load latency target is judged on the row
 *                    with no added wait and the high-load work target on
 *                    this one (ns_batch_report).
 *   accel unbatched  accel (node); the chain's ops run one by one
 *   hand batcher     accel (node) for the other chains; the chain's ops go
 *                    to a thread of its own that gathers them for up to
 *                    10 ms or 72 ops, whichever comes first, and runs each
 *                    batch itself: what a node writes today without a
 *                    scheduler that batches (Nimbus's batch_validation.nim:
 *                    BatchAttAccumTime = 10 ms, BatchedCryptoSize = 72). Its
 *                    thread is in the same process on the same CPUs, so
 *                    its CPU is in the work per CPU-second like the
 *                    workers'; the OS, not accel, decides when it runs.
 *                    (Nimbus waits 5 ms more for a batch less than half
 *                    full, and redoes a failed batch one by one: the
 *                    votes here are all valid, and the extra wait is left
 *                    out, which can only shorten the baseline's latency.)
 *
 * The chain's op is one vote: a BLS12-381 signature to verify. Modelled
 * (no Debian library has BLS12-381), as the chains file's other BLS, zk
 * and FHE bodies are: a calibrated spin loop of the assumed cost, in the
 * same ns as every other body.
 *
 * Cost model, from published figures (modelled, not measured here):
 * - One verify, V: hash to G2, a two-pair multi-Miller loop and one final
 *   exponentiation: ~0.6-1 ms on one ~3 GHz core with blst
 *   (commonware monorepo PR #915: blst signature_verification 0.63 ms;
 *   bench/chains/default.conf: "two pairings, ~0.5-1 ms (blst
 *   benchmarks)"). The chain's ops assume V uniform in 0.5-0.9 ms.
 * - A batch of n signatures on distinct messages, checked as one random
 *   linear combination ("Fast verification of multiple BLS signatures",
 *   ethresear.ch, 2019): n+1 Miller loops and ONE final exponentiation
 *   instead of 2n and n, plus n 64-bit blinding multiplications; the n
 *   hashes to G2 are paid either way. The final exponentiation is ~57%
 *   of a pairing (nim-blscurve issue #28, MCL: Miller loop 3.25 ms, final
 *   exponentiation 4.36 ms), and Nimbus's batch_validation.nim names the
 *   constants a batch amortizes: "RNG for blinding and Final
 *   Exponentiation".
 * - So: a batch costs NS_BLS_FIXED x V (the final exponentiation, the
 *   aggregate signature's Miller loop, the blinding RNG) + NS_BLS_PER_OP x
 *   V per vote (its hash to G2, its Miller loop, its blinding). A batch
 *   of one costs V; 72 votes cost 33 V instead of 72 V (2.2x), in line
 *   with the "2x speedups" of nim-blscurve issue #52 and the "50-70%
 *   faster than non-batched" of commonware PR #915.
 * A vote is credited with its V whichever way it ran (the work it asks
 * for, as every op is credited with its cost), so what a batch saves
 * shows as more work per CPU-second.
 */
#include "nodesim.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NS_BLS_FIXED 0.55
#define NS_BLS_PER_OP 0.45
#define NS_BATCH_MAX 72u              /* accel's max_ops and the batcher's size */
#define NS_HAND_WINDOW_NS 10000000u   /* the batcher's accumulation time */
/* The chain (chains-file columns): Critical like the other consensus
 * chains, Poisson arrivals, a 50 ms deadline like the ed25519 votes; its
 * share of the offered op work before renormalising (default.conf's
 * shares sum to 1): a node's signature checks are a large part of its
 * CPU, so batching them matters. */
#define NS_BATCH_CHAIN                                                                   \
    "consensus-bls consensus critical 500 900 0.15 0 50 0 model\n"

int ns_batch_chainset(const ns_chainset *base, ns_chainset *out)
{
    ns_chainset one;
    if (base->n >= NS_MAX_CHAINS) {
        fprintf(stderr, "accel-nodesim: batch: the chain set has no room for the batchable "
                        "chain (at most %d chains)\n", NS_MAX_CHAINS);
        return -1;
    }
    if (ns_chains_parse(NS_BATCH_CHAIN, "the batchable chain", &one) != 0)
        return -1;
    *out = *base;
    for (size_t i = 0; i < base->n; i++)
        if (strcmp(base->c[i].name, one.c[0].name) == 0) {
            fprintf(stderr, "accel-nodesim: batch: the chain set already has a chain "
                            "named %s\n", one.c[0].name);
            return -1;
        }
    double share = 0.15, total = 0;
    for (size_t i = 0; i < base->n; i++)
        total += base->c[i].share;
    out->c[out->n] = one.c[0];
    out->c[out->n].share = share;
    out->n++;
    for (size_t i = 0; i < out->n; i++)
        out->c[i].share /= total + share;
    size_t u = strlen(out->desc);
    snprintf(out->desc + u, sizeof out->desc - u,
             "%sbatch scenario: + consensus-bls (Critical: BLS votes 0.5-0.9 ms each, "
             "verifiable as a batch; modelled)", u ? "\n" : "");
    return 0;
}

void ns_batch_print_model(const ns_chainset *cs, uint64_t delay_ns)
{
    const ns_chain_cfg *c = &cs->c[cs->n - 1];
    printf("Batch scenario: %s (%s, %.0f-%.0f us per vote, deadline %.0f ms, %.0f%% of "
           "the offered op work), modelled:\n  a batch of n votes costs %.2f x V + n x "
           "%.2f x V (V: a vote's single-verify cost; blst figures, bench/README.md), "
           "a vote is\n  credited with V however it ran. Systems:\n",
           c->name, ns_priority_name(c->priority), (double)c->cost_lo_ns / 1e3,
           (double)c->cost_hi_ns / 1e3, (double)c->deadline_ns / 1e6, 100 * c->share,
           NS_BLS_FIXED, NS_BLS_PER_OP);
    for (int s = NS_BATCH_ACCEL; s < NS_NSYS_ALL; s++) {
        printf("  %-16s %s", ns_system_name[s], ns_system_desc[s]);
        if (s == NS_BATCH_HELD)
            printf(" (held up to %.3g ms here)", (double)delay_ns / 1e6);
        printf("\n");
    }
}

/* One batch of the chain's votes, on whatever thread runs it: the op
 * body's rules for each vote (the run is over: skipped; its deadline
 * passed: expired, unrun), then one spin of the batch's modelled cost.
 * Each vote's outcome is set; the caller (accel, or the batcher) calls
 * ns_done for each. */
static void batch_body(ns_run *r, ns_op_rec *const *recs, uint32_t n)
{
    uint64_t now = bench_now_ns();
    /* acquire: pairs with the release store in ns_slice_finish, as in
     * ns_op (t_cut visible to ns_done once stop is seen) */
    bool stop = atomic_load_explicit(&r->stop, memory_order_acquire);
    double sum = 0;
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        ns_op_rec *rec = recs[i];
        if (stop) {
            rec->outcome = NS_SKIPPED;
        } else if (now > rec->deadline) {
            rec->outcome = NS_EXPIRED;
        } else {
            rec->outcome = NS_PENDING;
            sum += rec->cost;
            m++;
        }
    }
    if (!m)
        return;
    bench_burn_ns((uint64_t)llround(NS_BLS_FIXED * sum / m + NS_BLS_PER_OP * sum));
    uint64_t t = bench_now_ns();
    for (uint32_t i = 0; i < n; i++)
        if (recs[i]->outcome == NS_PENDING) {
            recs[i]->t_end = t;
            recs[i]->outcome = NS_DONE;
        }
    /* relaxed: statistics, read after the joins */
    atomic_fetch_add_explicit(&r->batches, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->batch_ops, m, memory_order_relaxed);
}

static void accel_batch(accel_ctx *ctx, void *const *args, uint32_t n, int *status,
                        void *user)
{
    (void)ctx;
    (void)status; /* arrives zeroed: every vote's status is 0, its outcome says */
    batch_body(user, (ns_op_rec *const *)args, n);
}

int ns_batch_configure(ns_run *r)
{
    accel_session *s = r->chain[r->batch_chain].sess;
    double v = ns_mean_cost(&r->cs->c[r->batch_chain]);
    accel_batch_config bc = {
        .fn = accel_batch,
        .user = r,
        .max_ops = NS_BATCH_MAX,
        .max_delay_ns = r->batch_delay_ns,
        /* the expected cost serves only the hold-back */
        .cost_fixed_ns = r->batch_delay_ns ? (uint64_t)(NS_BLS_FIXED * v) : 0,
        .cost_per_op_ns = r->batch_delay_ns ? (uint64_t)(NS_BLS_PER_OP * v) : 0,
        .struct_size = sizeof bc,
    };
    int st = accel_session_set_batch(s, &bc);
    if (st != ACCEL_OK) {
        fprintf(stderr, "accel-nodesim: accel_session_set_batch(%s%s): %s\n",
                r->cs->c[r->batch_chain].name,
                r->batch_delay_ns ? ", --batch-delay-ms" : "", accel_strerror(st));
        return -1;
    }
    return 0;
}

/* The hand-written batcher: a mutex-protected queue (a ring of depth
 * slots: admission keeps at most depth of the chain's ops outstanding)
 * and one thread. A batch starts with the oldest queued vote and runs
 * NS_HAND_WINDOW_NS after that vote was queued, or as soon as
 * NS_BATCH_MAX are queued. */
typedef struct ns_hand {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC; the thread waits on it */
    ns_op_rec **q;
    uint64_t *t_in; /* when each queued vote was queued */
    size_t cap, head, n;
    bool closing;
    pthread_t th;
    ns_run *r;
} ns_hand;

static void hand_free(ns_hand *h)
{
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    free(h->q);
    free(h->t_in);
    free(h);
}

static void *hand_main(void *arg)
{
    ns_hand *h = arg;
    ns_op_rec *batch[NS_BATCH_MAX];
    pthread_mutex_lock(&h->mu);
    for (;;) {
        while (!h->n && !h->closing)
            pthread_cond_wait(&h->cv, &h->mu);
        if (!h->n)
            break; /* closing, drained */
        uint64_t due = h->t_in[h->head] + NS_HAND_WINDOW_NS;
        while (h->n < NS_BATCH_MAX && !h->closing) {
            uint64_t now = bench_now_ns();
            if (now >= due)
                break;
            struct timespec ts = {(time_t)(due / 1000000000u), (long)(due % 1000000000u)};
            int rc = pthread_cond_timedwait(&h->cv, &h->mu, &ts);
            if (rc != 0 && rc != ETIMEDOUT && rc != EINTR)
                break;
        }
        uint32_t k = h->n < NS_BATCH_MAX ? (uint32_t)h->n : NS_BATCH_MAX;
        for (uint32_t i = 0; i < k; i++)
            batch[i] = h->q[(h->head + i) % h->cap];
        h->head = (h->head + k) % h->cap;
        h->n -= k;
        pthread_mutex_unlock(&h->mu);
        batch_body(h->r, batch, k);
        for (uint32_t i = 0; i < k; i++)
            ns_done(batch[i], 0);
        pthread_mutex_lock(&h->mu);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

int ns_hand_start(ns_run *r)
{
    ns_hand *h = calloc(1, sizeof *h);
    if (!h)
        return -1;
    h->r = r;
    h->cap = r->depth;
    h->q = calloc(h->cap, sizeof *h->q);
    h->t_in = calloc(h->cap, sizeof *h->t_in);
    pthread_condattr_t ca;
    bool ok = h->q && h->t_in && pthread_mutex_init(&h->mu, NULL) == 0;
    if (ok && (pthread_condattr_init(&ca) != 0 ||
               pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
               pthread_cond_init(&h->cv, &ca) != 0)) {
        pthread_mutex_destroy(&h->mu);
        ok = false;
    }
    if (!ok) {
        free(h->q);
        free(h->t_in);
        free(h);
        return -1;
    }
    pthread_condattr_destroy(&ca);
    if (pthread_create(&h->th, NULL, hand_main, h) != 0) {
        hand_free(h);
        return -1;
    }
    r->hand = h;
    return 0;
}

int ns_hand_submit(ns_run *r, ns_op_rec *rec)
{
    ns_hand *h = r->hand;
    pthread_mutex_lock(&h->mu);
    if (h->n == h->cap || h->closing) {
        pthread_mutex_unlock(&h->mu);
        return -1;
    }
    size_t at = (h->head + h->n) % h->cap;
    h->q[at] = rec;
    h->t_in[at] = bench_now_ns();
    h->n++;
    if (h->n == 1 || h->n >= NS_BATCH_MAX)
        pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
    return 0;
}

void ns_hand_stop(ns_run *r)
{
    ns_hand *h = r->hand;
    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    h->closing = true;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->th, NULL);
    hand_free(h);
    r->hand = NULL;
}

int ns_batch_record(ns_run *r)
{
    for (unsigned i = 0; i < r->nchains; i++) {
        ns_chain_run *cr = &r->chain[i];
        uint8_t *m = realloc(cr->met, cr->nmet + cr->nops + 1);
        if (!m)
            return -1;
        cr->met = m;
        for (size_t k = 0; k < cr->nops; k++) {
            const ns_op_rec *o = &cr->ops[k];
            uint8_t v = NS_MET_MISSED;
            if (o->outcome == NS_DONE)
                v = o->t_end <= o->deadline ? NS_MET_ONTIME : NS_MET_MISSED;
            else if (o->outcome == NS_SKIPPED && o->deadline > r->t_cut)
                v = NS_MET_CENSORED; /* unfinished at the cut, deadline ahead */
            m[cr->nmet++] = v;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ report */

typedef struct brow {
    ns_summary s;
    double per_batch;     /* ops per batch call; 1 for single ops */
    double other_err;     /* share error of the other chains, pts */
    uint64_t bls_p99, crit_p99; /* the batchable chain's; the other Critical chains' */
    uint64_t lost[NS_NCLASS];   /* ops the unbatched run had on time, missed here */
    uint64_t won[NS_NCLASS];    /* ... and the other way round */
    bool aligned;               /* the op-by-op comparison was possible */
} brow;

/* Share error of the chains other than the batchable one, each share
 * taken among them only, against the fair reference's (engine.c,
 * fair_reference): half the L1 distance, in points. */
static double other_share_error(const ns_run *r)
{
    double m = 0, f = 0, err = 0;
    for (unsigned i = 0; i < r->nchains; i++)
        if ((int)i != r->batch_chain) {
            m += r->chain[i].measured_ns;
            f += r->chain[i].fair_ns;
        }
    if (m <= 0 || f <= 0)
        return 0;
    for (unsigned i = 0; i < r->nchains; i++)
        if ((int)i != r->batch_chain)
            err += fabs(r->chain[i].measured_ns / m - r->chain[i].fair_ns / f);
    return 50 * err;
}

static void fill_row(const ns_run *r, const ns_run *single, brow *b)
{
    memset(b, 0, sizeof *b);
    ns_summarize(r, &b->s);
    uint64_t nb = atomic_load_explicit(&r->batches, memory_order_relaxed);
    uint64_t no = atomic_load_explicit(&r->batch_ops, memory_order_relaxed);
    b->per_batch = r->sys == NS_BATCH_SINGLE ? 1 : nb ? (double)no / (double)nb : 0;
    b->other_err = other_share_error(r);
    b->bls_p99 = bench_hist_pct(&r->chain[r->batch_chain].latency, 99);
    bench_hist h;
    bench_hist_reset(&h);
    for (unsigned i = 0; i < r->nchains; i++)
        if ((int)i != r->batch_chain && ns_class(r->cs->c[i].priority) == NS_CRIT)
            bench_hist_merge(&h, &r->chain[i].latency);
    b->crit_p99 = bench_hist_pct(&h, 99);
    b->aligned = true;
    for (unsigned i = 0; i < r->nchains; i++) {
        const ns_chain_run *a = &single->chain[i], *c = &r->chain[i];
        if (a->nmet != c->nmet || !a->met || !c->met) {
            b->aligned = false;
            continue;
        }
        int k = ns_class(r->cs->c[i].priority);
        for (size_t j = 0; j < c->nmet; j++) {
            b->lost[k] += a->met[j] == NS_MET_ONTIME && c->met[j] == NS_MET_MISSED;
            b->won[k] += a->met[j] == NS_MET_MISSED && c->met[j] == NS_MET_ONTIME;
        }
    }
}

static uint64_t sum4(const uint64_t *v)
{
    return v[0] + v[1] + v[2] + v[3];
}

static void emit_row(const ns_run *r, const brow *b)
{
    char scen[32];
    snprintf(scen, sizeof scen, "batch-%.2f", r->load);
    bench_result res;
    bench_result_begin(&res, "nodesim", "batch");
    bench_result_str(&res, "scenario", scen);
    bench_result_str(&res, "system", ns_system_name[r->sys]);
    bench_result_f64(&res, "load", r->load);
    bench_result_f64(&res, "max_delay_ms", (double)r->batch_delay_ns / 1e6);
    bench_result_f64(&res, "ops_per_batch", b->per_batch);
    bench_result_u64(&res, "batches", atomic_load_explicit(&r->batches, memory_order_relaxed));
    bench_result_f64(&res, "work_per_cpu_s", b->s.work_per_cpu_s);
    for (int k = 0; k < NS_NCLASS; k++) {
        char key[48];
        snprintf(key, sizeof key, "%s_ontime_pct", ns_class_name[k]);
        bench_result_f64(&res, key, b->s.class_ontime[k]);
    }
    bench_result_f64(&res, "critical_others_p99_us", (double)b->crit_p99 / 1e3);
    bench_result_f64(&res, "batch_chain_p99_us", (double)b->bls_p99 / 1e3);
    bench_result_f64(&res, "other_share_error_pts", b->other_err);
    bench_result_bool(&res, "op_by_op", b->aligned);
    bench_result_u64(&res, "lost_vs_unbatched", sum4(b->lost));
    bench_result_u64(&res, "won_vs_unbatched", sum4(b->won));
    bench_result_u64(&res, "accepted", r->accepted);
    bench_result_u64(&res, "done_once", r->done_once);
    bench_result_u64(&res, "done_never", r->done_never);
    bench_result_u64(&res, "done_twice", r->done_twice);
    bench_result_emit(&res);
}

static void target(const char *what, enum ns_system sys, double load, double value,
                   double bound, bool pass, const char *line)
{
    printf("%s  %s\n", pass ? "PASS" : "MISS", line);
    bench_result res;
    bench_result_begin(&res, "nodesim", "batch_target");
    bench_result_str(&res, "target", what);
    bench_result_str(&res, "system", ns_system_name[sys]);
    bench_result_f64(&res, "load", load);
    bench_result_f64(&res, "value", value);
    bench_result_f64(&res, "bound", bound);
    bench_result_bool(&res, "pass", pass);
    bench_result_emit(&res);
}

/* Row indices of the batch table: runs[l][k] is system NS_BATCH_ACCEL + k. */
enum { B_ACCEL, B_HELD, B_SINGLE, B_HAND };

/* The targets judged on one batching row of one load: no op lost that
 * the unbatched run had on time; the other chains' share error. */
static void row_targets(const brow *a, const brow *u, enum ns_system sys, double load)
{
    char line[320];
    snprintf(line, sizeof line,
             "load %.2f: ops on time unbatched, missed by %s: %llu (crit %llu high %llu "
             "normal %llu low %llu; the other way round: %llu)%s",
             load, ns_system_name[sys], (unsigned long long)sum4(a->lost),
             (unsigned long long)a->lost[0], (unsigned long long)a->lost[1],
             (unsigned long long)a->lost[2], (unsigned long long)a->lost[3],
             (unsigned long long)sum4(a->won),
             a->aligned ? "" : " [arrivals differ: not compared]");
    target("no_new_misses", sys, load, (double)sum4(a->lost), 0,
           a->aligned && sum4(a->lost) == 0, line);
    /* one-sided: batching must not cost the other chains their share;
     * an error lower than the unbatched run's is no harm */
    double d = a->other_err - u->other_err;
    snprintf(line, sizeof line,
             "load %.2f: other chains' share error, %s %.2f pts <= unbatched %.2f + 0.5 "
             "pts (%+.2f)",
             load, ns_system_name[sys], a->other_err, u->other_err, d);
    target("other_share_error_pts", sys, load, d, 0.5, d <= 0.5, line);
}

void ns_batch_report(ns_run *const (*runs)[NS_NBATCH], const double *loads, size_t nloads)
{
    if (!nloads)
        return;
    const ns_run *r0 = runs[0][0];
    double held_ms = (double)runs[0][B_HELD]->batch_delay_ns / 1e6;
    printf("\n== batch: %s (Critical, modelled BLS votes: a batch of n costs %.2f V + "
           "n x %.2f V)\n   beside the other chains' bodies; %s held up to %.3g ms; "
           "%.1f s per system and load\n   in %u interleaved slices ==\n",
           r0->cs->c[r0->batch_chain].name, NS_BLS_FIXED, NS_BLS_PER_OP,
           ns_system_name[NS_BATCH_HELD], held_ms,
           (double)r0->duration_ns * r0->slices_done / 1e9, r0->slices_done);
    printf("%-5s %-16s %6s %8s %8s %8s %8s %8s %9s %9s %7s %10s\n", "load", "system",
           "ops/", "work per", "critical", "high", "normal", "low", "crit p99", "bls p99",
           "others'", "missed, on");
    printf("%-5s %-16s %6s %8s %8s %8s %8s %8s %9s %9s %7s %10s\n", "", "", "batch",
           "CPU-s", "on time", "on time", "on time", "on time", "(others)", "", "share",
           "time when");
    printf("%-5s %-16s %6s %8s %8s %8s %8s %8s %9s %9s %7s %10s\n", "", "", "", "", "", "",
           "", "", "", "", "error", "unbatched");
    brow b[16][NS_NBATCH];
    if (nloads > 16)
        nloads = 16;
    for (size_t l = 0; l < nloads; l++) {
        for (int k = 0; k < NS_NBATCH; k++) {
            fill_row(runs[l][k], runs[l][B_SINGLE], &b[l][k]);
            emit_row(runs[l][k], &b[l][k]);
            const brow *x = &b[l][k];
            char c[NS_NCLASS][16], p0[16], p1[16], lost[24];
            for (int j = 0; j < NS_NCLASS; j++) {
                if (x->s.class_ontime[j] < 0)
                    snprintf(c[j], sizeof c[j], "-");
                else if (x->s.class_ontime[j] >= 99.95 && x->s.class_ontime[j] < 100)
                    snprintf(c[j], sizeof c[j], "99.9%%");
                else
                    snprintf(c[j], sizeof c[j], "%.1f%%", x->s.class_ontime[j]);
            }
            ns_fmt_lat(p0, sizeof p0, x->crit_p99);
            ns_fmt_lat(p1, sizeof p1, x->bls_p99);
            if (k == B_SINGLE)
                snprintf(lost, sizeof lost, "-");
            else if (!x->aligned)
                snprintf(lost, sizeof lost, "n/a");
            else
                snprintf(lost, sizeof lost, "%llu", (unsigned long long)sum4(x->lost));
            printf("%-5.2f %-16s %6.2f %8.2f %8s %8s %8s %8s %9s %9s %4.1f pts %10s\n",
                   runs[l][k]->load, ns_system_name[runs[l][k]->sys], x->per_batch,
                   x->s.work_per_cpu_s, c[0], c[1], c[2], c[3], p0, p1, x->other_err, lost);
        }
    }
    printf("\nops/batch: votes per call of the batch function (accel) or per batch the "
           "batcher ran; work per CPU-s:\nop work (a vote credited with its single-verify "
           "cost) / the process's CPU time; crit p99: the\nother Critical chains; others' "
           "share error: the other chains' shares among themselves against\nthe fair "
           "reference's; missed, on time when unbatched: ops (any chain) the unbatched run "
           "had on\ntime and this run missed, op by op (same arrivals).\n");
    printf("\nTargets (each on the row it is about, against accel unbatched and the hand "
           "batcher of the same load):\nwork per CPU-s where the CPU is the bottleneck on "
           "%s (a hold fills batches), the batchable\nchain's p99 at low load on %s (no "
           "added wait: a hold that never fills runs its whole delay),\nno new misses and "
           "the share error on both.\n",
           ns_system_name[NS_BATCH_HELD], ns_system_name[NS_BATCH_ACCEL]);
    for (size_t l = 0; l < nloads; l++) {
        const brow *a = &b[l][B_ACCEL], *hd = &b[l][B_HELD], *u = &b[l][B_SINGLE],
                   *h = &b[l][B_HAND];
        double load = loads[l];
        char line[320];
        if (load >= 0.7 - 1e-9) {
            snprintf(line, sizeof line,
                     "load %.2f: work per CPU-s, %s %.3f >= hand batcher %.3f (%s, no "
                     "added wait: %.3f)",
                     load, ns_system_name[NS_BATCH_HELD], hd->s.work_per_cpu_s,
                     h->s.work_per_cpu_s, ns_system_name[NS_BATCH_ACCEL],
                     a->s.work_per_cpu_s);
            target("work_per_cpu_s_vs_hand", NS_BATCH_HELD, load, hd->s.work_per_cpu_s,
                   h->s.work_per_cpu_s, hd->s.work_per_cpu_s >= h->s.work_per_cpu_s, line);
        }
        if (load <= 0.5 + 1e-9) {
            snprintf(line, sizeof line,
                     "load %.2f: %s p99, %s %.2f ms < 5 ms (half the batcher's 10 ms wait; "
                     "hand batcher %.2f ms, %s %.2f ms)",
                     load, r0->cs->c[r0->batch_chain].name, ns_system_name[NS_BATCH_ACCEL],
                     (double)a->bls_p99 / 1e6, (double)h->bls_p99 / 1e6,
                     ns_system_name[NS_BATCH_HELD], (double)hd->bls_p99 / 1e6);
            target("batch_chain_p99_ms", NS_BATCH_ACCEL, load, (double)a->bls_p99 / 1e6, 5,
                   a->bls_p99 < 5000000u, line);
        }
        row_targets(a, u, NS_BATCH_ACCEL, load);
        row_targets(hd, u, NS_BATCH_HELD, load);
    }
}
