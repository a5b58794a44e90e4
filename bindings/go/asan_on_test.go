// Promises: none

//go:build asan

package accel

// asanEnabled: built with go test -asan (make test-go-asan), whose
// quarantine keeps freed C memory resident on purpose.
const asanEnabled = true
