/*
 * The id table: liburcu's lock-free RCU hash table (cds_lfht) of nodes
 * keyed by a byte string. The owner embeds an accel__table_node in its
 * object and maps a found node back with caa_container_of (session.c).
 * Lookups run in an RCU read-side section; insertion is unique
 * (cds_lfht_add_unique); removal unpublishes, and the owner reclaims the
 * object after a grace period.
 * Litmus shape: publish (init the object and its node, then add: the add's
 * release in cds_lfht) / dereference (lookup's rcu_dereference); see rcu.h
 * for the TSan edges.
 */
#ifndef ACCEL_RUNTIME_TABLE_H
#define ACCEL_RUNTIME_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <urcu/rculfhash.h>

#include "accel/accel.h"

/* Buckets at create; session.c grows the table from there (table_grow). */
#define ACCEL__TABLE_INIT_BUCKETS 64ul

struct cds_lfht *accel__table_create(void);
/* Resizes t to `buckets` (a power of two) now, in the caller: synchronous
 * (liburcu's cds_lfht_resize, which starts helper threads for a large
 * table). A growth, as session.c asks for, waits for no grace period
 * (only a shrink's freeing of old buckets would). Caller registered with
 * RCU and outside any read-side section; cold path only. */
void accel__table_resize(struct cds_lfht *t, unsigned long buckets);
void accel__table_destroy(struct cds_lfht *t);
unsigned long accel__table_hash(const char *key, size_t len);

/* A table entry. The key bytes are the owner's: they must stay unchanged
 * while the node is in a table and until a grace period after its
 * removal (lookups compare them). */
typedef struct accel__table_node {
    struct cds_lfht_node lfht;
    const char *key;
    uint32_t len;
    uint32_t hash; /* accel__table_hash of the key */
} accel__table_node;

/* Sets n up for insertion, keyed by len bytes at key (kept by pointer). */
void accel__table_node_init(accel__table_node *n, const char *key,
                            size_t len);
/* ACCEL_OK or ACCEL_EEXIST (a node with an equal key is in t). Caller in a
 * read-side section. */
int accel__table_insert(struct cds_lfht *t, accel__table_node *n);
/* Unpublishes n (idempotent). Caller in a read-side section. */
void accel__table_remove(struct cds_lfht *t, accel__table_node *n);
/* Whether n was removed from its table (it stays so: a node is inserted
 * once). A plain load (no barrier): its caller orders it. The caller
 * keeps n's memory valid, by a read-side section or as its owner. */
bool accel__table_node_removed(const accel__table_node *n);
/* Finds the node with this key, NULL if none. Caller in a read-side
 * section; the result is valid until the section ends. */
accel__table_node *accel__table_find(struct cds_lfht *t, const char *key,
                                     size_t len, unsigned long hash);

#endif
