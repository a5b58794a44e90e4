/*
 * Host-driven workers (runtime/host.c, bindings/go/hostworker.go): the
 * lanes protocol of lanes.pml with the host's sleep in place of the futex.
 *
 * Host worker (its loop): begin (pick); nothing: accel_host_idle_begin
 * (parked++, seq_cst fence), begin again (the pick after the fence); nothing:
 * sleep on the lane's token channel (Go: a buffered channel of capacity =
 * the lane's workers; a post that does not fit is dropped, since the tokens
 * already there wake every worker that sleeps), then accel_host_idle_end
 * (parked--, one claim fewer if any; pass the wake on if the pick found
 * work). Submitter: enqueue; (seq_cst load) claim a parked worker of the short
 * lane, else of the general lane; host_wake(lane) = post a token.
 * As in lanes.pml: one short-lane and one general worker, two sessions whose
 * ops meet; at quiescence both met.
 *
 * The Go binding's helper workers (hostworker.go, caller helps): a helper
 * worker never announces idle and is never woken, so it is invisible to
 * this protocol; a helper only takes work (-DHELPER below models the one
 * way it takes work that was never queued). The one place a
 * worker leaves work without a wake is the end of a visit, which re-queues
 * the session for the ending worker's own next begin; a helper that stops
 * ends with accel_host_visit_end_stop, which then does the submitter's
 * step above (re-queue = enqueue; seq_cst load; claim a parked worker, post),
 * so the argument is this model's submitter's.
 *
 * -DHELPER: the direct hand-off of accel_host_submit_begin. The submit
 *  of the last session is a helper's: the session becomes runnable and,
 *  when the helper worker's pick would return it first, goes to the helper
 *  without the calendar and without a wake (no q!, no claim). The helper
 *  then either runs the op itself (a runner that never parks, so it can
 *  meet a worker running the other session), or stops with the session
 *  re-queued (ops left: accel_host_visit_end_stop = enqueue, seq_cst load,
 *  claim a parked worker, post); or the hand-off was not taken and the
 *  submit enqueues and wakes as usual. Which one is nondeterministic.
 * -DHELPER -DBROKEN_DIRECT_NOWAKE: the helper stops after a plain end
 *  (the re-queue without the claim and post): a worker that parked while
 *  the helper held the session is never woken and the op waits forever.
 *
 * -DBROKEN_NORECHECK: the worker sleeps right after announcing idle, without
 *  the second begin: a submit between its first pick and the announcement
 *  sees no parked worker, wakes nobody, and the op waits forever.
 * -DBROKEN_UNBUFFERED: a post reaches only a worker already asleep (a
 *  condition-variable signal without state): a wake posted between the
 *  announcement and the sleep is lost.
 */
#define CAP 1                   /* each lane has one worker */
#define NS 2

byte parked[2];                /* per lane: 0 general, 1 short */
byte claimed[2];
byte tokens[2];                /* the lanes' token channels */
byte asleep[2];
chan q = [NS] of { byte };     /* the calendar: queued sessions */
byte running = 0;
byte met = 0;

inline claim_wake(l, done) {
    atomic {
        if
        :: parked[l] > claimed[l] -> claimed[l]++; done = 1
        :: else -> done = 0
        fi
    };
    if
    :: done ->                      /* host_wake(l): post a token */
#ifdef BROKEN_UNBUFFERED
        if
        :: asleep[l] > 0 && tokens[l] < CAP -> tokens[l]++
        :: else
        fi
#else
        if
        :: tokens[l] < CAP -> tokens[l]++
        :: else                     /* full: dropped */
        fi
#endif
    :: else
    fi
}

inline enqueue_wake(i) {
    q!i;                            /* enqueue (the calendar's push) */
    claim_wake(1, done);            /* short lane first */
    if
    :: !done -> claim_wake(0, done)
    :: else
    fi
}

proctype submitter()
{
    byte i;
    bit done;
#ifdef HELPER
    for (i : 1 .. NS - 1) {
        enqueue_wake(i)
    }
    if
    :: enqueue_wake(NS)             /* not first for the helper's pick */
    :: running++;                   /* taken directly: the helper runs it */
       (running == NS);
       met++
    :: true ->                      /* taken directly; the helper stops with */
#ifdef BROKEN_DIRECT_NOWAKE         /* the session re-queued (end_stop) */
       q!NS
#else
       enqueue_wake(NS)
#endif
    fi
#else
    for (i : 1 .. NS) {
        enqueue_wake(i)
    }
#endif
}

proctype worker(byte lane)
{
    byte s;
    bit got, consumed, done;
end_top:
    do
    :: atomic {                     /* accel__sched_pick, non-blocking */
           if
           :: nempty(q) -> q?s; got = 1
           :: empty(q) -> got = 0
           fi
       };
       if
       :: got == 0 ->
           parked[lane]++;          /* accel_host_idle_begin */
#ifndef BROKEN_NORECHECK
           atomic {                 /* begin again after the fence */
               if
               :: nempty(q) -> q?s; got = 1
               :: empty(q) -> got = 0
               fi
           };
#endif
           if
           :: got == 0 ->
               asleep[lane]++;
end_park:      atomic { tokens[lane] > 0 -> tokens[lane]--; asleep[lane]-- }
           :: else
           fi;
           atomic {                 /* unpark */
               parked[lane]--;
               consumed = 0;
               if
               :: claimed[lane] > 0 -> claimed[lane]--; consumed = 1
               :: else
               fi
           };
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
       :: else
       fi;
       if
       :: got == 1 ->
           running++;
           (running == NS);         /* the op waits for its partner */
           met++
       :: else
       fi
    od
}

init {
    atomic {
        run worker(0);
        run worker(1);
        run submitter()
    }
}

/* Quiescence with an op that never met its partner: a worker was left
 * parked with work it could run. */
active proctype monitor()
{
    timeout -> assert(met == NS)
}
