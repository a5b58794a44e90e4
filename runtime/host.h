/*
 * host.c's internal interface (the public one is include/accel/host.h),
 * for the Go binding (built with the runtime's sources): the direct
 * hand-off of accel_host_submit_own for an op with a deadline and a
 * ticket, which it uses for every synchronous Submit (ctx's deadline; a
 * ticket when ctx can end, so that an op left queued stays
 * cancellable), and a visit's end that says when it ended.
 */
#ifndef ACCEL_RUNTIME_HOST_H
#define ACCEL_RUNTIME_HOST_H

#include <stdbool.h>
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

/* accel_host_visit_end (stop false) or accel_host_visit_end_stop (true),
 * and in *now the monotonic ns the end read for the visit's charge (set
 * when ACCEL_OK): a driver that decides by the time after each visit
 * need not read the clock again. */
int accel__host_visit_end_at(accel_runtime *rt, unsigned worker,
                             const int *status, unsigned n, bool stop,
                             uint64_t *now);

#endif
