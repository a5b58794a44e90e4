/*
 * The submit-vs-close handshake (runtime/session.c, runtime/ring.h).
 *
 * Correct protocol: close's linearization point is a fetch_or of CLOSED
 * into the ring tail; a reservation is a CAS on tail that fails once
 * CLOSED is set, so the count below the bit is the final count of accepted
 * ops; every closer waits until `finished` reaches it.
 *
 * -DBROKEN: the naive design, a closed flag beside the tail: a producer
 * checks the flag, then reserves with a CAS on tail alone, and close sets
 * the flag, then reads tail as its final count. A producer that checked
 * before the flag and reserved after the read is accepted but not waited
 * for: close returns while its op is still pending (or the op is accepted
 * after close returned). Spin must find it.
 *
 * Checked: no op is accepted after a close returned; when close returns,
 * every accepted op has completed; no op runs twice; at quiescence every
 * accepted op has completed (no op lost). Memory model: sequentially
 * consistent; every Spin statement is one atomic step, as are the RMWs in
 * the code (fetch_or, CAS).
 */
#define NPROD 2
#define NOPS 2                 /* per producer */
#define TOTAL (NPROD * NOPS)
#define CLOSED 128

byte tail = 0;                 /* count | CLOSED */
bool closed_flag = 0;          /* BROKEN only */
bool pub[TOTAL + 1];           /* +1: the guard reads pub[head] at head == TOTAL */
byte ran[TOTAL + 1];
byte head = 0;
byte finished = 0;
bool close_returned = 0;
byte accepted = 0;
byte producers_done = 0;

proctype producer()
{
    byte i, t, c;
    for (i : 1 .. NOPS) {
#ifndef BROKEN
        /* accel__ring_reserve: load, then CAS that fails once CLOSED */
retry:  t = tail;
        if
        :: (t & CLOSED) -> goto rejected
        :: else
        fi;
        atomic {
            if
            :: tail == t -> tail = t + 1
            :: else -> goto retry
            fi
        }
#else
        if
        :: closed_flag -> goto rejected
        :: else
        fi;
retry:  t = tail;
        atomic {
            if
            :: tail == t -> tail = t + 1
            :: else -> goto retry
            fi
        }
#endif
        assert(!close_returned);   /* nothing accepted after close returned */
        accepted++;
        pub[t] = 1;                /* [R1] publish */
        goto next;
rejected:
        skip;
next:
        skip
    }
    producers_done++
}

/* The session's single consumer (whoever holds SCHEDULED). */
proctype worker()
{
end:
    do
    :: atomic { head < TOTAL && pub[head] ->
           assert(ran[head] == 0);
           ran[head]++ };
       head++;
       finished++                  /* [R5] after the done callback */
    od
}

proctype closer()
{
    byte final;
#ifndef BROKEN
    atomic { final = tail & ~CLOSED; tail = tail | CLOSED }   /* LP */
#else
    closed_flag = 1;
    final = tail
#endif
    (finished >= final);           /* [A5] wait */
    /* every op accepted before the LP has completed */
    byte k = 0;
    do
    :: k < TOTAL -> assert(!pub[k] || ran[k] == 1); k++
    :: else -> break
    od;
    close_returned = 1;
    assert(accepted == final)      /* nothing accepted beyond the final count */
}

init {
    atomic {
        run producer(); run producer();
        run worker();
        run closer();
        run closer()               /* close is idempotent, many threads */
    }
}

/* At quiescence nothing accepted is lost. */
active proctype monitor()
{
    timeout -> assert(finished == accepted && producers_done == NPROD)
}
