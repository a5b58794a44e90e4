/*
 * accel: a lock-free concurrent runtime for multi-tenant nodes.
 *
 * A runtime owns a pool of worker threads. A session is one tenant (one
 * chain/VM of a node): its ops run in FIFO order, one at a time, on the
 * workers; its priority is a weight that buys a proportional share of the
 * workers; its memory budget is a hard cap; closing or failing one session
 * never touches another.
 *
 * Error convention: every function that can fail returns an int status,
 * ACCEL_OK (0) on success or a distinct negative ACCEL_E* code. errno is
 * never set. A call that fails changes nothing.
 *
 * Thread-safety: unless a function says otherwise, every function may be
 * called from any thread, concurrently with any other function, including
 * from inside a running op. Threads need no registration: a thread that
 * calls into the library is registered with liburcu (memb flavour) lazily
 * and unregistered when it exits. A host that registers a thread with
 * liburcu's memb flavour itself may call the library from it: that
 * registration is used as it is and stays the host's to end; the host must
 * not register a thread that already called the library unregistered.
 * Such a thread may call the library from inside a read-side section of
 * its own, except to create or destroy a runtime or open a session.
 * Destroy needs an rcu_barrier and an open may resize the id table, which
 * liburcu does not allow inside a read-side section: there, destroy and
 * open return ACCEL_EDEADLK and change nothing (create is not checked).
 * And while another thread may fork(), each of the three waits for the
 * fork, the fork for liburcu's threads, whose grace period waits for that
 * section.
 *
 * fork() without exec: in the child, every runtime created before the fork
 * (the parent's) is unusable. On it and its sessions, open, lookup, submit
 * (all forms), sync, close, accel_cancel (a ticket of theirs) and destroy
 * return ACCEL_ECLOSED and accept nothing (no done of the parent's ops runs
 * in the child); accel_session_is_closed() is true, reserve and
 * set_priority return ACCEL_ECLOSED, so do the runtime's stats and
 * Prometheus text (they would take a lock a parent's thread may have held);
 * session stats and getters read the parent's snapshot; release does
 * nothing (the objects stay allocated in the child). A runtime created in
 * the child works fully, and accel_runtime_default() creates a fresh one in
 * the child. Do not fork from inside an op (the child would go on as a copy
 * of the worker).
 *
 * Progress: the submit, pick and complete paths take no lock. Producers of
 * one session never wait for each other; a producer waits only when the
 * session's ring is full and it asked to wait (timeout_ns != ACCEL_NO_WAIT).
 */
#ifndef ACCEL_ACCEL_H
#define ACCEL_ACCEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(ACCEL_BUILDING) && defined(__GNUC__)
#define ACCEL_API __attribute__((visibility("default")))
#else
#define ACCEL_API
#endif

/* The version of this header. accel_version() gives the library's; they
 * differ when a program runs against a newer shared libaccel than it was
 * built with (allowed within one SONAME, docs/abi.md). */
#define ACCEL_VERSION_MAJOR 0
#define ACCEL_VERSION_MINOR 1
#define ACCEL_VERSION_PATCH 0
#define ACCEL_VERSION_STRING "0.1.0"
/* MAJOR * 10000 + MINOR * 100 + PATCH, for #if comparisons. */
#define ACCEL_VERSION_NUMBER                                                   \
    (ACCEL_VERSION_MAJOR * 10000 + ACCEL_VERSION_MINOR * 100 +                 \
     ACCEL_VERSION_PATCH)
#define ACCEL_VERSION_AT_LEAST(major, minor, patch)                            \
    (ACCEL_VERSION_NUMBER >= (major) * 10000 + (minor) * 100 + (patch))

/* The library's version, "MAJOR.MINOR.PATCH" (static; never NULL). */
ACCEL_API const char *accel_version(void);
/* The library's ACCEL_VERSION_NUMBER. */
ACCEL_API int accel_version_number(void);

/* Growing structs (docs/abi.md). Config structs end with `struct_size`:
 * leave it 0 (as designated initializers do) and the library reads the
 * layout of this release, the fields up to and including struct_size.
 * Fields added by later releases come after it; a caller that sets them
 * sets struct_size = sizeof(the struct), and a library that does not know
 * the newer fields answers ACCEL_EINVAL if any of them is non-zero.
 * Stats are read with a size argument (accel_session_get_stats_ex,
 * accel_runtime_get_stats): the library writes min(size, its sizeof). */

/* ---------------------------------------------------------------- status */

/* X(name, value, message): the one table behind the codes and
 * accel_strerror(). */
#define ACCEL_STATUS_MAP(X)                                                    \
    X(OK, 0, "success")                                                        \
    X(EINVAL, -1, "invalid argument")                                          \
    X(ENOMEM, -2, "out of memory")                                             \
    X(EEXIST, -3, "a session with this id is already open")                   \
    X(ENOENT, -4, "no open session with this id")                              \
    X(ECLOSED, -5, "session is closed")                                        \
    X(EAGAIN, -6, "queue full (no wait requested)")                            \
    X(ETIMEDOUT, -7, "timed out")                                              \
    X(ECANCELED, -8, "operation canceled before it started")                 \
    X(EBUDGET, -9, "session memory budget exceeded")                           \
    X(ENOBACKEND, -10, "requested backend is not available")                   \
    X(EDEADLK, -11, "would deadlock: called from inside the session's own op") \
    X(EBACKEND, -12, "backend failure")                                        \
    X(EEXPIRED, -13, "deadline passed before the operation started")          \
    X(EALREADY, -14, "operation already started, finished or canceled")  \
    X(ENOTSUP, -15, "not supported by this session's backend or runtime")

typedef enum accel_status {
#define ACCEL_STATUS_ENUM_(name, value, msg) ACCEL_##name = (value),
    ACCEL_STATUS_MAP(ACCEL_STATUS_ENUM_)
#undef ACCEL_STATUS_ENUM_
} accel_status;

/* A static, human-readable message for any status; "unknown status" for a
 * value that is not one. Never NULL. Thread-safe. */
ACCEL_API const char *accel_strerror(int status);

/* ------------------------------------------------------------ constants */

/* Priorities are weights: any value in ACCEL_PRIORITY_MIN..MAX is valid; 0
 * means ACCEL_PRIORITY_NORMAL wherever a priority is taken. */
enum {
    ACCEL_PRIORITY_LOW = 1,
    ACCEL_PRIORITY_NORMAL = 5,
    ACCEL_PRIORITY_HIGH = 10,
    ACCEL_PRIORITY_CRITICAL = 100,
    ACCEL_PRIORITY_MIN = 1,
    ACCEL_PRIORITY_MAX = 1000
};

typedef enum accel_backend {
    ACCEL_BACKEND_AUTO = 0, /* CUDA when a device is usable, else CPU */
    ACCEL_BACKEND_CPU = 1,
    ACCEL_BACKEND_CUDA = 2
} accel_backend;

#define ACCEL_ID_MAX 127                 /* bytes, not counting the NUL */
#define ACCEL_QUEUE_DEPTH_DEFAULT 1024u
#define ACCEL_QUEUE_DEPTH_MAX (1u << 20) /* after rounding up */

/* accel_session_config.flags */
#define ACCEL_SESSION_SHARED_DEVICE 0x1u

/* accel_session_close() flags */
#define ACCEL_CLOSE_DRAIN 0x0u  /* queued ops still run */
#define ACCEL_CLOSE_CANCEL 0x1u /* queued ops complete with ACCEL_ECLOSED */

/* Timeouts are relative, in nanoseconds. */
#define ACCEL_NO_WAIT 0
#define ACCEL_FOREVER (-1)

/* ---------------------------------------------------------------- types */

typedef struct accel_runtime accel_runtime;
typedef struct accel_session accel_session;
typedef struct accel_ctx accel_ctx; /* handed to a running op */

/* ------------------------------------------------------------- runtime */

typedef struct accel_runtime_config {
    /* Worker threads, max 1024. 0: one per CPU the process may use: the
     * CPUs of its affinity mask, capped by its cgroup v2 CPU quota
     * (ceil(quota / period) of cpu.max, of its cgroup and every ancestor),
     * at least 1; with worker_cpus set, worker_cpus_count. */
    unsigned workers;
    /* Short lane (see docs/scheduler.md): this many of the workers only run
     * sessions whose recent per-op cost is at most short_op_ns, so a short
     * op's wait does not depend on the longest ops of other sessions.
     * 0 (default): no short lane. Must be < workers when workers != 0. */
    unsigned short_lane_workers;
    uint64_t short_op_ns;  /* 0: 100 us */
    uint32_t quantum_ops;  /* ops per visit at most; 0: 32 */
    uint64_t quantum_ns;   /* a visit ends after this much service; 0: 2 ms.
                              A visit of a session whose ops mostly wait
                              (see "Ops that block"), on a general
                              worker of accel's own, ends at this much
                              time less the worker's blocked time, while
                              the cap on extra workers is not reached */
    int cuda_device;       /* device of the shared CUDA context; default 0 */
    /* Optional worker CPU pinning: worker i runs only on CPU
     * worker_cpus[i % worker_cpus_count] (CPU numbers as sched_setaffinity
     * takes them; each must be in the process's affinity mask, else
     * ACCEL_EINVAL). NULL or count 0: no pinning. Copied. Workers are named
     * accel-w0.. (general) and accel-short0.. (short lane) either way;
     * extra workers ("Ops that block") accel-x0.., never pinned. */
    const unsigned *worker_cpus;
    unsigned worker_cpus_count;
    /* 0, or sizeof(accel_runtime_config) when using fields added after it
     * (see "Growing structs" above). Later fields go below this one. */
    uint32_t struct_size;
    /* ---- added after 0.1's layout: set struct_size to use them. */
    /* ACCEL_RUNTIME_HOST_WORKERS (see <accel/host.h>); 0:
     * accel's own worker threads. */
    unsigned flags;
    /* Host-driven workers only (required there; it and host_wake_arg
     * must be NULL otherwise):
     * called with (host_wake_arg, lane) when a parked host worker of that
     * lane (ACCEL_HOST_LANE_*) must be woken. It runs inside the call that
     * made the work runnable (a submit, accel_host_visit_end,
     * accel_host_idle_end), inside a call that counts a host worker blocked
     * (accel_host_blocking_begin; accel_host_visit_begin and
     * accel_host_submit_begin for a visit begun counted, "Ops that
     * block"), inside accel_host_visit_begin (a pick that finds it
     * raced with a submit wakes a worker for that submit's work), on
     * that caller's thread, on the blocked-op
     * monitor's thread when it hands a blocked host worker's place on, or
     * on the batch hold-back's timer thread when it releases a held
     * session (accel_batch_config.max_delay_ns): it must
     * only signal (set a flag, post a semaphore) and must not call into
     * accel. */
    void (*host_wake)(void *arg, unsigned lane);
    void *host_wake_arg;
    /* Workers blocked inside an op (see "Ops that block" below): at most
     * this many extra worker threads are started in their place (max
     * 4096); 0: 4 x workers, at least 64 (1024 workers: 4096). */
    unsigned max_extra_workers;
    /* The blocked-worker monitor's tick while work waits: a worker found
     * inside one visit at two ticks (one tick apart for the visit's first
     * look, two after that), while work waits, that spent under half of
     * that time on a CPU and is neither running nor waiting for a CPU,
     * counts as blocked ("Ops that block"); 0: 1 ms; at most an hour
     * (more is taken as an hour). */
    uint64_t block_detect_ns;
    /* Host-driven workers only (optional; NULL: a blocked host worker keeps
     * its place): called with (host_wake_arg) when a host worker counted
     * blocked (accel_host_blocking_begin, a visit begun counted, or by the
     * monitor; or a submit that finds none parked then) is owed
     * another host worker: the host starts one, which calls
     * accel_host_worker_add. Same rules as host_wake (it runs inside accel
     * calls, or on the monitor's thread; it must only signal). */
    void (*host_grow)(void *arg);
    /* Host-driven workers only (optional; must be 0 otherwise): how many
     * CPUs the host runs its workers' code on at once (Go: GOMAXPROCS).
     * A host worker waiting for one of them (a goroutine waiting for a P)
     * looks asleep to the monitor, as a blocked one does; with host_cpus
     * set, the monitor begins to count a wait the host did not announce
     * only after a window in which the process ran on fewer than
     * host_cpus - 1/2 CPUs (a CPU sat idle that an extra worker could
     * use); once counted, the wait stays counted while the thread stays
     * off a CPU. The process's CPU time includes its threads that run no
     * host worker code (Go: cgo calls, the monitor), so such threads can
     * make a host look busy. 0: judged on the thread alone. Read at
     * create; the process's CPU clock is read once a tick (a sum over
     * its threads). */
    unsigned host_cpus;
} accel_runtime_config;

/* accel_runtime_config.flags */
#define ACCEL_RUNTIME_HOST_WORKERS 0x1u /* create no threads: the host
                                           drives the workers */

/* Ops that block. An op may wait (on another session's op, a lock, I/O,
 * a device) without stalling the other sessions: a worker blocked inside
 * an op hands its place to another worker, a parked one or an extra
 * thread started for it, so another session's op waits for a CPU and its
 * fair share, never for a worker held by someone else's blocked op.
 * A worker counts as blocked
 * - at once inside accel's own waits: accel_submit_wait, a submit
 *   waiting for room, accel_session_sync, a draining close or release,
 *   accel_runtime_destroy of another runtime (so ops that submit_wait
 *   on other sessions nest to any depth, also with one worker);
 * - at once between accel_blocking_begin and _end (the op says it);
 * - for waits accel cannot see (sleep, lock, I/O): once a monitor thread,
 *   ticking every block_detect_ns (1 ms by default) while work waits, has
 *   found it inside the same visit at two ticks, having spent under half
 *   the time between them on a CPU (its thread's CPU clock), and it is
 *   then neither running nor waiting for a CPU (its state in /proc): 1
 *   to 2 ticks into a wait that begins its visit, 1 to 3 into one that
 *   begins later in a visit (plus any lateness of the monitor).
 *   It counts no more from the first tick that finds it on a CPU again
 *   (half the time since the last tick, or over 1/64 of it and running
 *   or runnable now), or in another visit;
 * - at once from the begin of a visit whose session's last visit waited
 *   (the monitor counted it, or it began so and was asleep at least as
 *   long as it was on a CPU), as an announced wait, to the visit's end:
 *   a session whose ops wait (a storage read, a remote signer) hands its
 *   worker's place on at once at each visit, not a tick or two into each
 *   wait. A visit of it that computes (less time asleep than on a CPU;
 *   on accel's own workers, time spent waiting for a CPU counts as
 *   neither; a host's thread, read by its CPU clock alone, counts it as
 *   asleep) clears the mark, so
 *   a session that stops waiting costs one visit beside an extra worker;
 *   a visit that ran no op keeps it
 *   (accel_runtime_stats.blocked_presumed counts these visits).
 *   A CPU-bound long op is never counted by the monitor: more threads
 *   than CPUs would only slow everyone (the short lane is its latency
 *   answer). A visit begun counted (below) stays counted through the CPU
 *   work after its waits: the CPU work of a session whose visits spend
 *   half their time or more off a CPU runs beside the extra worker sent
 *   for it.
 * Bounds: at most max_extra_workers extra threads; never more extra
 * workers active than workers blocked (a surplus one leaves at the end of
 * its visit, an idle one after 50 ms), so at most `workers` workers run
 * ops that are not counted blocked; FIFO per session, weighted shares, the short
 * lane (extras are general workers) and exactly-once are unchanged. The
 * monitor sleeps while nothing waits for a worker: an idle runtime uses
 * no CPU. If a thread cannot be started, the op waits as it would
 * without compensation. Host-driven runtimes (<accel/host.h>): the same
 * monitor watches the host's workers, and the host starts its own extra
 * workers (see accel_host_blocking_begin).
 * Shares: a session is not charged for the time its worker sat blocked
 * in its ops while another worker could run in its place (the time off a
 * CPU inside accel's own waits, announced waits and visits begun counted:
 * CPU work inside them is charged; the time asleep while the monitor
 * detected it), so a
 * session whose ops wait keeps its share of the CPU. Still charged: an
 * unannounced wait until it is detected, a wait for a CPU, and blocked visits
 * while the extras are at their cap with blocked workers left over.
 * Host-driven workers' visits: the waits inside
 * accel_host_blocking_begin/_end, and in visits begun counted, off a CPU
 * (the thread's CPU clock) are not charged; a wait the monitor detected
 * is. */

/* Creates a runtime with its worker threads.
 * cfg NULL means all defaults. Returns ACCEL_OK and *out, or
 * ACCEL_EINVAL (out NULL, out-of-range field), ACCEL_ENOMEM (memory or
 * threads could not be had). */
ACCEL_API int accel_runtime_create(const accel_runtime_config *cfg,
                                   accel_runtime **out);

/* Closes every session with ACCEL_CLOSE_DRAIN (waits for their accepted
 * ops), joins the workers and frees everything, including sessions whose
 * handles were never released: every handle of the runtime is invalid
 * afterwards. Returns ACCEL_OK, ACCEL_EINVAL (rt NULL) or ACCEL_EDEADLK
 * (called from inside an op, or a done callback, of a session of this
 * runtime, or from inside a liburcu read-side section of the calling
 * thread's own; nothing is done). Inside an op of another runtime it
 * proceeds.
 * Not to be called twice on one runtime, nor concurrently with other calls
 * on its sessions (out of contract, like free()). */
ACCEL_API int accel_runtime_destroy(accel_runtime *rt);

/* Worker threads of rt (the resolved count: see
 * accel_runtime_config.workers); 0 for NULL. */
ACCEL_API unsigned accel_runtime_workers(const accel_runtime *rt);

typedef struct accel_runtime_stats {
    uint32_t workers;            /* worker threads */
    uint32_t short_lane_workers; /* of which on the short lane */
    uint32_t parked;             /* workers asleep (or about to) now */
    uint32_t sessions;           /* session objects not yet freed */
    uint64_t picks;              /* scheduler picks workers tried */
    uint64_t visits;             /* picks that found a session: visits run */
    uint64_t parks;              /* times a worker went to sleep */
    /* Ops that block (see "Ops that block" above); past the 0.1 layout. */
    uint32_t blocked;            /* workers blocked inside an op now */
    uint32_t extra_workers;      /* extra workers running now */
    uint64_t extra_started;      /* extra workers started */
    uint64_t blocked_detected;   /* times the monitor found a worker
                                    blocked in a wait accel cannot see */
    uint64_t blocked_presumed;   /* visits begun counted blocked: their
                                    session's last visit waited */
} accel_runtime_stats;

/* Fills the first min(size, sizeof) bytes of *out with a snapshot of rt's
 * counters (each read atomically, the set not at one instant); pass
 * sizeof(*out). Returns ACCEL_OK or ACCEL_EINVAL (NULL argument, size
 * smaller than this release's struct). Lock-free but for the session
 * count (a cold-path lock). */
ACCEL_API int accel_runtime_get_stats(accel_runtime *rt,
                                      accel_runtime_stats *out, size_t size);

/* Writes the Prometheus text exposition format (0.0.4) for rt and all its
 * open sessions into buf: per runtime, workers, parked workers, sessions,
 * visits, picks, parks; per session (labels session="<id>",
 * priority="<weight>"), ops submitted/completed/failed/canceled, service
 * seconds, wait p50/p99 seconds, queue depth, memory used and budget. Each
 * family has its HELP and TYPE lines; label values are escaped.
 * snprintf-like: *len_out is the full length of the text (no NUL); the
 * first min(len, cap) bytes are written, then a NUL if len < cap. If
 * *len_out > cap the text was truncated: retry with a bigger buffer
 * (buf NULL with cap 0 asks only for the length).
 * Returns ACCEL_OK, ACCEL_EINVAL (rt or len_out NULL, buf NULL with cap
 * > 0), ACCEL_ENOMEM (the session snapshot could not be allocated).
 * Safe from any thread at any time while rt lives, concurrently with
 * open, close and release of its sessions (a cold-path lock is held while
 * the counters are copied; no hot path takes it). docs/metrics.md. */
ACCEL_API int accel_runtime_write_prometheus(accel_runtime *rt, char *buf,
                                             size_t cap, size_t *len_out);

/* The process-wide runtime with default config, created on first use
 * (thread-safe). It is never destroyed: it keeps working until the
 * process is gone, also in exit handlers and in threads still running
 * while exit() runs (ops still queued when the process ends never run).
 * NULL if it could not be created. Do not pass it to
 * accel_runtime_destroy(). */
ACCEL_API accel_runtime *accel_runtime_default(void);

/* The op running on the calling thread will block (sleep, lock, I/O, a
 * remote call): its worker's place goes to another worker at once,
 * without waiting for the monitor (see "Ops that block"). Pairs nest;
 * each begin needs its _end before the op returns (one left open is
 * closed when the op's visit ends). Outside an op both do nothing and
 * return ACCEL_OK. Returns ACCEL_OK, or from _end ACCEL_EINVAL when no
 * begin of this thread is open (nothing changes); from _begin
 * ACCEL_EINVAL past 2^32 - 1 open begins. */
ACCEL_API int accel_blocking_begin(void);
ACCEL_API int accel_blocking_end(void);

/* ------------------------------------------------------------- session */

typedef struct accel_session_config {
    const char *id;          /* 1..ACCEL_ID_MAX bytes, unique among open
                                sessions of the runtime; copied */
    uint32_t priority;       /* weight 1..1000; 0 = ACCEL_PRIORITY_NORMAL */
    int64_t memory_budget;   /* bytes; 0 = unlimited; < 0 is ACCEL_EINVAL */
    accel_backend backend;   /* AUTO, CPU or CUDA */
    int device;              /* device index for CUDA */
    uint32_t queue_depth;    /* 0 = 1024; rounded up to a power of two;
                                above ACCEL_QUEUE_DEPTH_MAX is ACCEL_EINVAL */
    unsigned flags;          /* ACCEL_SESSION_SHARED_DEVICE */
    uint32_t struct_size;    /* 0, or sizeof(accel_session_config) when
                                using fields added after it (see "Growing
                                structs"); later fields go below it */
} accel_session_config;

/* Opens a session and returns a handle to it in *out.
 * Returns ACCEL_OK; ACCEL_EINVAL (NULL rt/cfg/out/id, empty or overlong id,
 * priority > 1000, memory_budget < 0, unknown backend or flags, depth above
 * the maximum); ACCEL_EEXIST (an open session has this id); ACCEL_EDEADLK
 * (called from inside a liburcu read-side section of the calling thread's
 * own: see "Thread-safety"; nothing is done);
 * ACCEL_ENOBACKEND (CUDA asked for and no usable device, or the CUDA
 * backend has failed); ACCEL_ENOMEM; ACCEL_EBACKEND (the CUDA backend could
 * not make the session's stream, events or pool for another reason than
 * memory: AUTO does not fall back to the CPU then, docs/cuda.md). */
ACCEL_API int accel_session_open(accel_runtime *rt,
                                 const accel_session_config *cfg,
                                 accel_session **out);

/* Finds the open session with this id and returns a new handle to it.
 * Lock-free (an RCU read-side lookup). A session whose last handle is
 * being released (accel_session_release: it closes) is not found.
 * Returns ACCEL_OK, ACCEL_EINVAL (NULL argument, bad id), ACCEL_ENOENT. */
ACCEL_API int accel_session_lookup(accel_runtime *rt, const char *id,
                                   accel_session **out);

/* Handles are counted references to the session object: open and each
 * successful lookup give one, release drops one. Statistics and the getters
 * keep working on a closed session until its last release. */

/* Closes the session. ACCEL_CLOSE_DRAIN (0): queued ops still run.
 * ACCEL_CLOSE_CANCEL: queued ops complete with ACCEL_ECLOSED without
 * running (an op a worker takes at the very moment close begins may still
 * run; every op completes exactly once either way). Either way: new submits get ACCEL_ECLOSED, submitters blocked on
 * a full ring wake with ACCEL_ECLOSED, and close returns once every
 * accepted op of the session has completed and its done callback has
 * returned. The id is free for a new session as soon as close begins.
 * Idempotent and safe from many threads (every caller waits). Called from
 * inside one of the session's own ops it does not wait (the running op and,
 * with DRAIN, the ops queued behind it complete later). Never affects
 * another session.
 * Returns ACCEL_OK, ACCEL_EINVAL (s NULL, unknown flags). */
ACCEL_API int accel_session_close(accel_session *s, unsigned flags);

/* Drops this handle (closing with DRAIN first if it is the last one and the
 * session is open). Using a released handle is undefined, as free().
 * NULL is ignored. The session's memory goes back after an RCU grace
 * period, on liburcu's thread; while more than a few MB of closed
 * sessions wait there (open/close churn), the release of the last handle
 * waits for a grace period and frees the session itself, unless it is
 * called from inside an op or from inside a read-side section of
 * liburcu's memb flavour. */
ACCEL_API void accel_session_release(accel_session *s);

/* ------------------------------------------------------------------ ops */

/* 0 = success; any other value is the op's error, passed to done. */
typedef int (*accel_op_fn)(accel_ctx *ctx, void *arg);
/* Called on a worker thread after fn returned, or instead of fn when the op
 * did not run: ACCEL_ECLOSED (canceled by close), ACCEL_ECANCELED
 * (accel_cancel), ACCEL_EEXPIRED (its deadline passed first). May be
 * NULL. */
typedef void (*accel_done_fn)(void *arg, int status);

typedef struct accel_op {
    accel_op_fn fn;
    accel_done_fn done;
    void *arg;
} accel_op;

/* Queues op on s. ACCEL_OK: accepted; done(arg, status) will be called
 * exactly once, with fn's return value, or ACCEL_ECLOSED if the op was
 * canceled unrun. Any error: not accepted, done is never called.
 * A full ring waits up to timeout_ns (backpressure; ACCEL_FOREVER waits
 * without limit), then ACCEL_EAGAIN (ACCEL_NO_WAIT) or ACCEL_ETIMEDOUT.
 * From inside one of s's own ops (or their done callbacks), a full ring
 * returns ACCEL_EDEADLK at once instead of waiting: only that op's worker
 * could make room (ACCEL_NO_WAIT still gets ACCEL_EAGAIN).
 * queue_depth bounds the ops accepted and not yet started: an op that is
 * running no longer holds a slot.
 * Returns also ACCEL_EINVAL (s, op or op->fn NULL; timeout_ns < -1),
 * ACCEL_ECLOSED (session closing or closed).
 * Lock-free; wait-free for producers with respect to each other except for
 * the tail CAS. */
ACCEL_API int accel_submit(accel_session *s, const accel_op *op,
                           int64_t timeout_ns);

/* Accepts a prefix of ops[0..n): the ops take their slots with one
 * reservation per run of free space. ACCEL_OK when all n were accepted,
 * else the status that stopped it (as accel_submit), with *accepted = how
 * many were (accepted may be NULL). n == 0 is ACCEL_OK. An op with a NULL
 * fn stops the batch with ACCEL_EINVAL before it. */
ACCEL_API int accel_submit_batch(accel_session *s, const accel_op *ops,
                                 size_t n, int64_t timeout_ns,
                                 size_t *accepted);

/* accel_submit_batch whose ops all carry deadline_ns as accel_submit_ex's
 * (absolute, on accel_now_ns()'s clock; 0: none, the plain batch): an op
 * no worker has started by then completes ACCEL_EEXPIRED unrun. Returns
 * as accel_submit_batch, and ACCEL_EINVAL (*accepted 0, nothing queued)
 * for deadline_ns < 0. */
ACCEL_API int accel_submit_batch_ex(accel_session *s, const accel_op *ops,
                                    size_t n, int64_t deadline_ns,
                                    int64_t timeout_ns, size_t *accepted);

/* Runs fn in the session's order and returns its result (the Go Submit).
 * timeout_ns bounds only the wait for room in the ring: once accepted, it
 * waits for the op (arg may live on the caller's stack). Returns fn's
 * result, ACCEL_ECLOSED (closed before or canceled before it ran),
 * ACCEL_EAGAIN, ACCEL_ETIMEDOUT, ACCEL_EINVAL, or ACCEL_EDEADLK from inside
 * one of the session's own ops. Note fn's own return value may coincide
 * with a status code; keep op errors positive to tell them apart.
 * From inside an op of another session it waits as from anywhere (the
 * worker is counted blocked, so other sessions go on), but a cycle (an op
 * of A waits here on B while an op of B waits on A) is not detected and
 * never returns. Where one can form, submit with accel_submit_ex and a
 * ticket, wait for done with a bound of your own, and accel_cancel when it
 * runs out. */
ACCEL_API int accel_submit_wait(accel_session *s, accel_op_fn fn, void *arg,
                                int64_t timeout_ns);

/* Returns once every op accepted before the call has completed and its done
 * callback has returned (canceled and expired ops included): ACCEL_OK,
 * ACCEL_ETIMEDOUT, ACCEL_EINVAL, or ACCEL_EDEADLK from inside one of the
 * session's own ops. Works on a closed session too. */
ACCEL_API int accel_session_sync(accel_session *s, int64_t timeout_ns);

/* ------------------------------------------------------------ batching */

/* Dynamic batching (docs/batching.md). A session given a batch function
 * runs its queued ops in batches: the worker that visits the session takes
 * a FIFO prefix of its queued ops (up to max_ops) and passes their args to
 * one call of fn, which writes one status per op into status[] (it
 * arrives zeroed: 0, or the op's error as its fn would return it). Each op
 * then completes exactly once, in FIFO order, with its own done and its
 * status. The ops' own fn is not called while the session has a batch
 * function; it runs the op (one by one, as usual) in a visit that begins
 * with none set, so every op still carries a fn (accel_submit requires
 * one).
 * Forming a batch takes what is queued at that moment: with max_delay_ns
 * 0 there is no added wait, and batches grow only as load grows (see
 * max_delay_ns for holding ops back to fill a batch). An op canceled
 * (accel_cancel) before its batch forms never runs and completes
 * ACCEL_ECANCELED; an op whose deadline passed before its batch forms is
 * left out and completes ACCEL_EEXPIRED; under a CANCEL close the ops not
 * yet in a batch complete ACCEL_ECLOSED; a DRAIN close runs them, in
 * batches. Their done callbacks still run in FIFO order, after the batch
 * call that ran the ops queued ahead of them.
 * fn runs on the worker as an op does: ctx is the session's (accel_ctx_alloc
 * charges its budget), accel_current_session() is the session, and a
 * visit's measured time, batch included, is charged to the session's
 * share. A visit runs batches until the session's ring is empty or the
 * visit has had quantum_ns of service (at least one batch). With
 * ACCEL_RUNTIME_HOST_WORKERS a host visit hands one batch to the host
 * instead, which runs it its own way (host.h). */
typedef void (*accel_batch_fn)(accel_ctx *ctx, void *const *args, uint32_t n,
                               int *status, void *user);
/* On a CUDA session fn enqueues the batch's device work on
 * accel_ctx_cuda_stream(ctx) (one launch for the batch) and returns; the
 * ops complete once that work is done (docs/cuda.md, "Batches"). */

/* Most ops one batch call takes. */
#define ACCEL_BATCH_MAX 256u
/* The largest max_delay_ns accepted (one second). */
#define ACCEL_BATCH_DELAY_MAX 1000000000ull

typedef struct accel_batch_config {
    accel_batch_fn fn; /* required */
    void *user;        /* passed to fn */
    uint32_t max_ops;  /* 1..ACCEL_BATCH_MAX ops per call */
    /* Holding the session back to fill a batch (0: never; at most
     * ACCEL_BATCH_DELAY_MAX, above it ACCEL_EINVAL). A visit that finds
     * fewer than max_ops ops queued takes none: the session is held, in
     * no queue (no worker waits for it; other sessions run), until
     * max_ops are queued, max_delay_ns has passed since the first visit
     * that held the forming batch, the earliest deadline of its queued
     * ops less the expected cost of a full batch (cost_fixed_ns +
     * max_ops * cost_per_op_ns, the caller's estimate) has come, close
     * begins (DRAIN runs the held ops at once, CANCEL completes them
     * ACCEL_ECLOSED), accel_cancel cancels one of them (its done then
     * comes without waiting), or the configuration changes. An op whose
     * deadline passed while held anyway (no free worker, a cost too
     * small) completes ACCEL_EEXPIRED unrun. A held session keeps its
     * place in the fair share: the wait neither earns credit nor costs
     * any. The delay and deadline releases come from a timer thread of
     * the runtime, started by the first call with a delay. The costs
     * serve only the hold-back: non-zero without a delay is
     * ACCEL_EINVAL. */
    uint64_t max_delay_ns;
    uint64_t cost_fixed_ns, cost_per_op_ns;
    uint32_t struct_size; /* 0, or sizeof(accel_batch_config) when using
                             fields added after it ("Growing structs") */
} accel_batch_config;

/* Gives the session a batch function (cfg copied), or takes it away (cfg
 * NULL: later visits run ops one by one with their fn). Any time, from any
 * thread, also from inside an op: it takes effect from the session's next
 * visit; a batch already formed runs as it was formed. Concurrent calls
 * apply in some order, each whole.
 * Returns ACCEL_OK; ACCEL_EINVAL (s NULL; cfg with fn NULL, max_ops 0 or
 * above ACCEL_BATCH_MAX, max_delay_ns above ACCEL_BATCH_DELAY_MAX, a cost
 * without a delay, a bad struct_size or unknown fields set);
 * ACCEL_ENOTSUP (a session whose backend has no batch path: the CPU and
 * CUDA backends have one; max_delay_ns > 0 on a CUDA session);
 * ACCEL_ECLOSED (close has
 * begun; also a parent's session in a fork() child); ACCEL_ENOMEM (also:
 * the runtime's hold-back timer thread could not be started). Any error
 * changes nothing. Setting or clearing releases a held session (its ops
 * then run by the new configuration). */
ACCEL_API int accel_session_set_batch(accel_session *s,
                                      const accel_batch_config *cfg);

/* ------------------------------------------- deadlines and cancellation */

/* The clock of deadlines: CLOCK_MONOTONIC in ns. Thread-safe. */
ACCEL_API int64_t accel_now_ns(void);

/* Names one op accepted by accel_submit_ex, for accel_cancel. A small value
 * (copy it freely; no allocation, nothing to free); treat the fields as
 * opaque. All-zero means "no op": a failed accel_submit_ex leaves it so.
 * Valid while the caller holds a handle to the op's session; using it after
 * the last release is undefined, like a released handle. An old ticket
 * never names another op: once its op was taken, its cancel is
 * ACCEL_EALREADY, even after the slot was reused by later ops. */
typedef struct accel_ticket {
    accel_session *session;
    uint64_t position;
    uint64_t serial;
} accel_ticket;

/* As accel_submit, with two optional extras:
 * - deadline_ns: absolute, on accel_now_ns()'s clock; 0 = none. An op that
 *   no worker has started by then does not run: done gets ACCEL_EEXPIRED
 *   (a worker compares the clock with the deadline when it reaches the
 *   op). An op that started in time runs to the end. A deadline already
 *   past is accepted (the op expires). It does not bound the wait for ring
 *   room: timeout_ns does.
 * - ticket: if not NULL, filled on ACCEL_OK for accel_cancel (zeroed on
 *   any error).
 * Ops with neither take the plain path of accel_submit. Done statuses:
 * fn's result, ACCEL_ECLOSED, ACCEL_ECANCELED, ACCEL_EEXPIRED. Every done
 * runs on a worker, once, in the session's acceptance order, whether the
 * op ran, expired or was canceled (docs/cancel.md).
 * Returns as accel_submit; ACCEL_EINVAL also for deadline_ns < 0. */
ACCEL_API int accel_submit_ex(accel_session *s, const accel_op *op,
                              int64_t deadline_ns, int64_t timeout_ns,
                              accel_ticket *ticket);

/* Cancels the ticket's op if no worker has taken it yet.
 * ACCEL_OK: the op will never run. Its done still runs exactly once, with
 *   ACCEL_ECANCELED, on the worker that reaches the op's position in the
 *   session's FIFO order (not on the caller's thread, and not before the
 *   ops queued ahead of it completed): keep op->arg valid until then. A
 *   sync begun after the cancel waits for that done like any other.
 * ACCEL_EALREADY: nothing changed: a worker has taken the op (it runs, or
 *   completes with ACCEL_EEXPIRED/ACCEL_ECLOSED) or finished it, or it was
 *   canceled before.
 * ACCEL_ECLOSED: the session's close has begun; close decides the queued
 *   ops (DRAIN runs them, CANCEL completes them with ACCEL_ECLOSED). A
 *   cancel overlapping close's start may still win (ACCEL_OK). Also in a
 *   fork() child for a ticket of the parent's session (nothing changes,
 *   no done runs there; see "fork()" at the top).
 * ACCEL_EINVAL: t NULL, a zero ticket, a ticket not made by
 *   accel_submit_ex for its session (fields changed; another session's
 *   fields mixed in), a position the session never handed out.
 * Wait-free (one CAS on the op's slot); any thread, also inside an op. */
ACCEL_API int accel_cancel(const accel_ticket *t);

/* ------------------------------------------------- host-driven workers */

/* Runtimes created with ACCEL_RUNTIME_HOST_WORKERS are driven through
 * <accel/host.h> (accel_host_*), for language runtimes that run the
 * workers on their own threads. */

/* The session whose op (or done callback) runs on the calling thread now,
 * else NULL: a host tells a call from inside an op of a session (which
 * must not wait for that session) by it. Any thread. */
ACCEL_API accel_session *accel_current_session(void);

/* --------------------------------------------------------------- budget */

/* Charges bytes to the session's budget (a CAS loop: never over the cap,
 * never negative). Returns ACCEL_OK, ACCEL_EBUDGET (would pass the cap;
 * nothing charged), ACCEL_EINVAL (s NULL, bytes < 0), ACCEL_ECLOSED. */
ACCEL_API int accel_session_reserve(accel_session *s, int64_t bytes);
/* Refunds bytes. ACCEL_EINVAL if more than used, bytes < 0 or s NULL.
 * Allowed on a closed session (so owners can give memory back). */
ACCEL_API int accel_session_unreserve(accel_session *s, int64_t bytes);
/* Bytes charged to the session's budget now; 0 for NULL. */
ACCEL_API int64_t accel_session_memory_used(const accel_session *s);

/* -------------------------------------------------------------- getters */

/* The session's id, as opened (held by the session, valid while a handle
 * is); NULL if s NULL. */
ACCEL_API const char *accel_session_id(const accel_session *s);
/* The session's priority weight (1..1000); 0 if s NULL. */
ACCEL_API uint32_t accel_session_priority(const accel_session *s);
/* Sets the session's priority weight.
 * Takes effect from the session's next visit. Returns ACCEL_OK,
 * ACCEL_EINVAL (s NULL, priority > 1000), ACCEL_ECLOSED. 0 = NORMAL. */
ACCEL_API int accel_session_set_priority(accel_session *s, uint32_t priority);
/* The backend actually bound (never AUTO); ACCEL_BACKEND_AUTO for NULL. */
ACCEL_API accel_backend accel_session_backend(const accel_session *s);
/* true once close has begun (also true for NULL). */
ACCEL_API bool accel_session_is_closed(const accel_session *s);

/* accel_session_stats.batch_size_hist: one bucket per power of two of
 * ops per batch, 1 up to ACCEL_BATCH_MAX. */
#define ACCEL_BATCH_HIST_BUCKETS 9

typedef struct accel_session_stats {
    uint64_t submitted;  /* accepted */
    uint64_t dispatched; /* started (fn called) */
    uint64_t completed;  /* ran: fn returned 0 */
    uint64_t failed;     /* ran: fn returned non-zero */
    uint64_t cancelled; /* never ran: ACCEL_ECLOSED or ACCEL_ECANCELED */
    uint64_t queued;     /* accepted, not yet started */
    int64_t memory_used, memory_budget;
    uint64_t service_ns; /* total time its visits took (measured per
                            visit; blocked time included, which the
                            share is not charged: "Ops that block") */
    uint64_t visits;     /* times a worker picked the session */
    uint32_t priority;
    /* Scheduler view (docs/scheduler.md): the session's virtual time and
     * its lag, i.e. how far its received service trails (+) or leads (-)
     * its weighted share since it was opened, both in ns. */
    uint64_t vtime_ns;
    int64_t lag_ns;
    /* Submit -> start wait over a sample of the session's ops (every
     * 32nd accepted position: only those read the clock), as
     * percentiles and maximum in ns; 0 until the first sample. The
     * percentiles are bucket upper edges (4 buckets per power of two,
     * so within +25%). */
    uint64_t wait_p50_ns, wait_p99_ns, wait_p999_ns, wait_max_ns;
    uint64_t wait_samples;
    uint64_t expired;    /* never ran: ACCEL_EEXPIRED (not in cancelled);
                            past the 0.1 layout: read with _ex */
    /* Batching (accel_session_set_batch; past the 0.1 layout: read with
     * _ex): calls of the batch function, the ops they ran (in
     * dispatched, completed and failed too), and how many calls ran
     * n ops with 2^i <= n < 2^(i+1) in batch_size_hist[i]. */
    uint64_t batches;
    uint64_t batch_ops;
    uint64_t batch_size_hist[ACCEL_BATCH_HIST_BUCKETS];
    /* Hold-back (max_delay_ns): ns the session was held back to fill
     * batches, summed over its holds (each from its visit's end to its
     * release). */
    uint64_t batch_held_ns;
} accel_session_stats;

/* The size of accel_session_stats as of 0.1: what accel_session_get_stats
 * writes, in this and every later release of this SONAME. */
#define ACCEL_SESSION_STATS_SIZE_0_1                                           \
    (offsetof(accel_session_stats, wait_samples) + sizeof(uint64_t))

/* Fills *out with a snapshot (each counter read atomically; the set is not
 * one atomic snapshot while ops run). Works on a closed session until its
 * last release. Returns ACCEL_OK or ACCEL_EINVAL (NULL argument).
 * Writes the 0.1 layout (ACCEL_SESSION_STATS_SIZE_0_1 bytes): fields added
 * to the struct later are filled only by accel_session_get_stats_ex. */
ACCEL_API int accel_session_get_stats(const accel_session *s,
                                      accel_session_stats *out);
/* As accel_session_get_stats for the first min(size, sizeof) bytes of
 * *out; pass sizeof(*out). ACCEL_EINVAL also when size is smaller than
 * ACCEL_SESSION_STATS_SIZE_0_1. */
ACCEL_API int accel_session_get_stats_ex(const accel_session *s,
                                         accel_session_stats *out,
                                         size_t size);

/* ------------------------------------------------------------------ ctx */

/* The session of the op ctx was handed to; NULL for NULL ctx. Valid only
 * during the op it was handed to, on that thread. */
ACCEL_API accel_session *accel_ctx_session(accel_ctx *ctx);

/* Allocates bytes charged to the session's budget: exactly `bytes` on the
 * CPU backend (a budget can be filled to the byte); the CUDA backend
 * charges its allocation granularity (include/accel/cuda.h).
 * The memory is not zeroed: it may hold bytes freed earlier in the
 * process, another session's included (CPU: malloc; CUDA: a stream-ordered
 * memory pool). An op that needs zeroes clears it.
 * Returns ACCEL_OK and *out, ACCEL_EBUDGET past the cap (nothing charged),
 * ACCEL_EINVAL (NULL ctx/out, bytes == 0, bytes above INT64_MAX, a budget
 * counts in int64_t; on CUDA also a size whose charge rounds up past it),
 * ACCEL_ENOMEM, ACCEL_EBACKEND (a
 * CUDA session whose backend has failed or whose device allocation failed
 * for another reason than memory, docs/cuda.md). Memory not freed
 * by the op stays charged until accel_ctx_free() from a later op of the
 * same session; the backend releases what is left when the session is
 * freed. */
ACCEL_API int accel_ctx_alloc(accel_ctx *ctx, size_t bytes, void **out);
/* Frees p (from accel_ctx_alloc of the same session) and refunds its
 * charge. NULL p is ignored. */
ACCEL_API void accel_ctx_free(accel_ctx *ctx, void *p);

#ifdef __cplusplus
}
#endif
#endif /* ACCEL_ACCEL_H */
