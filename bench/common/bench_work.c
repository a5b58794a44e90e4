/*
 * Calibrated synthetic CPU work. The loop is a chain of dependent
 * multiply-adds, so its speed is set by the multiplier's latency and cannot
 * be vectorised or elided. Calibration takes the fastest of several timed
 * runs (the one least disturbed by other processes on a shared machine).
 */
#include "bench.h"

#include <math.h>
#include <pthread.h>

static double iters_per_ns;
static pthread_once_t calib_once = PTHREAD_ONCE_INIT;

uint64_t bench_burn_iters(uint64_t iters)
{
    uint64_t x = iters | 1;
    for (uint64_t i = 0; i < iters; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        BENCH_KEEP(x);
    }
    return x;
}

static void calibrate(void)
{
    const uint64_t n = 200000;
    uint64_t best = UINT64_MAX;
    bench_burn_iters(n); /* warm the core up out of a low-power state */
    for (int t = 0; t < 15; t++) {
        uint64_t t0 = bench_now_ns();
        uint64_t x = bench_burn_iters(n);
        BENCH_KEEP(x);
        uint64_t dt = bench_now_ns() - t0;
        if (dt < best)
            best = dt;
    }
    iters_per_ns = best ? (double)n / (double)best : 1.0;
}

void bench_work_calibrate(void)
{
    pthread_once(&calib_once, calibrate);
}

double bench_work_iters_per_us(void)
{
    bench_work_calibrate();
    return iters_per_ns * 1000.0;
}

void bench_burn_ns(uint64_t ns)
{
    if (ns == 0)
        return;
    bench_work_calibrate();
    uint64_t x = bench_burn_iters((uint64_t)llround((double)ns * iters_per_ns));
    BENCH_KEEP(x);
}
