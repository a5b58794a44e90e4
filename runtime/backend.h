/*
 * The backend interface (docs/backends.md): how a session's ops reach a
 * device. The runtime names no backend: backends are entries of a table
 * indexed by accel_backend (backend_registry.c), built in or loaded as a
 * module, and the runtime calls them only through accel__backend_ops.
 * Backends see the runtime only through the accessors at the end of this
 * header, never through its structs.
 *
 * Kept free of <stdatomic.h> and of runtime structs so that a .cu file can
 * include it (C++ before C++23 has no <stdatomic.h>).
 *
 * Completion: run() returns the op's status when the op is complete (the
 * CPU backend: fn's return value). A backend whose device finishes later
 * returns ACCEL__PENDING and reports the status afterwards with
 * accel__op_complete() from the session's consumer context (the worker
 * holding the session, see poll()), in FIFO order.
 */
#ifndef ACCEL_RUNTIME_BACKEND_H
#define ACCEL_RUNTIME_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accel/accel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACCEL__BACKEND_VERSION 4
#define ACCEL__PENDING 1 /* run(): completion will be reported later */
/* Entries of the backend table: one per accel_backend value (0, AUTO, is
 * never a backend). */
#define ACCEL__BACKEND_KINDS 3

/* flags */
#define ACCEL__BACKEND_RUNS_INLINE 0x1u /* run() only calls op->fn: the
                                           worker calls fn directly */

/* Runtime-level arguments of probe (from accel_runtime_config). */
typedef struct accel__backend_probe_args {
    int device; /* the device of the runtime's shared context */
} accel__backend_probe_args;

/* Arguments of session_open (from accel_session_config). */
typedef struct accel__backend_open_args {
    int device;
    uint32_t weight;    /* priority 1..1000 */
    int shared;         /* ACCEL_SESSION_SHARED_DEVICE */
    int64_t budget_cap; /* the session's memory budget, 0: unlimited */
} accel__backend_open_args;

/* A batch for run_batch() (docs/batching.md): ops[0..n) as formed, in
 * FIFO order; unrun[i] != 0: ops[i] was left out (canceled, expired,
 * closed) and completes unrun with that status. The others, in order, are
 * the m ops of fn's call: args[0..m) and status[0..m) (zeroed). */
typedef struct accel__backend_batch {
    accel_batch_fn fn;
    void *user;
    const accel_op *ops;
    const int *unrun;
    uint32_t n;
    void *const *args;
    int *status;
    uint32_t m;
} accel__backend_batch;

/* Queries of a running op's session state (query()). */
#define ACCEL__Q_STREAM 1 /* out: void *, the device stream */
#define ACCEL__Q_DEVICE 2 /* out: int, the device index */

typedef struct accel__backend_ops {
    int version; /* ACCEL__BACKEND_VERSION */
    const char *name;
    accel_backend kind;      /* its entry in the table */
    unsigned flags;          /* ACCEL__BACKEND_* */
    /* AUTO binds a session to the usable backend of highest rank. */
    int auto_rank;

    /* Probed once per runtime: ACCEL_OK if usable, with its runtime-level
     * state in *rt_state. May be NULL (always usable, no state). */
    int (*probe)(void **rt_state, const accel__backend_probe_args *args);
    void (*runtime_fini)(void *rt_state);
    /* rt_state, or NULL when probe did not succeed: ACCEL_OK (usable),
     * ACCEL_ENOBACKEND (not usable here), ACCEL_EBACKEND (failed for good
     * in this process). May be NULL: usable iff probe succeeded. */
    int (*status)(void *rt_state);

    /* Per session: create/destroy device-side state. ACCEL_ENOBACKEND
     * from open lets AUTO fall back to the next backend. */
    int (*session_open)(void *rt_state, accel_session *s,
                        const accel__backend_open_args *args, void **state);
    /* After the session's last op completed; frees what it still owns. */
    void (*session_free)(void *rt_state, accel_session *s, void *state);

    /* Runs one op: 0 and *status, or ACCEL__PENDING. */
    int (*run)(void *state, accel_ctx *ctx, const accel_op *op, int *status);
    /* Called by the worker at the end of a visit (and by a visit with no
     * new ops) to complete finished device work; returns the number of
     * ops still pending. NULL: never pending. */
    uint32_t (*poll)(void *state, accel_session *s);

    /* Budgeted allocation. alloc_charge is what the budget must be charged
     * before the allocation is attempted (granularity). */
    size_t (*alloc_charge)(void *state, size_t bytes);
    int (*alloc)(void *state, accel_ctx *ctx, size_t bytes, void **out);
    /* Returns the charge to refund. */
    size_t (*free)(void *state, accel_ctx *ctx, void *p);

    /* New priority (weight 1..1000) for the session's device queue. May be
     * NULL. */
    void (*set_priority)(void *state, uint32_t weight);

    /* How many more ops run() may take now (a backend's cap on device work
     * in flight); the visit takes no more. May be NULL: unlimited. Called
     * by the worker holding the session. */
    uint32_t (*capacity)(void *state);

    /* Answers an ACCEL__Q_* query about a session's state: ACCEL_OK and
     * *out, or ACCEL_EINVAL. May be NULL. */
    int (*query)(void *state, int what, void *out);

    /* Runs a batch of a session with a batch function on the device: calls
     * b->fn once (when b->m > 0 and the device is usable) and completes all
     * b->n ops later, in FIFO order after the ops before them, the run ones
     * with accel__op_complete, the unrun ones with accel__op_complete_unrun.
     * Returns whether fn was called. Called by the worker holding the
     * session. NULL: the runtime calls fn on the worker, which may then do
     * so only for a backend with ACCEL__BACKEND_RUNS_INLINE (else
     * accel_session_set_batch answers ACCEL_ENOTSUP). */
    bool (*run_batch)(void *state, accel_ctx *ctx,
                      const accel__backend_batch *b);
    /* How many ops the session's next batch may hold now (0: none until a
     * poll completes some); at most ACCEL_BATCH_MAX. Called by the worker
     * holding the session. May be NULL: no bound. */
    uint32_t (*batch_room)(void *state);
} accel__backend_ops;

/* ---- What the runtime provides to backends (no runtime structs). */

/* For backends completing ops later (see poll): called from the worker
 * holding the session. */
void accel__op_complete(accel_session *s, const accel_op *op, int status);
/* The same for an op of a batch that was left out when the batch formed
 * (accel__backend_batch.unrun): status is its unrun status, counted then. */
void accel__op_complete_unrun(accel_session *s, const accel_op *op,
                              int status);

/* The session state of the running op's session if it is bound to
 * backend kind, else NULL (op_ctx.c). */
void *accel__ctx_backend_state(accel_ctx *ctx, accel_backend kind);

/* For the public accessors of a backend (such as backends/cuda/cuda_api.c): asks
 * the running op's session, if bound to kind, the query `what` (its
 * ops->query). ACCEL_OK and *out, or ACCEL_EINVAL (op_ctx.c). */
int accel__ctx_backend_query(accel_ctx *ctx, accel_backend kind, int what,
                             void *out);

/* The runtime-level state of backend kind in rt (NULL when it did not
 * probe usable), and its status: ACCEL_OK, ACCEL_ENOBACKEND (not built,
 * not loadable, or probe failed), ACCEL_EBACKEND (failed since)
 * (backend_registry.c). */
void *accel__backend_registry_state(accel_runtime *rt, accel_backend kind);
int accel__backend_registry_status(accel_runtime *rt, accel_backend kind);

/* A backend built as a loadable module (docs/backends.md) gets these
 * accessors (the registry's two included), and the runtime's allocator,
 * as a table: a module cannot link the library's hidden symbols.
 * backends/module_host.c turns the table back into those functions inside
 * the module. */
typedef struct accel__backend_host {
    int version; /* ACCEL__BACKEND_VERSION */
    void (*op_complete)(accel_session *s, const accel_op *op, int status);
    void (*op_complete_unrun)(accel_session *s, const accel_op *op,
                              int status);
    void *(*ctx_backend_state)(accel_ctx *ctx, accel_backend kind);
    void *(*runtime_backend_state)(accel_runtime *rt, accel_backend kind);
    int (*runtime_backend_status)(accel_runtime *rt, accel_backend kind);
    void *(*malloc)(size_t n);
    void *(*calloc)(size_t n, size_t size);
    void *(*calloc_aligned)(size_t align, size_t n);
    void (*free)(void *p);
    /* Fault injection (fault.h): the module's allocations name their
     * site, and its other fault sites ask the runtime's hook. */
    void *(*malloc_at)(size_t n, const char *func);
    void *(*calloc_at)(size_t n, size_t size, const char *func);
    void *(*calloc_aligned_at)(size_t align, size_t n, const char *func);
    bool (*fault_hit)(const char *kind, const char *func);
} accel__backend_host;

/* The one symbol a module exports: returns its ops, or NULL when it
 * cannot serve a host of this version. */
typedef const accel__backend_ops *(*accel__backend_module_entry_fn)(
    const accel__backend_host *host);
#define ACCEL__BACKEND_MODULE_ENTRY "accel_backend_module_entry"

#ifdef __cplusplus
}
#endif
#endif
