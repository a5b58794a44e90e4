// Promises: 1, 5

// What one VM's f can do to the package that the tests above do not
// cover: a deferred function of f that panics while runtime.Goexit
// unwinds f (a cleanup that fails after t.FailNow), panic(nil) under
// GODEBUG=panicnil=1 (the default of a main module whose go.mod says go
// 1.20 or older), and a VM closing the default runtime through
// VMSession.Runtime. Each must fail only that op (or be refused), and
// every other VM, and the VM itself, go on.

package accel

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"testing"
)

// otherVMGoesOn fails the test unless another VM of rt runs an op (the
// hand-off and a host worker) and closes.
func otherVMGoesOn(t *testing.T, rt *Runtime, what string) {
	t.Helper()
	w, err := rt.NewVMSession("bystander")
	if err != nil {
		t.Fatalf("%s: NewVMSession: %v", what, err)
	}
	done := step(t, what+": another VM's Submit")
	if err := w.Submit(context.Background(), emptyOp); err != nil {
		t.Errorf("%s: another VM's Submit: %v", what, err)
	}
	done()
	done = step(t, what+": another VM's op on a host worker")
	if err := onHostWorker(w, emptyOp); err != nil {
		t.Errorf("%s: another VM's op on a host worker: %v", what, err)
	}
	done()
	done = step(t, what+": another VM's Close")
	w.Close()
	done()
}

// bothWays runs body on a fresh one-worker runtime's VM "v" twice: with
// f run on the submitter's goroutine (the hand-off) and on a host worker.
func bothWays(t *testing.T, body func(t *testing.T, rt *Runtime, v *VMSession)) {
	for _, own := range []bool{true, false} {
		name := map[bool]string{true: "hand-off", false: "host worker"}[own]
		t.Run(name, func(t *testing.T) {
			rt := newTestRuntime(t, 1)
			rt.setOwnForTest(own)
			v, _ := rt.NewVMSession("v")
			body(t, rt, v)
		})
	}
}

// goexitThenPanic calls runtime.Goexit with a deferred function that
// panics while the Goexit unwinds.
func goexitThenPanic() {
	defer func() { panic("cleanup failed during Goexit") }()
	runtime.Goexit()
}

// On a host worker (the only one): Go recovers the panic in the
// package's recover and goes on with the Goexit; the op fails with
// ErrGoexit and the host worker's visit is taken over, as for a plain
// Goexit. Planted (the phase cleared on any recovered value, as before
// this test): the worker is lost with the visit open, and the next step
// never ends.
func TestGoexitThenPanicInDeferOnAHostWorker(t *testing.T) {
	rt := newTestRuntime(t, 1)
	rt.setOwnForTest(false) // every f on a host worker
	v, _ := rt.NewVMSession("v")
	got := make(chan error, 1)
	if err := v.SubmitAsync(func(*Session) error { goexitThenPanic(); return nil },
		func(err error) { got <- err }); err != nil {
		t.Fatal(err)
	}
	done := step(t, "the op whose f panicked in a defer during Goexit completes")
	err := <-got
	done()
	if !errors.Is(err, ErrGoexit) {
		t.Fatalf("the op: %v, want ErrGoexit", err)
	}
	otherVMGoesOn(t, rt, "after Goexit+panic on the host worker")
	done = step(t, "the same VM's next op on a host worker")
	if err := onHostWorker(v, emptyOp); err != nil {
		t.Fatalf("next op: %v", err)
	}
	done()
}

// Through Submit, on the submitter's goroutine (the hand-off) and on a
// host worker: Submit's goroutine ends (the Goexit goes on there, as with
// f inline), and the VM and the runtime go on.
func TestGoexitThenPanicInDeferThroughSubmit(t *testing.T) {
	bothWays(t, func(t *testing.T, rt *Runtime, v *VMSession) {
		exited := make(chan struct{})
		var returned atomic.Bool
		go func() {
			defer close(exited)
			v.Submit(context.Background(), func(*Session) error { goexitThenPanic(); return nil })
			returned.Store(true)
		}()
		done := step(t, "the submitter's goroutine ends")
		<-exited
		done()
		if returned.Load() {
			t.Errorf("Submit returned: want its goroutine ended by the Goexit")
		}
		otherVMGoesOn(t, rt, "after Goexit+panic through Submit")
		done = step(t, "the same VM's next Submit")
		if err := v.Submit(context.Background(), emptyOp); err != nil {
			t.Fatalf("next Submit: %v", err)
		}
		done()
	})
}

// In a Batcher's fn: the batch's items fail with ErrGoexit.
func TestGoexitThenPanicInDeferInABatchFn(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("v")
	var first atomic.Bool
	first.Store(true)
	b, err := NewBatcher(v, func(s *Session, items []int, errs []error) {
		if first.CompareAndSwap(true, false) {
			goexitThenPanic()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	if err := b.SubmitAsync(1, func(err error) { got <- err }); err != nil {
		t.Fatal(err)
	}
	done := step(t, "the item of the fn that panicked in a defer during Goexit")
	err = <-got
	done()
	if !errors.Is(err, ErrGoexit) {
		t.Fatalf("the item: %v, want ErrGoexit", err)
	}
	otherVMGoesOn(t, rt, "after Goexit+panic in a batch fn")
	done = step(t, "the next item")
	if err := b.Submit(context.Background(), 2); err != nil {
		t.Fatalf("next item: %v", err)
	}
	done()
}

// panic(nil) under GODEBUG=panicnil=1 (where recover gives nil) is a
// panic all the same: Submit returns a *PanicError and the op counts
// failed. Planted (a panic told by recover's value, as before this
// test): Submit returned nil and the op counted completed.
func TestPanicNilUnderOldGODEBUG(t *testing.T) {
	t.Setenv("GODEBUG", "panicnil=1")
	var p any = "unset"
	func() {
		defer func() { p = recover() }()
		panic(nil)
	}()
	if p != nil {
		t.Skipf("GODEBUG=panicnil=1 not in effect (recover gave %T)", p)
	}
	bothWays(t, func(t *testing.T, rt *Runtime, v *VMSession) {
		done := step(t, "Submit whose f calls panic(nil)")
		err := v.Submit(context.Background(), func(*Session) error { panic(nil) })
		done()
		var pe *PanicError
		_, c, f := v.Stats()
		if !errors.As(err, &pe) || c != 0 || f != 1 {
			t.Errorf("panic(nil) in f: Submit returned %v, completed %d failed %d; "+
				"want a *PanicError and the op failed", err, c, f)
		}
		done = step(t, "the next Submit")
		if err := v.Submit(context.Background(), emptyOp); err != nil {
			t.Fatalf("next Submit: %v", err)
		}
		done()
	})
}

// A VM of the default runtime that closes it through its Runtime() gets
// ErrInvalidArgument, and nothing closes: the other VMs, DefaultSession
// and NewVMSession go on (DefaultRuntime: "never closed"). In a child
// process: the default runtime is the process's. Planted (no check in
// Close, as before this test): every VM of the process was closed and
// none could open again.
func TestTheDefaultRuntimeIsNeverClosed(t *testing.T) {
	if os.Getenv("ACCEL_TEST_DEFAULT_CHILD") == "1" {
		other, err := NewVMSession("other-vm")
		if err != nil {
			t.Fatal(err)
		}
		mine, err := NewVMSession("my-vm")
		if err != nil {
			t.Fatal(err)
		}
		if err := mine.Runtime().Close(); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Close of the default runtime: %v, want ErrInvalidArgument", err)
		}
		if other.IsClosed() || mine.IsClosed() {
			t.Errorf("a VM closed by the default runtime's Close")
		}
		if _, err := DefaultSession(); err != nil {
			t.Errorf("DefaultSession after it: %v", err)
		}
		late, err := NewVMSession("late-vm")
		if err != nil {
			t.Fatalf("NewVMSession after it: %v", err)
		}
		if err := late.Submit(context.Background(), emptyOp); err != nil {
			t.Errorf("a new VM's Submit after it: %v", err)
		}
		return
	}
	done := stepLong(t, "the child process")
	cmd := exec.Command(os.Args[0], "-test.run=^TestTheDefaultRuntimeIsNeverClosed$", "-test.v")
	cmd.Env = append(os.Environ(), "ACCEL_TEST_DEFAULT_CHILD=1")
	out, err := cmd.CombinedOutput()
	done()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}
