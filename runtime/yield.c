/* Random-yield points (yield.h), compiled in ACCEL_RANDOM_YIELD builds. */
#include "yield.h"

#ifdef ACCEL_RANDOM_YIELD
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

static _Thread_local uint64_t yield_rng;
/* Unnamed threads: numbered from 2^33 in the order of their first point.
 * relaxed: only the values matter. */
static _Atomic uint64_t next_unnamed = UINT64_C(1) << 33;

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static uint64_t seed(void)
{
    const char *e = getenv("ACCEL_YIELD_SEED");
    return e ? strtoull(e, NULL, 10) : 1;
}

void accel__yield_thread_index(uint64_t index)
{
    /* A stream per (seed, index); | 1: xorshift needs a nonzero state. */
    yield_rng = splitmix64(seed() ^ splitmix64(index)) | 1;
}

void accel__yield_point(void)
{
    if (!yield_rng)
        accel__yield_thread_index(atomic_fetch_add_explicit(
            &next_unnamed, 1, memory_order_relaxed));
    /* xorshift64: cheap, per thread, no shared state. */
    yield_rng ^= yield_rng << 13;
    yield_rng ^= yield_rng >> 7;
    yield_rng ^= yield_rng << 17;
    unsigned r = (unsigned)(yield_rng & 15);
    if (r == 0)
        sched_yield();
    else if (r == 1)
        for (volatile int i = 0; i < 200; i++)
            ;
}
#else
void accel__yield_thread_index(uint64_t index) { (void)index; }
#endif
