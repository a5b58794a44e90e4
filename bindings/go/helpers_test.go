// Promises: none

package accel

import "testing"

// newTestRuntime starts a small runtime that the test closes at its end,
// under a watchdog.
func newTestRuntime(t testing.TB, workers int) *Runtime {
	t.Helper()
	rt, err := NewRuntime(RuntimeConfig{Workers: workers})
	if err != nil {
		t.Fatalf("NewRuntime: %v", err)
	}
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
