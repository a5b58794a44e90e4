//go:build cgo && linux

package accel

// Priority is a session's scheduling weight: backlogged sessions get worker
// time in proportion to it (1..1000).
type Priority int

const (
	PriorityLow      Priority = 1
	PriorityNormal   Priority = 5
	PriorityHigh     Priority = 10
	PriorityCritical Priority = 100
)

// BackendType names a compute backend. This package builds the CPU
// backend in and loads the CUDA backend as the library's module
// (libaccel-backend-cuda.so, from $ACCEL_BACKEND_DIR or beside the program) where
// one is installed; a backend that is missing, or has no device, is
// ErrNoBackends when asked for explicitly.
type BackendType int

const (
	// BackendAuto: the best usable backend (CUDA where its module and a
	// device are found, else the CPU).
	BackendAuto BackendType = iota
	// BackendMetal is kept for source compatibility; never available.
	BackendMetal
	// BackendWebGPU is kept for source compatibility; never available.
	BackendWebGPU
	// BackendCUDA: NVIDIA CUDA, through the library's loadable module.
	BackendCUDA
	// BackendCPU: ops run on the runtime's worker threads.
	BackendCPU
)

// String returns the backend's name.
func (b BackendType) String() string {
	switch b {
	case BackendAuto:
		return "auto"
	case BackendMetal:
		return "metal"
	case BackendWebGPU:
		return "webgpu"
	case BackendCUDA:
		return "cuda"
	case BackendCPU:
		return "cpu"
	}
	return "unknown"
}

// VMSessionOption configures a VM session.
type VMSessionOption func(*vmSessionConfig)

type vmSessionConfig struct {
	priority   Priority
	memBudget  int64
	backend    BackendType
	queueDepth int
	shared     bool
}

// WithPriority sets the session's weight (1..1000; values outside are
// clamped).
func WithPriority(p Priority) VMSessionOption {
	return func(c *vmSessionConfig) { c.priority = p }
}

// WithMemoryBudget caps what the session may allocate or reserve through
// its *Session, in bytes. 0 (or less) means unlimited.
func WithMemoryBudget(bytes int64) VMSessionOption {
	return func(c *vmSessionConfig) { c.memBudget = bytes }
}

// WithVMBackend pins the session to a backend.
func WithVMBackend(b BackendType) VMSessionOption {
	return func(c *vmSessionConfig) { c.backend = b }
}

// WithQueueDepth bounds the session's queued, not yet started ops (default
// 1024, rounded up to a power of two); a Submit on a full queue waits for
// room. n <= 0 is ignored.
func WithQueueDepth(n int) VMSessionOption {
	return func(c *vmSessionConfig) {
		if n > 0 {
			c.queueDepth = n
		}
	}
}

// WithSharedDevice makes the session share the runtime's device context
// (CUDA) instead of opening its own. Its ops keep their own queue, order,
// priority and budget.
func WithSharedDevice() VMSessionOption {
	return func(c *vmSessionConfig) { c.shared = true }
}

// SessionOption configures a session made by NewSession.
type SessionOption func(*sessionConfig)

type sessionConfig struct {
	backend BackendType
}

// WithBackend pins a NewSession session to a backend.
func WithBackend(b BackendType) SessionOption {
	return func(c *sessionConfig) { c.backend = b }
}
