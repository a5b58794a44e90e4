package accel

// Helpers for the tests that need cgo (cgo is not allowed in test
// files). Not part of the API, and no switch: nothing here is called by
// the package's own code, so none of it is linked into a program (the
// switches that plant bugs are plant_on.go's, behind a build tag).

// #include <malloc.h>
// #include "shim.h"
import "C"

import (
	"runtime"
	"time"
)

// closeCancelForTest closes v as Close does, but with ACCEL_CLOSE_CANCEL
// (queued ops complete unrun), without waiting when called from inside
// one of v's ops.
func closeCancelForTest(v *VMSession) int {
	v.closed.Store(true)
	v.postClose()
	c := v.sess.enter()
	if c == nil {
		return C.ACCEL_OK
	}
	rc := int(C.accel_session_close(c, C.ACCEL_CLOSE_CANCEL))
	v.h.exit()
	return rc
}

// cHeapInUse is the bytes C's malloc has handed out and not got back, over
// all its arenas (mallinfo2): what a leak of C memory grows, apart from
// the free memory malloc keeps resident.
func cHeapInUse() int64 {
	mi := C.mallinfo2()
	return int64(mi.uordblks + mi.hblkhd)
}

// submitRacedForTest runs a Submit of f on v in the state
// accel_host_submit_own allows when another submitter of v raced the
// Submit's op into the ring (host.h): the visit the direct hand-off
// begins on the Submit's helper worker holds that other submitter's op, g
// (a group, newGroupForTest), and the Submit's own op is queued behind
// it. The C scheduler makes that state only in a race; this makes it in
// order: g goes through the hand-off, then f is queued while the helper
// holds v. begun false: no hand-off (no helper worker free, v not idle):
// g and f went to the workers. Then the rest is Submit's (f's error, and
// runtime.Goexit here if f called it).
func (v *VMSession) submitRacedForTest(g *opRec, f func(*Session) error) (begun bool, err error) {
	h := v.rt.host
	c := v.h.enter()
	if c == nil {
		return false, ErrSessionClosed
	}
	defer v.h.exit()
	r := allocRec()
	r.fillSync(v, f, nil, nil)
	hs := h.takeHelper()
	if hs != nil {
		d := &hs.d
		runtime.LockOSThread()
		var ok, outer C.int // outer: the tests call this outside ops
		rc := int(C.goaccel_submit_own(h.rt, c, g.arg(), C.uint(d.w), 0, nil, &d.b.recs[0], &d.b.n, &ok, &outer))
		if rc != C.ACCEL_OK {
			runtime.UnlockOSThread()
			hs.busy.Store(0)
			return false, statusErr(rc)
		}
		v.submitted.Add(uint64(g.gcommitted.Load()))
		begun = ok == C.ACCEL_OK
		if !begun {
			runtime.UnlockOSThread()
			hs.busy.Store(0)
		}
	} else if rc := v.submitRec(g); rc != C.ACCEL_OK {
		return false, statusErr(rc)
	} else {
		v.submitted.Add(uint64(g.gcommitted.Load()))
	}
	if rc := int(C.goaccel_submit(c, r.arg(), 0, C.ACCEL_NO_WAIT, 0, nil)); rc != C.ACCEL_OK {
		panic("submitRacedForTest: " + statusErr(rc).Error())
	}
	v.submitted.Add(1)
	if begun {
		h.runOwn(hs, r, false)
	}
	<-r.waitCh()
	err = r.outcome()
	r.reset()
	freeRec(r)
	if err == errGoexit {
		runtime.Goexit()
	}
	return begun, err
}

// destroyForTest ends rt after stopWorkersForTest as Runtime.Close ends
// it, without the drains: accel_runtime_destroy runs what is queued on
// this goroutine's thread, then closes and frees every session. Their
// handles are then retired, not released (destroy freed them), so that
// their methods answer ErrSessionClosed.
func (rt *Runtime) destroyForTest() error {
	rt.mu.Lock()
	rt.closing = true
	all := make([]*VMSession, 0, len(rt.all))
	for v := range rt.all {
		all = append(all, v)
	}
	rt.mu.Unlock()
	rt.g.retire()
	rc := int(C.accel_runtime_destroy(rt.c))
	for _, v := range all {
		v.closed.Store(true)
		if v.h != nil {
			v.h.g.retire()
		}
	}
	return statusErr(rc)
}

// cUnrunForTest is the C runtime's count of v's ops that completed unrun
// by accel_cancel (a ticket) and by their deadline: which of the two
// stopped an op tells whether its ticket reached C.
func (v *VMSession) cUnrunForTest() (canceled, expired uint64) {
	cs := v.cStatsForTest()
	return uint64(cs.cancelled), uint64(cs.expired)
}

// cRanForTest is the C runtime's count of v's ops that ran, by the
// status each op's visit reported (completed 0, failed non-zero).
func (v *VMSession) cRanForTest() (completed, failed uint64) {
	cs := v.cStatsForTest()
	return uint64(cs.completed), uint64(cs.failed)
}

// cStatsForTest is the C runtime's stats of v's session (zeros once
// closed).
func (v *VMSession) cStatsForTest() (cs C.accel_session_stats) {
	c := v.sess.enter()
	if c == nil {
		return cs
	}
	defer v.h.exit()
	if C.accel_session_get_stats_ex(c, &cs, C.sizeof_accel_session_stats) != C.ACCEL_OK {
		return C.accel_session_stats{}
	}
	return cs
}

// cBlockedForTest is the C runtime's count of rt's workers blocked now and
// of the times its monitor detected a worker blocked (accel_runtime_stats:
// blocked, blocked_detected).
func (rt *Runtime) cBlockedForTest() (blocked uint32, detected uint64) {
	st := rt.cStatsForTest()
	return uint32(st.blocked), uint64(st.blocked_detected)
}

// cStatsForTest is the C runtime's stats of rt.
func (rt *Runtime) cStatsForTest() (st C.accel_runtime_stats) {
	if C.accel_runtime_get_stats(rt.c, &st, C.sizeof_accel_runtime_stats) != C.ACCEL_OK {
		return C.accel_runtime_stats{}
	}
	return st
}

// cPresumedForTest is the C runtime's count of visits begun counted
// blocked because their session's last visit waited (accel_runtime_stats
// blocked_presumed).
func (rt *Runtime) cPresumedForTest() uint64 {
	return uint64(rt.cStatsForTest().blocked_presumed)
}

// cBatchForTest is the C runtime's batch counters of v's session: batches
// run and the time held back (accel_session_stats batches,
// batch_held_ns); zeros once closed.
func (v *VMSession) cBatchForTest() (batches uint64, held time.Duration) {
	cs := v.cStatsForTest()
	return uint64(cs.batches), time.Duration(cs.batch_held_ns)
}

// threadInOpForTest tells what the calling thread says of the op it
// runs: whether accel_current_session() is v's C session, and whether
// the shim's thread-locals name a visit of v's runtime.
func (v *VMSession) threadInOpForTest() (own, inVisit bool) {
	c := v.h.enter()
	if c == nil {
		return false, false
	}
	defer v.h.exit()
	return C.accel_current_session() == c, C.goaccel_in_visit(v.rt.c) != 0
}
