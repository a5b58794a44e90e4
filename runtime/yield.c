/* Random-yield points (yield.h), compiled in ACCEL_RANDOM_YIELD builds. */
#ifdef ACCEL_RANDOM_YIELD
#include "yield.h"

#include <sched.h>
#include <stdint.h>
#include <stdlib.h>

static _Thread_local uint64_t yield_rng;

void accel__yield_point(void)
{
    if (!yield_rng) {
        const char *e = getenv("ACCEL_YIELD_SEED");
        yield_rng = (e ? strtoull(e, NULL, 10) : 1) * 0x9E3779B97F4A7C15ull +
                    (uint64_t)(uintptr_t)&yield_rng;
        yield_rng |= 1;
    }
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
typedef int accel__yield_unused; /* ISO C: a translation unit needs a decl */
#endif
