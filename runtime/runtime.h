/* The runtime's own header (runtime.c, and the tests that look inside a
 * runtime): the object (runtime_types.h), the limits of its config, and
 * the interfaces of what runtime.c creates and destroys. Lower files
 * include runtime_types.h (docs/layers.md). */
#ifndef ACCEL_RUNTIME_RUNTIME_H
#define ACCEL_RUNTIME_RUNTIME_H

#include "accel/accel.h"
#include "backend_registry.h"
#include "compensate.h"
#include "host.h"
#include "runtime_types.h"
#include "worker.h"

#define ACCEL__WORKERS_MAX 1024u
#define ACCEL__EXTRA_MAX 4096u /* cap on max_extra_workers */
#define ACCEL__EXTRA_DEFAULT_MIN 64u /* max_extra_workers 0: 4 x, at least */

#endif
