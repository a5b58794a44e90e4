/*
 * fork() without exec (see fork.c and accel.h "fork()"): the child gets a
 * new fork generation; runtimes of an older generation are the parent's
 * and refuse every call that would need their workers. And the gate that
 * keeps a fork from copying a thread in the middle of an RCU read-side
 * section or of liburcu's locked paths.
 */
#ifndef ACCEL_RUNTIME_FORK_H
#define ACCEL_RUNTIME_FORK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "futex.h"

/* Bumped in every child; a runtime remembers the one it was created in. */
extern _Atomic uint32_t accel__fork_gen;
/* 1 while a fork is being prepared: no read-side section may begin. */
extern _Atomic uint32_t accel__fork_gate;
/* This thread's read-side nesting, seen by the forker. */
extern _Thread_local _Atomic uint32_t accel__fork_in_read;

/* Installs the pthread_atfork handlers (once; idempotent). */
void accel__fork_init(void);
/* Lists / unlists the calling thread's accel__fork_in_read for the
 * forker: at its RCU registration and thread exit, inside the same cold
 * section as liburcu's own (un)registration. */
void accel__fork_thread_add(void);
void accel__fork_thread_remove(void);
/* Brackets liburcu calls that take its internal mutexes (thread
 * registration, barrier, hash table create/destroy): a fork waits for
 * them, so the child never inherits those mutexes locked. Cold paths. */
void accel__fork_cold_begin(void);
void accel__fork_cold_end(void);

void accel__fork_gate_wait(void);

/* Registers fn to run in a fork child, after the fork handling has reset
 * its own state, while the child is still single-threaded. One hook: the
 * default runtime's (runtime.c); this is how an upper layer is told of a
 * fork without fork.c naming it. */
void accel__fork_set_child_hook(void (*fn)(void));

static inline uint32_t accel__fork_generation(void)
{
    /* relaxed: written only in a child before it has other threads. */
    return atomic_load_explicit(&accel__fork_gen, memory_order_relaxed);
}

/* True in a child process for something made in the parent at
 * generation gen (a runtime's fork_gen): its threads are not there;
 * calls needing them return ACCEL_ECLOSED. */
static inline bool accel__fork_stale(uint32_t gen)
{
    return gen != accel__fork_generation();
}

/* Entering an RCU read-side section (or a call_rcu): announce it, then
 * check the gate. Asymmetric Dekker with the forker (futex.h): it closes
 * the gate, runs the cold fence and then waits for every announcement to
 * clear; we announce, run the hot fence and look at the gate. */
static inline void accel__fork_read_enter(void)
{
    uint32_t n = atomic_load_explicit(&accel__fork_in_read,
                                      memory_order_relaxed);
    if (n) { /* nested: the outer section already passed the gate */
        atomic_store_explicit(&accel__fork_in_read, n + 1,
                              memory_order_relaxed);
        return;
    }
    for (;;) {
        /* relaxed: ordered by the fence pair. */
        atomic_store_explicit(&accel__fork_in_read, 1, memory_order_relaxed);
        accel__fence_hot();
        if (__builtin_expect(!atomic_load_explicit(&accel__fork_gate,
                                                   memory_order_relaxed),
                             1))
            return;
        /* release: as in accel__fork_read_exit; the forker's acquire
         * load of in_read (prepare in fork.c) sees the section closed. */
        atomic_store_explicit(&accel__fork_in_read, 0, memory_order_release);
        accel__fork_gate_wait();
    }
}

static inline void accel__fork_read_exit(void)
{
    uint32_t n = atomic_load_explicit(&accel__fork_in_read,
                                      memory_order_relaxed);
    /* release: the section's accesses happen before a forker that reads
     * 0 (its acquire load in fork.c). */
    atomic_store_explicit(&accel__fork_in_read, n - 1, memory_order_release);
}

#endif
