/*
 * The cancel-vs-take handshake on a ring slot's seq word (runtime/ring.h,
 * "EX slots"; runtime/cancel.c; runtime/visit.c).
 *
 * One slot (capacity 1), so every op reuses it: op p is published with
 * seq = (p+1)|EX once the consumer has taken op p-1. A canceller per op
 * holds its ticket (position p) from publication on and tries to cancel
 * at any moment, also long after its op finished and the slot holds a
 * later op. The consumer claims each op with a fetch_or of TAKEN, then
 * frees the slot (head++), then runs it, or lets it expire (a deadline
 * passed: chosen nondeterministically), or completes it as canceled if
 * the fetch_or found CANCELED.
 *
 * Correct protocol: cancel is one CAS from exactly (p+1)|EX to
 * (p+1)|EX|CANCELED.
 * -DBROKEN_SPLIT: cancel checks seq, then sets CANCELED in a second step
 *   (check-then-act): the consumer can claim in between, and an op whose
 *   cancel said OK runs.
 * -DBROKEN_NOPOS: cancel compares only the flags, not the position (no
 *   generation check): a stale ticket cancels a later op of the same slot.
 * Spin must reject both.
 *
 * Checked: every op's done runs exactly once; a cancel said OK exactly
 * for the ops completed as canceled, and such an op never ran; an op
 * that ran was claimed by the consumer. Memory model: sequentially
 * consistent; every Spin statement is one atomic step, as are the RMWs in
 * the code (CAS, fetch_or).
 */
#define N 3          /* ops, all through the one slot */
#define POS 15       /* position bits of seq (p+1) */
#define EX 16
#define TAKEN 32
#define CANCELED 64

#define ST_NONE 0
#define ST_OK 1
#define ST_EXPIRED 2
#define ST_CANCELED 3

byte seq = 0;
byte head = 0;
bool published[N];
byte ran[N];
byte done[N];
byte status[N];
bool cancel_ok[N];
byte finished = 0;

proctype producer()
{
    byte p;
    for (p : 0 .. N - 1) {
        (head >= p);                        /* room: op p-1 was taken ([A2]) */
        atomic { seq = (p + 1) | EX;        /* [R1] publish_ex */
                 published[p] = 1 }         /* submit returns the ticket */
    }
}

proctype canceller(byte p)
{
    published[p];                           /* holds the ticket from here */
#if defined(BROKEN_SPLIT)
    if
    :: seq == ((p + 1) | EX) ->             /* check ... */
       seq = seq | CANCELED;                /* ... then act: not atomic */
       cancel_ok[p] = 1
    :: else -> skip
    fi
#elif defined(BROKEN_NOPOS)
    atomic {
        if
        :: (seq & ~POS) == EX -> seq = seq | CANCELED; cancel_ok[p] = 1
        :: else -> skip
        fi
    }
#else
    atomic {                                /* LP: the CAS */
        if
        :: seq == ((p + 1) | EX) -> seq = seq | CANCELED; cancel_ok[p] = 1
        :: else -> skip                     /* ACCEL_EALREADY */
        fi
    }
#endif
}

/* The session's single consumer. */
proctype worker()
{
    byte p, prev;
    for (p : 0 .. N - 1) {
        ((seq & POS) == p + 1);             /* [A1] ready: position bits only */
        atomic { prev = seq; seq = seq | TAKEN };   /* LP of take: fetch_or */
        head++;                             /* [R2] the slot may be reused */
        if
        :: (prev & CANCELED) -> status[p] = ST_CANCELED
        :: else ->
           if
           :: status[p] = ST_EXPIRED        /* its deadline had passed */
           :: assert(!cancel_ok[p]); ran[p]++; status[p] = ST_OK
           fi
        fi;
        done[p]++;
        finished++
    }
}

init {
    atomic {
        run producer();
        run worker();
        run canceller(0); run canceller(1); run canceller(2)
    }
}

/* At quiescence: exactly once, and cancel's word is kept. */
active proctype monitor()
{
    byte p;
    timeout ->
    assert(finished == N);
    for (p : 0 .. N - 1) {
        assert(done[p] == 1);
        assert(cancel_ok[p] == (status[p] == ST_CANCELED));
        assert(ran[p] == (status[p] == ST_OK))
    }
}
