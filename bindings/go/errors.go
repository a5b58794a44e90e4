package accel

// #include "shim.h"
import "C"

import (
	"errors"
	"fmt"
)

// The old type's errors, usable with errors.Is.
var (
	// ErrEmptyVMID is returned when NewVMSession is called with an empty vmID.
	ErrEmptyVMID = errors.New("accel: vmID must not be empty")
	// ErrSessionBudgetExceeded is returned when an allocation or reservation
	// would pass the session's memory budget.
	ErrSessionBudgetExceeded = errors.New("accel: session memory budget exceeded")
	// ErrSessionClosed is returned by calls on a closed session.
	ErrSessionClosed = errors.New("accel: session closed")
	// ErrNoBackends is returned when the requested backend is not usable
	// (CUDA, Metal or WebGPU asked for where there is none).
	ErrNoBackends = errors.New("accel: no backends available")
)

// Errors beyond the old type.
var (
	// ErrInvalidArgument: a bad argument (id over 127 bytes, nil f, ...).
	ErrInvalidArgument = errors.New("accel: invalid argument")
	// ErrDeadlock: Sync or a synchronous Submit called from inside one of
	// the same session's own ops, which would wait for itself.
	ErrDeadlock = errors.New("accel: would deadlock: called from inside the session's own op")
	// ErrQueueFull: the session's queue stayed full (SubmitAsync does not wait).
	ErrQueueFull = errors.New("accel: session queue full")
	// ErrRuntimeClosed: the runtime has been closed.
	ErrRuntimeClosed = errors.New("accel: runtime closed")
	// ErrGoexit: the op's f called runtime.Goexit (t.Fatal and t.FailNow
	// do); the op counts as failed. Only callbacks see it (SubmitAsync,
	// SubmitAsyncBatch): Submit and SubmitBatch call runtime.Goexit on
	// their own goroutine instead, as f running there would have.
	ErrGoexit = errors.New("accel: op called runtime.Goexit")
)

// errGoexit is the outcome the binding records for an op whose f called
// runtime.Goexit, where Submit and SubmitBatch look for it: a value of
// its own (errors.Is sees ErrGoexit through it), so that an f that
// returns ErrGoexit, passing on a callback's error, fails its op and does
// not end the caller's goroutine. Callbacks get ErrGoexit itself.
var errGoexit = fmt.Errorf("%w", ErrGoexit)

// Status is a C status code that has no sentinel above; errors.Is matches
// the sentinels for the codes that have one.
type Status int

func (s Status) Error() string {
	return fmt.Sprintf("accel: %s (%d)", C.GoString(C.accel_strerror(C.int(s))), int(s))
}

// Is maps the C codes onto the package's sentinels.
func (s Status) Is(target error) bool {
	switch int(s) {
	case C.ACCEL_EBUDGET:
		return target == ErrSessionBudgetExceeded
	case C.ACCEL_ECLOSED:
		return target == ErrSessionClosed
	case C.ACCEL_ENOBACKEND:
		return target == ErrNoBackends
	case C.ACCEL_EINVAL:
		return target == ErrInvalidArgument
	case C.ACCEL_EDEADLK:
		return target == ErrDeadlock
	case C.ACCEL_EAGAIN, C.ACCEL_ETIMEDOUT:
		return target == ErrQueueFull
	}
	return false
}

// statusErr turns a C status into an error: nil for ACCEL_OK, the sentinel
// itself where there is one (so == comparisons of old code keep working).
func statusErr(rc int) error {
	switch rc {
	case C.ACCEL_OK:
		return nil
	case C.ACCEL_EBUDGET:
		return ErrSessionBudgetExceeded
	case C.ACCEL_ECLOSED:
		return ErrSessionClosed
	case C.ACCEL_ENOBACKEND:
		return ErrNoBackends
	case C.ACCEL_EDEADLK:
		return ErrDeadlock
	case C.ACCEL_EAGAIN, C.ACCEL_ETIMEDOUT:
		return ErrQueueFull
	}
	return Status(rc)
}
