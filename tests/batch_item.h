/*
 * One op's record for the batching tests (unit_batch, unit_batch_host,
 * unit_batch_hold): what its own fn and its done saw. Header-only.
 */
#ifndef ACCEL_TESTS_BATCH_ITEM_H
#define ACCEL_TESTS_BATCH_ITEM_H

#include <stdatomic.h>
#include <stdint.h>

#include <accel/accel.h>

typedef struct item {
    int idx;       /* its place in its producer's order */
    int producer;  /* which producer submitted it */
    int want;      /* the status its fn (or the batch fn, or the host)
                      reports for it */
    int64_t alloc; /* bytes the batch fn allocates for it (budget) */
    _Atomic int fn_calls, ran, in_batch, done_calls, status, done_seq;
    _Atomic int *seq; /* done_seq comes from it, when set */
} item;

/* The op's own fn, when it runs alone: counts, reports want. */
static inline int item_fn(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    item *it = arg;
    atomic_fetch_add(&it->fn_calls, 1);
    return it->want;
}

/* Its done: status, place, then the count (seq_cst, the strongest the
 * three files used: a test that loads done_calls reads the rest). */
static inline void item_done(void *arg, int status)
{
    item *it = arg;
    atomic_store(&it->status, status);
    if (it->seq)
        atomic_store(&it->done_seq, atomic_fetch_add(it->seq, 1));
    atomic_fetch_add(&it->done_calls, 1);
}

static inline accel_op item_op(item *it)
{
    return (accel_op){.fn = item_fn, .done = item_done, .arg = it};
}

#endif
