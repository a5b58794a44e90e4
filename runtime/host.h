/*
 * Host-driven workers' slots (host.c; the public side is
 * include/accel/host.h): allocated at a host-driven runtime's create,
 * freed at its destroy. runtime.c calls it.
 */
#ifndef ACCEL_RUNTIME_HOST_H
#define ACCEL_RUNTIME_HOST_H

#include "accel/accel.h"

/* Host-driven workers (host.c): one per worker index, allocated at create. */
int accel__host_create(accel_runtime *rt);
void accel__host_free(accel_runtime *rt);

#endif
