package accel

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"context"
	"math"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"
)

// VMSession is one tenant (one VM or chain of a node) of a Runtime:
//   - Ordering: its ops start in submission order and never overlap.
//   - Priority: a weight; backlogged sessions share the workers in
//     proportion to it.
//   - Memory budget: a hard cap on what its ops allocate through *Session.
//   - Isolation: closing one session never affects another.
//
// A VMSession is safe for concurrent use. Every method stays safe after
// Close and after its Runtime's Close: those that need the session return
// ErrSessionClosed and change nothing, the others what was fixed at open
// or last set (ID, Priority, MemoryBudget, Backend), the counters as they
// were, and MemoryUsed what the session held when it closed (less what
// Free releases after that).
type VMSession struct {
	id   string
	rt   *Runtime
	h    *chandle // nil: the backend asked for is not available (IsAvailable)
	sess Session  // what f is given; points back here

	cid     string      // the C session's id (its metrics label); "" without one
	budget  int64       // the memory cap in bytes, fixed at open; 0 = none
	backend BackendType // the backend bound at open (h not nil)

	given    atomic.Int64 // as passed to WithPriority or SetPriority (Priority)
	priority atomic.Int64 // the weight in use, clamped to 1..1000
	closed   atomic.Bool
	batching atomic.Bool // a Batcher has the session (batch.go)
	// open: the session's most recent combining group, as a token
	// gen<<32 | record index<<1 | openPend; 0: none (combine.go).
	open atomic.Uint64
	// groupCap: ops a combining group takes at most now (combine.go,
	// adaptCap): rt.groupCap while the session's ops are short.
	groupCap  atomic.Int32
	closeOnce sync.Once
	closeErr  error

	// Memory charged through *Session, kept here also for after the C
	// session is freed (MemoryUsed) and so that Free and Unreserve refund
	// only what this session charged: blocks maps each live Alloc block's
	// first byte to its size (and keeps the block alive until Free);
	// reserved is Reserve's bytes not yet Released; held is their sum.
	// memMu guards blocks and reserved.
	memMu    sync.Mutex
	blocks   map[*byte]int64
	reserved int64
	held     atomic.Int64
	// room: the goroutines waiting for room in the queue (room.go).
	room roomWait

	submitted atomic.Uint64 // accepted into the queue
	// The counters below are written by the workers for each op, the
	// fields above read or written by submitters: apart, so that one
	// side's writes do not take the other's line.
	_          [64]byte
	dispatched atomic.Uint64 // f started
	completed  atomic.Uint64 // f returned nil
	failed     atomic.Uint64 // f returned an error, panicked or called runtime.Goexit
	canceled   atomic.Uint64 // ctx ended (or the session closed) before f started
	groupTick  atomic.Uint32 // one-op groups run (callback.go: which are timed)
}

// guard keeps a C object alive under the calls that use it: every call
// goes through enter/exit, and retire (before the object is freed) waits
// for the calls in flight and makes later enters fail, so a method called
// after a Close gets no handle and answers ErrSessionClosed or a zero
// value, never freed memory.
type guard struct {
	inflight atomic.Int64 // calls between enter and exit
	gone     atomic.Bool  // retired: the object must not be used
}

// enter reports whether the object may be used, until exit. Dekker with
// retire: enter adds to inflight then loads gone, retire stores gone then
// loads inflight (Go's atomics are sequentially consistent), so either
// enter sees gone or retire sees the call and waits for its exit.
func (g *guard) enter() bool {
	g.inflight.Add(1)
	if g.gone.Load() {
		g.inflight.Add(-1)
		return false
	}
	return true
}

func (g *guard) exit() { g.inflight.Add(-1) }

// retire marks the object gone and waits for the calls in flight; true
// for the one caller that retired it. The calls are short, or end with
// the close that comes before a retire (a submit waiting for room, a
// sync).
func (g *guard) retire() bool {
	if g.gone.Swap(true) {
		return false
	}
	for i := 0; g.inflight.Load() != 0; i++ {
		if i < 100 {
			runtime.Gosched()
		} else {
			time.Sleep(20 * time.Microsecond)
		}
	}
	return true
}

// chandle owns a session's C handle, behind its guard.
type chandle struct {
	c *C.accel_session
	g guard
}

// enter returns the C handle for one call (then exit), nil once freed.
func (h *chandle) enter() *C.accel_session {
	if !h.g.enter() {
		return nil
	}
	return h.c
}

func (h *chandle) exit() { h.g.exit() }

// free releases the C session (after a drain): at once, so that its
// memory is back when Close returns, not when a GC runs a finalizer. The
// release runs inside the runtime's guard rg: a Close that finds h
// already retired returns at once, and Runtime.Close may then destroy
// the runtime, while the release (which can wait for a grace period:
// accel_session_release) still uses it; rg's retire in Runtime.Close
// waits for it. Once rg is retired, destroy frees the session instead.
func (h *chandle) free(rg *guard) {
	if !rg.enter() {
		h.g.retire()
		return
	}
	if h.g.retire() {
		releaseHook() // a test's hold (plant_on.go); nothing in a program
		C.accel_session_release(h.c)
	}
	rg.exit()
}

// NewVMSession opens a session on the process default runtime. vmID must
// be non-empty; it names the session in Lookup and metrics. Two open
// sessions may have the same vmID (as with the old type: a node that runs
// two chains of one VM opens "evm" twice); they are separate sessions.
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
// A backend that is not available here (WithVMBackend: CUDA without a
// device, Metal, WebGPU) gives, as with the old type, an open session
// whose IsAvailable is false, whose Session is nil and whose Submit
// returns ErrNoBackends (counted failed) without running f: VM code checks
// IsAvailable to pick its CPU path. BackendAuto runs on the CPU.
func (rt *Runtime) NewVMSession(vmID string, opts ...VMSessionOption) (*VMSession, error) {
	if vmID == "" {
		return nil, ErrEmptyVMID
	}
	cfg := vmSessionConfig{priority: PriorityNormal, backend: BackendAuto, queueDepth: defaultQueueDepth}
	for _, o := range opts {
		o(&cfg)
	}
	return rt.open(vmID, cfg, false)
}

const defaultQueueDepth = C.ACCEL_QUEUE_DEPTH_DEFAULT

// seq numbers the C ids derived for sessions whose vmID cannot be the C
// id as is (taken by another open session, too long, a NUL in it).
var cidSeq atomic.Uint64

// open opens a session; internal: the default session, whose entry in
// the runtime's table is apart from the users' ids.
func (rt *Runtime) open(vmID string, cfg vmSessionConfig, internal bool) (*VMSession, error) {
	var cc C.accel_session_config
	cc.priority = C.uint32_t(clampPriority(cfg.priority))
	if cfg.memBudget > 0 {
		cc.memory_budget = C.int64_t(cfg.memBudget)
	}
	avail := true
	switch cfg.backend {
	case BackendAuto:
		cc.backend = C.ACCEL_BACKEND_AUTO
	case BackendCPU:
		cc.backend = C.ACCEL_BACKEND_CPU
	case BackendCUDA:
		cc.backend = C.ACCEL_BACKEND_CUDA
	default:
		avail = false // Metal, WebGPU: never here
	}
	depth := cfg.queueDepth
	if depth > C.ACCEL_QUEUE_DEPTH_MAX {
		depth = C.ACCEL_QUEUE_DEPTH_MAX
	}
	cc.queue_depth = C.uint32_t(depth)
	if cfg.shared {
		cc.flags = C.ACCEL_SESSION_SHARED_DEVICE
	}
	v := &VMSession{id: vmID, rt: rt, room: newRoomWait()}
	v.given.Store(int64(cfg.priority))
	v.sess.v = v
	v.groupCap.Store(rt.groupCap)
	v.priority.Store(int64(clampPriority(cfg.priority)))

	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closing {
		return nil, ErrRuntimeClosed
	}
	if avail {
		cs, cid, rc := rt.openC(&cc, vmID, internal)
		switch {
		case rc == C.ACCEL_OK:
			v.h = &chandle{c: cs}
			v.cid = cid
			rt.labels[promEscape(cid)]++
			// Kept here so that they stay true after Close.
			v.budget = int64(cc.memory_budget)
			v.backend = BackendCPU
			if C.accel_session_backend(cs) == C.ACCEL_BACKEND_CUDA {
				v.backend = BackendCUDA
			}
		case rc == C.ACCEL_ENOBACKEND && cfg.backend != BackendAuto && cfg.backend != BackendCPU:
			// Unavailable, as the old type: v.h stays nil.
		default:
			return nil, statusErr(rc)
		}
	}
	rt.track(v, internal)
	return v, nil
}

// openC opens the C session under a C id derived from vmID and returns
// it with that id: vmID itself when it can be (so metrics show it), else
// a prefix of it and a number. vmID cannot be used as is when it is over
// the C limit, holds a NUL, is the id of another open C session, or would
// write the same metrics label as another's (promEscape maps each byte
// that is not UTF-8 to U+FFFD: "\xff" and "\xfe" would share one, and
// Prometheus refuses a whole scrape with a duplicate series). A derived
// id has '?' for each such byte and NUL, so its label is itself. rt.mu is
// held.
func (rt *Runtime) openC(cc *C.accel_session_config, vmID string, internal bool) (*C.accel_session, string, int) {
	try := func(id string) (*C.accel_session, int) {
		cid := C.CString(id)
		defer C.free(unsafe.Pointer(cid))
		cc.id = cid
		var cs *C.accel_session
		rc := int(C.accel_session_open(rt.c, cc, &cs))
		return cs, rc
	}
	plain := !internal && len(vmID) <= C.ACCEL_ID_MAX && !hasNUL(vmID) &&
		rt.labels[promEscape(vmID)] == 0
	if plain {
		cs, rc := try(vmID)
		if rc != C.ACCEL_EEXIST && rc != C.ACCEL_EINVAL {
			return cs, vmID, rc
		}
	}
	prefix := vmID
	if len(prefix) > 96 {
		prefix = prefix[:96]
	}
	for {
		id := prefix + "#" + strconv.FormatUint(cidSeq.Add(1), 10)
		if internal {
			id = "accel#" + prefix + "#" + strconv.FormatUint(cidSeq.Add(1), 10)
		}
		id = sanitize(id)
		if rt.labels[promEscape(id)] != 0 {
			continue
		}
		cs, rc := try(id)
		if rc != C.ACCEL_EEXIST {
			return cs, id, rc
		}
	}
}

func hasNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

// sanitize replaces each NUL (C ids are C strings) and each byte that is
// not UTF-8 (promEscape would write U+FFFD for it) with '?'.
func sanitize(s string) string {
	var b []byte
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == 0 || (r == utf8.RuneError && n == 1) {
			if b == nil {
				b = []byte(s)
			}
			b[i] = '?'
		}
		i += n
	}
	if b == nil {
		return s
	}
	return string(b)
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

// ID returns the VM identifier, as given to NewVMSession.
func (v *VMSession) ID() string { return v.id }

// Priority returns the priority as last given (WithPriority, SetPriority);
// the weight the scheduler uses is it clamped to 1..1000.
func (v *VMSession) Priority() Priority {
	return Priority(v.given.Load())
}

// SetPriority changes the session's weight from its next scheduler visit.
// ErrSessionClosed on a closed session, with nothing changed.
func (v *VMSession) SetPriority(p Priority) error {
	if v.closed.Load() {
		return ErrSessionClosed
	}
	if v.h == nil {
		v.given.Store(int64(p))
		v.priority.Store(int64(clampPriority(p)))
		return nil
	}
	c := v.h.enter()
	if c == nil {
		return ErrSessionClosed
	}
	rc := int(C.accel_session_set_priority(c, C.uint32_t(clampPriority(p))))
	v.h.exit()
	if rc != C.ACCEL_OK {
		return statusErr(rc)
	}
	v.given.Store(int64(p))
	v.priority.Store(int64(clampPriority(p)))
	return nil
}

// Runtime returns the runtime the session belongs to.
func (v *VMSession) Runtime() *Runtime { return v.rt }

// Session returns the session's handle: the same *Session its ops get;
// nil if the session's backend is not available (IsAvailable).
func (v *VMSession) Session() *Session {
	if v.h == nil {
		return nil
	}
	return &v.sess
}

// IsAvailable reports whether the session can take ops: it is open and
// has its backend (false for a backend asked for that this host lacks,
// WithVMBackend, whose Submit returns ErrNoBackends), as with the old type.
func (v *VMSession) IsAvailable() bool { return v.h != nil && !v.closed.Load() }

// IsClosed reports whether Close has been called (or the runtime closed).
func (v *VMSession) IsClosed() bool { return v.closed.Load() }

// MemoryUsed returns the bytes charged to the session's budget now; after
// Close, what it held when it closed (Session.MemoryUsed).
func (v *VMSession) MemoryUsed() int64 { return v.sess.MemoryUsed() }

// Stats returns (dispatched, completed, failed): ops whose f started, and
// of those the ones that returned nil and the ones that returned an error,
// panicked or called runtime.Goexit. An op whose ctx ended before it
// started is in none of them. A Submit on an unavailable session counts
// as dispatched and failed, as with the old type.
func (v *VMSession) Stats() (dispatched, completed, failed uint64) {
	return v.dispatched.Load(), v.completed.Load(), v.failed.Load()
}

// Sync waits until every op submitted before it has completed, the one
// running now included. It returns ErrSessionClosed on a closed session
// (Close itself drains). From inside one of the session's own ops it
// returns nil at once: the ops before the running one are done (FIFO),
// and waiting for the ones after it would wait for itself. From a
// goroutine that a running op of the session waits for (one its f
// started) it would wait for that op without end: there, call Sync on
// the *Session f got, which never waits for a running op.
func (v *VMSession) Sync() error {
	if v.closed.Load() {
		return ErrSessionClosed
	}
	if v.h == nil {
		return nil
	}
	c := v.h.enter()
	if c == nil {
		return ErrSessionClosed
	}
	rc := C.ACCEL_EDEADLK
	if !awayOwn(c) { // C's own check sees the thread only
		rc = syncBlocked(c)
	}
	v.h.exit()
	if rc == C.ACCEL_EDEADLK {
		return nil
	}
	return statusErr(rc)
}

// running reports whether one of the session's ops is running: an f
// started and not returned (or, for a group's ops, whose outcomes are
// added at the group's end or before a completion, an f of a group not
// yet counted). While an f runs, every goroutine it started sees it:
// its dispatched count was added before f began, its outcome is added
// after f returns, and both counts only grow (the outcomes are loaded
// first, so the dispatched count read includes every op they count).
func (v *VMSession) running() bool {
	fin := v.completed.Load() + v.failed.Load()
	return v.dispatched.Load() > fin
}

// Close stops the session taking ops and waits until the ops it accepted
// have run, then frees its C memory. From inside one of its own ops it
// does not wait (the ops queued behind the running one still run, and the
// memory goes when the session is unreachable). Safe to call many times
// and from many goroutines, also while another Close (or the runtime's)
// is draining it; every call returns the first one's result. Never
// affects another session.
func (v *VMSession) Close() error {
	v.closed.Store(true)
	// Submitters waiting for room find the session closed at their next
	// try (room.go): wake one, which wakes the next.
	v.room.freed()
	// No append after this (the appenders that passed the closed check
	// above before the store either reserved an op of the group before this seal, and
	// their op runs in the drain below, or fail here and submit to C,
	// which refuses once the C close began).
	v.postClose()
	v.rt.forget(v)
	if v.h == nil {
		v.rt.untrack(v)
		return nil
	}
	c := v.h.enter()
	if c == nil {
		return v.closeResult(C.ACCEL_OK) // freed: drained by the Close that freed it
	}
	if ownOp(c) {
		// From inside one of v's own ops: C begins the close and does not
		// wait (told so also from an announced wait away from the
		// thread); a goroutine of its own waits for the drain and frees.
		rc := int(C.goaccel_close_own(c))
		v.h.exit()
		go v.finishClose()
		return v.closeResult(rc)
	}
	v.h.exit()
	return v.closeResult(v.finishClose())
}

// finishClose closes v in C, waiting for the drain (each caller waits: no
// Go lock is held over it, so a Close from inside an op never waits for
// a Close draining), then frees it. Returns the C status.
func (v *VMSession) finishClose() int {
	rc := C.ACCEL_OK
	if c := v.h.enter(); c != nil {
		m := blockBegin() // from inside an op of another session
		rc = int(C.accel_session_close(c, C.ACCEL_CLOSE_DRAIN))
		m.blockEnd()
		v.h.exit()
	}
	v.h.free(&v.rt.g)
	v.rt.untrack(v)
	return rc
}

// closeResult records the first Close's result and returns it.
func (v *VMSession) closeResult(rc int) error {
	v.closeOnce.Do(func() { v.closeErr = statusErr(rc) })
	return v.closeErr
}

// Submit runs f(s) after the ops submitted before it to this session, and
// returns f's error. f runs on one of the runtime's host workers, or,
// when the session is idle and the scheduler would pick it first, on the
// calling goroutine (the direct hand-off: no goroutine switch), with any
// ctx; so also from inside an op of another session (a nested Submit),
// whose op lends its thread meanwhile and is not charged for f. The
// calling goroutine never runs another session's op.
//
// A panic in f comes back as a *PanicError (the op counts as failed and
// the session goes on). If f calls runtime.Goexit (t.Fatal does), the op
// counts as failed and Submit calls runtime.Goexit on the calling
// goroutine, as it would with f run there; the session and its worker go
// on.
//
// ctx is kept until f starts: its deadline is the op's deadline in the
// scheduler (an op not started by then never runs; a deadline past the C
// clock's int64 of ns, as context.WithTimeout(ctx, math.MaxInt64) or the
// year 9999, is none), and when it is done
// the op is canceled: f never starts after ctx is done, and Submit
// returns ctx.Err() at once (a running f is not interrupted; Submit then
// waits for it). The canceled op keeps its room in the queue, and counts in
// Queued, until a worker reaches its place in the session's order. A full
// queue makes Submit wait for room, or for ctx.
// From inside one of the session's own ops Submit returns ErrDeadlock.
func (v *VMSession) Submit(ctx context.Context, f func(*Session) error) error {
	if f == nil {
		return ErrInvalidArgument
	}
	done, err := ctxDone(ctx)
	if err != nil {
		return err
	}
	if v.closed.Load() {
		return ErrSessionClosed
	}
	if v.h == nil {
		v.dispatched.Add(1)
		v.failed.Add(1)
		v.submitted.Add(1)
		return ErrNoBackends
	}
	r := allocRec()
	r.fillSync(v, f, ctx, done)
	var t C.accel_ticket
	// Its own op on this goroutine if the scheduler hands the session
	// over directly; else queued, or nothing done (no free helper worker,
	// queue full). With a ctx that can end, the op carries ctx's deadline
	// and t names it, so that one left queued is canceled below as an
	// enqueued one is; a begun one has run, or was refused (runRec) or
	// dropped at its deadline, by the time submitOwn returns, or is held
	// by a Batcher's hold-back (WithMaxDelay) and is canceled as a
	// queued one.
	deadline := ctxDeadline(ctx) // also from a ctx whose Done is nil
	var tp *C.accel_ticket
	if done != nil {
		tp = &t
	}
	queued, err := v.submitOwn(r, deadline, tp)
	if err != nil {
		r.reset()
		freeRec(r)
		return err
	}
	if !queued {
		if err := v.enqueue(r, deadline, ctx, done, &t); err != nil {
			r.reset()
			freeRec(r)
			return err
		}
	}
	v.postClose()
	v.submitted.Add(1)
	if r.inline {
		// f ran on this goroutine (runOwn): its outcome is in r.
		return v.outcome(r)
	}
	return v.awaitRec(r, ctx, done, &t)
}

// ctxDone is ctx.Done() of a submit's ctx (nil: none, or a ctx that
// never ends), and ctx's error if it has ended already.
func ctxDone(ctx context.Context) (<-chan struct{}, error) {
	if ctx == nil {
		return nil, nil
	}
	done := ctx.Done()
	if done != nil && ctx.Err() != nil {
		return done, ctx.Err()
	}
	return done, nil
}

// awaitRec is the submitter's side of queued r (Submit, Batcher.Submit):
// it waits for r's outcome, or for done (then the cancel race: the CAS
// decides whether r's op runs, and a canceled op is canceled in C by t),
// frees r and returns the outcome. A wait inside an op counts its host
// worker blocked (waitRec*, compensate.go).
func (v *VMSession) awaitRec(r *opRec, ctx context.Context, done <-chan struct{}, t *C.accel_ticket) error {
	if done == nil {
		waitRec(r.waitCh())
	} else if !waitRecCtx(r.waitCh(), done) {
		// LP of the cancel race: the CAS decides whether f runs.
		if r.cancel() {
			v.canceled.Add(1)
			// The cancel keeps f from ever running, but the op keeps
			// its room in the queue (and counts in Queued and Sync) until a
			// worker reaches its place in the session's order; its
			// done then frees the room and the record (goAccelUnrun).
			// EALREADY: a worker took it and frees it.
			if c := v.h.enter(); c != nil {
				C.accel_cancel(t)
				v.h.exit()
			}
			return ctx.Err()
		}
		waitRec(r.waitCh()) // f started before ctx ended: it is not interrupted
	}
	return v.outcome(r)
}

// outcome frees r, done with, and returns its outcome; f's
// runtime.Goexit goes on in the submitter's goroutine.
func (v *VMSession) outcome(r *opRec) error {
	err := r.outcome()
	r.reset()
	freeRec(r)
	if err == errGoexit {
		runtime.Goexit()
	}
	return err
}

// queueAsync queues r (an async op or group) without waiting and counts
// it submitted; on failure r is freed.
func (v *VMSession) queueAsync(r *opRec) error {
	if rc := v.submitRec(r); rc != C.ACCEL_OK {
		r.reset()
		freeRec(r)
		return statusErr(rc)
	}
	v.postClose()
	v.submitted.Add(1)
	return nil
}

// submitOwn is hostWorkers.submitOwn under the handle's guard, left also
// if f ends the goroutine (runtime.Goexit). Then Submit never gets back
// to count its op as submitted (it was, and counted failed): that is
// done here.
func (v *VMSession) submitOwn(r *opRec, deadline C.int64_t, t *C.accel_ticket) (queued bool, err error) {
	if v.rt.noOwn {
		return false, nil
	}
	c := v.h.enter()
	if c == nil {
		return false, nil // closed: enqueue says so
	}
	back := false
	defer func() {
		v.h.exit()
		if !back {
			v.postClose()
			v.submitted.Add(1)
		}
	}()
	queued, err = v.rt.host.submitOwn(v, c, r, deadline, t)
	back = true
	return queued, err
}

// ctxDeadline is ctx's deadline on C's clock (accel_now_ns), 0 if none
// (also for one past what that clock's int64 holds: cDeadline).
func ctxDeadline(ctx context.Context) C.int64_t {
	if ctx == nil {
		return 0
	}
	d, ok := ctx.Deadline()
	if !ok {
		return 0
	}
	return C.int64_t(cDeadline(int64(C.accel_now_ns()), time.Until(d)))
}

// cDeadline is the C deadline now+left (ns on C's clock, now >= 0),
// saturated: a sum past math.MaxInt64 (context.WithTimeout(ctx,
// math.MaxInt64), a deadline in the year 9999; time.Until saturates too)
// is no deadline, 0, as a ctx that never ends; one at or before the
// clock's start is 1, already past (0 would mean none).
func cDeadline(now int64, left time.Duration) int64 {
	if left > 0 && int64(left) > math.MaxInt64-now {
		return 0
	}
	d := now + int64(left) // no overflow: now >= 0 and left <= MaxInt64-now
	if d <= 0 {
		d = 1
	}
	return d
}

// enqueue hands r to C (deadline: ctx's, ticket into t), waiting for
// room in Go (room.go) while the queue is full: without limit if ctx
// cannot end (done nil), else until it does.
func (v *VMSession) enqueue(r *opRec, deadline C.int64_t, ctx context.Context, done <-chan struct{}, t *C.accel_ticket) error {
	c := v.h.enter()
	if c == nil {
		return ErrSessionClosed
	}
	defer v.h.exit()
	if awayOwn(c) { // goaccel_submit's own check sees the thread only
		return ErrDeadlock
	}
	rc, ended := v.room.wait(func() int {
		if v.closed.Load() { // Close wakes the waiters: none waits on
			return C.ACCEL_ECLOSED
		}
		return int(C.goaccel_submit(c, r.arg(), deadline, C.ACCEL_NO_WAIT, 1, t))
	}, done)
	if ended {
		return ctx.Err()
	}
	return statusErr(rc)
}
