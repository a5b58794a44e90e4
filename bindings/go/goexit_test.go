// Promises: 1

package accel

// runtime.Goexit in f (t.Fatal, t.FailNow) where the op runs off the
// usual host worker path: an op of a group beside a synchronous submitter's
// helper worker, and ops that accel_runtime_destroy runs inside its call.
// Each wait has a step watchdog.

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// groupProbe is one group of ops whose op exit calls runtime.Goexit: it
// records where each op ran in the session's order and what each
// completion got.
type groupProbe struct {
	exit  int
	seq   *atomic.Int32
	pos   []atomic.Int32 // 1 + the op's place among the session's ops run; 0: never ran
	runs  []atomic.Int32
	calls []atomic.Int32
	errs  []error
	wg    sync.WaitGroup
}

// queueGroupsAndGoexit queues on v four combined SubmitAsyncs (ga, op 1
// calls runtime.Goexit), a SubmitAsyncBatch of four (gb, op 2 does), and,
// on a goroutine of its own, a Submit whose f calls runtime.Goexit:
// exited closes when that goroutine ends, returned if its Submit returned
// (it must not).
func queueGroupsAndGoexit(t *testing.T, v *VMSession, seq *atomic.Int32) (ga, gb *groupProbe, exited, returned chan struct{}) {
	t.Helper()
	ga = newGroupProbe(4, 1, seq)
	for i := 0; i < 4; i++ {
		i := i
		if err := v.SubmitAsync(ga.f(i), func(err error) { ga.done(i, err) }); err != nil {
			t.Fatal(err)
		}
	}
	gb = newGroupProbe(4, 2, seq)
	fs := make([]func(*Session) error, 4)
	for i := range fs {
		fs[i] = gb.f(i)
	}
	if k, err := v.SubmitAsyncBatch(fs, gb.done); k != 4 || err != nil {
		t.Fatalf("SubmitAsyncBatch: %d, %v", k, err)
	}
	exited, returned = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		v.Submit(bg(), func(*Session) error { runtime.Goexit(); return nil })
		close(returned)
	}()
	return ga, gb, exited, returned
}

// checkGroupsAndGoexit waits for what queueGroupsAndGoexit queued and
// checks it: each group's ops ran in order with their own results, and
// the Goexit Submit's goroutine ended without its Submit returning.
func checkGroupsAndGoexit(t *testing.T, ga, gb *groupProbe, exited, returned chan struct{}) {
	t.Helper()
	done := step(t, "the groups' completions")
	ga.wg.Wait()
	gb.wg.Wait()
	done()
	ga.check(t, "combined SubmitAsyncs")
	gb.check(t, "SubmitAsyncBatch")
	done = step(t, "the goroutine whose Submit's op called Goexit")
	<-exited
	done()
	select {
	case <-returned:
		t.Error("Submit returned after its f called runtime.Goexit")
	default:
	}
}

func newGroupProbe(n, exit int, seq *atomic.Int32) *groupProbe {
	p := &groupProbe{exit: exit, seq: seq, pos: make([]atomic.Int32, n),
		runs: make([]atomic.Int32, n), calls: make([]atomic.Int32, n), errs: make([]error, n)}
	p.wg.Add(n)
	return p
}

func (p *groupProbe) f(i int) func(*Session) error {
	return func(*Session) error {
		p.runs[i].Add(1)
		p.pos[i].Store(p.seq.Add(1))
		if i == p.exit {
			runtime.Goexit()
		}
		return nil
	}
}

func (p *groupProbe) done(i int, err error) {
	p.errs[i] = err
	p.calls[i].Add(1)
	p.wg.Done()
}

// check reports every op that did not run once, in order, with its own
// result in its one completion (ErrGoexit for op exit, nil for the rest).
func (p *groupProbe) check(t *testing.T, what string) {
	t.Helper()
	for i := range p.errs {
		if r := p.runs[i].Load(); r != 1 {
			t.Errorf("%s: op %d ran %d times (completion got %v)", what, i, r, p.errs[i])
		}
		if c := p.calls[i].Load(); c != 1 {
			t.Errorf("%s: op %d: completion called %d times", what, i, c)
		}
		if i == p.exit && !errors.Is(p.errs[i], ErrGoexit) {
			t.Errorf("%s: op %d called Goexit, completion got %v", what, i, p.errs[i])
		} else if i != p.exit && p.errs[i] != nil {
			t.Errorf("%s: op %d: completion got %v, want nil", what, i, p.errs[i])
		}
		if prev, at := p.pos[max(i-1, 0)].Load(), p.pos[i].Load(); i > 0 && prev != 0 && at != 0 && at <= prev {
			t.Errorf("%s: op %d ran at %d, not after op %d (at %d)", what, i, at, i-1, prev)
		}
	}
}

// A, as a user can make it: combined SubmitAsyncs (and SubmitAsyncBatch
// groups) with a Goexit in one op, submitted while synchronous Submits of
// the same session run on their callers' goroutines when the session is
// idle (the direct hand-off to a helper worker). Only the exiting op fails;
// the group's later ops run in order, each completion gets its own op's
// result, and every Submit returns nil. Then the session takes a sync
// and an async op.
func TestGoexitInGroupBesideOwnSubmits(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("v")
	var seq atomic.Int32
	const rounds, n = 200, 5
	for round := 0; round < rounds; round++ {
		p := newGroupProbe(n, round%n, &seq)
		subs := make(chan error, 2)
		go func() { subs <- v.Submit(bg(), func(*Session) error { return nil }) }()
		if round%2 == 0 {
			for i := 0; i < n; i++ {
				i := i
				if err := v.SubmitAsync(p.f(i), func(err error) { p.done(i, err) }); err != nil {
					t.Fatal(err)
				}
			}
		} else {
			fs := make([]func(*Session) error, n)
			for i := range fs {
				fs[i] = p.f(i)
			}
			if k, err := v.SubmitAsyncBatch(fs, p.done); k != n || err != nil {
				t.Fatalf("SubmitAsyncBatch: %d, %v", k, err)
			}
		}
		go func() { subs <- v.Submit(bg(), func(*Session) error { return nil }) }()
		done := step(t, fmt.Sprintf("round %d: the group's completions", round))
		p.wg.Wait()
		done()
		for k := 0; k < 2; k++ {
			done = step(t, fmt.Sprintf("round %d: Submit %d beside the group", round, k))
			if err := <-subs; err != nil {
				t.Fatalf("round %d: Submit beside the group: %v", round, err)
			}
			done()
		}
		p.check(t, fmt.Sprintf("round %d", round))
		if t.Failed() {
			return
		}
	}
	done := step(t, "Submit and SubmitAsync after the rounds")
	if err := v.Submit(bg(), func(*Session) error { return nil }); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	if err := v.SubmitAsync(func(*Session) error { return nil }, func(err error) { got <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	done()
	done = step(t, "Sync")
	if err := v.Sync(); err != nil {
		t.Fatal(err)
	}
	done()
	st := v.FullStats()
	if st.Failed != rounds || st.Canceled != 0 || st.Completed+st.Failed != st.Submitted {
		t.Errorf("stats %+v: want %d failed (one per round), none canceled", st, rounds)
	}
}

// newGroupForTest builds the record of a group of fs on v as combined
// SubmitAsyncs make it (batch false: each op's completion is done(i, ·)
// through its own cb) or as SubmitAsyncBatch does (batch true: done is
// the group's), sealed, not yet submitted.
func newGroupForTest(v *VMSession, fs []func(*Session) error, done func(int, error), batch bool) *opRec {
	r := allocRec()
	g := groupOf(r)
	for j := range fs {
		if batch {
			g.ops[j] = groupOp{f: fs[j]}
		} else if j > 0 {
			j := j
			g.ops[j] = groupOp{f: fs[j], cb: func(err error) { done(j, err) }}
		}
	}
	sealedGroup(r, len(fs))
	if batch {
		r.fillGroup(v, nil, nil, done, 0)
	} else {
		r.fillGroup(v, fs[0], func(err error) { done(0, err) }, nil, 0)
	}
	return r
}

// A, in the state the test above can only hope for: the C scheduler's
// direct hand-off may begin a Submit's helper visit with another
// submitter's op of the session, first in its order (host.h,
// accel_host_submit_own), here a group (combined SubmitAsyncs, or a
// SubmitAsyncBatch group) with a Goexit in one op, and the Submit's own
// op behind it. Only the exiting op fails; the group's later ops run in
// order with their own results; the Submit's own op runs after them and
// its Submit returns (or, if its f called Goexit too, its goroutine
// ends, and only then). The session then takes a sync and an async op.
func TestGoexitInGroupOnOwnSubmitsHelperWorker(t *testing.T) {
	rt := newTestRuntime(t, 1)
	const n = 5
	var seq atomic.Int32
	for _, batch := range []bool{false, true} {
		for _, exit := range []int{0, 2, n - 1} {
			for _, ownExit := range []bool{false, true} {
				name := fmt.Sprintf("batch=%v exit=%d ownExit=%v", batch, exit, ownExit)
				// A fresh session: idle, so the hand-off happens.
				v, _ := rt.NewVMSession(name)
				p := newGroupProbe(n, exit, &seq)
				fs := make([]func(*Session) error, n)
				for i := range fs {
					fs[i] = p.f(i)
				}
				g := newGroupForTest(v, fs, p.done, batch)
				var ownRuns, ownPos atomic.Int32
				type res struct {
					begun bool
					err   error
				}
				got, exited := make(chan res, 1), make(chan struct{})
				go func() {
					defer close(exited)
					begun, err := v.submitRacedForTest(g, func(*Session) error {
						ownRuns.Add(1)
						ownPos.Store(seq.Add(1))
						if ownExit {
							runtime.Goexit()
						}
						return nil
					})
					got <- res{begun, err}
				}()
				done := step(t, name+": the group's completions")
				p.wg.Wait()
				done()
				done = step(t, name+": the Submit's goroutine")
				<-exited
				done()
				p.check(t, name)
				var r res
				returned := false
				select {
				case r = <-got:
					returned = true
				default:
				}
				switch {
				case returned && ownExit:
					t.Errorf("%s: Submit returned (%v) after its f called Goexit", name, r.err)
				case !returned && !ownExit:
					t.Errorf("%s: the Submit's goroutine ended, though only another op called Goexit", name)
				case returned && r.err != nil:
					t.Errorf("%s: Submit: %v", name, r.err)
				case returned && !r.begun:
					t.Errorf("%s: no direct hand-off: the case was not made", name)
				}
				if ownRuns.Load() != 1 {
					t.Errorf("%s: the Submit's f ran %d times", name, ownRuns.Load())
				} else if last := p.pos[n-1].Load(); last != 0 && ownPos.Load() <= last {
					t.Errorf("%s: the Submit's f ran at %d, before the group's last op (%d)", name, ownPos.Load(), last)
				}
				done = step(t, name+": Submit and SubmitAsync after")
				if err := v.Submit(bg(), func(*Session) error { return nil }); err != nil {
					t.Fatalf("%s: Submit after: %v", name, err)
				}
				after := make(chan error, 1)
				if err := v.SubmitAsync(func(*Session) error { return nil }, func(err error) { after <- err }); err != nil {
					t.Fatal(err)
				}
				if err := <-after; err != nil {
					t.Fatalf("%s: SubmitAsync after: %v", name, err)
				}
				if err := v.Sync(); err != nil {
					t.Fatal(err)
				}
				done()
				st := v.FullStats()
				wantFailed := uint64(1)
				if ownExit {
					wantFailed = 2
				}
				if st.Failed != wantFailed || st.Canceled != 0 || st.Completed+st.Failed != st.Submitted {
					t.Errorf("%s: stats %+v, want %d failed, none canceled", name, st, wantFailed)
				}
				v.Close()
				if t.Failed() {
					return
				}
			}
		}
	}
}

// B: Runtime.Close while a session is being closed with DRAIN by its
// user and ops wait behind a blocked op: a group of combined
// SubmitAsyncs, a SubmitAsyncBatch group and a Submit, each with an op
// that calls runtime.Goexit. Each of those ops fails alone, the rest run
// in order, the Submit's goroutine ends, both Closes return nil, and
// another session's queued op runs too.
func TestGoexitInOpsDrainedAtRuntimeClose(t *testing.T) {
	rt, err := NewRuntime(RuntimeConfig{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := rt.NewVMSession("v")
	w, _ := rt.NewVMSession("w")
	var seq atomic.Int32
	rel, in := make(chan struct{}), make(chan struct{})
	if err := v.SubmitAsync(func(*Session) error { close(in); <-rel; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	done := step(t, "blocking op starts")
	<-in
	done()
	ga, gb, exited, returned := queueGroupsAndGoexit(t, v, &seq)
	done = step(t, "the Submit is queued")
	for v.submitted.Load() != 1+4+4+1 {
		runtime.Gosched()
	}
	done()
	wran := make(chan error, 1)
	if err := w.SubmitAsync(func(*Session) error { return nil }, func(err error) { wran <- err }); err != nil {
		t.Fatal(err)
	}
	closes := make(chan error, 2)
	go func() { closes <- v.Close() }()
	go func() { closes <- rt.Close() }()
	close(rel)
	checkGroupsAndGoexit(t, ga, gb, exited, returned)
	done = step(t, "the other session's op")
	if err := <-wran; err != nil {
		t.Errorf("w's op: %v", err)
	}
	done()
	for k := 0; k < 2; k++ {
		done = step(t, fmt.Sprintf("Close %d", k))
		if err := <-closes; err != nil {
			t.Errorf("Close: %v", err)
		}
		done()
	}
	st := v.FullStats()
	if st.Failed != 3 || st.Canceled != 0 || st.Completed != 1+3+3 {
		t.Errorf("stats %+v: want 7 completed, 3 failed", st)
	}
}

// B where the package's API cannot lead (Runtime.Close drains every
// session before it stops the host workers, so destroy finds nothing queued;
// C also runs a device session's ops inside its own calls): ops still
// queued when accel_runtime_destroy runs them through goAccelRun, a
// callback into Go inside that C call, where Go cannot end a goroutine.
// The host workers are stopped first (stopWorkersForTest) so that the ops
// stay queued. A Goexit in one op of a group fails that op alone and the
// rest run in order; a Submit whose f calls Goexit ends its goroutine;
// an op that calls Submit and Sync of its own session is still inside
// its op there (ErrDeadlock, nil); destroy returns. In a child process:
// the crash this guards against ends the process.
func TestGoexitInOpRunByRuntimeDestroy(t *testing.T) {
	if os.Getenv("ACCEL_TEST_DESTROY_GOEXIT_CHILD") != "1" {
		out, code := runChild(t, "^TestGoexitInOpRunByRuntimeDestroy$", "ACCEL_TEST_DESTROY_GOEXIT_CHILD=1")
		if code != 0 || !strings.Contains(out, "DESTROY-RAN-EVERY-OP") || strings.Contains(out, "--- FAIL") {
			if len(out) > 4000 {
				out = out[:4000] + "\n..."
			}
			t.Fatalf("child run (exit %d):\n%s", code, out)
		}
		return
	}
	rt, err := NewRuntime(RuntimeConfig{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := rt.NewVMSession("v")
	w, _ := rt.NewVMSession("w")
	rt.stopWorkersForTest()
	var seq atomic.Int32
	ga, gb, exited, returned := queueGroupsAndGoexit(t, v, &seq)
	done := step(t, "the Goexit Submit is queued")
	for v.submitted.Load() != 4+4+1 {
		runtime.Gosched()
	}
	done()
	var inner, innerSync error
	nested := make(chan error, 1)
	go func() {
		nested <- v.Submit(bg(), func(*Session) error {
			inner = v.Submit(bg(), func(*Session) error { return nil })
			innerSync = v.Sync()
			return nil
		})
	}()
	done = step(t, "the nesting Submit is queued")
	for v.submitted.Load() != 4+4+1+1 {
		runtime.Gosched()
	}
	done()
	wran := make(chan error, 1)
	if err := w.SubmitAsync(func(*Session) error { return nil }, func(err error) { wran <- err }); err != nil {
		t.Fatal(err)
	}
	// On a goroutine of its own, as a Runtime.Close of the user's: a
	// Goexit that got out of f would end it inside the C call.
	var derr error
	destroyEnded, destroyReturned := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(destroyEnded)
		derr = rt.destroyForTest()
		close(destroyReturned)
	}()
	done = step(t, "accel_runtime_destroy runs the queued ops")
	<-destroyEnded
	done()
	select {
	case <-destroyReturned:
		if derr != nil {
			t.Errorf("destroy: %v", derr)
		}
	default:
		t.Fatal("the goroutine in accel_runtime_destroy ended inside it (an op's Goexit got out)")
	}
	checkGroupsAndGoexit(t, ga, gb, exited, returned)
	done = step(t, "the nesting Submit")
	if err := <-nested; err != nil {
		t.Errorf("nesting Submit: %v", err)
	}
	done()
	if !errors.Is(inner, ErrDeadlock) || innerSync != nil {
		t.Errorf("from inside an op run by destroy: own Submit %v (want ErrDeadlock), Sync %v (want nil)", inner, innerSync)
	}
	if err := <-wran; err != nil {
		t.Errorf("w's op: %v", err)
	}
	st := v.FullStats()
	if st.Failed != 3 || st.Canceled != 0 || st.Completed != 3+3+1 {
		t.Errorf("stats %+v: want 7 completed, 3 failed", st)
	}
	if !t.Failed() {
		fmt.Println("DESTROY-RAN-EVERY-OP")
	}
}
