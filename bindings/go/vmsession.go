package accel

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// VMSession is one tenant (one VM or chain of a node) of a Runtime:
//   - Ordering: its ops start in submission order and never overlap.
//   - Priority: a weight; backlogged sessions share the workers in
//     proportion to it.
//   - Memory budget: a hard cap on what its ops allocate through *Session.
//   - Isolation: closing one session never affects another.
//
// A VMSession is safe for concurrent use.
type VMSession struct {
	id   string
	rt   *Runtime
	h    *chandle
	sess Session // what f is given; points back here

	priority atomic.Int64
	closed   atomic.Bool
	// open: the session's most recent combining group, as a token
	// gen<<32 | record index<<1 | openPend; 0: none (combine.go).
	open atomic.Uint64
	// groupCap: ops a combining group takes at most now (combine.go,
	// adaptCap): rt.groupCap while the session's ops are short.
	groupCap atomic.Int32
	closeMu  sync.Mutex
	closeErr error
	didClose bool

	submitted atomic.Uint64 // accepted into the queue
	// The counters below are written by the workers for each op, the
	// fields above read or written by submitters: apart, so that one
	// side's writes do not take the other's line.
	_          [64]byte
	dispatched atomic.Uint64 // f started
	completed  atomic.Uint64 // f returned nil
	failed     atomic.Uint64 // f returned an error or panicked
	cancelled  atomic.Uint64 // ctx ended (or the session closed) before f started
	groupTick  atomic.Uint32 // one-op groups run (callback.go: which are timed)
}

// chandle owns the C handle; its finalizer releases it once the VMSession
// is unreachable (a VMSession points at itself through sess, and a cycle
// through a finalizer's object is never collected, hence the separate
// object).
type chandle struct {
	c  *C.accel_session
	rt *Runtime
}

func (h *chandle) release() {
	h.rt.mu.Lock()
	defer h.rt.mu.Unlock()
	if !h.rt.closed && h.c != nil {
		C.accel_session_release(h.c)
	}
	h.c = nil
}

// NewVMSession opens a session on the process default runtime. vmID must
// be non-empty, at most 127 bytes and unique among open sessions; it names
// the session in Lookup and metrics.
func NewVMSession(vmID string, opts ...VMSessionOption) (*VMSession, error) {
	if vmID == "" {
		return nil, ErrEmptyVMID
	}
	rt, err := DefaultRuntime()
	if err != nil {
		return nil, err
	}
	return rt.NewVMSession(vmID, opts...)
}

// NewVMSession opens a session on rt (see the package-level NewVMSession).
func (rt *Runtime) NewVMSession(vmID string, opts ...VMSessionOption) (*VMSession, error) {
	if vmID == "" {
		return nil, ErrEmptyVMID
	}
	cfg := vmSessionConfig{priority: PriorityNormal, backend: BackendAuto, queueDepth: 1024}
	for _, o := range opts {
		o(&cfg)
	}
	var cc C.accel_session_config
	cid := C.CString(vmID)
	defer C.free(unsafe.Pointer(cid))
	cc.id = cid
	cc.priority = C.uint32_t(clampPriority(cfg.priority))
	if cfg.memBudget > 0 {
		cc.memory_budget = C.int64_t(cfg.memBudget)
	}
	switch cfg.backend {
	case BackendAuto:
		cc.backend = C.ACCEL_BACKEND_AUTO
	case BackendCPU:
		cc.backend = C.ACCEL_BACKEND_CPU
	case BackendCUDA:
		cc.backend = C.ACCEL_BACKEND_CUDA
	default:
		return nil, ErrNoBackends
	}
	depth := cfg.queueDepth
	if depth > C.ACCEL_QUEUE_DEPTH_MAX {
		depth = C.ACCEL_QUEUE_DEPTH_MAX
	}
	cc.queue_depth = C.uint32_t(depth)
	if cfg.shared {
		cc.flags = C.ACCEL_SESSION_SHARED_DEVICE
	}

	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed {
		return nil, ErrRuntimeClosed
	}
	var cs *C.accel_session
	if rc := int(C.accel_session_open(rt.c, &cc, &cs)); rc != C.ACCEL_OK {
		return nil, statusErr(rc)
	}
	v := &VMSession{id: vmID, rt: rt, h: &chandle{c: cs, rt: rt}}
	v.sess.v = v
	v.groupCap.Store(rt.groupCap)
	v.priority.Store(int64(clampPriority(cfg.priority)))
	runtime.SetFinalizer(v.h, (*chandle).release)
	rt.sessions[vmID] = v
	return v, nil
}

func clampPriority(p Priority) Priority {
	switch {
	case p < C.ACCEL_PRIORITY_MIN:
		return C.ACCEL_PRIORITY_MIN
	case p > C.ACCEL_PRIORITY_MAX:
		return C.ACCEL_PRIORITY_MAX
	}
	return p
}

// ID returns the VM identifier.
func (v *VMSession) ID() string { return v.id }

// Priority returns the session's weight.
func (v *VMSession) Priority() Priority { return Priority(v.priority.Load()) }

// SetPriority changes the session's weight from its next scheduler visit.
func (v *VMSession) SetPriority(p Priority) error {
	p = clampPriority(p)
	rc := int(C.accel_session_set_priority(v.h.c, C.uint32_t(p)))
	runtime.KeepAlive(v.h)
	if rc != C.ACCEL_OK {
		return statusErr(rc)
	}
	v.priority.Store(int64(p))
	return nil
}

// Runtime returns the runtime the session belongs to.
func (v *VMSession) Runtime() *Runtime { return v.rt }

// Session returns the session's handle: the same *Session its ops get.
func (v *VMSession) Session() *Session { return &v.sess }

// IsAvailable reports whether the session can take ops (it is open; it
// always has a backend, the CPU one at least).
func (v *VMSession) IsAvailable() bool { return !v.closed.Load() }

// IsClosed reports whether Close has been called.
func (v *VMSession) IsClosed() bool { return v.closed.Load() }

// MemoryUsed returns the bytes charged to the session's budget now.
func (v *VMSession) MemoryUsed() int64 { return v.sess.MemoryUsed() }

// Stats returns (dispatched, completed, failed): ops whose f started, and
// of those the ones that returned nil and the ones that returned an error
// or panicked. An op whose ctx ended before it started is in none of them.
func (v *VMSession) Stats() (dispatched, completed, failed uint64) {
	return v.dispatched.Load(), v.completed.Load(), v.failed.Load()
}

// Sync waits until every op submitted before it has completed. It returns
// ErrSessionClosed on a closed session (Close itself drains), ErrDeadlock
// from inside one of the session's own ops.
func (v *VMSession) Sync() error {
	if v.closed.Load() {
		return ErrSessionClosed
	}
	rc := int(C.accel_session_sync(v.h.c, C.ACCEL_FOREVER))
	runtime.KeepAlive(v.h)
	return statusErr(rc)
}

// Close stops the session taking ops and waits until the ops it accepted
// have run (from inside one of its own ops it does not wait). Safe to call
// many times and from many goroutines; every call returns the first one's
// result. Never affects another session.
func (v *VMSession) Close() error {
	v.closed.Store(true)
	// No append after this (the appenders that passed the closed check
	// above before the store either reserved a slot before this seal, and
	// their op runs in the drain below, or fail here and submit to C,
	// which refuses once the C close began).
	v.postClose()
	v.closeMu.Lock()
	defer v.closeMu.Unlock()
	if v.didClose {
		return v.closeErr
	}
	v.didClose = true
	v.rt.mu.Lock()
	if v.rt.closed {
		v.rt.mu.Unlock()
		return nil
	}
	if v.rt.sessions[v.id] == v {
		delete(v.rt.sessions, v.id)
	}
	v.rt.mu.Unlock()
	rc := int(C.accel_session_close(v.h.c, C.ACCEL_CLOSE_DRAIN))
	runtime.KeepAlive(v.h)
	v.closeErr = statusErr(rc)
	return v.closeErr
}

// Submit runs f on one of the runtime's workers, after the ops submitted
// before it to this session, and returns f's error. A panic in f comes
// back as a *PanicError. ctx is honoured until f starts: if it is done
// first, f never runs and Submit returns ctx.Err() at once; a running f is
// not interrupted. A full queue makes Submit wait for room (or ctx).
func (v *VMSession) Submit(ctx context.Context, f func(*Session) error) error {
	if f == nil {
		return ErrInvalidArgument
	}
	var done <-chan struct{}
	if ctx != nil {
		if done = ctx.Done(); done != nil {
			select {
			case <-done:
				return ctx.Err()
			default:
			}
		}
	}
	if v.closed.Load() {
		return ErrSessionClosed
	}
	if v.rt.host != nil {
		return v.submitHost(ctx, done, f)
	}
	r := allocRec()
	r.vs, r.f = v, f
	r.state.Store(recQueued)
	r.cwait = true
	r.wakeGen = (r.wakeGen + 1) & (1<<29 - 1) // what fits above the 3 bits
	gen := r.wakeGen
	atomic.StoreUint32(&r.wake, gen<<3)
	if _, err := v.enqueue(r, done, false); err != nil {
		r.cwait, r.vs, r.f = false, nil, nil
		freeRec(r)
		if err == errCtxDone {
			return ctx.Err()
		}
		return err
	}
	v.postClose()
	v.submitted.Add(1)
	// The goroutine waits in C on the record's wake word (a short spin,
	// then a futex the worker wakes): waking a parked goroutine from a C
	// thread costs far more (docs/go.md). ctx's end interrupts the wait:
	// AfterFunc sets CANCEL in the word if it still belongs to this use of
	// the record (gen), and wakes the waiter.
	if done == nil {
		waitWake(r, gen, wakeDone)
	} else {
		stop := context.AfterFunc(ctx, func() { setWake(r, gen, wakeCancel) })
		w := waitWake(r, gen, wakeDone|wakeCancel)
		stop()
		if w&wakeDone == 0 {
			// LP of the cancel race: the CAS decides whether f runs.
			if r.state.CompareAndSwap(recQueued, recCancelled) {
				v.cancelled.Add(1)
				return ctx.Err() // the worker frees r when it pops it
			}
			waitWake(r, gen, wakeDone) // f started: it is not interrupted
		}
	}
	err := r.err
	r.cwait, r.err, r.vs, r.f = false, nil, nil, nil
	freeRec(r)
	return err
}

// helpEnabled: a synchronous Submit runs visits on a helper slot (a
// switch for A/B benchmarks: ACCEL_BENCH_HELP=0).
var helpEnabled = true

// submitHost is Submit on a runtime with worker goroutines: the caller
// runs visits on a free helper slot (hostworker.go) and, if its op is
// not done by then, parks on the record's channel, which the worker
// sends to after f.
func (v *VMSession) submitHost(ctx context.Context, done <-chan struct{}, f func(*Session) error) error {
	h := v.rt.host
	// Caller helps: with a free helper slot, the record comes from the
	// slot's cache, and the submit and the first begin are one crossing
	// (submitHelp); else, or when the queue is full, the plain submit and
	// then help if a slot is free by then.
	w := -1
	var b *slotBuf
	if helpEnabled {
		var free bool
		if w, free = h.takeHelpSlot(); free {
			b = h.helpers[w].buf
		} else {
			w = -1
		}
	}
	var r *opRec
	if w >= 0 && h.helpers[w].nrec > 0 {
		r = h.helpers[w].allocRec() // clean (helperSlot): no atomic writes
	} else {
		r = allocRec()
		r.state.Store(recQueued)
		if r.wch == nil {
			r.wch = make(chan struct{}, 1)
		}
		atomic.StoreUint32(&r.wake, recNotDone) // the record is ours: no one else reads it yet
	}
	r.vs, r.f = v, f
	r.chwait = true
	held, own, ok, err := int64(0), false, false, error(nil)
	if w >= 0 {
		var how ownDone
		held, how, ok, err = h.submitHelp(w, b, v, r, done)
		if how == ranOwn || err != nil {
			// Run here by this goroutine (or refused): r is clean and
			// goes back to the slot's cache while the slot is ours.
			if how == ranOwn {
				v.postClose()
				v.submitted.Add(1)
				if held&^C.GOACCEL_IN_VISIT != 0 {
					h.post(held)
				}
				err = r.err
			}
			r.chwait, r.err, r.vs, r.f = false, nil, nil, nil
			h.helpers[w].freeRec(r)
			h.putHelpSlot(w)
			return err
		}
		own = how != notDone
		h.putHelpSlot(w)
	}
	if !ok {
		held, err = v.enqueue(r, done, true)
		// Not from inside an op: a visit is open on this thread.
		if err == nil && held&C.GOACCEL_IN_VISIT == 0 && helpEnabled {
			own = h.help(r, done)
		}
	}
	if err != nil {
		r.chwait, r.vs, r.f = false, nil, nil
		freeRec(r)
		if err == errCtxDone {
			return ctx.Err()
		}
		return err
	}
	v.postClose()
	v.submitted.Add(1)
	// The wakes C claimed for parked workers are delivered after helping,
	// not before: delivered first, a worker on the other P takes this op
	// while the caller starts helping, and the caller parks after all. A
	// claimed wake must still be delivered (host.c counts it as given);
	// until then this goroutine was itself running the scheduler's picks.
	if held&^C.GOACCEL_IN_VISIT != 0 {
		v.rt.host.post(held)
	}
	switch {
	case own || !waitAnnounce(r): // done: no channel (opDone)
	case done == nil:
		<-r.wch
	default:
		select {
		case <-r.wch:
		case <-done:
			// LP of the cancel race: the CAS decides whether f runs.
			if r.state.CompareAndSwap(recQueued, recCancelled) {
				v.cancelled.Add(1)
				return ctx.Err() // the worker frees r when it takes the op
			}
			<-r.wch // f started: it is not interrupted
		}
	}
	err = r.err
	r.chwait, r.err, r.vs, r.f = false, nil, nil, nil
	freeRec(r)
	return err
}

// The done handshake of a host-worker Submit (a chwait record), on
// r.wake: whichever of the worker (doneAnnounce, after r.err) and a
// submitter about to park (waitAnnounce) moves the word off recNotDone
// first decides. The worker first: the submitter sees recDone and
// neither parks nor receives, and the worker does not send (a helper
// that ran its own op, or an op done before its submitter looked, costs
// no channel operation). The submitter first: it parks on r.wch and the
// worker sends. Exactly one send per parked submitter, none otherwise,
// so r.wch is empty whenever the record is reused.
const (
	recNotDone uint32 = iota
	recDone           // r.err is stored; the submitter takes it without a receive
	recWaiting        // the submitter parks on r.wch: the worker sends
)

// doneAnnounce is the worker's side, after it stored r.err; r must not be
// touched after it (the submitter may reuse it at once).
func doneAnnounce(r *opRec) {
	// LP of the hand-off. Release (Go's atomics are seq-cst): publishes
	// r.err to the submitter's load (opDone) or failed CAS (waitAnnounce).
	if atomic.CompareAndSwapUint32(&r.wake, recNotDone, recDone) {
		return
	}
	r.wch <- struct{}{} // recWaiting: the send orders r.err before the receive
}

// opDone: the worker has finished r's op (acquire: pairs with
// doneAnnounce's CAS, so r.err may be read).
func opDone(r *opRec) bool { return atomic.LoadUint32(&r.wake) == recDone }

// waitAnnounce is the submitter's side before it parks: true if it must
// receive from r.wch; false if the op is done (the failed CAS read
// recDone: acquire, r.err may be read).
func waitAnnounce(r *opRec) bool {
	return atomic.CompareAndSwapUint32(&r.wake, recNotDone, recWaiting)
}

// Wake word of a record whose submitter waits in C: gen<<3 | bits.
const (
	wakeDone   = 1 // the op finished (the worker sets it)
	wakeCancel = 2 // ctx ended (cancelWake sets it)
	wakeSleep  = 4 // the waiter sleeps on the futex: setters must wake it
)

// waitWake waits until a bit of mask is set in r's wake word; gen is this
// use's generation. The atomic load after C returns is what orders the
// worker's writes (r.err) before the caller's reads, for the race
// detector too (it does not see C's atomics).
func waitWake(r *opRec, gen uint32, mask uint32) uint32 {
	C.goaccel_wait((*C.uint32_t)(unsafe.Pointer(&r.wake)), C.uint32_t(gen<<3), C.uint32_t(mask))
	return atomic.LoadUint32(&r.wake) // [A] acquire: pairs with [R] in setWake
}

// setWake sets bit in r's wake word if the word is still at gen, and wakes
// a sleeping waiter. Returns false if the record moved on (reused).
func setWake(r *opRec, gen uint32, bit uint32) bool {
	for {
		w := atomic.LoadUint32(&r.wake)
		if w>>3 != gen {
			return false
		}
		// [R] release: publishes r.err (done) to waitWake's [A].
		if atomic.CompareAndSwapUint32(&r.wake, w, w|bit) {
			if w&wakeSleep != 0 {
				C.goaccel_wake((*C.uint32_t)(unsafe.Pointer(&r.wake)))
			}
			return true
		}
	}
}

type ctxDoneErr struct{}

func (ctxDoneErr) Error() string { return "context done" }

var errCtxDone error = ctxDoneErr{}

// enqueue hands r to C. With no ctx it waits for room without limit;
// with one it waits in slices so ctx can end the wait. hold: the wakes
// of the accepting call are returned in held (a shim result's high bits,
// with GOACCEL_IN_VISIT) instead of posted; the caller posts them.
func (v *VMSession) enqueue(r *opRec, done <-chan struct{}, hold bool) (held int64, err error) {
	c := v.h.c
	rt := v.rt
	result := func(p int64) int {
		if hold && int32(p) == C.ACCEL_OK {
			held = p &^ (1<<32 - 1)
			return C.ACCEL_OK
		}
		return rt.wakesFrom(p &^ C.GOACCEL_IN_VISIT)
	}
	if done == nil {
		rc := result(int64(C.goaccel_submit(c, C.uintptr_t(r.idx), C.ACCEL_FOREVER, 1)))
		runtime.KeepAlive(v.h)
		return held, statusErr(rc)
	}
	for {
		rc := result(int64(C.goaccel_submit(c, C.uintptr_t(r.idx), C.ACCEL_NO_WAIT, 1)))
		if rc == C.ACCEL_EAGAIN {
			// Full: wait up to 1 ms for room, then look at ctx again.
			rc = result(int64(C.goaccel_submit(c, C.uintptr_t(r.idx), 1000000, 1)))
		}
		if rc != C.ACCEL_ETIMEDOUT {
			runtime.KeepAlive(v.h)
			return held, statusErr(rc)
		}
		select {
		case <-done:
			return 0, errCtxDone
		default:
		}
	}
}
