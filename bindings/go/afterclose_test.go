// Promises: 1, 5

package accel

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Every exported method of a VMSession, its Session and its Runtime,
// called after the session's Close and after the runtime's Close: each
// returns its documented error or value (exactly: ErrSessionClosed is not
// just any error), runs no f, and leaves what it reports unchanged.
func TestEveryMethodAfterClose(t *testing.T) {
	for _, how := range []string{"VMSession.Close", "Runtime.Close"} {
		t.Run(how, func(t *testing.T) {
			rt, err := NewRuntime(RuntimeConfig{Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer waitFor(t, "Runtime.Close at the subtest's end", func() { rt.Close() })
			const budget = 1 << 20
			v, err := rt.NewVMSession("v", WithMemoryBudget(budget), WithPriority(PriorityHigh))
			if err != nil {
				t.Fatal(err)
			}
			s := v.Session()
			buf, err := s.Alloc(64)
			if err != nil {
				t.Fatal(err)
			}
			nop := func(*Session) error { return nil }
			if err := v.Submit(bg(), nop); err != nil {
				t.Fatal(err)
			}
			done := step(t, how)
			if how == "VMSession.Close" {
				err = v.Close()
			} else {
				err = rt.Close()
			}
			done()
			if err != nil {
				t.Fatalf("%s: %v", how, err)
			}
			ran := false
			never := func(*Session) error { ran = true; return nil }
			called := false
			cb := func(error) { called = true }

			is := func(name string, got, want error) {
				t.Helper()
				if !errors.Is(got, want) {
					t.Errorf("%s after %s = %v, want %v", name, how, got, want)
				}
			}
			is("Submit", v.Submit(bg(), never), ErrSessionClosed)
			is("SubmitAsync", v.SubmitAsync(never, cb), ErrSessionClosed)
			for i, e := range v.SubmitBatch(bg(), []func(*Session) error{never, never}) {
				is(fmt.Sprintf("SubmitBatch[%d]", i), e, ErrSessionClosed)
			}
			n, err := v.SubmitAsyncBatch([]func(*Session) error{never}, func(int, error) { called = true })
			is("SubmitAsyncBatch", err, ErrSessionClosed)
			if n != 0 {
				t.Errorf("SubmitAsyncBatch after %s accepted %d", how, n)
			}
			is("Sync", v.Sync(), ErrSessionClosed)
			is("Session.Sync", s.Sync(), ErrSessionClosed)
			is("SetPriority", v.SetPriority(PriorityLow), ErrSessionClosed)
			is("Reserve", s.Reserve(10), ErrSessionClosed)
			is("Unreserve", s.Unreserve(10), ErrSessionClosed)
			if b, err := s.Alloc(8); b != nil || !errors.Is(err, ErrSessionClosed) {
				t.Errorf("Alloc after %s = %v, %v", how, b, err)
			}
			s.Free(buf) // released; nothing left to refund
			s.Free(nil)
			if ran || called {
				t.Errorf("after %s: an f ran (%v) or a done was called (%v)", how, ran, called)
			}
			waited := false
			s.Blocking(func() { waited = true })
			if !waited {
				t.Errorf("Blocking after %s did not run its wait", how)
			}

			// What they report: the values fixed at open stay, the live
			// ones read zero, the counters stay as they were.
			if v.ID() != "v" || s.ID() != "v" || v.Runtime() != rt || v.Session() != s || s.VMSession() != v {
				t.Errorf("identity after %s: %q %q", how, v.ID(), s.ID())
			}
			if v.Priority() != PriorityHigh {
				t.Errorf("Priority after %s = %d (a refused SetPriority changed it?)", how, v.Priority())
			}
			if !v.IsClosed() || v.IsAvailable() {
				t.Errorf("after %s: IsClosed %v, IsAvailable %v", how, v.IsClosed(), v.IsAvailable())
			}
			if v.MemoryUsed() != 0 || s.MemoryUsed() != 0 {
				t.Errorf("MemoryUsed after %s = %d, %d", how, v.MemoryUsed(), s.MemoryUsed())
			}
			if s.MemoryBudget() != budget {
				t.Errorf("MemoryBudget after %s = %d, want %d (0 reads as unlimited)", how, s.MemoryBudget(), budget)
			}
			if s.Backend() != BackendCPU {
				t.Errorf("Backend after %s = %v", how, s.Backend())
			}
			if d, c, f := v.Stats(); d != 1 || c != 1 || f != 0 {
				t.Errorf("Stats after %s = %d %d %d, want 1 1 0", how, d, c, f)
			}
			st := v.FullStats()
			if !st.Closed || st.ID != "v" || st.Submitted != 1 || st.Completed != 1 ||
				st.Priority != PriorityHigh || st.MemoryBudget != budget || st.Queued != 0 {
				t.Errorf("FullStats after %s: %+v", how, st)
			}
			if err := v.Close(); err != nil {
				t.Errorf("Close again after %s: %v", how, err)
			}
			if err := s.Close(); err != nil {
				t.Errorf("Session.Close after %s: %v", how, err)
			}
			if _, ok := rt.Lookup("v"); ok {
				t.Errorf("Lookup finds v after %s", how)
			}
			for _, o := range rt.Sessions() {
				if o == v {
					t.Errorf("Sessions lists v after %s", how)
				}
			}
			if rt.Workers() != 1 {
				t.Errorf("Workers after %s = %d", how, rt.Workers())
			}

			if how == "VMSession.Close" {
				// The runtime goes on: the id is free, and another session
				// runs ops.
				w, err := rt.NewVMSession("v")
				if err != nil {
					t.Fatalf("NewVMSession(\"v\") after v's Close: %v", err)
				}
				if err := w.Submit(bg(), nop); err != nil {
					t.Fatalf("Submit on the new v: %v", err)
				}
				var sb strings.Builder
				if err := rt.WritePrometheus(&sb); err != nil || !strings.Contains(sb.String(), `session="v"`) {
					t.Errorf("WritePrometheus after v's Close: %v", err)
				}
				return
			}
			if _, err := rt.NewVMSession("w"); !errors.Is(err, ErrRuntimeClosed) {
				t.Errorf("NewVMSession after Runtime.Close = %v", err)
			}
			if err := rt.WritePrometheus(&strings.Builder{}); !errors.Is(err, ErrRuntimeClosed) {
				t.Errorf("WritePrometheus after Runtime.Close = %v", err)
			}
			if err := rt.Close(); !errors.Is(err, ErrRuntimeClosed) {
				t.Errorf("second Runtime.Close = %v", err)
			}
		})
	}
}

// Runtime.Close racing Runtime.Close, with ops still queued: the first
// drains and closes; every other waits for it, so that whichever returns,
// the runtime is closed and every accepted op has run. Exactly one gets
// nil, the others ErrRuntimeClosed. The first is held inside its drain
// (its session's first op waits on a gate) until the others are waiting
// or one has returned.
func TestRuntimeCloseRacingClose(t *testing.T) {
	rt, err := NewRuntime(RuntimeConfig{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := rt.NewVMSession("v")
	gate := make(chan struct{})
	var ran [50]atomic.Bool
	for i := range ran {
		i := i
		if err := v.SubmitAsync(func(*Session) error {
			if i == 0 {
				<-gate
			}
			ran[i].Store(true)
			return nil
		}, nil); err != nil {
			t.Fatal(err)
		}
	}
	const closers = 4
	results := make(chan error, closers)
	closeOne := func() {
		err := rt.Close()
		// Whichever Close this is, the runtime is closed by now.
		for j := range ran {
			if !ran[j].Load() {
				err = fmt.Errorf("Close returned (%v) with op %d not run", err, j)
				break
			}
		}
		if _, e := rt.NewVMSession("late"); !errors.Is(e, ErrRuntimeClosed) {
			err = fmt.Errorf("NewVMSession after a Close returned: %v", e)
		}
		results <- err
	}
	go closeOne()
	done := step(t, "the first Runtime.Close begins")
	for {
		rt.mu.Lock()
		closing := rt.closing
		rt.mu.Unlock()
		if closing {
			break
		}
		runtime.Gosched()
	}
	done()
	for i := 1; i < closers; i++ {
		go closeOne()
	}
	done = step(t, "the other Closes wait (or return)")
	for rt.closeWaits.Load() < closers-1 && len(results) == 0 {
		runtime.Gosched()
	}
	done()
	close(gate)
	done = step(t, "4 Runtime.Close calls return")
	nils := 0
	for i := 0; i < closers; i++ {
		switch err := <-results; {
		case err == nil:
			nils++
		case !errors.Is(err, ErrRuntimeClosed):
			t.Error(err)
		}
	}
	done()
	if nils != 1 {
		t.Errorf("%d Closes returned nil, want 1", nils)
	}
}

// Synchronous Submit and SubmitBatch from 8 goroutines while two
// goroutines Close the session: each call returns nil with its f run
// exactly once, or ErrSessionClosed with its f never run, and the
// session's counters agree with what the callers saw. 1 and 2 workers,
// with Submit's direct hand-off and without.
func TestSubmitRacesClose(t *testing.T) {
	for _, workers := range []int{1, 2} {
		for _, own := range []bool{true, false} {
			t.Run(fmt.Sprintf("workers=%d/handoff=%v", workers, own), func(t *testing.T) {
				for round := 0; round < 20; round++ {
					submitRacesClose(t, workers, own, round)
				}
			})
		}
	}
}

func submitRacesClose(t *testing.T, workers int, own bool, round int) {
	rt, err := NewRuntime(RuntimeConfig{Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	rt.setOwnForTest(own)
	defer func() {
		var err error
		waitFor(t, fmt.Sprintf("round %d: Runtime.Close at the round's end", round), func() { err = rt.Close() })
		if err != nil {
			t.Errorf("round %d: Runtime.Close: %v", round, err)
		}
	}()
	v, _ := rt.NewVMSession("v")
	const submitters = 8
	var runs [submitters][]atomic.Int32 // runs of each call's f
	for i := range runs {
		runs[i] = make([]atomic.Int32, 64)
	}
	var accepted, refused atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, submitters+2)
	started := make(chan struct{}, submitters)
	for g := 0; g < submitters; g++ {
		g := g
		wg.Add(1)
		go func() {
			defer wg.Done()
			started <- struct{}{}
			for k := 0; k < len(runs[g]); k += 2 {
				k := k
				seen := func(err error, j int) bool {
					switch {
					case err == nil && runs[g][j].Load() == 1:
						accepted.Add(1)
					case errors.Is(err, ErrSessionClosed) && runs[g][j].Load() == 0:
						refused.Add(1)
					default:
						errs <- fmt.Errorf("call %d/%d: %v with f run %d times", g, j, err, runs[g][j].Load())
						return false
					}
					return true
				}
				if g%2 == 0 {
					err := v.Submit(bg(), func(*Session) error { runs[g][k].Add(1); return nil })
					if !seen(err, k) {
						return
					}
					err = v.Submit(bg(), func(*Session) error { runs[g][k+1].Add(1); return nil })
					if !seen(err, k+1) {
						return
					}
					continue
				}
				bes := v.SubmitBatch(bg(), []func(*Session) error{
					func(*Session) error { runs[g][k].Add(1); return nil },
					func(*Session) error { runs[g][k+1].Add(1); return nil },
				})
				if !seen(bes[0], k) || !seen(bes[1], k+1) {
					return
				}
			}
		}()
	}
	for g := 0; g < submitters; g++ {
		<-started
	}
	for c := 0; c < 2; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := v.Close(); err != nil {
				errs <- fmt.Errorf("Close: %v", err)
			}
		}()
	}
	done := step(t, fmt.Sprintf("round %d: 8 submitters and 2 Closes return", round))
	wg.Wait()
	done()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("round %d: %d run, %d refused", round, accepted.Load(), refused.Load())
	// Every call was seen once; the counters agree with the callers.
	if n := accepted.Load() + refused.Load(); n != submitters*64 {
		t.Fatalf("round %d: %d calls seen, want %d", round, n, submitters*64)
	}
	d, c, f := v.Stats()
	if int64(d) != accepted.Load() || int64(c) != accepted.Load() || f != 0 {
		t.Fatalf("round %d: Stats %d %d %d, callers saw %d run", round, d, c, f, accepted.Load())
	}
}

// A session whose backend is not available (WithVMBackend(BackendMetal):
// never here), closed: every submit and Sync returns ErrSessionClosed,
// not ErrNoBackends or nil, runs no f, calls no done and counts nothing,
// as on a session with its backend (VMSession's doc: after Close the
// methods that need the session return ErrSessionClosed and change
// nothing).
func TestUnavailableSessionAfterClose(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, err := rt.NewVMSession("gpu", WithVMBackend(BackendMetal))
	if err != nil {
		t.Fatal(err)
	}
	if v.IsAvailable() {
		t.Fatal("a Metal session is available")
	}
	ran, called := false, false
	never := func(*Session) error { ran = true; return nil }
	if err := v.Submit(bg(), never); !errors.Is(err, ErrNoBackends) {
		t.Fatalf("Submit before Close = %v, want ErrNoBackends", err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	before := v.FullStats()
	is := func(name string, got error) {
		t.Helper()
		if got != ErrSessionClosed {
			t.Errorf("%s on a closed unavailable session = %v, want ErrSessionClosed", name, got)
		}
	}
	is("Submit", v.Submit(bg(), never))
	is("SubmitAsync", v.SubmitAsync(never, func(error) { called = true }))
	for i, e := range v.SubmitBatch(bg(), []func(*Session) error{never, never}) {
		is(fmt.Sprintf("SubmitBatch[%d]", i), e)
	}
	n, err := v.SubmitAsyncBatch([]func(*Session) error{never}, func(int, error) { called = true })
	is("SubmitAsyncBatch", err)
	if n != 0 {
		t.Errorf("SubmitAsyncBatch on a closed unavailable session accepted %d", n)
	}
	is("Sync", v.Sync())
	is("SetPriority", v.SetPriority(PriorityHigh))
	if ran || called {
		t.Errorf("an f ran (%v) or a done was called (%v)", ran, called)
	}
	if after := v.FullStats(); after != before {
		t.Errorf("the refused calls changed the counters:\n before %+v\n after  %+v", before, after)
	}
	if d, _, f := v.Stats(); d != 1 || f != 1 {
		t.Errorf("Stats dispatched %d failed %d, want 1 1 (the Submit before Close)", d, f)
	}
}

// VMSession.Close racing VMSession.Close: each Close, the first and those
// that come while it drains, returns only once every op the session
// accepted has run, and returns the first one's result (nil). The first
// Close is held in its drain by the session's op, which waits on a gate;
// the gate opens on a timer, so that a later Close that did not wait for
// the drain returns while the op has not run (the check needs no timing:
// a Close that waits sees the op run whenever the gate opens).
func TestCloseRacingCloseWaitsForTheDrain(t *testing.T) {
	rt := newTestRuntime(t, 2)
	for round := 0; round < 3; round++ {
		v, err := rt.NewVMSession("v")
		if err != nil {
			t.Fatal(err)
		}
		gate, started := make(chan struct{}), make(chan struct{})
		var ran atomic.Bool
		if err := v.SubmitAsync(func(*Session) error {
			close(started)
			<-gate
			ran.Store(true)
			return nil
		}, nil); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the gated op starts", func() { <-started })
		const closers = 4
		results := make(chan error, closers)
		closeOne := func() {
			err := v.Close()
			if !ran.Load() {
				err = fmt.Errorf("Close returned (%v) before the op it accepted ran", err)
			}
			results <- err
		}
		go closeOne()
		waitFor(t, "the first Close marks the session closed", func() {
			for !v.IsClosed() {
				runtime.Gosched()
			}
		})
		tm := time.AfterFunc(20*time.Millisecond, func() { close(gate) })
		for i := 1; i < closers; i++ {
			go closeOne()
		}
		done := step(t, fmt.Sprintf("round %d: %d racing Closes return", round, closers))
		for i := 0; i < closers; i++ {
			if err := <-results; err != nil {
				t.Errorf("round %d: %v", round, err)
			}
		}
		done()
		tm.Stop()
	}
}
