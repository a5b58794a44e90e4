/*
 * Shared helpers for the accel benchmarks and accel-nodesim.
 *
 * Every benchmark in bench/ links the files of bench/common. One header,
 * one small component per .c file. Include this header first: it asks
 * for the POSIX/GNU declarations (clock_gettime, affinity) before libc
 * is seen.
 *   bench_opts.c    table-driven flag parsing (--name V, --name=V, --help)
 *   bench_time.c    monotonic clock, fixed-seed RNG, process CPU time, RSS
 *   bench_work.c    calibrated synthetic CPU work ("burn N ns")
 *   bench_stats.c   sorting, percentiles, medians, a lock-free histogram
 *   bench_result.c  the machine-readable "RESULT {json}" line and targets
 *   base_msess.c    baseline 1: a mutex per session, op run by the caller
 *   base_pool.c     baseline 2: a mutex+condvar FIFO thread pool
 *   base_prio.c     baseline 3: a strict-priority thread pool
 *
 * Baseline ops use the accel_op type so one workload runs through accel and
 * the baselines unchanged; a baseline calls fn(NULL, arg), so benchmark ops
 * must not use their accel_ctx.
 *
 * Not thread-safe unless a function says so: options and results are
 * handled on the main thread.
 */
#ifndef ACCEL_BENCH_H
#define ACCEL_BENCH_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <pthread.h>

#include <accel/accel.h>

/* ------------------------------------------------------------- options */

typedef enum bench_opt_type {
    BENCH_OPT_FLAG,   /* bool, no value */
    BENCH_OPT_INT,    /* int */
    BENCH_OPT_U64,    /* uint64_t; accepts suffixes k, M, G (x1000) */
    BENCH_OPT_DOUBLE, /* double */
    BENCH_OPT_STR,    /* const char * (points into argv) */
    BENCH_OPT_LIST    /* bench_list: comma-separated unsigned values */
} bench_opt_type;

#define BENCH_LIST_MAX 32
typedef struct bench_list {
    size_t n;
    uint64_t v[BENCH_LIST_MAX];
} bench_list;

typedef struct bench_opt {
    const char *name; /* without the leading "--" */
    bench_opt_type type;
    void *ptr;
    const char *help;
} bench_opt;

/* Parses argv against opts. Returns 0 (parsed), 1 (--help printed: exit 0)
 * or -1 (bad flag or value; a message went to stderr: exit 2). --help is
 * always recognised; usage lists every option with its current (default)
 * value. */
int bench_opts_parse(int argc, char **argv, const char *usage,
                     const bench_opt *opts, size_t nopts);
/* Fills a list from "1,2,4"; returns -1 on a bad value. */
int bench_list_parse(bench_list *l, const char *s);
bool bench_list_has(const bench_list *l, uint64_t v);

/* ------------------------------------------------------- clock and RNG */

static inline uint64_t bench_now_ns(void);
uint64_t bench_cpu_time_ns(void);      /* CLOCK_PROCESS_CPUTIME_ID */
uint64_t bench_thread_cpu_ns(void);    /* CLOCK_THREAD_CPUTIME_ID */
uint64_t bench_rss_bytes(void);        /* resident set, from /proc/self/statm */
void bench_sleep_ns(uint64_t ns);      /* nanosleep, restarted on EINTR */
unsigned bench_ncpus(void);            /* online CPUs */

/* xoshiro256** seeded by splitmix64: fixed seed, repeatable streams. */
typedef struct bench_rng {
    uint64_t s[4];
} bench_rng;
void bench_rng_seed(bench_rng *r, uint64_t seed, uint64_t stream);
uint64_t bench_rng_next(bench_rng *r);
double bench_rng_double(bench_rng *r);                    /* [0, 1) */
uint64_t bench_rng_range(bench_rng *r, uint64_t lo, uint64_t hi); /* [lo, hi] */
double bench_rng_exp(bench_rng *r, double mean);          /* exponential */

/* ------------------------------------------------------ synthetic work */

/* Measures the spin loop once (thread-safe, idempotent; the first call
 * takes ~20-50 ms). bench_burn_ns calibrates lazily if needed. */
void bench_work_calibrate(void);
/* Iterations of the spin loop per microsecond, as calibrated. */
double bench_work_iters_per_us(void);
/* Runs a fixed number of dependent multiply-adds equal to ns of CPU time
 * on an unloaded core: the work is fixed, so a preempted op takes longer
 * in wall time (as real work would), never shorter. Thread-safe. */
void bench_burn_ns(uint64_t ns);
uint64_t bench_burn_iters(uint64_t iters);

/* ------------------------------------------------------------ statistics */

void bench_sort_u64(uint64_t *v, size_t n);
void bench_sort_f64(double *v, size_t n);
/* p in [0, 100]; nearest-rank on a sorted array; 0 if n == 0. */
uint64_t bench_pct_u64(const uint64_t *sorted, size_t n, double p);
/* Median (sorts v in place); 0 if n == 0. */
double bench_median_f64(double *v, size_t n);
double bench_mean_f64(const double *v, size_t n);

/* Log-linear latency histogram: 16 sub-buckets per power of two (<= 6.25%
 * error), values 0 .. 2^40 ns. bench_hist_add is thread-safe and lock-free
 * (relaxed increments: counts are read after the writers are joined or as
 * an approximate live view). */
#define BENCH_HIST_SUB 16
#define BENCH_HIST_BUCKETS (41 * BENCH_HIST_SUB)
typedef struct bench_hist {
    _Atomic uint64_t count[BENCH_HIST_BUCKETS];
    _Atomic uint64_t n, sum, max;
} bench_hist;
void bench_hist_reset(bench_hist *h);
void bench_hist_add(bench_hist *h, uint64_t v);
uint64_t bench_hist_count(const bench_hist *h);
uint64_t bench_hist_pct(const bench_hist *h, double p); /* upper bucket edge */
uint64_t bench_hist_max(const bench_hist *h);
double bench_hist_mean(const bench_hist *h);
/* Adds every count of src into dst (both quiescent or approximate). */
void bench_hist_merge(bench_hist *dst, const bench_hist *src);
/* Calls fn(value, cumulative fraction) for each non-empty bucket, in order:
 * the points of a CDF. */
void bench_hist_cdf(const bench_hist *h, void (*fn)(void *, uint64_t, double),
                    void *arg);

/* ------------------------------------------------------------- results */

/* Every result is one line on stdout:
 *   RESULT {"bench":"throughput","name":"...","key":value,...}
 * and, when bench_result_json_open() was called, the same JSON object as one
 * line of that file (JSON lines). */
typedef struct bench_result {
    char buf[2048];
    size_t len;
    bool overflow;
} bench_result;
int bench_result_json_open(const char *path); /* truncates; 0 or -1 */
void bench_result_json_close(void);
void bench_result_begin(bench_result *r, const char *bench, const char *name);
void bench_result_str(bench_result *r, const char *key, const char *v);
void bench_result_u64(bench_result *r, const char *key, uint64_t v);
void bench_result_i64(bench_result *r, const char *key, int64_t v);
void bench_result_f64(bench_result *r, const char *key, double v);
void bench_result_bool(bench_result *r, const char *key, bool v);
void bench_result_emit(bench_result *r);
/* Whether bench_result_emit (and bench_banner) also print the RESULT line
 * on stdout (default true; the JSON file gets it either way). */
void bench_result_stdout(bool on);

/* A performance target (bench/README.md, "Targets") next to its measured
 * value. Prints
 *   TARGET  <what>: <measured> <unit>  (target <op> <goal>)  MET|MISSED
 * and emits a RESULT line with bench, name "target", what, measured, goal,
 * op and met. op is ">=" or "<=". Returns whether it was met. */
bool bench_target(const char *bench, const char *what, double measured,
                  const char *op, double goal, const char *unit);

/* "Machine: 2 CPUs, <model>, Linux <release>" into buf. */
void bench_machine(char *buf, size_t len);
/* Prints a header: program, machine, seed, calibration; emits a RESULT
 * "machine" line. */
void bench_banner(const char *bench, uint64_t seed);

/* -------------------------------------------------- baseline 1: msess */

/* The design accel replaces (the Go VMSession): each session is a mutex,
 * and every op runs on its submitting thread while holding it. FIFO per
 * session comes from the mutex; priority and queue depth do nothing. */
typedef struct bench_msess {
    _Alignas(64) pthread_mutex_t mu;
    uint64_t ops; /* ops run, written under mu */
} bench_msess;
int bench_msess_init(bench_msess *s);
void bench_msess_destroy(bench_msess *s);
/* Runs op->fn(NULL, arg) under the session's mutex, then op->done(arg, rc)
 * (outside the mutex, as a completion callback would). Returns fn's rc. */
int bench_msess_submit(bench_msess *s, const accel_op *op);

/* --------------------------------------------------- baseline 2: pool */

/* A mutex+condvar FIFO thread pool: one bounded FIFO shared by all
 * submitters, W workers that pop under the mutex, a condvar each for "not
 * empty" and "not full". No per-session order or fairness: every op is just
 * the next in line. */
typedef struct bench_pool bench_pool;
int bench_pool_create(unsigned workers, size_t capacity, bench_pool **out);
/* Blocks while the FIFO is full. Returns 0. Thread-safe. */
int bench_pool_submit(bench_pool *p, const accel_op *op);
/* One lock acquisition per run of free space. Thread-safe. */
int bench_pool_submit_batch(bench_pool *p, const accel_op *ops, size_t n);
/* Waits until every op submitted so far has completed. Thread-safe. */
void bench_pool_drain(bench_pool *p);
size_t bench_pool_depth(bench_pool *p); /* queued, not started */
/* Drains, joins the workers, frees. */
void bench_pool_destroy(bench_pool *p);

/* ------------------------------------------------- baseline 3: prio */

/* A strict-priority thread pool: one mutex, one growable FIFO per priority
 * value (at most 16 distinct values), W workers that pop from the highest
 * non-empty level. Lower levels wait while any higher one has work. */
typedef struct bench_prio bench_prio;
int bench_prio_create(unsigned workers, bench_prio **out);
/* Queues op at priority prio (higher runs first). Returns 0, or -1 (out of
 * memory or a 17th distinct priority): op not queued. Thread-safe. */
int bench_prio_submit(bench_prio *p, uint32_t prio, const accel_op *op);
/* Waits for every queued op to complete, joins the workers, frees. */
void bench_prio_destroy(bench_prio *p);

/* ------------------------------------------------------------- inlines */

#include <time.h>
static inline uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Keeps the compiler from deleting or hoisting benchmark work. */
#define BENCH_KEEP(x) __asm__ __volatile__("" : "+r"(x))
#define BENCH_COUNTOF(a) (sizeof(a) / sizeof((a)[0]))

#endif
