/*
 * The one door to liburcu (memb flavour). Every RCU call of the runtime goes
 * through these wrappers, for two reasons:
 *
 * - Lazy registration: any host thread (a Go or Rust runtime's, say) may
 *   call into the library; accel__rcu_register() registers it on first use and
 *   a thread-exit destructor unregisters it (rcu.c). A thread the host
 *   registered with liburcu itself is used as it is.
 * - ThreadSanitizer: liburcu 0.13 predates its TSan support, is not built
 *   with TSan, and synchronizes through membarrier, inline-assembly atomics
 *   and its own futexes, none of which TSan sees. In TSan builds these
 *   wrappers add the happens-before edges RCU guarantees, each on a sync
 *   object of its own:
 *     read-side unlock    release gp      a reader's accesses ...
 *     defer (call_rcu)    release gp      ... and the unpublisher's ...
 *     reclaim callback    acquire gp      ... happen before the reclaim
 *     reclaim end         release done    the reclaim's accesses ...
 *     barrier/synchronize acquire gp+done ... happen before its return
 *     lfht publish        release obj     init of an object ...
 *     lfht match/find     acquire obj     ... before a lookup reads it
 *   gp over-approximates (a callback acquires every reader's unlock so far,
 *   not only those of its grace period): it can hide a race, never invent
 *   one. tests/tsan.supp keeps only liburcu's own internal hand-offs.
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
extern char accel__rcu_tsan_gp;   /* readers and unpublishers -> reclaim */
extern char accel__rcu_tsan_done; /* reclaim -> barrier */
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

/* Reclamation after a grace period; fn calls accel__rcu_reclaim_begin()
 * before touching the object and accel__rcu_reclaim_end() after its last
 * access. */
static inline void accel__rcu_defer(struct rcu_head *head,
                                    void (*fn)(struct rcu_head *))
{
    accel__rcu_register();
    /* call_rcu's queue hands head to the call_rcu thread unseen by TSan. */
    ACCEL__TSAN_RELEASE(&accel__rcu_tsan_gp);
    accel__fork_read_enter(); /* call_rcu reads under RCU itself */
    urcu_memb_call_rcu(head, fn);
    accel__fork_read_exit();
}

static inline void accel__rcu_reclaim_begin(void)
{
    ACCEL__TSAN_ACQUIRE(&accel__rcu_tsan_gp);
}

static inline void accel__rcu_reclaim_end(void)
{
    ACCEL__TSAN_RELEASE(&accel__rcu_tsan_done);
}

/* Whether this thread is inside a read-side section (its own or the
 * application's, on the same liburcu flavour). */
static inline bool accel__rcu_read_ongoing(void)
{
    accel__rcu_register();
    return urcu_memb_read_ongoing() != 0;
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
    ACCEL__TSAN_ACQUIRE(&accel__rcu_tsan_done);
}

/* Waits for a grace period. Not from a read-side section. */
static inline void accel__rcu_synchronize(void)
{
    accel__rcu_register();
    accel__fork_cold_begin();
    urcu_memb_synchronize_rcu();
    accel__fork_cold_end();
    ACCEL__TSAN_ACQUIRE(&accel__rcu_tsan_gp);
}

/* cds_lfht hand-offs: an object is published by cds_lfht_add_unique
 * (release) and reached by a lookup's rcu_dereference (consume). Call
 * publish before the add, found wherever a node of the table is first
 * dereferenced (the match callback too: it runs inside the lookup). */
static inline void accel__rcu_tsan_publish(const void *obj)
{
    ACCEL__TSAN_RELEASE(obj);
    (void)obj;
}

static inline void accel__rcu_tsan_found(const void *obj)
{
    ACCEL__TSAN_ACQUIRE(obj);
    (void)obj;
}

#endif
