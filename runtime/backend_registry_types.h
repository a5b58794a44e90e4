/*
 * One backend's slot in a runtime (accel__backend_entry): its ops, its
 * runtime-level state and its probe result, one per accel_backend in the
 * runtime object (runtime_types.h). A structure apart from the registry's
 * functions (backend_registry.h), so that the runtime object need not
 * include them.
 */
#ifndef ACCEL_RUNTIME_BACKEND_REGISTRY_TYPES_H
#define ACCEL_RUNTIME_BACKEND_REGISTRY_TYPES_H

#include "backend.h"

typedef struct accel__backend_entry {
    const accel__backend_ops *ops; /* NULL: no such backend */
    void *state;                   /* its runtime-level state */
    int probe;                     /* ACCEL_OK if usable in this runtime */
} accel__backend_entry;

#endif
