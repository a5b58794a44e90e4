package accel

import "testing"

// newTestRuntime starts a small runtime that the test closes at its end.
func newTestRuntime(t testing.TB, workers int) *Runtime {
	t.Helper()
	rt, err := NewRuntime(RuntimeConfig{Workers: workers})
	if err != nil {
		t.Fatalf("NewRuntime: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("Runtime.Close: %v", err)
		}
	})
	return rt
}
