#include "ring.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"

int accel__ring_init(accel__ring *r, uint32_t capacity_pow2)
{
    size_t bytes = accel__ring_bytes(capacity_pow2);
    r->slots = accel__calloc_aligned(64, bytes);
    if (!r->slots)
        return ACCEL_ENOMEM;
    r->mask = capacity_pow2 - 1;
    return ACCEL_OK;
}

void accel__ring_fini(accel__ring *r)
{
    accel__free(r->slots);
    r->slots = NULL;
}
