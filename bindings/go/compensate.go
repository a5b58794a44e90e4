package accel

// Compensation for drivers blocked inside an op (docs/go.md, "Ops that
// block"). A driver goroutine whose f (or completion callback) waits, on
// a channel, a lock, time.Sleep, a nested Submit or Sync of another
// session, keeps its C worker slot; C counts such a slot blocked
// (accel_host_blocking_begin) and hands its place on: it wakes a parked
// slot, or asks for another driver (host_grow: goAccelGrow), which gets
// an extra slot from accel_host_slot_add and drives it (extraLoop) until
// C says it is surplus, or it has been idle a while. A slot is counted
// blocked
//   - at once, around the binding's own waits inside an op (waitBlocked:
//     Submit waiting for its op or for queue room, SubmitBatch, Sync,
//     Close draining another session);
//   - for waits the binding cannot see (time.Sleep, a user mutex, I/O),
//     by the monitor: a goroutine, ticking every blockTick while some
//     driver is inside user code (asleep otherwise: an idle runtime has
//     no timer), that samples the CPU clock of a driver's thread at the
//     first tick that finds it inside an op (the driver is locked to its
//     thread during a visit), and counts it blocked at the next tick if
//     it is still inside that op, its thread ran no more than 1/64 of
//     the time between and is not runnable now, and no general-lane
//     driver is parked: 1-2 ms into the wait. The count ends when that op
//     returns.
//     A CPU-bound op, however long, is not counted (computing). A
//     goroutine waiting for a P looks blocked to the clock, as in C a
//     thread waiting for a CPU does not: see computing.
//
// A slot's blocking calls (begin, end) are made by its driver's thread or
// by the monitor, one at a time under the slot's mutex; the driver's
// fast path is one atomic store when user code starts and one CAS when
// it returns (slotMon.st).

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

const (
	// The monitor's tick: a driver is counted blocked at the tick after
	// the one that first found it inside an op (scan).
	blockTick = time.Millisecond
	// An extra driver parked this long leaves its slot.
	extraIdle = 50 * time.Millisecond
)

// extraCap is the runtime's max_extra_workers for base workers: 4 x
// workers, at least 64, at most 4096 (the C bound).
func extraCap(workers int) int {
	n := 4 * workers
	if n < 64 {
		n = 64
	}
	if n > 4096 {
		n = 4096
	}
	return n
}

// slotMon is one C slot's blocked-op state.
type slotMon struct {
	// st: seq<<2 | stUser | stMarked. seq: the slot's user-code runs so
	// far (kept in the word, so that the drivers a slot has over time
	// share it with no other synchronization); stUser: the driver runs
	// user code; stMarked: the monitor counted the slot blocked for that
	// run (the driver ends the count).
	st atomic.Uint64
	mu sync.Mutex // this slot's blocking calls, one at a time
	rt *C.accel_runtime
	w  C.uint
	c  *comp
	// tid: the kernel id of the thread running the slot's visit (the
	// driver is locked to it during the visit), stored by the driver at
	// each visit's begin; 0: not known yet.
	tid atomic.Int32
	// hints: the waits the driver announced that are open now (blockBegin
	// to blockEnd: the binding's own waits, Session.Blocking), written
	// under mu; the monitor neither judges nor marks the slot meanwhile.
	hints atomic.Int32
	// the monitor's: the state it saw at its last tick, and the visit
	// thread's CPU clock when it last looked (cpuOK false: none)
	seen  uint64
	cpu0  uint64
	t0    time.Time
	cpuOK bool
	_     [64]byte
}

const (
	stUser   = 1
	stMarked = 2
)

// comp is a runtime's compensation: its slots' states, the monitor and
// the start of extra drivers.
type comp struct {
	h     *hostWorkers
	slots []slotMon    // by C slot index: helpers, base drivers, extras
	nhelp int          // slots 0..nhelp-1 are helper slots: not compensated
	nbase int          // the first extra slot
	used  atomic.Int32 // extra slots ever added (their indices < nbase+used)

	parked atomic.Int32 // general-lane drivers parked
	armed  atomic.Bool  // the monitor ticks
	wake   chan struct{}
	done   chan struct{} // the monitor returned

	growReq, growing atomic.Bool
	stopMu           sync.Mutex
	stopped          bool
	extras           atomic.Int32 // extra drivers running (a statistic for the tests)
	marks            atomic.Int64 // ops the monitor counted blocked (the same)
	noGrow           atomic.Bool  // tests: no driver is added
}

// hostByC finds a runtime's workers from its C pointer (waitBlocked:
// the visit open on the calling thread may be another runtime's).
var hostByC sync.Map // uintptr -> *hostWorkers

func newComp(h *hostWorkers, nbase, nhelp int) *comp {
	c := &comp{h: h, nhelp: nhelp, nbase: nbase, wake: make(chan struct{}, 1),
		done: make(chan struct{})}
	c.slots = make([]slotMon, nbase+extraCap(nbase-nhelp))
	for i := range c.slots {
		c.slots[i].rt, c.slots[i].w, c.slots[i].c = h.rt, C.uint(i), c
	}
	hostByC.Store(uintptr(unsafe.Pointer(h.rt)), h)
	go c.monitor()
	return c
}

// slot is the state of C slot w; nil for a helper slot.
func (c *comp) slot(w int) *slotMon {
	if w < c.nhelp || w >= len(c.slots) {
		return nil
	}
	return &c.slots[w]
}

// stop ends the starting of extra drivers and the monitor (the drivers
// stop with the workers' quit).
func (c *comp) stop() {
	c.stopMu.Lock()
	c.stopped = true
	c.stopMu.Unlock()
}

// wait waits for the monitor (after the drivers stopped).
func (c *comp) wait() {
	<-c.done
	hostByC.Delete(uintptr(unsafe.Pointer(c.h.rt)))
}

// parking and unparked count the general-lane drivers parked (the
// monitor's "no driver is free").
func (c *comp) parking(lane int) {
	if lane == 0 {
		c.parked.Add(1)
	}
}

func (c *comp) unparked(lane int) {
	if lane == 0 {
		c.parked.Add(-1)
	}
}

// userIn: the driver starts user code (f or a completion).
func (d *driver) userIn() {
	m := d.mon
	if m == nil {
		return
	}
	m.st.Store((m.st.Load()>>2+1)<<2 | stUser) // only the driver writes it now
	if !m.c.armed.Load() {
		m.c.arm()
	}
}

// userOut: it returned (or panicked, or called runtime.Goexit). If the
// monitor counted the slot blocked, the count ends here.
func (d *driver) userOut() {
	m := d.mon
	if m == nil {
		return
	}
	v := m.st.Load()
	if v&stMarked == 0 && m.st.CompareAndSwap(v, v&^stUser) {
		return
	}
	// Marked (its CAS came first): end the count, after the monitor's
	// begin (it holds mu from its CAS to its begin).
	m.mu.Lock()
	C.accel_host_blocking_end(m.rt, m.w)
	m.st.Store(v >> 2 << 2)
	m.mu.Unlock()
}

// arm wakes the monitor (asleep while no driver runs user code).
func (c *comp) arm() {
	if c.armed.CompareAndSwap(false, true) {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// monitor counts drivers blocked in waits the binding cannot see.
func (c *comp) monitor() {
	defer close(c.done)
	quit := c.h.quit
	for {
		select {
		case <-c.wake:
		case <-quit:
			return
		}
		tk := time.NewTicker(blockTick)
		for {
			select {
			case <-tk.C:
			case <-quit:
				tk.Stop()
				return
			}
			if c.scan() {
				continue
			}
			// Nothing in user code: sleep. Dekker with userIn (store
			// st, load armed): either this look sees its store, or it
			// sees armed false and arms.
			c.armed.Store(false)
			if !c.scan() || !c.armed.CompareAndSwap(false, true) {
				break
			}
		}
		tk.Stop()
	}
}

// scan looks at every driver's slot once; it reports whether any runs
// user code.
func (c *comp) scan() bool {
	free := c.parked.Load() > 0
	now := time.Now()
	end := c.nbase + int(c.used.Load())
	busy := false
	for i := c.nhelp; i < end; i++ {
		m := &c.slots[i]
		v := m.st.Load()
		if v&stUser == 0 {
			m.seen = 0
			continue
		}
		busy = true
		if v&stMarked != 0 {
			continue
		}
		if m.hints.Load() > 0 {
			m.seen = 0 // counted already; a window starts after the wait
			continue
		}
		if v != m.seen {
			m.seen = v // first found inside this op: the window starts
			m.sample(now)
			continue
		}
		// computing samples again: its window is from here if it says so.
		if !free && !noMonitorForTest.Load() && !m.computing(now) {
			m.mark(v)
		}
	}
	return busy
}

// sample reads the CPU clock of the thread running m's visit, the start
// of the window computing judges.
func (m *slotMon) sample(now time.Time) {
	var ns C.uint64_t
	m.cpuOK = !cpuClockOffForTest.Load() && C.goaccel_thread_cpu_ns(C.int(m.tid.Load()), &ns) != 0
	m.cpu0, m.t0 = uint64(ns), now
}

// computing reports whether the driver in m's slot ran on a CPU in the
// window since the last sample, and starts the next window. Then it is
// not counted blocked: an op that computes, however long, gets no extra
// driver beside it. Ran means more than 1/64 of the window's time on its
// thread's clock, or its thread running or runnable now (a CPU-bound op
// on a machine busier than its CPUs is runnable, not asleep). A blocked
// driver's thread sleeps in a futex or in I/O from the window's start,
// its clock still; one that computed first and then blocked is counted a
// tick later. The 1/64 (not half) is for Go's preemption: every 10 ms Go
// takes the P from a driver inside a long op, and its locked thread
// sleeps until the P is handed back, hundreds of us on a loaded machine,
// so a window can hold only a few us of its time on a CPU. With no clock
// (the thread unknown or gone): false, counted as without the clock.
//
// What the clock cannot tell: a driver whose goroutine waits for a P
// through a whole window (all GOMAXPROCS busy with other goroutines, or
// a slow hand-back after a preemption) leaves its locked thread asleep,
// as a blocked one does, and is counted; its extra driver then waits for
// a P too, and goes when the op returns. Drivers yield their P between
// visits (yielder), so Go preempts one only inside an op over 10 ms.
func (m *slotMon) computing(now time.Time) bool {
	prev, t0, ok := m.cpu0, m.t0, m.cpuOK
	m.sample(now)
	if !ok || !m.cpuOK || m.cpu0 < prev {
		return false
	}
	if 64*(m.cpu0-prev) > uint64(now.Sub(t0)) {
		return true
	}
	return C.goaccel_thread_runnable(C.int(m.tid.Load())) != 0
}

// mark counts m's slot blocked for op state v, if the op still runs.
// Under m.mu, so that the driver's end (userOut) comes after this begin,
// and the slot's visit is open (the driver is inside the op).
func (m *slotMon) mark(v uint64) {
	m.mu.Lock()
	// A wait the driver announced (hints > 0, set under mu) is counted
	// already: a mark nested in it would outlive it, and the op's CPU
	// work after the wait would keep an extra driver beside it.
	if m.hints.Load() == 0 && m.st.CompareAndSwap(v, v|stMarked) {
		m.c.marks.Add(1)
		C.accel_host_blocking_begin(m.rt, m.w)
	}
	m.mu.Unlock()
}

// blockBegin: the calling goroutine is about to wait (Submit, Sync,
// Close, SubmitBatch). If it is a driver inside an op, its slot is
// counted blocked until blockEnd; nil: not in an op of a driver slot.
func blockBegin() *slotMon {
	var w C.uint
	rt := C.goaccel_cur_slot(&w)
	if rt == nil {
		return nil
	}
	hv, ok := hostByC.Load(uintptr(unsafe.Pointer(rt)))
	if !ok {
		return nil
	}
	m := hv.(*hostWorkers).comp.slot(int(w))
	if m == nil {
		return nil
	}
	m.mu.Lock()
	rc := C.accel_host_blocking_begin(rt, w)
	if rc == C.ACCEL_OK {
		m.hints.Add(1) // under mu: mark sees it or came first
	}
	m.mu.Unlock()
	if rc != C.ACCEL_OK {
		return nil
	}
	return m
}

// blockEnd ends blockBegin's count (m nil: nothing).
func (m *slotMon) blockEnd() {
	if m == nil {
		return
	}
	m.mu.Lock()
	C.accel_host_blocking_end(m.rt, m.w)
	m.hints.Add(-1)
	m.mu.Unlock()
}

// waitRec waits for ch (an op's result) as a blocked wait when it has to.
func waitRec(ch <-chan struct{}) {
	select {
	case <-ch:
		return
	default:
	}
	m := blockBegin()
	<-ch
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
	select {
	case <-ch:
		return true
	case <-done:
		return false
	}
}

// goAccelGrow is the runtime's host_grow: a blocked slot is owed another
// driver. Called inside accel calls: it only signals (one grower
// goroutine at a time adds the slots owed).
//
//export goAccelGrow
func goAccelGrow(id C.uintptr_t) {
	if h, ok := hostRuntimes.Load(uintptr(id)); ok {
		c := h.(*hostWorkers).comp
		if noGrowForTest.Load() || c.noGrow.Load() {
			return
		}
		c.growReq.Store(true)
		if c.growing.CompareAndSwap(false, true) {
			go c.grower()
		}
	}
}

// noGrowForTest plants the bug the tests must catch: no driver is added
// (comp.noGrow: for one runtime, a test whose op must wait for a worker).
var noGrowForTest atomic.Bool

// noMonitorForTest plants another: the monitor counts no op blocked (only
// the binding's own waits count).
var noMonitorForTest atomic.Bool

// cpuClockOffForTest plants a third: the monitor reads no CPU clock, so
// a CPU-bound op as long as its window is counted blocked (as before
// the clock).
var cpuClockOffForTest atomic.Bool

// grower adds the slots C owes and starts a driver on each. A request
// that comes while it runs is seen by its last look (growReq, then
// growing: seq-cst, so either it sees the request or the requester's
// CAS on growing succeeds and starts another grower).
func (c *comp) grower() {
	for {
		c.growReq.Store(false)
		for c.addDriver() {
		}
		c.growing.Store(false)
		if !c.growReq.Load() || !c.growing.CompareAndSwap(false, true) {
			return
		}
	}
}

// addDriver adds one slot if one is owed and starts its driver.
func (c *comp) addDriver() bool {
	c.stopMu.Lock()
	defer c.stopMu.Unlock()
	if c.stopped {
		return false
	}
	var w C.uint
	if C.accel_host_slot_add(c.h.rt, &w) != C.ACCEL_OK {
		return false
	}
	c.noteSlot(int(w))
	c.extras.Add(1)
	c.h.startDriver(&driver{h: c.h, w: int(w), lane: 0, b: new(slotBuf), extra: true})
	return true
}

// noteSlot widens the monitor's scan to extra slot w.
func (c *comp) noteSlot(w int) {
	for {
		u := c.used.Load()
		if int32(w-c.nbase) < u || c.used.CompareAndSwap(u, int32(w-c.nbase+1)) {
			return
		}
	}
}

// extraLoop drives an extra slot: loop's visits, but each ends with a
// stopping end and a leave if C finds the slot surplus (more extras than
// blocked slots), and a spell parked longer than extraIdle ends with a
// last look and a leave. A leave while slots are still owed one adds a
// slot again at once (accel_host_slot_add): a submit that found this
// slot not parked just before it left asked for no driver.
func (d *driver) extraLoop() {
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
	var mode, nprev C.uint
	spins := 0
	y := yielder{io: &d.b.io, count: &h.yields}
	y.reset()
	if d.open {
		C.goaccel_visit_move(h.rt, d.sess, C.uint(d.w), &d.b.io.tid)
		d.runVisit()
		mode, nprev = C.GOACCEL_STEP_END, C.uint(d.n)
	}
	for {
		var left C.int
		rc := int(C.goaccel_extra_step(h.rt, C.uint(d.w), mode, &d.b.status[0], nprev,
			&d.b.recs[0], C.ACCEL_HOST_VISIT_MAX, &d.b.n, &left, &d.b.io))
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
			d.sess = C.accel_current_session()
			d.runVisit()
			mode, nprev, spins = C.GOACCEL_STEP_END, d.b.n, 0
			continue
		}
		runtime.UnlockOSThread()
		if nextIdleStep(&mode, &nprev, &spins) {
			continue
		}
		h.comp.parking(0)
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
			C.accel_host_slot_leave(h.rt, C.uint(d.w), 0)
			gone()
			return
		}
		tm.Stop()
		h.comp.unparked(0)
		runtime.LockOSThread()
		mode, nprev, spins = C.GOACCEL_STEP_UNIDLE, 0, 0
		y.reset()
		if !idle {
			continue
		}
		// Idle a while: end the spell with one more look; nothing: leave.
		rc = int(C.goaccel_host_step(h.rt, C.uint(d.w), C.GOACCEL_STEP_UNIDLE, nil, 0,
			&d.b.recs[0], C.ACCEL_HOST_VISIT_MAX, &d.b.n, &d.b.io))
		if rc == C.ACCEL_OK {
			d.n, d.i, d.open = int(d.b.n), 0, true
			d.sess = C.accel_current_session()
			d.runVisit()
			mode, nprev = C.GOACCEL_STEP_END, d.b.n
			continue
		}
		C.accel_host_slot_leave(h.rt, C.uint(d.w), 0)
		var w C.uint
		h.comp.stopMu.Lock()
		ok := !h.comp.stopped && C.accel_host_slot_add(h.rt, &w) == C.ACCEL_OK
		h.comp.stopMu.Unlock()
		if !ok {
			runtime.UnlockOSThread()
			gone()
			return
		}
		// Still owed: the same driver on the slot added (its idle
		// announcement and look come next).
		h.comp.noteSlot(int(w))
		d.w, d.mon = int(w), h.comp.slot(int(w))
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

// submitBlocked is the synchronous submit of r waiting for room without
// limit, the wait counted blocked.
func submitBlocked(c *C.accel_session, r *opRec, deadline C.int64_t, t *C.accel_ticket) int {
	rc := int(C.goaccel_submit(c, r.arg(), deadline, C.ACCEL_NO_WAIT, 1, t))
	if rc != C.ACCEL_EAGAIN {
		return rc
	}
	m := blockBegin()
	rc = int(C.goaccel_submit(c, r.arg(), deadline, C.ACCEL_FOREVER, 1, t))
	m.blockEnd()
	return rc
}
