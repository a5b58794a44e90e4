package accel

/*
#include "shim.h"
*/
import "C"

import (
	"strconv"
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
	if rc == C.ACCEL_OK {
		v := s.v
		v.memMu.Lock()
		v.reserved += bytes
		v.held.Add(bytes)
		v.memMu.Unlock()
	}
	s.exit()
	return statusErr(rc)
}

// Unreserve refunds bytes charged by Reserve: ErrInvalidArgument (nothing
// refunded) for more than Reserve charged and Unreserve has not yet
// refunded; the bytes of Alloc's blocks are Free's to refund.
// ErrSessionClosed once the session is closed.
func (s *Session) Unreserve(bytes int64) error {
	if bytes < 0 {
		return ErrInvalidArgument
	}
	c := s.enter()
	if c == nil {
		return ErrSessionClosed
	}
	defer s.exit()
	v := s.v
	v.memMu.Lock()
	if bytes > v.reserved {
		v.memMu.Unlock()
		return ErrInvalidArgument
	}
	v.reserved -= bytes
	v.held.Add(-bytes)
	v.memMu.Unlock()
	return statusErr(int(C.accel_session_unreserve(c, C.int64_t(bytes))))
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
// returns, panics or calls runtime.Goexit; calls nest. On a pool worker
// wait runs unlocked from the op's thread, as a plain goroutine waits:
// its wake costs no hand-off of a P to a sleeping thread. Calls from wait
// into the op's own session answer as from f (Submit returns ErrDeadlock,
// VMSession.Sync nil at once, ...); after wait, f goes on locked to
// the thread it then runs on. Meant for waits: wait's time counts as
// off a CPU, so a wait that computes is not charged to the session (as
// a goroutine that f starts and waits for is not), and runs beside the
// worker that took its place, two goroutines sharing the Ps where one
// was counted. The op counted is the one running on the calling
// goroutine; s only says whose op it is to the reader (a nil *Session
// works the same).
func (s *Session) Blocking(wait func()) {
	m := blockBegin()
	a := m.away()
	defer func() {
		a.back()
		m.blockEnd()
	}()
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

// Alloc returns bytes of zeroed memory charged to the session's budget
// (ErrSessionBudgetExceeded past the cap). The block is Go memory, owned
// by the session until Free: give it back with Free (cgo's rules for
// passing Go memory to C apply to it).
func (s *Session) Alloc(bytes int) ([]byte, error) {
	if bytes <= 0 {
		return nil, ErrInvalidArgument
	}
	c := s.enter()
	if c == nil {
		return nil, ErrSessionClosed
	}
	defer s.exit()
	rc := int(C.accel_session_reserve(c, C.int64_t(bytes)))
	if rc != C.ACCEL_OK {
		return nil, statusErr(rc)
	}
	// A fresh Go block is zeroed, so no session sees what another freed;
	// and while any slice of a freed block lives, Go gives its address to
	// no other block, so blocks' keys below never alias a stale slice.
	b := makeBlock(bytes)
	if b == nil {
		C.accel_session_unreserve(c, C.int64_t(bytes))
		return nil, statusErr(C.ACCEL_ENOMEM)
	}
	v := s.v
	v.memMu.Lock()
	if v.blocks == nil {
		v.blocks = make(map[*byte]int64)
	}
	v.blocks[unsafe.SliceData(b)] = int64(bytes)
	v.held.Add(int64(bytes))
	v.memMu.Unlock()
	return b, nil
}

// makeBlock returns make([]byte, n), or nil where n is past what a Go
// slice may hold.
func makeBlock(n int) (b []byte) {
	defer func() {
		if recover() != nil {
			b = nil
		}
	}()
	return make([]byte, n)
}

// Free releases a block from this session's Alloc and refunds its charge.
// b is the slice Alloc returned, or a reslice of it that starts where it
// starts (b[:0] too); a nil or zero-capacity b is ignored. After Close the
// block is still released (and MemoryUsed drops by its size).
//
// Free checks its argument: a block freed already (also when a later
// Alloc returned a block at the same address), one of another session's
// Alloc (even of a session of the same VM), a slice that starts inside a
// block (b[8:]) or memory Alloc never returned makes Free panic, in the
// caller's goroutine, with a message that begins "accel: Session.Free",
// having changed nothing: no block is released and no session's charge
// moves. Inside an op the panic fails that op with a *PanicError, as any
// panic in f does; the session goes on. A released block is Go's: the
// caller must not use it after Free.
func (s *Session) Free(b []byte) {
	if cap(b) == 0 {
		return
	}
	if s == nil {
		panic("accel: Session.Free on a nil *Session (an unavailable session's): nothing was freed")
	}
	p := unsafe.SliceData(b)
	v := s.v
	v.memMu.Lock()
	size, ok := v.blocks[p]
	if ok {
		delete(v.blocks, p)
		v.held.Add(-size)
	}
	v.memMu.Unlock()
	if !ok {
		panic("accel: Session.Free on session " + strconv.Quote(v.id) + ": " +
			strconv.Itoa(cap(b)) + "-byte slice at 0x" + strconv.FormatUint(uint64(uintptr(unsafe.Pointer(p))), 16) +
			" is not a block of this session's Alloc not yet freed (freed already, another session's," +
			" or not starting where Alloc's block starts); nothing was freed")
	}
	c := s.enter()
	if c == nil {
		return // the C session is gone: nothing left to refund
	}
	C.accel_session_unreserve(c, C.int64_t(size))
	s.exit()
}

// MemoryUsed returns the bytes charged to the session now: Alloc's
// blocks not yet freed and Reserve's bytes not yet released. After Close
// it reads what was held when the session closed, less what Free
// releases after that (a node's leak check reads it).
func (s *Session) MemoryUsed() int64 {
	c := s.enter()
	if c == nil {
		return s.v.held.Load()
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

// Sync waits for the session's ops, but never for an op that is running:
// f, and goroutines that f starts and waits for, may call it on the
// *Session f got (as the old type's device sync). When none of the
// session's ops is running at the call it waits as VMSession.Sync does,
// until every op accepted before the call has completed. While one is
// running, on any goroutine, it returns nil at once: the ops accepted
// before the running one have completed (FIFO), and neither the running
// one nor those queued behind it can end before it does, so waiting for
// them from a goroutine it waits for would never return. It cannot tell
// that goroutine from another: to wait for all of the ops accepted
// before it, call VMSession.Sync outside the session's ops (and outside
// goroutines they wait for). ErrSessionClosed on a closed session.
func (s *Session) Sync() error {
	v := s.v
	if v.closed.Load() {
		return ErrSessionClosed
	}
	if v.running() {
		return nil
	}
	return v.Sync()
}

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
	id := "session-" + itoa(anonSessions.Add(1))
	v, err := NewVMSession(id, WithVMBackend(cfg.backend))
	if err != nil {
		return nil, err
	}
	if !v.IsAvailable() {
		v.Close()
		return nil, ErrNoBackends
	}
	return &v.sess, nil
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
