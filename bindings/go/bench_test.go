// Promises: none

package accel

// Benchmarks against baselines measured in the same run, 2 workers:
//   a) Submit(ctx.Background(), empty f), 4 goroutines x 4 sessions,
//      against the old type's design (oldSession below); target >= 1.0x,
//      not more: the limit of any synchronous Submit is an inline call
//      (f on the caller's goroutine under a mutex: inlineSession, a
//      reference row, not a target), which the old design is plus a
//      goroutine and a channel per Submit, and accel's direct hand-off is
//      plus the scheduler's submit, visit begin and end (two cgo calls);
//   b) asynchronous submit of empty ops, 4 goroutines, against a buffered
//      Go channel handing funcs to one worker goroutine; target >= 1.2x;
//   c) a Critical session's Submit latency while 6 Low sessions flood with
//      2 ms ops, against the old design in the same situation; target p99
//      <= 1.5 x one Low op;
// plus the per-op crossing costs (Go->C call, C->Go callback).
// `go test -bench .` runs them one by one; `make bench-go` (TestBenchTable
// with ACCEL_BENCH_GO=1) interleaves repetitions and prints medians,
// ratios and each target, met or missed. Where one is missed, a profile
// says where the time goes: `go test -run '^$' -bench 'Submit/accel$'
// -cpuprofile cpu.out` (or 'Async/accel$'), then `go tool pprof -top
// accel.test cpu.out` (C code shows as runtime.cgocall).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ---- the baseline: the old type's design ---------------------------------

// oldSession is the design of the type this package replaces: a mutex per
// session held while f runs on the caller's goroutine, taken through a
// goroutine and a channel per Submit so that ctx can end the wait.
type oldSession struct {
	mu                    sync.Mutex
	closed                atomic.Bool
	dispatched, completed atomic.Uint64
	failed                atomic.Uint64
}

func (o *oldSession) Submit(ctx context.Context, f func(*Session) error) error {
	if o.closed.Load() {
		return ErrSessionClosed
	}
	got := make(chan struct{})
	go func() {
		o.mu.Lock()
		close(got)
	}()
	select {
	case <-got:
	case <-ctx.Done():
		go func() { <-got; o.mu.Unlock() }()
		return ctx.Err()
	}
	defer o.mu.Unlock()
	o.dispatched.Add(1)
	if err := f(nil); err != nil {
		o.failed.Add(1)
		return err
	}
	o.completed.Add(1)
	return nil
}

// inlineSession is the limit of a synchronous Submit: f called inline
// under the session's mutex, no goroutine or channel per Submit (and so
// no ctx while waiting for the lock), no order or priority between
// sessions. A reference row for a), not a baseline.
type inlineSession struct{ mu sync.Mutex }

func (o *inlineSession) Submit(_ context.Context, f func(*Session) error) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return f(nil)
}

// ---- shared set-up -------------------------------------------------------

// benchCombine applies ACCEL_BENCH_COMBINE to a runtime a benchmark
// created: "0" switches the combining of SubmitAsyncs into groups off
// (docs/go.md), for A/B pairs of the same binary. Per runtime, so that
// the tests of the same binary keep the default.
func benchCombine(rt *Runtime) *Runtime {
	if os.Getenv("ACCEL_BENCH_COMBINE") == "0" {
		rt.setCombineForTest(false)
	}
	return rt
}

const benchWorkers = 2

func benchRuntime(b *testing.B, shortLane int) *Runtime {
	rt, err := NewRuntime(RuntimeConfig{Workers: benchWorkers, ShortLaneWorkers: shortLane})
	if err != nil {
		b.Fatal(err)
	}
	return benchCombine(rt)
}

func benchSessions(b *testing.B, rt *Runtime, n int, opts ...VMSessionOption) []*VMSession {
	vs := make([]*VMSession, n)
	for i := range vs {
		v, err := rt.NewVMSession("bench-"+strconv.Itoa(i), opts...)
		if err != nil {
			b.Fatal(err)
		}
		vs[i] = v
	}
	return vs
}

// parallel runs body(g, n) on g goroutines, splitting b.N between them.
func parallel(b *testing.B, goroutines int, body func(g, n int)) {
	var wg sync.WaitGroup
	b.ResetTimer()
	for g := 0; g < goroutines; g++ {
		n := b.N / goroutines
		if g < b.N%goroutines {
			n++
		}
		wg.Add(1)
		go func(g, n int) { defer wg.Done(); body(g, n) }(g, n)
	}
	wg.Wait()
}

func emptyOp(*Session) error { return nil }

// ---- a) synchronous Submit ------------------------------------------------

func benchSubmitAccel(b *testing.B) { benchSubmitWith(b, context.Background()) }

// benchSubmitAccelCtx: as benchSubmitAccel with a ctx that can be
// canceled (the path that registers with ctx and can be interrupted).
func benchSubmitAccelCtx(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	benchSubmitWith(b, ctx)
}

// benchSubmitWith: 4 goroutines, each submitting empty ops with ctx to
// its own one of 4 sessions.
func benchSubmitWith(b *testing.B, ctx context.Context) {
	rt := benchRuntime(b, 0)
	defer rt.Close()
	vs := benchSessions(b, rt, 4)
	parallel(b, 4, func(g, n int) {
		v := vs[g%4]
		for i := 0; i < n; i++ {
			if err := v.Submit(ctx, emptyOp); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
}

func benchSubmitOld(b *testing.B) {
	vs := make([]*oldSession, 4)
	for i := range vs {
		vs[i] = new(oldSession)
	}
	ctx := context.Background()
	parallel(b, 4, func(g, n int) {
		v := vs[g%4]
		for i := 0; i < n; i++ {
			if err := v.Submit(ctx, emptyOp); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func benchSubmitInline(b *testing.B) {
	vs := make([]*inlineSession, 4)
	for i := range vs {
		vs[i] = new(inlineSession)
	}
	ctx := context.Background()
	parallel(b, 4, func(g, n int) {
		v := vs[g%4]
		for i := 0; i < n; i++ {
			if err := v.Submit(ctx, emptyOp); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkSubmit(b *testing.B) {
	b.Run("accel", benchSubmitAccel)
	b.Run("accel-cancellable-ctx", benchSubmitAccelCtx)
	b.Run("old-design", benchSubmitOld)
	b.Run("inline-call", benchSubmitInline)
}

// ---- nested Submit ----------------------------------------------------------

// nestedInner is how many nested Submits one outer op makes.
const nestedInner = 50

// benchNestedAccel: from inside an op of session a on a host worker (a
// SubmitAsync's), Submits of empty ops to session b, one at a time; ns per
// nested Submit. b idle, each runs by the direct hand-off on a's
// goroutine, a's visit lending it the thread (docs/go.md).
func benchNestedAccel(b *testing.B) { benchNested(b, true) }

// benchNestedQueued: the same with the direct hand-off off: each nested
// op is queued for a host worker while a's goroutine waits parked off its
// thread (park, compensate.go), as when b is busy or its ops are long.
func benchNestedQueued(b *testing.B) { benchNested(b, false) }

func benchNested(b *testing.B, handoff bool) {
	rt := benchRuntime(b, 0)
	defer rt.Close()
	rt.setOwnForTest(handoff)
	vs := benchSessions(b, rt, 2)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i += nestedInner {
		err := onHostWorker(vs[0], func(*Session) error {
			for k := 0; k < nestedInner; k++ {
				if err := vs[1].Submit(ctx, emptyOp); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// benchNestedOld: the same through the old type's design, f run inline.
func benchNestedOld(b *testing.B) {
	a, c := new(oldSession), new(oldSession)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i += nestedInner {
		err := a.Submit(ctx, func(*Session) error {
			for k := 0; k < nestedInner; k++ {
				if err := c.Submit(ctx, emptyOp); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNestedSubmit(b *testing.B) {
	b.Run("accel", benchNestedAccel)
	b.Run("accel-queued", benchNestedQueued)
	b.Run("old-design", benchNestedOld)
}

// BenchmarkBlocking: one empty s.Blocking inside an op on a host worker
// (the park, the unlock, the record and the way back), called from f
// itself and 60 frames deeper: an announced wait costs the same at any
// depth of the op's stack.
func BenchmarkBlocking(b *testing.B) {
	for _, depth := range []int{0, 60} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			rt := benchRuntime(b, 0)
			defer rt.Close()
			v, err := rt.NewVMSession("blocking")
			if err != nil {
				b.Fatal(err)
			}
			err = onHostWorker(v, func(s *Session) error {
				atDepth(depth, func() {
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						s.Blocking(func() {})
					}
					b.StopTimer()
				})
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

// atDepth calls f n frames below its caller.
func atDepth(n int, f func()) {
	if n == 0 {
		f()
		return
	}
	atDepth(n-1, f)
}

// ---- b) asynchronous submit ------------------------------------------------

func benchAsyncAccel(b *testing.B) {
	rt := benchRuntime(b, 0)
	defer rt.Close()
	vs := benchSessions(b, rt, 4, WithQueueDepth(1<<14))
	parallel(b, 4, func(g, n int) {
		v := vs[g]
		for i := 0; i < n; i++ {
			for {
				err := v.SubmitAsync(emptyOp, nil)
				if err == nil {
					break
				}
				if !errors.Is(err, ErrQueueFull) {
					b.Error(err)
					return
				}
				v.Sync() // full: let the workers catch up
			}
		}
	})
	for _, v := range vs {
		v.Sync()
	}
	b.StopTimer()
}

func benchAsyncBatchAccel(b *testing.B) {
	rt := benchRuntime(b, 0)
	defer rt.Close()
	vs := benchSessions(b, rt, 4, WithQueueDepth(1<<14))
	parallel(b, 4, func(g, n int) {
		v := vs[g]
		var fs [32]func(*Session) error
		for i := range fs {
			fs[i] = emptyOp
		}
		for n > 0 {
			k := len(fs)
			if n < k {
				k = n
			}
			got, err := v.SubmitAsyncBatch(fs[:k], nil)
			if err != nil && !errors.Is(err, ErrQueueFull) {
				b.Error(err)
				return
			}
			if got < k {
				v.Sync()
			}
			n -= got
		}
	})
	for _, v := range vs {
		v.Sync()
	}
	b.StopTimer()
}

func benchAsyncChan(b *testing.B) {
	ch := make(chan func(*Session) error, 1024)
	var done sync.WaitGroup
	done.Add(1)
	go func() {
		defer done.Done()
		for f := range ch {
			f(nil)
		}
	}()
	parallel(b, 4, func(g, n int) {
		for i := 0; i < n; i++ {
			ch <- emptyOp
		}
	})
	close(ch)
	done.Wait()
}

// One goroutine, one op at a time: SubmitAsync and wait for its done
// (what combining costs a submit that finds no group to join).
func BenchmarkAsyncRoundTrip(b *testing.B) {
	rt := benchRuntime(b, 0)
	defer rt.Close()
	v := benchSessions(b, rt, 1)[0]
	ch := make(chan error, 1)
	done := func(err error) { ch <- err }
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := v.SubmitAsync(emptyOp, done); err != nil {
			b.Fatal(err)
		}
		<-ch
	}
}

func BenchmarkAsync(b *testing.B) {
	b.Run("accel", benchAsyncAccel)
	b.Run("accel-batch32", benchAsyncBatchAccel)
	b.Run("go-chan", benchAsyncChan)
}

// ---- c) latency of a Critical session under a flood of 2 ms ops -------------

const floodOp = 2 * time.Millisecond

type latencyResult struct {
	p50, p99 time.Duration
	samples  int
}

func percentiles(d []time.Duration) latencyResult {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	if len(d) == 0 {
		return latencyResult{}
	}
	return latencyResult{p50: d[len(d)/2], p99: d[(len(d)*99)/100], samples: len(d)}
}

func spinOp(*Session) error { spin(floodOp); return nil }

// latencyAccel: 6 Low sessions kept backlogged (each completion resubmits
// from the worker), a Critical session submitting one empty op at a time.
// A short-lane worker is what keeps short ops from waiting behind long
// ones (docs/scheduler.md).
func latencyAccel(dur time.Duration) latencyResult { return latencyAccelWith(dur, false) }

// latencyAccelLocked: the same with the Critical caller holding a mutex
// around each Submit that every Low op also takes (a lock the node's VMs
// share): a design that ran a Low op on the Critical caller's goroutine
// would wait there for a whole 2 ms op, or deadlock.
func latencyAccelLocked(dur time.Duration) latencyResult { return latencyAccelWith(dur, true) }

func latencyAccelWith(dur time.Duration, locked bool) latencyResult {
	rt, err := NewRuntime(RuntimeConfig{Workers: benchWorkers, ShortLaneWorkers: 1})
	if err != nil {
		panic(err)
	}
	benchCombine(rt)
	defer rt.Close()
	var stop atomic.Bool
	var mu sync.Mutex
	low := spinOp
	if locked {
		low = func(s *Session) error { mu.Lock(); mu.Unlock(); return spinOp(s) }
	}
	for i := 0; i < 6; i++ {
		v, _ := rt.NewVMSession("low-"+strconv.Itoa(i), WithPriority(PriorityLow))
		var again func(error)
		again = func(error) {
			if !stop.Load() {
				v.SubmitAsync(low, again)
			}
		}
		for k := 0; k < 4; k++ {
			v.SubmitAsync(low, again)
		}
	}
	crit, _ := rt.NewVMSession("critical", WithPriority(PriorityCritical))
	var lat []time.Duration
	ctx := context.Background()
	for end := time.Now().Add(dur); time.Now().Before(end); {
		t := time.Now()
		if locked {
			mu.Lock()
		}
		crit.Submit(ctx, emptyOp)
		if locked {
			mu.Unlock()
		}
		lat = append(lat, time.Since(t))
		time.Sleep(500 * time.Microsecond)
	}
	stop.Store(true)
	return percentiles(lat)
}

func latencyOld(dur time.Duration) latencyResult {
	var stop atomic.Bool
	var wg sync.WaitGroup
	ctx := context.Background()
	for i := 0; i < 6; i++ {
		o := new(oldSession)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				o.Submit(ctx, spinOp)
			}
		}()
	}
	crit := new(oldSession)
	var lat []time.Duration
	for end := time.Now().Add(dur); time.Now().Before(end); {
		t := time.Now()
		crit.Submit(ctx, emptyOp)
		lat = append(lat, time.Since(t))
		time.Sleep(500 * time.Microsecond)
	}
	stop.Store(true)
	wg.Wait()
	return percentiles(lat)
}

func BenchmarkCriticalLatency(b *testing.B) {
	for _, c := range []struct {
		name string
		fn   func(time.Duration) latencyResult
	}{{"accel", latencyAccel}, {"old-design", latencyOld}} {
		b.Run(c.name, func(b *testing.B) {
			r := c.fn(time.Second)
			b.ReportMetric(float64(r.p50.Microseconds()), "p50-us")
			b.ReportMetric(float64(r.p99.Microseconds()), "p99-us")
			b.ReportMetric(float64(r.p99)/float64(floodOp), "p99/op")
		})
	}
}

// ---- crossing costs ---------------------------------------------------------

func BenchmarkCrossing(b *testing.B) {
	b.Run("submit-1goroutine", func(b *testing.B) {
		rt := benchRuntime(b, 0)
		defer rt.Close()
		v := benchSessions(b, rt, 1)[0]
		ctx := context.Background()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			v.Submit(ctx, emptyOp)
		}
		b.StopTimer()
	})
}

// ---- the table of `make bench-go` -------------------------------------------

func median(x []float64) float64 {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func opsPerSec(f func(*testing.B)) float64 {
	r := testing.Benchmark(f)
	if r.N == 0 || r.T == 0 {
		return 0
	}
	return float64(r.N) / r.T.Seconds()
}

// TestBenchTable interleaves repetitions of each benchmark and its
// baseline (A B A B ...) and prints medians and ratios. It runs only with
// ACCEL_BENCH_GO=1 (make bench-go); ACCEL_BENCH_REPS sets the repetitions.
func TestBenchTable(t *testing.T) {
	if os.Getenv("ACCEL_BENCH_GO") == "" {
		t.Skip("set ACCEL_BENCH_GO=1 (make bench-go)")
	}
	reps := 5
	if n, err := strconv.Atoi(os.Getenv("ACCEL_BENCH_REPS")); err == nil && n > 0 {
		reps = n
	}
	var subA, subCtx, subOld, subInline, asyncA, asyncB, asyncChan []float64
	var latA, latL, latOld []latencyResult
	var sub1 []float64
	for r := 0; r < reps; r++ {
		subA = append(subA, opsPerSec(benchSubmitAccel))
		subOld = append(subOld, opsPerSec(benchSubmitOld))
		subCtx = append(subCtx, opsPerSec(benchSubmitAccelCtx))
		subInline = append(subInline, opsPerSec(benchSubmitInline))
		asyncA = append(asyncA, opsPerSec(benchAsyncAccel))
		asyncChan = append(asyncChan, opsPerSec(benchAsyncChan))
		asyncB = append(asyncB, opsPerSec(benchAsyncBatchAccel))
		latA = append(latA, latencyAccel(time.Second))
		latL = append(latL, latencyAccelLocked(time.Second))
		latOld = append(latOld, latencyOld(time.Second))
		sub1 = append(sub1, 1e9/opsPerSec(func(b *testing.B) {
			rt := benchRuntime(b, 0)
			defer rt.Close()
			v := benchSessions(b, rt, 1)[0]
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v.Submit(context.Background(), emptyOp)
			}
			b.StopTimer()
		}))
	}
	p99 := func(l []latencyResult) (float64, float64) {
		var a, b []float64
		for _, x := range l {
			a = append(a, float64(x.p99))
			b = append(b, float64(x.p50))
		}
		return median(a), median(b)
	}
	la99, la50 := p99(latA)
	lo99, lo50 := p99(latOld)
	ll99, ll50 := p99(latL)
	mops := func(x []float64) string { return fmt.Sprintf("%.2f Mops/s", median(x)/1e6) }
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**missed**"
	}
	ra, rb := median(subA)/median(subOld), median(asyncA)/median(asyncChan)
	fmt.Printf("\naccel Go binding, %d workers, GOMAXPROCS=%d, median of %d interleaved repetitions\n\n", benchWorkers, runtimeGOMAXPROCS(), reps)
	fmt.Printf("| benchmark | accel | baseline (same run) | ratio | target |\n| --- | --- | --- | --- | --- |\n")
	fmt.Printf("| a) Submit, empty f, 4 goroutines x 4 sessions | %s (%.0f ns/op) | %s (%.0f ns/op) old design | %.2fx | >= 1.0x: %s |\n",
		mops(subA), 1e9/median(subA), mops(subOld), 1e9/median(subOld), ra, verdict(ra >= 1.0))
	fmt.Printf("| a') the same with a cancellable ctx | %s (%.0f ns/op) | %s old design | %.2fx | |\n",
		mops(subCtx), 1e9/median(subCtx), mops(subOld), median(subCtx)/median(subOld))
	fmt.Printf("| a'') the limit: f called inline under a mutex (no ctx, no scheduler) | %s (%.0f ns/op) | %s old design | %.2fx | (reference) |\n",
		mops(subInline), 1e9/median(subInline), mops(subOld), median(subInline)/median(subOld))
	fmt.Printf("| b) async submit, empty ops, 4 goroutines | %s | %s buffered Go channel | %.2fx | >= 1.2x: %s |\n",
		mops(asyncA), mops(asyncChan), rb, verdict(rb >= 1.2))
	fmt.Printf("| b') async submit in batches of 32 | %s | %s buffered Go channel | %.2fx | |\n",
		mops(asyncB), mops(asyncChan), median(asyncB)/median(asyncChan))
	fmt.Printf("| c) Critical Submit p99 under 6 Low x 2 ms flood | %.2f ms (p50 %.3f ms) = %.2f x op | %.2f ms (p50 %.3f ms) old design | | p99 <= 1.5 x op: %s |\n",
		la99/1e6, la50/1e6, la99/float64(floodOp), lo99/1e6, lo50/1e6, verdict(la99 <= 1.5*float64(floodOp)))
	fmt.Printf("| c') c) with the Critical caller holding a lock the Low ops take | %.2f ms (p50 %.3f ms) = %.2f x op | | | p99 <= 1.5 x op: %s |\n",
		ll99/1e6, ll50/1e6, ll99/float64(floodOp), verdict(ll99 <= 1.5*float64(floodOp)))
	fmt.Printf("\nwhole Submit (1 goroutine, round trip) %.0f ns\n", median(sub1))
}
