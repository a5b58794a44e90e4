// Promises: none

package accel

import "runtime"

func runtimeGOMAXPROCS() int { return runtime.GOMAXPROCS(0) }
