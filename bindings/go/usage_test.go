// Promises: 1, 5

package accel

// The package used as the old VMSession's users use it: a lock held
// around Submit, t.Fatal in an op, a batch bigger than the queue, Close
// racing Close, calls after Runtime.Close. Each test that could hang has
// a watchdog that names the step it is stuck in.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A caller holding a mutex around a.Submit must not deadlock when
// another session's op takes the same mutex: the caller's goroutine only
// waits for its own op, and never runs b's. Both workers are held by ops
// of c1 and c2 when the caller submits, so b's op (queued first) is the
// scheduler's next pick; the two are let go 20 ms later.
func TestSubmitUnderCallersLock(t *testing.T) {
	rt := newTestRuntime(t, 2)
	a, _ := rt.NewVMSession("a")
	c := []*VMSession{}
	for _, id := range []string{"c1", "c2"} {
		v, _ := rt.NewVMSession(id)
		c = append(c, v)
	}
	var mu sync.Mutex
	for i := 0; i < 20; i++ {
		// A fresh b whose ops so far were short (a VM's usual ops), so
		// that any worker, short lane included, may run its next one.
		b, _ := rt.NewVMSession(fmt.Sprintf("b%d", i))
		for j := 0; j < 20; j++ {
			b.Submit(bg(), func(*Session) error { return nil })
		}
		me := goid()
		release := make(chan struct{})
		var started sync.WaitGroup
		started.Add(2)
		for _, v := range c {
			if err := v.SubmitAsync(func(*Session) error { started.Done(); <-release; return nil }, nil); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, "c1's and c2's ops start on both workers", started.Wait)
		var ranOn atomic.Uint64
		bDone := make(chan error, 1)
		mu.Lock()
		if err := b.SubmitAsync(func(*Session) error {
			ranOn.Store(goid())
			mu.Lock()
			mu.Unlock()
			return nil
		}, func(err error) { bDone <- err }); err != nil {
			t.Fatal(err)
		}
		// a has an op queued too (behind b's), as a busy VM does: its
		// Submit joins a queue instead of finding its session idle.
		a.SubmitAsync(func(*Session) error { return nil }, nil)
		time.AfterFunc(20*time.Millisecond, func() { close(release) })
		done := step(t, fmt.Sprintf("round %d: a.Submit under the lock", i))
		if err := a.Submit(bg(), func(*Session) error { return nil }); err != nil {
			t.Fatal(err)
		}
		done()
		mu.Unlock()
		done = step(t, "b's op")
		<-bDone
		done()
		if ranOn.Load() == me {
			t.Fatalf("round %d: b's op ran on a's caller goroutine", i)
		}
		b.Close()
	}
}

// A Submit whose deadline passes while the only worker runs another
// session's long op returns the deadline's error while that op still
// runs, and its f never starts.
func TestSubmitDeadlineWhileOtherSessionRuns(t *testing.T) {
	rt := newUnwatchedRuntime(t, 1) // b's blocked op keeps the only worker
	// a's op is queued: not the direct hand-off, which would run it at
	// once on this goroutine (TestSubmitCtxHandOffWhileOtherSessionRuns).
	rt.setOwnForTest(false)
	a, _ := rt.NewVMSession("a")
	b, _ := rt.NewVMSession("b")
	release, started := make(chan struct{}), make(chan struct{})
	if err := b.SubmitAsync(func(*Session) error {
		close(started)
		<-release
		return nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b's op starts on the only worker", func() { <-started })
	var ran atomic.Bool
	ctx, cancel := context.WithTimeout(bg(), 50*time.Millisecond)
	defer cancel()
	done := step(t, "a.Submit with a 50 ms deadline while b's op holds the worker")
	err := a.Submit(ctx, func(*Session) error { ran.Store(true); return nil })
	done()
	close(release) // b's op ends only now: Submit did not wait for it
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Submit = %v, want context.DeadlineExceeded", err)
	}
	done = step(t, "a.Sync")
	a.Sync()
	done()
	if ran.Load() {
		t.Fatal("f started after its ctx's deadline")
	}
	if st := a.FullStats(); st.Canceled != 1 || st.Dispatched != 0 {
		t.Fatalf("stats: canceled %d dispatched %d, want 1 0", st.Canceled, st.Dispatched)
	}
}

// Cancel while queued behind another session's op: Submit returns
// context.Canceled before that op ends, and f never runs.
func TestSubmitCancelWhileQueued(t *testing.T) {
	rt := newUnwatchedRuntime(t, 1) // b's blocked op keeps the only worker
	rt.setOwnForTest(false)         // queued: as above
	a, _ := rt.NewVMSession("a")
	b, _ := rt.NewVMSession("b")
	release, started := make(chan struct{}), make(chan struct{})
	if err := b.SubmitAsync(func(*Session) error { close(started); <-release; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b's op starts on the only worker", func() { <-started })
	ctx, cancel := context.WithCancel(bg())
	time.AfterFunc(20*time.Millisecond, cancel)
	var ran atomic.Bool
	done := step(t, "Submit canceled while queued")
	err := a.Submit(ctx, func(*Session) error { ran.Store(true); return nil })
	done()
	close(release)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Submit = %v, want context.Canceled", err)
	}
	waitFor(t, "a.Sync after the canceled op", func() { a.Sync() })
	if ran.Load() {
		t.Fatal("f ran after its ctx was canceled")
	}
}

// A batch with more ops than the queue has room for: every op runs (a default
// session of depth 1024 with 2000 ops; depth 4 with 64).
func TestSubmitBatchBiggerThanQueue(t *testing.T) {
	for _, c := range []struct{ depth, n int }{{0, 2000}, {4, 64}} {
		rt := newTestRuntime(t, 2)
		var opts []VMSessionOption
		if c.depth > 0 {
			opts = append(opts, WithQueueDepth(c.depth))
		}
		v, _ := rt.NewVMSession("batch", opts...)
		var ran atomic.Int64
		fs := make([]func(*Session) error, c.n)
		for i := range fs {
			fs[i] = func(*Session) error { ran.Add(1); return nil }
		}
		done := step(t, fmt.Sprintf("SubmitBatch of %d ops, depth %d", c.n, c.depth))
		errs := v.SubmitBatch(bg(), fs)
		done()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("depth %d: op %d: %v", c.depth, i, err)
			}
		}
		if ran.Load() != int64(c.n) {
			t.Fatalf("depth %d: %d of %d ops ran", c.depth, ran.Load(), c.n)
		}
	}
}

// deadlineOnly is a ctx with a deadline whose Done never closes (as a
// user's own Context may be): only the deadline C was given can stop an
// op of it.
type deadlineOnly struct {
	context.Context
	at time.Time
}

func (c deadlineOnly) Deadline() (time.Time, bool) { return c.at, true }

// SubmitBatch gives each op ctx's deadline in C, as Submit does: ops still
// queued when it passes are dropped unstarted by the scheduler and get
// context.DeadlineExceeded, even from a ctx whose Done channel has not
// closed (a Go-side look at ctx.Done() alone let them run).
func TestSubmitBatchCarriesCtxDeadline(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("batch-deadline")
	release := blockWorker(t, v)
	defer release()
	at := time.Now().Add(2 * time.Millisecond)
	ctx := deadlineOnly{Context: context.Background(), at: at}
	var ran atomic.Int32
	fs := make([]func(*Session) error, 3)
	for i := range fs {
		fs[i] = func(*Session) error { ran.Add(1); return nil }
	}
	res := make(chan []error, 1)
	go func() { res <- v.SubmitBatch(ctx, fs) }()
	done := step(t, "batch queued behind the blocked worker")
	waitSubmitted(v, 1+uint64(len(fs)))
	done()
	for time.Now().Before(at.Add(time.Millisecond)) { // the deadline has passed
		time.Sleep(time.Millisecond)
	}
	release()
	done = step(t, "SubmitBatch returns")
	errs := <-res
	done()
	for i, err := range errs {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("op %d: %v, want context.DeadlineExceeded", i, err)
		}
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("%d ops ran after their deadline", n)
	}
}

// SubmitBatch honours ctx while it waits for queue room.
func TestSubmitBatchCtxWhileWaitingForRoom(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("b", WithQueueDepth(4))
	release, started := make(chan struct{}), make(chan struct{})
	if err := v.SubmitAsync(func(*Session) error { close(started); <-release; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the blocking op starts on the only worker", func() { <-started })
	var ran atomic.Int64
	fs := make([]func(*Session) error, 64)
	for i := range fs {
		fs[i] = func(*Session) error { ran.Add(1); return nil }
	}
	ctx, cancel := context.WithTimeout(bg(), 30*time.Millisecond)
	defer cancel()
	done := step(t, "SubmitBatch waiting for room past its ctx's deadline")
	errs := v.SubmitBatch(ctx, fs)
	done()
	close(release)
	waitFor(t, "v.Sync after the expired batch", func() { v.Sync() })
	for i, err := range errs {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("op %d: %v, want context.DeadlineExceeded", i, err)
		}
	}
	if ran.Load() != 0 {
		t.Fatalf("%d ops ran after their ctx's deadline", ran.Load())
	}
}

// SubmitBatch to the op's own session from inside the op would wait for
// itself: ErrDeadlock, as Submit.
func TestSubmitBatchFromOwnOp(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("v")
	var errs []error
	done := step(t, "SubmitBatch from inside an op of its session")
	err := v.Submit(bg(), func(*Session) error {
		errs = v.SubmitBatch(bg(), []func(*Session) error{
			func(*Session) error { return nil }, func(*Session) error { return nil }})
		return nil
	})
	done()
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range errs {
		if !errors.Is(e, ErrDeadlock) {
			t.Fatalf("op %d: %v, want ErrDeadlock", i, e)
		}
	}
}

// runtime.Goexit in f (t.Fatal, t.FailNow): the submitting goroutine
// ends as it would with f run there, the op counts failed, and the
// session and its worker go on (the runtime has one worker).
func TestGoexitInOp(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("v")
	returned, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		v.Submit(bg(), func(*Session) error { runtime.Goexit(); return nil })
		close(returned)
	}()
	done := step(t, "goroutine whose op called Goexit")
	<-exited
	done()
	select {
	case <-returned:
		t.Fatal("Submit returned after f called runtime.Goexit")
	default:
	}
	done = step(t, "Submit after the Goexit")
	if err := v.Submit(bg(), func(*Session) error { return nil }); err != nil {
		t.Fatal(err)
	}
	done()
	got := make(chan error, 1)
	done = step(t, "SubmitAsync whose op calls Goexit")
	v.SubmitAsync(func(*Session) error { runtime.Goexit(); return nil }, func(err error) { got <- err })
	if err := <-got; !errors.Is(err, ErrGoexit) {
		t.Fatalf("async completion got %v", err)
	}
	done()
	done = step(t, "SubmitAsync after the async Goexit")
	v.SubmitAsync(func(*Session) error { return nil }, func(err error) { got <- err })
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	done()
	if d, c, f := v.Stats(); d != 4 || c != 2 || f != 2 {
		t.Fatalf("Stats = %d %d %d, want 4 2 2", d, c, f)
	}
}

// runtime.Goexit in one f of a SubmitBatch: the batch's later ops still
// run, in order, and then SubmitBatch ends its goroutine as Submit would
// (it does not return the batch's errors with an ErrGoexit among them, which
// would swallow a t.Fatal); the session goes on.
func TestGoexitInSubmitBatch(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("v")
	var order []int
	op := func(i int, exit bool) func(*Session) error {
		return func(*Session) error {
			order = append(order, i)
			if exit {
				runtime.Goexit()
			}
			return nil
		}
	}
	returned, exited := make(chan []error, 1), make(chan struct{})
	go func() {
		defer close(exited)
		returned <- v.SubmitBatch(bg(), []func(*Session) error{op(0, false), op(1, true), op(2, false)})
	}()
	done := step(t, "goroutine whose batch op called Goexit")
	<-exited
	done()
	select {
	case errs := <-returned:
		t.Fatalf("SubmitBatch returned %v after an f called runtime.Goexit", errs)
	default:
	}
	if fmt.Sprint(order) != "[0 1 2]" {
		t.Fatalf("ops ran %v, want [0 1 2]", order)
	}
	done = step(t, "Submit after the batch's Goexit")
	if err := v.Submit(bg(), func(*Session) error { return nil }); err != nil {
		t.Fatal(err)
	}
	done()
	if d, c, f := v.Stats(); d != 4 || c != 3 || f != 1 {
		t.Fatalf("Stats = %d %d %d, want 4 3 1", d, c, f)
	}
}

// t.Fatal inside f, as a test of a VM written for the old type does: the
// subtest fails (its goroutine ends), and the session goes on.
func TestFatalInOpFailsOnlyItsTest(t *testing.T) {
	if os.Getenv("ACCEL_TEST_FATAL_CHILD") == "1" {
		rt := newTestRuntime(t, 1)
		v, _ := rt.NewVMSession("v")
		t.Run("fatal", func(t *testing.T) {
			v.Submit(bg(), func(*Session) error { t.Fatal("from inside f"); return nil })
			t.Error("Submit returned after t.Fatal in f")
		})
		if err := v.Submit(bg(), func(*Session) error { return nil }); err != nil {
			t.Fatal(err)
		}
		fmt.Println("SESSION-WENT-ON")
		return
	}
	checkFatalChild(t, "TestFatalInOpFailsOnlyItsTest", "ACCEL_TEST_FATAL_CHILD=1", "from inside f")
}

// checkFatalChild runs test name in a child (env set) whose subtest
// "fatal" calls t.Fatal from inside an op: that subtest fails (exit 1),
// and only it, with msg; no panic, no crash (exit 2); Submit did not
// return in it; the session went on (the child prints SESSION-WENT-ON).
func checkFatalChild(t *testing.T, name, env, msg string) {
	t.Helper()
	out, code := runChild(t, "^"+name+"$", env)
	if code != 1 || !strings.Contains(out, "--- FAIL: "+name+"/fatal") ||
		!strings.Contains(out, msg) || !strings.Contains(out, "SESSION-WENT-ON") ||
		strings.Contains(out, "Submit returned after") {
		t.Fatalf("child run (exit %d):\n%s", code, out)
	}
}

// runChild runs this test binary with env set and returns its output and
// exit status (-1: it did not start, or a signal ended it). Its watchdog
// outlasts the child's own steps', so that a child stuck in one names it.
func runChild(t *testing.T, run string, env ...string) (string, int) {
	t.Helper()
	// The child's own timeout comes first: a hang there panics in the
	// child with its goroutines' stacks, which come back in out, before
	// the parent's watchdog would panic without them.
	cmd := exec.Command(os.Args[0], "-test.run", run, "-test.v", "-test.timeout", "45s")
	cmd.Env = append(os.Environ(), env...)
	done := stepLong(t, "child test binary")
	out, _ := cmd.CombinedOutput()
	done()
	code := -1
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	return string(out), code
}

// Close from inside the session's own op while another goroutine's Close
// (or the runtime's) is draining it returns at once; both finish.
func TestCloseFromOwnOpWhileAnotherCloseDrains(t *testing.T) {
	for _, viaRuntime := range []bool{false, true} {
		rt, err := NewRuntime(RuntimeConfig{Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		v, _ := rt.NewVMSession("v")
		release, started := make(chan struct{}), make(chan struct{})
		inner := make(chan error, 1)
		if err := v.SubmitAsync(func(*Session) error {
			close(started)
			<-release
			inner <- v.Close()
			return nil
		}, nil); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the closing op starts on the only worker", func() { <-started })
		outer := make(chan error, 1)
		go func() {
			if viaRuntime {
				outer <- rt.Close()
			} else {
				outer <- v.Close()
			}
		}()
		time.Sleep(10 * time.Millisecond) // let the outer Close reach its drain
		close(release)
		done := step(t, fmt.Sprintf("Close from inside the op (runtime close: %v)", viaRuntime))
		if err := <-inner; err != nil {
			t.Fatalf("inner Close: %v", err)
		}
		done()
		done = step(t, "the outer Close")
		if err := <-outer; err != nil {
			t.Fatalf("outer Close: %v", err)
		}
		done()
		if !viaRuntime {
			rt.Close()
		}
	}
}

// After Runtime.Close every method of every handle is safe: an error or
// a zero value, no crash, no freed memory read (the ASan run checks the
// last part).
func TestUseAfterRuntimeClose(t *testing.T) {
	rt, err := NewRuntime(RuntimeConfig{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := rt.NewVMSession("v", WithMemoryBudget(1<<20))
	s := v.Session()
	buf, err := s.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	nop := func(*Session) error { return nil }
	checks := []struct {
		name string
		err  error
	}{
		{"Submit", v.Submit(bg(), nop)},
		{"SubmitAsync", v.SubmitAsync(nop, nil)},
		{"SubmitBatch", v.SubmitBatch(bg(), []func(*Session) error{nop})[0]},
		{"Sync", v.Sync()},
		{"SetPriority", v.SetPriority(PriorityHigh)},
		{"Reserve", s.Reserve(10)},
		{"Unreserve", s.Unreserve(10)},
	}
	for _, c := range checks {
		if c.err == nil {
			t.Errorf("%s after Runtime.Close: nil error", c.name)
		}
	}
	if _, err := v.SubmitAsyncBatch([]func(*Session) error{nop}, nil); err == nil {
		t.Error("SubmitAsyncBatch after Runtime.Close: nil error")
	}
	if _, err := s.Alloc(8); err == nil {
		t.Error("Alloc after Runtime.Close: nil error")
	}
	s.Free(buf)
	if v.MemoryUsed() != 0 || s.MemoryUsed() != 0 {
		t.Error("MemoryUsed after Runtime.Close")
	}
	if st := v.FullStats(); !st.Closed || st.ID != "v" {
		t.Errorf("FullStats after Runtime.Close: %+v", st)
	}
	_ = s.Backend()
	_ = s.MemoryBudget()
	_ = s.Sync()
	if err := v.Close(); err != nil {
		t.Errorf("Close after Runtime.Close: %v", err)
	}
	if v.IsAvailable() || !v.IsClosed() {
		t.Error("session reports open after Runtime.Close")
	}
	var sb strings.Builder
	if err := rt.WritePrometheus(&sb); !errors.Is(err, ErrRuntimeClosed) {
		t.Errorf("WritePrometheus after Close: %v", err)
	}
	if _, ok := rt.Lookup("v"); ok || len(rt.Sessions()) != 0 {
		t.Error("Lookup/Sessions after Close")
	}
	if _, err := rt.NewVMSession("w"); !errors.Is(err, ErrRuntimeClosed) {
		t.Errorf("NewVMSession after Close: %v", err)
	}
}

// rssBytes is the process's resident set size now.
func rssBytes(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm")
	}
	var size, rss int64
	fmt.Sscan(string(b), &size, &rss)
	return rss * int64(os.Getpagesize())
}

// Close gives a session's C memory back at once: 100,000 open/Submit/
// Close cycles with no forced GC keep the process's RSS within a few MB
// of where it started, on the way and at the end. Freed only by a
// finalizer, the sessions' C memory (about 40 KB each at depth 1024) grew
// by hundreds of MB within 10,000 cycles; freed on liburcu's thread
// alone, it piled up there by tens of MB (a batch every few ms); freed
// into malloc's per-thread arenas, it stayed resident there. What C's
// malloc has handed out and not got back must stay within a few MB too.
func TestCloseGivesMemoryBack(t *testing.T) {
	if asanEnabled {
		t.Skip("ASan's allocator and quarantine keep freed memory")
	}
	rt := newTestRuntime(t, 1)
	cycle := func() {
		v, err := rt.NewVMSession("cycle")
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Submit(bg(), func(*Session) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2000; i++ { // warm-up: slabs, RCU's threads, the Go heap's first GCs
		cycle()
	}
	n := 100000
	if raceEnabled {
		n = 20000
	}
	heap0, rss0 := cHeapInUse(), rssBytes(t)
	done := step(t, "open/close cycles")
	maxHeap, maxRSS := heap0, rss0
	for i := 0; i < n; i++ {
		cycle()
		if i%1000 == 0 {
			if h := cHeapInUse(); h > maxHeap {
				maxHeap = h
			}
			if r := rssBytes(t); r > maxRSS {
				maxRSS = r
			}
		}
	}
	done()
	// The last sessions' memory goes back after liburcu's grace period, on
	// its thread: give it up to a second.
	heap1 := cHeapInUse()
	for i := 0; i < 100 && heap1-heap0 > 8<<20; i++ {
		time.Sleep(10 * time.Millisecond)
		heap1 = cHeapInUse()
	}
	rss1 := rssBytes(t)
	if rss1 > maxRSS {
		maxRSS = rss1
	}
	t.Logf("C heap in use %d -> %d KB (at most %d KB on the way), RSS %d -> %d MB (at most %d MB on the way)",
		heap0>>10, heap1>>10, maxHeap>>10, rss0>>20, rss1>>20, maxRSS>>20)
	if grew := heap1 - heap0; grew > 8<<20 {
		t.Fatalf("C heap in use grew %d MB over %d open/Submit/Close cycles", grew>>20, n)
	}
	// Under -race the detector's own memory grows with every goroutine
	// and allocation the cycles make: RSS says nothing about C there.
	if grew := maxRSS - rss0; grew > 8<<20 && !raceEnabled {
		t.Fatalf("RSS grew %d MB over %d open/Submit/Close cycles (from %d MB)", grew>>20, n, rss0>>20)
	}
}

// The same vmID twice while open (two chains of one VM type), and ids of
// any length: separate sessions, ID() the caller's string.
func TestSameVMIDTwiceAndLongIDs(t *testing.T) {
	rt := newTestRuntime(t, 1)
	a, err := rt.NewVMSession("evm")
	if err != nil {
		t.Fatal(err)
	}
	b, err := rt.NewVMSession("evm")
	if err != nil {
		t.Fatalf("second session \"evm\": %v", err)
	}
	long := strings.Repeat("x", 300)
	c, err := rt.NewVMSession(long)
	if err != nil {
		t.Fatalf("300-byte id: %v", err)
	}
	nul, err := rt.NewVMSession("a\x00b")
	if err != nil {
		t.Fatalf("id with a NUL: %v", err)
	}
	for _, x := range []struct {
		v  *VMSession
		id string
	}{{a, "evm"}, {b, "evm"}, {c, long}, {nul, "a\x00b"}} {
		if x.v.ID() != x.id {
			t.Errorf("ID() = %q, want %q", x.v.ID(), x.id)
		}
		var ran bool
		if err := x.v.Submit(bg(), func(*Session) error { ran = true; return nil }); err != nil || !ran {
			t.Errorf("%q: Submit = %v, ran %v", x.id, err, ran)
		}
	}
	if w, ok := rt.Lookup("evm"); !ok || (w != a && w != b) {
		t.Error("Lookup(\"evm\")")
	}
	a.Close()
	if w, ok := rt.Lookup("evm"); !ok || w != b {
		t.Error("Lookup(\"evm\") after closing the first")
	}
	if err := b.Submit(bg(), func(*Session) error { return nil }); err != nil {
		t.Errorf("closing one \"evm\" affected the other: %v", err)
	}
}

// Priority() returns what was given, whatever the weight used inside.
func TestPriorityReturnsGiven(t *testing.T) {
	rt := newTestRuntime(t, 1)
	for _, p := range []Priority{PriorityLow, PriorityCritical, 5000, 0} {
		v, err := rt.NewVMSession("p", WithPriority(p))
		if err != nil {
			t.Fatal(err)
		}
		if v.Priority() != p {
			t.Errorf("WithPriority(%d): Priority() = %d", p, v.Priority())
		}
		v.Close()
	}
}

// A backend the host lacks: an unavailable session, as the old type
// (VM code picks its CPU path by IsAvailable).
func TestUnavailableBackend(t *testing.T) {
	rt := newTestRuntime(t, 1)
	backends := []BackendType{BackendMetal, BackendWebGPU}
	if v, err := rt.NewVMSession("probe", WithVMBackend(BackendCUDA)); err == nil && !v.IsAvailable() {
		backends = append(backends, BackendCUDA) // no CUDA device here
	}
	for _, b := range backends {
		v, err := rt.NewVMSession("gpu", WithVMBackend(b))
		if err != nil {
			t.Fatalf("%v: NewVMSession = %v, want an unavailable session", b, err)
		}
		if v.IsAvailable() || v.Session() != nil {
			t.Fatalf("%v: IsAvailable %v, Session %v", b, v.IsAvailable(), v.Session())
		}
		var ran bool
		if err := v.Submit(bg(), func(*Session) error { ran = true; return nil }); !errors.Is(err, ErrNoBackends) || ran {
			t.Fatalf("%v: Submit = %v, ran %v", b, err, ran)
		}
		if d, _, f := v.Stats(); d != 1 || f != 1 {
			t.Fatalf("%v: Stats dispatched %d failed %d, want 1 1", b, d, f)
		}
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
	}
	v, err := rt.NewVMSession("auto", WithVMBackend(BackendAuto))
	if err != nil || !v.IsAvailable() || v.Session().Backend() != BackendCPU {
		t.Fatalf("BackendAuto: %v", err)
	}
}

// DefaultSession survives a Close by anyone, and a user VM named
// "default" is another session.
func TestDefaultSessionSurvivesClose(t *testing.T) {
	s, err := DefaultSession()
	if err != nil {
		t.Fatal(err)
	}
	user, err := NewVMSession("default")
	if err != nil {
		t.Fatalf("user VM named \"default\": %v", err)
	}
	defer user.Close()
	s.Close()
	s2, err := DefaultSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.VMSession().Submit(bg(), func(*Session) error { return nil }); err != nil {
		t.Fatalf("DefaultSession after a Close: %v", err)
	}
	if s2.ID() != "default" {
		t.Errorf("default session's ID %q", s2.ID())
	}
	if err := user.Submit(bg(), func(*Session) error { return nil }); err != nil {
		t.Fatalf("user \"default\" after the default's Close: %v", err)
	}
}

// A panic in f is a *PanicError that errors.Is sees through.
func TestPanicErrorUnwrap(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("v")
	errBoom := errors.New("boom")
	err := v.Submit(bg(), func(*Session) error { panic(errBoom) })
	var pe *PanicError
	if !errors.As(err, &pe) || !errors.Is(err, errBoom) {
		t.Fatalf("Submit = %v, want a *PanicError wrapping boom", err)
	}
	if err := v.Submit(bg(), func(*Session) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

// A panic in an async completion is never swallowed: it ends the program
// as an unrecovered panic in a goroutine would.
func TestCompletionPanicIsRaised(t *testing.T) {
	if os.Getenv("ACCEL_TEST_DONE_PANIC_CHILD") == "1" {
		rt, _ := NewRuntime(RuntimeConfig{Workers: 1})
		v, _ := rt.NewVMSession("v")
		v.SubmitAsync(func(*Session) error { return nil }, func(error) { panic("PANIC-IN-DONE") })
		// The panic ends the process while the host worker is inside the
		// callback; a swallowed one lets Sync return. The sleep only
		// gives a panic raised later still a chance to show.
		v.Sync()
		time.Sleep(3 * time.Second)
		fmt.Println("CHILD-WENT-ON")
		return
	}
	out, code := runChild(t, "^TestCompletionPanicIsRaised$", "ACCEL_TEST_DONE_PANIC_CHILD=1")
	// An unrecovered panic exits with status 2.
	if code != 2 || !strings.Contains(out, "PANIC-IN-DONE") || strings.Contains(out, "CHILD-WENT-ON") {
		t.Fatalf("child run (exit %d):\n%s", code, out)
	}
}

// An f that returns ErrGoexit (passing on a callback's error) has failed
// with that error: Submit and SubmitBatch return it, and the calling
// goroutine goes on; only an f that called runtime.Goexit ends it.
func TestReturnedErrGoexitIsAnError(t *testing.T) {
	for _, own := range []bool{true, false} {
		rt := newTestRuntime(t, 1)
		rt.setOwnForTest(own)
		v, _ := rt.NewVMSession("v")
		got := make(chan []error, 1)
		go func() {
			errs := []error{v.Submit(bg(), func(*Session) error { return ErrGoexit })}
			errs = append(errs, v.SubmitBatch(bg(), []func(*Session) error{
				func(*Session) error { return ErrGoexit },
				func(*Session) error { return nil },
			})...)
			got <- errs
		}()
		done := step(t, fmt.Sprintf("handoff=%v: Submit and SubmitBatch whose f returns ErrGoexit", own))
		errs := <-got // a goroutine ended by Goexit never sends
		done()
		if !errors.Is(errs[0], ErrGoexit) || !errors.Is(errs[1], ErrGoexit) || errs[2] != nil {
			t.Fatalf("handoff=%v: errors %v", own, errs)
		}
	}
}
