// Promises: 1, 7

package accel

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// awayCheck is what an op's announced wait saw of the calls that treat
// an op's own session apart: each a failure message, or nil.
type awayCheck []error

func (c *awayCheck) want(ok bool, format string, args ...any) {
	if !ok {
		*c = append(*c, fmt.Errorf(format, args...))
	}
}

// ownCallsInWait makes, from inside s.Blocking of an op of v (other a
// second session of v's runtime), every call that must see the op's own
// session: each answers as from f itself, without waiting for the op that
// runs it. The thread the wait runs on is not the visit's (the wait is
// away), and after the wait f is back on a thread that is.
func ownCallsInWait(t *testing.T, s *Session, v, other *VMSession) (c awayCheck) {
	rt := v.rt
	s.Blocking(func() {
		own, inVisit := v.threadInOpForTest()
		c.want(!own && !inVisit, "inside s.Blocking the thread still runs the visit (own %v, in a visit %v): the wait did not leave it", own, inVisit)
		err := v.Submit(bg(), emptyOp)
		c.want(errors.Is(err, ErrDeadlock), "Submit to the op's own session: %v, want ErrDeadlock", err)
		err = v.Submit(queued(t), emptyOp)
		c.want(errors.Is(err, ErrDeadlock), "Submit to the op's own session with a ctx that can end: %v, want ErrDeadlock", err)
		for i, err := range v.SubmitBatch(bg(), []func(*Session) error{emptyOp, emptyOp}) {
			c.want(errors.Is(err, ErrDeadlock), "SubmitBatch to the op's own session, op %d: %v, want ErrDeadlock", i, err)
		}
		err = v.Sync()
		c.want(err == nil, "VMSession.Sync of the op's own session: %v, want nil at once", err)
		err = rt.Close()
		c.want(errors.Is(err, ErrDeadlock), "Runtime.Close: %v, want ErrDeadlock", err)
		ran := false
		err = other.Submit(bg(), func(*Session) error { ran = true; return nil })
		c.want(err == nil && ran, "Submit to another session: %v (ran %v), want its f run", err, ran)
		inner := false
		s.Blocking(func() { inner = true })
		c.want(inner, "a nested s.Blocking did not run its wait")
	})
	own, inVisit := v.threadInOpForTest()
	c.want(own && inVisit, "after s.Blocking f's thread does not run the visit (own %v, in a visit %v)", own, inVisit)
	return c
}

// An announced wait on a host worker runs away from the visit's thread,
// and every call that tells an op's own session (Submit, SubmitBatch,
// Batcher.Submit, Sync, Close, Runtime.Close) still tells it there: from
// an op's f and from a Batcher's fn, with one worker. Planted: Blocking
// that stays on the thread fails the first check; without the away
// record's check in any one of those calls, that call waits for the op
// that makes it, and the watchdog names the step.
func TestBlockingWaitAwayKeepsOwnSession(t *testing.T) {
	for _, own := range []bool{false, true} {
		// own: Submit's direct hand-off on (a Submit from the wait asks
		// for it first); off: every Submit goes through the queue.
		t.Run(fmt.Sprintf("hand-off=%v", own), func(t *testing.T) {
			compCases(t, func(t *testing.T) { ownCallsAway(t, own) })
		})
	}
}

// runAsync runs f as an op of v on a host worker (SubmitAsync: never on
// this goroutine) and returns its error, under a watchdog named step.
func runAsync(t *testing.T, v *VMSession, step string, f func(*Session) error) error {
	t.Helper()
	done := stepWithin(t, step, compLimit)
	defer done()
	return onHostWorker(v, f)
}

func ownCallsAway(t *testing.T, handOff bool) {
	rt := newTestRuntime(t, 1)
	rt.setOwnForTest(handOff)
	v, _ := rt.NewVMSession("v")
	other, _ := rt.NewVMSession("other")

	var got awayCheck
	err := runAsync(t, v, "an op whose s.Blocking calls into its own session", func(s *Session) error {
		got = ownCallsInWait(t, s, v, other)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range got {
		t.Error("op's f: ", e)
	}

	var b *Batcher[int]
	b, err = NewBatcher(v, func(s *Session, items []int, errs []error) {
		got = ownCallsInWait(t, s, v, other)
		s.Blocking(func() {
			err := b.Submit(bg(), 2)
			got.want(errors.Is(err, ErrDeadlock), "Batcher.Submit to the fn's own session: %v, want ErrDeadlock", err)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	done := stepWithin(t, "a Batcher item whose fn's s.Blocking calls into its own session", compLimit)
	err = b.Submit(queued(t), 1)
	done()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range got {
		t.Error("Batcher's fn: ", e)
	}

	// Close from the wait begins the close and does not wait for the op
	// that makes it: the op returns, and the session is closed.
	var closeErr error
	err = runAsync(t, v, "an op whose s.Blocking closes its own session", func(s *Session) error {
		s.Blocking(func() { closeErr = v.Close() })
		return nil
	})
	if err != nil || closeErr != nil {
		t.Fatalf("op that closed its session: %v, Close: %v", err, closeErr)
	}
	if err := v.Submit(bg(), emptyOp); !errors.Is(err, ErrSessionClosed) {
		t.Fatalf("Submit after the Close from inside: %v, want ErrSessionClosed", err)
	}
	if n := awayWaits.n.Load(); n != 0 {
		t.Fatalf("%d announced waits still recorded away", n)
	}
}

// A wait away that ends f (a panic, runtime.Goexit) brings the op back
// to a thread first: the op fails, no worker stays counted blocked, no
// record stays, and the session and its one worker go on.
func TestBlockingWaitAwayPanicAndGoexit(t *testing.T) {
	compCases(t, func(t *testing.T) {
		rt := newQueuedRuntime(t, 1)
		v, _ := rt.NewVMSession("v")
		err := runAsync(t, v, "an op that panics inside s.Blocking", func(s *Session) error {
			s.Blocking(func() { panic("in the wait") })
			return nil
		})
		var pe *PanicError
		if !errors.As(err, &pe) {
			t.Fatalf("op that panicked in its wait: %v, want a *PanicError", err)
		}
		done := stepWithin(t, "an op that calls runtime.Goexit inside s.Blocking", compLimit)
		exited := make(chan bool, 1)
		go func() {
			ok := false
			defer func() { exited <- !ok }()
			v.Submit(queued(t), func(s *Session) error {
				s.Blocking(runtime.Goexit)
				return nil
			})
			ok = true
		}()
		if !<-exited {
			t.Fatal("Submit returned after runtime.Goexit in the op's wait")
		}
		done()
		quickOp(t, v, "the session's next op after the panic and the Goexit")
		if blocked, _ := rt.cBlockedForTest(); blocked != 0 {
			t.Fatalf("%d workers still counted blocked", blocked)
		}
		if n := awayWaits.n.Load(); n != 0 {
			t.Fatalf("%d announced waits still recorded away", n)
		}
		_, _, failed := v.Stats()
		if failed != 2 {
			t.Fatalf("failed ops %d, want 2", failed)
		}
	})
}

// 32 sessions' ops wait away at once on 2 workers, each having had
// ErrDeadlock for a Submit to its own session from its wait; meanwhile
// other goroutines Sync and Submit to each of those sessions: the record
// tells them apart (goroutine.Self), so each Sync waits for the running
// op and each Submit queues, none gets ErrDeadlock. Planted: awayOwn
// comparing no identity fails it (innocent Submits get ErrDeadlock, and
// Syncs return before the running op ends).
func TestBlockingWaitAwayLeavesOthersAlone(t *testing.T) {
	compCases(t, func(t *testing.T) {
		rt := newTestRuntime(t, 2)
		const n = 32
		vs := make([]*VMSession, n)
		for i := range vs {
			vs[i], _ = rt.NewVMSession(fmt.Sprint("m", i))
		}
		release := make(chan struct{})
		var inWait sync.WaitGroup
		inWait.Add(n)
		var opDone [n]atomic.Bool
		var bad atomic.Int32
		results := make(chan error, n)
		for i := range vs {
			i := i
			err := vs[i].SubmitAsync(func(s *Session) error {
				s.Blocking(func() {
					if !errors.Is(vs[i].Submit(bg(), emptyOp), ErrDeadlock) {
						bad.Add(1)
					}
					inWait.Done()
					<-release
				})
				opDone[i].Store(true)
				return nil
			}, func(err error) { results <- err })
			if err != nil {
				t.Fatal(err)
			}
		}
		done := stepWithin(t, "all ops in their wait", compLimit)
		inWait.Wait()
		done()
		if n := awayWaits.n.Load(); n != int32(len(vs)) {
			t.Fatalf("%d waits away, want %d", n, len(vs))
		}
		var wg sync.WaitGroup
		errs := make(chan error, 2*n)
		for i := range vs {
			i := i
			wg.Add(2)
			go func() {
				defer wg.Done()
				if err := vs[i].Sync(); err != nil {
					errs <- fmt.Errorf("sync %d: %v", i, err)
				} else if !opDone[i].Load() {
					errs <- fmt.Errorf("innocent Sync of %d returned before the running op finished", i)
				}
			}()
			go func() {
				defer wg.Done()
				if err := vs[i].Submit(queued(t), emptyOp); err != nil {
					errs <- fmt.Errorf("innocent submit %d: %v", i, err)
				}
			}()
		}
		time.Sleep(20 * time.Millisecond)
		close(release)
		done = stepWithin(t, "innocents", compLimit)
		wg.Wait()
		for i := 0; i < n; i++ {
			if err := <-results; err != nil {
				t.Error(err)
			}
		}
		done()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if bad.Load() != 0 {
			t.Errorf("%d own submits not ErrDeadlock", bad.Load())
		}
		if n := awayWaits.n.Load(); n != 0 {
			t.Errorf("%d announced waits still recorded away", n)
		}
	})
}
