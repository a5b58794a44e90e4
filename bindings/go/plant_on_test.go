// Promises: none

//go:build accel_plant

package accel

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// plantBugs plants the bugs the environment names (built with -tags
// accel_plant only): ACCEL_TEST_NOGROW=1, no host worker is ever added for a
// blocked one; ACCEL_TEST_NOYIELD=1, host workers never yield their P.
func plantBugs(t *testing.T) {
	for _, p := range []struct {
		env string
		bug *atomic.Bool
	}{
		{"ACCEL_TEST_NOGROW", &noGrowForTest},
		{"ACCEL_TEST_NOYIELD", &yieldOffForTest},
	} {
		if os.Getenv(p.env) == "1" {
			bug := p.bug
			bug.Store(true)
			t.Cleanup(func() { bug.Store(false) })
		}
	}
}

// A Close from inside the session's own op frees the C session on a
// goroutine of its own; a Runtime.Close that comes meanwhile finds the
// handle retired and must still wait for that release before it destroys
// the runtime the release uses (the release can wait for a grace period,
// accel_session_release). The test holds the release (a hook just before
// it) and requires Runtime.Close not to return while it is held. The
// hook is linked with the tag only: make test-go runs this test so.
func TestRuntimeCloseWaitsForAnInOpCloseRelease(t *testing.T) {
	rt, err := NewRuntime(RuntimeConfig{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := rt.NewVMSession("self-close")
	releasing, gate := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook := func() {
		once.Do(func() {
			close(releasing)
			<-gate
		})
	}
	releaseHookForTest.Store(&hook)
	defer releaseHookForTest.Store(nil)
	if err := v.SubmitAsync(func(*Session) error { return v.Close() }, nil); err != nil {
		t.Fatal(err)
	}
	done := step(t, "the in-op Close reaches its release")
	<-releasing
	done()
	closed := make(chan error, 1)
	go func() { closed <- rt.Close() }()
	// Runtime.Close must not return while the release is held. It is
	// given a second to go wrong: a wrong Close returns well within it,
	// a right one never does, so the test cannot fail on a slow machine.
	select {
	case err := <-closed:
		close(gate)
		t.Fatalf("Runtime.Close returned (%v) while a session's release was still running", err)
	case <-time.After(time.Second):
	}
	close(gate)
	done = step(t, "Runtime.Close after the release")
	if err := <-closed; err != nil {
		t.Fatalf("Runtime.Close: %v", err)
	}
	done()
}

// Closes racing on one session release its C session once: the Close
// that retires the handle releases it, every other finds it retired
// (guard.retire's swap). Several Closes per session wait in one drain (an
// op held on a gate) and leave it together, racing to the release; the
// hook just before the C release counts the releases. A second release
// of a session drops a handle it does not hold (C cannot tell it from a
// lookup's). The hook is linked with the tag only.
func TestRacingClosesReleaseOnce(t *testing.T) {
	rt := newTestRuntime(t, 2)
	var releases atomic.Int64
	hook := func() { releases.Add(1) }
	releaseHookForTest.Store(&hook)
	defer releaseHookForTest.Store(nil)
	const sessions, closers = 100, 4
	for i := 0; i < sessions; i++ {
		v, err := rt.NewVMSession("v")
		if err != nil {
			t.Fatal(err)
		}
		gate, _ := gatedOp(t, v, "the gated op starts", 10*time.Second)
		var wg sync.WaitGroup
		errs := make(chan error, closers)
		for c := 0; c < closers; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- v.Close()
			}()
		}
		waitFor(t, "a Close marks the session closed", func() {
			for !v.IsClosed() {
				runtime.Gosched()
			}
		})
		close(gate)
		waitFor(t, fmt.Sprintf("session %d: %d racing Closes return", i, closers), wg.Wait)
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("session %d: Close = %v", i, err)
			}
		}
		if n := releases.Load(); n != int64(i+1) {
			t.Fatalf("after %d sessions closed by %d racing Closes each: %d C releases, want %d", i+1, closers, n, i+1)
		}
	}
}
