package accel

// Hooks for the crossing-cost benchmarks (bench_test.go) and the tests:
// cgo is not allowed in test files. Not part of the API.

/*
#include <stdint.h>
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"time"
)

//export goAccelNop
func goAccelNop() {}

// benchGoToC times n empty Go->C calls.
func benchGoToC(n int) time.Duration {
	t := time.Now()
	for i := 0; i < n; i++ {
		C.goaccel_nop()
	}
	return time.Since(t)
}

// benchCToGo times n empty callbacks into Go from a thread C created.
func benchCToGo(n int) time.Duration {
	return time.Duration(C.goaccel_callback_bench(C.uint64_t(n)))
}

// closeCancelForTest closes v as Close does, but with ACCEL_CLOSE_CANCEL
// (queued ops complete unrun), without waiting when called from inside
// one of v's ops.
func closeCancelForTest(v *VMSession) int {
	v.closed.Store(true)
	v.postClose()
	rc := int(C.accel_session_close(v.h.c, C.ACCEL_CLOSE_CANCEL))
	runtime.KeepAlive(v.h)
	return rc
}
