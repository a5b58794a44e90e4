/*
 * The backend ops table (in the manner of SQLite's sqlite3_io_methods): how
 * a session's ops reach a device. The core runtime calls only these.
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

#include <stddef.h>
#include <stdint.h>

#include "accel/accel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACCEL__BACKEND_VERSION 1
#define ACCEL__PENDING 1 /* run(): completion will be reported later */

typedef struct accel__backend_ops {
    int version; /* ACCEL__BACKEND_VERSION */
    const char *name;
    accel_backend kind;

    /* Probed once per runtime: ACCEL_OK if usable. May be NULL (always). */
    int (*probe)(void **rt_state, int device);
    void (*runtime_fini)(void *rt_state);

    /* Per session: create/destroy device-side state. shared: the session
     * asked for the runtime's shared device context. */
    int (*session_open)(void *rt_state, accel_session *s, int device,
                        uint32_t weight, int shared, void **state);
    /* After the session's last op completed; frees what it still owns. */
    void (*session_free)(void *rt_state, accel_session *s, void *state);

    /* Runs one op: 0 and *status, or ACCEL__PENDING. */
    int (*run)(void *state, accel_ctx *ctx, const accel_op *op, int *status);
    /* Called by the worker at the end of a visit (and by a visit with no
     * new ops) to complete finished device work; returns the number of
     * ops still pending. NULL: never pending. */
    uint32_t (*poll)(void *state, accel_session *s);

    /* Budgeted allocation. *charge is what the budget must be charged
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
} accel__backend_ops;

extern const accel__backend_ops accel__backend_cpu;
/* NULL when the library was built without CUDA. */
extern const accel__backend_ops *const accel__backend_cuda_ops;

/* For backends completing ops later (see poll): called from the worker
 * holding the session. */
void accel__op_complete(accel_session *s, const accel_op *op, int status);

#ifdef __cplusplus
}
#endif
#endif
