#include "cuda_ptrmap.h"

#include <stdlib.h>

#include "alloc.h"
#include "accel/accel.h"

static size_t home(const accel__cuda_ptrmap *m, uintptr_t key)
{
    /* Allocations are 256-aligned: drop the zero bits, then Fibonacci
     * hashing spreads neighbours over the table. */
    uint64_t h = (uint64_t)(key >> 8) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (m->cap - 1);
}

static void insert(accel__cuda_ptrmap *m, uintptr_t key, size_t charge)
{
    size_t i = home(m, key);
    while (m->entries[i].key)
        i = (i + 1) & (m->cap - 1);
    m->entries[i].key = key;
    m->entries[i].charge = charge;
    m->n++;
}

static int grow(accel__cuda_ptrmap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    accel__cuda_ptrmap_entry *old = m->entries;
    size_t ocap = m->cap;
    accel__cuda_ptrmap_entry *ns = accel__calloc(ncap, sizeof(*ns));
    if (!ns)
        return ACCEL_ENOMEM;
    m->entries = ns;
    m->cap = ncap;
    m->n = 0;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].key)
            insert(m, old[i].key, old[i].charge);
    accel__free(old);
    return ACCEL_OK;
}

int accel__cuda_ptrmap_put(accel__cuda_ptrmap *m, uintptr_t key,
                           size_t charge)
{
    /* Load factor at most 1/2: probes stay short. */
    if ((m->n + 1) * 2 > m->cap && grow(m) != ACCEL_OK)
        return ACCEL_ENOMEM;
    insert(m, key, charge);
    return ACCEL_OK;
}

int accel__cuda_ptrmap_take(accel__cuda_ptrmap *m, uintptr_t key,
                            size_t *charge)
{
    if (!m->cap || !key)
        return 0;
    size_t mask = m->cap - 1, i = home(m, key);
    while (m->entries[i].key != key) {
        if (!m->entries[i].key)
            return 0;
        i = (i + 1) & mask;
    }
    *charge = m->entries[i].charge;
    /* Backward-shift deletion: move later members of the probe run into
     * the hole when their home does not lie cyclically in (hole, j]. */
    size_t hole = i, j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!m->entries[j].key)
            break;
        size_t h = home(m, m->entries[j].key);
        int stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
        if (!stays) {
            m->entries[hole] = m->entries[j];
            hole = j;
        }
    }
    m->entries[hole].key = 0;
    m->entries[hole].charge = 0;
    m->n--;
    return 1;
}

void accel__cuda_ptrmap_drain(accel__cuda_ptrmap *m,
                              void (*fn)(uintptr_t key, void *arg), void *arg)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->entries[i].key && fn)
            fn(m->entries[i].key, arg);
    accel__free(m->entries);
    m->entries = NULL;
    m->cap = m->n = 0;
}
