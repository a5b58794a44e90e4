// Promises: 3, 7

package accel

// A nested Submit (from inside an op on a host worker, to another
// session) runs its op on the calling goroutine when the direct hand-off
// takes it: the calling op's visit lends its thread to the hand-off's
// visit (ACCEL_HOST_DETACH_LENT), which the monitor watches as a host
// worker's, and takes it back after; otherwise the op is queued and the
// caller waits parked off its thread (park, compensate.go). Each test
// asserts what a user sees; a watchdog names the step a test is stuck
// in.

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// goroutineID is the calling goroutine's number, from the header of its
// stack trace ("goroutine N [running]:"): tests only.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	f := strings.Fields(string(buf))
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

// The nested op runs on the caller's goroutine (the hand-off, not a host
// worker); inside it, its own session's Submit is ErrDeadlock; after it,
// the caller's op is its own again (ErrDeadlock, Sync nil). Planted (a
// nested Submit always queued), the nested op runs on another goroutine.
func TestNestedSubmitRunsOnTheCallersGoroutine(t *testing.T) {
	rt := newTestRuntime(t, 2)
	a, _ := rt.NewVMSession("a")
	b, _ := rt.NewVMSession("b")
	var outerG, innerG string
	var innerOwn, afterOwn, afterSync error
	done := step(t, "a's op submits to b, then to a")
	err := onHostWorker(a, func(*Session) error {
		outerG = goroutineID()
		err := b.Submit(context.Background(), func(*Session) error {
			innerG = goroutineID()
			innerOwn = b.Submit(context.Background(), emptyOp)
			return nil
		})
		if err != nil {
			return err
		}
		afterOwn = a.Submit(context.Background(), emptyOp)
		afterSync = a.Sync()
		return nil
	})
	done()
	if err != nil {
		t.Fatal(err)
	}
	if innerG != outerG {
		t.Errorf("the nested op ran on goroutine %s, its caller's op on %s: not on the caller's", innerG, outerG)
	}
	if !errors.Is(innerOwn, ErrDeadlock) {
		t.Errorf("b's Submit from inside b's nested op: %v, want ErrDeadlock", innerOwn)
	}
	if !errors.Is(afterOwn, ErrDeadlock) || afterSync != nil {
		t.Errorf("a's Submit and Sync from a's op after the nested one: %v, %v; want ErrDeadlock, nil", afterOwn, afterSync)
	}
}

// One worker: a's op submits to b, whose op, run on the caller's thread,
// waits until an op of a third session has run. It can run only on a
// worker sent in place of the one the nested op holds, which the monitor
// sends once it finds the nested op's thread asleep. Planted (the nested
// visit not watched), c's op never runs and the watchdog names the step.
func TestNestedSubmitThatWaitsDoesNotStallThePool(t *testing.T) {
	rt := newTestRuntime(t, 1)
	a, _ := rt.NewVMSession("a")
	b, _ := rt.NewVMSession("b")
	c, _ := rt.NewVMSession("c")
	cRan := make(chan struct{})
	inB := make(chan struct{})
	ran := make(chan error, 1)
	err := a.SubmitAsync(func(*Session) error {
		return b.Submit(context.Background(), func(*Session) error {
			close(inB)
			<-cRan
			return nil
		})
	}, func(err error) { ran <- err })
	if err != nil {
		t.Fatal(err)
	}
	done := step(t, "b's nested op begins")
	<-inB
	done()
	done = step(t, "c's op runs while b's nested op waits on the one worker's thread")
	cDone := make(chan error, 1)
	if err := c.SubmitAsync(func(*Session) error { close(cRan); return nil }, func(err error) { cDone <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-cDone; err != nil {
		t.Fatal(err)
	}
	done()
	done = step(t, "a's op returns")
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	done()
}

// runtime.Goexit (t.Fatal) in a nested op run on the caller's goroutine:
// the caller's op ends as it would with the nested f run inline (the
// old type's way): its callback gets ErrGoexit, and a, b and the pool go
// on (a host worker takes a's visit over, on a thread of its own: the
// ending goroutine's locked thread ends with it, so the lender's attach
// on the way out only keeps the thread's state true meanwhile).
func TestNestedSubmitGoexitInTheNestedOp(t *testing.T) {
	rt := newTestRuntime(t, 1)
	a, _ := rt.NewVMSession("a")
	b, _ := rt.NewVMSession("b")
	done := step(t, "a's op: a nested Submit whose op calls runtime.Goexit")
	err := onHostWorker(a, func(*Session) error {
		b.Submit(context.Background(), func(*Session) error {
			runtime.Goexit()
			return nil
		})
		t.Error("a's op went on after the nested op's Goexit")
		return nil
	})
	done()
	if !errors.Is(err, ErrGoexit) {
		t.Fatalf("a's op: %v, want ErrGoexit", err)
	}
	done = step(t, "a and b after the Goexit, from inside an op and from here")
	for i := 0; i < 3; i++ {
		err := onHostWorker(a, func(*Session) error {
			if err := b.Submit(context.Background(), emptyOp); err != nil {
				return err
			}
			if err := a.Submit(context.Background(), emptyOp); !errors.Is(err, ErrDeadlock) {
				return errors.New("a's own Submit from its op: want ErrDeadlock")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Submit(context.Background(), emptyOp); err != nil {
			t.Fatal(err)
		}
	}
	done()
}

// A nested Submit's time is not the caller's to pay, either way it goes:
// its op run on the caller's goroutine (the caller's visit lends the
// thread: that time is the nested op's session's), or, with the direct
// hand-off off, queued while the caller waits off its thread (its visit
// detached parked: that time counts off a CPU). A Low session's 5 ops
// each make 200 nested Submits of 50 µs ops (short ops: the hand-off
// takes them); the Low session is charged (its virtual time at weight 1,
// read once a sixth op of it has begun, so the 5 visits have ended)
// under half the nested ops' time. Planted (the lend charged to the
// lender; the park's detach plain), it is charged all of it.
func TestNestedSubmitNotChargedToTheCaller(t *testing.T) {
	for _, way := range []string{"run on the caller's goroutine", "queued, the caller parked"} {
		t.Run(way, func(t *testing.T) {
			var rt *Runtime
			if way == "run on the caller's goroutine" {
				rt = newTestRuntime(t, 1)
			} else {
				rt = newQueuedRuntime(t, 1)
			}
			caller, _ := rt.NewVMSession("caller", WithPriority(PriorityLow))
			signer, _ := rt.NewVMSession("signer", WithPriority(PriorityCritical))
			const ops, nested, each = 5, 200, 50 * time.Microsecond
			submit := func(f func(*Session) error) {
				if err := onHostWorker(caller, f); err != nil {
					t.Fatal(err)
				}
			}
			spin := func(*Session) error { spinFor(each); return nil }
			v0 := caller.cStatsForTest().vtime_ns
			done := step(t, "5 Low ops of 200 nested Submits each")
			for i := 0; i < ops; i++ {
				submit(func(*Session) error {
					for k := 0; k < nested; k++ {
						if err := signer.Submit(context.Background(), spin); err != nil {
							return err
						}
					}
					return nil
				})
			}
			submit(func(*Session) error { return nil })
			done()
			charged := time.Duration(caller.cStatsForTest().vtime_ns - v0)
			total := ops * nested * each
			t.Logf("charged %v for %d ops whose nested ops took at least %v", charged, ops, total)
			if charged >= total/2 {
				t.Fatalf("the caller was charged %v for nested Submits whose ops took at least %v: want under half of it", charged, total)
			}
		})
	}
}

// A nested Submit to a device session (its backend runs its ops inside
// the visit's begin, on a goroutine of their own) is queued, not handed
// off: a hand-off's visit could not be watched before its op ran. Here
// the device op waits for an op of a third session with one worker: with
// the op queued the wait counts its worker blocked and another runs the
// third session's op; handed off, nothing watched the thread and it
// waited forever. The device is the repository's stand-in module
// (tests/backend_module/fake_backend.c), built here and loaded by a
// child process of this test binary (a process loads its backend modules
// once). Planted (device sessions handed off too), the child's watchdog
// names the step.
func TestNestedSubmitToADeviceSessionThatWaits(t *testing.T) {
	if os.Getenv("ACCEL_TEST_DEVICE_CHILD") == "1" {
		nestedDeviceChild(t)
		return
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	build := exec.Command(cc, "-shared", "-fPIC", "-O1",
		"-o", filepath.Join(dir, "libaccel-backend-cuda.so"),
		filepath.Join(root, "tests/backend_module/fake_backend.c"),
		filepath.Join(root, "backends/module_host.c"),
		"-DACCEL__MODULE_OPS=fake_backend_ops",
		"-I", filepath.Join(root, "include"), "-I", filepath.Join(root, "runtime"))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the stand-in device module: %v\n%s", err, out)
	}
	out, code := runChild(t, "^TestNestedSubmitToADeviceSessionThatWaits$",
		"ACCEL_TEST_DEVICE_CHILD=1", "ACCEL_BACKEND_DIR="+dir)
	if code != 0 || !strings.Contains(out, "--- PASS") {
		t.Fatalf("the child process (exit %d):\n%s", code, out)
	}
}

// nestedDeviceChild is TestNestedSubmitToADeviceSessionThatWaits in the
// child process, which has the stand-in device.
func nestedDeviceChild(t *testing.T) {
	rt := newTestRuntime(t, 1)
	a, _ := rt.NewVMSession("a", WithVMBackend(BackendCPU))
	d, err := rt.NewVMSession("d", WithVMBackend(BackendCUDA))
	if err != nil || !d.IsAvailable() {
		t.Fatalf("a session on the stand-in device: %v (available %v)", err, d != nil && d.IsAvailable())
	}
	c, _ := rt.NewVMSession("c", WithVMBackend(BackendCPU))
	done := step(t, "a's op: a nested Submit to device session d, whose op waits for c's op, one worker")
	err = onHostWorker(a, func(*Session) error {
		return d.Submit(context.Background(), func(*Session) error {
			return c.Submit(context.Background(), emptyOp)
		})
	})
	done()
	if err != nil {
		t.Fatal(err)
	}
}
