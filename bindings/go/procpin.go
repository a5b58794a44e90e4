package accel

import _ "unsafe" // go:linkname

// procPin and procUnpin are the runtime's (sync.Pool's own per-P
// lookup): procPin returns the calling goroutine's P id and keeps it on
// that P until procUnpin. The helper slots use the id only as a hint of
// which slot is likely in this CPU's cache (takeHelpSlot); the runtime
// keeps these names reachable by linkname for the packages that use them.

//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()
