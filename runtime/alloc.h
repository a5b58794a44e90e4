/*
 * Every allocation of the runtime goes through here, so that the fault
 * injection tests can fail it (fault.h): each call is a fault site of kind
 * "alloc" named by the calling function (the macros below pass __func__).
 */
#ifndef ACCEL_RUNTIME_ALLOC_H
#define ACCEL_RUNTIME_ALLOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void *accel__malloc_at(size_t n, const char *func);
void *accel__calloc_at(size_t n, size_t size, const char *func);
/* Zeroed memory aligned to align (a power of two). */
void *accel__calloc_aligned_at(size_t align, size_t n, const char *func);
void accel__free(void *p);

/* The same as plain functions (fault site "alloc@(unnamed)"), for code
 * that needs their addresses or cannot name itself. */
void *accel__malloc(size_t n);
void *accel__calloc(size_t n, size_t size);
void *accel__calloc_aligned(size_t align, size_t n);

/* Calls name their site (a backend built as a module too: its
 * backends/module_host.c forwards the _at functions to the runtime). Code
 * that wants the plain functions by these names defines
 * ACCEL__ALLOC_PLAIN. */
#if !defined(ACCEL__ALLOC_PLAIN)
#define accel__malloc(n) accel__malloc_at((n), __func__)
#define accel__calloc(n, size) accel__calloc_at((n), (size), __func__)
#define accel__calloc_aligned(align, n) \
    accel__calloc_aligned_at((align), (n), __func__)
#endif

/* Test hook kept from before the fault sites: the (k+1)-th fault hit off
 * the worker threads fails (k < 0 disarms); returns the hits counted since
 * the last call. New tests use fault.h directly. */
long accel__alloc_fail_after(long k);

#ifdef __cplusplus
}
#endif
#endif
