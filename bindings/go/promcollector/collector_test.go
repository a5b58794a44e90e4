package promcollector

// The collector in a client_golang registry: the families, help, types,
// label sets and values of Runtime.WritePrometheus, one label set per
// session (a priority beyond 1000 is labelled with the weight the
// scheduler uses, 1000, as the text writer labels it), two sessions with
// one vmID as two label sets, a closed session gone, nothing after the
// runtime closes; client_golang's linter and promtool pass what it
// exposes.
//
// Promises: none

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"accel"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// step is the watchdog of a wait that could hang: past a minute the test
// binary panics naming the step (a bound far above any healthy run).
func step(what string) func() {
	t := time.AfterFunc(time.Minute, func() { panic("promcollector: stuck: " + what) })
	return func() { t.Stop() }
}

func newRuntime(t *testing.T) *accel.Runtime {
	t.Helper()
	rt, err := accel.NewRuntime(accel.RuntimeConfig{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		done := step("Runtime.Close")
		rt.Close()
		done()
	})
	return rt
}

// open opens a session and runs ok ops that succeed and bad ones that
// fail, and reserves mem bytes from inside one of them.
func open(t *testing.T, rt *accel.Runtime, id string, p accel.Priority, ok, bad int, mem int64) *accel.VMSession {
	t.Helper()
	v, err := rt.NewVMSession(id, accel.WithPriority(p), accel.WithMemoryBudget(1<<20))
	if err != nil {
		t.Fatalf("NewVMSession(%q): %v", id, err)
	}
	done := step("Submits on " + id)
	defer done()
	for i := 0; i < ok; i++ {
		if err := v.Submit(context.Background(), func(*accel.Session) error { return nil }); err != nil {
			t.Fatalf("Submit on %q: %v", id, err)
		}
	}
	for i := 0; i < bad; i++ {
		v.Submit(context.Background(), func(*accel.Session) error { return errors.New("fails") })
	}
	if mem > 0 {
		if err := v.Submit(context.Background(), func(s *accel.Session) error { return s.Reserve(mem) }); err != nil {
			t.Fatalf("Reserve on %q: %v", id, err)
		}
	}
	return v
}

func gather(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	m := map[string]*dto.MetricFamily{}
	for _, f := range mfs {
		m[f.GetName()] = f
	}
	return m
}

// series is a family's label sets and values: `session="a",priority="5"` -> value.
func series(f *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range f.GetMetric() {
		var ls []string
		for _, l := range m.GetLabel() {
			ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
		}
		sort.Strings(ls)
		v := m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
		out[strings.Join(ls, ",")] = v
	}
	return out
}

// settle waits until the sessions' families read the same in three
// reads 1 ms apart: a queued Submit returns as its op completes, before
// its host worker ends the visit (accel_host_visit_end), which adds the
// visit's service time and counts; a read in between and one after it
// would differ.
func settle(t *testing.T, rt *accel.Runtime) {
	t.Helper()
	done := step("the sessions' families settle")
	defer done()
	sessions := func() string {
		var b strings.Builder
		fams := textFamilies(t, rt)
		var names []string
		for n := range fams {
			if strings.HasPrefix(n, "accel_session_") {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(&b, "%s %v\n", n, series(fams[n]))
		}
		return b.String()
	}
	last, same := sessions(), 0
	for same < 2 {
		time.Sleep(time.Millisecond)
		if now := sessions(); now == last {
			same++
		} else {
			last, same = now, 0
		}
	}
}

func textFamilies(t *testing.T, rt *accel.Runtime) map[string]*dto.MetricFamily {
	t.Helper()
	var buf bytes.Buffer
	if err := rt.WritePrometheus(&buf); err != nil {
		t.Fatalf("WritePrometheus: %v", err)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(&buf)
	if err != nil {
		t.Fatalf("parsing WritePrometheus: %v", err)
	}
	return fams
}

func TestCollectorAsWritePrometheus(t *testing.T) {
	rt := newRuntime(t)
	open(t, rt, "vm-a", accel.PriorityHigh, 3, 1, 0)
	open(t, rt, "vm-far", 5000, 2, 0, 4096) // the scheduler's weight: 1000
	reg := prometheus.NewRegistry()
	reg.MustRegister(New(rt))
	settle(t, rt)
	got := gather(t, reg)
	want := textFamilies(t, rt)

	// The same families, help, types and label sets as the text writer's.
	var names []string
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(got) != len(want) {
		t.Errorf("%d families gathered, WritePrometheus writes %d (%v)", len(got), len(want), names)
	}
	for _, n := range names {
		g, w := got[n], want[n]
		if g == nil {
			t.Errorf("family %s not gathered", n)
			continue
		}
		if g.GetHelp() != w.GetHelp() || g.GetType() != w.GetType() {
			t.Errorf("%s: help %q type %v, WritePrometheus: %q %v", n, g.GetHelp(), g.GetType(), w.GetHelp(), w.GetType())
		}
		gs, ws := series(g), series(w)
		if len(gs) != len(ws) {
			t.Errorf("%s: series %v, WritePrometheus: %v", n, gs, ws)
		}
		for k, wv := range ws {
			gv, ok := gs[k]
			if !ok {
				t.Errorf("%s{%s} not gathered", n, k)
			} else if strings.HasPrefix(n, "accel_session_") && gv != wv {
				// (the runtime's counters may move between the two reads:
				// a worker parks)
				t.Errorf("%s{%s} = %v, WritePrometheus: %v", n, k, gv, wv)
			}
		}
	}

	// The values, and one label set per session.
	a, far := `priority="10",session="vm-a"`, `priority="1000",session="vm-far"`
	for _, c := range []struct {
		family, labels string
		want           float64
	}{
		{"accel_session_ops_submitted_total", a, 4},
		{"accel_session_ops_completed_total", a, 3},
		{"accel_session_ops_failed_total", a, 1},
		{"accel_session_ops_cancelled_total", a, 0},
		{"accel_session_ops_submitted_total", far, 3},
		{"accel_session_ops_completed_total", far, 3},
		{"accel_session_memory_used_bytes", far, 4096},
		{"accel_session_memory_budget_bytes", far, 1 << 20},
		{"accel_session_queue_depth", a, 0},
		{"accel_runtime_sessions", "", 2},
	} {
		f := got[c.family]
		if f == nil {
			t.Errorf("family %s not gathered", c.family)
			continue
		}
		if v, ok := series(f)[c.labels]; !ok || v != c.want {
			t.Errorf("%s{%s} = %v (present %v), want %v; all: %v", c.family, c.labels, v, ok, c.want, series(f))
		}
	}
	if got["accel_session_ops_submitted_total"].GetType() != dto.MetricType_COUNTER ||
		got["accel_session_queue_depth"].GetType() != dto.MetricType_GAUGE {
		t.Errorf("types: ops_submitted %v, queue_depth %v", got["accel_session_ops_submitted_total"].GetType(),
			got["accel_session_queue_depth"].GetType())
	}
	for n, f := range got {
		if !strings.HasPrefix(n, "accel_session_") {
			continue
		}
		for k := range series(f) {
			if k != a && k != far {
				t.Errorf("%s: label set %s is neither session's one", n, k)
			}
		}
	}
}

// Two open sessions with one vmID get two label sets (their C ids), and
// a closed session's series are gone: Gather, which rejects a series
// collected twice, passes each time.
func TestCollectorSessionsComeAndGo(t *testing.T) {
	rt := newRuntime(t)
	open(t, rt, "dup", accel.PriorityNormal, 1, 0, 0)
	open(t, rt, "dup", accel.PriorityNormal, 1, 0, 0)
	gone := open(t, rt, "gone", accel.PriorityLow, 1, 0, 0)
	reg := prometheus.NewRegistry()
	reg.MustRegister(New(rt))
	got := gather(t, reg)
	if n := len(series(got["accel_session_ops_submitted_total"])); n != 3 {
		t.Fatalf("%d sessions gathered, want 3: %v", n, series(got["accel_session_ops_submitted_total"]))
	}
	done := step("Close of gone")
	if err := gone.Close(); err != nil {
		t.Fatal(err)
	}
	done()
	got = gather(t, reg)
	for n, f := range got {
		for k := range series(f) {
			if strings.Contains(k, `session="gone"`) {
				t.Errorf("%s{%s}: a closed session is still collected", n, k)
			}
		}
	}
	if n := len(series(got["accel_session_ops_submitted_total"])); n != 2 {
		t.Errorf("%d sessions gathered after a close, want 2", n)
	}

	// After Close of the runtime: no accel series, no error.
	done = step("Runtime.Close")
	rt.Close()
	done()
	if got := gather(t, reg); len(got) != 0 {
		t.Errorf("after Runtime.Close: %d families gathered", len(got))
	}
}

func TestCollectorLint(t *testing.T) {
	rt := newRuntime(t)
	open(t, rt, "vm-a", accel.PriorityHigh, 2, 1, 64)
	open(t, rt, "vm-far", 5000, 1, 0, 0)
	problems, err := testutil.CollectAndLint(New(rt))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// promtoolPath finds promtool, on PATH or in the repository's
// .tools/prometheus (where scripts/deps.sh unpacks it), or skips.
func promtoolPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	p, err := filepath.Abs(filepath.Join("..", "..", "..", ".tools", "prometheus",
		"usr", "bin", "promtool"))
	if err == nil {
		err = exec.Command(p, "--version").Run()
	}
	if err != nil {
		t.Skip("promtool not on PATH nor in .tools/prometheus: run 'make deps' " +
			"(scripts/deps.sh unpacks it from Debian's prometheus package)")
	}
	return p
}

// The registry's text exposition, as promhttp would serve it, through
// `promtool check metrics`: no error, no lint problem; a planted invalid
// escape is reported (or the check is broken). (promtool does not look
// for a series written twice; Gather does, in the tests above.)
func TestCollectorPromtool(t *testing.T) {
	promtool := promtoolPath(t)
	rt := newRuntime(t)
	open(t, rt, "vm-a", accel.PriorityHigh, 2, 1, 64)
	open(t, rt, "vm-far", 5000, 1, 0, 0)
	open(t, rt, "quote\"d\\", accel.PriorityNormal, 1, 0, 0)
	reg := prometheus.NewRegistry()
	reg.MustRegister(New(rt))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, f := range mfs {
		if _, err := expfmt.MetricFamilyToText(&buf, f); err != nil {
			t.Fatal(err)
		}
	}
	check := func(text string) string {
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(text)
		out, err := cmd.CombinedOutput()
		if err != nil || len(out) > 0 {
			return fmt.Sprintf("promtool check metrics (%v): %s", err, out)
		}
		return ""
	}
	if why := check(buf.String()); why != "" {
		t.Fatalf("%s\n--- the exposition:\n%s", why, buf.String())
	}
	if check(strings.Replace(buf.String(), `session="`, `session="\q`, 1)) == "" {
		t.Errorf("promtool passed an invalid escape")
	}
}
