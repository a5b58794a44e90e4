package accel

// WritePrometheus checked by Prometheus' own parser: `promtool check
// metrics` (Debian's prometheus package, which scripts/deps.sh installs;
// make test runs deps before the Go tests). Each scrape must parse with
// no error and no lint problem, and no series may be written twice
// (promtool's parser accepts that; Prometheus does not, so the check here
// looks for it). Planted faults (a series written twice, an invalid
// escape) must be reported, or the check is broken. Without promtool on
// PATH the test is skipped with a message naming make deps (go test may
// run without the project's deps).
//
// Promises: none

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// promtoolPath finds promtool, on PATH or in the repository's
// .tools/prometheus (where scripts/deps.sh unpacks it), or skips the test.
func promtoolPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	p, err := filepath.Abs(filepath.Join("..", "..", ".tools", "prometheus",
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

// promtoolCheck returns what is wrong with text: promtool's errors and
// lint problems, and the series written twice. "" if nothing is.
func promtoolCheck(t *testing.T, promtool, text string) string {
	t.Helper()
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.CombinedOutput()
	var why []string
	if err != nil || len(out) > 0 {
		if _, exited := err.(*exec.ExitError); err != nil && !exited {
			t.Fatalf("running promtool: %v", err)
		}
		why = append(why, fmt.Sprintf("promtool check metrics (%v): %s", err, out))
	}
	seen := map[string]bool{}
	var dups []string
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key := line[:strings.LastIndexByte(line, ' ')+1]
		if seen[key] {
			dups = append(dups, key)
		}
		seen[key] = true
	}
	if len(dups) > 0 {
		sort.Strings(dups)
		why = append(why, "series written twice:\n"+strings.Join(dups, "\n"))
	}
	return strings.Join(why, "\n")
}

func scrape(t *testing.T, rt *Runtime) string {
	t.Helper()
	var buf bytes.Buffer
	if err := rt.WritePrometheus(&buf); err != nil {
		t.Fatalf("WritePrometheus: %v", err)
	}
	return buf.String()
}

func TestPromtoolOddAndDuplicateIDs(t *testing.T) {
	promtool := promtoolPath(t)
	rt := newTestRuntime(t, 2)
	long := strings.Repeat("L", 300)
	ids := []string{
		"plain", "quote\"d", "back\\slash", "trailing\\", "new\nline",
		"\\\"\n", "nul\x00inside", "\x00", "tab\tcr\r", "ctl\x01\x7f",
		"{label=\"syntax\",x}", "# not a comment", "\xff", "\xfe",
		"x\xffy", "x\xfey", "caf\xc3\xa9-\xf0\x9f\x98\x80", long,
		long + "!", // one C id could not hold both: a derived one
		"dup", "dup", "dup", "plain",
	}
	for i, id := range ids {
		v, err := rt.NewVMSession(id, WithPriority(Priority(i%3*400+1)), WithMemoryBudget(1<<20))
		if err != nil {
			t.Fatalf("NewVMSession(%q): %v", id, err)
		}
		done := step(t, fmt.Sprintf("Submits on %q", id))
		v.Submit(bg(), func(*Session) error { return nil })
		v.Submit(bg(), func(*Session) error { return fmt.Errorf("fails") })
		v.Submit(bg(), func(s *Session) error { return s.Reserve(64) })
		done()
	}
	text := scrape(t, rt)
	if why := promtoolCheck(t, promtool, text); why != "" {
		t.Fatalf("%s\n--- the scrape:\n%s", why, text)
	}
	if n := strings.Count(text, "\naccel_session_ops_submitted_total{"); n != len(ids) {
		t.Errorf("%d sessions listed, want %d\n%s", n, len(ids), text)
	}

	// The check sees what it is for.
	lines := strings.SplitAfter(text, "\n")
	last := lines[len(lines)-2]
	for name, bad := range map[string]string{
		"a series written twice": text + last,
		"an invalid escape":      strings.Replace(text, `session="`, `session="\q`, 1),
	} {
		if promtoolCheck(t, promtool, bad) == "" {
			t.Errorf("the check passed a scrape with %s", name)
		}
	}
}

func TestPromtoolManySessions(t *testing.T) {
	promtool := promtoolPath(t)
	rt := newTestRuntime(t, 2)
	const n = 500
	for i := 0; i < n; i++ {
		v, err := rt.NewVMSession(fmt.Sprintf("vm-%03d", i%(n/2))) // each id twice
		if err != nil {
			t.Fatal(err)
		}
		v.SubmitAsync(func(*Session) error { return nil }, nil)
	}
	text := scrape(t, rt)
	if why := promtoolCheck(t, promtool, text); why != "" {
		t.Fatalf("%s\n--- the scrape:\n%s", why, text)
	}
	if c := strings.Count(text, "\naccel_session_queue_depth{"); c != n {
		t.Errorf("%d sessions in the C families, want %d", c, n)
	}
}

// Scrapes while goroutines open, use and close sessions with a few ids
// (two at a time may share one): every scrape passes.
func TestPromtoolUnderChurn(t *testing.T) {
	promtool := promtoolPath(t)
	rt := newTestRuntime(t, 2)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var opened atomic.Int64
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				v, err := rt.NewVMSession(fmt.Sprintf("churn-%d", (g+i)%3))
				if err != nil {
					t.Errorf("NewVMSession: %v", err)
					return
				}
				opened.Add(1)
				v.Submit(bg(), func(*Session) error { return nil })
				v.Close()
			}
		}(g)
	}
	var bad []string
	const scrapes = 40
	for k := 0; k < scrapes && len(bad) == 0; k++ {
		text := scrape(t, rt)
		if why := promtoolCheck(t, promtool, text); why != "" {
			bad = append(bad, fmt.Sprintf("scrape %d: %s\n--- the scrape:\n%s", k, why, text))
		}
	}
	stop.Store(true)
	done := stepLong(t, "the churning goroutines return")
	wg.Wait()
	done()
	t.Logf("%d scrapes, %d sessions opened meanwhile", scrapes, opened.Load())
	if len(bad) > 0 {
		t.Fatal(bad[0])
	}
}
