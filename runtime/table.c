#include "table.h"

#include <assert.h>

#include <string.h>

#include "fault.h"
#include "rcu.h"

struct cds_lfht *accel__table_create(void)
{
    accel__rcu_register();
    if (ACCEL__FAULT("cds_lfht_new"))
        return NULL;
    accel__fork_cold_begin();
    struct cds_lfht *t =
        cds_lfht_new_flavor(ACCEL__TABLE_INIT_BUCKETS, ACCEL__TABLE_INIT_BUCKETS, 0,
                            CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING,
                            &urcu_memb_flavor, NULL);
    accel__fork_cold_end();
    return t;
}

/* CDS_LFHT_ACCOUNTING alone grows the table only once the node count
 * reaches 8x the buckets, and only at power-of-two counts: 100,000
 * sessions sat in 16,384 buckets, and a lookup walked ~3 chain nodes, each
 * a cache miss in a different session object (lookup 1 us there vs 60 ns
 * with 16 sessions). session.c asks for one bucket per session instead
 * (rounded up to a power of two); the accounting still shrinks it when most sessions close. */
void accel__table_resize(struct cds_lfht *t, unsigned long buckets)
{
    accel__rcu_register();
    accel__fork_cold_begin(); /* a large resize starts helper threads */
    cds_lfht_resize(t, buckets);
    accel__fork_cold_end();
}

void accel__table_destroy(struct cds_lfht *t)
{
    if (!t)
        return;
    accel__fork_cold_begin();
    int rc = cds_lfht_destroy(t, NULL);
    accel__fork_cold_end();
    if (rc == 0)
        return;
    /* Nodes left in it (cds_lfht_destroy refuses a table that is not
     * empty, and leaks it): unlink them (their owner frees the objects
     * in its own walk, not here), then destroy again. */
    struct cds_lfht_iter it;
    struct cds_lfht_node *n;
    accel__rcu_read_lock();
    cds_lfht_for_each(t, &it, n)
        (void)cds_lfht_del(t, n);
    accel__rcu_read_unlock();
    accel__fork_cold_begin();
    rc = cds_lfht_destroy(t, NULL);
    accel__fork_cold_end();
    assert(rc == 0 && "cds_lfht_destroy of an emptied table");
    (void)rc;
}

/* FNV-1a: ids are short; good enough spread for cds_lfht's split order. */
unsigned long accel__table_hash(const char *key, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)key[i];
        h *= 1099511628211ull;
    }
    return (unsigned long)(uint32_t)(h ^ (h >> 32));
}

typedef struct lookup_key {
    const char *bytes;
    size_t len;
} lookup_key;

void accel__table_node_init(accel__table_node *n, const char *key,
                            size_t len)
{
    cds_lfht_node_init(&n->lfht);
    n->key = key;
    n->len = (uint32_t)len;
    n->hash = (uint32_t)accel__table_hash(key, len);
}

static int match(struct cds_lfht_node *node, const void *k)
{
    const accel__table_node *n =
        caa_container_of(node, accel__table_node, lfht);
    const lookup_key *kk = k;
    accel__rcu_tsan_found(n); /* match reads n inside the lookup */
    return n->len == kk->len && memcmp(n->key, kk->bytes, kk->len) == 0;
}

int accel__table_insert(struct cds_lfht *t, accel__table_node *n)
{
    lookup_key k = {n->key, n->len};
    accel__rcu_tsan_publish(n); /* pairs with found in match and find */
    struct cds_lfht_node *got =
        cds_lfht_add_unique(t, (unsigned long)n->hash, match, &k, &n->lfht);
    return got == &n->lfht ? ACCEL_OK : ACCEL_EEXIST;
}

void accel__table_remove(struct cds_lfht *t, accel__table_node *n)
{
    (void)cds_lfht_del(t, &n->lfht);
}

bool accel__table_node_removed(const accel__table_node *n)
{
    return cds_lfht_is_node_deleted(&n->lfht) != 0;
}

accel__table_node *accel__table_find(struct cds_lfht *t, const char *key,
                                     size_t len, unsigned long hash)
{
    lookup_key k = {key, len};
    struct cds_lfht_iter it;
    cds_lfht_lookup(t, hash, match, &k, &it);
    struct cds_lfht_node *ln = cds_lfht_iter_get_node(&it);
    if (!ln)
        return NULL;
    accel__table_node *n = caa_container_of(ln, accel__table_node, lfht);
    accel__rcu_tsan_found(n);
    return n;
}
