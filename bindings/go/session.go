package accel

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// Session is the handle an op gets: the session's id and its budgeted
// memory. It is also what the old API's NewSession and DefaultSession
// return. Its methods are safe for concurrent use.
type Session struct {
	v *VMSession
}

// ID returns the session's id.
func (s *Session) ID() string { return s.v.id }

// VMSession returns the session this handle belongs to.
func (s *Session) VMSession() *VMSession { return s.v }

// Reserve charges bytes to the session's budget without allocating:
// ErrSessionBudgetExceeded if that would pass the cap (nothing charged),
// ErrSessionClosed once the session is closed.
func (s *Session) Reserve(bytes int64) error {
	if bytes < 0 {
		return ErrInvalidArgument
	}
	c := s.enter()
	if c == nil {
		return ErrSessionClosed
	}
	rc := int(C.accel_session_reserve(c, C.int64_t(bytes)))
	s.exit()
	return statusErr(rc)
}

// Release refunds bytes charged by Reserve.
func (s *Session) Release(bytes int64) error {
	if bytes < 0 {
		return ErrInvalidArgument
	}
	c := s.enter()
	if c == nil {
		return ErrSessionClosed
	}
	rc := int(C.accel_session_unreserve(c, C.int64_t(bytes)))
	s.exit()
	return statusErr(rc)
}

// Blocking runs wait, a call that blocks with little CPU (a state read
// that goes to disk or the network, a remote signer), as a wait the
// runtime is told of. Called by an op's f on the goroutine f runs on,
// when a pool worker runs the op, that worker hands its place to another
// at once, as for a nested Submit, instead of when the package's monitor
// finds it asleep, 1-2 ms into the wait: the other sessions' ops do not
// wait for it meanwhile, and the monitor leaves the announced wait alone.
// Anywhere else it just runs wait: outside an op, on another goroutine,
// and when a synchronous Submit runs its own op on the caller's
// goroutine (no pool worker is held then). The count ends when wait
// returns, panics or calls runtime.Goexit; calls nest. Meant for waits:
// a wait that computes runs beside the worker that took its place, two
// goroutines sharing the Ps where one was counted. The op counted is the
// one running on the calling goroutine; s only says whose op it is to
// the reader (a nil *Session works the same).
func (s *Session) Blocking(wait func()) {
	m := blockBegin()
	defer m.blockEnd()
	wait()
}

// enter returns the session's C handle for one call (then exit); nil
// without one (closed and freed, or no backend).
func (s *Session) enter() *C.accel_session {
	if s == nil || s.v.h == nil {
		return nil
	}
	return s.v.h.enter()
}

func (s *Session) exit() { s.v.h.exit() }

// Alloc returns bytes of memory charged to the session's budget
// (ErrSessionBudgetExceeded past the cap). The memory is outside the Go
// heap: give it back with Free, passing the slice Alloc returned.
func (s *Session) Alloc(bytes int) ([]byte, error) {
	if bytes <= 0 {
		return nil, ErrInvalidArgument
	}
	c := s.enter()
	if c == nil {
		return nil, ErrSessionClosed
	}
	var p unsafe.Pointer
	rc := int(C.goaccel_alloc(c, C.size_t(bytes), &p))
	s.exit()
	if rc != C.ACCEL_OK {
		return nil, statusErr(rc)
	}
	return unsafe.Slice((*byte)(p), bytes), nil
}

// Free releases memory from Alloc and refunds its charge. b must be the
// slice Alloc returned (its capacity is the size refunded); nil is ignored.
// After the session is freed the memory is still released (nothing is
// left to refund).
func (s *Session) Free(b []byte) {
	if cap(b) == 0 {
		return
	}
	b = b[:1]
	c := s.enter()
	if c == nil {
		C.free(unsafe.Pointer(&b[0]))
		return
	}
	C.goaccel_free(c, unsafe.Pointer(&b[0]), C.size_t(cap(b)))
	s.exit()
}

// MemoryUsed returns the bytes charged to the session now; 0 once closed.
func (s *Session) MemoryUsed() int64 {
	c := s.enter()
	if c == nil {
		return 0
	}
	n := int64(C.accel_session_memory_used(c))
	s.exit()
	return n
}

// MemoryBudget returns the session's cap in bytes, as opened (also after
// Close); 0 = unlimited.
func (s *Session) MemoryBudget() int64 { return s.v.budget }

// Backend returns the backend the session was bound to at open (also
// after Close); BackendCPU for a session whose backend is not available
// (IsAvailable).
func (s *Session) Backend() BackendType {
	if s.v.h == nil {
		return BackendCPU
	}
	return s.v.backend
}

// Sync waits for the session's submitted ops (VMSession.Sync).
func (s *Session) Sync() error { return s.v.Sync() }

// Close closes the session (VMSession.Close).
func (s *Session) Close() error { return s.v.Close() }

var anonSessions atomic.Uint64

// NewSession opens an anonymous session ("session-N") on the default
// runtime, as the old API's NewSession did.
func NewSession(opts ...SessionOption) (*Session, error) {
	var cfg sessionConfig
	for _, o := range opts {
		o(&cfg)
	}
	for {
		id := "session-" + itoa(anonSessions.Add(1))
		v, err := NewVMSession(id, WithVMBackend(cfg.backend))
		if err == ErrSessionExists {
			continue // a VM took that name; try the next
		}
		if err != nil {
			return nil, err
		}
		if !v.IsAvailable() {
			v.Close()
			return nil, ErrNoBackends
		}
		return &v.sess, nil
	}
}

var (
	defaultSessMu sync.Mutex
	defaultSess   *VMSession
)

// DefaultSession returns the process-wide default session (ID
// "default"), opened on first use on the default runtime. As with the old
// type it lives until shutdown: if someone closed it, the next call opens
// a new one. It is apart from the users' ids: a VM of the user's named
// "default" is another session (Lookup finds that one).
func DefaultSession() (*Session, error) {
	defaultSessMu.Lock()
	defer defaultSessMu.Unlock()
	if defaultSess != nil && !defaultSess.closed.Load() {
		return &defaultSess.sess, nil
	}
	rt, err := DefaultRuntime()
	if err != nil {
		return nil, err
	}
	v, err := rt.open("default", vmSessionConfig{priority: PriorityNormal,
		backend: BackendAuto, queueDepth: defaultQueueDepth}, true)
	if err != nil {
		return nil, err
	}
	defaultSess = v
	return &v.sess, nil
}

func itoa(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}
