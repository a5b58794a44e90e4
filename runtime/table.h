/*
 * Session table: liburcu's lock-free RCU hash table (cds_lfht), keyed by
 * id. Lookups run in an RCU read-side section; insertion is unique
 * (cds_lfht_add_unique); removal unpublishes at close begin, and the object
 * is reclaimed after a grace period (session.c).
 * Litmus shape: publish (init the session, then add: the add's release in
 * cds_lfht) / dereference (lookup's rcu_dereference); see rcu.h for the
 * TSan edges.
 */
#ifndef ACCEL_RUNTIME_TABLE_H
#define ACCEL_RUNTIME_TABLE_H

#include <stddef.h>

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
unsigned long accel__table_hash(const char *id, size_t len);
/* ACCEL_OK or ACCEL_EEXIST. Caller in a read-side section. */
int accel__table_insert(struct cds_lfht *t, accel_session *s);
/* Unpublishes s (idempotent). Caller in a read-side section. */
void accel__table_remove(struct cds_lfht *t, accel_session *s);
/* Finds the session with this id, NULL if none. Caller in a read-side
 * section; the result is valid until the section ends. */
accel_session *accel__table_find(struct cds_lfht *t, const char *id,
                                 size_t len, unsigned long hash);

#endif
