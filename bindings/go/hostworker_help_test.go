package accel

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// goid is the calling goroutine's id (from its stack header).
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	b = b[:bytes.IndexByte(b, ' ')]
	n, _ := strconv.ParseUint(string(b), 10, 64)
	return n
}

// A synchronous submitter helps: with the only worker goroutine held in an
// op of the submitter's own session (so its op is queued behind), it runs
// the scheduler's pick, another session's op, on its own goroutine; that op
// releases the held one, and the submitter's op then runs. Inside the
// helped op, its own session's Submit and Sync are ErrDeadlock.
func TestHelperRunsOtherSessions(t *testing.T) {
	rt := newTestRuntime(t, 1)
	own, err := rt.NewVMSession("own")
	if err != nil {
		t.Fatal(err)
	}
	other, err := rt.NewVMSession("other")
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	if err := own.SubmitAsync(func(*Session) error {
		close(started)
		select {
		case <-release:
		case <-time.After(10 * time.Second): // no helper: let the test end (and fail)
		}
		return nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	<-started // the worker goroutine holds own's visit
	var ranOn uint64
	var subErr, syncErr error
	if err := other.SubmitAsync(func(*Session) error {
		ranOn = goid()
		subErr = other.Submit(context.Background(), emptyOp)
		syncErr = other.Sync()
		close(release)
		return nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	me := goid()
	if err := own.Submit(context.Background(), emptyOp); err != nil {
		t.Fatal(err)
	}
	if err := other.Sync(); err != nil {
		t.Fatal(err)
	}
	if ranOn != me {
		t.Fatalf("other session's op ran on goroutine %d, want the helping submitter %d", ranOn, me)
	}
	if !errors.Is(subErr, ErrDeadlock) || !errors.Is(syncErr, ErrDeadlock) {
		t.Fatalf("inside a helped op: Submit %v, Sync %v; want ErrDeadlock", subErr, syncErr)
	}
	if d, c, f := own.Stats(); d != 2 || c != 2 || f != 0 {
		t.Fatalf("own Stats = %d %d %d, want 2 2 0", d, c, f)
	}
}

// No op is stranded when a helper stops: ops its own op queues (to another
// session, whose end re-queues it on the helper's slot) and ops queued
// while it helped all run after it returns (a stranded op hangs here).
func TestHelperLeavesNoStrandedOp(t *testing.T) {
	rt := newTestRuntime(t, 1)
	a, err := rt.NewVMSession("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := rt.NewVMSession("b")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		done := make(chan struct{})
		if err := a.Submit(context.Background(), func(*Session) error {
			for k := 0; k < 3; k++ {
				if err := b.SubmitAsync(emptyOp, nil); err != nil {
					return err
				}
			}
			if err := a.SubmitAsync(func(*Session) error { close(done); return nil }, nil); err != nil {
				return err
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		<-done
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if d, c, _ := b.Stats(); d != 600 || c != 600 {
		t.Fatalf("b Stats = %d %d, want 600 600", d, c)
	}
}

// Every op runs exactly once and Stats are exact with many synchronous
// submitters helping at once (more submitters than helper slots).
func TestHelpExactlyOnce(t *testing.T) {
	rt := newTestRuntime(t, 2)
	const sessions, goroutines, per = 4, 12, 300
	vs := make([]*VMSession, sessions)
	for i := range vs {
		v, err := rt.NewVMSession("x" + strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		vs[i] = v
	}
	runs := make([]atomic.Int32, goroutines*per)
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				id := g*per + i
				if err := vs[id%sessions].Submit(context.Background(), func(*Session) error {
					runs[id].Add(1)
					return nil
				}); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	for id := range runs {
		if n := runs[id].Load(); n != 1 {
			t.Fatalf("op %d ran %d times", id, n)
		}
	}
	for _, v := range vs {
		if d, c, f := v.Stats(); d != goroutines*per/sessions || c != d || f != 0 {
			t.Fatalf("%s Stats = %d %d %d", v.ID(), d, c, f)
		}
	}
}

// With every helper slot taken, a synchronous Submit (plain and with a
// cancellable ctx) falls back to the queue and the worker goroutines:
// each op runs once, Submit returns its result, Stats are exact. Then the
// slots are given back and the helped path (the direct hand-off, the own
// op run by its submitter, the slot's record cache) runs the same ops.
func TestSubmitWithoutFreeHelperSlot(t *testing.T) {
	rt := newTestRuntime(t, 2)
	v, err := rt.NewVMSession("s")
	if err != nil {
		t.Fatal(err)
	}
	h := rt.host
	if h == nil {
		t.Skip("no worker goroutines")
	}
	var held []int
	for {
		w, ok := h.takeHelpSlot()
		if !ok {
			break
		}
		held = append(held, w)
	}
	if len(held) != h.nhelp {
		t.Fatalf("took %d helper slots of %d", len(held), h.nhelp)
	}
	var ran atomic.Int64
	errBoom := errors.New("boom")
	op := func(*Session) error {
		if ran.Add(1)%3 == 0 {
			return errBoom
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	check := func(n int) {
		for i := 0; i < n; i++ {
			c := context.Background()
			if i%2 == 1 {
				c = ctx
			}
			before := ran.Load()
			err := v.Submit(c, op)
			if ran.Load() != before+1 {
				t.Fatalf("op %d: ran %d times", i, ran.Load()-before)
			}
			if want := (before+1)%3 == 0; (err == errBoom) != want || (err != nil && err != errBoom) {
				t.Fatalf("op %d: Submit returned %v", i, err)
			}
		}
	}
	check(300)
	for _, w := range held {
		h.putHelpSlot(w)
	}
	check(300)
	d, c, f := v.Stats()
	if d != 600 || c != 400 || f != 200 {
		t.Fatalf("Stats: dispatched %d completed %d failed %d, want 600 400 200", d, c, f)
	}
}
