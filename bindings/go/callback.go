package accel

// Running one Go op: on a host worker (hostworker.go), or, for an op
// that C runs inside one of its own calls (those still queued when
// accel_runtime_destroy runs, a device session's in its visit's begin),
// on a goroutine that the callback into Go (goAccelRun) starts and waits
// for.

// #include <stdint.h>
// #include "shim.h"
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// PanicError is what Submit returns when f panicked: the worker recovered,
// the op counts as failed, and the session and the worker go on.
type PanicError struct {
	Value any    // what f panicked with
	Stack []byte // the goroutine's stack at the panic
}

func (e *PanicError) Error() string { return fmt.Sprintf("accel: op panicked: %v", e.Value) }

// Unwrap returns the panic value if it is an error, so that errors.Is and
// errors.As see through the panic.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// callF runs f and turns a panic into a *PanicError. d records that user
// code runs, for its exit check (hostWorker.exited, asideRun: only
// runtime.Goexit leaves f other than by returning here). The phase goes
// back to phaseOut only once recoverF has returned: a panic recovered
// while a runtime.Goexit of f unwinds (a deferred function of f that
// panics) does not stop the Goexit, which then leaves callF with the
// phase still phaseF, as a plain Goexit does, for the exit check.
func callF(f func(*Session) error, s *Session, d *hostWorker, r *opRec, op int) error {
	d.phase, d.cur, d.curOp = phaseF, r, op
	if d.opw != nil {
		atomic.AddUint64(d.opw, 1) // an op begins: the C monitor's window (watchOps)
	}
	err := recoverF(f, s)
	d.phase, d.cur = phaseOut, nil
	return err
}

// recoverF calls f; an f that did not return (a panic, also panic(nil)
// under GODEBUG=panicnil=1, where recover gives nil) gives a *PanicError.
// Under a Goexit that error is never seen: the goroutine goes on ending.
func recoverF(f func(*Session) error, s *Session) (err error) {
	returned := false
	defer func() {
		if v := recover(); !returned {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	err = f(s)
	returned = true
	return err
}

// callDone runs an async completion. A panic in it is not recovered: it
// ends the program as a panic in a goroutine of the caller's would
// (hostWorker.exited re-raises it with a note), never silently.
func callDone(cb func(error), err error, d *hostWorker) {
	if d != nil {
		d.phase = phaseDone
	}
	cb(err)
	if d != nil {
		d.phase = phaseOut
	}
}

func callGroupDone(done func(int, error), i int, err error, d *hostWorker) {
	if d != nil {
		d.phase = phaseDone
	}
	done(i, err)
	if d != nil {
		d.phase = phaseOut
	}
}

// goAccelRun is the op trampoline's call into Go, made inside a C call
// on its thread (accel_runtime_destroy's run of what is still queued, or
// a device session's visit): it runs the op on a goroutine of its own
// and waits for it (runAside). f may call runtime.Goexit (t.Fatal), and
// run here it would end the goroutine that made the C call in the middle
// of it (or, on a thread C made, crash the process); there it ends only
// that goroutine.
//
//export goAccelRun
func goAccelRun(arg C.uintptr_t) C.int {
	r := recOf(arg)
	r.session().room.freed() // taken from the queue (room.go)
	return runAside(r)
}

// runAside runs the op of record r on a new goroutine, locked to its
// thread with the calling thread's C thread-locals (the op's session, for
// accel_current_session, and the visit the shim names: goaccel_op_thread), so that
// from inside f a Submit or Sync of its own session answers at once, as
// on the calling thread, instead of waiting for itself. Returns runRec's
// status.
func runAside(r *opRec) C.int {
	var ot C.goaccel_op_thread
	C.goaccel_op_thread_get(&ot)
	st := make(chan C.int, 1)
	go asideRun(r, 0, ot, st)
	return <-st
}

// asideRun runs r for runAside (from > 0: r's group from op from on,
// after op from-1 called runtime.Goexit) and sends its C status on st.
// If an f calls runtime.Goexit, the op fails (salvageGoexit) and the
// group's later ops go on on another such goroutine.
func asideRun(r *opRec, from int, ot C.goaccel_op_thread, st chan<- C.int) {
	d := &hostWorker{}
	normal := false
	defer func() {
		C.goaccel_op_thread_set(&C.goaccel_op_thread{}) // as the thread was: in no op
		runtime.UnlockOSThread()
		if normal || !d.goexitInF() {
			return
		}
		if d.bat != nil { // a Batcher's item run alone (runItemAlone)
			d.batchGoexit(nil)
			d.fl.flush()
			st <- 1
			return
		}
		more := salvageGoexit(d.cur, d.curOp, &d.fl)
		d.fl.flush()
		if more {
			go asideRun(d.cur, d.curOp+1, ot, st)
			return
		}
		st <- 1 // failed, for the C stats too
	}()
	runtime.LockOSThread()
	C.goaccel_op_thread_set(&ot)
	var rc C.int
	if from == 0 {
		rc = runRec(r, d)
	} else {
		runGroupFrom(r, r.session(), d, from)
		rc = 1 // an op of it failed (Goexit)
	}
	d.fl.flush()
	normal = true
	st <- rc
}

// runRec runs the op of record r and returns its C status: 0, or 1 if it
// failed. d: the host worker running it; the records it is done with go to
// d's list.
func runRec(r *opRec, d *hostWorker) C.int {
	// The cancel race (oprec.go): whoever moves the state off queued
	// owns the outcome.
	if !r.take() {
		r.reset()
		d.fl.free(r) // the submitter gave the record up when it canceled
		return 0
	}
	s := r.session()
	if r.isGroup() {
		return runGroup(r, s, d)
	}
	// f never starts after its ctx ended: the C deadline drops an op
	// unstarted only up to the take, and a cancel may come after it. A
	// deadline is read too, as ctx's timer may fire late (nothing for a
	// ctx that never ends: done nil).
	if ctx, done := r.opCtx(); chanDone(done) || pastDeadline(ctx, done) {
		s.canceled.Add(1)
		finish(r, ctxErr(ctx, C.ACCEL_EEXPIRED), d)
		return 0
	}
	if r.bitem { // a Batcher's item that C ran alone (batch.go)
		return runItemAlone(r, s, d)
	}
	s.dispatched.Add(1)
	err := callF(r.first().f, &s.sess, d, r, 0)
	if err != nil {
		s.failed.Add(1)
	} else {
		s.completed.Add(1)
	}
	finish(r, err, d)
	if err != nil {
		return 1 // counted as failed by the C stats too
	}
	return 0
}

// pastDeadline reports whether ctx has a deadline that has passed (done:
// ctx.Done(); nil, a ctx that never ends, reads no clock).
func pastDeadline(ctx context.Context, done <-chan struct{}) bool {
	if done == nil {
		return false
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// ctxErr is the error of an op that its ctx stopped: ctx.Err(), or, if
// the C clock ran out the deadline before Go's timer fired, the error it
// is about to have.
func ctxErr(ctx context.Context, status C.int) error {
	if ctx != nil {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if status == C.ACCEL_EEXPIRED {
		return context.DeadlineExceeded
	}
	return context.Canceled
}

// runGroup runs the ops of a group in order (SubmitAsyncBatch's, or
// SubmitAsyncs combined: combine.go): one crossing for the lot (they are
// consecutive in the session's FIFO order; the scheduler sees one op and
// charges its whole measured time). Sealing it first ends appends.
func runGroup(r *opRec, s *VMSession, d *hostWorker) C.int {
	n := sealGroup(r)
	r.gn = n
	r.gok, r.gbad = 0, 0
	return runGroupFrom(r, s, d, 0)
}

// runGroupFrom runs r's group from op from on (from > 0: a new host worker
// goes on after an op that called runtime.Goexit, hostWorker.exited). The
// outcomes not yet added to s's counters are kept in r, so that the
// Goexit salvage adds them.
func runGroupFrom(r *opRec, s *VMSession, d *hostWorker, from int) C.int {
	n := r.gn
	done, base := r.groupDone()
	own := r.first()
	var g *asyncGroup
	if n > 1 || own.f == nil {
		g = r.group()
	}
	failed := false
	// Timed for adaptCap: groups of more than one op, and one in 8 of a
	// session's one-op groups, its first among them (two clock reads
	// would cost a one-op group about as much as the rest of its run).
	timed := from == 0 && (n > 1 || s.groupTick.Add(1)&7 == 1)
	var t0 time.Time
	if timed {
		t0 = time.Now()
	}
	for i := from; i < n; i++ {
		op := own
		fromG := i > 0 || op.f == nil // a batch's ops are all in g
		if fromG {
			op = g.ops[i]
		}
		s.dispatched.Add(1)
		err := callF(op.f, &s.sess, d, r, i)
		if fromG {
			// Cleared once f is back: if f calls runtime.Goexit, the
			// salvage finds its completion here.
			g.ops[i] = groupOp{}
		}
		if err != nil {
			r.gbad++
			failed = true
		} else {
			r.gok++
		}
		// The outcome counts are added before a completion runs (it may
		// read Stats) and at the end: one atomic per group, not per op,
		// where no completion looks.
		if done != nil || op.cb != nil {
			s.countOutcomes(&r.gok, &r.gbad)
			if done != nil {
				callGroupDone(done, base+i, err, d)
			} else {
				callDone(op.cb, err, d)
			}
		}
	}
	s.countOutcomes(&r.gok, &r.gbad)
	if timed {
		s.adaptCap(n, time.Since(t0))
	}
	// Freed after the ops: the group's holder goes with the record.
	r.reset()
	d.fl.free(r)
	if failed {
		return 1
	}
	return 0
}

// salvageGoexit completes the op of record r whose f (op i of a group)
// called runtime.Goexit: it failed with ErrGoexit. Runs in the exiting
// host worker's deferred check. For a group with ops after i it returns true
// and keeps r: the caller has them run (runGroupFrom from i+1).
func salvageGoexit(r *opRec, i int, fl *recList) bool {
	s := r.session()
	if !r.isGroup() {
		s.failed.Add(1)
		finish(r, errGoexit, nil)
		return false
	}
	r.gbad++
	s.countOutcomes(&r.gok, &r.gbad)
	done, base := r.groupDone()
	op := r.first()
	if i > 0 || op.f == nil {
		op = r.group().ops[i]
		r.group().ops[i] = groupOp{}
	}
	if done != nil {
		done(base+i, ErrGoexit)
	} else if op.cb != nil {
		op.cb(ErrGoexit)
	}
	if i+1 < r.gn {
		return true
	}
	r.reset()
	fl.free(r)
	return false
}

// countOutcomes adds *ok completed and *bad failed ops to s's counters and
// zeroes them.
func (s *VMSession) countOutcomes(ok, bad *uint64) {
	if *ok != 0 {
		s.completed.Add(*ok)
		*ok = 0
	}
	if *bad != 0 {
		s.failed.Add(*bad)
		*bad = 0
	}
}

// goAccelUnrun finishes an op that C completed without running it: its
// session was closed with ACCEL_CLOSE_CANCEL, its deadline passed
// (ACCEL_EEXPIRED) or it was canceled (ACCEL_ECANCELED, after its
// submitter gave it up).
//
//export goAccelUnrun
func goAccelUnrun(arg C.uintptr_t, status C.int) {
	r := recOf(arg)
	r.session().room.freed() // its queue position released (room.go)
	if !r.take() {
		r.reset()
		freeRec(r)
		return
	}
	err := statusErr(int(status))
	if status == C.ACCEL_EEXPIRED || status == C.ACCEL_ECANCELED {
		ctx, _ := r.opCtx()
		err = ctxErr(ctx, status)
	}
	if r.isGroup() {
		s := r.session()
		done, base := r.groupDone()
		n := sealGroup(r) // no appends to a group C has completed
		own := r.first()
		var g *asyncGroup
		if n > 1 || own.f == nil {
			g = r.group()
		}
		s.canceled.Add(uint64(n))
		for i := 0; i < n; i++ {
			op := own
			if i > 0 || op.f == nil {
				op = g.ops[i]
				g.ops[i] = groupOp{}
			}
			if done != nil {
				done(base+i, err)
			} else if op.cb != nil {
				op.cb(err)
			}
		}
		r.reset()
		freeRec(r)
		return
	}
	r.session().canceled.Add(1)
	finish(r, err, nil)
}

// finish hands the outcome of a record the worker owns to its submitter.
// The record must not be touched after the hand-off.
func finish(r *opRec, err error, d *hostWorker) {
	if r.wake(err) {
		return // the submitter waits for it (Submit)
	}
	if cb := r.first().cb; cb != nil {
		if err == errGoexit {
			err = ErrGoexit // the exported one, for the callback
		}
		r.reset()
		if d != nil {
			d.fl.free(r)
		} else {
			freeRec(r)
		}
		callDone(cb, err, d)
		return
	}
	if b, bidx := r.batchIndex(); b != nil {
		b.errs[bidx] = err
		b.arrive()
	}
}
