/*
 * Batching's hold-back: holding a session and releasing it
 * (runtime/batch.c "Holding back", hold_end, accel__batch_kick,
 * hold_release; the mark in ring.h's defer word).
 *
 * One worker holds a session whose ring has fewer than FILL ops: it
 * stores the hold's mark in defer (the hold's LP; defer is 0 while it is
 * the session's consumer), (cold fence) and looks again at the ring and
 * at close; whatever it finds due it releases itself. Producers publish
 * one op each, (hot fence) load defer, and with the mark seen look at
 * the count: a fill releases. A closer sets CLOSED, (seq_cst fence) and
 * releases a held session. The timer is stalled (as the tests' seam
 * stalls it): every release here is one of those rules'. The fence pairs
 * are modelled as sequential consistency.
 *
 * A release is the one CAS that takes the mark out of defer; its winner
 * enqueues the session. The next consumer (visitor) then runs it and
 * leaves it to a late producer that reserved a position and has not
 * published yet: a deferral in defer (a plain store: defer is 0 while a
 * consumer holds the session), which that producer claims after its
 * publish, or the visitor takes back if the publish came first.
 *
 * Checked: the session is enqueued at most once (assertion at the
 * release); the holder stores its mark, and the visitor its deferral,
 * only while defer is 0 (nothing to overwrite: assertions at the
 * stores); at quiescence it is not held
 * while it is due (a fill or a close never goes unseen) and a deferral
 * left to the late producer was claimed (the session is not stranded).
 *
 * -DBROKEN_NORECHECK: the holder skips its second look. A producer that
 *  published before the mark and loaded defer before it was stored
 *  kicks nobody: the session stays held with the batch full.
 * -DBROKEN_SPLIT_RELEASE: the release tests the mark and clears it in
 *  two steps instead of one CAS: two releasers both enqueue.
 * -DBROKEN_CLOSE_NOKICK: close does not look at the mark: a close that
 *  lands after the holder's second look leaves it held.
 * -DBROKEN_MARK_AFTER_HOLD: the hold in a word of its own (the release
 *  a CAS on it) and the mark stored after it (batch.c before the fix): a
 *  release lands in between, the visitor defers to the late producer,
 *  and the holder's late mark overwrites the deferral.
 */
#ifndef NPROD
#define NPROD 2
#endif
#define FILL 2
#define MARK 1  /* defer == a hold's mark (ACCEL__RING_DEFER_HELD | gen) */
#define TOKEN 2 /* defer == a deferral (head + 1) */

byte defer = 0;
bit hword = 0;       /* BROKEN_MARK_AFTER_HOLD: the hold word */
bit closed = 0;
byte count = 1;      /* ops queued: one, when the worker decides to hold */
byte enqueued = 0;   /* releases that enqueued the session */
bit deferred = 0;    /* the visitor left the session to the late producer */
bit claimed = 0;     /* ... and the late producer claimed it */
bit late_in = 0;     /* the late producer reserved its position */
bit late_pub = 0;    /* ... and published */

/* the session is held (the release's condition) */
#ifdef BROKEN_MARK_AFTER_HOLD
#define HELD (hword)
#else
#define HELD (defer == MARK)
#endif

inline release() {
#if defined(BROKEN_SPLIT_RELEASE)
    if
    :: defer == MARK ->
        defer = 0;
        enqueued++;
        assert(enqueued <= 1)
    :: else
    fi
#elif defined(BROKEN_MARK_AFTER_HOLD)
    atomic {
        if
        :: hword -> hword = 0; won = 1
        :: else -> won = 0
        fi
    }
    if
    :: won ->
        defer = 0;
        enqueued++;
        assert(enqueued <= 1)
    :: else
    fi
#else
    atomic {
        if
        :: defer == MARK -> defer = 0; won = 1
        :: else -> won = 0
        fi
    }
    if
    :: won ->
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
    :: atomic { count < FILL && !closed -> skip }
    :: else -> goto done
    fi;
#ifdef BROKEN_MARK_AFTER_HOLD
    hword = 1;                      /* the hold word (release store) */
#endif
    /* defer = the mark (release store): the hold's LP */
    atomic { assert(defer == 0); defer = MARK };
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
    :: defer == MARK ->
        /* accel__batch_kick: the fill */
        if
        :: count >= FILL || closed -> release()
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
    /* seq_cst fence; the mark */
#ifndef BROKEN_CLOSE_NOKICK
    if
    :: HELD -> release()
    :: else
    fi
#endif
}

/* The next consumer, once a release enqueued the session: it runs the
 * ops and leaves; with the late producer's position reserved and not
 * yet published, it defers (ring.h's accel__ring_sc_leave). */
proctype visitor()
{
end_unreleased: /* no release: it never runs (a valid end) */
    enqueued > 0;
    if
    :: atomic { late_in && !late_pub -> assert(defer == 0); defer = TOKEN; deferred = 1 }
       /* cold fence; the slot again: published after all, take our
        * deferral back unless the producer claimed it */
       if
       :: atomic { late_pub && defer == TOKEN -> defer = 0; deferred = 0 }
       :: else
       fi
    :: else /* nothing reserved, or published: idle or more, not modelled */
    fi
}

/* A producer that reserves while the session is held (SCHED set: it is
 * no owner) and publishes later: its reservation counts toward the fill
 * (hold_decide counts reserved positions); it claims a deferral left to
 * it, or with the mark seen kicks as the others do. */
proctype late()
{
    bit won;
    if
    :: atomic { !closed -> late_in = 1; count++ }
    :: atomic { closed -> goto refused }
    fi;
    late_pub = 1;
    /* fence_hot; load defer */
    if
    :: atomic { defer == TOKEN -> defer = 0; claimed = 1 }
    :: defer == MARK ->
        if
        :: count >= FILL || closed -> release()
        :: else
        fi
    :: else
    fi;
refused:
    skip
}

init {
    atomic {
        run worker();
        byte i = 0;
        do
        :: i < NPROD -> run producer(); i++
        :: else -> break
        od;
        run closer();
        run visitor();
        run late()
    }
}

active proctype monitor()
{
    timeout ->
        assert(!(HELD && (count >= FILL || closed)));
        assert(!deferred || claimed)
}
