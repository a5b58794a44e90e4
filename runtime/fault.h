/*
 * Fault injection: every place where the runtime can fail for want of a
 * resource (memory, a mapping, a thread, the lfht, a CUDA stream, event,
 * pool or device allocation) asks ACCEL__FAULT(kind) first, and fails as if
 * the resource were missing when a test armed it. The sites are listed in
 * fault.c (kind and function); a hit of an unlisted site is counted as
 * unknown, so a new site cannot hide from the sweep (tests/unit_faults.c).
 *
 * Determinism: worker threads run ops and visits in an order the scheduler
 * chooses, so their hits would move the k-th hit from run to run. The
 * "k-th hit" mode counts only hits on other threads (the caller's), which a
 * scripted scenario makes in program order; sites hit on workers are swept
 * apiece ("k-th hit of this site", any thread).
 *
 * Unarmed (the normal case) a site costs one relaxed load. Internal
 * symbols; tests link the library objects statically.
 */
#ifndef ACCEL_RUNTIME_FAULT_H
#define ACCEL_RUNTIME_FAULT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

extern _Atomic int accel__fault_mode; /* 0: unarmed */

bool accel__fault_hit_slow(const char *kind, const char *func);
/* accel__fault_hit as a function: what a backend built as a module calls
 * (through its host table; it cannot reach accel__fault_mode). */
bool accel__fault_hit_ext(const char *kind, const char *func);

static inline bool accel__fault_hit(const char *kind, const char *func)
{
    /* relaxed: the tests arm and disarm from one thread between runs. */
    if (__builtin_expect(atomic_load_explicit(&accel__fault_mode,
                                              memory_order_relaxed) == 0,
                         1))
        return false;
    return accel__fault_hit_slow(kind, func);
}

/* True: fail this call of `kind` (an allocation, "mmap", ...). */
#ifdef ACCEL__MODULE_OPS /* in a backend built as a module */
#define ACCEL__FAULT(kind) accel__fault_hit_ext((kind), __func__)
#else
#define ACCEL__FAULT(kind) accel__fault_hit((kind), __func__)
#endif

/* Marks the calling thread as a worker (worker_main). */
void accel__fault_thread_is_worker(void);

/* ---- test side */

/* Counts and records hits, fails none. */
void accel__fault_arm_trace(void);
/* Fails the (k+1)-th hit made off the worker threads, any site. */
void accel__fault_arm_nth(long k);
/* Fails the (k+1)-th hit of site i (an index of the list), any thread. */
void accel__fault_arm_site(unsigned i, long k);
/* Disarms; returns the hits counted while armed (off the workers for
 * trace/nth, of the site for site mode). */
long accel__fault_disarm(void);

/* The list of sites. */
unsigned accel__fault_nsites(void);
const char *accel__fault_site_kind(unsigned i);
const char *accel__fault_site_func(unsigned i);
bool accel__fault_site_cuda(unsigned i);   /* needs a usable device */
bool accel__fault_site_worker(unsigned i); /* hit on worker threads */

/* Since the last arm: the sites hit (bit i: site i), the site that was
 * failed (-1: none), hits of unlisted sites (and the last one's name). */
uint64_t accel__fault_reached(void);
int accel__fault_failed_site(void);
long accel__fault_unknown(const char **last);
/* The sites of the hits counted off the workers, in order (up to cap);
 * returns their count. */
size_t accel__fault_trace(int *sites, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
