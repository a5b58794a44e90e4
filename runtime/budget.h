/*
 * Per-session memory budget: one atomic counter, changed only by CAS loops,
 * so it is never over the cap and never negative, with no lock.
 * Thread-safe, lock-free. The counter carries no other data, so every
 * access is relaxed: the CAS alone is the linearization point.
 */
#ifndef ACCEL_RUNTIME_BUDGET_H
#define ACCEL_RUNTIME_BUDGET_H

#include <stdatomic.h>
#include <stdint.h>

typedef struct accel__budget {
    _Atomic int64_t used;
    int64_t cap; /* 0 = unlimited; fixed at open */
} accel__budget;

/* ACCEL_OK, ACCEL_EBUDGET (nothing charged), ACCEL_EINVAL (bytes < 0). */
int accel__budget_charge(accel__budget *b, int64_t bytes);
/* Test seam (unit_budget.c): when set, called by a charge between its
 * check against the cap and its CAS, so a test can run a racing charge in
 * exactly that window. NULL outside tests. */
extern void (*_Atomic accel__budget_window_hook)(accel__budget *b);
/* ACCEL_OK, ACCEL_EINVAL (bytes < 0 or more than used; nothing refunded). */
int accel__budget_refund(accel__budget *b, int64_t bytes);

static inline int64_t accel__budget_used(const accel__budget *b)
{
    return atomic_load_explicit(&((accel__budget *)b)->used,
                                memory_order_relaxed);
}

#endif
