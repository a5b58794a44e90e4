/*
 * CUDA backend internals (C only: includes <stdatomic.h>; never include
 * from a .cu file). See docs/cuda.md for the model.
 *
 * Per runtime (accel__cuda_rt, made by probe): the device, its stream
 * priority range, the shared stream of ACCEL_SESSION_SHARED_DEVICE sessions
 * and two knobs the measurements use (priorities on/off, in-flight cap).
 *
 * Per session (accel__cuda_session): its stream, its memory pool, and the
 * FIFO of ops whose device work may still run ("pending"): slots
 * [head, tail) of a ring of ACCEL__CUDA_OPS_MAX. run() appends one op,
 * run_batch() the n ops of a batch (run or left out); each append is a
 * launch unit, and at most `cap` units are pending. The ops appended since
 * the last poll are closed by one event that poll() records on the stream
 * (the next of ev[], named in the slot of their last op); it then
 * completes the closed ops from the oldest while their event has fired.
 * Events in use are at most the units pending, so a ring of
 * ACCEL__CUDA_INFLIGHT_MAX events is never overrun. Only the
 * worker holding the session (its consumer) touches the FIFO, the pool
 * map and the stream, so none of it is atomic; `weight` is written by
 * accel_session_set_priority() from any thread.
 */
#ifndef ACCEL_CUDA_INTERNAL_H
#define ACCEL_CUDA_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "backend.h"
#include "cuda_ptrmap.h"

#define ACCEL__CUDA_INFLIGHT_MAX 64u     /* events ring, most units: a power of two */
#define ACCEL__CUDA_INFLIGHT_DEFAULT 8u  /* per-session cap on pending units */
/* Pending ops ring: a power of two. Batches fill it up to
 * ACCEL__CUDA_OPS_MAX - ACCEL__CUDA_INFLIGHT_MAX, which leaves room for the
 * ops a visit may run one by one after its batches (at most the cap). */
#define ACCEL__CUDA_OPS_MAX 512u
#define ACCEL__CUDA_POOL_CHUNK (2u << 20) /* pool maxSize rounding */

typedef struct accel__cuda_rt {
    int device;
    uint64_t total_mem;            /* cudaMemGetInfo at probe */
    int prio_least, prio_greatest; /* cudaDeviceGetStreamPriorityRange */
    cudaStream_t shared;           /* ACCEL_SESSION_SHARED_DEVICE sessions */
    _Atomic int priorities;        /* 1: weights map to stream priorities */
    _Atomic uint32_t inflight_cap; /* for sessions opened from now on */
} accel__cuda_rt;

typedef struct accel__cuda_pending {
    accel_op op;
    int status;        /* fn's (or the batch's) status, ACCEL_EBACKEND: not
                          run, or the status of an op left out (ran 0) */
    uint8_t ran;       /* 0: left out of its batch, completes unrun */
    uint8_t unit_end;  /* last op of its unit (an op or a batch) */
    uint8_t has_event; /* last op before an event: ev[evi] recorded */
    uint8_t evi;
} accel__cuda_pending;

typedef struct accel__cuda_session {
    accel__cuda_rt *rt;
    int device;
    int shared;           /* uses rt->shared, owns no stream */
    cudaStream_t stream;
    int stream_prio;      /* CUDA priority `stream` was created with */
    _Atomic uint32_t weight; /* latest weight (set_priority, any thread) */
    uint32_t stream_weight;  /* the weight `stream` was made for */
    cudaMemPool_t pool;
    uint32_t cap;         /* in-flight cap, 1..ACCEL__CUDA_INFLIGHT_MAX */
    uint32_t units;       /* units pending (<= cap) */
    uint64_t head, tail;  /* pending FIFO [head, tail) */
    uint64_t closed;      /* first op not yet covered by an event */
    uint64_t nev;         /* events recorded: ev[nev % INFLIGHT_MAX] next */
    int idle_polls;       /* polls in a row without progress */
    accel__cuda_pending slot[ACCEL__CUDA_OPS_MAX];
    cudaEvent_t ev[ACCEL__CUDA_INFLIGHT_MAX];
    accel__cuda_ptrmap ptrs;
} accel__cuda_session;

extern const accel__backend_ops accel__backend_cuda;

/* CUDA stream priority for a weight (1..1000): log scale from the least
 * priority (weight 1) to the greatest (weight >= 100); the least for all
 * weights when priorities are off. */
int accel__cuda_priority_of(const accel__cuda_rt *rt, uint32_t weight);

/* The maxSize of a session pool for a budget (0: unlimited): the budget
 * rounded up to ACCEL__CUDA_POOL_CHUNK, or 0 (no limit but the device's)
 * when the budget is 0 or reaches the device's total memory. */
uint64_t accel__cuda_pool_max_size(uint64_t budget, uint64_t total_mem);

/* 1 once a sticky device error was seen in this process. */
int accel__cuda_failed(void);

/* Measurement knobs (white-box; take effect for sessions opened after the
 * call). rt must have a usable CUDA backend; return ACCEL_ENOBACKEND
 * otherwise. cap is clamped to 1..ACCEL__CUDA_INFLIGHT_MAX. */
struct accel_runtime;
int accel__cuda_set_priorities(struct accel_runtime *rt, int on);
int accel__cuda_set_inflight_cap(struct accel_runtime *rt, uint32_t cap);

/* Live objects of the backend in this process (tests: close frees). */
long accel__cuda_live_streams(void);
long accel__cuda_live_pools(void);

#endif
