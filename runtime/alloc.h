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
 * it succeeds again; k < 0 disables. Returns the count of allocations made
 * since the last call (so a sweep knows where to stop). Not exported in
 * release builds' public API; tests reach it through accel_test.h. */
long accel__alloc_fail_after(long k);

#endif
