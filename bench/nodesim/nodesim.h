/*
 * accel-nodesim: one node process hosting many chains (17 by default), each
 * a session with the priority a real node would give it and a synthetic,
 * calibrated CPU cost model for its ops. Each chain submits from its own
 * thread on an open-loop schedule, so the node can be driven below, at and
 * above capacity; the same workload then runs through two baselines.
 *
 * Files: main.c (flags, phases, final table), chains.c (default chain set,
 * config files, weighted ideal shares), engine.c (the three systems),
 * report.c (live table, JSON, gnuplot charts).
 */
#ifndef ACCEL_NODESIM_H
#define ACCEL_NODESIM_H

#include "bench.h"

#define NS_MAX_CHAINS 64
#define NS_NAME_MAX 32

typedef struct ns_chain_cfg {
    char name[NS_NAME_MAX];
    char role[NS_NAME_MAX]; /* "consensus", "dex", ... for the report */
    uint32_t priority;
    uint64_t cost_lo_ns, cost_hi_ns; /* uniform per op */
    double share;                    /* of the node's demand at --load 1.0 */
    uint64_t period_ns;              /* > 0: ops arrive in bursts on this cadence */
    uint32_t scratch_kb;             /* accel_ctx_alloc'd per op (budget use) */
} ns_chain_cfg;

enum ns_system { NS_ACCEL, NS_MSESS, NS_POOL, NS_NSYS };
extern const char *const ns_system_name[NS_NSYS];
extern const char *const ns_system_desc[NS_NSYS];

/* Live and final measurements of one chain in one system's run. */
typedef struct ns_chain_run {
    const ns_chain_cfg *cfg;
    bench_hist wait;     /* submit (scheduled arrival) -> start */
    bench_hist latency;  /* submit -> finish */
    _Atomic uint64_t arrived, dropped, completed, skipped;
    _Atomic uint64_t service_ns;
    _Atomic int64_t outstanding; /* admitted, not finished */
    _Atomic int64_t mem_peak;
    /* system handles */
    accel_session *sess;
    bench_msess ms;
    pthread_t th;
    struct ns_run *run;
    unsigned index;
    /* last sample, for the live rate column */
    uint64_t last_completed;
} ns_chain_run;

typedef struct ns_run {
    enum ns_system sys;
    unsigned nchains, workers;
    double load;
    uint64_t seed, duration_ns, queue_limit;
    uint64_t t_start, t_end;
    _Atomic bool stop;   /* ops skip their work once set */
    _Atomic bool arrivals_done;
    accel_runtime *rt;
    bench_pool *pool;
    ns_chain_run chain[NS_MAX_CHAINS];
    double ideal[NS_MAX_CHAINS]; /* weighted max-min fair share of service */
} ns_run;

/* chains.c */
size_t ns_default_chains(ns_chain_cfg *out, size_t max);
/* Returns the count, or -1 with a message on stderr. */
int ns_load_chains(const char *path, ns_chain_cfg *out, size_t max);
/* Mean op cost, demand in ns of CPU per s at this load, ideal shares. */
double ns_mean_cost(const ns_chain_cfg *c);
double ns_demand(const ns_chain_cfg *c, double load, unsigned workers);
void ns_ideal_shares(const ns_chain_cfg *c, size_t n, double load, unsigned workers,
                     double *ideal);
const char *ns_priority_name(uint32_t p);

/* engine.c */
int ns_run_start(ns_run *r, const ns_chain_cfg *chains, size_t n);
/* Stops arrivals, lets queued ops skip their work, joins, frees handles. */
void ns_run_stop(ns_run *r);

/* report.c */
double ns_share(const ns_run *r, unsigned i);          /* of total service */
double ns_share_error(const ns_run *r);                /* total variation, % points */
uint64_t ns_total_completed(const ns_run *r);
void ns_live_print(ns_run *r, bool tty, bool first, uint64_t now);
void ns_live_clear(void);
void ns_plot(const char *dir, ns_run *const *runs, size_t nruns);

/* metrics_http.c: --metrics-port (loopback only). */
int ns_metrics_serve(unsigned port);
void ns_metrics_attach(accel_runtime *rt); /* NULL: detach (waits for a scrape) */

#endif
