/*
 * accel CUDA accessors: only for libraries built with the CUDA backend
 * (ACCEL_HAVE_CUDA is defined for users of the accel target, see
 * docs/cuda.md). CPU-only users never need this header nor CUDA headers.
 *
 * An op of a CUDA session runs on a worker thread: its fn enqueues device
 * work on the session's stream (accel_ctx_cuda_stream) and returns without
 * waiting for it. The op completes (its done callback runs, sync/close see
 * it) only after the device finished everything the fn enqueued on that
 * stream. Memory from accel_ctx_alloc() on a CUDA session is device memory
 * from the session's stream-ordered pool: use it from work on the session's
 * stream only. A session's batch function (accel_session_set_batch) is
 * called the same way, once per batch: it enqueues one launch for the
 * batch's ops on the stream, and they complete when it is done.
 *
 * The stream is returned as void * so that this header needs no CUDA
 * header. Include <cuda_runtime_api.h> (or <cuda_runtime.h>) before this
 * header to get accel_ctx_cuda_stream_t(), which returns cudaStream_t.
 */
#ifndef ACCEL_CUDA_H
#define ACCEL_CUDA_H

#include "accel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* accel_ctx_alloc() on a CUDA session charges the budget the requested
 * size rounded up to this many bytes (the pool's suballocation alignment).
 * A budget of B bytes therefore admits floor(B / 256) allocations of 1 byte.
 * The pool's physical reservation may exceed the charge by fragmentation;
 * the pool's maxSize (the budget rounded up to 2 MiB; none when the budget
 * reaches the device's memory) bounds it: an allocation the budget admits
 * but the pool cannot place gets ACCEL_ENOMEM and is refunded. Once the
 * CUDA backend has failed, accel_ctx_alloc returns ACCEL_EBACKEND. */
#define ACCEL_CUDA_ALLOC_GRANULARITY 256u

/* The stream of the running op's session (its own, or the runtime's shared
 * stream with ACCEL_SESSION_SHARED_DEVICE): a cudaStream_t. NULL when ctx is
 * NULL or its session is not bound to CUDA. Valid only during the op; it
 * may change between ops of a session (a priority change swaps the stream,
 * ordered after the old one so FIFO holds). Thread-safe on the op's thread. */
ACCEL_API void *accel_ctx_cuda_stream(accel_ctx *ctx);

/* The CUDA device of the running op's session; -1 when ctx is NULL or its
 * session is not bound to CUDA. The worker has made it the current device
 * of the calling thread before the op runs (also after an earlier op made
 * another device current). */
ACCEL_API int accel_ctx_cuda_device(accel_ctx *ctx);

/* ACCEL_CUDA_ALLOC_GRANULARITY, for callers that prefer a function. */
ACCEL_API size_t accel_cuda_alloc_granularity(void);

/* Whether rt can open CUDA sessions now: ACCEL_OK; ACCEL_ENOBACKEND (no
 * driver, a stub driver, no device, or the configured device does not
 * exist or lacks memory pools, or this is a fork child of a process that
 * initialised CUDA); ACCEL_EBACKEND (the CUDA backend failed in this
 * process: a sticky device error was seen, see docs/cuda.md);
 * ACCEL_EINVAL (rt NULL). Thread-safe. */
ACCEL_API int accel_runtime_cuda_status(accel_runtime *rt);

/* accel_ctx_cuda_stream as a cudaStream_t: defined when a CUDA runtime
 * header was included before this one. */
#if defined(__CUDA_RUNTIME_API_H__)
static inline cudaStream_t accel_ctx_cuda_stream_t(accel_ctx *ctx)
{
    return (cudaStream_t)accel_ctx_cuda_stream(ctx);
}
#endif

#ifdef __cplusplus
}
#endif
#endif /* ACCEL_CUDA_H */
