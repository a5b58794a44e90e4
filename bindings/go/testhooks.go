package accel

// A hook for the tests (cgo is not allowed in test files). Not part of
// the API.

// #include <malloc.h>
// #include "shim.h"
import "C"

// closeCancelForTest closes v as Close does, but with ACCEL_CLOSE_CANCEL
// (queued ops complete unrun), without waiting when called from inside
// one of v's ops.
func closeCancelForTest(v *VMSession) int {
	v.closed.Store(true)
	v.postClose()
	c := v.sess.enter()
	if c == nil {
		return C.ACCEL_OK
	}
	rc := int(C.accel_session_close(c, C.ACCEL_CLOSE_CANCEL))
	v.h.exit()
	return rc
}

// cHeapInUse is the bytes C's malloc has handed out and not got back, over
// all its arenas (mallinfo2): what a leak of C memory grows, apart from
// the free memory malloc keeps resident.
func cHeapInUse() int64 {
	mi := C.mallinfo2()
	return int64(mi.uordblks + mi.hblkhd)
}

// setCombineForTest switches the combining of SubmitAsyncs into groups
// on or off for rt alone, so that a benchmark can compare the two in one
// binary without touching other runtimes. Call it before rt's first
// session opens: SubmitAsync reads the setting without synchronization.
func (rt *Runtime) setCombineForTest(on bool) { rt.noCombine = !on }
