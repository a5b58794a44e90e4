/*
 * host.c's internal interface (the public one is include/accel/host.h):
 * the direct hand-off of accel_host_submit_own for an op with a deadline
 * and a ticket, which the Go binding (built with the runtime's sources)
 * uses for every synchronous Submit (ctx's deadline; a ticket when ctx
 * can end, so that an op left queued stays cancellable).
 */
#ifndef ACCEL_RUNTIME_HOST_H
#define ACCEL_RUNTIME_HOST_H

#include <stdint.h>

#include "accel/host.h"

/* accel_host_submit_own with op submitted as by accel_submit_ex: its
 * deadline_ns (0: none; an op past it when the visit takes it completes
 * ACCEL_EEXPIRED unrun, and the visit opens with it kept back, *n 0) and,
 * ticket not NULL, its ticket for accel_cancel (zeroed unless the submit
 * is accepted). Returns as accel_host_submit_own, and ACCEL_EINVAL for
 * deadline_ns < 0. deadline_ns 0 and ticket NULL: accel_host_submit_own. */
int accel__host_submit_own_ex(accel_runtime *rt, unsigned worker,
                              accel_session *s, const accel_op *op,
                              int64_t deadline_ns, int64_t timeout_ns,
                              accel_ticket *ticket, accel_op *ops,
                              unsigned cap, unsigned *n, int *begun);

#endif
