// Promises: none

package accel

import (
	"testing"
	"unsafe"
)

// The record layout's promise (oprec.go): three cache lines, the async
// round trip's fields in the first.
func TestOpRecLayout(t *testing.T) {
	var r opRec
	if s := unsafe.Sizeof(r); s != 192 {
		t.Fatalf("sizeof(opRec) = %d, want 192", s)
	}
	if o := unsafe.Offsetof(r.gcommitted) + unsafe.Sizeof(r.gcommitted); o > 64 {
		t.Fatalf("line 0 ends at %d, want <= 64", o)
	}
}
