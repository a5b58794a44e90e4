// Promises: 5, 6

package accel

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
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

// A submit that comes while a host worker goes idle, after its last look
// found nothing and before its idle announcement, sees no worker parked
// and wakes none: the look the worker takes after the announcement is
// what finds the op (models/host.pml, BROKEN_NORECHECK). And a wake that
// comes after the announcement, before the worker sleeps, is posted to
// the lane's channel, which must take it without waiting for a receiver
// (BROKEN_UNBUFFERED; host_wake is called inside the submit): the
// worker's look may find the op and run it, and this op waits for its
// submitter to return from SubmitAsync. The submitter waits for each op
// by polling (so that it runs beside the workers, on a P of its own),
// then spins a delay before its next SubmitAsyncs that sweeps the
// workers' few microseconds of idle path. A lost wake leaves an op
// queued for good, a blocked post its submitter: the watchdog names the
// round. Each lane: one general worker; one short-lane worker beside a
// general one (a short session's wake goes to the short lane); two
// general workers, each round an op of each of two sessions.
func TestWorkersWakeRacingTheIdleAnnouncement(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("the submit must run beside the workers: GOMAXPROCS >= 2")
	}
	for _, c := range []struct {
		name           string
		workers, short int
		sessions       int
		rounds         int
	}{
		{"general", 1, 0, 1, 10000},
		{"short-lane", 2, 1, 1, 40000},
		{"two-general", 2, 0, 2, 10000},
	} {
		c := c
		t.Run(c.name, func(t *testing.T) {
			rt, err := NewRuntime(RuntimeConfig{Workers: c.workers, ShortLaneWorkers: c.short})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				done := step(t, "Runtime.Close at the test's cleanup")
				if err := rt.Close(); err != nil {
					t.Errorf("Runtime.Close: %v", err)
				}
				done()
			})
			vs := make([]*VMSession, c.sessions)
			for i := range vs {
				if vs[i], err = rt.NewVMSession(fmt.Sprintf("idle-race%d", i)); err != nil {
					t.Fatal(err)
				}
			}
			var ran atomic.Int64
			sink := 0
			for i := 0; i < c.rounds; i++ {
				for k, d := 0, (i*131)%8192; k < d; k++ {
					sink += k
				}
				done := step(t, fmt.Sprintf("round %d: the ops submitted as the workers went idle run", i))
				gate := make(chan struct{})
				for _, v := range vs {
					if err := v.SubmitAsync(func(*Session) error { <-gate; ran.Add(1); return nil }, nil); err != nil {
						t.Fatal(err)
					}
				}
				close(gate)
				for ran.Load() != int64((i+1)*len(vs)) {
				}
				done()
			}
			_ = sink
		})
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

// One synchronous submitter per P and one more run their own ops at once
// (the direct hand-off on helper workers, helperCount), while the only
// host worker is held: no monitor (the holding op, waiting on a gate, is
// not counted), so an op that found no helper worker free would wait
// for the held worker. GOMAXPROCS+1 goroutines (at most 17) Submit to
// sessions of their own, and each f waits until all are inside. Planted
// (one helper worker fewer), the last op waits in the queue and the
// others for it.
func TestOwnOpsRunOnePerPAndOneMore(t *testing.T) {
	rt := newConfigRuntime(t, RuntimeConfig{Workers: 1, blockDetect: time.Hour})
	n := runtime.GOMAXPROCS(0) + 1
	if n > 17 {
		n = 17
	}
	h, _ := rt.NewVMSession("holder")
	hIn, hGate := make(chan struct{}), make(chan struct{})
	hRes := make(chan error, 1)
	if err := h.SubmitAsync(func(*Session) error { close(hIn); <-hGate; return nil },
		func(err error) { hRes <- err }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the holder's op on the only host worker", func() { <-hIn })
	var inside atomic.Int32
	all := make(chan struct{})
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		v, err := rt.NewVMSession(fmt.Sprintf("own%d", i))
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			errs <- v.Submit(context.Background(), func(*Session) error {
				if inside.Add(1) == int32(n) {
					close(all)
				}
				<-all
				return nil
			})
		}()
	}
	done := step(t, fmt.Sprintf("%d own ops inside f at once, the host worker held", n))
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	done()
	close(hGate)
	waitFor(t, "the holder's op returns", func() {
		if err := <-hRes; err != nil {
			t.Fatal(err)
		}
	})
}
