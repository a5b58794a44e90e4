package accel

// #include "shim.h"
import "C"

import (
	"context"
	"runtime"
	"sync/atomic"
)

// SubmitAsync queues f and returns at once; done(err) is called on the
// worker after f (done may be nil; keep it short, it holds the worker). It
// returns ErrQueueFull rather than wait when the queue is full, and
// ErrSessionClosed on a closed session; on any error f never runs and done
// is not called. Consecutive SubmitAsyncs on a session share the room of
// one queued op (up to 32 in one group, while it waits for a worker; docs/go.md), so a
// queue of depth d holds more than d of them.
//
// done runs inside the session's turn on the worker, as f does: a Submit
// (or SubmitBatch) from done to the same session returns ErrDeadlock
// without running its f.
//
// To get the result on a channel: ch := make(chan error, 1);
// v.SubmitAsync(f, func(err error) { ch <- err }).
func (v *VMSession) SubmitAsync(f func(*Session) error, done func(error)) error {
	if f == nil {
		return ErrInvalidArgument
	}
	if v.closed.Load() {
		return ErrSessionClosed
	}
	if v.h == nil {
		v.dispatched.Add(1)
		v.failed.Add(1)
		v.submitted.Add(1)
		return ErrNoBackends
	}
	if !v.rt.noCombine {
		// Join the session's open group (no crossing, no ring slot), or
		// start one that the next SubmitAsyncs can join (combine.go).
		if !v.tryAppend(f, done) {
			if rc := v.submitGroup(f, done); rc != C.ACCEL_OK {
				return statusErr(rc)
			}
		}
		v.submitted.Add(1)
		return nil
	}
	if done == nil {
		done = func(error) {}
	}
	r := allocRec()
	r.fillAsync(v, f, done)
	return v.queueAsync(r)
}

// submitRec queues r without waiting (an async op or group); the C status.
func (v *VMSession) submitRec(r *opRec) int {
	c := v.sess.enter()
	if c == nil {
		return C.ACCEL_ECLOSED
	}
	rc := int(C.goaccel_submit(c, r.arg(), 0, C.ACCEL_NO_WAIT, 0, nil))
	v.h.exit()
	return rc
}

// SubmitAsyncBatch queues fs in order and returns at once; done(i, err)
// is called on a worker after fs[i] (done may be nil). The ops go to C as
// groups of up to 32, each one op for the scheduler: one crossing into C
// and one back per group, not per op (a group is charged its whole measured
// time, so shares stay exact; a group takes the room of one op). It returns how
// many ops were queued (a prefix of fs) and, if not all, why not
// (ErrQueueFull, ErrSessionClosed, ErrInvalidArgument for a nil f).
func (v *VMSession) SubmitAsyncBatch(fs []func(*Session) error, done func(i int, err error)) (int, error) {
	const group = groupMax
	if v.closed.Load() {
		return 0, ErrSessionClosed
	}
	if v.h == nil {
		// Counted as Submit counts it (none queued: 0).
		v.dispatched.Add(uint64(len(fs)))
		v.failed.Add(uint64(len(fs)))
		v.submitted.Add(uint64(len(fs)))
		return 0, ErrNoBackends
	}
	var buf [64]C.uintptr_t
	var recs [64]*opRec
	var sizes [64]int // group sizes: a queued record may be reused at once
	queued := 0
	var stop error
	for queued < len(fs) && stop == nil {
		// Up to 64 groups per crossing into C.
		n, at := 0, queued
		for n < len(buf) && at < len(fs) {
			k := len(fs) - at
			if k > group {
				k = group
			}
			for j := 0; j < k; j++ {
				if fs[at+j] == nil {
					k, stop = j, ErrInvalidArgument
					break
				}
			}
			if k == 0 {
				break
			}
			r := allocRec()
			g := groupOf(r)
			for j := 0; j < k; j++ {
				g.ops[j] = groupOp{f: fs[at+j]}
			}
			sealedGroup(r, k)
			r.fillGroup(v, nil, nil, done, at)
			recs[n], buf[n], sizes[n] = r, r.arg(), k
			n++
			at += k
			if stop != nil {
				break
			}
		}
		if n == 0 {
			break
		}
		var got C.size_t
		rc := C.ACCEL_ECLOSED
		if c := v.sess.enter(); c != nil {
			rc = int(C.goaccel_submit_batch(c, &buf[0], C.size_t(n), 0, C.ACCEL_NO_WAIT, &got))
			v.h.exit()
		}
		k := 0
		for i := 0; i < int(got); i++ {
			k += sizes[i]
		}
		queued += k
		if got > 0 {
			v.postClose()
		}
		v.submitted.Add(uint64(k))
		for i, r := range recs[got:n] {
			// Its ops end unqueued: their entries are cleared as an op's
			// end clears them (reset needs them clear).
			g := r.group()
			for j := 0; j < sizes[int(got)+i]; j++ {
				g.ops[j] = groupOp{}
			}
			r.reset()
			freeRec(r)
		}
		if rc != C.ACCEL_OK {
			return queued, statusErr(rc)
		}
	}
	return queued, stop
}

// batchWait collects the results of one SubmitBatch.
type batchWait struct {
	left atomic.Int32 // ops not yet finished (run or canceled)
	errs []error
	done chan struct{}
}

// arrive marks one op finished; the last one wakes the submitter.
func (b *batchWait) arrive() {
	// The atomic decrement releases this op's errs[bidx] to whoever sees
	// 0; the channel send then orders it before the submitter's reads.
	if b.left.Add(-1) == 0 {
		b.done <- struct{}{}
	}
}

// SubmitBatch runs fs in order on the session, as len(fs) Submits would,
// with one crossing into C for all of fs while the queue has room (more
// only to wait for room), and returns each f's error. ctx is
// honoured per op until it starts, also while the batch waits for queue
// room: ops not started when ctx ends get ctx.Err() and never run (its
// deadline goes with each op to the scheduler, which drops the ops not
// started by then, as for Submit). If the
// session closes part-way, the ops not queued get ErrSessionClosed. From
// inside one of the session's own ops every op gets ErrDeadlock (the
// batch would wait for itself), as with Submit. If an f calls
// runtime.Goexit (t.Fatal does), that op fails, the batch's later ops,
// queued with it, still run, and once all have finished SubmitBatch
// calls runtime.Goexit on its own goroutine, as Submit does: it does not
// return.
func (v *VMSession) SubmitBatch(ctx context.Context, fs []func(*Session) error) []error {
	errs := make([]error, len(fs))
	if len(fs) == 0 {
		return errs
	}
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	fail := func(from int, err error) []error {
		for i := from; i < len(errs); i++ {
			errs[i] = err
		}
		return errs
	}
	for _, f := range fs {
		if f == nil {
			return fail(0, ErrInvalidArgument)
		}
	}
	switch {
	case ctx != nil && ctx.Err() != nil:
		return fail(0, ctx.Err())
	case v.closed.Load():
		return fail(0, ErrSessionClosed)
	case v.h == nil:
		v.dispatched.Add(uint64(len(fs)))
		v.failed.Add(uint64(len(fs)))
		v.submitted.Add(uint64(len(fs)))
		return fail(0, ErrNoBackends)
	}
	c := v.h.enter()
	if c == nil {
		return fail(0, ErrSessionClosed)
	}
	if ownOp(c) {
		v.h.exit()
		return fail(0, ErrDeadlock)
	}
	b := &batchWait{errs: errs, done: make(chan struct{}, 1)}
	b.left.Store(int32(len(fs)) + 1) // +1: the submitter's own, dropped below
	recs := make([]*opRec, len(fs))
	cids := make([]C.uintptr_t, len(fs))
	for i, f := range fs {
		r := allocRec()
		r.fillBatchOp(v, f, b, i, ctx, done)
		recs[i] = r
		cids[i] = r.arg()
	}
	// Queue them, waiting for room in Go (room.go): without limit if ctx
	// cannot end, else until it does. ctx's deadline goes with each op:
	// the scheduler drops an op not started by then (as Submit's).
	deadline := ctxDeadline(ctx)
	queued := 0
	var stop error
	for queued < len(fs) {
		rc, ended := v.room.wait(func() int {
			if v.closed.Load() { // Close wakes the waiters (room.go)
				return C.ACCEL_ECLOSED
			}
			var got C.size_t
			rc := int(C.goaccel_submit_batch(c, &cids[queued], C.size_t(len(fs)-queued), deadline, C.ACCEL_NO_WAIT, &got))
			queued += int(got)
			if got > 0 && rc == C.ACCEL_EAGAIN {
				return C.ACCEL_OK // progress: try the rest at once
			}
			return rc
		}, done)
		if ended {
			stop = ctx.Err()
			break
		}
		if rc != C.ACCEL_OK {
			stop = statusErr(rc)
			break
		}
	}
	v.h.exit()
	if queued > 0 {
		v.postClose()
	}
	v.submitted.Add(uint64(queued))
	// Ops never queued: fail them here and give their records back.
	for i := queued; i < len(fs); i++ {
		errs[i] = stop
		recs[i].reset()
		freeRec(recs[i])
		recs[i] = nil
	}
	b.left.Add(int32(queued - len(fs)))
	canceled := make([]bool, queued)
	if b.left.Add(-1) != 0 {
		m := blockBegin() // inside an op: the wait counts its host worker blocked (compensate.go)
		defer m.blockEnd()
		if done == nil {
			m.recv(b.done)
		} else if !m.recvOr(b.done, done) {
			cerr := ctx.Err()
			finished := false
			for i := 0; i < queued; i++ {
				if recs[i].cancel() {
					canceled[i] = true // the worker frees it
					errs[i] = cerr
					v.canceled.Add(1)
					if b.left.Add(-1) == 0 {
						finished = true
					}
				}
			}
			if !finished {
				m.recv(b.done)
			}
		}
	}
	for i := 0; i < queued; i++ {
		if !canceled[i] {
			recs[i].reset()
			freeRec(recs[i])
		}
	}
	for _, err := range errs {
		if err == errGoexit {
			runtime.Goexit() // as Submit: the deferred blockEnd still runs
		}
	}
	return errs
}
