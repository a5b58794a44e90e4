package accel

// Announced waits away from the thread. A host worker runs an op's f on
// a goroutine locked to the visit's thread: C tells an op's own session
// by that thread (accel_current_session, EDEADLK), and the monitor and
// the charge read its clock. A locked goroutine that waits sleeps with
// its thread, and its wake costs Go a P handed to that thread and back:
// in the node example's blocking-hint scenario (ops that wait 1-5 ms in
// s.Blocking) the locked wait cost 6-8% of accel's work against the old
// design's plain goroutines (docs/go.md). So Session.Blocking on a host
// worker parks the visit, as the package's own channel waits do
// (compensate.go), and runs wait unlocked: away.
//
// Away, the thread no longer names the op's session, so the goroutine is
// recorded here (goroutine.Self) under the session whose op it runs,
// and every call that refuses or changes course inside a session's own op
// (Submit, SubmitBatch, Batcher.Submit, VMSession.Sync, VMSession.Close,
// Runtime.Close) also asks ownOp. A goroutine that wait starts is not the
// op's, as on the thread before: neither is seen as inside the op.

/*
#include "shim.h"
*/
import "C"

import (
	"sync"
	"sync/atomic"

	"accel/internal/goroutine"
)

// awayWaits are the goroutines away now: n of them, and per C session
// whose op waits away, that wait's goroutine and runtime. A session
// runs one op at a time, so it has one wait away at most.
var awayWaits struct {
	n atomic.Int32 // 0: every check is this load
	m sync.Map     // *C.accel_session -> awayWait
}

// awayWait is one goroutine away: its identity (goroutine.Self, unique
// among live goroutines: the record goes before the goroutine can end)
// and its op's C runtime.
type awayWait struct {
	g  uintptr
	rt *C.accel_runtime
}

// awayBegin records the calling goroutine as away in an op of c (of
// runtime rt); false (nothing recorded): its identity is unknown, or c has a
// wait away already (never: a session runs one op at a time, and a wait
// away runs no visit of its own).
func awayBegin(c *C.accel_session, rt *C.accel_runtime) bool {
	g := goroutine.Self()
	if g == 0 {
		return false
	}
	// Only this goroutine finds the record (awayOwn compares identities), and it
	// sees its own writes: the count and the entry need no order between
	// them for it; another goroutine finds another identity or nothing.
	awayWaits.n.Add(1)
	if _, had := awayWaits.m.LoadOrStore(c, awayWait{g: g, rt: rt}); had {
		awayWaits.n.Add(-1)
		return false
	}
	return true
}

// awayEnd ends awayBegin's record of c.
func awayEnd(c *C.accel_session) {
	awayWaits.m.Delete(c)
	awayWaits.n.Add(-1)
}

// ownOp reports whether the caller runs inside one of c's ops: on the
// visit's thread, or away in its announced wait.
func ownOp(c *C.accel_session) bool {
	return C.accel_current_session() == c || awayOwn(c)
}

// awayOwn reports whether the calling goroutine is away in an op of c.
func awayOwn(c *C.accel_session) bool {
	if awayWaits.n.Load() == 0 {
		return false
	}
	w, ok := awayWaits.m.Load(c)
	return ok && w.(awayWait).g == goroutine.Self()
}

// awayIn reports whether the calling goroutine is away in an op of a
// session of runtime rt.
func awayIn(rt *C.accel_runtime) bool {
	if awayWaits.n.Load() == 0 {
		return false
	}
	g := goroutine.Self()
	in := false
	awayWaits.m.Range(func(_, v any) bool {
		w := v.(awayWait)
		in = w.g == g && w.rt == rt
		return !in
	})
	return in
}

// away is blockBegin's count m's announced wait run away from the
// thread: it records the goroutine under the op's session, then parks
// the visit (m.park); the zero value: not away (m nil, an op run aside,
// no session on the thread, or the goroutine's identity unknown), and wait
// runs on the thread. back ends it.
type away struct {
	m *blockedWorker
	c *C.accel_session
}

func (m *blockedWorker) away() away {
	if m == nil {
		return away{}
	}
	c := C.accel_current_session()
	if c == nil || !awayBegin(c, m.rt) {
		return away{}
	}
	if !m.park() {
		awayEnd(c)
		return away{}
	}
	return away{m: m, c: c}
}

// back: the goroutine locks itself to the thread it runs on and the visit
// goes on there (m.unpark), then the record ends: at every point one of
// the thread and the record names the op's session.
func (a away) back() {
	if a.c == nil {
		return
	}
	a.m.unpark(true)
	awayEnd(a.c)
}
