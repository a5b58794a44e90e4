// Promises: 2

package accel

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// A Submit with a ctx that can end takes the direct hand-off as one with
// context.Background() does: on an idle session f runs on the calling
// goroutine. Idle is not guaranteed at every Submit (a worker that ran the
// previous op may still be lingering on the session), so each kind must
// see the hand-off at least once in 20 Submits, with a pause after each
// one that missed it; without the hand-off for its kind it never does.
func TestSubmitCtxHandOffRunsOnCaller(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, err := rt.NewVMSession("a")
	if err != nil {
		t.Fatal(err)
	}
	me := goid()
	for _, kind := range []string{"background", "cancel", "timeout"} {
		onCaller := 0
		for i := 0; i < 20; i++ {
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			switch kind {
			case "cancel":
				ctx, cancel = context.WithCancel(ctx)
			case "timeout":
				ctx, cancel = context.WithTimeout(ctx, time.Minute)
			}
			var ranOn uint64
			err := v.Submit(ctx, func(*Session) error {
				ranOn = goid()
				return nil
			})
			cancel()
			if err != nil {
				t.Fatalf("%s %d: %v", kind, i, err)
			}
			if ranOn == me {
				onCaller++
			} else {
				time.Sleep(time.Millisecond) // let the session go idle
			}
		}
		if onCaller == 0 {
			t.Fatalf("%s: f never ran on the calling goroutine in 20 Submits to an idle session", kind)
		}
	}
	if d, c, f := v.Stats(); d != 60 || c != 60 || f != 0 {
		t.Fatalf("Stats = %d %d %d, want 60 60 0", d, c, f)
	}
}

// flipCtx's Err is nil at its first call (Submit's look at ctx before it
// submits) and its end after: a ctx that ends between that look and the
// op's start, on an idle session, where the op goes to the caller's
// helper worker. Done is closed from the start (canceled), or Deadline is
// already past with Done open (expired: only the op's C deadline stops
// it then).
type flipCtx struct {
	context.Context
	done  chan struct{}
	dl    time.Time
	err   error
	calls atomic.Int32
}

func (c *flipCtx) Done() <-chan struct{} { return c.done }

func (c *flipCtx) Deadline() (time.Time, bool) { return c.dl, !c.dl.IsZero() }

func (c *flipCtx) Err() error {
	if c.calls.Add(1) == 1 {
		return nil
	}
	return c.err
}

// f never runs on the hand-off path when ctx is done before f starts: a
// done ctx (runRec refuses f) and a deadline already past (C drops the op
// at the visit's take, counted expired in C).
func TestSubmitCtxHandOffNeverStartsEndedCtx(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, err := rt.NewVMSession("a")
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	f := func(*Session) error { ran.Add(1); return nil }

	closed := make(chan struct{})
	close(closed)
	ctx := &flipCtx{Context: context.Background(), done: closed, err: context.Canceled}
	if err := v.Submit(ctx, f); !errors.Is(err, context.Canceled) {
		t.Fatalf("done ctx: Submit = %v, want context.Canceled", err)
	}
	ctx = &flipCtx{Context: context.Background(), done: make(chan struct{}),
		dl: time.Now().Add(-time.Second), err: context.DeadlineExceeded}
	if err := v.Submit(ctx, f); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("past deadline: Submit = %v, want context.DeadlineExceeded", err)
	}
	if _, expired := v.cUnrunForTest(); expired != 1 {
		t.Fatalf("C expired = %d, want 1 (the deadline reached C)", expired)
	}
	// A ctx already ended at Submit's look: nothing is submitted.
	dctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if err := v.Submit(dctx, f); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ended ctx: Submit = %v", err)
	}
	if err := v.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("f ran %d times", n)
	}
	st := v.FullStats()
	if st.Dispatched != 0 || st.Canceled != 2 || st.Submitted != 2 {
		t.Fatalf("stats = %+v, want 0 dispatched, 2 canceled, 2 submitted", st)
	}
}

// A Submit whose session is busy (its op blocked on the only worker) is
// queued by the hand-off's submit; when its ctx ends there (a deadline,
// a cancel) Submit returns ctx's error while the blocked op still runs, f
// never starts, and the op's ticket canceled it in C (not its deadline:
// the ticket reached C).
func TestSubmitCtxHandOffQueuedBehindBlockedOp(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, err := rt.NewVMSession("a")
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	f := func(*Session) error { ran.Add(1); return nil }
	release := blockWorker(t, v)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	waitFor(t, "Submit queued behind the blocked op, past its deadline", func() { err = v.Submit(ctx, f) })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timeout: Submit = %v", err)
	}
	cancel()
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	waitFor(t, "Submit queued behind the blocked op, canceled", func() { err = v.Submit(ctx, f) })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel: Submit = %v", err)
	}
	release()
	waitFor(t, "v.Sync after the ended ops", func() { err = v.Sync() })
	if err != nil {
		t.Fatal(err)
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("f ran %d times", n)
	}
	if canceled, expired := v.cUnrunForTest(); canceled != 2 || expired != 0 {
		t.Fatalf("C canceled, expired = %d, %d, want 2, 0", canceled, expired)
	}
	if st := v.FullStats(); st.Canceled != 2 || st.Queued != 0 {
		t.Fatalf("stats = %+v", st)
	}
}

// The hand-off does not wait for another session: while b's op holds the
// only worker, a Submit on idle a with a deadline runs f at once on the
// calling goroutine and returns f's result before b's op ends.
func TestSubmitCtxHandOffWhileOtherSessionRuns(t *testing.T) {
	rt := newUnwatchedRuntime(t, 1) // b's blocked op keeps the only worker
	a, _ := rt.NewVMSession("a")
	b, _ := rt.NewVMSession("b")
	release := blockWorker(t, b)
	defer release()
	me := goid()
	var ranOn uint64
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := step(t, "a.Submit with a deadline while b's op holds the worker")
	err := a.Submit(ctx, func(*Session) error { ranOn = goid(); return nil })
	done()
	if err != nil || ranOn != me {
		t.Fatalf("Submit = %v, f ran on goroutine %d, the caller is %d", err, ranOn, me)
	}
}

// A ctx with a deadline and a nil Done (a user's own Context type) still
// gives Submit's op that deadline, on the direct hand-off too: on an idle
// session with the deadline past, f never runs.
func TestSubmitDeadlineOnlyCtxOnHandOff(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("deadline-only")
	ctx := deadlineOnly{Context: context.Background(), at: time.Now().Add(-time.Millisecond)}
	var ran atomic.Bool
	done := step(t, "Submit with a past deadline")
	err := v.Submit(ctx, func(*Session) error { ran.Store(true); return nil })
	done()
	if ran.Load() {
		t.Fatal("f ran after its ctx's deadline")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Submit = %v, want context.DeadlineExceeded", err)
	}
}
