// Promises: none

//go:build accel_plant

package accel

import (
	"os"
	"sync/atomic"
	"testing"
)

// plantBugs plants the bugs the environment names (built with -tags
// accel_plant only): ACCEL_TEST_NOGROW=1, no driver is ever added for a
// blocked one; ACCEL_TEST_NOYIELD=1, drivers never yield their P.
func plantBugs(t *testing.T) {
	for _, p := range []struct {
		env string
		bug *atomic.Bool
	}{
		{"ACCEL_TEST_NOGROW", &noGrowForTest},
		{"ACCEL_TEST_NOYIELD", &yieldOffForTest},
	} {
		if os.Getenv(p.env) == "1" {
			bug := p.bug
			bug.Store(true)
			t.Cleanup(func() { bug.Store(false) })
		}
	}
}
