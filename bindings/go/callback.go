package accel

// The C->Go side: a worker thread of the C runtime calls goAccelRun for
// each Go op (shim.c). Since Go 1.21 a C thread keeps its Go M between
// callbacks, so the crossing costs tens of nanoseconds, not microseconds.

// #include <stdint.h>
import "C"

import (
	"fmt"
	"runtime/debug"
	"time"
)

// PanicError is what Submit returns when f panicked: the worker recovered,
// the op counts as failed, and the worker goes on.
type PanicError struct {
	Value any    // what f panicked with
	Stack []byte // the goroutine's stack at the panic
}

func (e *PanicError) Error() string { return fmt.Sprintf("accel: op panicked: %v", e.Value) }

// callF runs f and turns a panic into a *PanicError.
func callF(f func(*Session) error, s *Session) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return f(s)
}

// callDone runs an async completion; a panic there is dropped (the op is
// already counted), never allowed to unwind into the C worker.
func callDone(cb func(error), err error) {
	defer func() { _ = recover() }()
	cb(err)
}

//export goAccelRun
func goAccelRun(idx C.uintptr_t) C.int { return runRec(uint32(idx), nil) }

// runRec runs the op of record idx (on a host worker goroutine, or in a
// callback from a C worker thread) and returns its C status: 0, or 1 if
// it failed. Records it is done with go to fl (nil: back to the free
// stack at once).
func runRec(idx uint32, fl *recList) C.int {
	r := recAt(idx)
	// LP of the cancel race (oprec.go): whoever moves the state off queued
	// owns the outcome.
	if !r.state.CompareAndSwap(recQueued, recRunning) {
		r.f, r.vs, r.cb, r.batch = nil, nil, nil, nil
		r.cwait, r.chwait = false, false
		fl.free(r) // the submitter gave the record up when it cancelled
		return 0
	}
	s := r.vs
	if r.grouped {
		return runGroup(r, s, fl)
	}
	s.dispatched.Add(1)
	err := callF(r.f, &s.sess)
	if err != nil {
		s.failed.Add(1)
	} else {
		s.completed.Add(1)
	}
	finish(r, err, fl)
	if err != nil {
		return 1 // counted as failed by the C stats too
	}
	return 0
}

// runGroup runs the ops of a group in order (SubmitAsyncBatch's, or
// SubmitAsyncs combined: combine.go): one crossing for the lot (they are
// consecutive in the session's FIFO order; the scheduler sees one op and
// charges its whole measured time). Sealing it first ends appends.
func runGroup(r *opRec, s *VMSession, fl *recList) C.int {
	n := sealGroup(r)
	done, base := r.gdone, r.gbase
	var g *asyncGroup
	if n > 1 || r.f == nil {
		g = r.grp.Load()
	}
	var ok, bad uint64 // outcomes not yet added to s's counters
	failed := false
	// Timed for adaptCap: groups of more than one op, and one in 8 of a
	// session's one-op groups, its first among them (two clock reads
	// would cost a one-op group about as much as the rest of its run).
	timed := n > 1 || s.groupTick.Add(1)&7 == 1
	var t0 time.Time
	if timed {
		t0 = time.Now()
	}
	for i := 0; i < n; i++ {
		op := groupOp{r.f, r.cb}
		if i > 0 || op.f == nil { // a batch's ops are all in g
			op = g.ops[i]
			g.ops[i] = groupOp{}
		}
		s.dispatched.Add(1)
		err := callF(op.f, &s.sess)
		if err != nil {
			bad++
			failed = true
		} else {
			ok++
		}
		// The outcome counts are added before a completion runs (it may
		// read Stats) and at the end: one atomic per group, not per op,
		// where no completion looks.
		if done != nil || op.cb != nil {
			s.countOutcomes(&ok, &bad)
			if done != nil {
				callGroupDone(done, base+i, err)
			} else {
				callDone(op.cb, err)
			}
		}
	}
	s.countOutcomes(&ok, &bad)
	if timed {
		s.adaptCap(n, time.Since(t0))
	}
	// Freed after the ops: the group's holder goes with the record.
	r.vs, r.f, r.cb, r.gdone, r.grouped = nil, nil, nil, nil, false
	fl.free(r)
	if failed {
		return 1
	}
	return 0
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

func callGroupDone(done func(int, error), i int, err error) {
	defer func() { _ = recover() }()
	done(i, err)
}

// goAccelUnrun finishes an op that C completed without running it (its
// session was closed with ACCEL_CLOSE_CANCEL).
//
//export goAccelUnrun
func goAccelUnrun(idx C.uintptr_t, status C.int) {
	r := recAt(uint32(idx))
	if !r.state.CompareAndSwap(recQueued, recRunning) {
		r.f, r.vs, r.cb, r.batch = nil, nil, nil, nil
		r.cwait, r.chwait = false, false
		freeRec(r)
		return
	}
	if r.grouped {
		s, done, base := r.vs, r.gdone, r.gbase
		n := sealGroup(r) // no appends to a group C has completed
		var g *asyncGroup
		if n > 1 || r.f == nil {
			g = r.grp.Load()
		}
		s.cancelled.Add(uint64(n))
		err := statusErr(int(status))
		for i := 0; i < n; i++ {
			op := groupOp{r.f, r.cb}
			if i > 0 || op.f == nil {
				op = g.ops[i]
				g.ops[i] = groupOp{}
			}
			if done != nil {
				callGroupDone(done, base+i, err)
			} else if op.cb != nil {
				callDone(op.cb, err)
			}
		}
		r.vs, r.f, r.cb, r.gdone, r.grouped = nil, nil, nil, nil, false
		freeRec(r)
		return
	}
	r.vs.cancelled.Add(1)
	finish(r, statusErr(int(status)), nil)
}

// finish hands the outcome of a record the worker owns to its submitter.
// The record must not be touched after the hand-off.
func finish(r *opRec, err error, fl *recList) {
	switch {
	case r.chwait:
		// The submitter of a host-worker Submit (vmsession.go, submitHost):
		// r.err, then the done handshake on r.wake (doneAnnounce).
		r.err = err
		doneAnnounce(r)
	case r.cwait:
		r.err = err
		setWake(r, r.wakeGen, wakeDone) // the submitter waits in waitWake
	case r.cb != nil:
		cb := r.cb
		r.f, r.vs, r.cb = nil, nil, nil
		fl.free(r)
		callDone(cb, err)
	case r.batch != nil:
		b := r.batch
		b.errs[r.slot] = err
		b.arrive()
	}
}
