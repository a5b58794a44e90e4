/*
 * Device pointer -> budget charge, for one CUDA session: what accel_ctx_free
 * must refund, and what is still allocated when the session is freed.
 * Open addressing with linear probing and backward-shift deletion (no
 * tombstones). Only the session's consumer touches it (its ops are serial),
 * so it needs no atomics. Plain C, no CUDA types.
 */
#ifndef ACCEL_CUDA_PTRMAP_H
#define ACCEL_CUDA_PTRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct accel__cuda_ptrmap_entry {
    uintptr_t key; /* 0: empty (no allocation is at address 0) */
    size_t charge;
} accel__cuda_ptrmap_entry;

typedef struct accel__cuda_ptrmap {
    accel__cuda_ptrmap_entry *entries;
    size_t cap; /* 0 or a power of two */
    size_t n;
} accel__cuda_ptrmap;

/* ACCEL_OK or ACCEL_ENOMEM (nothing inserted). key must not be present. */
int accel__cuda_ptrmap_put(accel__cuda_ptrmap *m, uintptr_t key,
                           size_t charge);
/* Removes key: 1 and *charge, or 0 if absent. */
int accel__cuda_ptrmap_take(accel__cuda_ptrmap *m, uintptr_t key,
                            size_t *charge);
/* Calls fn on every key and empties the map, freeing its storage. */
void accel__cuda_ptrmap_drain(accel__cuda_ptrmap *m,
                              void (*fn)(uintptr_t key, void *arg), void *arg);

#endif
