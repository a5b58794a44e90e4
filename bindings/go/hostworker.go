package accel

// Host-driven workers: the runtime's workers are goroutines that take
// batches of ops from the C scheduler (accel_host_visit_begin), run the Go
// ops here, and report back (accel_host_visit_end). No op moves to another
// OS thread, no C thread calls into Go for an op, and waiting and waking
// are goroutine switches Go's scheduler sees (docs/go.md).
//
// These goroutines run the ops (f and the completions). A submitting
// goroutine runs at most its own op, and only when the scheduler hands it
// its session directly (submitOwn: the session was idle and would be
// picked first); it never runs another op, of its session or another, so
// a caller that holds a lock around Submit, or whose ctx ends, is never
// held up by someone else's op, and a runtime.Goexit in someone else's f
// never ends the caller's goroutine.
//
// A host worker is started per C worker index by startHostWorkers,
// again by the host worker that replaces one whose op called runtime.Goexit,
// and for a helper worker's visit that its submitter hands on (runOwn)
// (startWorker): the one place that starts a host worker, so that another
// reason to start one (a worker C adds while a worker is blocked) is one
// more call of it.

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// hostWorkers are a runtime's host workers, one per C worker index.
type hostWorkers struct {
	rt    *C.accel_runtime
	lanes [2]chan struct{} // parked workers of lane 0 (general), 1 (short) wait here
	id    uintptr          // the runtime's wake id (goAccelWake)
	quit  chan struct{}    // closed by stop
	wg    sync.WaitGroup   // one per host worker running
	// helpers are C workers 0..len-1 (short lane, never idle-announced, so
	// never woken) on which a synchronous Submit may run its own op
	// (submitOwn); the host workers come after them.
	helpers []helperWorker
	comp    *comp        // compensation for host workers blocked in an op (compensate.go)
	yields  atomic.Int64 // host workers' yields of their P (yielder.due; a statistic for the tests)
}

// helperWorker is one helper worker: its busy word (taken by CAS: one goroutine
// drives it at a time) and batch, on cache lines of their own.
type helperWorker struct {
	busy atomic.Uint32
	d    hostWorker
	_    [64]byte
}

// batchBuf is a worker's batch, which the C step reads and fills (C keeps
// no pointer to it).
type batchBuf struct {
	recs   [C.GOACCEL_VISIT_CAP]C.uintptr_t
	status [C.GOACCEL_VISIT_CAP]C.int
	n      C.uint
	io     C.goaccel_step_io // the host worker's side of its steps (yielder)
}

// hostRuntimes maps a runtime's wake id (its host_wake_arg) to its
// workers, for goAccelWake: read on every wake, written at start and stop.
var (
	hostRuntimes sync.Map // uintptr -> *hostWorkers
	hostNextID   atomic.Uintptr
)

// startHostWorkers starts the host workers of rt, whose runtime was
// created with wake id id.
func startHostWorkers(rt *C.accel_runtime, id uintptr, workers, short, nhelp int) *hostWorkers {
	h := &hostWorkers{rt: rt, id: id, quit: make(chan struct{})}
	h.helpers = make([]helperWorker, nhelp)
	for w := range h.helpers {
		h.helpers[w].d = hostWorker{h: h, w: w, lane: 1, b: new(batchBuf)}
	}
	// C claims at most one wake per parked worker, so a lane's channel
	// holds at most one token per worker of the lane (extra workers, as many
	// as C allows, park on lane 0). Its elements take no memory: it is
	// made large enough never to be full.
	h.lanes[0] = make(chan struct{}, math.MaxInt32)
	h.lanes[1] = make(chan struct{}, math.MaxInt32)
	h.comp = newComp(h)
	hostRuntimes.Store(id, h)
	for w := 0; w < workers; w++ {
		lane := 0
		if w < short {
			lane = 1
		}
		h.startWorker(&hostWorker{h: h, w: nhelp + w, lane: lane, b: new(batchBuf)})
	}
	return h
}

// startWorker starts a goroutine that drives d's worker (from the open
// visit d holds, if any).
func (h *hostWorkers) startWorker(d *hostWorker) {
	h.wg.Add(1)
	if d.extra {
		go d.extraLoop() // a worker added for a blocked one (compensate.go)
		return
	}
	if d.help != nil {
		go d.helpLoop()
		return
	}
	go d.loop()
}

// goAccelWake is the runtime's host_wake: C claimed a parked worker of lane
// (ACCEL_HOST_LANE_*) of the runtime with wake id id and asks for it to be
// woken. Called from inside whatever C call made work runnable, on that
// call's thread, so the wake is in the lane's channel before that call
// goes on (and possibly blocks).
//
//export goAccelWake
func goAccelWake(id C.uintptr_t, lane C.uint) {
	if h, ok := hostRuntimes.Load(uintptr(id)); ok {
		h.(*hostWorkers).post(int(lane))
	}
}

// post wakes one parked worker of lane (a token it finds when it parks or
// is parked on).
func (h *hostWorkers) post(lane int) {
	ch := h.lanes[0]
	if lane == C.ACCEL_HOST_LANE_SHORT {
		ch = h.lanes[1]
	}
	ch <- struct{}{} // never full (startHostWorkers)
}

// stop makes the host workers return once they find no work, and
// waits for them.
func (h *hostWorkers) stop() {
	// Take every helper worker: no submitter drives one from here on, and
	// one driving one now (running its op) finishes first.
	for w := range h.helpers {
		for !h.helpers[w].busy.CompareAndSwap(0, 1) {
			time.Sleep(50 * time.Microsecond)
		}
	}
	h.comp.stop() // no host worker is added from here on
	close(h.quit)
	h.wg.Wait()
	hostRuntimes.Delete(h.id)
}

// A host worker that has held its P for yieldAfter, running visits back to
// back, ends the last one alone and calls runtime.Gosched before it
// begins the next (yielder): the goroutines waiting for its P (the
// node's network handlers, the submitters its ops' results woke) run
// then, not when Go preempts the host worker 10 ms in. Go preempts a
// goroutine only after 10 ms and a host worker with queued work never parks,
// so without it every P held by a host worker left the rest of the program
// waiting up to 10 ms per turn (measured in the node example under
// overload: 30 ms from an op's arrival to its Submit call at the median).
// An op longer than yieldAfter still runs whole; Go's preemption is what
// interrupts it. A yield costs the host worker its turn behind the
// goroutines runnable; what it buys is their turn sooner, and among them
// the host workers whose ops' waits ended (a timer fires, and its
// goroutine runs, only when a P schedules). 1 ms: in the node example's
// blocking scenario it shortens an op's wait for a P after its wait and
// Critical's p99 against 2 ms, and takes most of what 500 us gives at
// half the yields; the work of the other scenarios does not tell the
// three apart (bench/results/go-node-yield.txt).
const yieldAfter = 1 * time.Millisecond

// Idle workers spin this many times (a Gosched each, so that submitters on
// the same P run) before they announce idle and park: a park costs the
// host worker a channel receive and its thread a sleep, and its waker a
// claim and a send. 0, 2 and 6 could not be told apart in the node
// example's batch-low scenario (bench/results/go-node-yield.txt).
const hostSpins = 6

// Where a host worker is in its op: what the exit of its goroutine in the
// middle of a visit means (hostWorker.loop's deferred check).
const (
	phaseOut  uint8 = iota // not in user code
	phaseF                 // in f: a panic is recovered there, so only runtime.Goexit gets out
	phaseDone              // in a completion callback: a panic or Goexit is the caller's bug
)

// hostWorker is one goroutine's drive of a C worker index: its batch, the open
// visit (n ops, op i running) and the records it is done with.
type hostWorker struct {
	h     *hostWorkers
	w     int
	lane  int
	b     *batchBuf
	fl    recList
	n, i  int
	open  bool // a visit is open (b.recs[0..n) its ops, i the next to run)
	phase uint8
	// The op running, for the Goexit salvage: its record, and for a
	// group the index of its op in it.
	cur   *opRec
	curOp int
	extra bool // an extra worker, added for a blocked one (extraLoop)
	// A helper worker whose open visit this goroutine runs for its
	// submitter (helpLoop): at the visit's end the worker goes back.
	help *helperWorker
	// A group whose op restOp-1 ended the last host worker: its ops from
	// restOp on run first (op i of the visit).
	rest   *opRec
	restOp int
	// A Batcher's batch (batch.go): run its items, runIdx their ops'
	// indices in the visit and runEnd the index after its last op
	// (buffers kept across visits); bat the items while fn runs, for
	// the Goexit check (nil otherwise).
	run    []*opRec
	runIdx []int
	runEnd int
	bat    []*opRec
	// opw: the worker's op word (accel_host_op_word), bumped as each f
	// starts (callF), so that the C monitor judges a wait in each op of a
	// visit on its own; nil on a helper worker (its visits are not watched).
	opw *uint64
}

// watchOps points d at its worker's op word (after the worker changed).
func (d *hostWorker) watchOps() {
	d.opw = (*uint64)(unsafe.Pointer(C.accel_host_op_word(d.h.rt, C.uint(d.w))))
}

// nextIdleStep is a host worker's way to park after a step found no visit
// (called with the OS thread unlocked): a few Gosched spins, each followed
// by another step, then the idle announcement and one step more. True:
// step again (the thread is locked again); false: idle was announced and
// that step found nothing either, so park.
func nextIdleStep(mode, nprev *C.uint, spins *int) bool {
	if *mode&C.GOACCEL_STEP_IDLE != 0 {
		return false
	}
	if *spins < hostSpins {
		*spins++
		runtime.Gosched()
		runtime.LockOSThread()
		*mode, *nprev = 0, 0
		return true
	}
	// Announce idle, then look once more (the next step).
	runtime.LockOSThread()
	*mode, *nprev = C.GOACCEL_STEP_IDLE, 0
	return true
}

// yielder is a host worker's record of its hold on a P. Its steps end each
// visit with the time the visit's charge read (goaccel_step_io); once
// that is yieldAfter past the last look, the step begins nothing and the
// host worker looks (due).
type yielder struct {
	io    *C.goaccel_step_io // the host worker's batchBuf's: yield_at
	nvcsw uint64             // the thread's voluntary context switches at the last look
	tid   C.int              // ... and that thread; 0: none
	count *atomic.Int64
}

// reset starts a new hold: the host worker, on a locked thread, runs again
// (after parking or yielding). One syscall.
func (y *yielder) reset() {
	var nv C.uint64_t
	var now C.int64_t
	if C.goaccel_self_switches(&y.tid, &nv, &now) == 0 {
		y.tid = 0 // no count: the next look takes it
	}
	y.look(uint64(nv), int64(now))
}

// look records the baseline and when the next look is due.
func (y *yielder) look(nvcsw uint64, now int64) {
	y.nvcsw = nvcsw
	y.io.yield_at = C.int64_t(now + int64(yieldAfter))
	if yieldOff() {
		y.io.yield_at = C.int64_t(math.MaxInt64)
	}
}

// due: the host worker's step ended a visit yieldAfter past the last look and
// began nothing; its thread is locked. It asks the kernel whether the
// thread has slept since the last look. If not, the host worker has held its
// P all that time: it yields the P with the thread unlocked (a Gosched
// on a locked thread hands the P to another thread and back) and locks
// again. A host worker whose op waited (time.Sleep, a channel, I/O: its
// locked thread slept) gave its P up meanwhile and does not yield: a
// yield costs it its turn (it queues behind every goroutine runnable);
// yielding on the wall clock alone cost the node example's blocking
// scenario about 6% of its work. The kernel preempting the thread is not
// a sleep: the host worker still holds its P then. Either way its next step
// begins with nothing to end.
func (y *yielder) due() {
	var tid C.int
	var nv C.uint64_t
	var now C.int64_t
	ok := C.goaccel_self_switches(&tid, &nv, &now) != 0
	if !ok || tid != y.tid || uint64(nv) != y.nvcsw {
		y.tid = tid
		if !ok {
			y.tid = 0
		}
		y.look(uint64(nv), int64(now))
		return
	}
	runtime.UnlockOSThread()
	runtime.Gosched()
	runtime.LockOSThread()
	y.count.Add(1)
	y.reset() // maybe another thread now
}

// loop drives the worker: begin a visit, run its ops, end it (ended and the
// next begun in one crossing), park when there is none.
func (d *hostWorker) loop() {
	h := d.h
	normal := false
	defer func() {
		if !normal {
			d.exited()
		}
	}()
	// Locked during visits: begin and end of a visit run on one thread
	// (accel.h), and C tells an op's own session by the thread (EDEADLK
	// from Sync, Close from inside an op).
	runtime.LockOSThread()
	d.watchOps()
	var mode C.uint
	var nprev C.uint
	spins := 0
	y := yielder{io: &d.b.io, count: &h.yields}
	y.reset()
	if d.open {
		// Taking over a visit whose host worker ended in one of its ops.
		C.goaccel_visit_attach(h.rt, C.uint(d.w), 1)
		d.runVisit()
		mode, nprev = C.GOACCEL_STEP_END, C.uint(d.n)
	}
	for {
		rc := int(C.goaccel_host_step(h.rt, C.uint(d.w), mode, &d.b.status[0], nprev,
			&d.b.recs[0], C.GOACCEL_VISIT_CAP, &d.b.n, &d.b.io))
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
		// No visit open.
		runtime.UnlockOSThread()
		if nextIdleStep(&mode, &nprev, &spins) {
			continue
		}
		// Idle announced and still nothing: park until a submitter posts
		// a wake for this lane (a wake posted since the announcement is
		// in the channel: none is lost).
		select {
		case <-h.lanes[d.lane]:
		case <-h.quit:
			C.goaccel_host_step(h.rt, C.uint(d.w), C.GOACCEL_STEP_UNIDLE|C.GOACCEL_STEP_STOP,
				nil, 0, nil, 0, nil, nil)
			normal = true
			h.wg.Done()
			return
		}
		runtime.LockOSThread()
		mode, nprev, spins = C.GOACCEL_STEP_UNIDLE, 0, 0
		y.reset()
	}
}

// runVisit runs the open visit's ops from d.i on.
func (d *hostWorker) runVisit() {
	if d.i < d.n {
		// C released these ops' queue positions when it took them: a
		// Submit waiting for room may go on (room.go). One session per
		// visit.
		recOf(d.b.recs[d.i]).session().room.freed()
	}
	if r := d.rest; r != nil {
		d.rest = nil
		d.b.status[d.i] = 1 // an op of it failed (Goexit)
		runGroupFrom(r, r.session(), d, d.restOp)
		d.i++
	}
	for ; d.i < d.n; d.i++ {
		r := recOf(d.b.recs[d.i])
		if r.bitem { // a Batcher's: its run of items is one call of fn
			d.runItems()
			continue
		}
		d.b.status[d.i] = runRec(r, d)
	}
	d.fl.flush()
	d.open = false
}

// goexitInF reports, for a goroutine ending other than by returning,
// whether f called runtime.Goexit (then the op is the caller's to fail:
// phaseOut from here). A panic or Goexit in a completion callback ends
// the program; the package's own panic goes on (false).
func (d *hostWorker) goexitInF() bool {
	switch d.phase {
	case phaseF:
		d.phase = phaseOut
		return true
	case phaseDone:
		panic("accel: a completion callback (SubmitAsync, SubmitAsyncBatch) panicked or called runtime.Goexit")
	}
	return false
}

// exited runs when the host worker's goroutine ends other than by stop: f
// called runtime.Goexit (a panic in f is recovered in callF). The op
// fails, and a new goroutine takes the worker over with the rest of the
// visit; this goroutine, still locked to its thread, takes the thread
// with it (the thread's C state says it runs the visit). A panic or
// Goexit in a completion callback is not recovered: it ends the program,
// as it would in a goroutine of the caller's.
func (d *hostWorker) exited() {
	if !d.goexitInF() {
		return
	}
	if d.bat != nil {
		// A Batcher's fn: its items fail, the visit goes on after them.
		idx := d.runIdx
		d.batchGoexit(func(k int) *C.int { return &d.b.status[idx[k]] })
		d.h.startWorker(&hostWorker{h: d.h, w: d.w, lane: d.lane, b: d.b, fl: d.fl,
			n: d.n, i: d.runEnd, open: true, extra: d.extra, help: d.help})
		d.h.wg.Done()
		return
	}
	r := d.cur
	d.b.status[d.i] = 1 // failed, for the C stats too
	more := salvageGoexit(r, d.curOp, &d.fl)
	nd := &hostWorker{h: d.h, w: d.w, lane: d.lane, b: d.b, fl: d.fl,
		n: d.n, i: d.i + 1, open: true, extra: d.extra, help: d.help}
	if more {
		// The group's later ops run first on the new host worker.
		nd.i, nd.rest, nd.restOp = d.i, r, d.curOp+1
	}
	d.h.startWorker(nd)
	d.h.wg.Done()
}

// submitOwn submits r (a synchronous Submit of v) on a free helper worker,
// with deadline (0: none) and, t not nil, a ticket into t for
// accel_cancel, and if the scheduler hands v to the worker directly, runs
// the visit's op, r, here, on the submitter's goroutine (runOwn). Either
// way r's outcome then comes through r.wake: left in r when it ran here
// (r.inline: no channel round trip), sent as for a queued op else; t
// names the op while it is queued. queued: r is in (or through) the
// queue; false with a nil error: no worker was free or the queue was full,
// nothing submitted.
func (h *hostWorkers) submitOwn(v *VMSession, c *C.accel_session, r *opRec, deadline C.int64_t, t *C.accel_ticket) (queued bool, err error) {
	if awayOwn(c) { // C's own check below sees the thread only
		return false, ErrDeadlock
	}
	hs := h.takeHelper()
	if hs == nil {
		return false, nil
	}
	d := &hs.d
	runtime.LockOSThread() // begin and end of the visit on one thread
	var begun, outer C.int
	rc := int(C.goaccel_submit_own(h.rt, c, r.arg(), C.uint(d.w),
		deadline, t, &d.b.recs[0], &d.b.n, &begun, &outer))
	if rc != C.ACCEL_OK || begun != C.ACCEL_OK {
		runtime.UnlockOSThread()
		hs.busy.Store(0)
		if rc == C.ACCEL_EAGAIN {
			return false, nil // full: the caller waits for room
		}
		return rc == C.ACCEL_OK, statusErr(rc)
	}
	if outer >= 0 {
		// A nested Submit: the op of another session that called it lent
		// this thread (a host worker's, locked) to the visit; it goes on
		// once the visit ended, also when f called runtime.Goexit.
		defer C.goaccel_visit_attach(h.rt, C.uint(outer), 1)
	}
	h.runOwn(hs, r, outer >= 0)
	return true, nil
}

// runOwn runs the visit that the direct hand-off began on helper worker hs
// (its ops in hs.d.b, the thread locked) for the submitter of own, ends
// it and gives the worker back.
//
// The visit holds one op, the first in v's order: own, unless another
// submitter of v raced own into the ring (host.h, accel_host_submit_own).
// That op, a group of SubmitAsyncs perhaps, is not the caller's to run:
// a Goexit in it would end the caller's goroutine, which then never got
// own's outcome, and the group's later ops could run on no goroutine. So
// the visit goes to a host worker of its own (helpLoop), as the
// workers' visits do, and own waits behind it as a queued op.
func (h *hostWorkers) runOwn(hs *helperWorker, own *opRec, nested bool) {
	d := &hs.d
	d.n, d.i, d.open = int(d.b.n), 0, true
	if d.n > 0 && recOf(d.b.recs[0]) != own {
		C.goaccel_visit_detach(h.rt, C.uint(d.w)) // this thread runs no visit now
		runtime.UnlockOSThread()
		d.open = false
		h.startWorker(&hostWorker{h: h, w: d.w, lane: d.lane, b: d.b,
			n: d.n, open: true, help: hs})
		return
	}
	if nested {
		// On a host worker's thread, which a wait in own's f would hold:
		// watched, as a host worker's visit (not the raced op's, above,
		// which a goroutine of its own runs).
		C.goaccel_nest_watch(h.rt, C.uint(d.w))
	}
	normal := false
	defer func() {
		if !normal {
			d.ownExited(hs, own)
		}
	}()
	if d.n > 0 {
		// own was handed out (the visit's one op): f runs here, and its
		// outcome is read here, not sent (opRec.wake). Not when none was
		// (n 0): a device session's begin ran it and sent its outcome
		// already, it was refused and the end completes it unrun, or a
		// batched session's hold-back holds it (the end holds the
		// session; the held batch runs it on a host worker later):
		// then it comes through wch as for a queued op.
		own.inline = true
	}
	d.runVisit()
	C.goaccel_host_step(h.rt, C.uint(d.w), C.GOACCEL_STEP_END|C.GOACCEL_STEP_STOP,
		&d.b.status[0], d.b.n, nil, 0, nil, nil)
	normal = true
	runtime.UnlockOSThread()
	// Release: the next taker's CAS acquires this worker's C state (the
	// visit ended) and its batch.
	hs.busy.Store(0)
}

// ownExited: f of own, run by its submitter (runOwn), called
// runtime.Goexit. The op fails; the visit ends here, on its thread (cap 1:
// it had no other op), the worker goes back, and the Goexit goes on, ending
// the submitter's goroutine as f run there would. A panic elsewhere is
// left to go on.
func (d *hostWorker) ownExited(hs *helperWorker, own *opRec) {
	if d.phase != phaseF {
		return
	}
	d.phase = phaseOut
	d.b.status[d.i] = 1
	// Its submitter is this goroutine, which is ending: no one receives
	// the outcome, so the record is freed here.
	own.session().failed.Add(1)
	own.reset()
	freeRec(own)
	d.fl.flush()
	d.open = false
	C.goaccel_host_step(d.h.rt, C.uint(d.w), C.GOACCEL_STEP_END|C.GOACCEL_STEP_STOP,
		&d.b.status[0], d.b.n, nil, 0, nil, nil)
	runtime.UnlockOSThread()
	hs.busy.Store(0)
}

// helpLoop runs the rest of a helper worker's open visit for its submitter
// (runOwn handed it on, or the last such host worker's op called
// runtime.Goexit), ends it and gives the worker back.
func (d *hostWorker) helpLoop() {
	h := d.h
	normal := false
	defer func() {
		if !normal {
			d.exited()
		}
	}()
	runtime.LockOSThread()
	C.goaccel_visit_attach(h.rt, C.uint(d.w), 0) // a helper worker's: not counted
	d.runVisit()
	C.goaccel_host_step(h.rt, C.uint(d.w), C.GOACCEL_STEP_END|C.GOACCEL_STEP_STOP,
		&d.b.status[0], C.uint(d.n), nil, 0, nil, nil)
	normal = true
	runtime.UnlockOSThread()
	d.help.busy.Store(0) // release, as runOwn's
	h.wg.Done()
}

// takeHelper takes a free helper worker (nil: none). LP: the CAS 0 -> 1
// of the worker's word (a load first, so that a busy worker's line is not
// written); seq-cst, so it also acquires what the goroutine that last drove it did
// before its release store.
func (h *hostWorkers) takeHelper() *helperWorker {
	for w := range h.helpers {
		f := &h.helpers[w].busy
		if f.Load() == 0 && f.CompareAndSwap(0, 1) {
			return &h.helpers[w]
		}
	}
	return nil
}

func chanDone(done <-chan struct{}) bool {
	if done == nil {
		return false
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}
