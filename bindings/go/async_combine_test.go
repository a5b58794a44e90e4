// Promises: 1, 2

package accel

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// openGroupLen returns how many ops the group v.open names holds, sealed
// or not (0: none named).
func openGroupLen(v *VMSession) int {
	o := v.open.Load()
	if o == 0 || o&openPend != 0 {
		return 0
	}
	w := recOfToken(o).gword.Load()
	if w>>grpGenSh != o>>grpGenSh {
		return 0
	}
	return int(w & grpCount)
}

// Real-time order on one session from many goroutines mixing SubmitAsync
// (combined into groups) with SubmitAsyncBatch and Submit: an op whose
// submit returned before another's submit began runs first, whichever
// goroutines they came from (each goroutine's own sequence is a case of
// it). Every op stamps a global counter before its submit (start) and
// after it returns (ret); in the run order no op may come before an op
// whose ret is <= its start.
func TestAsyncCombineFIFO(t *testing.T) {
	rt := newTestRuntime(t, 2)
	for round := 0; round < 5; round++ {
		testCombineFIFO(t, rt)
	}
}

func testCombineFIFO(t *testing.T, rt *Runtime) {
	v, err := rt.NewVMSession("combine-fifo", WithQueueDepth(64))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		done := step(t, "v.Close at the round's end")
		v.Close()
		done()
	}()
	const goroutines, perG = 4, 3000
	n := goroutines * perG
	start := make([]uint64, n)
	ret := make([]uint64, n)
	var clock atomic.Uint64
	var mu sync.Mutex
	ran := make([]int, 0, n)
	op := func(id int) func(*Session) error {
		return func(*Session) error {
			mu.Lock()
			ran = append(ran, id)
			mu.Unlock()
			return nil
		}
	}
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < perG; {
				id := g*perG + i
				start[id] = clock.Load()
				k := 1
				var err error
				switch {
				case i%97 == 0:
					err = v.Submit(bg(), op(id))
				case i%13 == 0 && i+1 < perG:
					k = 2
					start[id+1] = start[id]
					var got int
					got, err = v.SubmitAsyncBatch([]func(*Session) error{op(id), op(id + 1)}, nil)
					if got == 1 { // the queue filled after the first
						k = 1
					}
					if got > 0 {
						err = nil
					}
				default:
					err = v.SubmitAsync(op(id), nil)
				}
				if errors.Is(err, ErrQueueFull) {
					v.Sync()
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				r := clock.Add(1)
				for j := 0; j < k; j++ {
					ret[id+j] = r
				}
				i += k
			}
		}(g)
	}
	done := stepLong(t, "the submitting goroutines (wg.Wait)")
	wg.Wait()
	done()
	done = step(t, "v.Sync after the submits")
	v.Sync()
	done()
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != n {
		t.Fatalf("%d ops ran, want %d", len(ran), n)
	}
	// minRet[i]: the smallest ret among ran[i:].
	minRet := make([]uint64, n+1)
	minRet[n] = ^uint64(0)
	for i := n - 1; i >= 0; i-- {
		minRet[i] = min(minRet[i+1], ret[ran[i]])
	}
	for i, id := range ran {
		if minRet[i+1] <= start[id] {
			t.Fatalf("op %d (goroutine %d) ran at %d, before an op whose submit returned (at %d) before its own began (at %d)",
				id, id/perG, i, minRet[i+1], start[id])
		}
	}
	if st := v.FullStats(); st.Submitted != uint64(n) || st.Completed != uint64(n) || st.Dispatched != uint64(n) {
		t.Fatalf("stats %+v, want %d submitted, dispatched and completed", st, n)
	}
}

// Close racing SubmitAsyncs: every op accepted runs exactly once, and
// before Close returns (it drains); every op refused gets ErrSessionClosed
// and never runs; the counters are exact.
func TestAsyncCombineCloseRace(t *testing.T) {
	rt := newTestRuntime(t, 2)
	for round := 0; round < 20; round++ {
		v, err := rt.NewVMSession("combine-close")
		if err != nil {
			t.Fatal(err)
		}
		const goroutines, most = 4, 4000
		var runs, dones [goroutines * most]atomic.Int32
		var accepted [goroutines]int
		var wg sync.WaitGroup
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < most; i++ {
					id := g*most + i
					err := v.SubmitAsync(func(*Session) error { runs[id].Add(1); return nil },
						func(err error) {
							if err != nil {
								t.Errorf("op %d: done(%v)", id, err)
							}
							dones[id].Add(1)
						})
					if errors.Is(err, ErrSessionClosed) {
						return
					}
					if errors.Is(err, ErrQueueFull) {
						i-- // not accepted: try the same op again
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					accepted[g]++
				}
			}(g)
		}
		done := step(t, fmt.Sprintf("round %d: waitSubmitted(v, 100)", round))
		waitSubmitted(v, 100)
		done()
		done = step(t, fmt.Sprintf("round %d: v.Close racing the SubmitAsyncs", round))
		err = v.Close()
		done()
		if err != nil {
			t.Fatal(err)
		}
		ranAtClose := 0
		for i := range runs {
			ranAtClose += int(runs[i].Load())
		}
		done = step(t, fmt.Sprintf("round %d: the submitting goroutines (wg.Wait)", round))
		wg.Wait()
		done()
		total := 0
		for g := 0; g < goroutines; g++ {
			for i := 0; i < most; i++ {
				id := g*most + i
				want := int32(0)
				if i < accepted[g] {
					want = 1
				}
				if runs[id].Load() != want || dones[id].Load() != want {
					t.Fatalf("round %d op %d: ran %d times, done %d times, want %d", round, id, runs[id].Load(), dones[id].Load(), want)
				}
			}
			total += accepted[g]
		}
		if ranAtClose != total {
			t.Fatalf("round %d: %d ops had run when Close returned, %d were accepted", round, ranAtClose, total)
		}
		if err := v.SubmitAsync(emptyOp, nil); !errors.Is(err, ErrSessionClosed) {
			t.Fatalf("SubmitAsync after Close = %v", err)
		}
		st := v.FullStats()
		if st.Submitted != uint64(total) || st.Dispatched != uint64(total) || st.Completed != uint64(total) || st.Canceled != 0 {
			t.Fatalf("round %d: stats %+v, want %d submitted, dispatched, completed", round, st, total)
		}
	}
}

// gatedGroup occupies v's worker with an op of v, queues fs with
// SubmitAsync behind it (they combine into one group), checks that they
// did, and returns a func that lets the first op go on (then it runs
// inside(), from inside its op) and the channel of the ops' dones.
func gatedGroup(t *testing.T, v *VMSession, fs []func(*Session) error, inside func()) (release func(), dones chan [2]any) {
	t.Helper()
	started, gate := make(chan struct{}), make(chan struct{})
	if err := v.SubmitAsync(func(*Session) error {
		close(started)
		<-gate
		inside()
		return nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	done := step(t, "the gating op starts")
	<-started
	done()
	ok := false
	defer func() {
		if !ok {
			close(gate) // a failed check must not leave the worker held
		}
	}()
	dones = make(chan [2]any, 2*len(fs)) // room for extras, counted
	for i, f := range fs {
		i := i
		if err := v.SubmitAsync(f, func(err error) { dones <- [2]any{i, err} }); err != nil {
			t.Fatal(err)
		}
	}
	if got := openGroupLen(v); got != len(fs) {
		t.Fatalf("open group holds %d ops, want all %d combined", got, len(fs))
	}
	ok = true
	return func() { close(gate) }, dones
}

// ACCEL_CLOSE_CANCEL with a queued group of combined ops: each op
// completes unrun with the close status, once, and counts as canceled.
func TestAsyncCombineCloseCancel(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("combine-cancel")
	const n = 10
	var ran atomic.Int32
	fs := make([]func(*Session) error, n)
	for i := range fs {
		fs[i] = func(*Session) error { ran.Add(1); return nil }
	}
	// The first op closes the session from inside (no wait there) while
	// the group is queued behind it.
	release, dones := gatedGroup(t, v, fs, func() {
		if rc := closeCancelForTest(v); rc != 0 {
			t.Errorf("close: %d", rc)
		}
	})
	release()
	done := step(t, "v.Close drains the canceled group")
	v.Close() // waits until every accepted op has completed (done returned)
	done()
	seen := make([]int, n)
	for len(dones) > 0 {
		d := <-dones
		seen[d[0].(int)]++
		if err, _ := d[1].(error); !errors.Is(err, ErrSessionClosed) {
			t.Errorf("op %d: done(%v), want ErrSessionClosed", d[0], d[1])
		}
	}
	for i, c := range seen {
		if c != 1 {
			t.Fatalf("op %d completed %d times, want once", i, c)
		}
	}
	if ran.Load() != 0 {
		t.Fatalf("%d canceled ops ran", ran.Load())
	}
	if st := v.FullStats(); st.Submitted != n+1 || st.Canceled != n || st.Dispatched != 1 || st.Completed != 1 {
		t.Fatalf("stats %+v, want %d submitted, %d canceled, 1 dispatched", st, n+1, n)
	}
}

// A panic in an op of a combined group: that op's done gets the
// *PanicError, counted as failed; the others run, in order.
func TestAsyncCombinePanic(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("combine-panic")
	const n = 6
	var order []int
	fs := make([]func(*Session) error, n)
	for i := range fs {
		i := i
		fs[i] = func(*Session) error {
			if i == 2 {
				panic("op 2")
			}
			order = append(order, i) // ops of a session never overlap
			return nil
		}
	}
	release, dones := gatedGroup(t, v, fs, func() {})
	release()
	done := step(t, "v.Sync after the panicking group")
	v.Sync()
	done()
	if len(dones) != n {
		t.Fatalf("%d of %d ops completed", len(dones), n)
	}
	for k := 0; k < n; k++ {
		d := <-dones
		var pe *PanicError
		err, _ := d[1].(error)
		if i := d[0].(int); (i == 2) != errors.As(err, &pe) || (i != 2 && err != nil) {
			t.Fatalf("op %d: done(%v)", i, err)
		}
	}
	if len(order) != n-1 || order[0] != 0 || order[1] != 1 || order[2] != 3 || order[4] != 5 {
		t.Fatalf("ran %v", order)
	}
	if st := v.FullStats(); st.Failed != 1 || st.Completed != n || st.Dispatched != n+1 {
		t.Fatalf("stats %+v, want 1 failed, %d completed", st, n)
	}
}

// Ops far below ShortOp combine; a session whose ops are long does not
// (a group is one op to the scheduler: combined long ops would leave the
// short lane and overrun visits), and QuantumOps 1 turns combining off.
func TestAsyncCombineOnlyShortOps(t *testing.T) {
	rt, err := NewRuntime(RuntimeConfig{Workers: 1, ShortOp: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		done := step(t, "rt.Close at the test's end")
		rt.Close()
		done()
	}()
	long, _ := rt.NewVMSession("long")
	long.SubmitAsync(func(*Session) error { spin(time.Millisecond); return nil }, nil)
	done := step(t, "long.Sync after its first op")
	long.Sync() // measured: 1 ms an op, above half of ShortOp
	done()
	gate, _ := rt.NewVMSession("gate")
	release := blockWorker(t, gate)
	for i := 0; i < 3; i++ {
		long.SubmitAsync(emptyOp, nil)
	}
	if got := openGroupLen(long); got != 1 {
		t.Errorf("long ops: open group holds %d, want 1 (not combined)", got)
	}
	short, _ := rt.NewVMSession("short")
	for i := 0; i < 3; i++ {
		short.SubmitAsync(emptyOp, nil)
	}
	if got := openGroupLen(short); got != 3 {
		t.Errorf("short ops: open group holds %d, want 3", got)
	}
	release()

	q1, err := NewRuntime(RuntimeConfig{Workers: 1, QuantumOps: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		done := step(t, "q1.Close at the test's end")
		q1.Close()
		done()
	}()
	v, _ := q1.NewVMSession("q1")
	release = blockWorker(t, v)
	for i := 0; i < 3; i++ {
		v.SubmitAsync(emptyOp, nil)
	}
	if got := openGroupLen(v); got != 1 {
		t.Errorf("QuantumOps 1: open group holds %d, want 1", got)
	}
	release()
}
