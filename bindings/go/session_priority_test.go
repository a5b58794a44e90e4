// Promises: 5

package accel

// A session's priority as the node sees it: in its metrics and after
// Close.

import (
	"bytes"
	"errors"
	"regexp"
	"testing"
)

var promPriority = regexp.MustCompile(`\{session="([^"]*)",priority="([^"]*)"\}`)

// priorityLabels returns, for each session label in rt's metrics, the set
// of priority labels its series carry.
func priorityLabels(t *testing.T, rt *Runtime) map[string]map[string]bool {
	t.Helper()
	var buf bytes.Buffer
	if err := rt.WritePrometheus(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := parsePrometheus(buf.String()); err != nil {
		t.Fatalf("exposition: %v\n%s", err, buf.String())
	}
	got := map[string]map[string]bool{}
	for _, m := range promPriority.FindAllStringSubmatch(buf.String(), -1) {
		if got[m[1]] == nil {
			got[m[1]] = map[string]bool{}
		}
		got[m[1]][m[2]] = true
	}
	return got
}

// One session, one label set: the Go families (ops counted per Go op) and
// the C ones carry the priority the scheduler uses (clamped to 1..1000),
// also after SetPriority, and for a session without a backend.
func TestPrometheusOneLabelSetPerSession(t *testing.T) {
	rt := newTestRuntime(t, 1)
	lo, _ := rt.NewVMSession("lo", WithPriority(0))
	hi, _ := rt.NewVMSession("hi", WithPriority(5000))
	mid, _ := rt.NewVMSession("mid")
	gpu, _ := rt.NewVMSession("gpu", WithPriority(0), WithVMBackend(BackendCUDA))
	for _, v := range []*VMSession{lo, hi, mid, gpu} {
		defer v.Close()
		v.Submit(bg(), func(*Session) error { return nil })
	}
	check := func(when string, want map[string]string) {
		t.Helper()
		got := priorityLabels(t, rt)
		for id, p := range want {
			if id == "gpu" && gpu.IsAvailable() {
				continue // a CUDA host: it has its C series
			}
			if len(got[id]) != 1 || !got[id][p] {
				t.Errorf("%s: session %q carries priority labels %v, want only %q", when, id, got[id], p)
			}
		}
	}
	check("at open", map[string]string{"lo": "1", "hi": "1000", "mid": "5", "gpu": "1"})
	if err := mid.SetPriority(7000); err != nil {
		t.Fatal(err)
	}
	if err := gpu.SetPriority(2000); err != nil {
		t.Fatal(err)
	}
	check("after SetPriority", map[string]string{"lo": "1", "hi": "1000", "mid": "1000", "gpu": "1000"})
	if mid.Priority() != 7000 || gpu.Priority() != 2000 {
		t.Errorf("Priority() %d %d, want 7000 2000 (as given)", mid.Priority(), gpu.Priority())
	}
}

// SetPriority after Close returns the closed error and changes nothing,
// on a session without a backend as on one with.
func TestSetPriorityAfterCloseChangesNothing(t *testing.T) {
	rt := newTestRuntime(t, 1)
	for _, opts := range [][]VMSessionOption{
		{WithPriority(PriorityHigh), WithVMBackend(BackendCUDA)},
		{WithPriority(PriorityHigh)},
	} {
		v, err := rt.NewVMSession("v", opts...)
		if err != nil {
			t.Fatal(err)
		}
		avail := v.IsAvailable()
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
		if err := v.SetPriority(PriorityLow); !errors.Is(err, ErrSessionClosed) {
			t.Errorf("SetPriority after Close (available %v) = %v, want ErrSessionClosed", avail, err)
		}
		if p := v.Priority(); p != PriorityHigh {
			t.Errorf("Priority after a refused SetPriority (available %v) = %d, want %d", avail, p, PriorityHigh)
		}
		if p := v.FullStats().Priority; p != PriorityHigh {
			t.Errorf("FullStats.Priority after a refused SetPriority (available %v) = %d", avail, p)
		}
	}
}
