/*
 * The adaptive linger: whether a visit that emptied its session's ring
 * polls it a little longer (worker.c) before giving the session up.
 *
 * Lingering pays under a stream of submits (the next op is being
 * published right now) and is a wasted microsecond for a session whose
 * next op is far off (many sparse sessions: each visit finds one op).
 * So each session remembers, in one byte, how its last lingers went, and
 * a visit lingers only while they paid off:
 *
 *   0 (PAID)    the last visit that lingered caught an op: linger;
 *   1 (MISSED)  one visit's linger caught nothing: linger once more, so
 *               that one slow submit does not cost a steady stream;
 *   2..RETRY    skipping: each visit that reaches an empty ring counts
 *               one up without lingering; after RETRY the next one
 *               lingers again (state 1), so a session whose producer
 *               sped up regains the linger within RETRY visits.
 *
 * A visit that found more than one op lingers in any state (a sparse
 * session's visits find one op each). A new session starts skipping
 * (FRESH): it earns the linger by a retry, or a run of ops, that pays. Only visits that ran an op and then found the ring empty
 * change the state; a visit ended by its quantum, its clock or an empty
 * first look leaves it as it was. Pure functions of the state, so the
 * policy is tested on its own (tests/unit_linger.c).
 */
#ifndef ACCEL_RUNTIME_LINGER_H
#define ACCEL_RUNTIME_LINGER_H

#include <stdbool.h>
#include <stdint.h>

#define ACCEL__LINGER_PAID 0u
#define ACCEL__LINGER_MISSED 1u
#define ACCEL__LINGER_FRESH 2u
/* The last skipping state: RETRY - 1 visits skip, then one lingers, so a
 * session that stays sparse lingers on one visit in RETRY. */
#define ACCEL__LINGER_RETRY 16u

/* Whether a visit in state st that just found the ring empty, after
 * taking n ops, lingers. A visit that found more than one op is being fed
 * right now whatever the state says (a sparse session's visit finds one):
 * it lingers, and a catch puts the session back to PAID. */
static inline bool accel__linger_due(uint8_t st, uint32_t n)
{
    return st <= ACCEL__LINGER_MISSED || n > 1;
}

/* The state after a visit that lingered; caught: whether any of its
 * lingers caught an op (the visit's last linger always misses, unless
 * its quantum ends it first). */
static inline uint8_t accel__linger_after(uint8_t st, bool caught)
{
    if (caught)
        return ACCEL__LINGER_PAID;
    return st == ACCEL__LINGER_PAID ? ACCEL__LINGER_MISSED
                                    : ACCEL__LINGER_FRESH;
}

/* The state after a visit that skipped the linger. */
static inline uint8_t accel__linger_skipped(uint8_t st)
{
    return st >= ACCEL__LINGER_RETRY ? ACCEL__LINGER_MISSED
                                     : (uint8_t)(st + 1);
}

#endif
