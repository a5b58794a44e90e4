/*
 * Combining SubmitAsyncs into groups (bindings/go/combine.go; the group's
 * run in callback.go runGroup/sealGroup; the record fields in oprec.go;
 * the callers in async.go and vmsession.go).
 *
 * The protocol as the code has it.
 *  - A group is one C op (one record, one ring slot) carrying up to
 *    groupCap Go ops. Its word, in the record: gen<<32 | closed | count
 *    (ops reserved); beside it gcommitted (ops written). Op 0 is
 *    the creator's op (the record's own f); appends take ops 1...
 *  - v.open names the session's open group: a token gen<<32 | idx<<1 |
 *    pend. gen is the record's group generation, bumped at each use of
 *    the record as a combining group and wrapping at 2^32 to 1 (never 0:
 *    a fresh record's word is 0). Records are reused (a free stack shared
 *    by every session), so only gen tells two uses of a record apart.
 *  - Append (tryAppend, the SubmitAsync fast path): load v.open; give up
 *    if 0 or pend. Then CAS the named record's word from w to w+1 if
 *    w's gen equals the token's, closed is clear and count < groupCap
 *    (the LP: k = count); write ops[k]; gcommitted += 1; return.
 *  - Create (submitGroup, when the append gave up): alloc a record, gen =
 *    old gen + 1 (2^32 -> 1), store gcommitted = 1 and the word gen|1
 *    with op 0 filled; claim v.open with tok|pend (a creator that finds
 *    another's pending token withdraws it first: CAS to 0); C submit; on
 *    failure CAS v.open back to 0, store gen|closed, free; on success
 *    publish (CAS tok|pend -> tok); if that CAS fails (withdrawn), close
 *    the group v.open names as any other submit does (postClose).
 *  - Seal, by whoever takes the group from C: runGroup's sealGroup on the
 *    worker, goAccelUnrun's for a group C completes unrun: one CAS sets
 *    closed and reads count (n), then wait until gcommitted == n, then
 *    run ops 0..n-1 in order, clear them, reset and free the record.
 *  - Close (postClose: load v.open; if not 0, CAS its record's word to
 *    closed if that gen is still there and unsealed), after the caller's
 *    own C submit, before it returns: SubmitAsync with combining off
 *    (async.go), SubmitAsyncBatch (if a group was queued), SubmitBatch
 *    (if an op was queued), Submit (after enqueue, before the wait; and
 *    submitOwn's defer when f ran on the caller and Goexit'ed), the
 *    withdrawn creator (combine.go), Close and closeCancelForTest (after
 *    the closed flag, before the C close). SubmitAsyncBatch's own groups
 *    are sealed from the start (sealedGroup); every use of a record as a
 *    group ends sealed, so a record reused as a plain op keeps a closed
 *    word.
 *  - What must hold: every accepted op (its append's CAS or its C submit
 *    succeeded) runs exactly once, a refused one never; FIFO per session
 *    in real time: an op whose submit returned before another's began
 *    runs before it; an op C-submitted after another's LP (an append's
 *    CAS, a C submit) runs after it; the ops of a group run in index
 *    order, which is their CAS order (index = count at the CAS); an
 *    append lands only in the use of the record its token named, before
 *    that group's count is read by its sealer, and in a group already in
 *    C's queue (so never in one whose C submit may still fail).
 *
 * The model: appender processes 0, 1, 2 doing NOPS0, NOPS1, NOPS2
 * SubmitAsyncs (default 2 + 1; each a tryAppend, then submitGroup if it
 * gave up); one plain submitter (C submit of one op, then postClose, then
 * return: SubmitAsyncBatch, or SubmitAsync with combining off; Submit
 * does the same, then waits for its op, which only orders more); one
 * worker (the session's single consumer; C's queue is a FIFO channel of
 * QCAP, a full queue fails the C submit). NREC records; an allocation
 * picks any free one (the free stack is shared with other sessions: any
 * reuse order) and waits while none is (Go's stack grows instead: a
 * fresh record, gen 0, is one more record no token names). groupCap is
 * GMAX. The generation has GENBITS bits and
 * wraps as in the code (2^GENBITS -> 1), so a token loaded before
 * 2^GENBITS - 1 reuses of its record matches again: with one record and
 * 2 bits, -DNOPS0=1 -DNOPS1=3 verifies and -DNOPS1=4 is rejected (the
 * wrap window; the code's 32 bits need 2^32 - 1 reuses of one record as
 * a group between one appender's load of v.open and its CAS).
 *
 * Checked (assertions): at the append's CAS, !stale[p] (the record was
 * not reused since the token's claim), !gsealed[r], gq[r]; at each op's
 * run, its op was written (x != 0), it did not run before, it was
 * accepted, and (pre[x] & ~ran) == 0: every op in pre[x] ran before it.
 * pre[x] is, for an appended op, the ops that had returned (and not yet
 * run) when it began; for a C-submitted op, the ops whose LP came before
 * its C submit (a superset: an op returns after its LP). At quiescence
 * (monitor): ran == lp (every accepted op ran, no other), every
 * submitter returned, every record free.
 * Memory model: sequentially consistent (Go's atomics are). A CAS loop on
 * one word whose values do not repeat (the group word within a
 * generation, v.open within the wrap) is one atomic step: load and CAS
 * back to back; a failed CAS only retries. The appender's load of v.open
 * and its CAS on the word are separate steps, and so are postClose's load
 * and its CAS, the claim and the withdraw, the C submit and the publish,
 * the worker's take and its seal, and an append's CAS and its commit. A
 * submit's start is folded into its first step and its return into its
 * last (the strongest form of the real-time check). Ghosts: gsealed,
 * gq, open_stale/ldrec/stale, lp, retok, ran, pre.
 *
 * Broken variants (each a plausible slip; Spin must reject each):
 *  -DBROKEN_SEAL_SPLIT   the sealer reads count, then sets closed with a
 *                        second RMW: an append in between is lost.
 *  -DBROKEN_NOWAIT       the sealer runs n ops without waiting for
 *                        gcommitted: reads an op not yet written.
 *  -DBROKEN_NOCLOSE      the plain submit does not close the open group:
 *                        a later SubmitAsync joins a group ahead of it.
 *  -DBROKEN_CLOSE_FIRST  the plain submit closes before its C submit: a
 *                        group created in between is ahead and open.
 *  -DBROKEN_WITHDRAWN_NOCLOSE  a creator whose publication failed returns
 *                        without closing: the group that withdrew it is
 *                        ahead of its op and open.
 *  -DBROKEN_PUBLISH_STORE  the creator publishes with a store, also when
 *                        withdrawn: its group, queued ahead of a submit
 *                        that closed the group v.open named then (the
 *                        withdrawer's), becomes appendable.
 *  -DBROKEN_NOPEND       the creator claims v.open published, before its
 *                        C submit: an append lands in a group not queued.
 *  -DBROKEN_NOGEN        the append checks the record, not the
 *                        generation: a stale token joins a later use.
 */
/* SubmitAsyncs of appenders 0, 1, 2 (0: no such appender) */
#ifndef NOPS0
#define NOPS0 2
#endif
#ifndef NOPS1
#define NOPS1 1
#endif
#ifndef NOPS2
#define NOPS2 0
#endif
#define NAPP ((NOPS0 > 0) + (NOPS1 > 0) + (NOPS2 > 0))
#ifndef GENBITS
#define GENBITS 2
#endif
#define GENS (1 << GENBITS)
#ifndef GMAX
#define GMAX 2                 /* groupCap */
#endif
#ifndef QCAP
#define QCAP 2
#endif
#ifndef NREC
#define NREC 2                 /* 1 .. 4 */
#endif
#define TOTAL (NOPS0 + NOPS1 + NOPS2 + 1)
#define PLAINOP TOTAL          /* the plain submit's op */
#define QPLAIN 15              /* its entry in C's queue */
#define BIT(x) (1 << ((x) - 1))

/* v.open token: gen<<3 | rec<<1 | pend (rec < 4, gen < 32) */
#define PEND 1
#define TOK(g, r) (((g) << 3) | ((r) << 1))
#define REC(o) (((o) >> 1) & 3)
#define GEN(o) ((o) >> 3)

byte open = 0;

/* per record: the group word (ggen, gclosed, gcount), gcommitted, ops */
byte ggen[NREC];
bit gclosed[NREC];
byte gcount[NREC];
byte gcommitted[NREC];
byte gops[NREC * GMAX];        /* op id, 0 = empty */
bit rbusy[NREC];               /* allocated */

chan q = [QCAP] of { byte };   /* the session's queue in C */

/* ghosts */
bit gsealed[NREC];             /* the sealer read the record's count */
bit gq[NREC];                  /* C-submitted, not yet freed */
bit open_stale = 0;            /* REC(open) reused as a group since the claim */
byte ldrec[3];                 /* appender p: 1 + the record its token names */
bit stale[3];                  /* and that record was reused since its load */
byte lp = 0;                   /* ops accepted (LP done), a bitmask */
byte retok = 0;                /* accepted ops whose submit returned */
byte ran = 0;                  /* ops run */
byte pre[TOTAL + 1];           /* ops that must run before op x (not yet run) */
byte finished = 0;             /* submitters done */

/* A record allocated for a new group: the tokens naming it go stale. */
inline mark_reuse(r) {
    if
    :: ldrec[0] == r + 1 -> stale[0] = 1
    :: else
    fi;
    if
    :: ldrec[1] == r + 1 -> stale[1] = 1
    :: else
    fi;
    if
    :: ldrec[2] == r + 1 -> stale[2] = 1
    :: else
    fi;
    if
    :: open != 0 && REC(open) == r -> open_stale = 1
    :: else
    fi
}

/* postClose: load v.open, then closeGroup (its CAS loop: one step). The
 * submit of op x returns with the last step if ret. */
inline post_close(o, x, ret) {
    atomic {
        o = open;
        if
        :: o == 0 && ret -> retok = retok | BIT(x)
        :: else
        fi
    }
    if
    :: o != 0 ->
        atomic {
            if
            :: ggen[REC(o)] == GEN(o) && !gclosed[REC(o)] -> gclosed[REC(o)] = 1
            :: else
            fi;
            if
            :: ret -> retok = retok | BIT(x)
            :: else
            fi;
            o = 0
        }
    :: else
    fi
}

#ifdef BROKEN_NOGEN
#define GENOK(r, o) 1
#else
#define GENOK(r, o) (ggen[r] == GEN(o))
#endif

/* SubmitAsync x n: ops base+1 .. base+n */
proctype appender(byte p; byte base; byte n)
{
    byte i, x, o, r, k, g;
    bit ok;
    for (i : 1 .. n) {
        x = base + i;
        /* tryAppend: load v.open; the op begins here (real time) */
        atomic {
            o = open;
            pre[x] = retok & ~ran;
            if
            :: o == 0 || (o & PEND) -> o = 0; goto create
            :: else -> r = REC(o); ldrec[p] = r + 1; stale[p] = open_stale
            fi
        }
        atomic {                                /* the reserving CAS (LP) */
            if
            :: GENOK(r, o) && !gclosed[r] && gcount[r] < GMAX ->
                k = gcount[r];
                gcount[r]++;
                assert(!stale[p]);              /* in the use its token named */
                assert(!gsealed[r]);            /* not yet sealed */
                assert(gq[r]);                  /* already in C's queue */
                lp = lp | BIT(x);
                ldrec[p] = 0; stale[p] = 0; o = 0
            :: else -> ldrec[p] = 0; stale[p] = 0; o = 0; goto create
            fi
        }
        atomic {                                /* ops[k] = op; commit; return */
            gops[r * GMAX + k] = x;
            gcommitted[r]++;
            retok = retok | BIT(x);
            r = 0; k = 0
        }
        goto next;
create:
        /* submitGroup: alloc; gcommitted = 1, word gen|1, op 0 filled */
        atomic {
            if
            :: !rbusy[0] -> r = 0
            :: NREC > 1 && !rbusy[1] -> r = 1
            :: NREC > 2 && !rbusy[2] -> r = 2
            :: NREC > 3 && !rbusy[3] -> r = 3
            fi;
            rbusy[r] = 1;
            mark_reuse(r);
#ifdef BROKEN_PUBLISH_STORE
            ldrec[p] = r + 1;                   /* the staleness of its own token */
#endif
            gsealed[r] = 0;
            g = ggen[r] + 1;
            if
            :: g == GENS -> g = 1               /* the wrap: never 0 */
            :: else
            fi;
            gcommitted[r] = 1;
            ggen[r] = g; gclosed[r] = 0; gcount[r] = 1;
            gops[r * GMAX] = x
        }
#ifndef BROKEN_NOPEND
claim:
        if
        :: atomic { (open & PEND) -> open = 0; open_stale = 0 };   /* withdraw */
           goto claim
        :: atomic { !(open & PEND) -> open = TOK(g, r) | PEND; open_stale = 0 }
        fi;
#else
        atomic { open = TOK(g, r); open_stale = 0 };   /* claimed published */
#endif
        atomic {                                /* C submit (LP) */
            if
            :: nfull(q) -> q!r; gq[r] = 1; pre[x] = lp & ~ran; lp = lp | BIT(x); ok = 1
            :: full(q) -> ok = 0
            fi
        }
        if
        :: !ok ->                               /* refused: never queued */
            atomic {
                if
                :: open == (TOK(g, r) | PEND) -> open = 0; open_stale = 0
#ifdef BROKEN_NOPEND
                :: open == TOK(g, r) -> open = 0; open_stale = 0
#endif
                :: else
                fi
            }
            atomic {                            /* word gen|closed; reset; free */
                gclosed[r] = 1; gcount[r] = 0; gops[r * GMAX] = 0;
                gsealed[r] = 1; rbusy[r] = 0; pre[x] = 0;
                r = 0; g = 0; ldrec[p] = 0; stale[p] = 0
            }
            goto next
        :: else
        fi;
#if defined(BROKEN_NOPEND)
        atomic { retok = retok | BIT(x); r = 0; g = 0; ok = 0 }
#elif defined(BROKEN_PUBLISH_STORE)
        atomic {                                /* publish: a store */
            open = TOK(g, r); open_stale = stale[p];
            retok = retok | BIT(x);
            r = 0; g = 0; ok = 0; ldrec[p] = 0; stale[p] = 0
        }
#else
        atomic {                                /* publish: CAS pend -> open */
            if
            :: open == (TOK(g, r) | PEND) -> open = TOK(g, r); retok = retok | BIT(x)
            :: else -> ok = 0
            fi;
            r = 0; g = 0
        }
        if
        :: !ok ->                               /* withdrawn */
#ifndef BROKEN_WITHDRAWN_NOCLOSE
            post_close(o, x, 1)
#else
            retok = retok | BIT(x)
#endif
        :: else
        fi;
        ok = 0;
#endif
next:
        skip
    }
    finished++
}

/* One op C-submitted, then postClose, then return (async.go's
 * SubmitAsyncBatch, or SubmitAsync with combining off; Submit does these
 * steps, then waits for its op). */
active proctype plain()
{
    byte o;
    bit ok;
#ifdef BROKEN_CLOSE_FIRST
    pre[PLAINOP] = retok & ~ran;                /* it begins */
    post_close(o, PLAINOP, 0);
#endif
    atomic {                                    /* C submit (LP) */
        if
        :: nfull(q) -> q!QPLAIN; pre[PLAINOP] = lp & ~ran; lp = lp | BIT(PLAINOP); ok = 1
        :: full(q) -> pre[PLAINOP] = 0; ok = 0
        fi
    }
    if
    :: ok ->
#if !defined(BROKEN_NOCLOSE) && !defined(BROKEN_CLOSE_FIRST)
        post_close(o, PLAINOP, 1)
#else
        retok = retok | BIT(PLAINOP)
#endif
    :: else
    fi;
    finished++
}

/* Op x runs (the worker). */
inline run_op(x) {
    assert(x != 0);                             /* its op was written */
    assert((ran & BIT(x)) == 0);                /* runs once */
    assert((lp & BIT(x)) != 0);                 /* was accepted */
    assert((pre[x] & ~ran) == 0);               /* FIFO */
    ran = ran | BIT(x);
    pre[x] = 0
}

active proctype worker()
{
    byte m, n, k, x;
end_idle:
    do
    :: q?m ->                                   /* the take */
        if
        :: m == QPLAIN -> atomic { run_op(PLAINOP); m = 0 }
        :: else ->
#ifndef BROKEN_SEAL_SPLIT
            atomic { n = gcount[m]; gclosed[m] = 1; gsealed[m] = 1 }   /* seal (LP) */
#else
            atomic { n = gcount[m]; gsealed[m] = 1 };   /* read the count */
            gclosed[m] = 1;                              /* then seal */
#endif
            atomic {
#ifndef BROKEN_NOWAIT
                gcommitted[m] == n ->                    /* all written */
#endif
                k = 0;
                do
                :: k < n ->
                    x = gops[m * GMAX + k];
                    run_op(x);
                    gops[m * GMAX + k] = 0;
                    k++
                :: else -> break
                od;
                gq[m] = 0; rbusy[m] = 0;                 /* reset, free */
                m = 0; n = 0; k = 0; x = 0
            }
        fi
    od
}

init {
    atomic {
        run appender(0, 0, NOPS0);
        if
        :: NOPS1 > 0 -> run appender(1, NOPS0, NOPS1)
        :: else
        fi;
        if
        :: NOPS2 > 0 -> run appender(2, NOPS0 + NOPS1, NOPS2)
        :: else
        fi
    }
}

/* At quiescence: every accepted op ran (and no refused one), every
 * submitter returned, every record is free. */
active proctype monitor()
{
    timeout -> assert(ran == lp && finished == NAPP + 1 && !rbusy[0] &&
                      (NREC < 2 || !rbusy[1]) && (NREC < 3 || !rbusy[2]) &&
                      (NREC < 4 || !rbusy[3]))
}
