// Promises: none

//go:build accel_plant

package accel

import (
	"os"
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
