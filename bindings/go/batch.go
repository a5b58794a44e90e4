package accel

// The C side of a Batcher (batcher.go has the typed API): each item is
// one C op of the session, whose record (oprec.go, bitem) names its
// Batcher and holds the item. The session has a C batch function
// (goaccel_set_batch), so a host worker's visit of it hands out one batch,
// formed by the C batch core exactly as accel's own worker forms one
// (docs/batching.md): a FIFO prefix of what is queued, up to the
// Batcher's max, with the ops canceled, expired or closed before it
// formed left out and completed unrun. The host worker (runVisit) gives the
// batch's consecutive items to one call of the Batcher's fn, on its own
// goroutine; the session's other ops (Submit, SubmitAsync) in the batch
// run one by one in their place in the order.

// #include "shim.h"
import "C"

import (
	"context"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// The Go bound on WithMaxDelay is the C runtime's.
var _ = [1]struct{}{}[maxDelay-time.Duration(C.ACCEL_BATCH_DELAY_MAX)]

// batchCore is a Batcher without its item type.
type batchCore struct {
	v   *VMSession
	max int
	// delay, fixed, perItem: WithMaxDelay and WithBatchCost (0: none).
	delay, fixed, perItem time.Duration
	// call runs fn on the items of run (records taken, ctx checked),
	// errs zeroed, one per item (batcher.go).
	call func(s *Session, run []*opRec, errs []error)
}

// attach gives v's C session the batch function (one Batcher per
// VMSession).
func (b *batchCore) attach() error {
	v := b.v
	if v.closed.Load() {
		return ErrSessionClosed
	}
	if v.h == nil {
		return ErrNoBackends
	}
	if !v.batching.CompareAndSwap(false, true) {
		return errBatcherTaken
	}
	c := v.h.enter()
	if c == nil {
		return ErrSessionClosed
	}
	rc := int(C.goaccel_set_batch(c, C.uint(b.max), C.uint64_t(b.delay),
		C.uint64_t(b.fixed), C.uint64_t(b.perItem)))
	v.h.exit()
	if rc != C.ACCEL_OK {
		v.batching.Store(false)
		return statusErr(rc)
	}
	return nil
}

// submit is Batcher.Submit: Submit's queued path (VMSession.Submit; never
// the direct hand-off: the item's fn runs on a host worker, never on the
// caller's goroutine), its wait and its cancel race.
func (b *batchCore) submit(ctx context.Context, item any) error {
	v := b.v
	done, err := ctxDone(ctx)
	if err != nil {
		return err
	}
	if v.closed.Load() {
		return ErrSessionClosed
	}
	r := allocRec()
	r.fillItem(v, b, item, nil, ctx, done)
	var t C.accel_ticket
	var tp *C.accel_ticket
	if done != nil {
		tp = &t // an item left queued is canceled when ctx ends
	}
	if err := v.enqueue(r, ctxDeadline(ctx), ctx, done, tp); err != nil {
		r.reset()
		freeRec(r)
		return err
	}
	v.postClose()
	v.submitted.Add(1)
	return v.awaitRec(r, ctx, done, &t)
}

// submitAsync is Batcher.SubmitAsync: queued without waiting, done
// called on the host worker after the item's batch.
func (b *batchCore) submitAsync(item any, done func(error)) error {
	v := b.v
	if v.closed.Load() {
		return ErrSessionClosed
	}
	if done == nil {
		done = func(error) {}
	}
	r := allocRec()
	r.fillItem(v, b, item, done, nil, nil)
	return v.queueAsync(r)
}

// runItems runs the items from op d.i of the open visit on: the
// consecutive items of one Batcher, up to its max, as one call of its
// fn; d.i is left at the last of them. An item whose submitter canceled
// it is only freed; one whose ctx ended is completed with ctx's error;
// neither reaches fn. Each item's error goes to its submitter, and its C
// status (1: failed) to the visit's end.
func (d *hostWorker) runItems() {
	first := recOf(d.b.recs[d.i])
	bt, s := first.bt, first.session()
	run, idx := d.run[:0], d.runIdx[:0]
	end := d.i
	for end < d.n && len(run) < bt.max {
		r := recOf(d.b.recs[end])
		if !r.bitem || r.bt != bt {
			break
		}
		d.b.status[end] = 0
		end++
		if takeItem(r, s, d) {
			run = append(run, r)
			idx = append(idx, end-1)
		}
	}
	d.run, d.runIdx, d.runEnd = run, idx, end
	if len(run) > 0 {
		for k, err := range runBatch(bt, s, run, d) {
			if err != nil {
				d.b.status[idx[k]] = 1
			}
		}
	}
	clear(run) // no record kept alive by the host worker's buffer
	d.i = end - 1
}

// takeItem takes r (an item) for its batch: true if it goes to fn; else
// it was canceled by its submitter (freed) or its ctx ended (completed
// with ctx's error), and its C status is 0.
func takeItem(r *opRec, s *VMSession, d *hostWorker) bool {
	if !r.take() {
		r.reset()
		d.fl.free(r)
		return false
	}
	// fn never gets an item after its ctx ended (as f: runRec).
	if ctx, done := r.opCtx(); chanDone(done) || pastDeadline(ctx, done) {
		s.canceled.Add(1)
		finish(r, ctxErr(ctx, C.ACCEL_EEXPIRED), d)
		return false
	}
	return true
}

// runItemAlone runs r, an item that C ran as an op of its own (the op
// trampoline: accel_runtime_destroy's thread, runAside), as a batch of
// one; r is taken and its ctx checked (runRec).
func runItemAlone(r *opRec, s *VMSession, d *hostWorker) C.int {
	if errs := runBatch(r.bt, s, []*opRec{r}, d); errs[0] != nil {
		return 1
	}
	return 0
}

// runBatch calls bt's fn on the items of run and completes each with its
// error; returns the errors (the records are the submitters' once
// completed).
func runBatch(bt *batchCore, s *VMSession, run []*opRec, d *hostWorker) []error {
	s.dispatched.Add(uint64(len(run)))
	errs := make([]error, len(run))
	d.bat = run
	callBatch(bt, &s.sess, run, errs, d)
	for k, r := range run {
		if errs[k] != nil {
			s.failed.Add(1)
		} else {
			s.completed.Add(1)
		}
		finish(r, errs[k], d)
	}
	return errs
}

// callBatch runs bt's fn as callF runs f: a panic fails every item of
// the batch with one *PanicError; runtime.Goexit goes on up to the
// host worker's check, which finds the batch in d.bat (batchGoexit).
func callBatch(bt *batchCore, s *Session, run []*opRec, errs []error, d *hostWorker) {
	d.phase, d.cur = phaseF, nil
	if d.opw != nil {
		atomic.AddUint64(d.opw, 1) // the batch is one op to the C monitor
	}
	recoverBatch(bt, s, run, errs)
	d.phase, d.bat = phaseOut, nil // as callF: not reached under a Goexit
}

// recoverBatch calls bt's fn; one that did not return (a panic, also
// panic(nil) under GODEBUG=panicnil=1) fails every item with one
// *PanicError.
func recoverBatch(bt *batchCore, s *Session, run []*opRec, errs []error) {
	returned := false
	defer func() {
		if v := recover(); !returned {
			pe := &PanicError{Value: v, Stack: debug.Stack()}
			for i := range errs {
				errs[i] = pe
			}
		}
	}()
	bt.call(s, run, errs)
	returned = true
}

// batchGoexit completes the items of the batch whose fn called
// runtime.Goexit (d.bat; from the exiting goroutine's deferred check):
// each fails with errGoexit, so that a synchronous submitter calls
// runtime.Goexit and a callback gets ErrGoexit, as for an f that called
// it. statusOf: each item's C status slot (nil: none).
func (d *hostWorker) batchGoexit(statusOf func(k int) *C.int) {
	run := d.bat
	d.bat = nil
	s := run[0].session()
	for k, r := range run {
		if statusOf != nil {
			*statusOf(k) = 1
		}
		s.failed.Add(1)
		finish(r, errGoexit, nil)
	}
}
