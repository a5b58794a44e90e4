// Promises: 1

// The package used through its exported API only (package accel_test):
// runtime.Goexit in grouped and batched ops, the stats of refused ops,
// Sessions, ids in the Prometheus text, a done that submits to its own
// session.

package accel_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"accel"
)

func pubRuntime(t testing.TB, workers int) *accel.Runtime {
	rt, err := accel.NewRuntime(accel.RuntimeConfig{Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			done := accel.StepWithin(t, "Runtime.Close at the test's cleanup", 10*time.Second)
			rt.Close()
			done()
		}
	})
	return rt
}

func pubOpen(t testing.TB, rt *accel.Runtime, n int) []*accel.VMSession {
	var out []*accel.VMSession
	for i := 0; i < n; i++ {
		v, err := rt.NewVMSession(fmt.Sprintf("vm%d", i))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func pubBalanced(t *testing.T, what string, st accel.SessionStats) {
	t.Helper()
	if st.Completed+st.Failed+st.Canceled != st.Submitted {
		t.Errorf("%s: completed %d + failed %d + canceled %d != submitted %d",
			what, st.Completed, st.Failed, st.Canceled, st.Submitted)
	}
}

// An op of combined SubmitAsyncs that calls runtime.Goexit fails (its
// completion called once, with an error); the ops after it still run.
// The same for SubmitAsyncBatch.
func TestPublicGoexitInAsyncGroup(t *testing.T) {
	defer accel.StepWithin(t, "goexit group", 10*time.Second)()
	// The only worker is busy on vs[0], so vs[1]'s SubmitAsyncs combine.
	vs, rel := pubHeldPair(t)
	var ran [5]atomic.Bool
	var errs [5]error
	var calls [5]atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		i := i
		wg.Add(1)
		err := vs[1].SubmitAsync(func(*accel.Session) error {
			ran[i].Store(true)
			if i == 1 {
				runtime.Goexit()
			}
			return nil
		}, func(e error) { errs[i] = e; calls[i].Add(1); wg.Done() })
		if err != nil {
			t.Fatal(err)
		}
	}
	close(rel)
	wch := make(chan struct{})
	go func() { wg.Wait(); close(wch) }()
	select {
	case <-wch:
	case <-time.After(3 * time.Second):
		t.Fatalf("SubmitAsync completions missing; stats %+v", vs[1].FullStats())
	}
	pubRanOnce(t, "op", ran[:], calls[:], errs[:])
	if err := vs[1].Sync(); err != nil {
		t.Fatal(err)
	}
	st := vs[1].FullStats()
	if st.Failed != 1 || st.Canceled != 0 || st.Completed != 4 {
		t.Errorf("after SubmitAsync: %+v, want 4 completed, 1 failed", st)
	}
	pubBalanced(t, "SubmitAsync", st)

	var bran [4]atomic.Bool
	berrs := make([]error, 4)
	var bcalled [4]atomic.Int32
	var wg2 sync.WaitGroup
	wg2.Add(4)
	fs := make([]func(*accel.Session) error, 4)
	for i := range fs {
		i := i
		fs[i] = func(*accel.Session) error {
			bran[i].Store(true)
			if i == 1 {
				runtime.Goexit()
			}
			return nil
		}
	}
	if n, err := vs[1].SubmitAsyncBatch(fs, func(i int, e error) { berrs[i] = e; bcalled[i].Add(1); wg2.Done() }); n != 4 || err != nil {
		t.Fatalf("SubmitAsyncBatch: %d %v", n, err)
	}
	bw := make(chan struct{})
	go func() { wg2.Wait(); close(bw) }()
	select {
	case <-bw:
	case <-time.After(3 * time.Second):
		t.Fatalf("SubmitAsyncBatch completions missing")
	}
	pubRanOnce(t, "batch op", bran[:], bcalled[:], berrs)
	if err := vs[1].Sync(); err != nil {
		t.Fatal(err)
	}
	st = vs[1].FullStats()
	if st.Failed != 2 || st.Canceled != 0 || st.Completed != 7 {
		t.Errorf("after SubmitAsyncBatch: %+v, want 7 completed, 2 failed", st)
	}
	pubBalanced(t, "SubmitAsyncBatch", st)
}

// Goexit in f of a Submit (run on the caller's goroutine when the
// session is handed over directly, or on a worker) keeps the stats
// balanced.
func TestPublicGoexitStats(t *testing.T) {
	for _, w := range []int{1, 0} {
		for _, withCtx := range []bool{false, true} {
			name := fmt.Sprintf("w%d/ctx%v", w, withCtx)
			t.Run(name, func(t *testing.T) {
				defer accel.StepWithin(t, name, 10*time.Second)()
				rt := pubRuntime(t, w)
				v := pubOpen(t, rt, 1)[0]
				mk := func() (context.Context, context.CancelFunc) {
					if withCtx {
						return context.WithTimeout(context.Background(), 3*time.Second)
					}
					return context.Background(), func() {}
				}
				for i := 0; i < 3; i++ {
					ended := make(chan struct{})
					after := false
					go func() {
						defer close(ended)
						ctx, c := mk()
						defer c()
						v.Submit(ctx, func(*accel.Session) error { runtime.Goexit(); return nil })
						after = true
					}()
					<-ended
					if after {
						t.Errorf("Submit returned after Goexit in f")
					}
				}
				ctx, c := mk()
				defer c()
				if err := v.Submit(ctx, func(*accel.Session) error { return nil }); err != nil {
					t.Errorf("Submit after: %v", err)
				}
				st := v.FullStats()
				if st.Failed != 3 || st.Completed != 1 {
					t.Errorf("stats %+v, want 1 completed, 3 failed", st)
				}
				pubBalanced(t, "Goexit in Submit", st)
			})
		}
	}
}

// A session whose backend is unavailable counts every refused op as
// submitted and failed, SubmitAsyncBatch too.
func TestPublicUnavailableBackendStats(t *testing.T) {
	defer accel.StepWithin(t, "unavailable", 10*time.Second)()
	v, err := accel.NewVMSession("gpu", accel.WithVMBackend(accel.BackendCUDA))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if v.IsAvailable() {
		t.Skip("a CUDA backend is available here")
	}
	nop := func(*accel.Session) error { return nil }
	if err := v.Submit(context.Background(), nop); err != accel.ErrNoBackends {
		t.Errorf("Submit: %v", err)
	}
	if errs := v.SubmitBatch(context.Background(), []func(*accel.Session) error{nop, nop}); errs[0] != accel.ErrNoBackends || errs[1] != accel.ErrNoBackends {
		t.Errorf("SubmitBatch: %v", errs)
	}
	if err := v.SubmitAsync(nop, nil); err != accel.ErrNoBackends {
		t.Errorf("SubmitAsync: %v", err)
	}
	if n, err := v.SubmitAsyncBatch([]func(*accel.Session) error{nop, nop, nop}, nil); n != 0 || err != accel.ErrNoBackends {
		t.Errorf("SubmitAsyncBatch: %d %v", n, err)
	}
	st := v.FullStats()
	if st.Failed != 7 {
		t.Errorf("stats %+v, want 7 failed", st)
	}
	pubBalanced(t, "unavailable backend", st)
}

// The runtime's own default session is not among Sessions(): a user
// session named "default" is listed once.
func TestPublicSessionsOmitsDefault(t *testing.T) {
	u, err := accel.NewVMSession("default")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if _, err := accel.DefaultSession(); err != nil {
		t.Fatal(err)
	}
	rt, err := accel.DefaultRuntime()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range rt.Sessions() {
		if s.ID() == "default" {
			n++
			if s != u {
				t.Errorf("Sessions() lists the internal default session")
			}
		}
	}
	if n != 1 {
		t.Errorf("Sessions() has %d sessions with ID \"default\", want 1", n)
	}
	// Nor does the Prometheus text give the runtime's own session the
	// user's label (a duplicate series).
	var sb strings.Builder
	if err := rt.WritePrometheus(&sb); err != nil {
		t.Fatal(err)
	}
	if c := strings.Count(sb.String(), "accel_session_ops_submitted_total{session=\"default\","); c != 1 {
		t.Errorf("%d submitted series labelled default, want 1", c)
	}
}

// Label values in the Prometheus text are written as the C writer writes
// them: well-formed UTF-8 kept, each other byte U+FFFD, no NUL; the
// families the Go side writes label a session as the C families do
// (an id with a NUL gets a derived C id: no raw NUL reaches the text).
func TestPublicPrometheusIDs(t *testing.T) {
	rt := pubRuntime(t, 1)
	for _, id := range []string{"a\x00b", "\xff\xfe", "q\"uo\\te\nnl", "tab\there", "ok\u00e9", "tr\xe2\x82x", "sur\xed\xa0\x80"} {
		if _, err := rt.NewVMSession(id); err != nil {
			t.Fatal(err)
		}
	}
	var sb strings.Builder
	if err := rt.WritePrometheus(&sb); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	if !utf8.ValidString(out) {
		t.Errorf("output is not valid UTF-8")
	}
	if strings.Contains(out, "\x00") {
		t.Errorf("output has a NUL")
	}
	for _, want := range []string{
		"session=\"\uFFFD\uFFFD\"",
		`session="q\"uo\\te\nnl"`,
		"session=\"tab\there\"",
		"session=\"ok\u00e9\"",
		"session=\"tr\uFFFD\uFFFDx\"",
		"session=\"sur\uFFFD\uFFFD\uFFFD\"",
	} {
		// Go's family (submitted) and C's (expired) give the same label
		// (the NUL id's, a derived C id: TestBadInputOddIDs).
		for _, fam := range []string{"accel_session_ops_submitted_total{", "accel_session_ops_expired_total{"} {
			if !strings.Contains(out, fam+want+",") {
				t.Errorf("no %s%s", fam, want)
			}
		}
	}
}

// A completion callback that Submits to its own session gets ErrDeadlock
// (SubmitAsync's godoc).
func TestPublicDoneSubmitsOwnSession(t *testing.T) {
	defer accel.StepWithin(t, "done submits", 10*time.Second)()
	for _, w := range []int{1, 2} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			rt := pubRuntime(t, w)
			vs := pubOpen(t, rt, 1)
			res := make(chan error, 1)
			ran := false
			if err := vs[0].SubmitAsync(func(*accel.Session) error { return nil }, func(error) {
				res <- vs[0].Submit(context.Background(), func(*accel.Session) error { ran = true; return nil })
			}); err != nil {
				t.Fatal(err)
			}
			if err := <-res; !errors.Is(err, accel.ErrDeadlock) || ran {
				t.Errorf("own-session Submit from done: %v, ran %v", err, ran)
			}
		})
	}
}

// As above with the Goexit first, last, or twice in one group, and some
// ops without a completion (their outcomes are counted per group): every
// op runs once and the counts add up.
func TestPublicGoexitGroupPositions(t *testing.T) {
	defer accel.StepWithin(t, "goexit positions", 10*time.Second)()
	for _, exits := range [][]int{{0}, {4}, {1, 3}, {0, 1, 2, 3, 4}} {
		t.Run(fmt.Sprint(exits), func(t *testing.T) {
			vs, rel := pubHeldPair(t)
			exit := map[int]bool{}
			for _, i := range exits {
				exit[i] = true
			}
			var ran, calls [5]atomic.Int32
			var errs [5]error
			for i := 0; i < 5; i++ {
				i := i
				var done func(error)
				if i%2 == 1 {
					done = func(e error) { errs[i] = e; calls[i].Add(1) }
				}
				if err := vs[1].SubmitAsync(func(*accel.Session) error {
					ran[i].Add(1)
					if exit[i] {
						runtime.Goexit()
					}
					return nil
				}, done); err != nil {
					t.Fatal(err)
				}
			}
			close(rel)
			if err := vs[1].Sync(); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 5; i++ {
				if r := ran[i].Load(); r != 1 {
					t.Errorf("op %d ran %d times", i, r)
				}
				if i%2 == 1 {
					if c := calls[i].Load(); c != 1 || (errs[i] != nil) != exit[i] {
						t.Errorf("op %d: done called %d times, err %v", i, c, errs[i])
					}
				}
			}
			st := vs[1].FullStats()
			if st.Failed != uint64(len(exits)) || st.Completed != uint64(5-len(exits)) || st.Canceled != 0 {
				t.Errorf("stats %+v, want %d completed, %d failed", st, 5-len(exits), len(exits))
			}
			pubBalanced(t, "SubmitAsync", st)
		})
	}
}

// pubRanOnce checks that each op ran, its done was called once, and only
// op 1 (the one that called runtime.Goexit) got an error.
func pubRanOnce(t *testing.T, what string, ran []atomic.Bool, calls []atomic.Int32, errs []error) {
	t.Helper()
	for i := range ran {
		if !ran[i].Load() {
			t.Errorf("%s %d never ran: %v", what, i, errs[i])
		}
		if c := calls[i].Load(); c != 1 {
			t.Errorf("%s %d: done called %d times", what, i, c)
		}
		if (errs[i] != nil) != (i == 1) {
			t.Errorf("%s %d: err %v", what, i, errs[i])
		}
	}
}

// pubHeldPair opens two sessions on a runtime of one worker and holds
// the worker in an op of vs[0] until rel is closed.
func pubHeldPair(t *testing.T) ([]*accel.VMSession, chan struct{}) {
	t.Helper()
	rt := pubRuntime(t, 1)
	vs := pubOpen(t, rt, 2)
	rel := make(chan struct{})
	in := make(chan struct{})
	if err := vs[0].SubmitAsync(func(*accel.Session) error { close(in); <-rel; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	<-in
	return vs, rel
}
