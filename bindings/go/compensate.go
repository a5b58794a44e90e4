package accel

// Compensation for host workers blocked inside an op (docs/go.md, "Ops that
// block"). A host worker whose f (or completion callback) waits, on
// a channel, a lock, time.Sleep, a nested Submit or Sync of another
// session, keeps its C worker index; C counts such a worker blocked and
// hands its place on: it wakes a parked worker, or asks for another host worker
// (host_grow: goAccelGrow), which gets an extra worker from
// accel_host_worker_add and drives it (extraLoop) until C says it is
// surplus, or it has been idle a while. A worker is counted blocked
//   - at once, around the binding's own waits inside an op (blockBegin:
//     Submit waiting for its op or for queue room, SubmitBatch, Sync,
//     Close draining another session, Session.Blocking);
//   - for waits the binding cannot see (time.Sleep, a user mutex, I/O),
//     by the C runtime's monitor (runtime/compensate.c), which watches
//     the host workers as it watches its own worker threads: the
//     thread a worker's visit runs on (the host worker is locked to it during
//     the visit, so it is the thread that runs f) is counted blocked
//     when it spent under 1/64 of a tick on a CPU and is not runnable,
//     while work waits or no general-lane worker is parked (include/accel/
//     host.h, "Blocked host workers"). Each f bumps its worker's op word
//     (hostWorker.watchOps), so a wait in each op of a visit is judged on a
//     window from the first tick that finds that op. A
//     CPU-bound op, however long, is not counted. A goroutine waiting
//     for a P looks blocked to the thread's clock (its locked thread
//     sleeps); NewRuntime gives C GOMAXPROCS as host_cpus, so after a
//     window in which the process ran on GOMAXPROCS - 1/2 CPUs or more no
//     count begins (an extra worker would wait for a P too). A goroutine
//     waiting a whole tick for a P while Ps sit idle, or while other
//     processes leave this one fewer CPUs, is counted; its extra worker
//     goes at the end of its visit once the monitor sees the op on a
//     CPU again. Host workers yield their P between visits (yielder), so Go
//     preempts one only inside an op over 10 ms.
// Every number of it (the tick, the thresholds, the cap on extra workers,
// how long an idle extra stays) is the C runtime's; the binding only
// starts the host workers C asks for.

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// extraIdle: an extra worker parked this long leaves (what the
// C runtime's own extra workers do).
const extraIdle = time.Duration(C.ACCEL_HOST_EXTRA_IDLE_NS)

// comp is a runtime's compensation: the start of extra workers.
type comp struct {
	h                *hostWorkers
	growReq, growing atomic.Bool
	stopMu           sync.Mutex
	stopped          bool
	extras           atomic.Int32 // extra workers running (a statistic for the tests)
}

func newComp(h *hostWorkers) *comp { return &comp{h: h} }

// stop ends the starting of extra workers (the host workers stop with the
// workers' quit).
func (c *comp) stop() {
	c.stopMu.Lock()
	c.stopped = true
	c.stopMu.Unlock()
}

// blockedWorker is a wait counted blocked (blockBegin); nil: none.
type blockedWorker struct {
	rt *C.accel_runtime
	w  C.uint
}

// blockBegin: the calling goroutine is about to wait (Submit, Sync,
// Close, SubmitBatch, Session.Blocking). If it is a host worker inside an op,
// its worker is counted blocked until blockEnd (the goroutine is locked to
// the visit's thread, so the end comes from the same thread); nil: not
// in an op of a host worker (a submitter running its own op holds no
// worker).
func blockBegin() *blockedWorker {
	var w C.uint
	rt := C.goaccel_blocking_begin(&w)
	if rt == nil {
		return nil
	}
	return &blockedWorker{rt: rt, w: w}
}

// blockEnd ends blockBegin's count (m nil: nothing).
func (m *blockedWorker) blockEnd() {
	if m != nil {
		C.accel_host_blocking_end(m.rt, m.w)
	}
}

// park: inside blockBegin's count, the goroutine is about to wait on a Go
// channel, and nothing of its op runs until unpark. The visit its thread
// drives is detached parked (goaccel_visit_park: that time is credited as
// off a CPU, as the wait's own would be) and the goroutine unlocked from
// the thread, so that the thread runs other goroutines meanwhile: a
// locked thread sleeps with its goroutine, and Go hands its P to another
// thread at the wait and back at the wake (a nested Submit's round trip:
// BenchmarkNestedSubmit). True: parked; false (m nil, or an op run aside,
// whose visit another thread drives): nothing done.
func (m *blockedWorker) park() bool {
	if m == nil || C.goaccel_visit_park(m.rt, m.w) == 0 {
		return false
	}
	runtime.UnlockOSThread()
	return true
}

// unpark ends park (parked: its result): the goroutine locks itself to
// the thread it runs on now and the visit goes on there
// (goaccel_visit_attach), before the count ends.
func (m *blockedWorker) unpark(parked bool) {
	if parked {
		runtime.LockOSThread()
		C.goaccel_visit_attach(m.rt, m.w, 1)
	}
}

// recv receives from ch parked (m nil: just receives). The parked span
// is the receive and nothing else, so no code of the op, nor the
// package's own work after the wait, runs detached (credited off a CPU):
// every park goes through recv or recvOr, or is an announced wait's
// (away.go), whose code the op itself says waits.
func (m *blockedWorker) recv(ch <-chan struct{}) {
	p := m.park()
	<-ch
	m.unpark(p)
}

// recvOr receives from ch or done, parked as recv; true: ch.
func (m *blockedWorker) recvOr(ch, done <-chan struct{}) bool {
	p := m.park()
	defer m.unpark(p) // a receive does not panic or Goexit: a defer for form
	select {
	case <-ch:
		return true
	case <-done:
		return false
	}
}

// waitRec waits for ch (an op's result) as a blocked wait when it has to.
func waitRec(ch <-chan struct{}) {
	select {
	case <-ch:
		return
	default:
	}
	m := blockBegin()
	m.recv(ch)
	m.blockEnd()
}

// waitRecCtx waits for ch or done; true: ch.
func waitRecCtx(ch, done <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
	}
	m := blockBegin()
	defer m.blockEnd()
	return m.recvOr(ch, done)
}

// goAccelGrow is the runtime's host_grow: a blocked worker is owed another
// host worker. Called inside accel calls, or on the C monitor's thread: it
// only signals (one grower goroutine at a time adds the workers owed).
//
//export goAccelGrow
func goAccelGrow(id C.uintptr_t) {
	if h, ok := hostRuntimes.Load(uintptr(id)); ok {
		if growOff() {
			return
		}
		c := h.(*hostWorkers).comp
		c.growReq.Store(true)
		if c.growing.CompareAndSwap(false, true) {
			go c.grower()
		}
	}
}

// grower adds the workers C owes and starts a host worker on each. A request
// that comes while it runs is seen by its last look (growReq, then
// growing: seq-cst, so either it sees the request or the requester's
// CAS on growing succeeds and starts another grower).
func (c *comp) grower() {
	for {
		c.growReq.Store(false)
		for c.addExtra() {
		}
		c.growing.Store(false)
		if !c.growReq.Load() || !c.growing.CompareAndSwap(false, true) {
			return
		}
	}
}

// addExtra adds one worker if one is owed and starts its host worker.
func (c *comp) addExtra() bool {
	c.stopMu.Lock()
	defer c.stopMu.Unlock()
	if c.stopped {
		return false
	}
	var w C.uint
	if C.accel_host_worker_add(c.h.rt, &w) != C.ACCEL_OK {
		return false
	}
	c.extras.Add(1)
	c.h.startWorker(&hostWorker{h: c.h, w: int(w), lane: 0, b: new(batchBuf), extra: true})
	return true
}

// extraLoop drives an extra worker: loop's visits, but each ends with a
// stopping end and a leave if C finds the worker surplus (more extras than
// blocked workers), and a spell parked longer than extraIdle ends with a
// last look and a leave. A leave while workers are still owed one adds a
// worker again at once (accel_host_worker_add): a submit that found this
// worker not parked just before it left asked for no host worker.
func (d *hostWorker) extraLoop() {
	h := d.h
	normal := false
	defer func() {
		if !normal {
			d.exited()
		}
	}()
	gone := func() {
		normal = true
		h.comp.extras.Add(-1)
		h.wg.Done()
	}
	runtime.LockOSThread()
	d.watchOps()
	var mode, nprev C.uint
	spins := 0
	y := yielder{io: &d.b.io, count: &h.yields}
	y.reset()
	if d.open {
		C.goaccel_visit_attach(h.rt, C.uint(d.w), 1)
		d.runVisit()
		mode, nprev = C.GOACCEL_STEP_END, C.uint(d.n)
	}
	for {
		var left C.int
		rc := int(C.goaccel_extra_step(h.rt, C.uint(d.w), mode, &d.b.status[0], nprev,
			&d.b.recs[0], C.GOACCEL_VISIT_CAP, &d.b.n, &left, &d.b.io))
		if left != 0 {
			runtime.UnlockOSThread()
			gone()
			return
		}
		if d.b.io.yield != 0 { // the visit ended, nothing begun
			y.due()
			mode, nprev = 0, 0
			continue
		}
		if rc == C.ACCEL_OK {
			d.n, d.i, d.open = int(d.b.n), 0, true
			d.runVisit()
			mode, nprev, spins = C.GOACCEL_STEP_END, d.b.n, 0
			continue
		}
		runtime.UnlockOSThread()
		if nextIdleStep(&mode, &nprev, &spins) {
			continue
		}
		tm := time.NewTimer(extraIdle)
		idle := false
		select {
		case <-h.lanes[0]:
		case <-tm.C:
			idle = true
		case <-h.quit:
			tm.Stop()
			C.goaccel_host_step(h.rt, C.uint(d.w), C.GOACCEL_STEP_UNIDLE|C.GOACCEL_STEP_STOP,
				nil, 0, nil, 0, nil, nil)
			C.accel_host_worker_leave(h.rt, C.uint(d.w), 0)
			gone()
			return
		}
		tm.Stop()
		runtime.LockOSThread()
		mode, nprev, spins = C.GOACCEL_STEP_UNIDLE, 0, 0
		y.reset()
		if !idle {
			continue
		}
		// Idle a while: end the spell with one more look; nothing: leave.
		rc = int(C.goaccel_host_step(h.rt, C.uint(d.w), C.GOACCEL_STEP_UNIDLE, nil, 0,
			&d.b.recs[0], C.GOACCEL_VISIT_CAP, &d.b.n, &d.b.io))
		if rc == C.ACCEL_OK {
			d.n, d.i, d.open = int(d.b.n), 0, true
			d.runVisit()
			mode, nprev = C.GOACCEL_STEP_END, d.b.n
			continue
		}
		C.accel_host_worker_leave(h.rt, C.uint(d.w), 0)
		var w C.uint
		h.comp.stopMu.Lock()
		ok := !h.comp.stopped && C.accel_host_worker_add(h.rt, &w) == C.ACCEL_OK
		h.comp.stopMu.Unlock()
		if !ok {
			runtime.UnlockOSThread()
			gone()
			return
		}
		// Still owed: the same goroutine on the worker index added (its idle
		// announcement and look come next).
		d.w = int(w)
		d.watchOps()
		mode, nprev = 0, 0
	}
}

// syncBlocked is accel_session_sync(c, FOREVER), its wait counted blocked.
func syncBlocked(c *C.accel_session) int {
	rc := int(C.accel_session_sync(c, C.ACCEL_NO_WAIT))
	if rc != C.ACCEL_ETIMEDOUT {
		return rc
	}
	m := blockBegin()
	rc = int(C.accel_session_sync(c, C.ACCEL_FOREVER))
	m.blockEnd()
	return rc
}
