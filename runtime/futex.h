/*
 * Futex wait/wake on a 32-bit atomic word, and the asymmetric fence pair
 * used wherever a hot path must not lose a wake-up to a sleeper.
 *
 * Asymmetric Dekker: a hot side (producer, consumer) stores X then loads
 * "someone waits" W; a cold side (a thread about to sleep) stores W then
 * loads X. Both need a full fence between their store and load, or both can
 * miss. With membarrier(PRIVATE_EXPEDITED) the cold side pays for both:
 * accel__fence_cold() makes every running thread of the process execute a
 * full barrier, so accel__fence_hot() only has to stop the compiler (the
 * scheme liburcu's memb flavour uses for its readers). Parking workers do
 * not use it: a worker parks far more often than a producer or a closer
 * sleeps, and a membarrier costs an IPI to every CPU running a thread of
 * the process; they pair a seq_cst fence with the seq_cst RMWs a wake's
 * enqueue does anyway (park.c).
 *
 * The two sides must agree on the scheme, so it is chosen once, at the first
 * accel__fence_init() (before any runtime exists), and never changes: if
 * membarrier cannot be registered and tried there, both sides are seq_cst
 * fences for the life of the process. A membarrier that fails after working
 * at init would leave hot sides unfenced; that is not a documented kernel
 * behaviour, and the cold side aborts rather than run on unsoundly.
 */
#ifndef ACCEL_RUNTIME_FUTEX_H
#define ACCEL_RUNTIME_FUTEX_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Sleeps while *word == expected, at most timeout_ns (< 0: no limit).
 * Returns 0 when woken or the word differed, -1 on timeout. Spurious
 * returns are possible: callers re-check their condition. */
int accel__futex_wait(_Atomic uint32_t *word, uint32_t expected,
                      int64_t timeout_ns);
/* Wakes up to n sleepers on word (n = INT32_MAX for all). */
void accel__futex_wake(_Atomic uint32_t *word, int n);

/* Written once by accel__fence_init(), before any runtime exists. */
extern bool accel__membarrier_ok;
/* Once per process, before any fence; idempotent. */
void accel__fence_init(void);

/* Test seam: replaces the membarrier system call (cmd, flags) -> result;
 * NULL restores it. Set before the first accel__fence_init() to force the
 * fence scheme; set later to make a run-time call fail. */
typedef long (*accel__membarrier_fn)(int cmd, unsigned flags);
void accel__fence_set_membarrier(accel__membarrier_fn fn);

static inline void accel__fence_hot(void)
{
    if (__builtin_expect(accel__membarrier_ok, 1))
        atomic_signal_fence(memory_order_seq_cst); /* compiler only */
    else
        atomic_thread_fence(memory_order_seq_cst);
}
void accel__fence_cold(void);

/* The CPU's spin-wait hint, for a poll loop before giving up or sleeping
 * (a visit's linger, a worker's spin before it parks). */
static inline void accel__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif
