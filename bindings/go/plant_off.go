//go:build !accel_plant

package accel

// The switches that plant bugs for the tests and the hooks they hold
// the package at (plant_on.go) are built only with the build tag
// accel_plant; without it each switch is a constant false that the
// compiler removes with the code it guards, and each hook an empty
// function that inlines to nothing.

func growOff() bool  { return false }
func yieldOff() bool { return false }
func releaseHook()   {}
