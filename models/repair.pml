/*
 * The calendar's repair and the wake it owes (runtime/sched_calendar.c,
 * accel__sched_pick in sched_wfq.c, accel__park_restored in park.c).
 *
 * One bucket: its nodes (q) and its bit (b). A pick looks at the bit;
 * set: it pops, and a pop that took the last node (or found none) clears
 * the bit, then looks back at the bucket and sets the bit back if a push
 * came: the repair. A pop that found nothing looks again. A push is two
 * steps: the node (the head CAS), then the bit (set_bit); then the wake:
 * claim a parked worker not yet claimed, bump park_seq.
 *
 * Parker (park.c): seq = park_seq; parked++; (seq_cst fence) pick again;
 * futex_wait(park_seq, seq); then leaves: parked--, one claim fewer if
 * any, and passes the wake on if its pick found work with a claim taken.
 * Each statement is one atomic step (the seq_cst accesses give the real
 * code that order).
 *
 * Two workers; op A queued at the start, op X pushed by a submitter. A's
 * op waits until X has run (as unit_sched_repair's runtime test does),
 * so a worker that sleeps beside a queued X while the other holds A is a
 * deadlock: Spin reports it as an invalid end state.
 *
 * -DBROKEN_NOWAKE: the repair sets the bit back and wakes no one (the
 *  code before the fix). X's push lands after A's pop and before its
 *  clear, finds its bit set and no worker parked; the other worker parks
 *  and looks between the clear and the set back. Spin must reject it.
 * -DBROKEN_PEEK: a look that does not pop (the monitor's, peek) clears a
 *  bit and sets it back without a wake; with the fix such looks only
 *  read. Spin must reject it.
 */
#define A 1
#define X 2

chan q = [2] of { byte };      /* the bucket's nodes */
bit b = 1;                     /* its bit: A is queued */
byte parked, claimed, park_seq;
bit x_ran;

inline wake() {
    atomic {
        if
        :: parked > claimed -> claimed++; park_seq++  /* then futex_wake */
        :: else
        fi
    }
}

inline pick(got, s, last) {
    got = 0;
    do
    :: b == 0 -> break                     /* the look finds no bit */
    :: b == 1 ->
        atomic {                           /* the pop */
            if
            :: nempty(q) -> q?s; got = 1; last = empty(q)
            :: empty(q) -> last = 1
            fi
        };
        if
        :: last ->
            b = 0;                         /* the clear */
            if                             /* the look back */
            :: nempty(q) ->
                b = 1;                     /* set back */
#ifndef BROKEN_NOWAKE
                wake()                     /* accel__park_restored */
#endif
            :: empty(q)
            fi
        :: else
        fi;
        if
        :: got -> break
        :: else                            /* empty pop: look again */
        fi
    od
}

proctype submitter()
{
    q!X;                                   /* the head CAS */
    b = 1;                                 /* set_bit */
    wake()
}

proctype worker()
{
    byte seq, s;
    bit got, last, consumed;
end_top:
    do
    :: pick(got, s, last);
       if
       :: !got ->
           seq = park_seq;
           parked++;
           pick(got, s, last);             /* the pick after the fence */
           if
           :: !got ->
end_park:      (park_seq != seq)           /* futex_wait */
           :: else
           fi;
           atomic {                        /* unpark */
               parked--;
               if
               :: claimed > 0 -> claimed--; consumed = 1
               :: else -> consumed = 0
               fi
           };
           if
           :: got && consumed -> wake()    /* pass the claim on */
           :: else
           fi
       :: else
       fi;
       if
       :: got && s == A -> (x_ran == 1)    /* A's op waits for X */
       :: got && s == X -> x_ran = 1
       :: else
       fi
    od
}

#ifdef BROKEN_PEEK
proctype peek()
{
    if
    :: b == 1 && empty(q) ->
        b = 0;
        if
        :: nempty(q) -> b = 1              /* set back, no wake */
        :: empty(q)
        fi
    :: else
    fi
}
#endif

init {
    atomic {
        q!A;
        run worker();
        run worker();
        run submitter();
#ifdef BROKEN_PEEK
        run peek()
#endif
    }
}
