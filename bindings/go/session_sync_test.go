// Promises: 7

package accel

// Session.Sync as the old type's users call it: from goroutines an op
// fans its work out to, on the *Session the op got, while the op waits
// for them.

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fanOutSync is an f that starts n goroutines which each call s.Sync()
// and waits for them; it returns the first error one got.
func fanOutSync(n int) func(*Session) error {
	return func(s *Session) error {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- s.Sync()
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}
}

// The op's goroutines' Sync returns (it does not wait for the op that
// waits for them), Submit returns f's nil, and Close afterwards drains.
func TestSessionSyncFromGoroutinesOfOp(t *testing.T) {
	rt := newTestRuntime(t, 2)
	v, err := rt.NewVMSession("fan")
	if err != nil {
		t.Fatal(err)
	}
	done := step(t, "Submit whose f waits for goroutines calling s.Sync()")
	err = v.Submit(bg(), fanOutSync(4))
	done()
	if err != nil {
		t.Errorf("Submit = %v, want nil", err)
	}

	// The same with ops queued behind the running one (SubmitAsync), and
	// with the op run by a pool worker: the goroutines' Sync must not
	// wait for those either (they cannot start before the running op
	// ends).
	started, release := make(chan struct{}), make(chan struct{})
	res := make(chan error, 1)
	if err := v.SubmitAsync(func(s *Session) error {
		close(started)
		<-release
		return fanOutSync(4)(s)
	}, func(err error) { res <- err }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the fanning-out op starts", func() { <-started })
	behind := make(chan error, 3)
	for i := 0; i < 3; i++ {
		if err := v.SubmitAsync(func(*Session) error { return nil }, func(err error) { behind <- err }); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	done = step(t, "a queued-behind op's f waiting for goroutines calling s.Sync()")
	err = <-res
	for i := 0; i < 3; i++ {
		if e := <-behind; e != nil {
			t.Errorf("op behind the fan-out: %v", e)
		}
	}
	done()
	if err != nil {
		t.Errorf("fan-out op = %v, want nil", err)
	}

	// Outside any op, with nothing running, Sync waits for what was
	// accepted before it.
	ran := make(chan struct{}, 1)
	gate := make(chan struct{})
	if err := v.SubmitAsync(func(*Session) error { <-gate; ran <- struct{}{}; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(5 * time.Millisecond); close(gate) }()
	done = step(t, "VMSession.Sync after SubmitAsync")
	err = v.Sync()
	done()
	select {
	case <-ran:
	default:
		t.Errorf("VMSession.Sync returned (%v) before the op accepted before it ran", err)
	}

	done = step(t, "Close after the fan-out ops")
	err = v.Close()
	done()
	if err != nil {
		t.Errorf("Close = %v", err)
	}
}

// Session.Sync outside the session's ops, with none of them running at
// the call, waits as VMSession.Sync does: for every op accepted before
// it. The op accepted before it is, at the call, queued behind another
// session's op that holds the one worker on a gate (opened on a timer,
// or at once if another worker took the op first), so a Sync that
// returned at once would find it not run; one that waits finds it run,
// whenever it runs.
func TestSessionSyncOutsideOpsWaits(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, err := rt.NewVMSession("outside")
	if err != nil {
		t.Fatal(err)
	}
	defer waitFor(t, "Close at the test's end", func() { v.Close() })
	s := v.Session()
	for round := 0; round < 3; round++ {
		var ran atomic.Bool
		// Queued, not started, at the Sync: the one-worker runtime holds
		// the other session's gated op.
		other, err := rt.NewVMSession("other")
		if err != nil {
			t.Fatal(err)
		}
		gate, _ := gatedOp(t, other, "the other session's gated op starts", 10*time.Second)
		if err := v.SubmitAsync(func(*Session) error { ran.Store(true); return nil }, nil); err != nil {
			t.Fatal(err)
		}
		tm := time.AfterFunc(5*time.Millisecond, func() { close(gate) })
		done := step(t, "Session.Sync outside the ops")
		err = s.Sync()
		done()
		if err != nil {
			t.Errorf("round %d: Session.Sync = %v", round, err)
		}
		if !ran.Load() {
			t.Errorf("round %d: Session.Sync returned before the op accepted before it ran", round)
		}
		if tm.Stop() {
			close(gate) // the op ran on another worker before the timer fired
		}
		waitFor(t, "the other session's Close", func() { other.Close() })
	}
}

// Session.Sync on a session closed while one of its ops runs (the op
// closed it: Close from inside an op does not wait) returns
// ErrSessionClosed, as on any closed session, not the nil it returns
// while an op of an open session runs: from the op itself and from a
// goroutine the op waits for.
func TestSessionSyncClosedWhileItsOpRuns(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, err := rt.NewVMSession("closing")
	if err != nil {
		t.Fatal(err)
	}
	type result struct{ close, inOp, fromGoroutine, vm error }
	res := make(chan result, 1)
	if err := v.SubmitAsync(func(s *Session) error {
		var r result
		r.close = v.Close()
		r.inOp = s.Sync()
		g := make(chan error)
		go func() { g <- s.Sync() }()
		r.fromGoroutine = <-g
		r.vm = v.Sync()
		res <- r
		return nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	var r result
	waitFor(t, "the op that closes its session", func() { r = <-res })
	if r.close != nil {
		t.Fatalf("Close from inside the op = %v", r.close)
	}
	if r.inOp != ErrSessionClosed {
		t.Errorf("Session.Sync in the op after its Close = %v, want ErrSessionClosed", r.inOp)
	}
	if r.fromGoroutine != ErrSessionClosed {
		t.Errorf("Session.Sync from the op's goroutine after its Close = %v, want ErrSessionClosed", r.fromGoroutine)
	}
	if r.vm != ErrSessionClosed {
		t.Errorf("VMSession.Sync in the op after its Close = %v, want ErrSessionClosed", r.vm)
	}
}
