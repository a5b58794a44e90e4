/*
 * Defaults of the runtime and scheduler, in one place: what a zero field of
 * accel_runtime_config (or of the scheduler's config) becomes. Plain
 * #defines so that C and the Go binding (through cgo) read the same value.
 */
#ifndef ACCEL_RUNTIME_DEFAULTS_H
#define ACCEL_RUNTIME_DEFAULTS_H

/* A session's visit ends after this much measured time (ns): 2 ms keeps a
 * visit's switch cost small next to the work while a session of weight 1
 * still gets a worker within a few ms. */
#define ACCEL_DEFAULT_QUANTUM_NS 2000000u

/* ...or after this many ops, whichever comes first: bounds a visit of
 * many tiny ops so that other sessions are not starved by counting. */
#define ACCEL_DEFAULT_QUANTUM_OPS 32u

/* Ops predicted to take at most this long (ns) may run on the short lane:
 * 100 us, well under a quantum, so short-lane latency stays small. */
#define ACCEL_DEFAULT_SHORT_OP_NS 100000u

/* A calendar bucket spans quantum / this: a weight-1 visit spans ~256
 * buckets and the window reaches ~14 quanta of virtual time ahead. */
#define ACCEL__SCHED_BUCKETS_PER_QUANTUM 256u

/* Bounds of a bucket's width as a shift (2^4 ns .. 2^40 ns): below 16 ns
 * buckets only add scanning; above ~18 min a bucket would hold everyone. */
#define ACCEL__SCHED_SHIFT_MIN 4u
#define ACCEL__SCHED_SHIFT_MAX 40u

/* A submit on a full ring yields the CPU this many times before it sleeps
 * (submit.c): a consumer mid-visit usually frees room within a few. */
#define ACCEL__SUBMIT_YIELDS 4u

/* Bytes of closed sessions that may wait for their grace period on
 * liburcu's thread before a releasing thread that may wait frees its
 * session itself (session.c): enough that a node closing a session now
 * and then never waits, small enough that open/close churn keeps memory
 * a few MB above its open sessions'. */
#define ACCEL__RECLAIM_BACKLOG_BYTES (4u << 20)

#endif /* ACCEL_RUNTIME_DEFAULTS_H */
