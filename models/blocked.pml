/*
 * A blocked worker hands its place on (runtime/compensate.c) with the
 * park/wake protocol of park.c, the extra workers' idle retirement and
 * the surplus rule.
 *
 * The base worker W runs op A, which blocks until session C's op has run
 * (A waits for something C's ops do: a submit_wait, a sync, an announced wait and a
 * sleep). C has two ops, and a visit runs one, re-queueing C for the
 * visiting worker's next pick. A submitter S queues C's op meanwhile. Two extra workers from
 * an earlier burst are around (extras = 2, both surplus: nothing is
 * blocked yet); they may park, time out and retire at any moment.
 *
 *   blocker (W):  blocked++; [fence]; claim a parked worker and wake it,
 *                 else if work is queued: spawn if owed
 *   submitter:    enqueue [seq_cst push]; claim a parked worker and wake
 *                 it, else (starved) [seq_cst load] if blocked > extras:
 *                 spawn if owed
 *   spawn if owed: extras < blocked && extras < CAP: extras++, start one
 *   extra worker: pick; found: run it, then leave if surplus (extras >
 *                 blocked: extras--); none: park: parked++ [fence], pick
 *                 again, sleep until woken or its idle timeout; a timeout
 *                 retires it (extras-- first, then unpark; a claim it took
 *                 is passed on like the blocker's hand-off)
 *   unpark:       parked--, and one claim fewer if any (took one)
 *
 * Spin interleaves the steps in program order, which the fences and the
 * seq_cst accesses give the real code (park.c's seq_cst parking pair; the
 * blocker's fence against the submitter's seq_cst push and load). Correct: C's op always runs, so
 * A ends (no invalid end state), and extras never passes CAP.
 *
 * -DBROKEN_LOOK_FIRST: the blocker looks for queued work before it counts
 *  itself blocked (the store and load of the pair reordered): the
 *  submitter sees blocked == 0 and starts no one, the blocker saw no work,
 *  and A waits forever.
 * -DBROKEN_SURPLUS_ON_WAKE: a woken extra leaves at once when it is
 *  surplus, before it picks: the wake it was sent for C is dropped and
 *  A waits forever (the rule is checked after a visit, never after a
 *  wake).
 * -DBROKEN_LEAVE_NOWAKE: a surplus extra leaves after a visit that
 *  re-queued C (one op left) without waking anyone: the re-queue was
 *  meant for its own next pick, so C's second op waits forever.
 *
 * -DSLOTS (with -DCAP=2): the extras' slots too. CAP slots, both taken by
 * the earlier burst's extras at the start; a spawn takes a free one under
 * the lock or undoes its count, and an extra gives its slot up only at
 * its end, after its look (compensate.c extra_entry, owed_back): counted
 * again if a blocked worker is owed an extra and work waits. (Apart from
 * the variants above: the look also rescues some of their interleavings.)
 * -DBROKEN_LEAVE_NOLOOK (with -DSLOTS): an extra that uncounted itself
 *  gives its slot up without looking again: a spawn between the two (the
 *  blocker's or the submitter's) found every slot taken and undid its
 *  count, and nobody is left to run C's op.
 */
#ifndef CAP
#define CAP 3
#endif

byte q = 0;          /* C's op queued (the calendar) */
byte parked = 0;
byte claimed = 0;
byte seq = 0;        /* the general lane's futex word */
byte blocked = 0;
byte extras = 2;     /* extra workers counted extras */
byte slots = 2;      /* extra workers' slots in use (CAP of them): an
                        extra holds its slot until it ends, after it
                        uncounted itself */
byte c_left = 2;     /* C's ops (one visit runs one) */

inline pick(got) {
    atomic {
        if
        :: q > 0 -> q--; got = 1
        :: else -> got = 0
        fi
    }
}

/* claim a parked worker and wake it (seq++: its futex_wait returns) */
inline claim_wake(done) {
    atomic {
        if
        :: parked > claimed -> claimed++; seq++; done = 1
        :: else -> done = 0
        fi
    }
}

inline spawn_if_owed() {
    atomic {
        if
        :: extras < blocked && extras < CAP -> extras++; sp = 1
        :: else -> sp = 0
        fi
    };
    if
    :: sp ->
#ifdef SLOTS
        /* under comp.lock: a free slot, else the count undone */
        atomic {
            if
            :: slots < CAP -> slots++; run extra()
            :: else -> extras--
            fi
        }
#else
        run extra()
#endif
    :: else
    fi;
    assert(extras <= CAP)
}

/* the submitter's wake, and a passed-on claim */
inline wake_or_starved() {
    claim_wake(done);
    if
    :: !done && blocked > extras -> spawn_if_owed()
    :: else
    fi
}

inline unpark(took) {
    atomic {
        parked--;
        if
        :: claimed > 0 -> claimed--; took = 1
        :: else -> took = 0
        fi
    }
}

proctype extra()
{
    bit got, took, done, sp, requeue, leave;
    byte myseq;
loop:
    pick(got);
    if
    :: got -> goto work
    :: else
    fi;
    /* park */
    myseq = seq;
    parked++;
    pick(got);
    if
    :: got ->
        unpark(took);
        if
        :: took -> wake_or_starved()
        :: else
        fi;
        goto work
    :: else
    fi;
    if
    :: seq != myseq ->              /* woken */
        unpark(took);
#ifdef BROKEN_SURPLUS_ON_WAKE
        atomic {
            if
            :: extras > blocked -> extras--; goto out
            :: else
            fi
        };
#endif
        goto loop
    :: true ->                      /* idle timeout: retire */
        extras--;
        unpark(took);
        if
        :: took -> wake_or_starved()
        :: else
        fi;
        goto out
    fi;
work:
    c_left--;                       /* a visit runs one of C's ops */
    if
    :: c_left > 0 -> requeue = 1; q++  /* re-queued for its own next */
    :: else -> requeue = 0             /* pick: no wake */
    fi;
    atomic {                        /* after a visit: surplus leaves */
        if
        :: extras > blocked -> extras--; leave = 1
        :: else -> leave = 0
        fi
    };
    if
    :: leave ->
#ifndef BROKEN_LEAVE_NOWAKE
        if                          /* it will not pick again: wake */
        :: requeue -> wake_or_starved()
        :: else
        fi;
#endif
        goto out
    :: else -> goto loop
    fi;
out:
#ifdef SLOTS
    /* under comp.lock: the slot given up, unless a blocked worker is
     * owed an extra and work waits (a spawn in between may have found
     * this slot taken): then counted again, it runs on (owed_back) */
    atomic {
#ifndef BROKEN_LEAVE_NOLOOK
        if
        :: q > 0 && extras < blocked && extras < CAP -> extras++; goto loop
        :: else
        fi;
#endif
        slots--
    }
#else
    skip
#endif
}

proctype base()                     /* W, inside op A */
{
    bit done, sp, seen;
#ifdef BROKEN_LOOK_FIRST
    seen = (q > 0);
    blocked++;
    claim_wake(done);
#else
    blocked++;
    claim_wake(done);
    seen = (q > 0);
#endif
    if
    :: !done && seen -> spawn_if_owed()
    :: else
    fi;
    (c_left == 0);                  /* the wait */
    blocked--
}

proctype submitter()
{
    bit done, sp;
    q++;                            /* C's two ops: one enqueue */
    wake_or_starved()
}

init {
    atomic {
        run base();
        run submitter();
        run extra();
        run extra()
    }
}
