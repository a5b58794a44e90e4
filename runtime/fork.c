/*
 * fork() without exec.
 *
 * A child has only the forking thread: the parent's workers, liburcu's
 * call_rcu thread and the hash table's resize worker are gone. So:
 *
 * - The child gets a new generation (accel__fork_gen). A runtime created
 *   in an older one belongs to the parent: its public calls return
 *   ACCEL_ECLOSED and touch nothing that a parent's thread could have held
 *   (accel.h, "fork()").
 *   Upper layers learn of the fork through the one hook registered with
 *   accel__fork_set_child_hook (the default runtime's), run here while the
 *   child is single-threaded: fork.c names nothing above it.
 * - liburcu's own hooks (call_rcu_before_fork and the after_fork pair,
 *   which also pause and restart the lfht resize worker) give the child a
 *   working call_rcu thread, so a fresh runtime's reclamation and
 *   destroy's rcu_barrier complete.
 * - A grace period in the child waits for every registered reader. The
 *   registrations of the parent's other threads are copied with their
 *   state: one caught inside a read-side section would stall the child's
 *   grace periods forever. The prepare handler therefore closes a gate
 *   that every read-side section (and call_rcu) of the runtime passes
 *   (fork.h), and waits until no thread is inside one. It also takes the
 *   write side of `cold`, which brackets the liburcu calls that take its
 *   internal mutexes (registration, barrier, lfht create/destroy), so the
 *   child never inherits one of those locked.
 *   The order in prepare: `cold`, then liburcu's call_rcu_before_fork,
 *   then the gate. call_rcu_before_fork waits for the call_rcu thread
 *   (and the lfht resize worker) to finish what it is doing, a grace
 *   period included, and that grace period waits for every reader, a
 *   host thread in a read-side section of its own among them. The host
 *   may call the library from inside that section (accel.h), so nothing
 *   the section's calls pass may be held yet: the gate opens only after
 *   liburcu's threads have paused (tests/unit_fork_rcu.c). `cold` comes
 *   first because a barrier in flight (under `cold`'s read side) waits
 *   for callbacks that a paused call_rcu thread would not run. So a host
 *   section still must not take a cold path while a fork may be
 *   prepared (it would wait for `cold`, the fork for it): creating or
 *   destroying a runtime, or an open that grows the id table (a
 *   cds_lfht_resize and an rcu_barrier, which liburcu forbids inside a
 *   read-side section anyway). A host section that waits for the forking
 *   thread holds the fork for as long as it waits.
 *
 * - The child has the parent's liburcu registry, with an entry for each
 *   of the parent's registered threads. Those entries live in the dead
 *   threads' TLS, on stacks glibc reuses for the child's new threads: left
 *   in the list they corrupt it. The child handler unlinks every entry of
 *   a thread the runtime registered, other than its own (liburcu's
 *   call_rcu threads unregister themselves while paused for the fork).
 *   A host thread that registered itself with liburcu directly is not
 *   known here (accel.h says so).
 *
 * - The other mutexes a child can reach: the backend-module lock (every
 *   runtime creation takes it) has atfork handlers of its own in
 *   backend_registry.c; a runtime's arena, list and compensation locks
 *   (compensate.c) belong to the parent's runtimes, which the child does not touch (a reclamation the
 *   parent queued and liburcu runs in the child returns at once:
 *   session.c).
 *
 * The mutex and rwlock are re-initialised in the child rather than
 * unlocked: glibc's rwlock identifies its writer by thread id, and the
 * forking thread has a new one in the child.
 */
#include "fork.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include <urcu/list.h>
#include <urcu/static/urcu-memb.h> /* urcu_memb_reader: the registry node */
#include <urcu/urcu-memb.h>

_Atomic uint32_t accel__fork_gen;
_Atomic uint32_t accel__fork_gate;
_Thread_local _Atomic uint32_t accel__fork_in_read;

/* Every thread registered with liburcu by the runtime, for the forker. */
typedef struct fork_thread {
    _Atomic uint32_t *in_read;
    struct cds_list_head *urcu_node; /* the thread's liburcu registry entry */
    struct cds_list_head link;
} fork_thread;

static _Thread_local fork_thread self;
static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
/* What an upper layer runs in a child (accel__fork_set_child_hook). */
static void (*_Atomic child_hook)(void);
static CDS_LIST_HEAD(threads);
static pthread_rwlock_t cold;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void cold_init(void)
{
    pthread_rwlockattr_t a;
    pthread_rwlockattr_init(&a);
    /* A steady stream of cold calls must not keep a fork waiting. */
    pthread_rwlockattr_setkind_np(&a,
                                  PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&cold, &a);
    pthread_rwlockattr_destroy(&a);
}

static void prepare(void)
{
    pthread_rwlock_wrlock(&cold); /* cold: fork */
    pthread_mutex_lock(&threads_lock); /* cold: fork */
    /* liburcu's threads first, with the gate still open: the call_rcu
     * thread pauses only between grace periods, and one may wait for a
     * host thread's own read-side section, inside which the host may call
     * the library. With the gate closed first, that call would wait for
     * the fork, the fork for the grace period (see the top).
     * The default call_rcu data exists before call_rcu_before_fork holds
     * liburcu's call_rcu mutex: a thread's first call_rcu takes that mutex
     * to create it, and the loop below may wait for such a thread. */
    (void)urcu_memb_get_default_call_rcu_data();
    urcu_memb_call_rcu_before_fork();
    /* relaxed: ordered by the fence pair (fork.h). */
    atomic_store_explicit(&accel__fork_gate, 1, memory_order_relaxed);
    accel__fence_cold();
    struct cds_list_head *pos;
    for (pos = threads.next; pos != &threads; pos = pos->next) {
        fork_thread *t = caa_container_of(pos, fork_thread, link);
        /* acquire: pairs with accel__fork_read_exit's release. */
        while (atomic_load_explicit(t->in_read, memory_order_acquire))
            sched_yield();
    }
}

static void open_gate(void)
{
    /* release: what fork's hooks did before this store happens-before a
     * waiter's acquire load in accel__fork_gate_wait. */
    atomic_store_explicit(&accel__fork_gate, 0, memory_order_release);
    accel__futex_wake(&accel__fork_gate, INT_MAX);
}

static void after_parent(void)
{
    urcu_memb_call_rcu_after_fork_parent();
    open_gate();
    pthread_mutex_unlock(&threads_lock);
    pthread_rwlock_unlock(&cold);
}

static void after_child(void)
{
    /* Unlink the dead threads from liburcu's registry (see the top). */
    struct cds_list_head *pos, *next;
    for (pos = threads.next; pos != &threads; pos = next) {
        next = pos->next;
        fork_thread *t = caa_container_of(pos, fork_thread, link);
        if (t != &self)
            cds_list_del(t->urcu_node);
    }
    urcu_memb_call_rcu_after_fork_child();
    /* Only this thread is left: it alone stays listed. */
    CDS_INIT_LIST_HEAD(&threads);
    if (self.in_read)
        cds_list_add(&self.link, &threads);
    pthread_mutex_init(&threads_lock, NULL);
    cold_init();
    atomic_fetch_add_explicit(&accel__fork_gen, 1, memory_order_relaxed);
    void (*hook)(void) = atomic_load_explicit(&child_hook, memory_order_acquire);
    if (hook)
        hook();
    open_gate();
}

void accel__fork_set_child_hook(void (*fn)(void))
{
    /* release: pairs with the acquire in after_child; the hook's code and
     * data are set before a fork can see it. */
    atomic_store_explicit(&child_hook, fn, memory_order_release);
}

static void init_once(void)
{
    cold_init();
    (void)pthread_atfork(prepare, after_parent, after_child);
}

void accel__fork_init(void)
{
    pthread_once(&once, init_once);
}

void accel__fork_gate_wait(void)
{
    /* acquire: pairs with open_gate's release. */
    while (atomic_load_explicit(&accel__fork_gate, memory_order_acquire))
        accel__futex_wait(&accel__fork_gate, 1, -1);
}

void accel__fork_thread_add(void)
{
    pthread_mutex_lock(&threads_lock); /* cold: thread registration */
    self.in_read = &accel__fork_in_read;
    self.urcu_node = &URCU_TLS(urcu_memb_reader).node;
    cds_list_add(&self.link, &threads);
    pthread_mutex_unlock(&threads_lock);
}

void accel__fork_thread_remove(void)
{
    pthread_mutex_lock(&threads_lock); /* cold: thread exit */
    if (self.in_read)
        cds_list_del(&self.link);
    self.in_read = NULL;
    pthread_mutex_unlock(&threads_lock);
}

void accel__fork_cold_begin(void)
{
    accel__fork_init();
    pthread_rwlock_rdlock(&cold); /* cold: liburcu's locked paths */
}

void accel__fork_cold_end(void)
{
    pthread_rwlock_unlock(&cold);
}
