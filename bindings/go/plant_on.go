//go:build accel_plant

package accel

// Switches that plant bugs the tests must catch, built only with
// `go test -tags accel_plant` (the tests set them from ACCEL_TEST_*
// variables: plant_on_test.go). Never in a production binary.

import "sync/atomic"

var (
	// noGrowForTest: no host worker is ever added for a blocked one.
	noGrowForTest atomic.Bool
	// yieldOffForTest: host workers never yield their P between visits.
	yieldOffForTest atomic.Bool
	// releaseHookForTest, if set, runs in chandle.free just before the C
	// release: a test holds a release there to race Runtime.Close with it.
	releaseHookForTest atomic.Pointer[func()]
)

func growOff() bool  { return noGrowForTest.Load() }
func yieldOff() bool { return yieldOffForTest.Load() }

func releaseHook() {
	if f := releaseHookForTest.Load(); f != nil {
		(*f)()
	}
}
