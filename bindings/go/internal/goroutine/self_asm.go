//go:build amd64 || arm64

package goroutine

// self returns the calling goroutine's g (self_$GOARCH.s).
func self() uintptr
