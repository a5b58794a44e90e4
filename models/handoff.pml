/*
 * The one-RMW submit handshake (runtime/ring.h, runtime/submit.c,
 * runtime/worker.c): the runnable claim lives in the ring's tail word, so
 * a submit's reservation CAS is also its kick.
 *
 * Tail word: {pos, SCHED, DEFER} (and CLOSED, modelled in close.pml).
 *   SCHED  the session is queued or held by a consumer. Invariant: SCHED
 *          clear => every reserved position was consumed (head == pos).
 *   DEFER  the consumer left while the slot at head was reserved but not
 *          yet published; that slot's producer (or any producer that sees
 *          DEFER after publishing) claims the session back and enqueues it.
 *
 * Producer: one CAS: pos += 1, SCHED = 1 (prev read). Publish the slot.
 *   SCHED was clear: it owns the session: enqueue, wake a worker.
 *   SCHED was set: fence_hot; load the tail word; if DEFER is set, clear it
 *   with fetch_and; if that RMW cleared it, it owns the session: enqueue.
 *   (The fetch_and happens only when a consumer left a DEFER: the common
 *   submit is one locked RMW, the CAS.)
 * Consumer (the holder of SCHED), after its last take:
 *   pos == head: CAS {head, SCHED} -> {head, 0}: idle. (A failed CAS means
 *     a producer reserved in between: look again.)
 *   pos > head, slot at head published: go on taking.
 *   pos > head, slot at head unpublished: fetch_or DEFER; fence_cold; look
 *     at the slot again: still unpublished -> leave (the session stays
 *     SCHED|DEFER, in no queue); published -> fetch_and DEFER away: it was
 *     still set -> still the owner, go on; a producer had cleared it ->
 *     that producer owns the session now, leave.
 * The consumer never waits on an unpublished slot, producers never wait
 * on each other. The store->load pairs (producer: publish, load DEFER;
 * consumer: set DEFER, load the slot) are the asymmetric fence pair of
 * futex.h, modelled as sequentially consistent (Spin's own model).
 * Worker parking is as in state.pml.
 *
 * -DBROKEN_NODEFER: a producer that finds SCHED set never looks at DEFER
 *  (the plain "one RMW and done"): a consumer that left at its unpublished
 *  slot strands the op. Spin must find it.
 * -DBROKEN_NORECHECK: the consumer sets DEFER and leaves without looking
 *  at the slot again: a producer that published and looked at DEFER just
 *  before it was set strands its op. Spin must find it.
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

byte pos = 0;                  /* the tail word: pos, SCHED, DEFER */
bit sched = 0;
bit defer = 0;
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
            :: defer ->
                atomic { d = defer; defer = 0 };   /* claim */
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
           seq = park_seq;
           idle++;
           atomic {
               if
               :: nempty(q) -> q?dummy; got = 1
               :: empty(q) -> got = 0
               fi
           };
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
visit:     do
           :: pub[head] ->                 /* [A1] published: take it */
               assert(ran[head] == 0);
               ran[head]++;
               head++
           :: else -> break
           od;
           /* the end of the visit */
           atomic {                        /* CAS {head,SCHED}->{head,0} */
               if
               :: pos == head -> assert(defer == 0); sched = 0; cleared = 1;
                                 consumers--   /* the clear ends the hold */
               :: else -> cleared = 0
               fi
           };
           if
           :: cleared
           :: else ->
               if
               :: pub[head] -> goto visit  /* published meanwhile */
               :: else ->
                   h = head;               /* the consumer's own copy */
                   consumers--;            /* from the RMW below a producer
                                              may own the session */
                   defer = 1;              /* fetch_or DEFER; fence_cold */
#ifndef BROKEN_NORECHECK
                   if
                   :: pub[h] ->
                       atomic { d = defer; defer = 0 };
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
