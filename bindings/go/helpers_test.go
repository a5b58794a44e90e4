package accel

import "testing"

// testThreads: newTestRuntime's runtimes use accel's C worker threads
// (OSThreadWorkers) instead of worker goroutines (TestOSThreadWorkers).
var testThreads bool

// newTestRuntime starts a small runtime that the test closes at its end.
func newTestRuntime(t testing.TB, workers int) *Runtime {
	t.Helper()
	rt, err := NewRuntime(RuntimeConfig{Workers: workers, OSThreadWorkers: testThreads})
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

// TestOSThreadWorkers runs the behaviour tests again on runtimes with
// accel's own C worker threads (callbacks into Go, the submitter waiting
// in C), the design RuntimeConfig.OSThreadWorkers keeps.
func TestOSThreadWorkers(t *testing.T) {
	testThreads = true
	defer func() { testThreads = false }()
	for _, c := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"FIFOManyGoroutines", TestFIFOManyGoroutines},
		{"PriorityOrderUnderFlood", TestPriorityOrderUnderFlood},
		{"CtxCancelledWhileQueued", TestCtxCancelledWhileQueued},
		{"CtxDeadlineWhileQueued", TestCtxDeadlineWhileQueued},
		{"CtxEndsWhileRunning", TestCtxEndsWhileRunning},
		{"Close", TestClose},
		{"BudgetThroughSession", TestBudgetThroughSession},
		{"StatsExactAndPanic", TestStatsExactAndPanic},
		{"ManySessionsConcurrently", TestManySessionsConcurrently},
		{"BatchAndAsync", TestBatchAndAsync},
		{"SetPriorityLookupDeadlock", TestSetPriorityLookupDeadlock},
		{"CancelRacesWorker", TestCancelRacesWorker},
		{"WorkersParkAndWake", TestWorkersParkAndWake},
		{"DeadlockFromInsideOp", TestDeadlockFromInsideOp},
		{"AsyncCombineFIFO", TestAsyncCombineFIFO},
		{"AsyncCombineCloseRace", TestAsyncCombineCloseRace},
		{"AsyncCombineCloseCancel", TestAsyncCombineCloseCancel},
		{"AsyncCombinePanic", TestAsyncCombinePanic},
		{"AsyncCombineOnlyShortOps", TestAsyncCombineOnlyShortOps},
	} {
		t.Run(c.name, c.f)
	}
}
