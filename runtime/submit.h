/*
 * The submit side's interface to the layer above (submit.c): a submit of
 * one op that can hand its session straight to the caller's host slot.
 */
#ifndef ACCEL_RUNTIME_SUBMIT_H
#define ACCEL_RUNTIME_SUBMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "accel/accel.h"
#include "lane.h"

/* A submit whose caller drives host slot `lane` next (host.c). */
typedef struct accel__submit_take {
    accel__lane lane;
    bool taken; /* out: the session was handed to the caller */
} accel__submit_take;
/* accel_submit of one op (arguments checked by the caller), with take. */
int accel__submit_take_one(accel_session *s, const accel_op *op,
                           int64_t timeout_ns, accel__submit_take *take);

#endif
