/*
 * The backend table: finding, probing and choosing backends (see
 * backend_registry.h). Cold paths only: runtime create/destroy and
 * session open.
 */
#include "backend_registry.h"

#include <pthread.h>

#include "backend_module.h"
#include "runtime_types.h"

/* Modules are loaded once per process, under this lock (cold path: the
 * first runtime creation that looks for them; every creation takes it).
 * A fork waits for it (its own atfork handlers), so a child never
 * inherits it held by a thread that is not there: the child's runtime
 * creations would block on it forever. Registered at the first use, before
 * the lock is ever taken. The loader holds no runtime lock meanwhile, so
 * taking it ahead of fork.c's prepare cannot invert an order. */
static pthread_mutex_t module_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t module_once = PTHREAD_ONCE_INIT;
static const accel__backend_ops *module_ops[ACCEL__BACKEND_KINDS];
static int module_tried[ACCEL__BACKEND_KINDS];

static void module_prepare(void)
{
    pthread_mutex_lock(&module_lock); /* cold: fork */
}

static void module_parent(void)
{
    pthread_mutex_unlock(&module_lock);
}

static void module_child(void)
{
    /* re-initialised, not unlocked: the owner was the forking thread of
     * the parent (as in fork.c) */
    pthread_mutex_init(&module_lock, NULL);
}

static void module_init(void)
{
    (void)pthread_atfork(module_prepare, module_parent, module_child);
}

void accel__backend_registry_module_lock_hold(bool hold)
{
    pthread_once(&module_once, module_init);
    if (hold)
        pthread_mutex_lock(&module_lock); /* cold: tests */
    else
        pthread_mutex_unlock(&module_lock);
}

const accel__backend_ops *accel__backend_registry_ops_of(accel_backend kind)
{
    if (kind <= ACCEL_BACKEND_AUTO || kind >= ACCEL__BACKEND_KINDS)
        return NULL;
    for (const accel__backend_ops *const *p = accel__builtin_backends; *p; p++)
        if ((*p)->kind == kind)
            return *p;
    if (!accel__module_backends[kind])
        return NULL;
    pthread_once(&module_once, module_init);
    pthread_mutex_lock(&module_lock); /* cold path: module loading */
    if (!module_tried[kind]) {
        module_tried[kind] = 1;
        module_ops[kind] =
            accel__backend_module_load(accel__module_backends[kind], kind);
    }
    const accel__backend_ops *ops = module_ops[kind];
    pthread_mutex_unlock(&module_lock);
    return ops;
}

void accel__backends_probe(accel__backend_entry *entries,
                           const accel__backend_probe_args *args)
{
    for (int k = 0; k < ACCEL__BACKEND_KINDS; k++) {
        accel__backend_entry *be = &entries[k];
        be->ops = accel__backend_registry_ops_of((accel_backend)k);
        be->state = NULL;
        be->probe = ACCEL_ENOBACKEND;
        if (!be->ops || be->ops->version != ACCEL__BACKEND_VERSION)
            continue;
        be->probe = be->ops->probe ? be->ops->probe(&be->state, args)
                                   : ACCEL_OK;
        if (be->probe != ACCEL_OK)
            be->state = NULL;
    }
}

void accel__backends_fini(accel__backend_entry *entries)
{
    for (int k = 0; k < ACCEL__BACKEND_KINDS; k++) {
        accel__backend_entry *be = &entries[k];
        /* ops NULL: a runtime whose creation failed before probing (its
         * entries are zeroed) */
        if (be->ops && be->probe == ACCEL_OK && be->ops->runtime_fini)
            be->ops->runtime_fini(be->state);
        be->state = NULL;
        be->probe = ACCEL_ENOBACKEND;
    }
}

const accel__backend_entry *
accel__backend_registry_choose(const accel__backend_entry *entries,
                               accel_backend want,
                               const accel__backend_ops *after, int *err)
{
    *err = ACCEL_ENOBACKEND;
    if ((unsigned)want >= ACCEL__BACKEND_KINDS) {
        *err = ACCEL_EINVAL;
        return NULL;
    }
    if (want != ACCEL_BACKEND_AUTO) {
        const accel__backend_entry *be = &entries[want];
        return !after && be->ops && be->probe == ACCEL_OK ? be : NULL;
    }
    const accel__backend_entry *best = NULL;
    for (int k = 0; k < ACCEL__BACKEND_KINDS; k++) {
        const accel__backend_entry *be = &entries[k];
        if (!be->ops || be->probe != ACCEL_OK || be->ops == after ||
            (after && be->ops->auto_rank >= after->auto_rank))
            continue;
        if (!best || be->ops->auto_rank > best->ops->auto_rank)
            best = be;
    }
    return best;
}

/* ---- accessors for backends (backend.h) */

void *accel__backend_registry_state(accel_runtime *rt, accel_backend kind)
{
    if (!rt || kind <= ACCEL_BACKEND_AUTO || kind >= ACCEL__BACKEND_KINDS)
        return NULL;
    const accel__backend_entry *be = &rt->backends[kind];
    return be->probe == ACCEL_OK ? be->state : NULL;
}

int accel__backend_registry_status(accel_runtime *rt, accel_backend kind)
{
    if (!rt || kind <= ACCEL_BACKEND_AUTO || kind >= ACCEL__BACKEND_KINDS)
        return ACCEL_EINVAL;
    const accel__backend_entry *be = &rt->backends[kind];
    void *state = be->probe == ACCEL_OK ? be->state : NULL;
    if (be->ops && be->ops->status)
        return be->ops->status(state);
    return be->probe == ACCEL_OK ? ACCEL_OK : ACCEL_ENOBACKEND;
}
