package accel

// Host-driven workers (the default): the runtime's workers are goroutines
// that take batches of ops from the C scheduler (accel_host_visit_begin),
// run the Go ops here, and report back (accel_host_visit_end). No op
// moves to another OS thread and no C thread calls into Go; waiting and
// waking are goroutine switches Go's scheduler sees (docs/go.md).

/*
#include <stdlib.h>
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

// hostWorkers are a runtime's worker goroutines, one per C worker slot.
type hostWorkers struct {
	rt    *C.accel_runtime
	lanes [2]chan struct{} // parked slots of lane 0 (general), 1 (short) wait here
	quit  chan struct{}    // closed by stop
	wg    sync.WaitGroup
	// helpers[w] is helper slot w (slots 0..nhelp-1; the worker
	// goroutines drive the slots after them): its busy word on a cache
	// line of its own, taken by CAS from the P's own slots on
	// (takeHelpSlot): one channel, or one word for all slots, was a line
	// every helped Submit wrote twice, bouncing between the CPUs (a
	// profile put a quarter of a helped op on it).
	helpers []helperSlot
	nhelp   int
}

// slotBuf is a slot's batch, which the C step reads and fills (C keeps
// no pointer to it): Go heap memory for a worker goroutine, C memory for
// a helper slot (helperSlot.buf).
type slotBuf struct {
	recs   [C.ACCEL_HOST_VISIT_MAX]C.uintptr_t
	status [C.ACCEL_HOST_VISIT_MAX]C.int
	n      C.uint
	begun  C.int // goaccel_submit_help: a visit is open
}

func startHostWorkers(rt *C.accel_runtime, workers, short, helpers int) *hostWorkers {
	h := &hostWorkers{rt: rt, quit: make(chan struct{}), nhelp: helpers}
	h.helpers = make([]helperSlot, helpers)
	for w := range h.helpers {
		// C memory: the crossings pass pointers into it, which cgo then
		// need not check (a Go pointer argument is checked per call).
		h.helpers[w].buf = (*slotBuf)(C.calloc(1, C.size_t(unsafe.Sizeof(slotBuf{}))))
	}
	// A lane's channel holds at most one token per slot of the lane: C
	// claims at most one wake per parked slot, and a full channel already
	// wakes every slot that parks (post drops what does not fit).
	h.lanes[0] = make(chan struct{}, workers-short)
	h.lanes[1] = make(chan struct{}, short+1)
	h.wg.Add(workers)
	for w := 0; w < workers; w++ {
		lane := 0
		if w < short {
			lane = 1
		}
		go h.loop(helpers+w, lane)
	}
	return h
}

// post wakes parked slots as C asked: packed is a shim result (wakes in
// the high 32 bits: general lane bits 32-46, short lane 48-63).
func (h *hostWorkers) post(packed int64) {
	w := uint32(uint64(packed) >> 32)
	for g := w & 0x7fff; g > 0; g-- { // bit 15: GOACCEL_IN_VISIT
		select {
		case h.lanes[0] <- struct{}{}:
		default: // full: every slot that parks returns at once anyway
		}
	}
	for s := w >> 16; s > 0; s-- {
		select {
		case h.lanes[1] <- struct{}{}:
		default:
		}
	}
}

// wakesFrom posts the wakes of a shim result and returns its status.
func (rt *Runtime) wakesFrom(packed int64) int {
	if packed>>32 != 0 && rt.host != nil {
		rt.host.post(packed)
	}
	return int(int32(packed))
}

// stop makes the worker goroutines return once they find no work, and
// waits for them.
func (h *hostWorkers) stop() {
	// Take every helper slot: no submitter drives one from here on, and
	// those driving one now finish first (they may be running an op: poll
	// gently).
	for w := range h.helpers {
		hs := &h.helpers[w]
		for !hs.busy.CompareAndSwap(0, 1) {
			time.Sleep(50 * time.Microsecond)
		}
		for hs.nrec > 0 { // the slot's cached records back to the slab
			hs.nrec--
			freeRec(hs.recs[hs.nrec])
			hs.recs[hs.nrec] = nil
		}
		C.free(unsafe.Pointer(hs.buf)) // no one drives the slot any more
		hs.buf = nil
	}
	close(h.quit)
	h.wg.Wait()
}

// Idle slots spin this many times (a Gosched each, so that submitters on
// the same P run) before they announce idle and park: the announcement
// costs a process-wide barrier (futex.h).
const hostSpins = 6

// loop drives slot w: begin a visit, run its ops, end it (ended and the
// next begun in one crossing), park when there is none.
func (h *hostWorkers) loop(w, lane int) {
	defer h.wg.Done()
	b := new(slotBuf)
	var fl recList
	var mode C.uint
	var nprev C.uint
	spins := 0
	// Locked during visits: begin and end of a visit run on one thread
	// (accel.h), and C tells an op's own session by the thread
	// (EDEADLK from Sync, Close from inside an op).
	runtime.LockOSThread()
	for {
		packed := int64(C.goaccel_host_step(h.rt, C.uint(w), mode, &b.status[0], nprev,
			&b.recs[0], C.ACCEL_HOST_VISIT_MAX, &b.n))
		if packed>>32 != 0 {
			h.post(packed)
		}
		rc := int(int32(packed))
		if rc == C.ACCEL_OK {
			n := int(b.n)
			for i := 0; i < n; i++ {
				b.status[i] = runRec(uint32(b.recs[i]), &fl)
			}
			fl.flush()
			mode, nprev, spins = C.GOACCEL_STEP_END, b.n, 0
			continue
		}
		// No visit open.
		runtime.UnlockOSThread()
		if mode&C.GOACCEL_STEP_IDLE == 0 {
			if spins < hostSpins {
				spins++
				runtime.Gosched()
				runtime.LockOSThread()
				mode, nprev = 0, 0
				continue
			}
			// Announce idle, then look once more (the next step).
			runtime.LockOSThread()
			mode, nprev = C.GOACCEL_STEP_IDLE, 0
			continue
		}
		// Idle announced and still nothing: park until a submitter posts
		// a wake for this lane (a wake posted since the announcement is
		// in the channel: none is lost).
		select {
		case <-h.lanes[lane]:
		case <-h.quit:
			C.goaccel_host_step(h.rt, C.uint(w), C.GOACCEL_STEP_UNIDLE|C.GOACCEL_STEP_STOP,
				nil, 0, nil, 0, nil)
			return
		}
		runtime.LockOSThread()
		mode, nprev, spins = C.GOACCEL_STEP_UNIDLE, 0, 0
	}
}

// Caller helps (sync Submit). The C runtime has a few slots more than
// worker goroutines: helper slots 0..nhelp-1, short lane (so a helper
// runs only sessions whose ops are short: a Critical submitter helping
// never runs a 2 ms op of a flood before its own), never idle-announced
// and never woken (C wakes only slots that announced idle, so a slot no
// one drives is invisible to the wake protocol). A submitter takes a free
// helper slot after its submit and drives it as a worker would: begin
// (the scheduler's own pick, whatever session that is: FIFO, shares and
// latency order are the scheduler's), run the ops, end; after each visit
// (one visit, at most a quantum) it looks whether its own op is done or
// its ctx ended, and it stops at the first begin that finds nothing.
// Then submit, begin, f and end run on the submitting goroutine: no
// goroutine switch on the common path.
//
// No stranded work: a helper only takes work; every op it leaves queued
// was queued by a submit that woke a parked worker if there was one (C's
// protocol, unchanged: helper slots never count as parked). The one
// exception is the end of a visit: accel_host_visit_end re-queues the
// session for the ending slot's next begin without a wake. So a helper
// stops either after an end whose begin found nothing (nothing was
// runnable after its end), or with accel_host_visit_end_stop, which
// wakes a parked worker for a re-queued session (the submitter's side of
// the parking protocol: either that worker's pick after its announcement
// sees the session, or the end sees it parked and wakes it).

// help runs visits on a free helper slot for the submitter of r (done:
// its ctx's channel, may be nil) until r's op is done, ctx ends or
// nothing is runnable. Returns whether r's op finished (opDone). No
// helper slot free: returns false at once.
func (h *hostWorkers) help(r *opRec, done <-chan struct{}) bool {
	w, ok := h.takeHelpSlot()
	if !ok {
		return false
	}
	b := h.helpers[w].buf
	runtime.LockOSThread() // begin and end of a visit on one thread
	own := h.drive(w, b, r, done, false)
	runtime.UnlockOSThread()
	h.putHelpSlot(w)
	return own != notDone
}

// submitHelp submits r (a synchronous Submit of v) and, in the same
// crossing, begins a visit on helper slot w, which the caller holds
// (goaccel_submit_help: v's session goes to the slot directly when the
// scheduler's pick would return it first), then helps as help does.
// ok: r was accepted (held: its wakes, for the caller to post; own:
// whether and how r's op finished). !ok with a nil err: the queue was full; nothing was
// submitted.
func (h *hostWorkers) submitHelp(w int, b *slotBuf, v *VMSession, r *opRec, done <-chan struct{}) (held int64, own ownDone, ok bool, err error) {
	runtime.LockOSThread() // the visit may begin in the call
	packed := int64(C.goaccel_submit_help(h.rt, v.h.c, C.uintptr_t(r.idx), C.uint(w),
		&b.recs[0], C.ACCEL_HOST_VISIT_MAX, &b.n, &b.begun))
	runtime.KeepAlive(v.h)
	switch rc := int(int32(packed)); rc {
	case C.ACCEL_OK:
		ok = true
		held = packed &^ (1<<32 - 1)
		if b.begun == C.ACCEL_OK {
			own = h.drive(w, b, r, done, true)
		}
	case C.ACCEL_EAGAIN: // full: the caller waits for room (enqueue)
		if packed>>32 != 0 {
			h.post(packed)
		}
	default:
		if packed>>32 != 0 {
			h.post(packed)
		}
		err = statusErr(rc)
	}
	runtime.UnlockOSThread()
	return held, own, ok, err
}

// ownDone says whether and how a helping submitter's own op finished.
type ownDone uint8

const (
	notDone      ownDone = iota
	doneByWorker         // finished through the record (finish: r.wake is recDone)
	ranOwn               // run by its submitter (runOwn): r's state and wake untouched
)

// runOwn runs the helping submitter's own op r (drive): no one else can
// move r's state, since only its submitter cancels and it is here, so
// the state CAS and the done handshake of runRec are skipped (two locked
// instructions each) and r stays queued/recNotDone: clean for the slot's
// record cache (helperSlot).
func runOwn(r *opRec) C.int {
	s := r.vs
	s.dispatched.Add(1)
	err := callF(r.f, &s.sess)
	r.err = err
	if err != nil {
		s.failed.Add(1)
		return 1 // counted as failed by the C stats too
	}
	s.completed.Add(1)
	return 0
}

// drive runs visits on helper slot w (the goroutine locked to its
// thread) until r's op is done, ctx ends or a begin finds nothing;
// open: a visit is open already, its ops in b. Returns whether and how
// r's op finished.
func (h *hostWorkers) drive(w int, b *slotBuf, r *opRec, done <-chan struct{}, open bool) ownDone {
	var fl recList
	own := notDone
	mode, nprev := C.uint(0), C.uint(0)
	for {
		if !open {
			packed := int64(C.goaccel_host_step(h.rt, C.uint(w), mode, &b.status[0], nprev,
				&b.recs[0], C.ACCEL_HOST_VISIT_MAX, &b.n))
			if packed>>32 != 0 {
				h.post(packed)
			}
			if int(int32(packed)) != C.ACCEL_OK {
				break // nothing runnable; no visit open
			}
		}
		open = false
		n := int(b.n)
		for i := 0; i < n; i++ {
			if uint32(b.recs[i]) == r.idx {
				b.status[i] = runOwn(r)
				own = ranOwn
				continue
			}
			b.status[i] = runRec(uint32(b.recs[i]), &fl)
		}
		fl.flush()
		if own == notDone && opDone(r) {
			own = doneByWorker
		}
		mode, nprev = C.GOACCEL_STEP_END, b.n
		if own != notDone || chanDone(done) {
			// End and stop: a session the end re-queues wakes a parked
			// worker (this slot will not begin again to see it).
			h.post(int64(C.goaccel_host_step(h.rt, C.uint(w),
				C.GOACCEL_STEP_END|C.GOACCEL_STEP_STOP, &b.status[0], b.n, nil, 0, nil)))
			break
		}
	}
	return own
}

// helperSlot is a helper slot's Go side, alone on its cache lines.
type helperSlot struct {
	busy atomic.Uint32 // 1 while a submitter drives the slot
	nrec int
	buf  *slotBuf // the driver's batch (C memory)
	// recs caches free op records for the slot's driver (no atomics: one
	// driver at a time). The slab's free stack head is one line every
	// alloc and free writes, from both CPUs; a helped Submit allocates
	// and frees its record here instead. Cached records are clean: state
	// recQueued, wake recNotDone, wch empty, references cleared (a Submit
	// whose own op ran in runOwn leaves them so), so a Submit that takes
	// one writes neither atomic word.
	recs [helperRecs]*opRec
	_    [128 - 24 - 8*helperRecs]byte
}

const helperRecs = 8

// allocRec pops a record from the slot's cache, else from the slab.
// Only the slot's driver.
func (hs *helperSlot) allocRec() *opRec {
	if hs.nrec == 0 {
		return allocRec()
	}
	hs.nrec--
	r := hs.recs[hs.nrec]
	hs.recs[hs.nrec] = nil
	return r
}

// freeRec caches r (cleared by the caller) in the slot, else frees it to
// the slab. Only the slot's driver.
func (hs *helperSlot) freeRec(r *opRec) {
	if hs.nrec == helperRecs {
		freeRec(r)
		return
	}
	hs.recs[hs.nrec] = r
	hs.nrec++
}

// takeHelpSlot takes a free helper slot, trying the calling goroutine's
// P's own first (slots P and P + helpers/2: there are two per P), so
// that a slot's word, record cache and batch stay in one CPU's cache:
// with one shared word, or a preference that did not follow the P, the
// slot's lines moved between the CPUs on most ops. One goroutine drives
// a slot at a time (accel.h). LP: the CAS 0 -> 1 of the slot's word (a
// load first, so that a busy slot's line is not written); it is seq-cst
// (Go's atomics), so it also acquires what the slot's last driver did
// before putHelpSlot's store (its C slot state: the visit it ended).
func (h *hostWorkers) takeHelpSlot() (int, bool) {
	n := h.nhelp
	pref := procPin()
	procUnpin()
	// The P's own two slots first (P mod n/2, and n/2 on), then the rest.
	half := n / 2
	pref %= half
	for i := 0; i < n; i++ {
		w := (pref + i*half + i/2) % n
		f := &h.helpers[w].busy
		if f.Load() == 0 && f.CompareAndSwap(0, 1) {
			return w, true
		}
	}
	return 0, false
}

// putHelpSlot gives slot w back: the store releases the driver's writes
// to the next takeHelpSlot's CAS (and to stop's).
func (h *hostWorkers) putHelpSlot(w int) { h.helpers[w].busy.Store(0) }

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
