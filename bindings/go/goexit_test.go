package accel

// runtime.Goexit in f (t.Fatal, t.FailNow) where the op runs off the
// usual driver path: an op of a group beside a synchronous submitter's
// helper slot. Each wait has a step watchdog.

import (
	"errors"
	"fmt"
	"runtime"
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
// result in its one completion (errGoexit for op exit, nil for the rest).
func (p *groupProbe) check(t *testing.T, what string) {
	t.Helper()
	for i := range p.errs {
		if r := p.runs[i].Load(); r != 1 {
			t.Errorf("%s: op %d ran %d times (completion got %v)", what, i, r, p.errs[i])
		}
		if c := p.calls[i].Load(); c != 1 {
			t.Errorf("%s: op %d: completion called %d times", what, i, c)
		}
		if i == p.exit && !errors.Is(p.errs[i], errGoexit) {
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
// idle (the direct hand-off to a helper slot). Only the exiting op fails;
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
	if st.Failed != rounds || st.Cancelled != 0 || st.Completed+st.Failed != st.Submitted {
		t.Errorf("stats %+v: want %d failed (one per round), none cancelled", st, rounds)
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
func TestGoexitInGroupOnOwnSubmitsHelperSlot(t *testing.T) {
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
				if st.Failed != wantFailed || st.Cancelled != 0 || st.Completed+st.Failed != st.Submitted {
					t.Errorf("%s: stats %+v, want %d failed, none cancelled", name, st, wantFailed)
				}
				v.Close()
				if t.Failed() {
					return
				}
			}
		}
	}
}
