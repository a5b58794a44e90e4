package accel

/*
#include "shim.h"
#include "../../runtime/defaults.h"
*/
import "C"

import (
	"math"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// RuntimeConfig sizes a Runtime; zero values take accel's defaults. A
// negative field, Workers over the library's maximum (1024, less the
// package's helper workers), or QuantumOps over 2^32-1 is refused with
// ErrInvalidArgument.
type RuntimeConfig struct {
	// Workers is the number of worker threads; 0: one per CPU the process
	// may use (affinity mask, cgroup CPU quota).
	Workers int
	// ShortLaneWorkers of the workers run only sessions whose recent op
	// cost is at most ShortOp, so short ops do not wait behind long ones
	// (docs/scheduler.md). Must be < Workers when Workers != 0.
	ShortLaneWorkers int
	ShortOp          time.Duration // 0: 100 µs
	QuantumOps       int           // ops per scheduler visit at most; 0: 32
	Quantum          time.Duration // service per visit at most; 0: 2 ms

	// The C runtime's compensation settings, for the tests (0: the C
	// defaults, include/accel/accel.h): the blocked-op monitor's tick
	// (block_detect_ns) and the cap on extra workers (max_extra_workers).
	blockDetect time.Duration
	maxExtra    int
}

// Runtime is a pool of host workers and the sessions it schedules.
// Most programs use the process default (DefaultRuntime), which
// NewVMSession uses.
type Runtime struct {
	c       *C.accel_runtime
	workers int
	host    *hostWorkers
	// isDefault: the process-wide runtime (DefaultRuntime), which Close
	// leaves open.
	isDefault bool
	// groupCap: most ops a SubmitAsync group holds (combine.go): 32, or
	// QuantumOps if smaller, so a visit hands out no more Go ops than
	// separate submits would with QuantumOps <= 32; shortNs: ShortOp.
	groupCap int32
	shortNs  int64
	// noCombine: SubmitAsync submits each op alone instead of combining
	// it into the session's open group (combine.go). Only the benchmarks'
	// A/B pairs set it (setCombineForTest), before the runtime's first
	// session opens.
	noCombine bool
	// noOwn: Submit never takes the direct hand-off, so its op always
	// goes to a host worker. Only tests of the host workers set it
	// (setOwnForTest), before the runtime's first session opens.
	noOwn bool
	g     guard // calls on c itself (WritePrometheus) against destroy

	mu      sync.Mutex // guards the fields below; never held on an op path
	byID    map[string][]*VMSession
	all     map[*VMSession]struct{} // sessions whose C side is not freed yet
	closing bool                    // Close began: no session opens
	// labels counts the sessions with a C side by their metrics label
	// (promEscape of the C id): openC keeps them apart.
	labels map[string]int
	// closed: made by the first Close, closed when it returns; a Close
	// racing it waits on it.
	closed chan struct{}
	// closeWaits counts the Closes that waited on closed (for tests).
	closeWaits atomic.Int32
}

// NewRuntime starts a runtime with its host workers.
func NewRuntime(cfg RuntimeConfig) (*Runtime, error) {
	if cfg.Workers < 0 || cfg.ShortLaneWorkers < 0 || cfg.ShortOp < 0 ||
		cfg.QuantumOps < 0 || cfg.Quantum < 0 || cfg.blockDetect < 0 ||
		cfg.maxExtra < 0 || cfg.maxExtra > math.MaxInt32 {
		return nil, ErrInvalidArgument
	}
	// Values the C fields cannot hold would wrap there: C would accept a
	// small count while the host workers below start the large one.
	if cfg.Workers > math.MaxInt32 || cfg.ShortLaneWorkers > math.MaxInt32 ||
		uint64(cfg.QuantumOps) > math.MaxUint32 {
		return nil, ErrInvalidArgument
	}
	var cc C.accel_runtime_config
	cc.workers = C.uint(cfg.Workers)
	cc.short_lane_workers = C.uint(cfg.ShortLaneWorkers)
	cc.short_op_ns = C.uint64_t(cfg.ShortOp)
	cc.quantum_ops = C.uint32_t(cfg.QuantumOps)
	cc.quantum_ns = C.uint64_t(cfg.Quantum)
	id := hostNextID.Add(1)
	var rt *C.accel_runtime
	w := cfg.Workers
	if w == 0 {
		// The count the library itself would pick (CPU affinity mask,
		// cgroup CPU quota). The create below still checks it: a count
		// over the library's maximum, or ShortLaneWorkers not below it,
		// is refused there as a create with Workers 0 would refuse it.
		w = int(C.goaccel_default_workers())
	}
	// The helper workers (hostworker.go, submitOwn) come first, short lane.
	nhelp := helperCount()
	cc.workers = C.uint(w + nhelp)
	cc.short_lane_workers += C.uint(nhelp)
	cc.max_extra_workers = C.uint(cfg.maxExtra)
	cc.block_detect_ns = C.uint64_t(cfg.blockDetect)
	// The host workers' goroutines share GOMAXPROCS Ps: a host worker that
	// waits for a P while all of them are busy is not counted blocked (no
	// extra worker could run either); one that waits while a P is idle is.
	cc.host_cpus = C.uint(runtime.GOMAXPROCS(0))
	if rc := int(C.goaccel_runtime_create(&cc, C.uintptr_t(id), &rt)); rc != C.ACCEL_OK {
		return nil, statusErr(rc)
	}
	r := &Runtime{c: rt, workers: w, byID: make(map[string][]*VMSession),
		all: make(map[*VMSession]struct{}), labels: make(map[string]int), groupCap: groupMax, shortNs: int64(cfg.ShortOp)}
	if cfg.QuantumOps > 0 && cfg.QuantumOps < groupMax {
		r.groupCap = int32(cfg.QuantumOps)
	}
	if r.shortNs == 0 {
		r.shortNs = int64(C.ACCEL_DEFAULT_SHORT_OP_NS) // the library's default
	}
	r.host = startHostWorkers(rt, uintptr(id), w, int(cc.short_lane_workers)-nhelp, nhelp)
	return r, nil
}

var (
	defaultRTOnce sync.Once
	defaultRT     *Runtime
	defaultRTErr  error
)

// DefaultRuntime returns the process-wide runtime (one worker per usable CPU),
// started on first use. It is never closed: its Close returns
// ErrInvalidArgument and does nothing, so that no VM of the process (any
// of them reaches it through VMSession.Runtime) closes the others'.
func DefaultRuntime() (*Runtime, error) {
	defaultRTOnce.Do(func() {
		defaultRT, defaultRTErr = NewRuntime(RuntimeConfig{})
		if defaultRT != nil {
			defaultRT.isDefault = true
		}
	})
	return defaultRT, defaultRTErr
}

// Workers is the number of host workers.
func (rt *Runtime) Workers() int { return rt.workers }

// track records an opened session (rt.mu held); internal: not found by
// Lookup under its id (the default session).
func (rt *Runtime) track(v *VMSession, internal bool) {
	rt.all[v] = struct{}{}
	if !internal {
		rt.byID[v.id] = append(rt.byID[v.id], v)
	}
}

// untrack drops a session whose C side is freed (or that has none). Every
// Close caller may call it: only the first gives the label back.
func (rt *Runtime) untrack(v *VMSession) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if _, ok := rt.all[v]; !ok {
		return
	}
	delete(rt.all, v)
	if v.cid != "" {
		if l := promEscape(v.cid); rt.labels[l] > 1 {
			rt.labels[l]--
		} else {
			delete(rt.labels, l)
		}
	}
}

// listed reports whether v is in Lookup and Sessions (rt.mu held).
func (rt *Runtime) listed(v *VMSession) bool {
	for _, x := range rt.byID[v.id] {
		if x == v {
			return true
		}
	}
	return false
}

// forget takes a closing session out of Lookup and Sessions.
func (rt *Runtime) forget(v *VMSession) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	l, found := rt.byID[v.id], false
	for _, x := range l {
		found = found || x == v
	}
	if !found {
		return
	}
	for i, x := range l {
		if x == v {
			l = append(l[:i:i], l[i+1:]...)
			break
		}
	}
	if len(l) == 0 {
		delete(rt.byID, v.id)
	} else {
		rt.byID[v.id] = l
	}
}

// Lookup returns an open session with this id: with several open under
// one id, the one opened first.
func (rt *Runtime) Lookup(id string) (*VMSession, bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	l := rt.byID[id]
	if len(l) == 0 {
		return nil, false
	}
	return l[0], true
}

// Sessions returns the open sessions, sorted by id: those opened by
// NewVMSession and NewSession, not the runtime's own (DefaultSession's),
// which Lookup does not find either.
func (rt *Runtime) Sessions() []*VMSession {
	rt.mu.Lock()
	out := make([]*VMSession, 0, len(rt.all))
	for _, l := range rt.byID {
		for _, v := range l {
			if !v.closed.Load() {
				out = append(out, v)
			}
		}
	}
	rt.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// Close closes every session (their queued ops still run), then stops the
// workers and frees the runtime. The default runtime (DefaultRuntime) is
// never closed: its Close returns ErrInvalidArgument and does nothing. Every method of the runtime and of its
// sessions stays safe afterwards (ErrRuntimeClosed, ErrSessionClosed or a
// zero value). Calling Close from inside an op returns ErrDeadlock and
// does nothing. A later Close returns ErrRuntimeClosed; one that races
// the first waits until the first has finished, as VMSession.Close does,
// so that the runtime is closed when any Close returns (from inside an
// op, which the first waits for, it returns at once). As for the first,
// a goroutine that one of the runtime's ops waits on must not call it.
func (rt *Runtime) Close() error {
	if rt.isDefault {
		return ErrInvalidArgument // DefaultRuntime: never closed
	}
	rt.mu.Lock()
	inside := rt.insideOpLocked()
	if rt.closing {
		closed := rt.closed
		rt.mu.Unlock()
		if !inside {
			rt.closeWaits.Add(1)
			m := blockBegin() // inside an op of another runtime: counts at once
			m.recv(closed)
			m.blockEnd()
		}
		return ErrRuntimeClosed
	}
	if inside {
		rt.mu.Unlock()
		return ErrDeadlock
	}
	rt.closing = true
	rt.closed = make(chan struct{})
	defer close(rt.closed)
	open := make([]*VMSession, 0, len(rt.all))
	for v := range rt.all {
		open = append(open, v)
	}
	rt.mu.Unlock()
	for _, v := range open {
		v.Close() // from outside any op: drains and frees
	}
	// A Close from inside an op that is still finishing in its own
	// goroutine: the Close above waited for the same drain; its release
	// may still be running, and rt.g's retire below waits for it
	// (chandle.free). The sessions are drained: stop the worker
	// goroutines (destroy runs anything queued since on this thread).
	rt.host.stop()
	rt.g.retire()
	if rc := int(C.accel_runtime_destroy(rt.c)); rc != C.ACCEL_OK {
		return statusErr(rc)
	}
	return nil
}

// insideOpLocked reports whether the caller runs inside an op of rt (its
// worker would wait for itself). rt.mu is held.
func (rt *Runtime) insideOpLocked() bool {
	return C.goaccel_in_visit(rt.c) != 0 || awayIn(rt.c)
}

// helperCount is how many synchronous submitters may run their own op at
// once (submitOwn): one per P and one more, at most 17. More submitters
// than that queue their ops for the host workers.
func helperCount() int {
	n := runtime.GOMAXPROCS(0)
	if n > 16 {
		n = 16
	}
	return n + 1
}
