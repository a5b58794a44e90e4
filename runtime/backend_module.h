/*
 * Backends built as loadable modules (backend_module.c,
 * docs/backends.md): the registry (backend_registry.c) calls it.
 */
#ifndef ACCEL_RUNTIME_BACKEND_MODULE_H
#define ACCEL_RUNTIME_BACKEND_MODULE_H

#include "accel/accel.h"
#include "backend.h"

/* Module loading (backend_module.c): the ops of the module called name,
 * or NULL. */
const accel__backend_ops *accel__backend_module_load(const char *name,
                                                     accel_backend kind);

#endif
