/*
 * The one-RMW submit handshake (runtime/ring.h, runtime/submit.c,
 * runtime/visit.c): the runnable claim lives in the ring's tail word, so
 * a submit's reservation CAS is also its kick.
 *
 * Tail word: {pos, SCHED} (and CLOSED, modelled in close.pml).
 *   SCHED  the session is queued, held by a consumer, or deferred.
 *          Invariant: SCHED clear => every reserved position was consumed
 *          (head == pos).
 * defer: a word of its own on a read-mostly line: 0, or head + 1 of a
 *   consumer that left while the slot at head was reserved but not yet
 *   published; the producer that clears it owns the session.
 *
 * Producer: one CAS: pos += 1, SCHED = 1 (prev read). Publish the slot.
 *   SCHED was clear: it owns the session: enqueue, wake a worker.
 *   SCHED was set: fence_hot; load defer; if non-zero, exchange it with 0;
 *   if that read non-zero, it owns the session: enqueue. (The exchange
 *   happens only when a consumer deferred: the common submit is one locked
 *   RMW, the CAS.)
 * Consumer (the holder), at the end of a visit, its position h:
 *   pos == h: CAS {h, SCHED} -> {h, 0}: idle. (A failed CAS means a
 *     producer reserved in between: look again.)
 *   pos > h, slot h published: go on taking.
 *   pos > h, slot h unpublished: store defer = h + 1; fence_cold; look at
 *     the slot again: still unpublished -> leave (the session stays SCHED
 *     with defer set, in no queue); published -> CAS defer h + 1 -> 0:
 *     success -> still the holder, go on at h; failure -> a producer owns
 *     the session now, leave.
 * The consumer never waits on an unpublished slot, producers never wait
 * on each other. The store->load pairs (producer: publish, load defer;
 * consumer: store defer, load the slot) are the asymmetric fence pair of
 * futex.h, modelled as sequentially consistent (Spin's own model). Worker
 * parking: parker reads park_seq, idle++, fence, picks again,
 * futex_wait(park_seq, seq); waker enqueues, fence, if idle: park_seq++. A visit works on its own copy h of head,
 * as the code does.
 *
 * -DBROKEN_NODEFER: a producer that finds SCHED set never looks at defer
 *  (the plain "one RMW and done"): a consumer that left at its unpublished
 *  slot strands the op. Spin must find it.
 * -DBROKEN_ABA: the consumer takes a deferral back with an exchange (any
 *  value): by then a producer may have claimed its deferral, another
 *  consumer run and deferred again at a later head, and the first consumer
 *  resumes at its stale head: ops run twice. Hence defer holds head + 1
 *  and the take-back is a CAS of that value. Spin must find it.
 * -DBROKEN_NORECHECK: the consumer sets defer and leaves without looking
 *  at the slot again: a producer that published and looked at defer just
 *  before it was set strands its op. Spin must find it.
 *
 * -DBROKEN_PARK: the parker sleeps without picking again after announcing
 *  itself: an enqueue between its last pick and its announcement is never
 *  run (lost wake-up). Spin must find it.
 *
 * Checked: never two consumers at once; no op run twice; SCHED clear only
 * with everything reserved consumed; at quiescence (Spin's timeout) every
 * reserved op has run and the session is neither claimed nor deferred: no
 * lost wake-up.
 */
#ifndef NPROD
#define NPROD 2
#endif
#ifndef NOPS
#define NOPS 1
#endif
#define TOTAL (NPROD * NOPS)
#define NWORK 2

byte pos = 0;                  /* the tail word: pos, SCHED */
bit sched = 0;
byte defer = 0;                /* 0, or the deferring consumer's head + 1 */
bool pub[TOTAL + 1];           /* +1: reads of pub[head] at head == TOTAL */
byte ran[TOTAL + 1];
byte head = 0;
chan q = [1] of { bit };       /* the scheduler: the session at most once */
byte consumers = 0;
byte idle = 0;
byte park_seq = 0;
byte produced = 0;

inline wake_one() {
    if
    :: idle > 0 -> park_seq++
    :: else
    fi
}

proctype producer()
{
    byte i, t;
    bit prev, d;
    for (i : 1 .. NOPS) {
        atomic {                           /* the reservation CAS */
            t = pos; pos++;
            prev = sched; sched = 1;
            assert(prev == 1 || head == t) /* SCHED clear => all consumed */
        };
        pub[t] = 1;                        /* [R1] publish */
        if
        :: prev == 0 -> q!1; wake_one()    /* owner: enqueue */
        :: else ->
#ifndef BROKEN_NODEFER
            /* fence_hot; load the tail word */
            if
            :: defer != 0 ->
                atomic { d = (defer != 0); defer = 0 };   /* claim: exchange */
                if
                :: d -> q!1; wake_one()
                :: else
                fi
            :: else
            fi
#else
            skip
#endif
        fi;
        produced++
    }
}

proctype worker()
{
    byte seq, h;
    bit got, d, cleared, dummy;
end_top:
    do
    :: atomic {
           if
           :: nempty(q) -> q?dummy; got = 1
           :: empty(q) -> got = 0
           fi
       };
       if
       :: got == 0 ->
           /* park(): Dekker (seq_cst fence / seq_cst push and load) with wake_one, see park.c */
           seq = park_seq;
           idle++;
#ifndef BROKEN_PARK
           atomic {
               if
               :: nempty(q) -> q?dummy; got = 1
               :: empty(q) -> got = 0
               fi
           };
#endif
           if
           :: got == 0 ->
end_park:      (park_seq != seq)
           :: else
           fi;
           idle--
       :: else
       fi;
       if
       :: got == 1 ->
           atomic { assert(consumers == 0); consumers++ };
           h = head;                       /* the visit's own copy */
visit:     do
           :: pub[h] ->                    /* [A1] published: take it */
               assert(ran[h] == 0);
               ran[h]++;
               h++;
               head = h                    /* [R2] */
           :: else -> break
           od;
           /* the end of the visit */
           atomic {                        /* CAS {head,SCHED}->{head,0} */
               if
               :: pos == h -> assert(defer == 0); sched = 0; cleared = 1;
                                 consumers--   /* the clear ends the hold */
               :: else -> cleared = 0
               fi
           };
           if
           :: cleared
           :: else ->
               if
               :: pub[h] -> goto visit     /* published meanwhile */
               :: else ->
                   consumers--;            /* from the store below a
                                              producer may own the session */
                   defer = h + 1;          /* store; fence_cold */
#ifndef BROKEN_NORECHECK
                   if
                   :: pub[h] ->
#ifndef BROKEN_ABA
                       /* take back OUR deferral only: CAS h+1 -> 0 */
                       atomic { d = (defer == h + 1);
                                if :: d -> defer = 0 :: else fi };
#else
                       /* take back any deferral: exchange */
                       atomic { d = (defer != 0); defer = 0 };
#endif
                       if
                       :: d -> atomic { assert(consumers == 0); consumers++ };
                               goto visit
                       :: else         /* a producer owns it now */
                       fi
                   :: else
                   fi
#endif
               fi
           fi
       :: else
       fi
    od
}

init {
    byte n;
    atomic {
        for (n : 1 .. NPROD) { run producer() };
        for (n : 1 .. NWORK) { run worker() }
    }
}

/* Quiescence with a reserved op not run, or a session still claimed, is a
 * lost wake-up. */
active proctype monitor()
{
    timeout -> assert(produced == TOTAL && head == TOTAL && sched == 0 &&
                      defer == 0)
}
