//go:build !amd64 && !arm64

package goroutine

import "runtime"

// self returns the calling goroutine's id from the first line of its
// stack trace ("goroutine 18 [running]:"); 0 if that line has none.
func self() uintptr {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	const head = "goroutine "
	if n <= len(head) || string(buf[:len(head)]) != head {
		return 0
	}
	var id uintptr
	for _, c := range buf[len(head):n] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uintptr(c-'0')
	}
	return id
}
