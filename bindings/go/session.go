package accel

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"runtime"
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
// ErrSessionBudgetExceeded if that would pass the cap (nothing charged).
func (s *Session) Reserve(bytes int64) error {
	if bytes < 0 {
		return ErrInvalidArgument
	}
	rc := int(C.accel_session_reserve(s.v.h.c, C.int64_t(bytes)))
	runtime.KeepAlive(s.v.h)
	return statusErr(rc)
}

// Release refunds bytes charged by Reserve.
func (s *Session) Release(bytes int64) error {
	if bytes < 0 {
		return ErrInvalidArgument
	}
	rc := int(C.accel_session_unreserve(s.v.h.c, C.int64_t(bytes)))
	runtime.KeepAlive(s.v.h)
	return statusErr(rc)
}

// Alloc returns bytes of memory charged to the session's budget
// (ErrSessionBudgetExceeded past the cap). The memory is outside the Go
// heap: give it back with Free, passing the slice Alloc returned.
func (s *Session) Alloc(bytes int) ([]byte, error) {
	if bytes <= 0 {
		return nil, ErrInvalidArgument
	}
	var p unsafe.Pointer
	rc := int(C.goaccel_alloc(s.v.h.c, C.size_t(bytes), &p))
	runtime.KeepAlive(s.v.h)
	if rc != C.ACCEL_OK {
		return nil, statusErr(rc)
	}
	return unsafe.Slice((*byte)(p), bytes), nil
}

// Free releases memory from Alloc and refunds its charge. b must be the
// slice Alloc returned (its capacity is the size refunded); nil is ignored.
func (s *Session) Free(b []byte) {
	if cap(b) == 0 {
		return
	}
	b = b[:1]
	C.goaccel_free(s.v.h.c, unsafe.Pointer(&b[0]), C.size_t(cap(b)))
	runtime.KeepAlive(s.v.h)
}

// MemoryUsed returns the bytes charged to the session now.
func (s *Session) MemoryUsed() int64 {
	n := int64(C.accel_session_memory_used(s.v.h.c))
	runtime.KeepAlive(s.v.h)
	return n
}

// MemoryBudget returns the session's cap in bytes; 0 = unlimited.
func (s *Session) MemoryBudget() int64 { return s.v.FullStats().MemoryBudget }

// Backend returns the backend the session is bound to.
func (s *Session) Backend() BackendType {
	b := C.accel_session_backend(s.v.h.c)
	runtime.KeepAlive(s.v.h)
	if b == C.ACCEL_BACKEND_CUDA {
		return BackendCUDA
	}
	return BackendCPU
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
		return &v.sess, nil
	}
}

var (
	defaultSessOnce sync.Once
	defaultSess     *Session
	defaultSessErr  error
)

// DefaultSession returns the process-wide session "default", opened on
// first use on the default runtime.
func DefaultSession() (*Session, error) {
	defaultSessOnce.Do(func() {
		v, err := NewVMSession("default")
		if err != nil {
			defaultSessErr = err
			return
		}
		defaultSess = &v.sess
	})
	return defaultSess, defaultSessErr
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
