/*
 * The session state word and worker parking (runtime/session.h,
 * runtime/worker.c): idle -> queued -> running -> idle.
 *
 * Producer: reserve a slot, publish it ([R1]), fetch_or SCHEDULED ([RMW1]);
 * if the bit was clear, enqueue the session and wake one parked worker.
 * Worker: pick a session, drain its published slots in order (it is the
 * only consumer while it holds SCHEDULED), then fetch_and SCHEDULED away
 * ([RMW2]) and re-check the ring: if a slot appeared, fetch_or the bit
 * back and, if it was clear, re-enqueue.
 * Parking (asymmetric Dekker): parker reads park_seq, idle_workers++,
 * fence, picks again, futex_wait(park_seq, seq); waker enqueues, fence,
 * if idle_workers: park_seq++ and wake. The membarrier/compiler-barrier
 * fence pair is modelled as sequentially consistent (Spin's own model).
 *
 * -DBROKEN_RECHECK: the worker clears SCHEDULED without re-checking the
 *  ring: a producer that published before the clear but read the bit set
 *  strands its op (lost wake-up). Spin must find it.
 * -DBROKEN_PARK: the parker sleeps without picking again after announcing
 *  itself: an enqueue between its last pick and its announcement is never
 *  run (lost wake-up). Spin must find it.
 *
 * Checked: never two consumers of the session at once, no op run twice,
 * and at quiescence (Spin's timeout: nothing can move) every published op
 * has run: no lost wake-up.
 */
#ifndef NPROD
#define NPROD 2
#endif
#ifndef NOPS
#define NOPS 1                 /* per producer; -DNOPS=2: ~80M states */
#endif
#define TOTAL (NPROD * NOPS)
#define NWORK 2

byte tail = 0;
bool pub[TOTAL + 1];           /* +1: the guard reads pub[head] at head == TOTAL */
byte ran[TOTAL + 1];
byte head = 0;
bit sched_bit = 0;             /* SCHEDULED */
chan q = [1] of { bit };       /* the scheduler: the session at most once */
byte consumers = 0;
byte idle = 0;
byte park_seq = 0;
byte produced = 0;

inline wake_one() {
    /* accel__runtime_wake_one: fence_hot; if (idle_workers) bump + wake */
    if
    :: idle > 0 -> park_seq++
    :: else
    fi
}

proctype producer()
{
    byte i, t;
    bit prev;
    for (i : 1 .. NOPS) {
        atomic { t = tail; tail++ };      /* reservation CAS */
        pub[t] = 1;                        /* [R1] */
        atomic { prev = sched_bit; sched_bit = 1 };   /* [RMW1] */
        if
        :: prev == 0 -> q!1; wake_one()
        :: else
        fi;
        produced++
    }
}

proctype worker()
{
    byte seq;
    bit got, prev, dummy;
end_top:
    do
    :: /* accel__sched_pick: non-blocking */
       atomic {
           if
           :: nempty(q) -> q?dummy; got = 1
           :: empty(q) -> got = 0
           fi
       };
       if
       :: got == 0 ->
           /* park() */
           seq = park_seq;
           idle++;
           /* accel__fence_cold / fence_hot pair: SC here */
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
end_park:      (park_seq != seq)          /* futex_wait(park_seq, seq) */
           :: else
           fi;
           idle--
       :: else
       fi;
       if
       :: got == 1 ->
           /* run_visit: the only consumer */
           atomic { assert(consumers == 0); consumers++ };
           do
           :: head < TOTAL && pub[head] ->      /* [A1] ring_ready */
               assert(ran[head] == 0);
               ran[head]++;
               head++
           :: else -> break
           od;
           consumers--;
           sched_bit = 0;                      /* [RMW2] fetch_and */
#ifndef BROKEN_RECHECK
           if
           :: head < TOTAL && pub[head] ->      /* re-check the ring */
               atomic { prev = sched_bit; sched_bit = 1 };
               if
               :: prev == 0 -> q!1              /* re-queue, keep going */
               :: else
               fi
           :: else
           fi
#endif
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

/* Quiescence with a published op not run is a lost wake-up. */
active proctype monitor()
{
    timeout -> assert(produced == TOTAL && head == TOTAL)
}
