// Promises: none

//go:build !accel_plant

package accel

import "testing"

// plantBugs plants nothing without the build tag accel_plant
// (plant_on_test.go).
func plantBugs(t *testing.T) {}
