// Promises: none

package accel_test

// Compile-time proof that every exported name of the old VMSession API is
// here with its signature: a program written against the old type builds
// with only its import path changed (examples/node is such a program).

import (
	"context"
	"errors"
	"testing"
	"time"

	"accel"
)

var (
	_ accel.Priority = accel.PriorityLow
	_ accel.Priority = accel.PriorityNormal
	_ accel.Priority = accel.PriorityHigh
	_ accel.Priority = accel.PriorityCritical

	_ accel.BackendType = accel.BackendAuto
	_ accel.BackendType = accel.BackendCPU
	_ accel.BackendType = accel.BackendCUDA
	_ accel.BackendType = accel.BackendMetal
	_ accel.BackendType = accel.BackendWebGPU

	_ func(accel.Priority) accel.VMSessionOption    = accel.WithPriority
	_ func(int64) accel.VMSessionOption             = accel.WithMemoryBudget
	_ func(accel.BackendType) accel.VMSessionOption = accel.WithVMBackend
	_ func(int) accel.VMSessionOption               = accel.WithQueueDepth
	_ func() accel.VMSessionOption                  = accel.WithSharedDevice

	_ func(string, ...accel.VMSessionOption) (*accel.VMSession, error) = accel.NewVMSession

	_ func(*accel.VMSession) string                                             = (*accel.VMSession).ID
	_ func(*accel.VMSession) accel.Priority                                     = (*accel.VMSession).Priority
	_ func(*accel.VMSession) *accel.Session                                     = (*accel.VMSession).Session
	_ func(*accel.VMSession) bool                                               = (*accel.VMSession).IsAvailable
	_ func(*accel.VMSession) bool                                               = (*accel.VMSession).IsClosed
	_ func(*accel.VMSession) int64                                              = (*accel.VMSession).MemoryUsed
	_ func(*accel.VMSession) (uint64, uint64, uint64)                           = (*accel.VMSession).Stats
	_ func(*accel.VMSession, context.Context, func(*accel.Session) error) error = (*accel.VMSession).Submit
	_ func(*accel.VMSession) error                                              = (*accel.VMSession).Sync
	_ func(*accel.VMSession) error                                              = (*accel.VMSession).Close
	_ func(...accel.SessionOption) (*accel.Session, error)                      = accel.NewSession
	_ func() (*accel.Session, error)                                            = accel.DefaultSession
	_ func(accel.BackendType) accel.SessionOption                               = accel.WithBackend
	_ func(*accel.Session) error                                                = (*accel.Session).Sync
	_ func(*accel.Session) error                                                = (*accel.Session).Close
	_ func(accel.BackendType) string                                            = accel.BackendType.String
	_ error                                                                     = accel.ErrEmptyVMID
	_ error                                                                     = accel.ErrSessionBudgetExceeded
	_ error                                                                     = accel.ErrSessionClosed
	_ error                                                                     = accel.ErrNoBackends
)

// The old usage patterns run: default runtime, options, Submit, Stats,
// Sync, Close, the old NewSession/DefaultSession.
func TestOldUsage(t *testing.T) {
	// Plain calls on the default runtime: one watchdog for the whole test.
	defer accel.StepWithin(t, "TestOldUsage's calls on the default runtime", 5*time.Minute)()
	vm, err := accel.NewVMSession("compat-dex", accel.WithPriority(accel.PriorityHigh),
		accel.WithMemoryBudget(1<<20), accel.WithVMBackend(accel.BackendAuto),
		accel.WithQueueDepth(256), accel.WithSharedDevice())
	if err != nil {
		t.Fatal(err)
	}
	if !vm.IsAvailable() || vm.Session() == nil || vm.ID() != "compat-dex" || vm.Priority() != accel.PriorityHigh {
		t.Fatal("accessors")
	}
	if err := vm.Submit(context.Background(), func(s *accel.Session) error { return nil }); err != nil {
		t.Fatalf("Submit on the CPU backend: %v", err)
	}
	if d, c, f := vm.Stats(); d != 1 || c != 1 || f != 0 {
		t.Fatalf("Stats %d %d %d", d, c, f)
	}
	if err := vm.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := vm.Close(); err != nil {
		t.Fatal(err)
	}
	if err := vm.Close(); err != nil {
		t.Fatal(err)
	}
	if err := vm.Submit(context.Background(), func(*accel.Session) error { return nil }); !errors.Is(err, accel.ErrSessionClosed) {
		t.Fatalf("Submit after Close = %v", err)
	}
	s, err := accel.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	d1, err := accel.DefaultSession()
	d2, _ := accel.DefaultSession()
	if err != nil || d1 != d2 {
		t.Fatalf("DefaultSession: %v", err)
	}
	if _, err := accel.NewSession(accel.WithBackend(accel.BackendCUDA)); !errors.Is(err, accel.ErrNoBackends) {
		t.Fatalf("NewSession(CUDA) without a device = %v", err)
	}
}

// The old type's errors come back as the sentinels themselves, not only
// as errors that errors.Is matches: code written against the old type
// compares with ==. The budget's, from the C status, through Reserve and
// Alloc, in an op and outside one.
func TestOldSentinelsCompareEqual(t *testing.T) {
	defer accel.StepWithin(t, "TestOldSentinelsCompareEqual's calls on the default runtime", time.Minute)()
	vm, err := accel.NewVMSession("compat-budget", accel.WithMemoryBudget(100))
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	s := vm.Session()
	if err := s.Reserve(101); err != accel.ErrSessionBudgetExceeded {
		t.Errorf("Reserve over the budget = %v (%T), want accel.ErrSessionBudgetExceeded itself", err, err)
	}
	if b, err := s.Alloc(101); b != nil || err != accel.ErrSessionBudgetExceeded {
		t.Errorf("Alloc over the budget = %d bytes, %v (%T), want accel.ErrSessionBudgetExceeded itself", len(b), err, err)
	}
	err = vm.Submit(context.Background(), func(s *accel.Session) error {
		_, err := s.Alloc(101)
		return err
	})
	if err != accel.ErrSessionBudgetExceeded {
		t.Errorf("Submit of an op whose Alloc is over the budget = %v (%T), want accel.ErrSessionBudgetExceeded itself", err, err)
	}
}
