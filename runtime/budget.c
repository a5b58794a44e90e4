#include "budget.h"

#include "accel/accel.h"
#include "yield.h"

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
        /* LP: the successful CAS; cur is reloaded on failure. */
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
