package main

import (
	"strings"
	"testing"
	"time"
)

// A short run of both scenario kinds through both systems: every op is
// accounted for (run checks offered == on time + late + expired + dropped
// + censored), every check gave the expected answer, and each system did
// real work. Timing is not asserted: under -race on a shared machine the
// on-time figures mean nothing, the accounting must hold anyway.
func TestNodeExample(t *testing.T) {
	before := checked.Load()
	res, err := run([]scenario{{"steady", 0.5, false}, {"blocking", 0.5, true}},
		400*time.Millisecond, 7, 1024, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 {
		t.Fatalf("%d scenarios ran, want 2", len(res))
	}
	for _, pair := range res {
		for _, r := range pair {
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
	_, err := run([]scenario{{"steady", 0.5, false}}, 300*time.Millisecond, 7, 1024, false)
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
	ops := arrivals(7, 0.9, 2, time.Second)
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

// -hint-waits: accel's waiting ops run their wait inside s.Blocking; the
// run still accounts for every op and checks every answer.
func TestNodeExampleHintWaits(t *testing.T) {
	hintWaits = true
	defer func() { hintWaits = false }()
	res, err := run([]scenario{{"blocking", 0.5, true}}, 300*time.Millisecond, 9, 1024, false)
	if err != nil {
		t.Fatal(err)
	}
	if r := res[0][0]; r.ontime+r.late == 0 {
		t.Fatalf("accel: no op completed (%+v)", r)
	}
}
