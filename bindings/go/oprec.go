//go:build cgo && linux

package accel

// Op records: what C knows of a Go op is the integer index of its record,
// passed as the op's arg (C never keeps a Go pointer). Records live in
// chunks that are never freed or moved, so an index stays valid for the
// life of the process; free records sit on a lock-free stack (a Treiber
// stack with a 32-bit tag beside the index against ABA). This replaces
// cgo.Handle, whose sync.Map costs more than the whole crossing.
//
// A record's life: Submit pops it, fills f/s and state=queued, and hands
// its index to C. Exactly one of two parties then moves the state on:
//   - the worker (runRec): queued -> running, runs f, then wakes the
//     submitter (sync) or calls the completion (async);
//   - the submitter whose ctx ends first: queued -> canceled, returns
//     ctx.Err() at once; the worker that later pops the op sees canceled
//     and only frees the record. f never runs.
// Whoever touches the record last pushes it back on the free stack.

// #include <stdint.h>
import "C"

import (
	"context"
	"sync"
	"sync/atomic"
)

const (
	recQueued uint32 = iota
	recRunning
	recCanceled
)

const recChunkBits = 10
const recChunkSize = 1 << recChunkBits

// 192 bytes, three cache lines (chunks are page-aligned allocations, so a
// record never straddles more): the first holds everything an async op's
// round trip touches (pop, fill, the worker's run, free), so a record
// moves between the submitter's and the worker's cores as one line.
type opRec struct {
	// ---- line 0: every op
	state   atomic.Uint32
	next    atomic.Uint32 // free-stack link: index+1 of the next free record, 0 = none
	idx     uint32
	sync    bool // a synchronous Submit waits on wch
	grouped bool // a group (combine.go): f/cb its first op (nil in a batch's), grp the rest
	inline  bool // a synchronous Submit's op run by its submitter (runOwn): wake does not send
	bitem   bool // a Batcher's item (batch.go): bt and item say which
	vs      *VMSession
	f       func(*Session) error
	cb      func(error) // async completion; nil for a synchronous Submit
	// grp: the ops of a group other than f (SubmitAsyncBatch: all), run
	// by one crossing; allocated at the record's first need and kept.
	grp atomic.Pointer[asyncGroup]
	// A group's word (gen<<32 | grpClosed | ops reserved) and how many of
	// its ops are written (combine.go): in this line, so that a group of
	// one op moves between the cores as one line, as a plain op does.
	gword      atomic.Uint64
	gcommitted atomic.Uint32
	// ---- line 1: synchronous and batch ops
	batch *batchWait       // batch Submit: counts the ops still out
	gdone func(int, error) // SubmitAsyncBatch: completion of each op of the group
	gbase int              // index of the group's first op in the caller's slice
	gn    int              // ops of the group being run (sealed count)
	gok   uint64           // a group's ops completed, not yet in the session's counters
	gbad  uint64           // and failed
	bidx  int              // index of this op in its batch
	err   error
	wch   chan struct{} // cap 1: the worker's "done" to a waiting Submit; made once per record
	// The op's ctx (Submit, SubmitBatch) and its Done channel: the worker
	// does not start f once it is closed.
	ctx   context.Context
	cdone <-chan struct{}
	// A Batcher's item (bitem): its Batcher and the item.
	bt   *batchCore
	item any
	// Three whole lines exactly (TestOpRecLayout): no padding field (a
	// zero-size last field would add a word).
}

// The fields of a record are read and written through the methods below
// everywhere but here, except those one file alone uses: the group word
// and gcommitted (combine.go, the group protocol) and gn, gok and gbad
// (callback.go, a group's run). A use of a record is: allocRec, one fill
// (fillSync, fillAsync, fillBatchOp, fillGroup), the hand-over to C by
// arg, the worker's take (or the submitter's cancel), and reset before
// the record is freed.

// reset returns r to the state allocRec hands a record out in: every
// field of a use cleared, so that the record keeps nothing of it alive
// and the next fill starts from zero. What carries over uses stays: idx
// and next (the slab's), state (each fill sets it), the group word and
// gcommitted (the generation, combine.go), wch (made once per record) and
// the group holder, whose op entries whoever ended each op has cleared.
func (r *opRec) reset() {
	r.vs, r.f, r.cb, r.batch, r.gdone, r.err = nil, nil, nil, nil, nil, nil
	r.ctx, r.cdone = nil, nil
	r.bt, r.item = nil, nil
	r.sync, r.grouped, r.inline, r.bitem = false, false, false, false
	r.gbase, r.gn, r.gok, r.gbad, r.bidx = 0, 0, 0, 0, 0
}

// ---- Naming a record without a Go pointer: to C, as its op's arg (C
// hands it back in a visit's recs and to the trampolines: shim.c), and in
// a session's open-group token (combine.go).

// arg is r as the arg of its C op.
func (r *opRec) arg() C.uintptr_t { return C.uintptr_t(r.idx) }

// recOf is the record whose arg C handed back.
func recOf(arg C.uintptr_t) *opRec { return recAt(uint32(arg)) }

// token names generation gen of r's group in v.open (openPend clear).
func (r *opRec) token(gen uint64) uint64 { return gen<<grpGenSh | uint64(r.idx)<<1 }

// recOfToken is the record an open-group token names.
func recOfToken(o uint64) *opRec { return recAt(uint32(o) >> 1) }

// ---- Fills: each sets what one kind of submit needs, the record queued
// last.

// fillSync fills r for a synchronous Submit of f on v; ctx is kept only
// if it can end (done non-nil).
func (r *opRec) fillSync(v *VMSession, f func(*Session) error, ctx context.Context, done <-chan struct{}) {
	r.vs, r.f, r.sync = v, f, true
	if done != nil {
		r.ctx, r.cdone = ctx, done
	}
	if r.wch == nil {
		r.wch = make(chan struct{}, 1)
	}
	r.state.Store(recQueued)
}

// fillItem fills r for item of Batcher b on v: a synchronous Submit's
// (cb nil: the submitter waits on wch; ctx kept only if it can end) or
// an async one's (cb its completion, not nil).
func (r *opRec) fillItem(v *VMSession, b *batchCore, item any, cb func(error), ctx context.Context, done <-chan struct{}) {
	r.vs, r.bt, r.item, r.bitem, r.cb = v, b, item, true, cb
	if cb == nil {
		r.sync = true
		if r.wch == nil {
			r.wch = make(chan struct{}, 1)
		}
	}
	if done != nil {
		r.ctx, r.cdone = ctx, done
	}
	r.state.Store(recQueued)
}

// fillAsync fills r for a SubmitAsync of f on v that is not combined; cb
// is its completion (not nil).
func (r *opRec) fillAsync(v *VMSession, f func(*Session) error, cb func(error)) {
	r.vs, r.f, r.cb = v, f, cb
	r.state.Store(recQueued)
}

// fillBatchOp fills r for op bidx of SubmitBatch b on v; ctx is kept only
// if it can end (done non-nil).
func (r *opRec) fillBatchOp(v *VMSession, f func(*Session) error, b *batchWait, bidx int, ctx context.Context, done <-chan struct{}) {
	r.vs, r.f, r.batch, r.bidx = v, f, b, bidx
	if done != nil {
		r.ctx, r.cdone = ctx, done
	}
	r.state.Store(recQueued)
}

// fillGroup fills r for a group (combine.go) whose group word is set: f
// and cb its first op (a combining group's creator), or nil with all the
// ops in the holder (SubmitAsyncBatch's, with gdone their completion and
// gbase the index of the first in the caller's slice).
func (r *opRec) fillGroup(v *VMSession, f func(*Session) error, cb func(error), gdone func(int, error), gbase int) {
	r.vs, r.f, r.cb, r.gdone, r.gbase, r.grouped = v, f, cb, gdone, gbase, true
	r.state.Store(recQueued)
}

// ---- The cancel race (the top of this file): whoever moves the state
// off queued owns the outcome. The CASes are its LPs.

// take is the worker's side: true if the op is to run (or, unrun, to be
// completed) by the caller; false: the submitter canceled it, and the
// caller only resets and frees the record.
func (r *opRec) take() bool { return r.state.CompareAndSwap(recQueued, recRunning) }

// cancel is the submitter's side: true if f will never run and the record
// is now the worker's to free.
func (r *opRec) cancel() bool { return r.state.CompareAndSwap(recQueued, recCanceled) }

// ---- What the worker reads of a use.

// session is the session the op was submitted to.
func (r *opRec) session() *VMSession { return r.vs }

// first is the record's own op: a plain op's f and completion cb (nil for
// a synchronous or batch op), a combining group's first op; f is nil in
// SubmitAsyncBatch's group, whose ops are all in the holder.
func (r *opRec) first() groupOp { return groupOp{r.f, r.cb} }

// isGroup reports whether r is a group, whose ops after first() (all of
// them when first().f is nil) are in group().
func (r *opRec) isGroup() bool { return r.grouped }

// groupDone is SubmitAsyncBatch's completion of each op of the group and
// the index in its slice of the group's first op (nil, 0: none).
func (r *opRec) groupDone() (func(int, error), int) { return r.gdone, r.gbase }

// opCtx is the op's ctx and its Done channel (nil: none that can end).
func (r *opRec) opCtx() (context.Context, <-chan struct{}) { return r.ctx, r.cdone }

// batchIndex is the SubmitBatch the op is part of (nil: none) and its
// index there.
func (r *opRec) batchIndex() (*batchWait, int) { return r.batch, r.bidx }

// group returns r's group holder, nil if it never needed one.
func (r *opRec) group() *asyncGroup { return r.grp.Load() }

// groupOf returns r's group holder, allocating it on first use. The CAS
// orders the holder's allocation before any use of it by another
// goroutine (a creator and an appender may both allocate: one wins).
func groupOf(r *opRec) *asyncGroup {
	if g := r.grp.Load(); g != nil {
		return g
	}
	r.grp.CompareAndSwap(nil, new(asyncGroup))
	return r.grp.Load()
}

// ---- A synchronous Submit's outcome.

// wake hands err to the Submit that waits for r and reports true, or
// reports false if none does (r is not a synchronous Submit's). The send
// orders err before the submitter's receive; r must not be touched after
// it.
func (r *opRec) wake(err error) bool {
	if !r.sync {
		return false
	}
	r.err = err
	if r.inline {
		return true // its submitter ran it and reads err next (runOwn)
	}
	r.wch <- struct{}{}
	return true
}

// waitCh is what the submitter waits on for wake.
func (r *opRec) waitCh() <-chan struct{} { return r.wch }

// outcome is the error wake handed over.
func (r *opRec) outcome() error { return r.err }

type recChunk [recChunkSize]opRec

type recSlab struct {
	_    [64]byte
	head atomic.Uint64 // tag<<32 | (index+1); index+1 == 0: empty
	// head is written by every alloc and free; chunks is read by every
	// recAt: apart, so that the reads do not miss on head's line.
	_      [56]byte
	chunks atomic.Pointer[[]*recChunk]
	growMu sync.Mutex
}

var slab recSlab

func recAt(idx uint32) *opRec {
	return &(*slab.chunks.Load())[idx>>recChunkBits][idx&(recChunkSize-1)]
}

// allocRec pops a free record (state left as it was: the caller sets it).
func allocRec() *opRec {
	for {
		h := slab.head.Load()
		top := uint32(h)
		if top == 0 {
			slab.grow(h)
			continue
		}
		r := recAt(top - 1)
		// A stale next (r popped and reused meanwhile) is harmless: the tag
		// changed, so the CAS fails.
		next := r.next.Load()
		if slab.head.CompareAndSwap(h, (h>>32+1)<<32|uint64(next)) {
			return r
		}
	}
}

// freeRec pushes r back. The caller has cleared its references.
func freeRec(r *opRec) {
	for {
		h := slab.head.Load()
		r.next.Store(uint32(h))
		if slab.head.CompareAndSwap(h, (h>>32+1)<<32|uint64(r.idx+1)) {
			return
		}
	}
}

// grow adds a chunk of free records when the stack was seen empty at h.
func (sl *recSlab) grow(seen uint64) {
	sl.growMu.Lock()
	defer sl.growMu.Unlock()
	if sl.head.Load() != seen {
		return // another goroutine freed or grew meanwhile
	}
	var old []*recChunk
	if p := sl.chunks.Load(); p != nil {
		old = *p
	}
	base := uint32(len(old)) << recChunkBits
	c := new(recChunk)
	for i := range c {
		c[i].idx = base + uint32(i)
		if i+1 < recChunkSize {
			c[i].next.Store(base + uint32(i) + 2)
		}
	}
	chunks := make([]*recChunk, len(old)+1)
	copy(chunks, old)
	chunks[len(old)] = c
	sl.chunks.Store(&chunks)
	// Link the new chunk's last record to whatever is on the stack now and
	// publish the chunk's first record as the new top.
	for {
		h := sl.head.Load()
		c[recChunkSize-1].next.Store(uint32(h))
		if sl.head.CompareAndSwap(h, (h>>32+1)<<32|uint64(base+1)) {
			return
		}
	}
}

// recList collects the records a worker is done with during a batch, so
// that they go back to the free stack with one CAS (freeChain) instead of
// one each: the stack's head is the line producers and workers share.
type recList struct {
	first, last *opRec
}

// free adds r to l; a nil l frees r at once.
func (l *recList) free(r *opRec) {
	if l == nil {
		freeRec(r)
		return
	}
	if l.first == nil {
		l.last = r
		r.next.Store(0)
	} else {
		r.next.Store(l.first.idx + 1)
	}
	l.first = r
}

// flush pushes the collected records back in one CAS.
func (l *recList) flush() {
	if l.first == nil {
		return
	}
	for {
		h := slab.head.Load()
		l.last.next.Store(uint32(h))
		// The CAS publishes the chain's links (set before it) to the pop
		// that reads them after loading the new head.
		if slab.head.CompareAndSwap(h, (h>>32+1)<<32|uint64(l.first.idx+1)) {
			break
		}
	}
	l.first, l.last = nil, nil
}
