package accel

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"sort"
	"sync"
	"time"
)

// RuntimeConfig sizes a Runtime; zero values take accel's defaults.
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
	// OSThreadWorkers runs ops on accel's own C worker threads, which
	// call into Go for each op, instead of on worker goroutines that take
	// ops from the C scheduler (the default; docs/go.md compares them).
	OSThreadWorkers bool
}

// Runtime is a pool of worker threads and the sessions it schedules. Most
// programs use the process default (DefaultRuntime), which NewVMSession
// uses.
type Runtime struct {
	c       *C.accel_runtime
	workers int
	host    *hostWorkers // nil: accel's own worker threads
	// groupCap: most ops a SubmitAsync group holds (combine.go): 32, or
	// QuantumOps if smaller, so a visit hands out no more Go ops than
	// separate submits would with QuantumOps <= 32; shortNs: ShortOp.
	groupCap int32
	shortNs  int64

	mu       sync.Mutex // guards sessions and closed; never held on an op path
	sessions map[string]*VMSession
	closed   bool
}

// NewRuntime starts a runtime with its worker threads.
func NewRuntime(cfg RuntimeConfig) (*Runtime, error) {
	if cfg.Workers < 0 || cfg.ShortLaneWorkers < 0 || cfg.ShortOp < 0 ||
		cfg.QuantumOps < 0 || cfg.Quantum < 0 {
		return nil, ErrInvalidArgument
	}
	var cc C.accel_runtime_config
	cc.workers = C.uint(cfg.Workers)
	cc.short_lane_workers = C.uint(cfg.ShortLaneWorkers)
	cc.short_op_ns = C.uint64_t(cfg.ShortOp)
	cc.quantum_ops = C.uint32_t(cfg.QuantumOps)
	cc.quantum_ns = C.uint64_t(cfg.Quantum)
	host := C.int(1)
	if cfg.OSThreadWorkers {
		host = 0
	}
	var rt *C.accel_runtime
	w := cfg.Workers
	if host == 0 || w == 0 {
		if rc := int(C.goaccel_runtime_create(&cc, host, &rt)); rc != C.ACCEL_OK {
			return nil, statusErr(rc)
		}
		// With Workers == 0 the library sizes the pool from the CPU
		// affinity mask and the cgroup CPU quota.
		w = int(C.accel_runtime_workers(rt))
	}
	nhelp := 0
	if host != 0 {
		// Worker goroutines get w slots; sync submitters help on nhelp
		// more (hostworker.go): created with them once w is known (a
		// default-sized runtime is created once more for it: host-driven
		// runtimes start no threads, so that costs little).
		nhelp = helperSlots()
		if rt != nil {
			C.accel_runtime_destroy(rt)
		}
		cc.workers = C.uint(w + nhelp)
		cc.short_lane_workers += C.uint(nhelp) // the helper slots come first
		if rc := int(C.goaccel_runtime_create(&cc, host, &rt)); rc != C.ACCEL_OK {
			return nil, statusErr(rc)
		}
	}
	r := &Runtime{c: rt, workers: w, sessions: make(map[string]*VMSession),
		groupCap: groupMax, shortNs: int64(cfg.ShortOp)}
	if cfg.QuantumOps > 0 && cfg.QuantumOps < groupMax {
		r.groupCap = int32(cfg.QuantumOps)
	}
	if r.shortNs == 0 {
		r.shortNs = int64(100 * time.Microsecond) // the library's default
	}
	if host != 0 {
		r.host = startHostWorkers(rt, w, int(cc.short_lane_workers)-nhelp, nhelp)
	}
	return r, nil
}

var (
	defaultRTOnce sync.Once
	defaultRT     *Runtime
	defaultRTErr  error
)

// DefaultRuntime returns the process-wide runtime (one worker per usable CPU),
// started on first use. It is never closed.
func DefaultRuntime() (*Runtime, error) {
	defaultRTOnce.Do(func() { defaultRT, defaultRTErr = NewRuntime(RuntimeConfig{}) })
	return defaultRT, defaultRTErr
}

// Workers is the number of workers (goroutines or threads).
func (rt *Runtime) Workers() int { return rt.workers }

// Lookup returns the open session with this id.
func (rt *Runtime) Lookup(id string) (*VMSession, bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	v, ok := rt.sessions[id]
	return v, ok
}

// Sessions returns the open sessions, sorted by id.
func (rt *Runtime) Sessions() []*VMSession {
	rt.mu.Lock()
	out := make([]*VMSession, 0, len(rt.sessions))
	for _, v := range rt.sessions {
		out = append(out, v)
	}
	rt.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// Close closes every session (their queued ops still run), then stops the
// workers and frees the runtime. Like free(), it must not race with other
// calls on the runtime's sessions, and the sessions' handles are invalid
// afterwards. Calling Close
// from inside an op returns ErrDeadlock and does nothing; a second Close
// returns ErrRuntimeClosed.
func (rt *Runtime) Close() error {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return ErrRuntimeClosed
	}
	if rt.insideOpLocked() {
		rt.mu.Unlock()
		return ErrDeadlock
	}
	open := make([]*VMSession, 0, len(rt.sessions))
	for _, v := range rt.sessions {
		open = append(open, v)
	}
	rt.mu.Unlock()
	for _, v := range open {
		v.Close()
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed {
		return ErrRuntimeClosed
	}
	if rt.host != nil {
		// The sessions are drained: stop the worker goroutines (destroy
		// runs anything queued since on this thread).
		rt.host.stop()
	}
	// Sessions opened during the loop above are destroyed with the runtime.
	if rc := int(C.accel_runtime_destroy(rt.c)); rc != C.ACCEL_OK {
		return statusErr(rc)
	}
	rt.closed = true
	for _, v := range rt.sessions {
		v.closed.Store(true)
	}
	rt.sessions = nil
	return nil
}

// insideOpLocked reports whether the caller runs inside an op of rt (its
// worker would wait for itself). rt.mu is held.
func (rt *Runtime) insideOpLocked() bool {
	if rt.host != nil && C.goaccel_in_visit(rt.c) != 0 {
		return true
	}
	cur := C.accel_current_session()
	if cur == nil {
		return false
	}
	for _, v := range rt.sessions {
		if v.h.c == cur {
			return true
		}
	}
	return false
}

// helperSlots is how many submitters may help at once: two per P, at
// most 16. One per P would be enough if a helper always kept its P, but a
// helper whose thread the OS deschedules inside a crossing loses its P
// (sysmon hands it on) while it holds its slot; with one slot per P the
// submitters then running on that P found every slot taken and queued
// their ops for the worker goroutines, up to 17% of a)'s ops on the
// loaded 2-vCPU machine, at several times the cost of a helped op.
func helperSlots() int {
	n := runtime.GOMAXPROCS(0)
	if n > 8 {
		n = 8
	}
	return 2 * n
}
