// Promises: 1, 6

package accel

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// goid is the calling goroutine's id (from its stack header).
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	b = b[:bytes.IndexByte(b, ' ')]
	n, _ := strconv.ParseUint(string(b), 10, 64)
	return n
}

// No op is stranded when a helper stops: ops its own op queues (to another
// session, whose end re-queues it on the helper worker) and ops queued
// while it helped all run after it returns (a stranded op hangs here).
func TestHelperLeavesNoStrandedOp(t *testing.T) {
	rt := newTestRuntime(t, 1)
	a, err := rt.NewVMSession("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := rt.NewVMSession("b")
	if err != nil {
		t.Fatal(err)
	}
	waitLoop := stepLong(t, "200 rounds of a.Submit and its op's follow-up")
	defer waitLoop() // also on a t.Fatal inside the loop
	for i := 0; i < 200; i++ {
		done := make(chan struct{})
		if err := a.Submit(context.Background(), func(*Session) error {
			for k := 0; k < 3; k++ {
				if err := b.SubmitAsync(emptyOp, nil); err != nil {
					return err
				}
			}
			if err := a.SubmitAsync(func(*Session) error { close(done); return nil }, nil); err != nil {
				return err
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		<-done
	}
	waitLoop()
	waitSync := step(t, "b.Sync")
	err = b.Sync()
	waitSync()
	if err != nil {
		t.Fatal(err)
	}
	if d, c, _ := b.Stats(); d != 600 || c != 600 {
		t.Fatalf("b Stats = %d %d, want 600 600", d, c)
	}
}

// Every op runs exactly once and Stats are exact with many synchronous
// submitters helping at once (more submitters than helper workers).
func TestHelpExactlyOnce(t *testing.T) {
	rt := newTestRuntime(t, 2)
	const sessions, goroutines, per = 4, 12, 300
	vs := make([]*VMSession, sessions)
	for i := range vs {
		v, err := rt.NewVMSession("x" + strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		vs[i] = v
	}
	runs := make([]atomic.Int32, goroutines*per)
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				id := g*per + i
				if err := vs[id%sessions].Submit(context.Background(), func(*Session) error {
					runs[id].Add(1)
					return nil
				}); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	done := stepLong(t, "the submitting goroutines (wg.Wait)")
	wg.Wait()
	done()
	for id := range runs {
		if n := runs[id].Load(); n != 1 {
			t.Fatalf("op %d ran %d times", id, n)
		}
	}
	for _, v := range vs {
		if d, c, f := v.Stats(); d != goroutines*per/sessions || c != d || f != 0 {
			t.Fatalf("%s Stats = %d %d %d", v.ID(), d, c, f)
		}
	}
}
