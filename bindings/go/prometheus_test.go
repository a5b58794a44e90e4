// Promises: none

package accel

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	promName  = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	promLabel = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// parsePrometheus checks text against the Prometheus text exposition
// format (0.0.4) and returns its samples as "name{labels}" -> value. It
// checks: HELP/TYPE lines, one TYPE per family and before its samples,
// known types, metric and label names, quoted and escaped label values,
// float values, no duplicate series, counters named *_total.
func parsePrometheus(text string) (map[string]float64, error) {
	types := map[string]string{}
	samples := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for ln := 1; sc.Scan(); ln++ {
		line := sc.Text()
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			f := strings.SplitN(line, " ", 4)
			if len(f) < 3 || (f[1] != "HELP" && f[1] != "TYPE") {
				continue // a plain comment
			}
			if !promName.MatchString(f[2]) {
				return nil, fmt.Errorf("line %d: bad metric name %q", ln, f[2])
			}
			if f[1] == "TYPE" {
				if len(f) != 4 {
					return nil, fmt.Errorf("line %d: TYPE without a type", ln)
				}
				switch f[3] {
				case "counter", "gauge", "histogram", "summary", "untyped":
				default:
					return nil, fmt.Errorf("line %d: unknown type %q", ln, f[3])
				}
				if _, dup := types[f[2]]; dup {
					return nil, fmt.Errorf("line %d: second TYPE for %s", ln, f[2])
				}
				if f[3] == "counter" && !strings.HasSuffix(f[2], "_total") {
					return nil, fmt.Errorf("line %d: counter %s not named *_total", ln, f[2])
				}
				types[f[2]] = f[3]
			}
			continue
		}
		// name [{labels}] value
		i := strings.IndexAny(line, "{ ")
		if i < 0 {
			return nil, fmt.Errorf("line %d: no value", ln)
		}
		name, rest := line[:i], line[i:]
		if !promName.MatchString(name) {
			return nil, fmt.Errorf("line %d: bad metric name %q", ln, name)
		}
		if _, ok := types[name]; !ok {
			return nil, fmt.Errorf("line %d: sample of %s before its TYPE", ln, name)
		}
		key := name
		if rest[0] == '{' {
			end, labels, err := parseLabels(rest)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", ln, err)
			}
			key += labels
			rest = rest[end:]
		}
		if !strings.HasPrefix(rest, " ") {
			return nil, fmt.Errorf("line %d: no space before the value", ln)
		}
		fields := strings.Fields(rest)
		if len(fields) < 1 || len(fields) > 2 {
			return nil, fmt.Errorf("line %d: want value [timestamp]", ln)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: value: %v", ln, err)
		}
		if _, dup := samples[key]; dup {
			return nil, fmt.Errorf("line %d: duplicate series %s", ln, key)
		}
		samples[key] = v
	}
	return samples, sc.Err()
}

// parseLabels reads {a="x",b="y"} at the start of s; returns its length
// and a canonical form.
func parseLabels(s string) (int, string, error) {
	var out strings.Builder
	out.WriteByte('{')
	i := 1
	for {
		if i >= len(s) {
			return 0, "", fmt.Errorf("unterminated labels")
		}
		if s[i] == '}' {
			out.WriteByte('}')
			return i + 1, out.String(), nil
		}
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return 0, "", fmt.Errorf("label without '='")
		}
		lname := s[i : i+eq]
		if !promLabel.MatchString(lname) {
			return 0, "", fmt.Errorf("bad label name %q", lname)
		}
		i += eq + 1
		if i >= len(s) || s[i] != '"' {
			return 0, "", fmt.Errorf("label value not quoted")
		}
		i++
		var val strings.Builder
		for ; ; i++ {
			if i >= len(s) {
				return 0, "", fmt.Errorf("unterminated label value")
			}
			c := s[i]
			if c == '"' {
				break
			}
			if c == '\n' {
				return 0, "", fmt.Errorf("raw newline in a label value")
			}
			if c == '\\' {
				i++
				if i >= len(s) {
					return 0, "", fmt.Errorf("dangling escape")
				}
				switch s[i] {
				case '\\', '"':
					val.WriteByte(s[i])
				case 'n':
					val.WriteByte('\n')
				default:
					return 0, "", fmt.Errorf("bad escape \\%c", s[i])
				}
				continue
			}
			val.WriteByte(c)
		}
		i++ // closing quote
		fmt.Fprintf(&out, "%s=%q", lname, val.String())
		if i < len(s) && s[i] == ',' {
			out.WriteByte(',')
			i++
		}
	}
}

func TestPrometheusParses(t *testing.T) {
	rt := newTestRuntime(t, 2)
	odd := "odd \"vm\"\\\nline"
	a, _ := rt.NewVMSession("dex", WithPriority(PriorityHigh), WithMemoryBudget(1<<20))
	b, err := rt.NewVMSession(odd, WithPriority(PriorityLow))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 64; i++ {
		a.Submit(bg(), func(s *Session) error { return nil })
	}
	a.Submit(bg(), func(*Session) error { return fmt.Errorf("x") })
	a.Submit(bg(), func(s *Session) error { return s.Reserve(4096) })
	b.Submit(bg(), func(*Session) error { return nil })

	var buf bytes.Buffer
	if err := rt.WritePrometheus(&buf); err != nil {
		t.Fatal(err)
	}
	samples, err := parsePrometheus(buf.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	lab := func(id string, prio int) string { return fmt.Sprintf(`{session=%q,priority="%d"}`, id, prio) }
	dex := lab("dex", 10)
	want := map[string]float64{
		`accel_runtime_workers`:                           float64(2 + len(rt.host.helpers)),
		`accel_runtime_sessions`:                          2,
		`accel_session_ops_submitted_total` + dex:         66,
		`accel_session_ops_completed_total` + dex:         65,
		`accel_session_ops_failed_total` + dex:            1,
		`accel_session_ops_cancelled_total` + dex:         0,
		`accel_session_memory_used_bytes` + dex:           4096,
		`accel_session_memory_budget_bytes` + dex:         1 << 20,
		`accel_session_queue_depth` + dex:                 0,
		`accel_session_ops_submitted_total` + lab(odd, 1): 1,
		`accel_session_memory_budget_bytes` + lab(odd, 1): 0,
	}
	for k, v := range want {
		if got, ok := samples[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	for _, m := range []string{"accel_session_service_seconds_total", "accel_session_wait_p50_seconds", "accel_session_wait_p99_seconds"} {
		if _, ok := samples[m+dex]; !ok {
			t.Errorf("%s missing", m)
		}
	}
	// Go's counts replace C's: a group of 32 async ops is one C op, and an
	// op canceled while queued never ran.
	g, _ := rt.NewVMSession("grouped")
	fs := make([]func(*Session) error, 40)
	for i := range fs {
		fs[i] = func(*Session) error { return nil }
	}
	g.SubmitAsyncBatch(fs, nil)
	g.Sync()
	buf.Reset()
	rt.WritePrometheus(&buf)
	if samples, err = parsePrometheus(buf.String()); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if got := samples[`accel_session_ops_completed_total`+lab("grouped", 5)]; got != 40 {
		t.Errorf("grouped ops completed = %v, want 40\n%s", got, buf.String())
	}
	// The checker itself rejects what it must.
	for _, bad := range []string{
		"x 1\n",                                 // no TYPE
		"# TYPE x counter\nx_total 1\n",         // counter not *_total
		"# TYPE x gauge\nx{a=\"b} 1\n",          // unterminated
		"# TYPE x gauge\nx{a=\"\\q\"} 1\n",      // bad escape
		"# TYPE x gauge\nx 1\nx 2\n",            // duplicate
		"# TYPE x gauge\nx one\n",               // value
		"# TYPE x gauge\n# TYPE x gauge\nx 1\n", // two TYPEs
	} {
		if _, err := parsePrometheus(bad); err == nil {
			t.Errorf("checker accepted %q", bad)
		}
	}
}

// Two open sessions with one id (which NewVMSession documents as
// supported: "Two open sessions may have the same vmID ... they are
// separate sessions") must still give a valid Prometheus text
// (WritePrometheus: "so a node's metrics endpoint can serve it as is").
// Each session's series, Go's families and C's, sit under one label, its
// C id ("evm", then "evm#N"). Labelled by vmID, the Go families wrote
// each of their series twice (Prometheus rejects the whole scrape on a
// duplicate series) and split the second session across two labels.
func TestPrometheusDuplicateID(t *testing.T) {
	rt := newTestRuntime(t, 1)
	a, errA := rt.NewVMSession("evm")
	b, errB := rt.NewVMSession("evm")
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	done := step(t, "Submits")
	a.Submit(bg(), func(*Session) error { return nil })
	b.Submit(bg(), func(*Session) error { return nil })
	done()
	var sb strings.Builder
	if err := rt.WritePrometheus(&sb); err != nil {
		t.Fatal(err)
	}
	if _, err := parsePrometheus(sb.String()); err != nil {
		t.Fatalf("WritePrometheus with two sessions named \"evm\": %v\n%s", err, sb.String())
	}
	samples, _ := parsePrometheus(sb.String())
	second := labelWithPrefix(t, samples, "accel_session_ops_submitted_total", "evm#")
	for _, label := range []string{"evm", second} {
		for _, fam := range []string{"accel_session_ops_submitted_total", "accel_session_queue_depth"} {
			if _, ok := samples[fmt.Sprintf(`%s{session=%q,priority="5"}`, fam, label)]; !ok {
				t.Errorf("no %s for %q\n%s", fam, label, sb.String())
			}
		}
	}
}

// Two vmIDs that differ only in bytes that are not UTF-8 ("\xff", "\xfe")
// would write one label (each such byte is U+FFFD in the text): the
// second gets a derived C id, so the scrape holds no duplicate series and
// each session's series, Go's and C's, share its own label.
func TestPrometheusNonUTF8IDsKeepApart(t *testing.T) {
	rt := newTestRuntime(t, 1)
	vs := []*VMSession{}
	for _, id := range []string{"\xff", "\xfe", "x\xffy", "x\xfey"} {
		v, err := rt.NewVMSession(id)
		if err != nil {
			t.Fatal(err)
		}
		if v.ID() != id {
			t.Fatalf("ID() = %q, want %q", v.ID(), id)
		}
		vs = append(vs, v)
	}
	for _, v := range vs {
		done := step(t, fmt.Sprintf("Submit on %q", v.ID()))
		err := v.Submit(bg(), func(*Session) error { return nil })
		done()
		if err != nil {
			t.Fatal(err)
		}
	}
	var sb strings.Builder
	if err := rt.WritePrometheus(&sb); err != nil {
		t.Fatal(err)
	}
	samples, err := parsePrometheus(sb.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, sb.String())
	}
	labels := map[string]bool{}
	for k, val := range samples {
		const fam = `accel_session_ops_submitted_total{session="`
		if strings.HasPrefix(k, fam) {
			rest := k[len(fam):]
			label := rest[:strings.IndexByte(rest, '"')]
			if val != 1 {
				t.Errorf("%s = %v, want 1", k, val)
			}
			if _, ok := samples[`accel_session_queue_depth{session="`+label+`",priority="5"}`]; !ok {
				t.Errorf("no C family sample for label %q\n%s", label, sb.String())
			}
			labels[label] = true
		}
	}
	if len(labels) != len(vs) {
		t.Errorf("%d labels for %d sessions: %v", len(labels), len(vs), labels)
	}
}
