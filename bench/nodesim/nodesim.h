/*
 * accel-nodesim: one node process hosting many chains (17 by default), each
 * a stream of ops with a priority, an op-cost range, an arrival cadence and
 * a per-op deadline (bench/chains/default.conf). Each chain submits from
 * its own thread on an open-loop schedule, so the node can be driven below,
 * at and above the capacity measured at start-up; the same arrivals (same
 * seed) then run through accel and three baselines, under one admission
 * rule and one op body.
 *
 * Files: main.c (flags, scenarios, capacity), chains.c (chain-set files,
 * weighted max-min shares), bodies.c (real and modelled op bodies),
 * engine.c (the five systems, arrivals, ops, the co-tenant),
 * batch.c (the batch scenario: a batchable chain, its four systems),
 * report.c (live table, final tables, JSON), plot.c (gnuplot charts).
 */
#ifndef ACCEL_NODESIM_H
#define ACCEL_NODESIM_H

#include "bench.h"
#include "fluid.h"

#define NS_MAX_CHAINS 64
#define NS_NAME_MAX 32
#define NS_DESC_MAX 1024
#define NS_MAX_BUCKETS 512

/* What an op runs (bodies.c). */
enum ns_body {
    NS_BODY_MODEL,        /* calibrated spin loop of the assumed cost */
    NS_BODY_ED25519,      /* libsodium crypto_sign_verify_detached */
    NS_BODY_SECP_VERIFY,  /* libsecp256k1 secp256k1_ecdsa_verify */
    NS_BODY_SECP_RECOVER, /* libsecp256k1 secp256k1_ecdsa_recover + key compare */
    NS_BODY_BLAKE2B,      /* libsodium crypto_generichash of 1 KiB */
    NS_BODY_SHA256,       /* libsodium crypto_hash_sha256 of 1 KiB */
    NS_NBODY
};

/* A wait with little CPU inside an op, in the blocking scenario only. */
enum ns_wait { NS_WAIT_NONE, NS_WAIT_STORAGE, NS_WAIT_SIGNER };

typedef struct ns_chain_cfg {
    char name[NS_NAME_MAX];
    char role[NS_NAME_MAX];
    uint32_t priority;
    uint64_t cost_lo_ns, cost_hi_ns; /* uniform per op */
    double share;                    /* of the offered op-cost (sums to 1) */
    uint64_t period_ns;              /* > 0: ops arrive in batches on this cadence */
    uint64_t deadline_ns;            /* per op, from its arrival */
    uint32_t scratch_kb;             /* allocated and freed by each op */
    enum ns_body body;               /* column 10; absent: modelled */
    enum ns_wait wait;               /* column 11; absent or "-": none */
    uint64_t wait_lo_ns, wait_hi_ns; /* uniform per op */
} ns_chain_cfg;

typedef struct ns_chainset {
    ns_chain_cfg c[NS_MAX_CHAINS];
    size_t n;
    char desc[NS_DESC_MAX]; /* the file's "#:" lines */
    char source[256];
} ns_chainset;

/* The five systems of every scenario but batch (NS_NSYS of them), then
 * the batch scenario's four (NS_NBATCH, batch.c): accel (node) with the
 * batchable chain's session given a batch function (no added wait; held
 * back up to --batch-delay-ms), the same with single ops, and the same
 * with that chain run by a hand-written accumulator thread. */
enum ns_system {
    NS_ACCEL_NODE, NS_ACCEL_DEFAULT, NS_MSESS, NS_FIFO, NS_PRIO, NS_NSYS,
    NS_BATCH_ACCEL = NS_NSYS, NS_BATCH_HELD, NS_BATCH_SINGLE, NS_BATCH_HAND, NS_NSYS_ALL
};
#define NS_NBATCH (NS_NSYS_ALL - NS_BATCH_ACCEL)
extern const char *const ns_system_name[NS_NSYS_ALL];
extern const char *const ns_system_desc[NS_NSYS_ALL];
static inline bool ns_sys_accel(enum ns_system s) /* runs on an accel runtime */
{
    return s == NS_ACCEL_NODE || s == NS_ACCEL_DEFAULT || s >= NS_BATCH_ACCEL;
}

/* Priority classes, for the per-class columns and charts. */
enum { NS_CRIT, NS_HIGH, NS_NORMAL, NS_LOW, NS_NCLASS };
extern const char *const ns_class_name[NS_NCLASS];
int ns_class(uint32_t priority);

/* One scheduled op. t_sched: its arrival (latency and deadline count from
 * it even when the submitter thread runs late: no coordinated omission). */
typedef struct ns_op_rec {
    struct ns_chain_run *cr;
    uint64_t t_sched, deadline, t_end;
    uint32_t cost;   /* ns credited when done: assumed (modelled) or calls x measured */
    uint32_t calls;  /* real body: calls in the batch; 0: modelled */
    uint32_t item;   /* real body: first input item */
    uint32_t wait_us; /* blocking scenario: the wait before the body */
    uint32_t waited_us; /* ... and as it ran: the sleep with its wake-up
                           and the wait for a CPU after it (0: not run) */
    uint8_t outcome; /* enum ns_outcome, written by the op or at admission */
    _Atomic uint8_t dones; /* calls of ns_done (the exactly-once check) */
} ns_op_rec;

enum ns_outcome { NS_PENDING, NS_DONE, NS_EXPIRED, NS_DROPPED, NS_SKIPPED };

/* Measurements of one chain in one system's run. Counters are statistics:
 * relaxed, read live as an approximate view or after the joins. */
typedef struct ns_chain_run {
    const ns_chain_cfg *cfg;
    ns_op_rec *ops;   /* this slice's arrivals, in time order */
    size_t nops;
    uint64_t offered; /* arrivals of all slices so far, this one included */
    double fair_ns;     /* the fair reference's op work (engine.c, fair_reference) */
    double measured_ns; /* the op work it is compared with, same place */
    /* The fair reference's ops on time and missed (fluid.h), on the
     * capacity this system had: what an ideal weighted-fair server with
     * the chains' weights would have kept on time. */
    uint64_t fair_ontime, fair_missed;
    uint64_t fair_late; /* of fair_missed: started in time, completed late */
    /* The same reference with each op's wait as it ran (ns_op_rec
     * waited_us) where it ran: what the machine's wake-ups cost any
     * server (blocking scenario only). */
    uint64_t fair_run_ontime, fair_run_missed;
    double maxmin_ns; /* per-phase weighted max-min op work (earlier reference) */
    _Atomic size_t next; /* submitter's cursor (read by the idle check) */
    bench_hist latency; /* arrival -> finish, completed ops */
    _Atomic uint64_t submitted, dropped, expired, ontime, late, censored;
    _Atomic uint64_t service_ns;  /* nominal cost of completed ops */
    _Atomic uint64_t window_ns;   /* the same, of ops completed before t_end */
    uint64_t window0, service0;   /* window_ns, service_ns when this slice started */
    _Atomic int64_t outstanding;  /* admitted, not finished */
    _Atomic uint64_t *b_service;  /* [bucket] by finish time */
    _Atomic uint64_t *b_ontime, *b_miss; /* [bucket] by arrival time */
    accel_session *sess;
    bench_msess ms;
    pthread_t th;
    struct ns_run *run;
    unsigned index;
    uint64_t last_ontime, last_done; /* live view */
    /* batch systems: each op's fate, slice after slice (enum ns_met), to
     * compare op by op with the unbatched run (same arrivals) */
    uint8_t *met;
    size_t nmet;
} ns_chain_run;

enum ns_met { NS_MET_MISSED, NS_MET_ONTIME, NS_MET_CENSORED };

/* A time-varying multiplier on some chains' arrival rate (the flood). */
typedef struct ns_burst {
    double factor;             /* 1: none */
    double from, to;           /* fraction of the run */
    bool chain[NS_MAX_CHAINS]; /* chains that burst */
} ns_burst;

typedef struct ns_run {
    enum ns_system sys;
    const ns_chainset *cs;
    unsigned nchains, workers;
    double load, capacity; /* offered = load * capacity (op-cost ns per s) */
    uint64_t seed, duration_ns, depth; /* duration of one slice */
    unsigned slice, slices_done;        /* a run may be split in slices */
    uint64_t cpu0, cpu_ns, wall_ns;     /* process CPU time used over the slices */
    bool no_deadlines;     /* capacity probe: nothing expires */
    bool blocking;         /* the chains' waits (column 11) happen */
    bool announce_waits;       /* ... inside accel_blocking_begin/_end */
    ns_burst burst;
    uint64_t t_start, t_end, t_cut; /* arrivals in [start, end); stats cut at t_cut */
    uint64_t bucket_ns;
    unsigned nbuckets;
    _Atomic bool stop;
    accel_runtime *rt;
    bench_pool *pool;
    bench_prio *prio;
    ns_chain_run chain[NS_MAX_CHAINS];
    double ideal[NS_MAX_CHAINS];        /* fair share of the window's work (fluid.h) */
    double ref_cpu_s;                   /* the fluid reference's capacity x time */
    double ideal_maxmin[NS_MAX_CHAINS]; /* earlier reference, JSON only */
    /* Exactly once, over the slices: ops admitted (not dropped), and how
     * many of them ns_done saw once, never, more than once (also a
     * dropped op seen). */
    uint64_t accepted, done_once, done_never, done_twice;
    /* The batch scenario (batch.c); batch_chain -1 elsewhere. */
    int batch_chain;
    uint64_t batch_delay_ns;              /* NS_BATCH_HELD's hold-back (else 0) */
    _Atomic uint64_t batches, batch_ops;  /* batch calls, the ops they ran */
    struct ns_hand *hand;                 /* NS_BATCH_HAND: the accumulator */
} ns_run;

/* chains.c */
/* Parses a chain-set file (text); name is for messages. 0, or -1 with a
 * message on stderr. */
int ns_chains_parse(const char *text, const char *name, ns_chainset *out);
int ns_chains_load(const char *path, ns_chainset *out);
extern const char ns_default_conf[]; /* bench/chains/default.conf, built in */
double ns_mean_cost(const ns_chain_cfg *c);
/* Weighted max-min fair service rates (ns/s) of chains with these demands
 * (ns/s) on capacity ns/s, each capped at one worker's part of it. */
void ns_waterfill(const ns_chain_cfg *c, size_t n, const double *demand, double capacity,
                  unsigned workers, double *out);
const char *ns_priority_name(uint32_t p);

/* bodies.c */
int ns_body_parse(const char *s, enum ns_body *out);
const char *ns_body_key(enum ns_body b);
/* Generates the inputs of every real body cs uses and measures one call of
 * each (before any run); model_only: every chain runs its spin loop;
 * sabotage: one expected answer per body is flipped (the test that a wrong
 * result fails the run). */
int ns_bodies_init(const ns_chainset *cs, uint64_t seed, bool model_only, bool sabotage);
void ns_bodies_print(const ns_chainset *cs);
void ns_bodies_free(void);
bool ns_body_available(enum ns_body b); /* built in, inputs made, not --modelled */
uint64_t ns_body_unit_ns(enum ns_body b);
uint32_t ns_body_calls(enum ns_body b, uint64_t cost_ns); /* batch for that cost, >= 1 */
/* The mean op work a chain's op is credited with: the assumed mean for a
 * modelled body, the mean batch x the measured call for a real one. The
 * arrival rates use it, so --load stays relative to the measured capacity. */
double ns_op_mean_cost(const ns_chain_cfg *c);
/* Runs calls checks on items first.. (mod the pool); false if any answer
 * was wrong. Thread-safe. */
bool ns_body_run(enum ns_body b, uint32_t first, uint32_t calls);
uint64_t ns_body_checked(void), ns_body_wrong(void); /* totals so far */

/* engine.c */
/* The co-tenant: n single-threaded processes burning CPU until stopped. */
int ns_cotenant_start(unsigned n);
void ns_cotenant_stop(void);
/* A run is one or more slices of duration_ns, each with fresh arrivals
 * (seed stream of the slice), runtime or pool and threads; measurements
 * add up over the slices (systems interleaved slice by slice see the same
 * drift of a shared machine). */
int ns_slice_start(ns_run *r);
/* Waits for the arrivals to end and a grace period, then stops: ops not
 * finished by then are censored (deadline after the cut) or missed. */
void ns_slice_finish(ns_run *r, void (*tick)(ns_run *, void *), void *arg);
void ns_run_free(ns_run *r);
double ns_demand_at(const ns_run *r, unsigned i, double frac); /* ns/s */

/* batch.c */
/* base plus the batchable chain (appended, shares renormalised). */
int ns_batch_chainset(const ns_chainset *base, ns_chainset *out);
void ns_batch_print_model(const ns_chainset *cs, uint64_t delay_ns);
/* accel batching (held: with r->batch_delay_ns): the batch function on
 * the chain's session. */
int ns_batch_configure(ns_run *r);
/* The hand-written batcher: started before the arrivals, stopped (its
 * queue drained through ns_done) once the submitters are joined. */
int ns_hand_start(ns_run *r);
int ns_hand_submit(ns_run *r, ns_op_rec *rec); /* 0, or -1: not queued */
void ns_hand_stop(ns_run *r);
/* After a slice (every op finished): record each op's fate. */
int ns_batch_record(ns_run *r);
/* The batch scenario's table and targets; runs[l][k]: load l, system
 * NS_BATCH_ACCEL + k. */
void ns_batch_report(ns_run *const (*runs)[NS_NBATCH], const double *loads, size_t nloads);
void ns_done(void *arg, int status); /* engine.c: an op's completion */

/* report.c */
typedef struct ns_summary {
    uint64_t offered, ontime, late, dropped, expired, censored, completed;
    double ontime_pct, drop_pct;            /* drop: dropped + expired */
    double class_ontime[NS_NCLASS];         /* -1 if the class has no ops */
    uint64_t class_p50[NS_NCLASS], class_p99[NS_NCLASS];
    double work_per_s;                      /* op-cost ns/s done in the window */
    double share_error;                     /* pts, against the fluid reference */
    double share_error_maxmin;              /* pts, the earlier reference (JSON) */
    double work_per_cpu_s;                  /* window op work / process CPU time */
} ns_summary;
void ns_summarize(const ns_run *r, ns_summary *s);
double ns_chain_ontime(const ns_run *r, unsigned i); /* %, -1 if no ops */
double ns_share(const ns_run *r, unsigned i);
void ns_live_print(ns_run *r, bool first);
void ns_live_clear(void);
void ns_emit_json(const ns_run *r, const char *scenario);
void ns_print_comparison(ns_run *const *runs, size_t n, const char *title);
/* The flood: on time by class of the ops that arrived during the burst. */
void ns_print_burst(ns_run *const *runs, size_t n);
void ns_fmt_lat(char *b, size_t n, uint64_t ns);

/* plot.c */
typedef struct ns_scenario_runs {
    const char *name; /* "steady-0.90", "flood", ... */
    double load;
    ns_run *runs[NS_NSYS];
    size_t nruns;
} ns_scenario_runs;
/* Writes the charts; returns how many PNGs were written (0: no gnuplot). */
int ns_plot(const char *dir, ns_scenario_runs *const *sc, size_t nsc);

/* metrics_http.c: --metrics-port (loopback only). */
int ns_metrics_serve(unsigned port);
void ns_metrics_attach(accel_runtime *rt); /* NULL: detach (waits for a scrape) */

#endif
