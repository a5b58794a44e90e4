// Promises: 1, 5

// Bad input to the Go API (nil f, negative sizes, empty, long, duplicate
// and odd ids, out-of-range runtime options, a batch over the queue):
// a clear error, and nothing changed.

package accel

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

// badInputSession opens id on rt with one op already run and 100 bytes
// reserved, so that the counters a refused call must leave alone are not
// all zero.
func badInputSession(t *testing.T, rt *Runtime, id string, opts ...VMSessionOption) *VMSession {
	t.Helper()
	v, err := rt.NewVMSession(id, opts...)
	if err != nil {
		t.Fatalf("NewVMSession(%q): %v", id, err)
	}
	done := step(t, "badInputSession: the first Submit")
	err = v.Submit(bg(), func(s *Session) error { return s.Reserve(100) })
	done()
	if err != nil {
		t.Fatalf("first Submit: %v", err)
	}
	// The op's visit counts itself (Visits, Service) at its end, which
	// may come after Submit returned (an op taken by a host worker, not
	// the direct hand-off): the baseline of sameStats is read once that
	// count is in and the stats hold still.
	done = step(t, "badInputSession: the first op's visit has ended")
	settledStats(v)
	done()
	return v
}

// settledStats returns v's stats once its first visit has ended and
// three reads 1 ms apart agree.
func settledStats(v *VMSession) SessionStats {
	prev := v.FullStats()
	for same := 0; same < 2; {
		time.Sleep(time.Millisecond)
		cur := v.FullStats()
		if cur == prev && cur.Visits > 0 {
			same++
		} else {
			same = 0
		}
		prev = cur
	}
	return prev
}

// badInputSync waits for v's ops under a watchdog.
func badInputSync(t *testing.T, v *VMSession, what string) {
	t.Helper()
	done := step(t, what)
	err := v.Sync()
	done()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// sameStats fails unless v's counters and memory are as in before.
func sameStats(t *testing.T, v *VMSession, before SessionStats, what string) {
	t.Helper()
	if after := v.FullStats(); after != before {
		t.Errorf("%s changed the session's stats:\nbefore %+v\nafter  %+v", what, before, after)
	}
	if m := v.MemoryUsed(); m != before.MemoryUsed {
		t.Errorf("%s: MemoryUsed %d, was %d", what, m, before.MemoryUsed)
	}
}

// A nil f to Submit is ErrInvalidArgument, and nothing is queued or counted.
func TestBadInputSubmitNilF(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v := badInputSession(t, rt, "nil-submit")
	before := v.FullStats()
	done := step(t, "Submit(nil f)")
	err := v.Submit(bg(), nil)
	err2 := v.Submit(nil, nil) // a nil ctx too
	done()
	if !errors.Is(err, ErrInvalidArgument) || !errors.Is(err2, ErrInvalidArgument) {
		t.Fatalf("Submit(ctx, nil) = %v, Submit(nil, nil) = %v, want ErrInvalidArgument", err, err2)
	}
	badInputSync(t, v, "Sync after Submit(nil f)")
	sameStats(t, v, before, "Submit(nil f)")
}

// A nil f to SubmitAsync is ErrInvalidArgument; done is never called and
// nothing is queued or counted.
func TestBadInputSubmitAsyncNilF(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v := badInputSession(t, rt, "nil-async")
	before := v.FullStats()
	var called atomic.Int32
	err := v.SubmitAsync(nil, func(error) { called.Add(1) })
	err2 := v.SubmitAsync(nil, nil)
	if !errors.Is(err, ErrInvalidArgument) || !errors.Is(err2, ErrInvalidArgument) {
		t.Fatalf("SubmitAsync(nil, done) = %v, SubmitAsync(nil, nil) = %v, want ErrInvalidArgument", err, err2)
	}
	badInputSync(t, v, "Sync after SubmitAsync(nil f)")
	if n := called.Load(); n != 0 {
		t.Errorf("done called %d times for a refused SubmitAsync", n)
	}
	sameStats(t, v, before, "SubmitAsync(nil f)")
}

// A nil among non-nil fs to SubmitBatch: every op gets
// ErrInvalidArgument, none runs (not even those before the nil), nothing
// is counted.
func TestBadInputSubmitBatchNilF(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v := badInputSession(t, rt, "nil-batch")
	before := v.FullStats()
	var ran atomic.Int32
	f := func(*Session) error { ran.Add(1); return nil }
	for _, fs := range [][]func(*Session) error{
		{f, nil, f},
		{nil, f},
		{f, f, nil},
	} {
		done := step(t, fmt.Sprintf("SubmitBatch of %d with a nil", len(fs)))
		errs := v.SubmitBatch(bg(), fs)
		done()
		if len(errs) != len(fs) {
			t.Fatalf("SubmitBatch returned %d errors for %d fs", len(errs), len(fs))
		}
		for i, err := range errs {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("fs of %d: errs[%d] = %v, want ErrInvalidArgument", len(fs), i, err)
			}
		}
	}
	badInputSync(t, v, "Sync after SubmitBatch with a nil f")
	if n := ran.Load(); n != 0 {
		t.Errorf("%d fs of a refused SubmitBatch ran", n)
	}
	sameStats(t, v, before, "SubmitBatch with a nil f")
}

// A nil f to SubmitAsyncBatch stops the batch before it (the doc: a prefix
// is queued, then ErrInvalidArgument): a nil first queues nothing and
// changes nothing; a nil later queues exactly the ops before it, and done
// is called exactly for those.
func TestBadInputSubmitAsyncBatchNilF(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v := badInputSession(t, rt, "nil-async-batch")
	before := v.FullStats()
	var ran, called atomic.Int32
	f := func(*Session) error { ran.Add(1); return nil }
	n, err := v.SubmitAsyncBatch([]func(*Session) error{nil, f, f}, func(int, error) { called.Add(1) })
	if n != 0 || !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("SubmitAsyncBatch(nil first) = %d, %v, want 0, ErrInvalidArgument", n, err)
	}
	badInputSync(t, v, "Sync after SubmitAsyncBatch(nil first)")
	if ran.Load() != 0 || called.Load() != 0 {
		t.Fatalf("nil first: %d ran, done called %d times, want 0 and 0", ran.Load(), called.Load())
	}
	sameStats(t, v, before, "SubmitAsyncBatch(nil first)")

	// Past a group's end (32) too: the prefix before the nil, no more.
	for _, at := range []int{1, 31, 32, 33, 70} {
		ran.Store(0)
		fs := make([]func(*Session) error, at+5)
		var runs [80]atomic.Int32
		var dones [80]atomic.Int32
		for i := range fs {
			i := i
			fs[i] = func(*Session) error { runs[i].Add(1); return nil }
		}
		fs[at] = nil
		st0 := v.FullStats()
		n, err := v.SubmitAsyncBatch(fs, func(i int, err error) {
			if err != nil {
				t.Errorf("done(%d, %v)", i, err)
			}
			dones[i].Add(1)
		})
		if n != at || !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("nil at %d: SubmitAsyncBatch = %d, %v, want %d, ErrInvalidArgument", at, n, err, at)
		}
		badInputSync(t, v, fmt.Sprintf("Sync after SubmitAsyncBatch(nil at %d)", at))
		for i := range fs {
			want := int32(0)
			if i < at {
				want = 1
			}
			if runs[i].Load() != want || dones[i].Load() != want {
				t.Fatalf("nil at %d: op %d ran %d times, done %d times, want %d", at, i, runs[i].Load(), dones[i].Load(), want)
			}
		}
		st := v.FullStats()
		if st.Submitted != st0.Submitted+uint64(at) || st.Completed != st0.Completed+uint64(at) ||
			st.Dispatched != st0.Dispatched+uint64(at) || st.Failed != st0.Failed || st.Canceled != st0.Canceled {
			t.Fatalf("nil at %d: stats %+v, were %+v, want %d more submitted, dispatched, completed", at, st, st0, at)
		}
	}
}

// Reserve and Unreserve of a negative size: ErrInvalidArgument, nothing
// charged or refunded.
func TestBadInputReserveReleaseNegative(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v := badInputSession(t, rt, "neg-reserve", WithMemoryBudget(1000))
	s := v.Session()
	before := v.FullStats()
	if before.MemoryUsed != 100 {
		t.Fatalf("MemoryUsed %d after Reserve(100), want 100", before.MemoryUsed)
	}
	for _, b := range []int64{-1, -100, -1000, math.MinInt64} {
		if err := s.Reserve(b); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Reserve(%d) = %v, want ErrInvalidArgument", b, err)
		}
		if err := s.Unreserve(b); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Unreserve(%d) = %v, want ErrInvalidArgument", b, err)
		}
	}
	sameStats(t, v, before, "Reserve/Unreserve of negative sizes")
	// The same from inside an op.
	done := step(t, "Submit whose op reserves and releases negative sizes")
	err := v.Submit(bg(), func(s *Session) error {
		if err := s.Reserve(-1); !errors.Is(err, ErrInvalidArgument) {
			return fmt.Errorf("Reserve(-1) inside an op = %v", err)
		}
		if err := s.Unreserve(-1); !errors.Is(err, ErrInvalidArgument) {
			return fmt.Errorf("Unreserve(-1) inside an op = %v", err)
		}
		if m := s.MemoryUsed(); m != 100 {
			return fmt.Errorf("MemoryUsed inside the op %d, want 100", m)
		}
		return nil
	})
	done()
	if err != nil {
		t.Fatal(err)
	}
	if m := v.MemoryUsed(); m != 100 {
		t.Errorf("MemoryUsed %d after negative Reserve/Unreserve inside an op, want 100", m)
	}
}

// Alloc of 0 and of a negative size: nil and ErrInvalidArgument, nothing
// charged.
func TestBadInputAllocNonPositive(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v := badInputSession(t, rt, "alloc-zero", WithMemoryBudget(1000))
	s := v.Session()
	before := v.FullStats()
	for _, b := range []int{0, -1, -4096, math.MinInt} {
		p, err := s.Alloc(b)
		if !errors.Is(err, ErrInvalidArgument) || p != nil {
			t.Errorf("Alloc(%d) = %v (len %d), %v, want nil, ErrInvalidArgument", b, p == nil, len(p), err)
		}
	}
	sameStats(t, v, before, "Alloc of a size <= 0")
}

// An empty id: ErrEmptyVMID from both NewVMSession, and no session is
// opened (Sessions, Lookup, the C side's count).
func TestBadInputEmptyIDChangesNothing(t *testing.T) {
	rt := newTestRuntime(t, 1)
	other := badInputSession(t, rt, "other")
	before := other.FullStats()
	var sb strings.Builder
	if err := rt.WritePrometheus(&sb); err != nil {
		t.Fatal(err)
	}
	prom0 := promSample(t, sb.String(), "accel_runtime_sessions")
	for _, open := range []func() (*VMSession, error){
		func() (*VMSession, error) { return rt.NewVMSession("") },
		func() (*VMSession, error) { return rt.NewVMSession("", WithPriority(PriorityHigh)) },
		func() (*VMSession, error) { return NewVMSession("") },
	} {
		v, err := open()
		if !errors.Is(err, ErrEmptyVMID) || v != nil {
			t.Errorf("NewVMSession(\"\") = (session %v), %v, want nil, ErrEmptyVMID", v != nil, err)
			if v != nil {
				v.Close()
			}
		}
	}
	if l := rt.Sessions(); len(l) != 1 || l[0] != other {
		t.Errorf("Sessions() = %v, want only %q", l, other.ID())
	}
	if _, ok := rt.Lookup(""); ok {
		t.Error("Lookup(\"\") found a session")
	}
	sb.Reset()
	if err := rt.WritePrometheus(&sb); err != nil {
		t.Fatal(err)
	}
	if n := promSample(t, sb.String(), "accel_runtime_sessions"); n != prom0 {
		t.Errorf("accel_runtime_sessions %v after the refused opens, was %v", n, prom0)
	}
	sameStats(t, other, before, "NewVMSession(\"\")")
}

// promSample returns the value of the unlabelled sample name in text.
func promSample(t *testing.T, text, name string) float64 {
	t.Helper()
	samples, err := parsePrometheus(text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	v, ok := samples[name]
	if !ok {
		t.Fatalf("no %s in\n%s", name, text)
	}
	return v
}

// An id over ACCEL_ID_MAX (127) bytes is accepted (vmsession.go derives
// the C id): ID returns it whole, Lookup finds it by the whole id only,
// two long ids with the same first 127 bytes are two sessions, and their
// ops run.
func TestBadInputLongID(t *testing.T) {
	rt := newTestRuntime(t, 1)
	base := strings.Repeat("x", 127)
	ids := []string{base, base + "a", base + "b", strings.Repeat("y", 300)}
	vs := make([]*VMSession, len(ids))
	for i, id := range ids {
		v, err := rt.NewVMSession(id)
		if err != nil {
			t.Fatalf("NewVMSession(%d bytes): %v", len(id), err)
		}
		vs[i] = v
	}
	for i, id := range ids {
		v := vs[i]
		if v.ID() != id || v.Session().ID() != id || v.FullStats().ID != id {
			t.Errorf("session %d: ID() %d bytes, want its %d-byte id", i, len(v.ID()), len(id))
		}
		if w, ok := rt.Lookup(id); !ok || w != v {
			t.Errorf("Lookup(id of %d bytes) = %p %v, want session %d", len(id), w, ok, i)
		}
		var got string
		done := step(t, fmt.Sprintf("Submit on the session with a %d-byte id", len(id)))
		err := v.Submit(bg(), func(s *Session) error { got = s.ID(); return nil })
		done()
		if err != nil || got != id {
			t.Errorf("Submit on session %d = %v, its op saw an id of %d bytes", i, err, len(got))
		}
	}
	if _, ok := rt.Lookup(strings.Repeat("y", 127)); ok {
		t.Error("Lookup of a 300-byte id's first 127 bytes found a session")
	}
	if n := len(rt.Sessions()); n != len(ids) {
		t.Errorf("%d sessions, want %d", n, len(ids))
	}
	for i, v := range vs {
		if d, c, f := v.Stats(); d != 1 || c != 1 || f != 0 {
			t.Errorf("session %d: Stats %d %d %d, want 1 1 0", i, d, c, f)
		}
	}
}

// The same id twice is two separate sessions (as the old type): both
// open, Lookup finds the first opened, each runs its own ops and counts
// them, and once the first closes Lookup finds the second.
func TestBadInputDuplicateID(t *testing.T) {
	rt := newTestRuntime(t, 1)
	a, errA := rt.NewVMSession("evm")
	b, errB := rt.NewVMSession("evm", WithPriority(PriorityHigh))
	if errA != nil || errB != nil {
		t.Fatalf("NewVMSession(\"evm\") twice = %v, %v, want nil, nil", errA, errB)
	}
	if a == b || a.ID() != "evm" || b.ID() != "evm" {
		t.Fatalf("two opens gave %p %q and %p %q", a, a.ID(), b, b.ID())
	}
	if w, ok := rt.Lookup("evm"); !ok || w != a {
		t.Fatalf("Lookup(\"evm\") = %p %v, want the first opened %p", w, ok, a)
	}
	done := step(t, "Submits to the two sessions with one id")
	var ranA, ranB atomic.Int32
	for i := 0; i < 3; i++ {
		if err := a.Submit(bg(), func(*Session) error { ranA.Add(1); return nil }); err != nil {
			t.Error(err)
		}
	}
	if err := b.Submit(bg(), func(s *Session) error {
		if s.VMSession() != b {
			return errors.New("b's op got another session's handle")
		}
		ranB.Add(1)
		return nil
	}); err != nil {
		t.Error(err)
	}
	done()
	if d, _, _ := a.Stats(); d != 3 || ranA.Load() != 3 {
		t.Errorf("a: dispatched %d, ran %d, want 3", d, ranA.Load())
	}
	if d, _, _ := b.Stats(); d != 1 || ranB.Load() != 1 {
		t.Errorf("b: dispatched %d, ran %d, want 1", d, ranB.Load())
	}
	if l := rt.Sessions(); len(l) != 2 {
		t.Errorf("Sessions() has %d, want 2", len(l))
	}
	done = step(t, "a.Close")
	err := a.Close()
	done()
	if err != nil {
		t.Fatal(err)
	}
	if w, ok := rt.Lookup("evm"); !ok || w != b {
		t.Errorf("after the first closed, Lookup(\"evm\") = %p %v, want the second %p", w, ok, b)
	}
	if !b.IsAvailable() {
		t.Error("closing one of two sessions with an id closed the other")
	}
}

// Negative fields of RuntimeConfig: NewRuntime returns nil and
// ErrInvalidArgument (runtime.go checks each; the doc comments document
// only zero as "the default", and ShortLaneWorkers < Workers), and
// nothing is created (no runtime id is taken). ShortLaneWorkers not below
// Workers is refused as well, as its comment says.
func TestBadInputNewRuntimeNegative(t *testing.T) {
	for _, cfg := range []RuntimeConfig{
		{Workers: -1},
		{Workers: math.MinInt},
		{Workers: 2, ShortLaneWorkers: -1},
		{Workers: 1, ShortOp: -time.Nanosecond},
		{Workers: 1, QuantumOps: -1},
		{Workers: 1, Quantum: -time.Millisecond},
		{Workers: -1, ShortLaneWorkers: -1, ShortOp: -1, QuantumOps: -1, Quantum: -1},
		// The compensation fields (the tests' own).
		{Workers: 1, maxExtra: -1},
		{Workers: 1, blockDetect: -time.Millisecond},
	} {
		id0 := hostNextID.Load()
		rt, err := NewRuntime(cfg)
		if rt != nil || !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("NewRuntime(%+v) = %v, %v, want nil, ErrInvalidArgument", cfg, rt != nil, err)
			if rt != nil {
				done := step(t, "Close of a runtime that should not exist")
				rt.Close()
				done()
			}
		}
		if id := hostNextID.Load(); id != id0 {
			t.Errorf("NewRuntime(%+v) took a runtime id (%d -> %d) before refusing", cfg, id0, id)
		}
	}
	over := []RuntimeConfig{
		// Past what the C fields hold: wrapped, C would take a small
		// count while the host workers started the large one.
		{Workers: wide(1<<32 + 1)},
		{Workers: 1, QuantumOps: wide(1<<32 + 5)},
		{Workers: 1025}, // over the library's maximum
		{Workers: 2, ShortLaneWorkers: 2},
		{Workers: 1, ShortLaneWorkers: 5},
	}
	if strconv.IntSize == 64 {
		// The cap on extra workers past 2^31-1 (C's unsigned field would
		// wrap 2^32+1 to 1).
		over = append(over, RuntimeConfig{Workers: 1, maxExtra: wide(1<<32 + 1)})
	}
	for _, cfg := range over {
		rt, err := NewRuntime(cfg)
		if rt != nil || !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("NewRuntime(%+v) = %v, %v, want nil, ErrInvalidArgument", cfg, rt != nil, err)
			if rt != nil {
				done := step(t, "Close of a runtime that should not exist")
				rt.Close()
				done()
			}
		}
	}
}

// Ids that are not UTF-8 or hold a NUL are accepted (vmID need only be
// non-empty): ID returns exactly the bytes given, Lookup finds the
// session by them and by nothing shorter, ops run, and WritePrometheus's
// text stays valid UTF-8 with no NUL, each byte that is not UTF-8 a
// U+FFFD in the label (prometheus.go, promEscape; docs/metrics.md), and
// each session's series, Go's families and C's, under one label: an id
// with a NUL, which a C id cannot hold, under its derived C id ("a?b#N").
func TestBadInputOddIDs(t *testing.T) {
	rt := newTestRuntime(t, 1)
	cases := []struct {
		id, label string
		derived   bool // label is the C id's prefix, "#N" follows
	}{
		{"\xff\xfe", "\uFFFD\uFFFD", false},
		{"a\x00b", "a?b#", true},
		{"\x00", "?#", true},
	}
	vs := make([]*VMSession, len(cases))
	for i, c := range cases {
		v, err := rt.NewVMSession(c.id)
		if err != nil {
			t.Fatalf("NewVMSession(%q) = %v", c.id, err)
		}
		vs[i] = v
		if v.ID() != c.id || v.Session().ID() != c.id || v.FullStats().ID != c.id {
			t.Errorf("NewVMSession(%q).ID() = %q", c.id, v.ID())
		}
		if w, ok := rt.Lookup(c.id); !ok || w != v {
			t.Errorf("Lookup(%q) = %p %v, want %p", c.id, w, ok, v)
		}
		var got string
		done := step(t, fmt.Sprintf("Submit on %q", c.id))
		err = v.Submit(bg(), func(s *Session) error { got = s.ID(); return nil })
		done()
		if err != nil || got != c.id {
			t.Errorf("Submit on %q = %v, its op saw id %q", c.id, err, got)
		}
	}
	for _, id := range []string{"a", "a\x00", "\xff", "\xfe", "a?b", "a\uFFFDb", "\uFFFD\uFFFD", "", "\x00\x00"} {
		if w, ok := rt.Lookup(id); ok {
			t.Errorf("Lookup(%q) found %q", id, w.ID())
		}
	}
	var sb strings.Builder
	if err := rt.WritePrometheus(&sb); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	if !utf8.ValidString(out) {
		t.Errorf("WritePrometheus output is not valid UTF-8:\n%q", out)
	}
	if strings.IndexByte(out, 0) >= 0 {
		t.Errorf("WritePrometheus output holds a NUL:\n%q", out)
	}
	samples, err := parsePrometheus(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, c := range cases {
		label := c.label
		if c.derived {
			label = labelWithPrefix(t, samples, "accel_session_ops_submitted_total", c.label)
		}
		key := fmt.Sprintf(`accel_session_ops_submitted_total{session=%q,priority="5"}`, label)
		if got, ok := samples[key]; !ok || got != 1 {
			t.Errorf("%s = %v (present %v), want 1\n%s", key, got, ok, out)
		}
		// A C family labels the session the same way.
		if _, ok := samples[fmt.Sprintf(`accel_session_queue_depth{session=%q,priority="5"}`, label)]; !ok {
			t.Errorf("no accel_session_queue_depth for %q (label %q)\n%s", c.id, label, out)
		}
	}
	if bytes.Contains([]byte(out), []byte("\xff")) {
		t.Error("a raw 0xff byte in the output")
	}
}

// SubmitAsyncBatch bigger than the queue, with nothing draining (the one
// worker holds the session's first op, so none of the session's later
// ops may start): it queues a prefix, a group of up to 32 ops in the room of
// one op, and returns its length n with ErrQueueFull (async.go: "how many
// ops were queued (a prefix of fs) and, if not all, why not"). Once
// released exactly fs[:n] run, in order, and done is called exactly once
// for each of them and never for the rest. A second batch on the full
// queue queues nothing.
func TestBadInputAsyncBatchOverQueue(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, err := rt.NewVMSession("over", WithQueueDepth(4))
	if err != nil {
		t.Fatal(err)
	}
	release := blockWorker(t, v)
	defer release()
	before := v.FullStats()
	const total = 200
	var mu sync.Mutex
	var order []int
	var dones [total]atomic.Int32
	fs := make([]func(*Session) error, total)
	for i := range fs {
		i := i
		fs[i] = func(*Session) error {
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			return nil
		}
	}
	n, err := v.SubmitAsyncBatch(fs, func(i int, err error) {
		if err != nil {
			t.Errorf("done(%d, %v)", i, err)
		}
		dones[i].Add(1)
	})
	if !errors.Is(err, ErrQueueFull) {
		t.Fatalf("SubmitAsyncBatch of %d on a queue of 4 = %d, %v, want ErrQueueFull", total, n, err)
	}
	// room for 4, a group of groupMax (32) ops each; the running op holds none.
	if n != 4*groupMax {
		t.Fatalf("SubmitAsyncBatch queued %d, want %d (room for 4, groups of %d)", n, 4*groupMax, groupMax)
	}
	st := v.FullStats()
	if st.Submitted != before.Submitted+uint64(n) || st.Queued != 4 || st.Dispatched != before.Dispatched {
		t.Errorf("after the batch: submitted %d (was %d), queued %d, dispatched %d (was %d); want +%d, 4, +0",
			st.Submitted, before.Submitted, st.Queued, st.Dispatched, before.Dispatched, n)
	}
	// The queue is full: a second batch queues none and counts none.
	var extra, extraDone atomic.Int32
	n2, err2 := v.SubmitAsyncBatch([]func(*Session) error{
		func(*Session) error { extra.Add(1); return nil },
	}, func(int, error) { extraDone.Add(1) })
	if n2 != 0 || !errors.Is(err2, ErrQueueFull) {
		t.Errorf("SubmitAsyncBatch on the full queue = %d, %v, want 0, ErrQueueFull", n2, err2)
	}
	if s2 := v.FullStats().Submitted; s2 != st.Submitted {
		t.Errorf("the refused batch counted: submitted %d, was %d", s2, st.Submitted)
	}
	mu.Lock()
	early := len(order)
	mu.Unlock()
	if early != 0 {
		t.Fatalf("%d ops ran while the session's first op held the worker", early)
	}
	release()
	badInputSync(t, v, "Sync after the release")
	mu.Lock()
	got := append([]int(nil), order...)
	mu.Unlock()
	if len(got) != n {
		t.Fatalf("%d ops ran, want the %d queued", len(got), n)
	}
	for i, o := range got {
		if o != i {
			t.Fatalf("ops ran out of order or not the prefix: position %d ran fs[%d]; order %v", i, o, got)
		}
	}
	for i := range fs {
		want := int32(0)
		if i < n {
			want = 1
		}
		if d := dones[i].Load(); d != want {
			t.Fatalf("done(%d, ...) called %d times, want %d", i, d, want)
		}
	}
	if extra.Load() != 0 || extraDone.Load() != 0 {
		t.Errorf("the refused batch's op ran %d times, done %d times", extra.Load(), extraDone.Load())
	}
	st = v.FullStats()
	// The blocker had started (dispatched) but not completed at before.
	wantD, wantC := before.Dispatched+uint64(n), before.Completed+1+uint64(n)
	if st.Submitted != before.Submitted+uint64(n) || st.Dispatched != wantD || st.Completed != wantC ||
		st.Failed != 0 || st.Canceled != 0 || st.Queued != 0 {
		t.Errorf("after the drain: %+v; want submitted %d, dispatched %d, completed %d",
			st, before.Submitted+uint64(n), wantD, wantC)
	}
}

// labelWithPrefix returns the one session label of family fam that begins
// with prefix (a derived C id: prefix, then a number).
func labelWithPrefix(t *testing.T, samples map[string]float64, fam, prefix string) string {
	t.Helper()
	head := fam + `{session="` + prefix
	var found []string
	for k := range samples {
		if strings.HasPrefix(k, head) {
			rest := k[len(fam+`{session="`):]
			found = append(found, rest[:strings.IndexByte(rest, '"')])
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d labels of %s begin with %q: %q", len(found), fam, prefix, found)
	}
	return found[0]
}

// wide is n as an int where int has 64 bits, else the largest int (which
// the checks refuse too): the cases compile on 32-bit targets.
func wide(n uint64) int {
	if strconv.IntSize == 64 {
		return int(n)
	}
	return int(^uint(0) >> 1)
}
