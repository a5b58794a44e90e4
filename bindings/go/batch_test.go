// Promises: 1, 2, 5

package accel

// Batcher as its users would break it: many goroutines' items with their
// own ctx (canceled, expired) each getting exactly its own result; FIFO
// per submitter; batch sizes never above the max and above 1 under load
// (a gate holds fn's first call while items queue: no timing); fn that
// panics or calls runtime.Goexit / t.Fatal; fn that submits to another
// session and to another VM's Batcher; a mutex held around Submit; Close
// racing Submit; every method after Close; bad configuration. Each wait
// has a step watchdog.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// An item: who submitted it and its place in that submitter's order.
type bItem struct {
	sub, seq int
	gate     chan struct{} // fn waits on it (nil: none)
	panicky  bool
	goexit   bool
}

// itemErr is the error fn writes for it: its own.
func itemErr(x bItem) error {
	if x.seq%3 == 0 {
		return fmt.Errorf("item %d/%d", x.sub, x.seq)
	}
	return nil
}

// bProbe records fn's calls.
type bProbe struct {
	mu      sync.Mutex
	sizes   []int
	seen    map[[2]int]int // item -> times fn got it
	last    map[int]int    // submitter -> last seq fn got
	order   []string       // FIFO violations
	goids   map[uint64]bool
	started chan struct{} // closed by the first call
	once    sync.Once
}

func newProbe() *bProbe {
	return &bProbe{seen: map[[2]int]int{}, last: map[int]int{}, goids: map[uint64]bool{},
		started: make(chan struct{})}
}

func (p *bProbe) fn(s *Session, items []bItem, errs []error) {
	p.once.Do(func() { close(p.started) })
	p.mu.Lock()
	p.sizes = append(p.sizes, len(items))
	p.goids[goid()] = true
	for _, x := range items {
		p.seen[[2]int{x.sub, x.seq}]++
		if l, ok := p.last[x.sub]; ok && x.seq <= l {
			p.order = append(p.order, fmt.Sprintf("submitter %d: %d after %d", x.sub, x.seq, l))
		}
		p.last[x.sub] = x.seq
	}
	p.mu.Unlock()
	for i, x := range items {
		if x.gate != nil {
			<-x.gate
		}
		if x.panicky {
			panic(fmt.Sprintf("bad item %d", x.seq))
		}
		if x.goexit {
			runtime.Goexit()
		}
		errs[i] = itemErr(x)
	}
}

// heldBatcher opens a VMSession id on a runtime of `workers` host workers,
// gives it a Batcher of the probe's fn (WithMaxBatch(max)) and holds its
// first batch (hold): the session's items queue until release is closed.
func heldBatcher(t *testing.T, workers int, id string, max int) (*VMSession, *bProbe, *Batcher[bItem], chan struct{}) {
	t.Helper()
	rt := newTestRuntime(t, workers)
	v, err := rt.NewVMSession(id)
	if err != nil {
		t.Fatal(err)
	}
	p := newProbe()
	b, err := NewBatcher(v, p.fn, WithMaxBatch(max))
	if err != nil {
		t.Fatal(err)
	}
	return v, p, b, hold(t, b, p)
}

// hold submits a gate item (asynchronously) and waits until fn holds it:
// the session's items queue behind it until release is closed.
func hold(t *testing.T, b *Batcher[bItem], p *bProbe) (release chan struct{}) {
	t.Helper()
	release = make(chan struct{})
	if err := b.SubmitAsync(bItem{sub: -1, seq: 1, gate: release}, nil); err != nil {
		t.Fatal(err)
	}
	done := step(t, "fn holds the gate item")
	<-p.started
	done()
	return release
}

// N goroutines x items, each with a ctx of its own: some canceled while
// queued, some past their deadline while queued, the rest run. Each
// Submit gets exactly its own result; no canceled or expired item
// reaches fn; every other item reaches it once.
func TestBatchEachItemGetsItsOwnResult(t *testing.T) {
	v, p, b, release := heldBatcher(t, 2, "votes", 16)
	const subs, per = 8, 24
	type res struct {
		x    bItem
		kind int // 0 plain, 1 canceled, 2 expired
		err  error
	}
	out := make(chan res, subs*per)
	var queued sync.WaitGroup // the canceled and expired ones returned
	var wg sync.WaitGroup
	for s := 0; s < subs; s++ {
		for i := 0; i < per; i++ {
			x := bItem{sub: s, seq: i}
			kind := i % 4 // 0, 3: plain; 1: canceled; 2: expired
			if kind == 3 {
				kind = 0
			}
			wg.Add(1)
			if kind != 0 {
				queued.Add(1)
			}
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithCancel(bg())
				defer cancel()
				switch kind {
				case 1:
					go func() { time.Sleep(time.Millisecond); cancel() }()
				case 2:
					ctx, cancel = context.WithTimeout(bg(), time.Millisecond)
					defer cancel()
				}
				err := b.Submit(ctx, x)
				if kind != 0 {
					queued.Done()
				}
				out <- res{x, kind, err}
			}()
		}
	}
	// Every canceled and expired Submit returns while fn still holds the
	// gate: their items were queued (or refused) before any batch formed.
	done := step(t, "the canceled and expired Submits return")
	queued.Wait()
	done()
	close(release)
	done = stepLong(t, "every Submit returns")
	wg.Wait()
	done()
	close(out)
	ran, bad := 0, 0
	for r := range out {
		key := [2]int{r.x.sub, r.x.seq}
		p.mu.Lock()
		n := p.seen[key]
		p.mu.Unlock()
		switch r.kind {
		case 1:
			if !errors.Is(r.err, context.Canceled) || n != 0 {
				t.Errorf("canceled item %v: err %v, fn got it %d times", key, r.err, n)
			}
		case 2:
			if !errors.Is(r.err, context.DeadlineExceeded) || n != 0 {
				t.Errorf("expired item %v: err %v, fn got it %d times", key, r.err, n)
			}
		default:
			want := itemErr(r.x)
			if n != 1 || fmt.Sprint(r.err) != fmt.Sprint(want) {
				t.Errorf("item %v: err %v, want %v; fn got it %d times", key, r.err, want, n)
			}
			ran++
			if want != nil {
				bad++
			}
		}
	}
	if ran != subs*per/2 {
		t.Errorf("%d items ran, want %d", ran, subs*per/2)
	}
	if d, c, f := v.Stats(); d != uint64(ran+1) || c+f != d || f != uint64(bad) {
		t.Errorf("Stats = %d %d %d with %d items run", d, c, f, ran)
	}
}

// Under load batches are above 1 and never above the max; each
// submitter's items reach fn in its order (SubmitAsync: many in flight);
// fn runs on a worker goroutine, never a submitter's; the session's plain
// ops between the items run in their place.
func TestBatchFIFOPerSubmitterSizesWithinMax(t *testing.T) {
	for _, max := range []int{1, 8, 256} {
		t.Run(fmt.Sprint(max), func(t *testing.T) {
			rt := newTestRuntime(t, 1)
			v, _ := rt.NewVMSession("gossip", WithQueueDepth(4096))
			p := newProbe()
			b, err := NewBatcher(v, p.fn, WithMaxBatch(max))
			if err != nil {
				t.Fatal(err)
			}
			release := hold(t, b, p)
			const subs, per = 4, 300
			var wg, subGoids sync.WaitGroup
			var mu sync.Mutex
			goids := map[uint64]bool{}
			var plainAt []int // the item count fn had seen when each plain op ran
			var got atomic.Int64
			for s := 0; s < subs; s++ {
				wg.Add(per)
				subGoids.Add(1)
				go func(s int) {
					mu.Lock()
					goids[goid()] = true
					mu.Unlock()
					subGoids.Done()
					for i := 0; i < per; i++ {
						i := i
						if err := b.SubmitAsync(bItem{sub: s, seq: i}, func(err error) {
							if fmt.Sprint(err) != fmt.Sprint(itemErr(bItem{sub: s, seq: i})) {
								t.Errorf("item %d/%d: %v", s, i, err)
							}
							got.Add(1)
							wg.Done()
						}); err != nil {
							t.Errorf("SubmitAsync: %v", err)
							wg.Done()
						}
						if s == 0 && i%100 == 50 {
							wg.Add(1)
							v.SubmitAsync(func(*Session) error {
								p.mu.Lock()
								plainAt = append(plainAt, len(p.seen))
								p.mu.Unlock()
								return nil
							}, func(error) { wg.Done() })
						}
					}
				}(s)
			}
			subGoids.Wait()
			close(release)
			done := stepLong(t, "every item's completion")
			wg.Wait()
			done()
			p.mu.Lock()
			defer p.mu.Unlock()
			for _, o := range p.order {
				t.Error("FIFO: " + o)
			}
			sum, big := 0, 0
			for _, n := range p.sizes {
				sum += n
				if n > max {
					t.Errorf("a batch of %d items, max %d", n, max)
				}
				if n > big {
					big = n
				}
			}
			if sum != subs*per+1 || got.Load() != subs*per {
				t.Errorf("fn got %d items, %d completions, want %d", sum, got.Load(), subs*per)
			}
			if max > 1 && big < 2 {
				t.Errorf("batches %v: none above 1 with %d items queued", p.sizes, subs*per)
			}
			for g := range p.goids {
				if goids[g] {
					t.Errorf("fn ran on a submitter's goroutine")
				}
			}
			if len(plainAt) != 3 {
				t.Errorf("plain ops ran %d times, want 3", len(plainAt))
			}
			t.Logf("max %d: %d batches, largest %d", max, len(p.sizes), big)
		})
	}
}

// A panic in fn fails every item of its batch with one *PanicError; the
// session and the worker go on.
func TestBatchPanicFailsItsBatch(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("v")
	p := newProbe()
	b, _ := NewBatcher(v, p.fn)
	release := hold(t, b, p)
	errs := make([]error, 5)
	var wg sync.WaitGroup
	wg.Add(5)
	for i := 0; i < 5; i++ {
		i := i
		b.SubmitAsync(bItem{sub: 1, seq: i, panicky: i == 2}, func(err error) { errs[i] = err; wg.Done() })
	}
	close(release)
	done := step(t, "the panicking batch's completions")
	wg.Wait()
	done()
	var pe *PanicError
	for i, err := range errs {
		if !errors.As(err, &pe) || fmt.Sprint(pe.Value) != "bad item 2" {
			t.Errorf("item %d: %v, want the batch's *PanicError", i, err)
		}
	}
	done = step(t, "Submit after the panic")
	if err := b.Submit(bg(), bItem{sub: 2, seq: 1}); err != nil {
		t.Fatal(err)
	}
	if err := b.Submit(bg(), bItem{sub: 2, seq: 3}); err == nil || err.Error() != "item 2/3" {
		t.Fatalf("Submit: %v, want item 2/3", err)
	}
	done()
}

// runtime.Goexit in fn: every item of the batch fails; each synchronous
// submitter's goroutine ends without its Submit returning (as with f),
// async completions get ErrGoexit; the session goes on, also the ops
// queued in the same visit after the batch.
func TestBatchGoexitInFn(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("v")
	p := newProbe()
	b, _ := NewBatcher(v, p.fn, WithMaxBatch(4))
	release := hold(t, b, p)
	var exited, returned atomic.Int32
	var subs sync.WaitGroup
	var asyncErr error
	var async sync.WaitGroup
	async.Add(1)
	b.SubmitAsync(bItem{sub: 1, seq: 1, goexit: true}, func(err error) { asyncErr = err; async.Done() })
	for i := 0; i < 3; i++ {
		subs.Add(1)
		go func(i int) {
			defer subs.Done()
			defer exited.Add(1)
			b.Submit(bg(), bItem{sub: 2 + i, seq: 1})
			returned.Add(1)
		}(i)
	}
	// After the four of the Goexit batch: a batch that runs.
	ok := make(chan error, 1)
	waitFor(t, "the four submitters' items are queued", func() {
		for v.FullStats().Queued < 4 {
			runtime.Gosched()
		}
	})
	b.SubmitAsync(bItem{sub: 9, seq: 1}, func(err error) { ok <- err })
	close(release)
	done := step(t, "the Goexit batch's submitters end")
	subs.Wait()
	async.Wait()
	done()
	if returned.Load() != 0 || exited.Load() != 3 {
		t.Fatalf("%d Submits returned, %d goroutines ended", returned.Load(), exited.Load())
	}
	if !errors.Is(asyncErr, ErrGoexit) {
		t.Fatalf("async completion got %v", asyncErr)
	}
	done = step(t, "the batch after the Goexit")
	if err := <-ok; err != nil {
		t.Fatal(err)
	}
	if err := b.Submit(bg(), bItem{sub: 9, seq: 2}); err != nil {
		t.Fatal(err)
	}
	done()
	if d, c, f := v.Stats(); d != 7 || c != 3 || f != 4 {
		t.Fatalf("Stats = %d %d %d, want 7 3 4", d, c, f)
	}
}

// t.Fatal inside fn, as a VM's test does: the subtest fails (its
// goroutine ends), nothing crashes, and the session goes on.
func TestBatchFatalInFnFailsOnlyItsTest(t *testing.T) {
	if os.Getenv("ACCEL_TEST_BATCH_FATAL_CHILD") == "1" {
		rt := newTestRuntime(t, 1)
		v, _ := rt.NewVMSession("v")
		var tt *testing.T
		b, _ := NewBatcher(v, func(s *Session, items []int, errs []error) {
			if items[0] == 1 {
				tt.Fatal("from inside fn")
			}
		})
		t.Run("fatal", func(t *testing.T) {
			tt = t
			b.Submit(bg(), 1)
			t.Error("Submit returned after t.Fatal in fn")
		})
		if err := b.Submit(bg(), 2); err != nil {
			t.Fatal(err)
		}
		fmt.Println("SESSION-WENT-ON")
		return
	}
	checkFatalChild(t, "TestBatchFatalInFnFailsOnlyItsTest", "ACCEL_TEST_BATCH_FATAL_CHILD=1", "from inside fn")
}

// fn submits to another session and to another VM's Batcher (nested),
// with one worker: the waits count the worker blocked and another host worker
// runs them. Submits to its own session from fn get ErrDeadlock.
func TestBatchNestedSubmit(t *testing.T) {
	rt := newTestRuntime(t, 1)
	a, _ := rt.NewVMSession("a")
	other, _ := rt.NewVMSession("other")
	c, _ := rt.NewVMSession("c")
	cb, err := NewBatcher(c, func(s *Session, items []int, errs []error) {
		for i, x := range items {
			if x < 0 {
				errs[i] = fmt.Errorf("c got %d", x)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	var ab *Batcher[int]
	ab, err = NewBatcher(a, func(s *Session, items []int, errs []error) {
		if s.VMSession() != a {
			errs[0] = errors.New("fn got another session's *Session")
			return
		}
		for i, x := range items {
			if err := other.Submit(bg(), func(*Session) error { return nil }); err != nil {
				errs[i] = fmt.Errorf("nested Submit: %w", err)
				continue
			}
			if err := cb.Submit(bg(), -x); err == nil || err.Error() != fmt.Sprintf("c got %d", -x) {
				errs[i] = fmt.Errorf("nested Batcher.Submit: %v", err)
				continue
			}
			if err := ab.Submit(bg(), x); !errors.Is(err, ErrDeadlock) {
				errs[i] = fmt.Errorf("own Batcher from fn: %v, want ErrDeadlock", err)
				continue
			}
			if err := a.Submit(bg(), func(*Session) error { return nil }); !errors.Is(err, ErrDeadlock) {
				errs[i] = fmt.Errorf("own session from fn: %v, want ErrDeadlock", err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 1; i <= 10; i++ {
				if err := ab.Submit(bg(), g*100+i); err != nil {
					t.Error(err)
				}
			}
		}(g)
	}
	done := stepLong(t, "nested submits from fn")
	wg.Wait()
	done()
	// Submit from inside an op of a: ErrDeadlock, fn not called.
	var inOp error
	a.Submit(bg(), func(*Session) error { inOp = ab.Submit(bg(), 5); return nil })
	if !errors.Is(inOp, ErrDeadlock) {
		t.Fatalf("Batcher.Submit from inside an op of its session: %v", inOp)
	}
}

// A caller holding a mutex around Batcher.Submit while another session's
// op, queued first, takes the same mutex (one worker): the caller's
// goroutine runs nothing but waits for its item, which another host worker
// runs once the monitor counts the blocked one; nothing deadlocks.
func TestBatchSubmitUnderCallersLock(t *testing.T) {
	rt := newTestRuntime(t, 1)
	a, _ := rt.NewVMSession("a")
	o, _ := rt.NewVMSession("o")
	me := goid()
	var ranOn atomic.Uint64
	b, _ := NewBatcher(a, func(s *Session, items []int, errs []error) { ranOn.Store(goid()) })
	var mu sync.Mutex
	for i := 0; i < 10; i++ {
		mu.Lock()
		started, finished := make(chan struct{}), make(chan struct{})
		o.SubmitAsync(func(*Session) error { close(started); mu.Lock(); mu.Unlock(); return nil },
			func(error) { close(finished) })
		done := step(t, fmt.Sprintf("round %d: o's op starts", i))
		<-started
		done()
		done = step(t, fmt.Sprintf("round %d: Batcher.Submit under the caller's lock", i))
		err := b.Submit(bg(), i)
		done()
		mu.Unlock()
		done = step(t, fmt.Sprintf("round %d: o's op ends", i))
		<-finished
		done()
		if err != nil {
			t.Fatal(err)
		}
		if ranOn.Load() == me {
			t.Fatal("fn ran on the caller's goroutine")
		}
	}
}

// Close racing Submit and SubmitAsync: each item either reaches fn once
// and gets fn's result, or is refused with ErrSessionClosed and never
// reaches fn; Close returns after every accepted item ran. After Close
// every method answers ErrSessionClosed.
func TestBatchCloseRacesSubmit(t *testing.T) {
	rt := newTestRuntime(t, 2)
	for round := 0; round < 20; round++ {
		v, _ := rt.NewVMSession("v")
		p := newProbe()
		b, _ := NewBatcher(v, p.fn, WithMaxBatch(8))
		var wg sync.WaitGroup
		var accepted, refused, completions atomic.Int64
		for s := 0; s < 4; s++ {
			wg.Add(1)
			go func(s int) {
				defer wg.Done()
				for i := 0; i < 50; i++ {
					x := bItem{sub: s, seq: i}
					var err error
					if i%2 == 0 {
						err = b.Submit(bg(), x)
						if err == nil || !errors.Is(err, ErrSessionClosed) {
							if fmt.Sprint(err) != fmt.Sprint(itemErr(x)) {
								t.Errorf("item %v: %v", x, err)
							}
							accepted.Add(1)
							completions.Add(1)
							continue
						}
					} else {
						err = b.SubmitAsync(x, func(err error) {
							if fmt.Sprint(err) != fmt.Sprint(itemErr(x)) {
								t.Errorf("async item %v: %v", x, err)
							}
							completions.Add(1)
						})
						if err == nil {
							accepted.Add(1)
							continue
						}
					}
					if !errors.Is(err, ErrSessionClosed) {
						t.Errorf("item %v: %v", x, err)
					}
					refused.Add(1)
				}
			}(s)
		}
		runtime.Gosched()
		done := step(t, "Close racing the submitters")
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
		ranAtClose := 0
		p.mu.Lock()
		for _, n := range p.seen {
			ranAtClose += n
		}
		p.mu.Unlock()
		wg.Wait()
		done()
		p.mu.Lock()
		total := 0
		for k, n := range p.seen {
			if n != 1 {
				t.Errorf("item %v reached fn %d times", k, n)
			}
			total += n
		}
		p.mu.Unlock()
		if int64(total) != accepted.Load() || completions.Load() != accepted.Load() ||
			accepted.Load()+refused.Load() != 200 || ranAtClose != total {
			t.Fatalf("round %d: fn got %d items (%d when Close returned), %d accepted, %d completed, %d refused",
				round, total, ranAtClose, accepted.Load(), completions.Load(), refused.Load())
		}
		// Every method after Close.
		if err := b.Submit(bg(), bItem{}); !errors.Is(err, ErrSessionClosed) {
			t.Fatalf("Submit after Close: %v", err)
		}
		if err := b.SubmitAsync(bItem{}, func(error) { t.Error("done called") }); !errors.Is(err, ErrSessionClosed) {
			t.Fatalf("SubmitAsync after Close: %v", err)
		}
		if _, err := NewBatcher(v, p.fn); !errors.Is(err, ErrSessionClosed) {
			t.Fatalf("NewBatcher after Close: %v", err)
		}
	}
}

// A close that cancels (ACCEL_CLOSE_CANCEL, begun from inside fn)
// completes each queued item with ErrSessionClosed exactly once, unrun.
func TestBatchCloseCancelCompletesQueuedItems(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("v")
	var ran atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{})
	b, _ := NewBatcher(v, func(s *Session, items []int, errs []error) {
		if items[0] == 0 {
			close(started)
			<-release
			closeCancelForTest(v)
			return
		}
		ran.Add(int32(len(items)))
	})
	gate := make(chan error, 1)
	if err := b.SubmitAsync(0, func(err error) { gate <- err }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "fn's first batch starts", func() { <-started })
	var calls [20]atomic.Int32
	var errs [20]error
	var wg sync.WaitGroup
	wg.Add(20)
	for i := 0; i < 20; i++ {
		i := i
		if err := b.SubmitAsync(i+1, func(err error) { errs[i] = err; calls[i].Add(1); wg.Done() }); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	done := step(t, "the canceled items' completions")
	wg.Wait()
	done()
	for i := range errs {
		if !errors.Is(errs[i], ErrSessionClosed) || calls[i].Load() != 1 {
			t.Errorf("item %d: %v, %d calls", i+1, errs[i], calls[i].Load())
		}
	}
	if ran.Load() != 0 {
		t.Errorf("fn got %d canceled items", ran.Load())
	}
	var gErr error
	waitFor(t, "the gate item completes", func() { gErr = <-gate })
	if gErr != nil {
		t.Fatal(gErr)
	}
}

// Bad configuration changes nothing.
func TestBatchBadConfiguration(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("v")
	fn := func(*Session, []int, []error) {}
	for _, c := range []struct {
		v    *VMSession
		fn   func(*Session, []int, []error)
		opts []BatchOption
		what string
	}{
		{nil, fn, nil, "nil VMSession"},
		{v, nil, nil, "nil fn"},
		{v, fn, []BatchOption{WithMaxBatch(0)}, "max 0"},
		{v, fn, []BatchOption{WithMaxBatch(257)}, "max 257"},
		{v, fn, []BatchOption{WithMaxBatch(-1)}, "max -1"},
		{v, fn, []BatchOption{WithMaxDelay(-time.Millisecond)}, "a negative delay"},
		{v, fn, []BatchOption{WithMaxDelay(time.Second + 1)}, "a delay over a second"},
		{v, fn, []BatchOption{WithBatchCost(time.Millisecond, 0)}, "a cost without a delay"},
		{v, fn, []BatchOption{WithMaxDelay(time.Millisecond), WithBatchCost(-1, 0)}, "a negative cost"},
	} {
		if b, err := NewBatcher(c.v, c.fn, c.opts...); b != nil || !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v", c.what, err)
		}
	}
	// Nothing changed: v's ops run one by one, and v takes a Batcher.
	if err := v.Submit(bg(), func(*Session) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if st := v.FullStats(); st.Dispatched != 1 {
		t.Fatalf("dispatched %d", st.Dispatched)
	}
	b, err := NewBatcher(v, fn, WithMaxBatch(256))
	if err != nil || b == nil {
		t.Fatal(err)
	}
	if _, err := NewBatcher(v, fn); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a second Batcher: %v", err)
	}
	if err := b.Submit(bg(), 1); err != nil {
		t.Fatal(err)
	}
	var zero Batcher[int]
	var nilB *Batcher[int]
	if zero.Submit(bg(), 1) != ErrInvalidArgument || nilB.SubmitAsync(1, nil) != ErrInvalidArgument {
		t.Fatal("a Batcher not made by NewBatcher")
	}
	un, _ := rt.NewVMSession("gpu", WithVMBackend(BackendMetal))
	if _, err := NewBatcher(un, fn); !errors.Is(err, ErrNoBackends) {
		t.Fatalf("an unavailable session: %v", err)
	}
}

// More items than the queue holds: Submit waits for room (with and
// without a ctx that can end) and every item runs once; SubmitAsync
// does not wait: ErrQueueFull, its item not queued.
func TestBatchMoreItemsThanQueueDepth(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("v", WithQueueDepth(8))
	p := newProbe()
	b, _ := NewBatcher(v, p.fn, WithMaxBatch(32))
	release := hold(t, b, p)
	full := 0
	for i := 0; i < 16 && full == 0; i++ {
		if err := b.SubmitAsync(bItem{sub: 100, seq: i + 1}, nil); errors.Is(err, ErrQueueFull) {
			full = i + 1
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if full == 0 {
		t.Fatal("SubmitAsync never found the queue of 8 full")
	}
	var wg sync.WaitGroup
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			ctx := bg()
			if g%2 == 1 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(bg())
				defer cancel()
			}
			x := bItem{sub: g, seq: 1}
			if err := b.Submit(ctx, x); fmt.Sprint(err) != fmt.Sprint(itemErr(x)) {
				t.Errorf("item %d: %v", g, err)
			}
		}(g)
	}
	close(release)
	done := stepLong(t, "64 Submits through a queue of 8")
	wg.Wait()
	done()
	p.mu.Lock()
	defer p.mu.Unlock()
	for g := 0; g < 64; g++ {
		if n := p.seen[[2]int{g, 1}]; n != 1 {
			t.Errorf("item %d reached fn %d times", g, n)
		}
	}
	if n := p.seen[[2]int{100, full}]; n != 0 {
		t.Errorf("the refused async item reached fn %d times", n)
	}
}

// WithMaxDelay holds the session back to fill a batch: an item queued
// alone waits (the worker's visit of the session runs no batch of one),
// and the batch forms when the max is queued; a lone item goes when the
// delay passes (the runtime's timer releases it: the watchdog names the
// step if none does); an item with a deadline goes by its deadline less
// the batch's cost (WithBatchCost), long before the delay, and so runs in
// time. Planted (the delay not passed to C), the first step runs a batch
// of one and a batch of three; without the cost, the deadline step
// expires its item.
func TestBatchHoldBack(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("held")
	p := newProbe()
	b, err := NewBatcher(v, p.fn, WithMaxBatch(4), WithMaxDelay(time.Second),
		WithBatchCost(200*time.Millisecond, 0))
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 8)
	done := stepWithin(t, "an item alone, then 3 more: one batch of 4", 20*time.Second)
	if err := b.SubmitAsync(bItem{sub: 1, seq: 1}, func(err error) { res <- err }); err != nil {
		t.Fatal(err)
	}
	// Until a worker has visited the session: without the hold that visit
	// would have run the item, alone.
	for v.FullStats().Visits == 0 {
		time.Sleep(time.Millisecond)
	}
	for i := 2; i <= 4; i++ {
		if err := b.SubmitAsync(bItem{sub: 1, seq: i}, func(err error) { res <- err }); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 4; i++ {
		<-res
	}
	done()
	p.mu.Lock()
	sizes := append([]int(nil), p.sizes...)
	p.mu.Unlock()
	if len(sizes) != 1 || sizes[0] != 4 {
		t.Fatalf("batches %v, want one of 4 (held back until it filled)", sizes)
	}
	// A deadline 600 ms out with a cost of 200 ms: released at 400 ms, not
	// at the delay (1 s), so the item runs before its deadline.
	done = stepWithin(t, "an item with a deadline: released by it", 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	if err := b.Submit(ctx, bItem{sub: 2, seq: 1}); err != nil {
		t.Fatalf("an item held past its deadline less the cost: %v", err)
	}
	done()
}

// A lone item of a Batcher with a short delay is released by the
// runtime's timer: Submit returns (the watchdog names the step if not).
func TestBatchHoldReleasedByTheDelay(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("held")
	p := newProbe()
	b, err := NewBatcher(v, p.fn, WithMaxBatch(8), WithMaxDelay(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	done := stepWithin(t, "a lone item, released by the delay", 20*time.Second)
	if err := b.Submit(bg(), bItem{sub: 1, seq: 1}); err != nil {
		t.Fatal(err)
	}
	done()
	// The C counters of a host-run batch are bumped at its visit's end
	// (accel_host_visit_end), after the items completed: wait for it.
	done = step(t, "the batch counted at its visit's end")
	n, held := v.cBatchForTest()
	for n == 0 {
		runtime.Gosched()
		n, held = v.cBatchForTest()
	}
	done()
	if n != 1 || held <= 0 {
		t.Fatalf("batches %d, held %v: want one batch, held back", n, held)
	}
}

// deadlineOpenDone is a ctx whose deadline passes while its Done channel
// (not nil, unlike deadlineOnly's) never closes: only the package's own look at the deadline, as the batch is
// handed to fn, can stop an item of it (its submitter never reacts).
type deadlineOpenDone struct {
	context.Context
	dl   time.Time
	done chan struct{}
}

func (c deadlineOpenDone) Deadline() (time.Time, bool) { return c.dl, true }
func (c deadlineOpenDone) Done() <-chan struct{}       { return c.done }
func (c deadlineOpenDone) Err() error {
	if time.Now().Before(c.dl) {
		return nil
	}
	return context.DeadlineExceeded
}

// An item whose deadline passes after C formed its batch, while an op
// ahead of it in the same batch runs, never reaches fn: it completes with
// context.DeadlineExceeded (fn gets no item after its ctx ended, as f).
// If the machine is so slow that the batch forms after the deadline, C
// leaves the item out instead: the same result.
func TestBatchItemPastDeadlineWhenHandedOutNeverReachesFn(t *testing.T) {
	v, p, b, release := heldBatcher(t, 1, "v", 8)
	ctx := deadlineOpenDone{Context: bg(), dl: time.Now().Add(300 * time.Millisecond),
		done: make(chan struct{})}
	slept := make(chan error, 1)
	// Queued first: the op ahead of the item in the next batch, which
	// runs until the item's deadline has passed.
	if err := v.SubmitAsync(func(*Session) error {
		time.Sleep(time.Until(ctx.dl) + 5*time.Millisecond)
		return nil
	}, func(err error) { slept <- err }); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- b.Submit(ctx, bItem{sub: 7, seq: 1}) }()
	done := step(t, "the item is queued behind the sleeping op")
	for v.FullStats().Queued < 2 {
		time.Sleep(time.Millisecond)
	}
	done()
	close(release)
	done = step(t, "the item's Submit returns")
	err := <-got
	done()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Submit: %v, want context.DeadlineExceeded", err)
	}
	var sErr error
	waitFor(t, "the op ahead completes", func() { sErr = <-slept })
	if sErr != nil {
		t.Errorf("the op ahead: %v", sErr)
	}
	p.mu.Lock()
	n := p.seen[[2]int{7, 1}]
	p.mu.Unlock()
	if n != 0 {
		t.Errorf("fn got the item %d times after its deadline", n)
	}
}

// Each item's outcome reaches C in its own op's place: a visit that hands
// out a plain op ahead of the batch's items gives C one status per op, a
// failed item's failure on that item's op, so the C counters agree with
// the package's (a failure written at the item's index within the batch
// instead lands on the plain op's slot, failed already, and one failure
// goes uncounted).
func TestBatchItemStatusesReachTheirOps(t *testing.T) {
	v, _, b, release := heldBatcher(t, 1, "v", 8)
	plain := make(chan error, 1)
	go func() {
		plain <- v.Submit(bg(), func(*Session) error { return errors.New("plain op fails") })
	}()
	done := step(t, "the plain op is queued")
	for v.FullStats().Queued < 1 {
		time.Sleep(time.Millisecond)
	}
	done()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for k, seq := range []int{0, 1, 3} { // itemErr: 0 and 3 fail, 1 succeeds
		k := k
		wg.Add(1)
		if err := b.SubmitAsync(bItem{sub: 9, seq: seq}, func(err error) { errs[k] = err; wg.Done() }); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	done = step(t, "the plain op and the items complete")
	perr := <-plain
	wg.Wait()
	done()
	if perr == nil || errs[0] == nil || errs[1] != nil || errs[2] == nil {
		t.Fatalf("results: plain %v, items %v", perr, errs)
	}
	// The gate item and item 1 succeeded; the plain op, items 0 and 3 failed.
	done = step(t, "the C counters settle")
	var completed, failed uint64
	for {
		completed, failed = v.cRanForTest()
		if completed+failed >= 5 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	done()
	if completed != 2 || failed != 3 {
		t.Errorf("C counters: completed %d, failed %d; want 2 and 3", completed, failed)
	}
}
