/*
 * Batching's hold-back: holding a session and releasing it
 * (runtime/batch.c "Holding back", hold_end, accel__batch_kick,
 * hold_release; the mark in ring.h's defer word).
 *
 * One worker holds a session whose ring has fewer than FILL ops: it sets
 * HELD in the hold word, stores the mark in defer, (cold fence) and looks
 * again at the ring and at close; whatever it finds due it releases
 * itself. Producers publish one op each, (hot fence) load defer, and with
 * the mark seen look at the hold word and the count: a fill releases.
 * A closer sets CLOSED, (seq_cst fence) and releases a held session. The
 * timer is stalled (as the tests' seam stalls it): every release here is
 * one of those rules'. The fence pairs are modelled as sequential
 * consistency.
 *
 * A release is the one CAS that clears HELD; its winner takes the mark
 * out and enqueues the session.
 *
 * Checked: the session is enqueued at most once (assertion at the
 * release), and at quiescence it is not held while it is due: a fill or
 * a close never goes unseen (the timeout assertion).
 *
 * -DBROKEN_NORECHECK: the holder skips its second look. A producer that
 *  published before the mark and loaded defer before it was stored
 *  kicks nobody: the session stays held with the batch full.
 * -DBROKEN_SPLIT_RELEASE: the release tests HELD and clears it in two
 *  steps instead of one CAS: two releasers both enqueue.
 * -DBROKEN_CLOSE_NOKICK: close does not look at the hold word: a close
 *  that lands after the holder's second look leaves it held.
 */
#ifndef NPROD
#define NPROD 2
#endif
#define FILL 2

bit held = 0;
bit mark = 0;        /* defer == ACCEL__RING_DEFER_HELD */
bit closed = 0;
byte count = 1;      /* ops queued: one, when the worker decides to hold */
byte enqueued = 0;   /* releases that enqueued the session */
bit holding = 0;     /* the worker chose to hold */

inline release() {
#ifdef BROKEN_SPLIT_RELEASE
    if
    :: held ->
        held = 0;
        mark = 0;
        enqueued++;
        assert(enqueued <= 1)
    :: else
    fi
#else
    atomic {
        if
        :: held -> held = 0; won = 1
        :: else -> won = 0
        fi
    }
    if
    :: won ->
        mark = 0;
        enqueued++;
        assert(enqueued <= 1)
    :: else
    fi
#endif
}

proctype worker()
{
    bit won;
    /* the visit's decision: fewer than FILL and not closed */
    if
    :: atomic { count < FILL && !closed -> holding = 1 }
    :: else -> goto done
    fi;
    held = 1;                       /* the hold word (release store) */
    mark = 1;                       /* defer = the mark (release store) */
    /* fence_cold */
#ifndef BROKEN_NORECHECK
    if
    :: count >= FILL || closed -> release()
    :: else
    fi;
#endif
done:
    skip
}

proctype producer()
{
    bit won;
    /* reserve and publish ([R1]); refused once close's LP passed */
    if
    :: atomic { !closed -> count++ }
    :: atomic { closed -> goto refused }
    fi;
    /* fence_hot; load defer */
    if
    :: mark ->
        /* accel__batch_kick: the hold word, then the fill */
        if
        :: held && (count >= FILL || closed) -> release()
        :: else
        fi
    :: else
    fi;
refused:
    skip
}

proctype closer()
{
    bit won;
    closed = 1;                     /* close's LP: fetch_or CLOSED */
    /* seq_cst fence; the hold word */
#ifndef BROKEN_CLOSE_NOKICK
    if
    :: held -> release()
    :: else
    fi
#endif
}

init {
    atomic {
        run worker();
        byte i = 0;
        do
        :: i < NPROD -> run producer(); i++
        :: else -> break
        od;
        run closer()
    }
}

active proctype monitor()
{
    timeout -> assert(!(held && (count >= FILL || closed)))
}
