// Promises: 7

package accel

// Ops that block (compensate.go): an f that waits in Go, on a channel,
// time.Sleep, a nested Submit or a Sync of another session, never stalls
// another session. The waits the binding cannot see are counted by the C
// runtime's monitor, which watches the host workers
// (runtime/compensate.c). Each test asserts an order (the quick op
// completes while the blockers are still inside f), never a time; a
// watchdog names the step a test is stuck in. With -tags accel_plant,
// ACCEL_TEST_NOGROW=1 plants the bug (no host worker is ever added for a
// blocked one): each of these tests then hangs and its watchdog fails it;
// ACCEL_TEST_NOYIELD=1 (host workers never yield their P) fails the yield's.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// monitorTick is the C monitor's tick these tests' runtimes have
// (block_detect_ns 0: include/accel/accel.h's default, 1 ms).
const monitorTick = time.Millisecond

// compLimit is the watchdog's limit (stepWithin) for these tests' steps:
// 20 s, as they hold the only worker with waits the monitor must find.
const compLimit = 20 * time.Second

// compCases runs body with the process's GOMAXPROCS and with 1 (set
// before the runtime is made: its helper workers follow it).
func compCases(t *testing.T, body func(t *testing.T)) {
	plantBugs(t)
	t.Run("default", body)
	t.Run("GOMAXPROCS=1", func(t *testing.T) {
		old := runtime.GOMAXPROCS(1)
		defer runtime.GOMAXPROCS(old)
		body(t)
	})
}

// quickOp submits an empty op to v and waits for it under a watchdog
// named step.
func quickOp(t *testing.T, v *VMSession, step string) {
	t.Helper()
	done := stepWithin(t, step, compLimit)
	if err := v.Submit(queued(t), func(*Session) error { return nil }); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	done()
}

// queued is a ctx that can end (a Submit with it waits for ctx too); on a
// runtime of newQueuedRuntime the Submit always goes through the queue to
// a host worker (never the caller's own hand-off).
func queued(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

// newQueuedRuntime is newTestRuntime with Submit's direct hand-off off:
// every f runs on a host worker, whose blocking these tests are about.
func newQueuedRuntime(t *testing.T, workers int) *Runtime {
	t.Helper()
	rt := newTestRuntime(t, workers)
	rt.setOwnForTest(false)
	return rt
}

// newConfigRuntime is newTestRuntime with cfg (its compensation fields
// set by the tests).
func newConfigRuntime(t testing.TB, cfg RuntimeConfig) *Runtime {
	t.Helper()
	rt, err := NewRuntime(cfg)
	if err != nil {
		t.Fatalf("NewRuntime: %v", err)
	}
	t.Cleanup(func() {
		done := step(t, "Runtime.Close at the test's cleanup")
		err := rt.Close()
		done()
		if err != nil {
			t.Errorf("Runtime.Close: %v", err)
		}
	})
	return rt
}

// newUnwatchedRuntime is newTestRuntime whose C monitor ticks once an
// hour: it counts no wait the binding cannot see within a test (a test
// whose blocked op must keep the only worker, or whose waits only an
// announcement may count).
func newUnwatchedRuntime(t testing.TB, workers int) *Runtime {
	t.Helper()
	return newConfigRuntime(t, RuntimeConfig{Workers: workers, blockDetect: time.Hour})
}

// detections is how often the C monitor detected one of rt's workers blocked.
func detections(rt *Runtime) uint64 {
	_, n := rt.cBlockedForTest()
	return n
}

// handoffCases runs body with Submit's direct hand-off off (every op on a
// host worker, whose blocking these tests are about) and on (as a user's
// runtime has it), each under compCases.
func handoffCases(t *testing.T, workers int, body func(t *testing.T, rt *Runtime)) {
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("handoff=%v", own), func(t *testing.T) {
			compCases(t, func(t *testing.T) {
				rt := newTestRuntime(t, workers)
				rt.setOwnForTest(own)
				body(t, rt)
			})
		})
	}
}

// Nested Submit to depth 16 with one worker: each level's f submits to
// the next session and waits for it.
func TestCompNestedSubmitDepth16(t *testing.T) {
	handoffCases(t, 1, func(t *testing.T, rt *Runtime) {
		const depth = 16
		vs := make([]*VMSession, depth+1)
		for i := range vs {
			vs[i], _ = rt.NewVMSession(fmt.Sprintf("n%d", i))
		}
		var reached atomic.Int32
		var level func(i int) func(*Session) error
		level = func(i int) func(*Session) error {
			return func(*Session) error {
				if i == depth {
					reached.Store(depth)
					return nil
				}
				return vs[i+1].Submit(queued(t), level(i+1))
			}
		}
		for round := 0; round < 3; round++ {
			done := stepWithin(t, fmt.Sprintf("round %d: nested Submit to depth %d, 1 worker", round, depth), compLimit)
			if err := vs[0].Submit(queued(t), level(0)); err != nil {
				t.Fatalf("Submit: %v", err)
			}
			done()
		}
		if reached.Load() != depth {
			t.Fatalf("depth %d not reached", depth)
		}
		// Each nested Submit counted its wait at once: the monitor, which
		// would find an unannounced one 1-2 ms in and hide the miss, detects
		// at most a few (a host worker that waits a whole tick for a P just
		// before its wait looks blocked too); with the count missing it
		// detects them all (48).
		if n := detections(rt); n*2 >= 3*depth {
			t.Fatalf("the monitor detected %d of %d waits of nested Submits", n, 3*depth)
		}
	})
}

// 16 VMs blocked inside f (on a channel; on time.Sleep) on 2 workers,
// and a quick op on a 17th VM returns while they are all still inside f.
func TestCompBlockedOpsDoNotStall(t *testing.T) {
	for _, how := range []string{"channel", "sleep"} {
		t.Run(how, func(t *testing.T) {
			compCases(t, func(t *testing.T) { blockedOpsDoNotStall(t, how) })
		})
	}
}

func blockedOpsDoNotStall(t *testing.T, how string) {
	rt := newQueuedRuntime(t, 2)
	const n = 16
	release := make(chan struct{})
	var let atomic.Bool
	var inside, returned atomic.Int32
	var all sync.WaitGroup
	all.Add(n)
	results := make(chan error, n)
	for i := 0; i < n; i++ {
		v, _ := rt.NewVMSession(fmt.Sprintf("blk%d", i))
		go func() {
			results <- v.Submit(queued(t), func(*Session) error {
				inside.Add(1)
				all.Done()
				if how == "channel" {
					<-release
				} else {
					for !let.Load() {
						time.Sleep(time.Millisecond)
					}
				}
				returned.Add(1)
				return nil
			})
		}()
	}
	done := stepWithin(t, "all 16 blockers inside f (2 workers)", compLimit)
	all.Wait()
	done()
	// The Prometheus text counts the extra workers (2 workers: 14 at
	// least for 16 ops inside f).
	var prom strings.Builder
	if err := rt.WritePrometheus(&prom); err != nil {
		t.Fatal(err)
	}
	if e := promValue(t, prom.String(), "accel_runtime_extra_workers"); e < n-2 {
		t.Fatalf("accel_runtime_extra_workers = %d, want >= %d", e, n-2)
	}
	q, _ := rt.NewVMSession("quick")
	done = stepWithin(t, "the 17th VM's quick op", compLimit)
	if err := q.Submit(queued(t), func(*Session) error { return nil }); err != nil {
		t.Fatalf("quick Submit: %v", err)
	}
	done()
	if r := returned.Load(); r != 0 {
		t.Fatalf("%d blockers returned before the quick op was done", r)
	}
	close(release)
	let.Store(true)
	done = stepWithin(t, "the blockers return", compLimit)
	for i := 0; i < n; i++ {
		if err := <-results; err != nil {
			t.Fatalf("blocker: %v", err)
		}
	}
	done()
	if inside.Load() != n {
		t.Fatalf("inside = %d", inside.Load())
	}
	// The extra workers go again: surplus at their visit's end or idle.
	done = stepWithin(t, "the extra workers retire", compLimit)
	for rt.host.comp.extras.Load() != 0 {
		time.Sleep(time.Millisecond)
	}
	done()
}

// A->B: 16 pairs, each a's f submits to its b and waits, 100 rounds, 2
// workers; every op runs exactly once, in each session's order.
func TestCompPairsNestedSubmit(t *testing.T) {
	handoffCases(t, 2, func(t *testing.T, rt *Runtime) {
		const pairs, rounds = 16, 100
		done := stepWithin(t, "16 pairs x 100 rounds of A->B Submit from inside f", compLimit)
		defer done()
		var wg sync.WaitGroup
		errs := make(chan error, pairs)
		for p := 0; p < pairs; p++ {
			a, _ := rt.NewVMSession(fmt.Sprintf("a%d", p))
			b, _ := rt.NewVMSession(fmt.Sprintf("b%d", p))
			wg.Add(1)
			go func() {
				defer wg.Done()
				var nextA, nextB int
				for r := 0; r < rounds; r++ {
					r := r
					err := a.Submit(queued(t), func(*Session) error {
						if nextA != r {
							return fmt.Errorf("a ran op %d at %d", r, nextA)
						}
						nextA++
						return b.Submit(queued(t), func(*Session) error {
							if nextB != r {
								return fmt.Errorf("b ran op %d at %d", r, nextB)
							}
							nextB++
							return nil
						})
					})
					if err != nil {
						errs <- err
						return
					}
				}
				if nextA != rounds || nextB != rounds {
					errs <- fmt.Errorf("ran %d and %d ops", nextA, nextB)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	})
}

// b.Sync() from inside an op of a, with one worker and b's op queued.
func TestCompSyncOtherFromInsideOp(t *testing.T) {
	compCases(t, func(t *testing.T) {
		rt := newQueuedRuntime(t, 1)
		a, _ := rt.NewVMSession("a")
		b, _ := rt.NewVMSession("b")
		var ran atomic.Bool
		done := stepWithin(t, "b.Sync() inside a's op, 1 worker", compLimit)
		err := a.Submit(queued(t), func(*Session) error {
			if err := b.SubmitAsync(func(*Session) error { ran.Store(true); return nil }, nil); err != nil {
				return err
			}
			if err := b.Sync(); err != nil {
				return err
			}
			if !ran.Load() {
				return fmt.Errorf("Sync returned before b's op ran")
			}
			return nil
		})
		done()
		if err != nil {
			t.Fatal(err)
		}
	})
}

// Close of another session from inside an op (its drain waits for b's
// queued op), one worker.
func TestCompCloseOtherFromInsideOp(t *testing.T) {
	compCases(t, func(t *testing.T) {
		rt := newQueuedRuntime(t, 1)
		a, _ := rt.NewVMSession("a")
		b, _ := rt.NewVMSession("b")
		var ran atomic.Bool
		done := stepWithin(t, "b.Close() inside a's op, 1 worker", compLimit)
		err := a.Submit(queued(t), func(*Session) error {
			if err := b.SubmitAsync(func(*Session) error { ran.Store(true); return nil }, nil); err != nil {
				return err
			}
			if err := b.Close(); err != nil {
				return err
			}
			if !ran.Load() {
				return fmt.Errorf("Close returned before b's op ran")
			}
			return nil
		})
		done()
		if err != nil {
			t.Fatal(err)
		}
	})
}

// A host worker blocked on a user mutex (a wait the binding cannot see) that
// only another session's op releases: one worker.
func TestCompUserMutexReleasedByOtherSession(t *testing.T) {
	compCases(t, func(t *testing.T) {
		rt := newQueuedRuntime(t, 1)
		a, _ := rt.NewVMSession("a")
		b, _ := rt.NewVMSession("b")
		var mu sync.Mutex
		mu.Lock()
		aDone := make(chan error, 1)
		go func() {
			aDone <- a.Submit(queued(t), func(*Session) error { mu.Lock(); mu.Unlock(); return nil })
		}()
		done := stepWithin(t, "b's op unlocks the mutex a's op waits on, 1 worker", compLimit)
		// Whichever runs first, b's op must run while a's may hold the
		// only worker.
		if err := b.Submit(queued(t), func(*Session) error { mu.Unlock(); return nil }); err != nil {
			t.Fatal(err)
		}
		if err := <-aDone; err != nil {
			t.Fatal(err)
		}
		done()
	})
}

// The cap: with 1 worker and a cap of 8 extra workers (the C runtime's
// max_extra_workers), at most 8 extra workers. More blockers than 1 +
// cap: exactly 1 + cap are inside f at once, the rest wait (as without
// compensation) and run once some return.
func TestCompCapBoundsExtras(t *testing.T) {
	plantBugs(t)
	const capExtra = 8
	rt := newConfigRuntime(t, RuntimeConfig{Workers: 1, maxExtra: capExtra})
	rt.setOwnForTest(false)
	limit := 1 + capExtra
	n := limit + 4
	release := make(chan struct{})
	var inside, most atomic.Int32
	results := make(chan error, n)
	for i := 0; i < n; i++ {
		v, _ := rt.NewVMSession(fmt.Sprintf("cap%d", i))
		go func() {
			results <- v.Submit(queued(t), func(*Session) error {
				k := inside.Add(1)
				for {
					m := most.Load()
					if k <= m || most.CompareAndSwap(m, k) {
						break
					}
				}
				<-release
				inside.Add(-1)
				return nil
			})
		}()
	}
	done := stepWithin(t, fmt.Sprintf("%d blockers inside f (1 worker + the cap)", limit), compLimit)
	for inside.Load() < int32(limit) {
		time.Sleep(time.Millisecond)
	}
	done()
	if e := rt.host.comp.extras.Load(); e != capExtra {
		t.Fatalf("extra workers = %d, want the cap %d", e, capExtra)
	}
	close(release)
	done = stepWithin(t, "every blocker returns", compLimit)
	for i := 0; i < n; i++ {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	done()
	if m := most.Load(); m != int32(limit) {
		t.Fatalf("at most %d inside f at once, want %d", m, limit)
	}
}

// runtime.Goexit in an op run by an extra worker (t.Fatal in f): the op
// fails, the submitter's goroutine ends, the worker goes on (its next op
// runs) and the extras still retire.
func TestCompGoexitOnExtraWorker(t *testing.T) {
	plantBugs(t)
	rt := newQueuedRuntime(t, 1)
	a, _ := rt.NewVMSession("a")
	b, _ := rt.NewVMSession("b")
	release := make(chan struct{})
	aIn := make(chan struct{})
	aDone := make(chan error, 1)
	go func() {
		aDone <- a.Submit(queued(t), func(*Session) error { close(aIn); <-release; return nil })
	}()
	waitFor(t, "a's op starts on the only host worker", func() { <-aIn })
	done := stepWithin(t, "b's op calls runtime.Goexit while a's op holds the only worker", compLimit)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		b.Submit(queued(t), func(*Session) error { runtime.Goexit(); return nil })
		t.Error("Submit returned after f called runtime.Goexit")
	}()
	<-ended
	done()
	quickOp(t, b, "b's next op, a's still blocked")
	close(release)
	var aErr error
	waitFor(t, "a's op completes after the Goexit on the extra worker", func() { aErr = <-aDone })
	if aErr != nil {
		t.Fatal(aErr)
	}
	if _, _, failed := b.Stats(); failed != 1 {
		t.Fatalf("b failed = %d, want 1", failed)
	}
	done = stepWithin(t, "the extra workers retire", compLimit)
	for rt.host.comp.extras.Load() != 0 {
		time.Sleep(time.Millisecond)
	}
	done()
}

// promValue is the value of an unlabelled metric in a Prometheus text.
func promValue(t *testing.T, text, name string) int {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && (f[0] == name || strings.HasPrefix(f[0], name+"{")) {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return int(v)
		}
	}
	t.Fatalf("no %s in\n%s", name, text)
	return 0
}

// Waits for queue room inside an op count at once: a Submit (without
// and with a ctx) and a SubmitBatch into another session's full queue
// from inside an op, 1 worker.
func TestCompRoomWaitFromInsideOp(t *testing.T) {
	for _, how := range []string{"Submit", "Submit-ctx", "SubmitBatch"} {
		t.Run(how, func(t *testing.T) {
			compCases(t, func(t *testing.T) {
				rt := newQueuedRuntime(t, 1)
				a, _ := rt.NewVMSession("a")
				b, _ := rt.NewVMSession("b", WithQueueDepth(4))
				var ran atomic.Int32
				op := func(*Session) error { ran.Add(1); return nil }
				done := stepWithin(t, how+" into b's full queue inside a's op, 1 worker", compLimit)
				err := a.Submit(queued(t), func(*Session) error {
					for b.SubmitAsync(op, nil) == nil {
					}
					switch how {
					case "Submit":
						return b.Submit(context.Background(), op)
					case "Submit-ctx":
						return b.Submit(queued(t), op)
					}
					fs := make([]func(*Session) error, 16)
					for i := range fs {
						fs[i] = op
					}
					for _, err := range b.SubmitBatch(context.Background(), fs) {
						if err != nil {
							return err
						}
					}
					return nil
				})
				done()
				if err != nil {
					t.Fatal(err)
				}
				done = stepWithin(t, "b.Sync", compLimit)
				b.Sync()
				done()
			})
		})
	}
}

// spinFor computes (no syscall, no wait) until d has passed.
func spinFor(d time.Duration) {
	for t0 := time.Now(); time.Since(t0) < d; {
	}
}

// CPU-bound ops 30 monitor ticks long are not counted blocked: a
// host worker's thread is on a CPU, or runnable, in every window, so no extra
// host worker starts beside it (with the process's GOMAXPROCS and with 1,
// where the monitor's thread runs beside the host worker's but Go preempts
// the host worker every 10 ms). Another session's op waits behind each (one
// worker), so the C monitor judges the host worker at every tick (it counts
// nothing while nothing waits). One exception the design admits
// (compensate.go): a host worker whose goroutine waits a whole tick for its P
// to come back after a preemption looks blocked, which a machine loaded
// by other processes can cause; so of 8 such ops fewer than half may be
// counted. With the C monitor reading neither the CPU clock nor the run
// state of a host worker's thread (planted), half or more are.
func TestCompCPUBoundOpIsNotDetected(t *testing.T) {
	compCases(t, func(t *testing.T) {
		rt := newQueuedRuntime(t, 1)
		v, _ := rt.NewVMSession("cpu")
		w, _ := rt.NewVMSession("waits")
		const n = 8
		for i := 0; i < n; i++ {
			done := stepWithin(t, fmt.Sprintf("CPU-bound op %d of %d, 30 monitor ticks, 1 worker, another op waiting", i+1, n), compLimit)
			started := make(chan struct{})
			res := make(chan error, 1)
			go func() {
				res <- v.Submit(queued(t), func(*Session) error {
					close(started)
					spinFor(30 * monitorTick)
					return nil
				})
			}()
			<-started
			waited := make(chan error, 1)
			if err := w.SubmitAsync(func(*Session) error { return nil }, func(err error) { waited <- err }); err != nil {
				t.Fatal(err)
			}
			if err := <-res; err != nil {
				t.Fatal(err)
			}
			if err := <-waited; err != nil {
				t.Fatal(err)
			}
			done()
		}
		if m := detections(rt); 2*m >= n {
			t.Fatalf("the monitor detected %d of %d CPU-bound ops blocked", m, n)
		}
	})
}

// A host worker running CPU-bound ops back to back gives its P up between
// visits: with GOMAXPROCS=1, 16 ops of 2 x yieldAfter on 16 sessions,
// one worker, and a goroutine that loops on runtime.Gosched meanwhile,
// that goroutine runs at least once for every two yields the runtime
// counts (each yield lets it run once; Go's own preemption, every 10 ms,
// about 6 times in all), and the host worker yields. With host workers that never yield
// (ACCEL_TEST_NOYIELD=1) no yield is counted; with a yield that counts
// but keeps the P, the goroutine runs too seldom.
func TestCompHostWorkerYieldsItsP(t *testing.T) {
	plantBugs(t)
	old := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(old)
	rt := newQueuedRuntime(t, 1)
	const n = 16
	var started, finished atomic.Bool
	var ops, runs atomic.Int32
	var all sync.WaitGroup
	all.Add(n)
	for i := 0; i < n; i++ {
		v, _ := rt.NewVMSession(fmt.Sprintf("y%d", i))
		if err := v.SubmitAsync(func(*Session) error {
			started.Store(true)
			spinFor(2 * yieldAfter)
			if ops.Add(1) == n {
				finished.Store(true)
			}
			return nil
		}, func(error) { all.Done() }); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if started.Load() && !finished.Load() {
				runs.Add(1)
			}
			runtime.Gosched()
		}
	}()
	done := stepWithin(t, fmt.Sprintf("16 CPU-bound ops of %v, GOMAXPROCS=1, 1 worker", 2*yieldAfter), compLimit)
	all.Wait()
	done()
	close(stop)
	y := rt.host.yields.Load()
	if y == 0 {
		t.Fatalf("the host worker never yielded its P in %v of back-to-back ops", n*2*yieldAfter)
	}
	if r := int64(runs.Load()); 2*r < y {
		t.Fatalf("another goroutine ran %d times while the host worker yielded %d times", r, y)
	}
}

// Session.Blocking counts its wait at once: with the monitor counting
// nothing (its tick an hour) and 1 worker, an op blocked on a channel
// inside s.Blocking does not keep another session's op from running; a
// panic in the wait fails the op, leaves no worker counted blocked and the
// session goes on; outside an op Blocking just runs the wait. A Blocking
// that only ran its wait would leave the second op waiting: its watchdog
// fails it.
func TestCompSessionBlockingCountsAtOnce(t *testing.T) {
	compCases(t, func(t *testing.T) {
		rt := newUnwatchedRuntime(t, 1) // only the announcement can count it
		rt.setOwnForTest(false)
		a, _ := rt.NewVMSession("a")
		b, _ := rt.NewVMSession("b")
		release := make(chan struct{})
		inside := make(chan struct{})
		res := make(chan error, 1)
		go func() {
			res <- a.Submit(queued(t), func(s *Session) error {
				s.Blocking(func() {
					close(inside)
					<-release
				})
				return nil
			})
		}()
		done := stepWithin(t, "a's op inside s.Blocking", compLimit)
		<-inside
		done()
		quickOp(t, b, "b's op while a's waits inside s.Blocking (1 worker, no monitor)")
		close(release)
		var rErr error
		waitFor(t, "a's op returns after s.Blocking", func() { rErr = <-res })
		if rErr != nil {
			t.Fatal(rErr)
		}
		// A panic inside the wait: the op fails, the count ends.
		var err error
		waitFor(t, "a's op whose wait panics", func() {
			err = a.Submit(queued(t), func(s *Session) error {
				s.Blocking(func() { panic("in the wait") })
				return nil
			})
		})
		if err == nil {
			t.Fatal("an op whose wait panicked did not fail")
		}
		if blocked, _ := rt.cBlockedForTest(); blocked != 0 {
			t.Fatalf("%d workers still counted blocked after the wait panicked", blocked)
		}
		quickOp(t, a, "a's next op after the panic")
		ran := false
		a.Session().Blocking(func() { ran = true }) // outside an op
		if !ran {
			t.Fatal("Blocking outside an op did not run its wait")
		}
	})
}

// A wait announced with Session.Blocking, 20 monitor ticks long, is not
// also detected by the monitor, though work waits all along: a detection on
// top of the announcement would keep an extra worker beside the op for
// what it computes after the wait. One worker and a cap of one extra
// worker: v's op waits inside s.Blocking, the extra worker runs w's op,
// which waits inside s.Blocking too, and z's op waits for a host worker until
// v's op returns, so the monitor judges both workers at every tick. With
// the C monitor judging workers inside an announced wait too (planted: the
// BLOCK_ANNOUNCED check in compensate.c's watch() removed), both host workers,
// asleep, are detected.
func TestCompSessionBlockingIsNotDetected(t *testing.T) {
	compCases(t, func(t *testing.T) {
		rt := newConfigRuntime(t, RuntimeConfig{Workers: 1, maxExtra: 1})
		rt.setOwnForTest(false)
		v, _ := rt.NewVMSession("v")
		w, _ := rt.NewVMSession("w")
		z, _ := rt.NewVMSession("z")
		done := stepWithin(t, "v's op inside s.Blocking", compLimit)
		vIn, wIn, vDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
		vRes := make(chan error, 1)
		go func() {
			vRes <- v.Submit(queued(t), func(s *Session) error {
				s.Blocking(func() { close(vIn); time.Sleep(20 * monitorTick) })
				return nil
			})
		}()
		<-vIn
		done()
		done = stepWithin(t, "w's op inside s.Blocking on the extra worker", compLimit)
		wRes, zRes := make(chan error, 1), make(chan error, 1)
		if err := w.SubmitAsync(func(s *Session) error {
			s.Blocking(func() { close(wIn); <-vDone })
			return nil
		}, func(err error) { wRes <- err }); err != nil {
			t.Fatal(err)
		}
		<-wIn
		done()
		if err := z.SubmitAsync(func(*Session) error { return nil }, func(err error) { zRes <- err }); err != nil {
			t.Fatal(err)
		}
		done = stepWithin(t, "v's op returns, then z's and w's", compLimit)
		err := <-vRes
		close(vDone)
		for _, e := range []error{err, <-zRes, <-wRes} {
			if e != nil {
				t.Fatal(e)
			}
		}
		done()
		if m := detections(rt); m != 0 {
			t.Fatalf("the monitor detected an announced wait %d times", m)
		}
	})
}

// A session whose op the monitor found waiting begins its next visit
// counted blocked (the C runtime's "sessions whose ops wait"), on a host
// worker as on accel's own: a's op sleeps, unannounced, 20 ticks while b's
// op waits for the one worker, and the monitor finds it; then a's next op
// waits, unannounced, for b's next op, submitted once a's began. Counted
// at its begin, a's worker hands its place on at once: b runs, and the
// monitor finds nothing. Planted (host.c's visit begin not presuming),
// b waits for the monitor to find a's wait: the detection count moves
// and the presumed count does not.
func TestCompSessionThatWaitedBeginsCounted(t *testing.T) {
	compCases(t, func(t *testing.T) {
		rt := newConfigRuntime(t, RuntimeConfig{Workers: 1, maxExtra: 2})
		rt.setOwnForTest(false)
		a, _ := rt.NewVMSession("a")
		b, _ := rt.NewVMSession("b")
		in := make(chan struct{})
		res := make(chan error, 1)
		done := stepWithin(t, "a's first wait, found by the monitor while b's op waits", compLimit)
		if err := a.SubmitAsync(func(*Session) error {
			close(in)
			time.Sleep(20 * monitorTick)
			return nil
		}, func(err error) { res <- err }); err != nil {
			t.Fatal(err)
		}
		<-in
		quickOp(t, b, "b's op beside a's first wait")
		if err := <-res; err != nil {
			t.Fatal(err)
		}
		done()
		if detections(rt) == 0 {
			t.Fatal("the monitor did not find a's wait of 20 ticks")
		}
		done = stepWithin(t, "the monitor drops a's count, the extra workers retire", compLimit)
		for blocked, _ := rt.cBlockedForTest(); blocked != 0 || rt.host.comp.extras.Load() != 0; blocked, _ = rt.cBlockedForTest() {
			time.Sleep(time.Millisecond)
		}
		done()
		det, pre := detections(rt), rt.cPresumedForTest()
		done = stepWithin(t, "a's next op waits for b's, submitted once a's began", compLimit)
		in, gate := make(chan struct{}), make(chan struct{})
		if err := a.SubmitAsync(func(*Session) error {
			close(in)
			<-gate
			return nil
		}, func(err error) { res <- err }); err != nil {
			t.Fatal(err)
		}
		<-in
		if err := b.Submit(queued(t), func(*Session) error { close(gate); return nil }); err != nil {
			t.Fatal(err)
		}
		if err := <-res; err != nil {
			t.Fatal(err)
		}
		done()
		if p := rt.cPresumedForTest(); p != pre+1 {
			t.Errorf("a's visit after a wait: %d visits begun counted blocked, want 1", p-pre)
		}
		if d := detections(rt); d != det {
			t.Errorf("a's second wait was left for the monitor to find (%d detections)", d-det)
		}
	})
}

// A cycle of nested Submits: a's f submits to b, b's f submits back to a.
// a's second op waits behind a's running op, which waits for b: as with
// the old type (its per-session mutex), nothing but a ctx ends it. Here
// the cycle must (1) not stall a third session's ops while it stands,
// with one worker; (2) end when the inner Submit's ctx is canceled:
// that Submit returns context.Canceled at once (its op never runs), b's
// f returns it, and so does a's Submit; (3) leave a and b working.
// Both with Submit's direct hand-off and with every op on a host worker.
func TestCompNestedSubmitCycleEndsByCtx(t *testing.T) {
	for _, own := range []bool{true, false} {
		t.Run(fmt.Sprintf("handoff=%v", own), func(t *testing.T) {
			compCases(t, func(t *testing.T) {
				rt := newTestRuntime(t, 1)
				rt.setOwnForTest(own)
				a, _ := rt.NewVMSession("a")
				b, _ := rt.NewVMSession("b")
				c, _ := rt.NewVMSession("c")
				inner, cancel := context.WithCancel(context.Background())
				defer cancel()
				var innerRan atomic.Bool
				inCycle := make(chan struct{})
				got := make(chan error, 1)
				go func() {
					got <- a.Submit(queued(t), func(*Session) error {
						return b.Submit(queued(t), func(*Session) error {
							close(inCycle)
							return a.Submit(inner, func(*Session) error {
								innerRan.Store(true)
								return nil
							})
						})
					})
				}()
				done := stepWithin(t, "b's op inside the cycle", compLimit)
				<-inCycle
				done()
				quickOp(t, c, "a third session's op while a and b wait on each other (1 worker)")
				select {
				case err := <-got:
					t.Fatalf("the cycle ended by itself: %v", err)
				default:
				}
				cancel()
				done = stepWithin(t, "the cycle ends when the inner ctx is canceled", compLimit)
				err := <-got
				done()
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("a.Submit = %v, want context.Canceled from the inner Submit", err)
				}
				quickOp(t, a, "a after the cycle")
				// The canceled op's place in a's order came before this
				// quick op: had it run, it would have by now.
				if innerRan.Load() {
					t.Fatal("the canceled inner op ran")
				}
				quickOp(t, b, "b after the cycle")
			})
		})
	}
}

// A nested Submit's wait leaves its host worker's thread (park): the
// visit is detached, the goroutine unlocked, and both are back on
// whatever thread it runs on after the wait. Then, inside the same f,
// its own session's Submit is still ErrDeadlock and its Sync nil (the
// thread-locals that tell an op's session are the visit's again), and
// while it waits no goroutine that Go runs on the thread it left takes
// that session for its own: of 64 goroutines started meanwhile, those
// that Submit to it all complete, and those that Sync it return only
// after its op did. Planted (the unpark locks without attaching), the
// Sync after the wait waits for its own op and the watchdog names the
// step. (Which thread a goroutine lands on is Go's choice, so a park that
// leaves the thread's state behind is TestCompParkLeavesAndRetakesTheThread's
// to catch.)
func TestCompNestedWaitMovesTheVisitWhole(t *testing.T) {
	rt := newQueuedRuntime(t, 1) // b's op queued: a's op waits, parked
	a, _ := rt.NewVMSession("a")
	b, _ := rt.NewVMSession("b")
	const others = 64
	var wg sync.WaitGroup
	var aDone atomic.Bool
	errs := make(chan error, others)
	var afterWait, afterSync error
	done := step(t, "a's op: a nested Submit to b, then Submit and Sync of a")
	err := onHostWorker(a, func(*Session) error {
		err := b.Submit(context.Background(), func(*Session) error {
			// Goroutines Go may run on a's old thread while a's op waits.
			for i := 0; i < others; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					if i%2 == 1 {
						err := a.Sync()
						if err == nil && !aDone.Load() {
							err = errors.New("Sync returned before a's running op completed")
						}
						errs <- err
						return
					}
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					errs <- a.Submit(ctx, func(*Session) error { return nil })
				}(i)
			}
			time.Sleep(20 * time.Millisecond)
			return nil
		})
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		afterWait = a.Submit(ctx, func(*Session) error { return nil })
		afterSync = a.Sync()
		aDone.Store(true)
		return nil
	})
	done()
	if err != nil {
		t.Fatalf("a's op: %v", err)
	}
	if !errors.Is(afterWait, ErrDeadlock) {
		t.Errorf("a's Submit from its own op after a nested wait: %v, want ErrDeadlock", afterWait)
	}
	if afterSync != nil {
		t.Errorf("a's Sync from its own op after a nested wait: %v, want nil", afterSync)
	}
	done = step(t, "the 64 goroutines' Submits to a and Syncs of a")
	wg.Wait()
	done()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a Submit to a or Sync of a from another goroutine while a's op waited: %v, want nil", err)
		}
	}
}

// park and unpark, white-box, inside an op on a host worker: before the
// park the thread runs a's op (accel_current_session() is a, the shim
// names the visit); right after it, still on that thread, neither (the
// visit detached: a goroutine Go runs there next is in no op); after the
// unpark, on whatever thread, both again. Planted (the park unlocks
// without detaching), the thread still says a's op while parked.
func TestCompParkLeavesAndRetakesTheThread(t *testing.T) {
	rt := newTestRuntime(t, 1)
	a, _ := rt.NewVMSession("a")
	var before, parked, after [2]bool
	didPark := false
	done := step(t, "a's op parks and unparks")
	err := onHostWorker(a, func(*Session) error {
		before[0], before[1] = a.threadInOpForTest()
		m := blockBegin()
		didPark = m.park()
		parked[0], parked[1] = a.threadInOpForTest()
		m.unpark(didPark)
		after[0], after[1] = a.threadInOpForTest()
		m.blockEnd()
		return nil
	})
	done()
	if err != nil {
		t.Fatal(err)
	}
	if before != [2]bool{true, true} || !didPark {
		t.Fatalf("before the park: own session %v, in a visit %v; parked %v: want all true", before[0], before[1], didPark)
	}
	if parked != [2]bool{false, false} {
		t.Errorf("parked: the thread says own session %v, in a visit %v; want neither", parked[0], parked[1])
	}
	if after != [2]bool{true, true} {
		t.Errorf("after the unpark: own session %v, in a visit %v; want both", after[0], after[1])
	}
}

// An extra worker that is surplus at the end of its visit (the worker
// it stood in for is no longer blocked) leaves then, rather than taking
// the next visit. No monitor (only the announcement counts), 1 worker,
// a cap of 1 extra worker: a's op waits in s.Blocking, so an extra
// worker is added, and it runs b's op, which waits on a gate (not
// counted). a's wait ends, but its op goes on holding the only worker
// (waiting on a gate of its own, not counted): the extra worker is
// surplus from here. c's op is queued, then b's gate opens: the extra
// worker ends its visit and leaves, and c's op waits for a's to return.
// Planted (the surplus extra stays), the extra worker runs c's op while
// a's still holds the worker.
func TestCompSurplusExtraLeavesAtItsVisitEnd(t *testing.T) {
	plantBugs(t)
	rt := newUnwatchedRuntime(t, 1)
	rt.setOwnForTest(false)
	a, _ := rt.NewVMSession("a")
	b, _ := rt.NewVMSession("b")
	c, _ := rt.NewVMSession("c")
	aWaits, aBlockingDone, aGate := make(chan struct{}), make(chan struct{}), make(chan struct{})
	aRelease := make(chan struct{})
	aRes := make(chan error, 1)
	if err := a.SubmitAsync(func(s *Session) error {
		s.Blocking(func() { close(aWaits); <-aRelease })
		close(aBlockingDone)
		<-aGate
		return nil
	}, func(err error) { aRes <- err }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a's op inside s.Blocking", func() { <-aWaits })
	bGate, bRes := gatedOp(t, b, "b's op starts on the extra worker", compLimit)
	close(aRelease)
	waitFor(t, "a's op leaves s.Blocking (its worker no longer blocked)", func() { <-aBlockingDone })
	var cRan atomic.Bool
	cRes := make(chan error, 1)
	if err := c.SubmitAsync(func(*Session) error { cRan.Store(true); return nil },
		func(err error) { cRes <- err }); err != nil {
		t.Fatal(err)
	}
	close(bGate)
	done := stepWithin(t, "b's op returns and the surplus extra worker leaves", compLimit)
	if err := <-bRes; err != nil {
		t.Fatal(err)
	}
	for rt.host.comp.extras.Load() != 0 {
		time.Sleep(100 * time.Microsecond)
	}
	done()
	if cRan.Load() {
		t.Errorf("c's op ran while a's held the only worker: the surplus extra worker stayed for another visit")
	}
	close(aGate)
	done = step(t, "a's op returns, then c's")
	for _, ch := range []chan error{aRes, cRes} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	done()
}

// An extra worker idle for extraIdle while the worker it stands in for
// is still blocked leaves and is added again at once (a submit that found
// it parked just before it left asked for no worker): the runtime keeps
// one extra worker all along. No monitor, 1 worker: a's op waits in
// s.Blocking, b's op runs on the extra worker, and then nothing runs
// until the C runtime has started a second extra worker (the same
// goroutine on a new index). Planted
// (the idle extra leaves without adding one again), no extra worker is
// left while a's op still waits.
func TestCompIdleExtraReplacedWhileOwed(t *testing.T) {
	plantBugs(t)
	rt := newUnwatchedRuntime(t, 1)
	rt.setOwnForTest(false)
	a, _ := rt.NewVMSession("a")
	aWaits, aRelease := make(chan struct{}), make(chan struct{})
	aRes := make(chan error, 1)
	if err := a.SubmitAsync(func(s *Session) error {
		s.Blocking(func() { close(aWaits); <-aRelease })
		return nil
	}, func(err error) { aRes <- err }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a's op inside s.Blocking", func() { <-aWaits })
	b, _ := rt.NewVMSession("b")
	quickOp(t, b, "b's op on an extra worker while a's is blocked")
	done := stepWithin(t, "the idle extra worker leaves (and is added again, or not)", compLimit)
	for rt.host.comp.extras.Load() != 0 && rt.cStatsForTest().extra_started < 2 {
		time.Sleep(time.Millisecond)
	}
	done()
	if e, st := rt.host.comp.extras.Load(), rt.cStatsForTest(); e != 1 || st.extra_workers != 1 {
		t.Errorf("after the idle extra worker left with a's op still blocked: %d extra host workers, C's extra workers %d (started %d), want 1 and 1",
			e, st.extra_workers, st.extra_started)
	}
	quickOp(t, b, "b's next op while a's is still blocked")
	close(aRelease)
	waitFor(t, "a's op returns", func() {
		if err := <-aRes; err != nil {
			t.Fatal(err)
		}
	})
}

// Each op of a visit is judged on a window of its own: the op word f
// bumps (callF) makes the C monitor drop a detection at the first tick
// that finds another op, and sample that op afresh. 1 worker, a cap of
// 1 extra worker, the default monitor: v's ops, one group
// (SubmitAsyncBatch: one visit), each wait on a gate of their own,
// unannounced; the monitor finds the first waiting, and the extra worker
// runs w's op, which waits too, while z's op stays queued (work waits
// all along). Once both workers are counted blocked, the gates of v's
// ops open one by one: each next op's wait is a new one, and the monitor
// detects it again. Planted (f does not bump the op word), the monitor
// sees one wait from the first op on; only the thread's moment on a CPU
// between two ops may end that detection (it did so at many of the
// steps here), so the test takes 15 steps, each of which must see a new
// detection.
func TestCompEachOpOfAVisitJudgedAfresh(t *testing.T) {
	compCases(t, func(t *testing.T) {
		rt := newConfigRuntime(t, RuntimeConfig{Workers: 1, maxExtra: 1})
		rt.setOwnForTest(false)
		v, _ := rt.NewVMSession("v")
		w, _ := rt.NewVMSession("w")
		z, _ := rt.NewVMSession("z")
		const k = 16
		var in, gate [k]chan struct{}
		fs := make([]func(*Session) error, k)
		for i := range fs {
			i := i
			in[i], gate[i] = make(chan struct{}), make(chan struct{})
			fs[i] = func(*Session) error { close(in[i]); <-gate[i]; return nil }
		}
		vRes := make(chan error, k)
		if _, err := v.SubmitAsyncBatch(fs, func(_ int, err error) { vRes <- err }); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "v's first op waits", func() { <-in[0] })
		wGate, wRes := gatedOp(t, w, "w's op on the extra worker the monitor's detection adds", compLimit)
		zRes := make(chan error, 1)
		if err := z.SubmitAsync(func(*Session) error { return nil }, func(err error) { zRes <- err }); err != nil {
			t.Fatal(err)
		}
		done := stepWithin(t, "the monitor counts both waits (v's first op, w's op) blocked", compLimit)
		for blocked, _ := rt.cBlockedForTest(); blocked != 2; blocked, _ = rt.cBlockedForTest() {
			time.Sleep(monitorTick / 4)
		}
		done()
		for i := 1; i < k; i++ {
			d0 := detections(rt)
			close(gate[i-1])
			waitFor(t, fmt.Sprintf("v's op %d waits", i), func() { <-in[i] })
			done = stepWithin(t, fmt.Sprintf("the monitor detects v's op %d's wait as a new one", i), compLimit)
			for detections(rt) == d0 {
				time.Sleep(monitorTick / 4)
			}
			done()
		}
		close(gate[k-1])
		close(wGate)
		done = stepWithin(t, "v's, w's and z's ops return", compLimit)
		for i := 0; i < k; i++ {
			if err := <-vRes; err != nil {
				t.Fatal(err)
			}
		}
		for _, ch := range []chan error{wRes, zRes} {
			if err := <-ch; err != nil {
				t.Fatal(err)
			}
		}
		done()
	})
}
