//go:build !accel_plant

package accel

// The switches that plant bugs for the tests (plant_on.go) are built
// only with the build tag accel_plant; without it each is a constant
// false that the compiler removes with the code it guards.

func growOff() bool  { return false }
func yieldOff() bool { return false }
