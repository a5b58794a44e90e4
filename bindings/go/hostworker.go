package accel

// Host-driven workers (the default): the runtime's workers are goroutines
// that take batches of ops from the C scheduler (accel_host_visit_begin),
// run the Go ops here, and report back (accel_host_visit_end). No op
// moves to another OS thread and no C thread calls into Go; waiting and
// waking are goroutine switches Go's scheduler sees (docs/go.md).

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"sync"
)

// hostWorkers are a runtime's worker goroutines, one per C worker slot.
type hostWorkers struct {
	rt    *C.accel_runtime
	lanes [2]chan struct{} // parked slots of lane 0 (general), 1 (short) wait here
	quit  chan struct{}    // closed by stop
	wg    sync.WaitGroup
}

// slotBuf is a slot's batch: heap memory the C step reads and fills
// (never a Go pointer stored by C).
type slotBuf struct {
	recs   [C.ACCEL_HOST_VISIT_MAX]C.uintptr_t
	status [C.ACCEL_HOST_VISIT_MAX]C.int
	n      C.uint
}

func startHostWorkers(rt *C.accel_runtime, workers, short int) *hostWorkers {
	h := &hostWorkers{rt: rt, quit: make(chan struct{})}
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
		go h.loop(w, lane)
	}
	return h
}

// post wakes parked slots as C asked: packed is a shim result (wakes in
// the high 32 bits: general lane bits 32-47, short lane 48-63).
func (h *hostWorkers) post(packed int64) {
	w := uint32(uint64(packed) >> 32)
	for g := w & 0xffff; g > 0; g-- {
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
