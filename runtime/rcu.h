/*
 * The one door to liburcu (memb flavour). Every RCU call of the runtime goes
 * through these wrappers, for two reasons:
 *
 * - Lazy registration: any host thread (a Go or Rust runtime's, say) may
 *   call into the library; accel__rcu_enter() registers it on first use and
 *   a thread-exit destructor unregisters it.
 * - ThreadSanitizer: liburcu 0.13 predates its TSan support, and TSan cannot
 *   see the grace-period machinery (membarrier, its own futexes). In TSan
 *   builds these wrappers add the happens-before edges RCU guarantees:
 *   every read-side unlock releases `accel__rcu_tsan_gp`, and every
 *   reclamation callback acquires it before freeing; a publish releases the
 *   object, a lookup that finds it acquires it.
 */
#ifndef ACCEL_RUNTIME_RCU_H
#define ACCEL_RUNTIME_RCU_H

#include <urcu/urcu-memb.h>

#include "fork.h"

#if defined(__SANITIZE_THREAD__)
#define ACCEL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ACCEL_TSAN 1
#endif
#endif

#ifdef ACCEL_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
extern char accel__rcu_tsan_gp;
#define ACCEL__TSAN_ACQUIRE(p) __tsan_acquire((void *)(p))
#define ACCEL__TSAN_RELEASE(p) __tsan_release((void *)(p))
#else
#define ACCEL__TSAN_ACQUIRE(p) ((void)0)
#define ACCEL__TSAN_RELEASE(p) ((void)0)
#endif

/* Registers the calling thread if needed. Cheap after the first call. */
void accel__rcu_register(void);

/* Read-side sections pass the fork gate (fork.h): a fork never copies a
 * thread inside one. */
static inline void accel__rcu_read_lock(void)
{
    accel__rcu_register();
    accel__fork_read_enter();
    urcu_memb_read_lock();
}

static inline void accel__rcu_read_unlock(void)
{
    ACCEL__TSAN_RELEASE(&accel__rcu_tsan_gp);
    urcu_memb_read_unlock();
    accel__fork_read_exit();
}

/* Reclamation after a grace period; fn acquires the grace period edge
 * through accel__rcu_reclaim_begin() before touching the object. */
static inline void accel__rcu_defer(struct rcu_head *head,
                                    void (*fn)(struct rcu_head *))
{
    accel__rcu_register();
    accel__fork_read_enter(); /* call_rcu reads under RCU itself */
    urcu_memb_call_rcu(head, fn);
    accel__fork_read_exit();
}

static inline void accel__rcu_reclaim_begin(void)
{
    ACCEL__TSAN_ACQUIRE(&accel__rcu_tsan_gp);
}

/* Waits for every deferred reclamation queued so far. Not from a read-side
 * section. */
static inline void accel__rcu_barrier(void)
{
    accel__rcu_register();
    accel__fork_cold_begin();
    urcu_memb_barrier();
    accel__fork_cold_end();
    ACCEL__TSAN_ACQUIRE(&accel__rcu_tsan_gp);
}

#endif
