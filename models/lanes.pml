/*
 * Waking the two lanes (runtime/park.c accel__park_wake_lanes,
 * accel__park_worker): a burst of wakes must reach as many parked workers.
 *
 * One short-lane worker and one general worker; two sessions that either
 * lane may run (both short-class). Each session has one op, and the two
 * ops meet: each blocks until both are running (the regression test
 * burst_of_two_starts_both_parked_workers). A submitter enqueues them one
 * after the other, each followed by a wake of both lanes.
 *
 * Parker: seq = park_seq; parked++; (seq_cst fence) pick again; futex_wait
 * (park_seq, seq); then leaves: parked--, and one claim fewer if any. A
 * parker whose second pick found work did not need that claim's wake (the
 * claim may be for work queued after its pick): it passes the wake on.
 * Waker: enqueue (seq_cst RMWs); (seq_cst load) if the short lane has a
 * parked worker no waker claimed yet, claim it, bump its park_seq and
 * wake; else the same
 * for the general lane. The seq_cst pair is modelled as sequential
 * consistency, each statement one atomic step; the claim CAS is atomic.
 *
 * Checked: at quiescence both ops met (assertion on `met`): no wake-up
 * was absorbed by a worker that was already being woken while the other
 * stayed parked, and no claim strands a parked worker.
 *
 * -DNGEN=2: two general workers (the runtime of the report: 2 general,
 *  1 short-lane worker, a burst on two short-class sessions).
 * -DTWO_WAKERS: two submitters, one session each, so the wakes of the two
 *  sessions run concurrently and either waker may be preempted between
 *  any two of its steps (its claim, its park_seq bump) for as long as the
 *  other threads take to reach quiescence: Spin interleaves every step.
 * -DSTALL: a waker may stop for good between its claim and its park_seq
 *  bump (preempted and never run again). Then the ops cannot all meet (the
 *  claimed worker is woken by nobody), so the check is the one a lost or
 *  misdirected wake would break: every session whose submitter finished
 *  its wake was taken by a worker (`picked >= owed` at quiescence).
 *  Only the stalled waker's own session may wait for it.
 *
 * -DBROKEN_NOCLAIM: the wake tests "parked > 0" without claiming (the
 *  code before the fix): two wakes in the short worker's wake-up window
 *  both go to it, the general worker stays parked, and the first op waits
 *  forever for its partner. Spin must reject it on `met`.
 * -DBROKEN_NOPASS: claims, but a parker leaving with work from its second
 *  pick keeps the claim it consumed: the waker claimed a worker that was
 *  already leaving with other work, the general worker sleeps on. Spin
 *  must reject it on `met`.
 */
#define NS 2
#ifndef NGEN
#define NGEN 1
#endif

byte parked[2];                /* per lane: 0 general, 1 short */
byte claimed[2];
byte park_seq[2];
chan q = [NS] of { byte };     /* the calendar: queued sessions */
byte running = 0;
byte met = 0;
byte picked = 0;               /* sessions a worker took from the calendar */
byte owed = 0;                 /* sessions whose submitter finished its wake */
bit stalled = 0;               /* a waker stopped for good (-DSTALL) */

inline claim_wake(l, done) {
#ifdef BROKEN_NOCLAIM
    if
    :: parked[l] > 0 -> park_seq[l]++; done = 1
    :: else -> done = 0
    fi
#else
    atomic {
        if
        :: parked[l] > claimed[l] -> claimed[l]++; done = 1
        :: else -> done = 0
        fi
    };
    if
    :: done ->
#ifdef STALL
        if                          /* preempted here, never resumed */
        :: stalled == 0 -> stalled = 1; goto end_stalled
        :: true
        fi;
#endif
        park_seq[l]++               /* then futex_wake(1) */
    :: else
    fi
#endif
}

inline wake_both(done) {
    claim_wake(1, done);            /* short lane first */
    if
    :: !done -> claim_wake(0, done)
    :: else
    fi
}

#ifdef TWO_WAKERS
proctype submitter(byte i)
{
    bit done;
    q!i;                            /* enqueue (the calendar's push) */
    wake_both(done);
    owed++;
#ifdef STALL
    goto fin;
end_stalled:
    false;
fin:
#endif
    skip
}
#else
proctype submitter()
{
    byte i;
    bit done;
    for (i : 1 .. NS) {
        q!i;                        /* enqueue (the calendar's push) */
        wake_both(done);
        owed++
    };
#ifdef STALL
    goto fin;
end_stalled:
    false;
fin:
#endif
    skip
}
#endif

proctype worker(byte lane)
{
    byte seq, s;
    bit got, consumed, done;
end_top:
    do
    :: atomic {                     /* accel__sched_pick, non-blocking */
           if
           :: nempty(q) -> q?s; got = 1; picked++
           :: empty(q) -> got = 0
           fi
       };
       if
       :: got == 0 ->
           seq = park_seq[lane];
           parked[lane]++;
           atomic {                 /* the pick after the fence */
               if
               :: nempty(q) -> q?s; got = 1; picked++
               :: empty(q) -> got = 0
               fi
           };
           if
           :: got == 0 ->
end_park:      (park_seq[lane] != seq)   /* futex_wait */
           :: else
           fi;
           atomic {                 /* unpark */
               parked[lane]--;
               consumed = 0;
#ifndef BROKEN_NOCLAIM
               if
               :: claimed[lane] > 0 -> claimed[lane]--; consumed = 1
               :: else
               fi
#endif
           };
#ifndef BROKEN_NOPASS
           if                       /* pass the claim's wake on */
           :: got && consumed ->
               if
               :: lane == 1 ->
                   claim_wake(1, done);
                   if
                   :: !done -> claim_wake(0, done)
                   :: else
                   fi
               :: else -> claim_wake(0, done)
               fi
           :: else
           fi
#endif
       :: else
       fi;
       if
       :: got == 1 ->
           running++;
#ifdef STALL
end_meet:  /* its partner's session may be the stalled waker's */
#endif
           (running == NS);         /* the op waits for its partner */
           met++
       :: else
       fi
    od;
#ifdef STALL
end_stalled:                        /* only through a stalled pass-on */
    false
#endif
}

init {
    byte g;
    atomic {
        for (g : 1 .. NGEN) {
            run worker(0)
        }
        run worker(1);
#ifdef TWO_WAKERS
        run submitter(1);
        run submitter(2)
#else
        run submitter()
#endif
    }
}

/* Quiescence with an op that never met its partner: a worker was left
 * parked with work it could run. */
active proctype monitor()
{
#ifdef STALL
    timeout -> assert(owed <= picked + stalled)
#else
    timeout -> assert(met == NS)
#endif
}
