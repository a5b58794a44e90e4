package accel

// Combining single asynchronous submits (SubmitAsync). A group is one C op
// whose record carries up to groupMax Go ops (SubmitAsyncBatch sends such
// groups too). A session's most recent group may stay *open*: a
// SubmitAsync that finds it open appends its op to it with one CAS, with
// no crossing into C and no ring slot, instead of submitting an op of its
// own. The worker that takes the group seals it (no append after that)
// and runs the ops appended before the seal in append order.
//
// The order a separate submit would give is kept by one rule: a group is
// appendable only while no op submitted after it to the session has
// returned from its submit. Each group is the op of the SubmitAsync that
// created it; v.open names the group and is written by three parties:
//
//   - the creator claims v.open with its group *pending* (a flag in the
//     token) before its C submit, and publishes it (pending cleared) after
//     the submit; only a published group is appended to, so an append
//     always lands in a group already in C's queue;
//   - a creator that finds another creator's group pending withdraws it
//     (v.open back to 0, so that publication fails) before it claims;
//   - every other submit on the session (Submit, SubmitBatch,
//     SubmitAsyncBatch, a creator whose publication failed) closes the
//     group v.open names after its own C submit and before it returns
//     (postClose).
//
// So when a submit X returns, the group v.open named after X's C submit
// is closed (or never published), and any group claimed since was claimed
// after that, so submitted to C behind X (a group is in v.open from before
// its C submit). A SubmitAsync that starts after X returned loads v.open
// then, so it can append only to a group behind X: an op is never placed
// before one whose submit returned before its own began (a causally
// earlier one). A group v.open no longer names is reached only by
// appenders that loaded v.open before it was replaced, so that started
// before the replacing submit returned: concurrent with it, they may land
// on either side, as separate submits would.
//
// Records are reused, so a token names a group by record index and the
// record's group generation (gen, bumped at each use as a combining
// group); an append is a CAS on the group's word (in the record) that
// also checks gen. A stale token would match again only after 2^32 reuses
// of its record between an appender's load of v.open and its CAS.

// #include "shim.h"
import "C"

import (
	"runtime"
	"time"
)

const groupMax = 32 // ops per group (SubmitAsyncBatch's group size too)

// Group word: gen<<32 | grpClosed | count of ops reserved.
const (
	grpCount  = 0x3f      // ops reserved, 0..groupMax
	grpClosed = 1 << 8    // sealed: no more appends (the worker, a closer)
	grpGenSh  = 32        // generation in the high 32 bits
	openPend  = uint64(1) // v.open token bit: claimed, not yet published
)

// groupOp is one Go op of a group: f, and its completion (cb for an
// appended op; nil when the record's gdone reports).
type groupOp struct {
	f  func(*Session) error
	cb func(error)
}

// asyncGroup holds a group's ops after the first (a batch's: all of
// them). Allocated the first time its record needs it and kept with the
// record (records are never freed).
type asyncGroup struct {
	ops [groupMax]groupOp
}

// tryAppend appends f/done to v's open group; false: no open group with
// room for one more op (the caller creates one).
func (v *VMSession) tryAppend(f func(*Session) error, done func(error)) bool {
	// Acquire: pairs with the creator's publishing CAS; only the token's
	// bits are used (the group's state is read through its word).
	o := v.open.Load()
	if o == 0 || o&openPend != 0 {
		return false
	}
	r := recOfToken(o)
	gen := o >> grpGenSh
	max := uint64(v.groupCap.Load())
	for {
		w := r.gword.Load()
		if w>>grpGenSh != gen || w&grpClosed != 0 || w&grpCount >= max {
			return false
		}
		// LP of the append: reserves op k of this generation of the
		// group. Pairs with the sealer's CAS (same word, one total order):
		// a reservation before the seal is counted in what the sealer
		// runs, one after it fails here.
		if r.gword.CompareAndSwap(w, w+1) {
			k := w & grpCount // >= 1: op 0 is the creator's, the record's own
			groupOf(r).ops[k] = groupOp{f: f, cb: done}
			// Release: publishes ops[k] to the sealer's acquire load of
			// gcommitted (sealGroup).
			r.gcommitted.Add(1)
			return true
		}
	}
}

// submitGroup submits f/done as a new combining group of one op, which
// later SubmitAsyncs on v can append to. Returns the C status.
func (v *VMSession) submitGroup(f func(*Session) error, done func(error)) int {
	r := allocRec()
	// The record was freed sealed (every use of a group ends sealed), so
	// no appender can CAS its word until this Store gives it a new gen.
	gen := r.gword.Load()>>grpGenSh + 1
	if gen == 1<<32 {
		gen = 1 // tokens never carry gen 0: a fresh record's word is 0
	}
	// The word opens this generation with one op, committed: op 0,
	// the record's own op, which the fill writes. Both are ordered before
	// the claim's CAS below, which (with the publication) makes the token
	// visible to appenders: their acquire load of v.open, then of the
	// word, sees them.
	r.gcommitted.Store(1)
	r.gword.Store(gen<<grpGenSh | 1)
	r.fillGroup(v, f, done, nil, 0)
	tok := r.token(gen)
	for {
		o := v.open.Load()
		if o&openPend != 0 {
			// Withdraw another creator's pending group: its publication
			// (CAS from its pending token) fails, so it is never appended
			// to, and that creator closes what v.open names after it.
			v.open.CompareAndSwap(o, 0)
			continue
		}
		// Claim: from here until our publication, a creator withdraws us
		// and any other submit closes us after its C submit.
		if v.open.CompareAndSwap(o, tok|openPend) {
			break
		}
	}
	// The group the claim replaced is left as it is: no appender finds
	// it in v.open any more, and one that loaded it before the claim
	// started its SubmitAsync before ours returns (concurrent with ours:
	// either order is right). Sealing it here would cost a line the
	// worker wrote.
	rc := v.submitRec(r)
	if rc != C.ACCEL_OK {
		// Never queued and never published: no appender reached it.
		v.open.CompareAndSwap(tok|openPend, 0)
		r.gword.Store(gen<<grpGenSh | grpClosed)
		r.reset()
		freeRec(r)
		return rc
	}
	// Publish (pending -> open); release: pairs with tryAppend's acquire
	// load of v.open. It succeeds only if no creator withdrew the claim,
	// so no group claimed after ours exists; a plain submit that ran
	// meanwhile closed the group (its word), which the appenders check.
	if !v.open.CompareAndSwap(tok|openPend, tok) {
		// Withdrawn: another creator's group may have been submitted
		// before ours; close it as any other submit would.
		v.postClose()
	}
	return rc
}

// postClose closes the group v.open names: called by every submit that is
// not an append, after its C submit and before it returns, so that no
// later append lands before its ops (the rule at the top of this file).
func (v *VMSession) postClose() {
	if o := v.open.Load(); o != 0 {
		closeGroup(o)
	}
}

// closeGroup seals the group of token o, if that generation is still
// unsealed.
func closeGroup(o uint64) {
	r := recOfToken(o)
	gen := o >> grpGenSh
	for {
		w := r.gword.Load()
		if w>>grpGenSh != gen || w&grpClosed != 0 {
			return
		}
		// Pairs with the appenders' reserving CAS: after this, none
		// succeeds on this generation.
		if r.gword.CompareAndSwap(w, w|grpClosed) {
			return
		}
	}
}

// sealedGroup sets r's word for a group of k ops written before its C
// submit, sealed from the start (same gen: no token names this use):
// nothing appends to a batch's group (SubmitAsyncBatch).
func sealedGroup(r *opRec, k int) {
	r.gcommitted.Store(uint32(k))
	r.gword.Store(r.gword.Load()&^(1<<grpGenSh-1) | grpClosed | uint64(k))
}

// sealGroup closes r's group to appends and returns how many ops it
// holds, once all of them are written. Called by whoever takes the group
// from C (the worker, or the completion of a canceled group).
func sealGroup(r *opRec) int {
	var w uint64
	for {
		w = r.gword.Load()
		if w&grpClosed != 0 {
			break
		}
		// LP of the seal: the reservations before it are the group.
		if r.gword.CompareAndSwap(w, w|grpClosed) {
			break
		}
	}
	n := uint32(w & grpCount)
	// Acquire: pairs with each appender's gcommitted.Add, so the ops are
	// written before we read them. The wait is bounded: an appender sits
	// between its reserving CAS and its commit for a few stores only (and
	// once per record, the holder's allocation); we yield in case it was
	// preempted there and shares our P.
	for i := 0; r.gcommitted.Load() != n; i++ {
		if i >= 64 {
			runtime.Gosched()
		}
	}
	return int(n)
}

// adaptCap sets how many ops v's next groups may take from the last
// group's measured time (n ops in d): as many as fit in half of ShortOp,
// at most rt.groupCap, at least 1 (no combining). A group is one op to the
// scheduler, which classes a session as short or long by its recent op
// cost and ends a visit by the predicted cost: combining long ops would
// move the session off the short lane and make visits overrun the
// quantum, so only ops far below ShortOp are combined.
func (v *VMSession) adaptCap(n int, d time.Duration) {
	if n == 0 {
		return
	}
	c := v.rt.groupCap
	if per := int64(d) / int64(n); per > 0 {
		if m := v.rt.shortNs / 2 / per; m < int64(c) {
			c = int32(m)
			if c < 1 {
				c = 1
			}
		}
	}
	if v.groupCap.Load() != c { // written only when it changes: a shared line
		v.groupCap.Store(c)
	}
}
