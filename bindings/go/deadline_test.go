// Promises: 1

package accel

// Context deadlines as a node's code writes them: "no timeout" spelled as
// context.WithTimeout(ctx, math.MaxInt64), or a deadline in the year
// 9999. Neither has ended, so every op runs.

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"
)

// farDeadlines are contexts whose deadlines lie past what an int64 of
// nanoseconds on the C clock can hold.
func farDeadlines() map[string]func() (context.Context, context.CancelFunc) {
	return map[string]func() (context.Context, context.CancelFunc){
		"WithTimeout(MaxInt64)": func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(bg(), math.MaxInt64)
		},
		"deadline in 9999": func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(bg(), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC))
		},
		"WithTimeout(100 years)": func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(bg(), 100*365*24*time.Hour)
		},
	}
}

// Submit (run on the caller or queued), a Submit queued behind a running
// op, and SubmitBatch all run their f under a far-future deadline.
func TestFarFutureDeadlineRunsOps(t *testing.T) {
	rt := newTestRuntime(t, 2)
	for name, mk := range farDeadlines() {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := mk()
			defer cancel()
			if ctx.Err() != nil {
				t.Fatalf("ctx.Err() = %v before any op", ctx.Err())
			}
			v, err := rt.NewVMSession("far")
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()

			ran := 0
			f := func(*Session) error { ran++; return nil }
			done := step(t, "Submit with a far deadline")
			err = v.Submit(ctx, f)
			done()
			if err != nil || ran != 1 {
				t.Errorf("Submit = %v, f ran %d times, want nil and 1", err, ran)
			}

			ran = 0
			done = step(t, "SubmitBatch with a far deadline")
			errs := v.SubmitBatch(ctx, []func(*Session) error{f, f, f})
			done()
			for i, e := range errs {
				if e != nil {
					t.Errorf("SubmitBatch[%d] = %v, want nil", i, e)
				}
			}
			if ran != 3 {
				t.Errorf("SubmitBatch ran %d of 3 fs", ran)
			}

			// A Submit that has to queue: the session's own op holds it.
			release, started := make(chan struct{}), make(chan struct{})
			if err := v.SubmitAsync(func(*Session) error {
				close(started)
				<-release
				return nil
			}, nil); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the blocking op starts", func() { <-started })
			before := v.submitted.Load()
			res := make(chan error, 1)
			queuedRan := make(chan struct{}, 1)
			go func() {
				res <- v.Submit(ctx, func(*Session) error { queuedRan <- struct{}{}; return nil })
			}()
			done = step(t, "the queued Submit is accepted")
			for v.submitted.Load() == before {
				time.Sleep(100 * time.Microsecond)
			}
			done()
			close(release)
			done = step(t, "queued Submit with a far deadline")
			err = <-res
			done()
			if err != nil {
				t.Errorf("queued Submit = %v, want nil", err)
			}
			select {
			case <-queuedRan:
			default:
				t.Errorf("queued Submit's f never ran")
			}
			if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
				t.Errorf("deadline reported past: err %v, ctx.Err() %v", err, ctx.Err())
			}
			if _, _, failed := v.Stats(); failed != 0 || v.canceled.Load() != 0 {
				t.Errorf("failed %d, canceled %d, want 0 and 0", failed, v.canceled.Load())
			}
		})
	}
}

// The C deadline saturates: one past what the C clock's int64 holds is
// none (0), a near one is now plus what is left, one already past stays
// past (1, not 0, which would be none).
func TestCDeadlineSaturates(t *testing.T) {
	for name, mk := range farDeadlines() {
		ctx, cancel := mk()
		d := int64(ctxDeadline(ctx))
		cancel()
		if d < 0 || (d != 0 && d < int64(50*365*24*time.Hour)) {
			t.Errorf("%s: C deadline %d (negative, or within 50 years of the clock's start)", name, d)
		}
	}
	const now = int64(5 * time.Second)
	for _, c := range []struct {
		left time.Duration
		want int64
	}{
		{time.Hour, now + int64(time.Hour)},
		{math.MaxInt64, 0},
		{time.Duration(math.MaxInt64 - now), math.MaxInt64},
		{time.Duration(math.MaxInt64 - now + 1), 0},
		{0, now},
		{-time.Hour, 1},
		{math.MinInt64, 1},
	} {
		if got := cDeadline(now, c.left); got != c.want {
			t.Errorf("cDeadline(%d, %d) = %d, want %d", now, c.left, got, c.want)
		}
	}
}

// lateCtx is a ctx whose deadline passes while its Done channel stays
// open, as when its timer fires late (the OS ran something else): the
// deadline it reports is set by the test, and Done never closes.
type lateCtx struct {
	context.Context
	dl   atomic.Int64 // UnixNano
	done chan struct{}
}

func (c *lateCtx) Deadline() (time.Time, bool) { return time.Unix(0, c.dl.Load()), true }
func (c *lateCtx) Done() <-chan struct{}       { return c.done }
func (c *lateCtx) Err() error                  { return nil }

// An op whose deadline passed after C took it (C's deadline was far
// then) and before a host worker starts it, its ctx's timer not yet fired,
// never starts: it ends with context.DeadlineExceeded, counted
// canceled.
func TestOpPastItsDeadlineWithTheTimerLateNeverStarts(t *testing.T) {
	rt := newTestRuntime(t, 1)
	rt.setOwnForTest(false) // f runs on a host worker, after its take
	v, _ := rt.NewVMSession("late")
	gate, _ := gatedOp(t, v, "the first op starts", 10*time.Second)
	ctx := &lateCtx{Context: context.Background(), done: make(chan struct{})}
	ctx.dl.Store(time.Now().Add(time.Hour).UnixNano())
	var ran atomic.Bool
	errc := make(chan error, 1)
	go func() { errc <- v.Submit(ctx, func(*Session) error { ran.Store(true); return nil }) }()
	done := step(t, "the second op is accepted")
	for v.submitted.Load() < 2 {
		time.Sleep(100 * time.Microsecond)
	}
	done()
	ctx.dl.Store(time.Now().Add(-time.Millisecond).UnixNano())
	close(gate)
	done = step(t, "the second Submit returns")
	err := <-errc
	done()
	if ran.Load() || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("op past its deadline (timer not fired): f ran %v, Submit = %v; want not run, context.DeadlineExceeded", ran.Load(), err)
	}
	if dispatched, _, _ := v.Stats(); dispatched != 1 || v.canceled.Load() != 1 {
		t.Errorf("dispatched %d canceled %d, want 1 1", dispatched, v.canceled.Load())
	}
}
