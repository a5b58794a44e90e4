// Promises: 7

package accel

// Session.Sync as the old type's users call it: from goroutines an op
// fans its work out to, on the *Session the op got, while the op waits
// for them.

import (
	"sync"
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
