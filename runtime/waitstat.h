/*
 * Submit -> start wait-time histogram of one session, over a sample of its
 * ops (every ACCEL__WAIT_SAMPLE-th position: the producer of a sampled
 * position stamps the time, so unsampled ops read no clock).
 *
 * Log-linear buckets (4 per power of two, up to 2^40 ns), allocated on the
 * first sample so that idle sessions pay nothing. Written only by the
 * session's consumer (relaxed: counters, read approximately by stats).
 */
#ifndef ACCEL_RUNTIME_WAITSTAT_H
#define ACCEL_RUNTIME_WAITSTAT_H

#include <stdatomic.h>
#include <stdint.h>

#define ACCEL__WAIT_SAMPLE 32u
#define ACCEL__WAIT_SUB 4u
#define ACCEL__WAIT_OCTAVES 41u
#define ACCEL__WAIT_BUCKETS (ACCEL__WAIT_SUB * ACCEL__WAIT_OCTAVES)

typedef struct accel__waitstat {
    _Atomic(_Atomic uint32_t *) buckets;
    _Atomic uint64_t samples;
    _Atomic uint64_t max_ns;
} accel__waitstat;

void accel__waitstat_record(accel__waitstat *w, uint64_t ns);
/* Percentile q in [0,1] (upper bucket edge); 0 when empty. */
uint64_t accel__waitstat_quantile(const accel__waitstat *w, double q);
void accel__waitstat_fini(accel__waitstat *w);

#endif
