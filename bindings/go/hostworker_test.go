// Promises: 5, 6

package accel

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// Host workers park when idle and are woken by submits: ops submitted
// after every worker parked still run (a lost wake-up hangs this test),
// from one goroutine and from many at once.
func TestWorkersParkAndWake(t *testing.T) {
	rt := newTestRuntime(t, 2)
	v, err := rt.NewVMSession("w")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ran := 0
	waitLoop := stepLong(t, "50 Submits after the workers park")
	defer waitLoop() // also on a t.Fatal inside the loop
	for i := 0; i < 50; i++ {
		time.Sleep(200 * time.Microsecond) // let the workers park
		if err := v.Submit(ctx, func(*Session) error { ran++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	waitLoop()
	if ran != 50 {
		t.Fatalf("ran %d ops, want 50", ran)
	}
	waitAll := stepLong(t, "8 goroutines' Submits after parks (wg.Wait)")
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				time.Sleep(100 * time.Microsecond)
				if err := v.Submit(ctx, emptyOp); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	waitAll()
	if d, c, f := v.Stats(); d != 210 || c != 210 || f != 0 {
		t.Fatalf("Stats = %d %d %d, want 210 210 0", d, c, f)
	}
}

// From inside an op, a synchronous Submit to the op's own session and the
// runtime's Close return ErrDeadlock instead of waiting for themselves
// (the host worker is locked to its thread during the visit, which
// is how C tells an op's own session).
func TestDeadlockFromInsideOp(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, err := rt.NewVMSession("d")
	if err != nil {
		t.Fatal(err)
	}
	other, err := rt.NewVMSession("other")
	if err != nil {
		t.Fatal(err)
	}
	var subErr, closeErr, otherErr error
	waitSubmit := step(t, "v.Submit whose op submits, closes the runtime and submits to other")
	err = v.Submit(context.Background(), func(*Session) error {
		subErr = v.Submit(context.Background(), emptyOp)
		closeErr = rt.Close()
		otherErr = other.SubmitAsync(emptyOp, nil)
		return nil
	})
	waitSubmit()
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(subErr, ErrDeadlock) {
		t.Errorf("Submit to own session inside op = %v, want ErrDeadlock", subErr)
	}
	if !errors.Is(closeErr, ErrDeadlock) {
		t.Errorf("Runtime.Close inside op = %v, want ErrDeadlock", closeErr)
	}
	if otherErr != nil {
		t.Errorf("SubmitAsync to another session inside op = %v", otherErr)
	}
	waitSync := step(t, "other.Sync")
	err = other.Sync()
	waitSync()
	if err != nil {
		t.Fatal(err)
	}
}
