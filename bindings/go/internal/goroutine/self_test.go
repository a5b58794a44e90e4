package goroutine

import (
	"sync"
	"testing"
)

// Self is the same on every call from one goroutine, and differs between
// goroutines alive at once: 64 goroutines that all wait for the last to
// start each read their own twice.
func TestSelfNamesEachLiveGoroutine(t *testing.T) {
	const n = 64
	ids := make([][2]uintptr, n)
	var started, done sync.WaitGroup
	release := make(chan struct{})
	started.Add(n)
	done.Add(n)
	for i := 0; i < n; i++ {
		go func(i int) {
			defer done.Done()
			ids[i][0] = Self()
			started.Done()
			<-release // every goroutine is alive at once
			ids[i][1] = Self()
		}(i)
	}
	started.Wait()
	close(release)
	done.Wait()
	seen := map[uintptr]int{Self(): -1}
	for i, id := range ids {
		if id[0] == 0 || id[0] != id[1] {
			t.Fatalf("goroutine %d: Self %#x then %#x", i, id[0], id[1])
		}
		if j, dup := seen[id[0]]; dup {
			t.Fatalf("goroutines %d and %d, alive at once, share Self %#x", j, i, id[0])
		}
		seen[id[0]] = i
	}
}
