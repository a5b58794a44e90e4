/*
 * Completion sleepers (runtime/waiters.c accel__waiters_wait_finished,
 * the consumer's accel__waiters_finished, called by runtime/visit.c):
 * sync and close wait for the session's `finished` count to reach a
 * target without a futex wake per op.
 *
 * Sleeper: if finished >= T, done. Else read the futex word `event`,
 * announce T by a CAS-min on `wake_at`, (cold fence), look at finished
 * again, then futex_wait(event, ev): it returns at once if event changed
 * since it was read.
 * Worker, per op: finished++, (hot fence), read wake_at; if finished has
 * reached it, store wake_at = none and bump event (notify).
 *
 * The fence pair (membarrier on the sleeper's side, a compiler barrier on
 * the worker's) is modelled as sequential consistency: each statement is
 * one atomic step. Two sleepers with different targets exercise the reset
 * of wake_at racing with a new announcement.
 *
 * Checked: no sleeper stays asleep once its target is reached (Spin's
 * invalid-end-state check: a blocked sleeper at the end is a lost
 * wake-up), and a sleeper returns only when its target was reached.
 *
 * -DBROKEN_NORECHECK: the sleeper announces and goes to sleep without the
 * second look at finished. Spin must find the lost wake-up.
 */
#define N 3
#define NONE 255

byte finished = 0;
byte wake_at = NONE;
byte event = 0;
byte awake = 0;

proctype worker()
{
    byte k, w;
    for (k : 1 .. N) {
        finished++;                      /* [R5] */
        w = wake_at;                     /* after the hot fence */
        if
        :: finished >= w -> wake_at = NONE; event++   /* notify */
        :: else
        fi
    }
}

proctype sleeper(byte target)
{
    byte ev;
    do
    :: finished >= target -> break
    :: else ->
        ev = event;
        atomic {                         /* CAS-min */
            if
            :: target < wake_at -> wake_at = target
            :: else
            fi
        }
#ifndef BROKEN_NORECHECK
        if                               /* after the cold fence */
        :: finished >= target -> break
        :: else
        fi;
#endif
        (event != ev)                    /* futex_wait(event, ev) */
    od;
    assert(finished >= target);
    awake++
}

init
{
    atomic {
        run worker();
        run sleeper(1);
        run sleeper(N)
    }
    (awake == 2)
}
