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
//   - the submitter whose ctx ends first: queued -> cancelled, returns
//     ctx.Err() at once; the worker that later pops the op sees cancelled
//     and only frees the record. f never runs.
// Whoever touches the record last pushes it back on the free stack.

import (
	"context"
	"sync"
	"sync/atomic"
)

const (
	recQueued uint32 = iota
	recRunning
	recCancelled
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
	slot  int              // index of this op in its batch
	err   error
	wch   chan struct{} // cap 1: the worker's "done" to a waiting Submit; made once per record
	// The op's ctx (Submit, SubmitBatch) and its Done channel: the worker
	// does not start f once it is closed.
	ctx   context.Context
	cdone <-chan struct{}
	_     [192 - 64 - 104]byte // to three whole lines
}

// reset clears what a use of the record referenced (not its state, its
// group word or wch, which carry over uses), before it is freed.
func (r *opRec) reset() {
	r.vs, r.f, r.cb, r.batch, r.gdone, r.err = nil, nil, nil, nil, nil, nil
	r.ctx, r.cdone = nil, nil
	r.sync, r.grouped = false, false
}

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
