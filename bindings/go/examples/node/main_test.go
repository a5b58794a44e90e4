package main

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
)

// runWithin is run under a watchdog: a run that hangs (an op that never
// completes, a drain or a Close that never ends) panics naming the test,
// with every goroutine's stack, instead of waiting for go test's own
// timeout. A run here is seconds long, under -race tens of seconds.
func runWithin(t *testing.T, list []scenario, cfg config) ([][]pair, error) {
	t.Helper()
	tm := time.AfterFunc(3*time.Minute, func() {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		panic(fmt.Sprintf("%s: stuck in run (the node example's scenarios)\n%s", t.Name(), buf))
	})
	defer tm.Stop()
	return run(list, cfg)
}

// A short run of both scenario kinds through both systems: every op is
// accounted for (run checks offered == on time + late + expired + dropped
// + censored), every check gave the expected answer, and each system did
// real work. Timing is not asserted: under -race on a shared machine the
// on-time figures mean nothing, the accounting must hold anyway.
func TestNodeExample(t *testing.T) {
	before := checked.Load()
	res, err := runWithin(t, []scenario{{"steady", 0.5, false, false, false}, {"blocking", 0.5, true, false, false}},
		config{d: 400 * time.Millisecond, seed: 7, depth: 1024, reps: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 {
		t.Fatalf("%d scenarios ran, want 2", len(res))
	}
	for _, ps := range res {
		if len(ps) != 1 {
			t.Fatalf("%d pairs ran, want 1", len(ps))
		}
		for _, r := range ps[0].res {
			if r.ontime+r.late == 0 || r.workAll <= 0 {
				t.Errorf("%s: no op completed (%+v)", r.system, r)
			}
			if r.wrong != 0 {
				t.Errorf("%s: %d wrong answers", r.system, r.wrong)
			}
		}
	}
	if checked.Load() == before {
		t.Fatal("no real check ran")
	}
}

// The check of every answer is live: with one expected answer flipped per
// body, the same run must fail.
func TestNodeExampleWrongAnswerFails(t *testing.T) {
	sabotage = true
	defer func() { sabotage = false }()
	_, err := runWithin(t, []scenario{{"steady", 0.5, false, false, false}}, config{d: 300 * time.Millisecond, seed: 7, depth: 1024, reps: 1})
	if err == nil || !strings.Contains(err.Error(), "wrong answer") {
		t.Fatalf("run with a flipped expected answer returned %v, want a wrong-answer error", err)
	}
}

// In the blocking scenario only the chains marked waits (storage reads,
// the remote signer) wait before their body; every other chain's ops
// are the steady scenario's, so the scenario isolates what waiting ops do
// to the rest.
func TestOnlyWaitingChainsWait(t *testing.T) {
	if err := prepare(7); err != nil { // the bodies' measured costs
		t.Fatal(err)
	}
	ops := arrivals(7, 0.9, 2, time.Second, false)
	var waiting, still int
	for _, o := range ops {
		switch {
		case chains[o.chain].waits && o.wait <= 0:
			t.Fatalf("%s: an op with no wait", chains[o.chain].name)
		case !chains[o.chain].waits && o.wait != 0:
			t.Fatalf("%s: an op that waits %v, but the chain does not wait", chains[o.chain].name, o.wait)
		case o.wait > 0:
			waiting++
		default:
			still++
		}
	}
	if waiting == 0 || still == 0 {
		t.Fatalf("%d ops wait, %d do not: want both", waiting, still)
	}
}

// blocking-hint: accel's waiting ops run their wait inside s.Blocking;
// the run still accounts for every op and checks every answer.
func TestNodeExampleAnnouncedWaits(t *testing.T) {
	res, err := runWithin(t, []scenario{{"blocking-hint", 0.5, true, true, false}}, config{d: 300 * time.Millisecond, seed: 9, depth: 1024, reps: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r := res[0][0].res[0]; r.ontime+r.late == 0 {
		t.Fatalf("accel: no op completed (%+v)", r)
	}
}

// The capacity probe drives the op mix through the neutral pool with a
// submitter goroutine per arrival and credits only work done by the
// pool's GOMAXPROCS goroutines: a positive figure, at most what
// GOMAXPROCS goroutines could do (2x slack for the bodies' measured
// cost), and every probe op accounted for.
func TestCapacityProbe(t *testing.T) {
	if err := prepare(7); err != nil {
		t.Fatal(err)
	}
	c := capacity(7, 1024, false)
	if procs := float64(runtime.GOMAXPROCS(0)); !(c > 0) || c > 2*procs {
		t.Fatalf("capacity %.3f CPUs, want in (0, %v]", c, 2*procs)
	}
}

// -reps: each scenario runs that many pairs, each pair both systems on
// the same arrivals, the pairs on different seeds; a warm-up pair first.
func TestNodeExampleReps(t *testing.T) {
	res, err := runWithin(t, []scenario{{"steady", 0.5, false, false, false}},
		config{d: 300 * time.Millisecond, seed: 11, depth: 1024, reps: 2, warmup: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || len(res[0]) != 2 {
		t.Fatalf("got %d scenarios / pairs %v, want 1 scenario of 2 pairs", len(res), len(res[0]))
	}
	for _, p := range res[0] {
		if p.res[0].offered != p.res[1].offered || p.res[0].offered == 0 {
			t.Errorf("pair seed %d: accel offered %d ops, old design %d: want the same arrivals",
				p.seed, p.res[0].offered, p.res[1].offered)
		}
	}
	if res[0][0].seed == res[0][1].seed {
		t.Errorf("both pairs ran seed %d", res[0][0].seed)
	}
}

// The summary's verdicts follow the targets, a miss never reads as met.
func TestTargets(t *testing.T) {
	full := [nClasses + 1]float64{100, 100, 100, 100, 100}
	on := func(a, o [nClasses + 1]float64) [2][nClasses + 1]float64 { return [2][nClasses + 1]float64{a, o} }
	critMiss := full
	critMiss[critical] = 99.96
	highLow := full
	highLow[high] = 85
	for _, c := range []struct {
		sc   string
		work float64
		on   [2][nClasses + 1]float64
		met  bool
	}{
		{"steady", 1.00, on(full, full), true},
		{"steady", 0.999, on(full, full), false},
		{"steady", 1.00, on(critMiss, full), false},
		{"overload", 1.00, on(critMiss, full), true},
		{"overload", 0.99, on(full, full), false},
		{"blocking", 0.97, on(full, full), true},
		{"blocking", 0.97, on(highLow, full), false},
		{"blocking", 0.96, on(full, highLow), false},
		{"blocking-hint", 1.00, on(highLow, full), true},
		{"blocking-hint", 0.99, on(full, full), false},
	} {
		var sc scenario
		for _, s := range scenarios {
			if s.name == c.sc {
				sc = s
			}
		}
		got := target(sc, c.work, c.on)
		if met := strings.HasSuffix(got, ": met"); met != c.met {
			t.Errorf("%s work %.3f on %v: %q, want met %v", c.sc, c.work, c.on, got, c.met)
		}
	}
	if m := med([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("med of 1..4 = %v, want 2.5", m)
	}
	if m := med([]float64{3, math.NaN(), 1, 2}); m != 2 {
		t.Errorf("med of 1..3 and a NaN = %v, want 2", m)
	}
	if s := pctF(99.96); s != "99.9%" {
		t.Errorf("pctF(99.96) = %s, want 99.9%% (a miss never rounds up to 100)", s)
	}
}

// -detail: the accel run reads the runtime's counters (its visits are
// counted) and both runs their process figures.
func TestNodeExampleDetail(t *testing.T) {
	showDetail = true
	defer func() { showDetail = false }()
	res, err := runWithin(t, []scenario{{"steady", 0.5, false, false, false}}, config{d: 300 * time.Millisecond, seed: 13, depth: 1024, reps: 1})
	if err != nil {
		t.Fatal(err)
	}
	p := res[0][0]
	if v := p.res[0].det.counters["accel_runtime_visits_total"]; !(v > 0) {
		t.Errorf("accel: visits over the run %v, want > 0 (counters %v)", v, p.res[0].det.counters)
	}
	if p.res[1].det.counters != nil {
		t.Errorf("old design: accel counters %v, want none", p.res[1].det.counters)
	}
	for _, r := range p.res {
		if r.det.wall <= 0 {
			t.Errorf("%s: wall %v", r.system, r.det.wall)
		}
		if r.det.waiting != nil {
			t.Errorf("%s: steady: waiting VMs %v, want none", r.system, r.det.waiting)
		}
	}
}

// -detail in the blocking scenario: each system accounts for each VM whose
// ops wait, by name, with its ops run and on time, and the sampler's span
// lies within the arrivals.
func TestNodeExampleDetailWaitingVMs(t *testing.T) {
	showDetail = true
	defer func() { showDetail = false }()
	d := 300 * time.Millisecond
	res, err := runWithin(t, []scenario{{"blocking", 0.5, true, false, false}}, config{d: d, seed: 13, depth: 1024, reps: 1})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range chains {
		if c.waits {
			want = append(want, c.name)
		}
	}
	for _, r := range res[0][0].res {
		if len(r.det.waiting) != len(want) {
			t.Fatalf("%s: %d waiting VMs %v, want %v", r.system, len(r.det.waiting), r.det.waiting, want)
		}
		for i, w := range r.det.waiting {
			if w.name != want[i] || w.ran == 0 || w.ontime > w.ran {
				t.Errorf("%s: waiting VM %d = %+v, want %s with ops run and at most those on time", r.system, i, w, want[i])
			}
		}
		if r.det.readySpan < 0 || r.det.readySpan > d {
			t.Errorf("%s: ready span %v, want within the %v of arrivals", r.system, r.det.readySpan, d)
		}
	}
}

// The batchable chain's votes arrive in the batch scenarios only, and the
// other chains' arrivals are the same either way but for their rate (the
// shares renormalised over one more chain): each chain's ops come from a
// generator of its own.
func TestBatchChainOnlyInBatchScenarios(t *testing.T) {
	if err := prepare(7); err != nil {
		t.Fatal(err)
	}
	count := func(bls bool) (n, votes int) {
		for _, o := range arrivals(7, 0.9, 2, time.Second, bls) {
			if o.chain == blsIndex {
				votes++
			} else {
				n++
			}
		}
		return n, votes
	}
	n0, v0 := count(false)
	n1, v1 := count(true)
	if v0 != 0 || v1 == 0 {
		t.Fatalf("votes without the batch scenario %d, with it %d: want 0 and some", v0, v1)
	}
	if n1 >= n0 {
		t.Fatalf("the other chains offered %d ops beside the votes, %d without: want fewer (same load)", n1, n0)
	}
}

// A short batch run through both systems: every op and vote is accounted
// for (run checks it), both systems ran the votes in batches (accel's
// Batcher, the hand batcher), and every vote's batch stamped its begin
// and end. Timing is not asserted.
func TestBatchScenario(t *testing.T) {
	res, err := runWithin(t, []scenario{{"batch", 0.5, false, false, true}},
		config{d: 400 * time.Millisecond, seed: 7, depth: 1024, reps: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res[0][0].res {
		if r.batches == 0 || r.batchOps < r.batches {
			t.Errorf("%s: %d batches of %d votes: want batches of one or more", r.system, r.batches, r.batchOps)
		}
		if r.blsP99 <= 0 {
			t.Errorf("%s: no vote completed", r.system)
		}
	}
}
