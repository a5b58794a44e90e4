/*
 * A visit's presumption hooks (compensate.h, "presumed visits"): every
 * visit of an accel worker, and of a watched host worker, passes both.
 * Their common path is inline here: a visit whose session's last visit
 * did not wait (almost every visit) costs a few loads of the worker's and
 * the session's own lines and no call; the rest is compensate.c's
 * accel__compensate_presume_begin/_judge.
 */
#ifndef ACCEL_RUNTIME_PRESUME_H
#define ACCEL_RUNTIME_PRESUME_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "compensate.h"
#include "session.h"
#include "worker_types.h"

/* A visit of s on w begins: if s's last visit waited off a CPU, w counts
 * blocked at once, as inside an announced wait, until
 * accel__presume_judge (owner only). */
static inline void accel__presume_begin(accel__worker *w, accel_session *s)
{
    w->presumed = false;
    /* relaxed: written by the session's previous visit; the scheduler's
     * re-queue and this worker's pick of the session order it (and it is
     * a hint) */
    if (__builtin_expect(
            atomic_load_explicit(&s->blocks, memory_order_relaxed) != 0, 0))
        accel__compensate_presume_begin(w, s);
}

/* The visit ends (before its charge is read): ends the count the begin
 * made, and marks s for its next visit if this one waited off a CPU
 * (detected by the monitor, or presumed and asleep at least as long as
 * it was on a CPU). */
static inline void accel__presume_judge(accel__worker *w, accel_session *s)
{
    /* relaxed: the monitor's note of the visit it found (a hint), and
     * this worker's own count of its visits */
    bool blocks =
        __builtin_expect(w->presumed, 0)
            ? accel__compensate_presume_judge(w, s)
            : atomic_load_explicit(&w->detected_visit, memory_order_relaxed) ==
                  atomic_load_explicit(&w->visits, memory_order_relaxed);
    /* relaxed: read by the session's next visit (see the begin); written
     * only when it changes, so the line is not dirtied per visit */
    if (__builtin_expect(
            blocks != (atomic_load_explicit(&s->blocks, memory_order_relaxed) != 0),
            0))
        atomic_store_explicit(&s->blocks, blocks, memory_order_relaxed);
}

#endif
