// Package goroutine names the calling goroutine, for the accel package's
// record of an op's announced wait run off its thread (away.go), whose
// calls into the op's own session must be told from every other
// goroutine's. Go gives a goroutine no name of its own; the address of
// its runtime descriptor (g), which Go keeps in a register or thread
// slot, is one for as long as the goroutine lives, read in two
// instructions. Elsewhere the id from the goroutine's stack trace stands
// in (never reused, but its cost grows with the stack's depth).
package goroutine

// Self returns an identity of the calling goroutine: the same on every
// call from one goroutine, different for any two goroutines alive at
// once (a goroutine that ended may pass its identity on to a new one);
// never 0 where it is known, 0 where it is not.
func Self() uintptr {
	return self()
}
