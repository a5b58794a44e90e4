#include "budget.h"

#include "accel/accel.h"
#include "yield.h"

void (*_Atomic accel__budget_window_hook)(accel__budget *b);

int accel__budget_charge(accel__budget *b, int64_t bytes)
{
    if (bytes < 0)
        return ACCEL_EINVAL;
    int64_t cur = atomic_load_explicit(&b->used, memory_order_relaxed);
    for (;;) {
        int64_t limit = b->cap ? b->cap : INT64_MAX;
        if (bytes > limit - cur)
            return ACCEL_EBUDGET;
        ACCEL__YIELD_POINT();
        /* relaxed: a test sets it before its threads start. */
        void (*hook)(accel__budget *) = atomic_load_explicit(
            &accel__budget_window_hook, memory_order_relaxed);
        if (__builtin_expect(hook != NULL, 0))
            hook(b);
        /* LP: the successful CAS; cur is reloaded on failure (a charge
         * that landed since the check makes this one check again). */
        if (atomic_compare_exchange_weak_explicit(&b->used, &cur, cur + bytes,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed))
            return ACCEL_OK;
    }
}

int accel__budget_refund(accel__budget *b, int64_t bytes)
{
    if (bytes < 0)
        return ACCEL_EINVAL;
    int64_t cur = atomic_load_explicit(&b->used, memory_order_relaxed);
    for (;;) {
        if (bytes > cur)
            return ACCEL_EINVAL;
        ACCEL__YIELD_POINT();
        /* LP: the successful CAS. */
        if (atomic_compare_exchange_weak_explicit(&b->used, &cur, cur - bytes,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed))
            return ACCEL_OK;
    }
}
