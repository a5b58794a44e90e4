/*
 * The submit side's interface to the layer above (submit.c): a submit of
 * one op that can hand its session straight to the caller's host worker,
 * and a batch with one deadline for all its ops.
 */
#ifndef ACCEL_RUNTIME_SUBMIT_H
#define ACCEL_RUNTIME_SUBMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accel/accel.h"
#include "lane.h"

/* A submit whose caller drives host worker `lane` next (host.c). */
typedef struct accel__submit_take {
    accel__lane lane;
    bool taken; /* out: the session was handed to the caller */
} accel__submit_take;
/* accel_submit_ex of one op (its checks, its ticket) with take: deadline
 * 0 and no ticket is accel_submit's plain op; with either, an op that a
 * hand-off gives the caller can still expire or be canceled queued. */
int accel__submit_take_one_ex(accel_session *s, const accel_op *op,
                              int64_t deadline_ns, int64_t timeout_ns,
                              accel_ticket *ticket, accel__submit_take *take);

#endif
