// Promises: 1, 2, 3, 4, 5

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

func bg() context.Context { return context.Background() }

// blockWorker occupies one worker of v's runtime with an op of v until the
// returned func is called; it returns once the op is running.
func blockWorker(t *testing.T, v *VMSession) (release func()) {
	t.Helper()
	started, gate := make(chan struct{}), make(chan struct{})
	if err := v.SubmitAsync(func(*Session) error {
		close(started)
		<-gate
		return nil
	}, nil); err != nil {
		t.Fatalf("SubmitAsync: %v", err)
	}
	waitStarted := step(t, "blockWorker: the blocking op starts")
	<-started
	waitStarted()
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }
}

// waitSubmitted polls until the C runtime has accepted n ops of v. It only
// waits for an event; no duration is asserted.
func waitSubmitted(v *VMSession, n uint64) {
	for v.FullStats().Submitted < n {
		time.Sleep(100 * time.Microsecond)
	}
}

func TestEmptyID(t *testing.T) {
	if _, err := NewVMSession(""); !errors.Is(err, ErrEmptyVMID) {
		t.Fatalf("NewVMSession(\"\") = %v, want ErrEmptyVMID", err)
	}
	rt := newTestRuntime(t, 1)
	if _, err := rt.NewVMSession(""); !errors.Is(err, ErrEmptyVMID) {
		t.Fatalf("rt.NewVMSession(\"\") = %v, want ErrEmptyVMID", err)
	}
	if n := len(rt.Sessions()); n != 0 {
		t.Fatalf("%d sessions after a refused open", n)
	}
}

func TestBadOpen(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, err := rt.NewVMSession("dup")
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Session().Backend(); got != BackendCPU {
		t.Errorf("BackendAuto bound %v, want cpu", got)
	}
}

func TestFIFOManyGoroutines(t *testing.T) {
	rt := newTestRuntime(t, 2)
	v, err := rt.NewVMSession("fifo", WithQueueDepth(64))
	if err != nil {
		t.Fatal(err)
	}
	const producers, per = 8, 300
	var inFlight atomic.Int32
	last := make([]int, producers) // touched only by ops, which never overlap
	for i := range last {
		last[i] = -1
	}
	var bad atomic.Int32
	op := func(p, i int) func(*Session) error {
		return func(*Session) error {
			if inFlight.Add(1) != 1 {
				bad.Add(1) // two ops of one session at once
			}
			if last[p] != i-1 {
				bad.Add(1) // a producer's ops out of order
			}
			last[p] = i
			inFlight.Add(-1)
			return nil
		}
	}
	waitProducers := stepLong(t, "producers' submits (wg.Wait)")
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				var err error
				if p%2 == 0 { // half synchronous, half asynchronous producers
					err = v.Submit(bg(), op(p, i))
				} else {
					for err = v.SubmitAsync(op(p, i), nil); errors.Is(err, ErrQueueFull); err = v.SubmitAsync(op(p, i), nil) {
						time.Sleep(10 * time.Microsecond)
					}
				}
				if err != nil {
					t.Errorf("submit: %v", err)
					return
				}
			}
		}(p)
	}
	wg.Wait()
	waitProducers()
	waitSync := step(t, "v.Sync after the producers")
	err = v.Sync()
	waitSync()
	if err != nil {
		t.Fatal(err)
	}
	if n := bad.Load(); n != 0 {
		t.Fatalf("%d FIFO/overlap violations", n)
	}
	for p, l := range last {
		if l != per-1 {
			t.Fatalf("producer %d: last op %d, want %d", p, l, per-1)
		}
	}
}

func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// A Critical session and a Low one, both backlogged behind a blocked single
// worker: once released, the Critical backlog must be served ahead of the
// Low one (weights 100:1), where FIFO or round-robin would interleave them.
func TestPriorityOrderUnderFlood(t *testing.T) {
	rt, err := NewRuntime(RuntimeConfig{Workers: 1, QuantumOps: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		done := step(t, "rt.Close")
		rt.Close()
		done()
	}()
	low, _ := rt.NewVMSession("low", WithPriority(PriorityLow))
	crit, _ := rt.NewVMSession("crit", WithPriority(PriorityCritical))
	gate, _ := rt.NewVMSession("gate", WithPriority(PriorityCritical))
	release := blockWorker(t, gate)
	const n = 100
	var mu sync.Mutex
	var order []byte
	rec := func(c byte) func(*Session) error {
		return func(*Session) error {
			spin(20 * time.Microsecond) // equal, measurable cost per op
			mu.Lock()
			order = append(order, c)
			mu.Unlock()
			return nil
		}
	}
	for i := 0; i < n; i++ { // the flood is queued first
		if err := low.SubmitAsync(rec('L'), nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		if err := crit.SubmitAsync(rec('C'), nil); err != nil {
			t.Fatal(err)
		}
	}
	release()
	waitSync := step(t, "low.Sync and crit.Sync after the release")
	low.Sync()
	crit.Sync()
	waitSync()
	mu.Lock()
	defer mu.Unlock()
	lowBefore := 0
	seen := 0
	for _, c := range order {
		if c == 'C' {
			seen++
			if seen == n {
				break
			}
		} else {
			lowBefore++
		}
	}
	// Fair shares would let Low run about n/100 ops meanwhile; round-robin
	// n, FIFO n. Allow generous slack for the measured service times.
	if lowBefore > n/4 {
		t.Fatalf("Low ran %d of its ops before Critical's %d finished; order %s", lowBefore, n, order)
	}
}

func TestCtxCanceledWhileQueued(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("cancel")
	release := blockWorker(t, v)
	defer release()
	var ran atomic.Bool
	ctx, cancel := context.WithCancel(bg())
	res := make(chan error, 1)
	go func() { res <- v.Submit(ctx, func(*Session) error { ran.Store(true); return nil }) }()
	waitQueued := step(t, "waitSubmitted(v, 2)")
	waitSubmitted(v, 2) // the blocker and our op are both accepted
	waitQueued()
	cancel()
	waitRes := step(t, "Submit returns after cancel")
	err := <-res
	waitRes()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Submit = %v, want context.Canceled", err)
	}
	release()
	waitSync := step(t, "v.Sync after the release")
	err = v.Sync()
	waitSync()
	if err != nil {
		t.Fatal(err)
	}
	if ran.Load() {
		t.Fatal("a canceled op ran")
	}
	st := v.FullStats()
	if st.Dispatched != 1 || st.Canceled != 1 {
		t.Fatalf("dispatched %d canceled %d, want 1 and 1", st.Dispatched, st.Canceled)
	}
	// The session goes on: a later op runs.
	waitLater := step(t, "a later Submit")
	err = v.Submit(bg(), func(*Session) error { return nil })
	waitLater()
	if err != nil {
		t.Fatal(err)
	}
	// Already canceled: refused before it is queued.
	waitPre := step(t, "a pre-canceled Submit")
	err = v.Submit(ctx, func(*Session) error { ran.Store(true); return nil })
	waitPre()
	if !errors.Is(err, context.Canceled) || ran.Load() {
		t.Fatalf("pre-canceled Submit = %v (ran %v)", err, ran.Load())
	}
}

func TestCtxDeadlineWhileQueued(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("deadline")
	release := blockWorker(t, v)
	var ran atomic.Bool
	// The worker stays blocked until Submit has returned, so the deadline
	// passes while the op is queued whatever the machine's speed.
	ctx, cancel := context.WithTimeout(bg(), time.Millisecond)
	defer cancel()
	waitSubmit := step(t, "Submit with a 1 ms deadline while the worker is held")
	err := v.Submit(ctx, func(*Session) error { ran.Store(true); return nil })
	waitSubmit()
	release()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Submit = %v, want context.DeadlineExceeded", err)
	}
	waitSync := step(t, "v.Sync after the release")
	v.Sync()
	waitSync()
	if ran.Load() {
		t.Fatal("an op past its deadline ran")
	}
}

// A running f is not interrupted: its ctx ending does not change Submit's
// result, which is f's.
func TestCtxEndsWhileRunning(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("running")
	ctx, cancel := context.WithCancel(bg())
	want := errors.New("f's own error")
	waitSubmit := step(t, "Submit whose f cancels its ctx")
	err := v.Submit(ctx, func(*Session) error { cancel(); return want })
	waitSubmit()
	if err != want {
		t.Fatalf("Submit = %v, want f's error", err)
	}
}

func TestClose(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("close")
	var ran atomic.Int32
	for i := 0; i < 100; i++ {
		if err := v.SubmitAsync(func(*Session) error { spin(10 * time.Microsecond); ran.Add(1); return nil }, nil); err != nil {
			t.Fatal(err)
		}
	}
	waitCloses := step(t, "four concurrent Closes (wg.Wait)")
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ { // Close from many goroutines: each waits, all nil
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := v.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		}()
	}
	wg.Wait()
	waitCloses()
	if n := ran.Load(); n != 100 {
		t.Fatalf("Close returned with %d of 100 ops run", n)
	}
	waitAfter := step(t, "second Close, then Submit, SubmitAsync, Sync and Blocking after Close")
	defer waitAfter()
	if err := v.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if !v.IsClosed() || v.IsAvailable() {
		t.Fatal("closed session reports open")
	}
	if err := v.Submit(bg(), func(*Session) error { return nil }); !errors.Is(err, ErrSessionClosed) {
		t.Fatalf("Submit after Close = %v", err)
	}
	if err := v.SubmitAsync(func(*Session) error { return nil }, nil); !errors.Is(err, ErrSessionClosed) {
		t.Fatalf("SubmitAsync after Close = %v", err)
	}
	if err := v.Sync(); !errors.Is(err, ErrSessionClosed) {
		t.Fatalf("Sync after Close = %v", err)
	}
	waited := false
	v.Session().Blocking(func() { waited = true }) // just runs the wait
	if !waited {
		t.Fatal("Blocking after Close did not run its wait")
	}
	waitAfter()
	if _, ok := rt.Lookup("close"); ok {
		t.Fatal("closed session still found by Lookup")
	}
	// The id is free again.
	v2, err := rt.NewVMSession("close")
	if err != nil {
		t.Fatal(err)
	}
	waitClose2 := step(t, "v2.Close")
	v2.Close()
	waitClose2()
}

func TestBudgetThroughSession(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("budget", WithMemoryBudget(1000))
	err := v.Submit(bg(), func(s *Session) error {
		if s.ID() != "budget" {
			return fmt.Errorf("ID %q", s.ID())
		}
		a, err := s.Alloc(600)
		if err != nil {
			return fmt.Errorf("first Alloc: %v", err)
		}
		a[599] = 1
		if _, err := s.Alloc(600); !errors.Is(err, ErrSessionBudgetExceeded) {
			return fmt.Errorf("Alloc over budget = %v", err)
		}
		if err := s.Reserve(401); !errors.Is(err, ErrSessionBudgetExceeded) {
			return fmt.Errorf("Reserve over budget = %v", err)
		}
		if err := s.Reserve(400); err != nil {
			return fmt.Errorf("Reserve to the byte: %v", err)
		}
		if u := s.MemoryUsed(); u != 1000 {
			return fmt.Errorf("MemoryUsed %d, want 1000", u)
		}
		s.Free(a)
		return s.Unreserve(400)
	})
	if err != nil {
		t.Fatal(err)
	}
	if u := v.MemoryUsed(); u != 0 {
		t.Fatalf("MemoryUsed after free %d", u)
	}
	// The error f passes on is Submit's, and errors.Is sees through wrapping.
	err = v.Submit(bg(), func(s *Session) error {
		_, err := s.Alloc(2000)
		return fmt.Errorf("alloc: %w", err)
	})
	if !errors.Is(err, ErrSessionBudgetExceeded) {
		t.Fatalf("Submit = %v, want ErrSessionBudgetExceeded", err)
	}
	if b := v.Session().MemoryBudget(); b != 1000 {
		t.Fatalf("MemoryBudget %d", b)
	}
}

func TestStatsExactAndPanic(t *testing.T) {
	rt := newTestRuntime(t, 1) // one worker: a panic must not lose it
	v, _ := rt.NewVMSession("stats")
	boom := errors.New("boom")
	const ok, bad, panics = 50, 20, 5
	for i := 0; i < ok; i++ {
		if err := v.Submit(bg(), func(*Session) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < bad; i++ {
		if err := v.Submit(bg(), func(*Session) error { return boom }); err != boom {
			t.Fatalf("Submit = %v, want f's error", err)
		}
	}
	for i := 0; i < panics; i++ {
		var err error
		waitFor(t, "Submit of a panicking f on the only worker", func() {
			err = v.Submit(bg(), func(*Session) error { panic("kaput") })
		})
		var pe *PanicError
		if !errors.As(err, &pe) || pe.Value != "kaput" || len(pe.Stack) == 0 {
			t.Fatalf("Submit of a panicking f = %v", err)
		}
	}
	if d, c, f := v.Stats(); d != ok+bad+panics || c != ok || f != bad+panics {
		t.Fatalf("Stats = %d %d %d, want %d %d %d", d, c, f, ok+bad+panics, ok, bad+panics)
	}
	st := v.FullStats()
	if st.Submitted != ok+bad+panics || st.Canceled != 0 || st.Queued != 0 {
		t.Fatalf("FullStats %+v", st)
	}
	// Async panics too, and the completion sees the error.
	got := make(chan error, 1)
	if err := v.SubmitAsync(func(*Session) error { panic(1) }, func(err error) { got <- err }); err != nil {
		t.Fatal(err)
	}
	var pe *PanicError
	var gErr error
	waitFor(t, "the async panic's completion", func() { gErr = <-got })
	if !errors.As(gErr, &pe) {
		t.Fatalf("async completion got %v", gErr)
	}
}

func TestManySessionsConcurrently(t *testing.T) {
	rt := newTestRuntime(t, 2)
	const goroutines, each = 8, 40
	waitAll := stepLong(t, "the goroutines' opens, submits and Closes (wg.Wait)")
	var wg sync.WaitGroup
	var ran atomic.Int64
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				id := fmt.Sprintf("vm-%d-%d", g, i)
				v, err := rt.NewVMSession(id, WithPriority(Priority(1+i%100)))
				if err != nil {
					t.Errorf("open %s: %v", id, err)
					return
				}
				if w, ok := rt.Lookup(id); !ok || w != v {
					t.Errorf("Lookup(%s) = %v %v", id, w, ok)
				}
				for k := 0; k < 3; k++ {
					v.SubmitAsync(func(*Session) error { ran.Add(1); return nil }, nil)
				}
				if err := v.Submit(bg(), func(*Session) error { ran.Add(1); return nil }); err != nil {
					t.Errorf("Submit: %v", err)
				}
				if err := v.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}
		}(g)
	}
	wg.Wait()
	waitAll()
	if n := ran.Load(); n != goroutines*each*4 {
		t.Fatalf("%d ops ran, want %d", n, goroutines*each*4)
	}
	if n := len(rt.Sessions()); n != 0 {
		t.Fatalf("%d sessions left open", n)
	}
}

func TestBatchAndAsync(t *testing.T) {
	rt := newTestRuntime(t, 2)
	v, _ := rt.NewVMSession("batch")
	var order []int
	fs := make([]func(*Session) error, 150)
	for i := range fs {
		i := i
		fs[i] = func(*Session) error {
			order = append(order, i) // ops of a session never overlap
			if i%7 == 0 {
				return fmt.Errorf("op %d", i)
			}
			return nil
		}
	}
	waitBatch := stepLong(t, "SubmitBatch of 150")
	errs := v.SubmitBatch(bg(), fs)
	waitBatch()
	for i, err := range errs {
		if (i%7 == 0) != (err != nil) {
			t.Fatalf("errs[%d] = %v", i, err)
		}
	}
	for i, o := range order {
		if o != i {
			t.Fatalf("batch ran out of order at %d: %v", i, order)
		}
	}
	var done atomic.Int32
	n, err := v.SubmitAsyncBatch(fs[:100], func(i int, err error) {
		if (i%7 == 0) != (err != nil) {
			t.Errorf("async batch %d: %v", i, err)
		}
		done.Add(1)
	})
	if n != 100 || err != nil {
		t.Fatalf("SubmitAsyncBatch = %d, %v", n, err)
	}
	waitSync := step(t, "v.Sync after SubmitAsyncBatch of 100")
	v.Sync()
	waitSync()
	if done.Load() != 100 {
		t.Fatalf("%d completions", done.Load())
	}
	// A nil f stops the batch before it: the ops ahead of it are queued.
	withNil := append(append([]func(*Session) error(nil), fs[:40]...), nil, fs[0])
	order = nil
	if n, err := v.SubmitAsyncBatch(withNil, nil); n != 40 || !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("SubmitAsyncBatch with a nil f = %d, %v", n, err)
	}
	waitSync = step(t, "v.Sync after SubmitAsyncBatch with a nil f")
	v.Sync()
	waitSync()
	if len(order) != 40 || order[39] != 39 {
		t.Fatalf("ran %v", order)
	}
	if st := v.FullStats(); st.Submitted != 150+100+40 || st.Dispatched != st.Submitted {
		t.Fatalf("submitted %d dispatched %d, want 290", st.Submitted, st.Dispatched)
	}
	// A batch whose ctx ends while it is queued: the rest never runs.
	one, _ := rt.NewVMSession("batch-cancel")
	release := blockWorker(t, one)
	defer release()
	ctx, cancel := context.WithCancel(bg())
	var ran atomic.Int32
	res := make(chan []error, 1)
	go func() {
		res <- one.SubmitBatch(ctx, []func(*Session) error{
			func(*Session) error { ran.Add(1); return nil },
			func(*Session) error { ran.Add(1); return nil },
		})
	}()
	waitQueued := step(t, "waitSubmitted(one, 3)")
	waitSubmitted(one, 3)
	waitQueued()
	cancel()
	waitRes := step(t, "SubmitBatch returns after cancel")
	cerrs := <-res
	waitRes()
	for i, err := range cerrs {
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("canceled batch errs[%d] = %v", i, err)
		}
	}
	release()
	waitSync = step(t, "one.Sync after the release")
	one.Sync()
	waitSync()
	if ran.Load() != 0 {
		t.Fatal("a canceled batch op ran")
	}
}

func TestSetPriorityLookupDeadlock(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("p", WithPriority(PriorityHigh))
	if v.Priority() != PriorityHigh {
		t.Fatal(v.Priority())
	}
	if err := v.SetPriority(PriorityCritical); err != nil || v.Priority() != PriorityCritical {
		t.Fatalf("SetPriority: %v, %d", err, v.Priority())
	}
	if v.FullStats().Priority != PriorityCritical {
		t.Fatal("FullStats priority")
	}
	if w, ok := rt.Lookup("p"); !ok || w != v {
		t.Fatal("Lookup")
	}
	if _, ok := rt.Lookup("nope"); ok {
		t.Fatal("Lookup of a missing id")
	}
	var err error
	waitFor(t, "Submit whose f syncs its own session", func() {
		err = v.Submit(bg(), func(s *Session) error { return s.Sync() })
	})
	if err != nil {
		t.Fatalf("Sync inside own op = %v, want nil (the ops before it are done)", err)
	}
}

// Cancels racing the workers: every Submit either returns ctx's error and
// its f never ran, or f ran exactly once and Submit returned f's result;
// the counters agree.
func TestCancelRacesWorker(t *testing.T) {
	rt := newTestRuntime(t, 2)
	vs := []*VMSession{}
	for i := 0; i < 3; i++ {
		v, _ := rt.NewVMSession(fmt.Sprintf("race-%d", i))
		vs = append(vs, v)
	}
	const goroutines, per = 6, 300
	runs := make([]atomic.Int32, goroutines*per)
	var wg sync.WaitGroup
	var canceledN, ranN atomic.Int64
	waitAll := stepLong(t, "the racing Submits (wg.Wait)")
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			v := vs[g%len(vs)]
			for i := 0; i < per; i++ {
				k := g*per + i
				ctx, cancel := context.WithCancel(bg())
				go func() {
					for j := 0; j < (k*7919)%50; j++ {
						runtime.Gosched()
					}
					cancel()
				}()
				err := v.Submit(ctx, func(*Session) error {
					runs[k].Add(1)
					if k%5 == 0 {
						spin(time.Microsecond)
					}
					return nil
				})
				switch {
				case err == nil:
					ranN.Add(1)
					if runs[k].Load() != 1 {
						t.Errorf("op %d returned nil but ran %d times", k, runs[k].Load())
					}
				case errors.Is(err, context.Canceled):
					canceledN.Add(1)
				default:
					t.Errorf("op %d: %v", k, err)
				}
				cancel()
			}
		}(g)
	}
	wg.Wait()
	waitAll()
	var d, c, x, sub uint64
	waitSync := step(t, "Sync of each session")
	for _, v := range vs {
		v.Sync()
		st := v.FullStats()
		d, c, x, sub = d+st.Dispatched, c+st.Completed, x+st.Canceled, sub+st.Submitted
	}
	waitSync()
	total := 0
	for k := range runs {
		n := runs[k].Load()
		if n > 1 {
			t.Fatalf("op %d ran %d times", k, n)
		}
		total += int(n)
	}
	// A Submit whose ctx ended before its op was queued returns ctx's
	// error too but was never accepted: only queued ones count as
	// canceled, and every accepted op either ran or was canceled.
	if int64(total) != ranN.Load() || d != uint64(total) || c != d ||
		x > uint64(canceledN.Load()) || sub != d+x {
		t.Fatalf("ran %d, Submit nil %d, dispatched %d completed %d, canceled %d (Submit canceled %d), submitted %d",
			total, ranN.Load(), d, c, x, canceledN.Load(), sub)
	}
	t.Logf("%d ran, %d canceled", total, canceledN.Load())
}
