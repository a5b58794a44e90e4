/*
 * Every allocation of the runtime goes through here, so that the fault
 * injection tests can fail the k-th one (accel__alloc_fail_after).
 */
#ifndef ACCEL_RUNTIME_ALLOC_H
#define ACCEL_RUNTIME_ALLOC_H

#include <stddef.h>

void *accel__malloc(size_t n);
void *accel__calloc(size_t n, size_t size);
/* Zeroed memory aligned to align (a power of two). */
void *accel__calloc_aligned(size_t align, size_t n);
void accel__free(void *p);

/* Test hook: the (k+1)-th allocation from now fails, and every one after
 * it succeeds again; k < 0 disarms. Returns the count of allocations made
 * while armed since the last call (a sweep over k stops once that count
 * is <= k: the failure was never reached). Internal symbol; white-box
 * tests link the library objects statically. */
long accel__alloc_fail_after(long k);

#endif
