// Promises: none

package accel

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// newTestRuntime starts a small runtime that the test closes at its end,
// under a watchdog.
func newTestRuntime(t testing.TB, workers int) *Runtime {
	t.Helper()
	rt, err := NewRuntime(RuntimeConfig{Workers: workers})
	if err != nil {
		t.Fatalf("NewRuntime: %v", err)
	}
	// The whole test under a watchdog too, stopped by the last cleanup
	// (registered first): a wait on the library that no step names
	// still fails naming the test, long before go test's own timeout.
	t.Cleanup(stepWithin(t, "a wait no step names (the whole test)", 5*time.Minute))
	t.Cleanup(func() {
		done := step(t, "Runtime.Close at the test's cleanup")
		err := rt.Close()
		done()
		if err != nil {
			t.Errorf("Runtime.Close: %v", err)
		}
	})
	return rt
}

// onHostWorker runs f as an op of v on a host worker (SubmitAsync: never
// the caller's own hand-off) and returns its outcome.
func onHostWorker(v *VMSession, f func(*Session) error) error {
	ran := make(chan error, 1)
	if err := v.SubmitAsync(f, func(err error) { ran <- err }); err != nil {
		return err
	}
	return <-ran
}

// gatedOp submits to v an op that waits on gate until the test closes
// it, and returns once the op has started (the wait named started, within
// limit), with the gate and the channel of the op's result.
func gatedOp(t testing.TB, v *VMSession, started string, limit time.Duration) (gate chan struct{}, res chan error) {
	t.Helper()
	in := make(chan struct{})
	gate, res = make(chan struct{}), make(chan error, 1)
	if err := v.SubmitAsync(func(*Session) error { close(in); <-gate; return nil },
		func(err error) { res <- err }); err != nil {
		t.Fatal(err)
	}
	done := stepWithin(t, started, limit)
	<-in
	done()
	return gate, res
}

// waitFor runs wait, a wait on the library, under step's watchdog.
func waitFor(t testing.TB, name string, wait func()) {
	t.Helper()
	done := step(t, name)
	wait()
	done()
}

// step starts a watchdog for one step: if done is not called within
// 10 s, the test binary panics naming the step (with every goroutine's
// stack), instead of hanging until go test's own timeout.
func step(t testing.TB, name string) (done func()) {
	t.Helper()
	return stepWithin(t, name, 10*time.Second)
}

// stepLong is step for a wait over a whole loop of ops (thousands, under
// -race or -asan on a loaded machine): 60 s.
func stepLong(t testing.TB, name string) (done func()) {
	t.Helper()
	return stepWithin(t, name, 60*time.Second)
}

// stepWithin is the one watchdog of the package's tests: step and
// stepLong with a limit of their own (and StepWithin, for the tests of
// package accel_test).
func stepWithin(t testing.TB, name string, limit time.Duration) (done func()) {
	t.Helper()
	tm := time.AfterFunc(limit, func() {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		panic(fmt.Sprintf("%s: stuck at %q\n%s", t.Name(), name, buf))
	})
	return func() { tm.Stop() }
}

// StepWithin is stepWithin for the tests of the exported API alone
// (package accel_test, public_api_test.go): defined in a _test.go file of
// package accel, it exists only in the test binary.
func StepWithin(t testing.TB, name string, limit time.Duration) (done func()) {
	t.Helper()
	return stepWithin(t, name, limit)
}
