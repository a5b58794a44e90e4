//go:build !cgo || !linux

package accel

// The package compiles the C runtime with cgo, on Linux (futexes, liburcu):
// without cgo (CGO_ENABLED=0, or no C compiler) or on another system the
// build stops here with this one line instead of undefined names.
var _ int = "accel needs cgo on Linux: build with CGO_ENABLED=1 and a C compiler, and install liburcu-dev"
