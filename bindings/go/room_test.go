// Promises: 1
package accel

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Waits for queue room (room.go): a Submit or SubmitBatch that finds its
// session's queue full parks in Go, and is woken by the release of a
// position, never by the fallback timer.

// roomWaiter runs submit; its name marks the goroutine's stack.
//
//go:noinline
func roomWaiter(submit func()) { submit() }

// roomWaiterState returns the state ("select", "syscall", ...) of the
// goroutine inside roomWaiter and whether it is inside the room wait
// (roomWait.wait or a C submit); "" if there is none.
func roomWaiterState() (state string, waiting bool) {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, "accel.roomWaiter(") {
			continue
		}
		head, _, _ := strings.Cut(g, "\n")
		if i, j := strings.Index(head, "["), strings.Index(head, "]"); i >= 0 && j > i {
			state, _, _ = strings.Cut(head[i+1:j], ",")
		}
		return state, strings.Contains(g, "roomWait).wait") || strings.Contains(g, "_Cfunc_goaccel_submit")
	}
	return "", false
}

// A Submit (with a ctx that can end, or with none) or a SubmitBatch
// waiting for room waits parked in Go ([select]), not inside a C call
// ([syscall]): a goroutine asleep in C keeps its P until Go's sysmon
// takes it back, up to 10 ms later, and under overload such waits left
// CPUs idle. Planted (the wait in C, a usleep loop until a wake): the
// first step never sees [select], and its watchdog fires with the
// goroutine in [syscall].
func TestRoomWaitParksInGo(t *testing.T) {
	for _, c := range []struct {
		name   string
		submit func(v *VMSession, ctx context.Context) error
	}{
		{"Submit, ctx with a deadline", func(v *VMSession, ctx context.Context) error {
			return v.Submit(ctx, func(*Session) error { return nil })
		}},
		{"Submit, ctx that never ends", func(v *VMSession, _ context.Context) error {
			return v.Submit(bg(), func(*Session) error { return nil })
		}},
		{"SubmitBatch", func(v *VMSession, ctx context.Context) error {
			for _, err := range v.SubmitBatch(ctx, []func(*Session) error{
				func(*Session) error { return nil }, func(*Session) error { return nil }}) {
				if err != nil {
					return err
				}
			}
			return nil
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// No fallback retry (a C call) inside the samples below.
			old := roomFallback.Swap(int64(time.Hour))
			t.Cleanup(func() { roomFallback.Store(old) })
			rt := newTestRuntime(t, 1)
			v, _ := rt.NewVMSession("room", WithQueueDepth(1))
			release := blockWorker(t, v)
			filler := make(chan error, 1)
			if err := v.SubmitAsync(func(*Session) error { return nil }, func(err error) { filler <- err }); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(bg(), time.Hour)
			defer cancel()
			res := make(chan error, 1)
			go roomWaiter(func() { res <- c.submit(v, ctx) })
			// Parked in Go: [select]. Its first try, a C call, shows
			// [syscall] while it runs (long under -asan); a wait in C
			// never reaches [select], and this step's watchdog names it.
			done := step(t, "the submitter parks in Go ([select]) waiting for room, not in a C call")
			for {
				if st, in := roomWaiterState(); in && st == "select" {
					break
				}
				time.Sleep(100 * time.Microsecond)
			}
			done()
			for i := 0; i < 50; i++ {
				if st, in := roomWaiterState(); in && st == "syscall" {
					t.Fatalf("sample %d: the submitter waits for room inside a C call ([syscall]), holding its P", i)
				}
				time.Sleep(200 * time.Microsecond)
			}
			release()
			done = step(t, "the submitter's op queued and run once room is freed")
			if err := <-res; err != nil {
				t.Fatal(err)
			}
			if err := <-filler; err != nil {
				t.Fatal(err)
			}
			done()
		})
	}
}

// Every release of queue positions wakes a waiter: a visit taking ops
// (runVisit), and C completing ops unrun (goAccelUnrun: here ops whose
// deadline passed while queued). The fallback timer is an hour here, so
// a release that wakes no one hangs, and the watchdog names the step.
// Sixteen waiters on a queue of depth 2, each Submit and a SubmitBatch
// of 40 (more than the depth) go through, and no wait ended by the
// fallback. Planted (no wake in runVisit, or none in goAccelUnrun): the
// watchdog fires.
func TestRoomWaitWokenByEveryRelease(t *testing.T) {
	old := roomFallback.Swap(int64(time.Hour))
	t.Cleanup(func() { roomFallback.Store(old) })
	fb0 := roomFallbacks.Load()
	for _, unrun := range []bool{false, true} {
		name := "positions released by visits"
		if unrun {
			name = "positions released by ops completed unrun"
		}
		t.Run(name, func(t *testing.T) {
			rt := newTestRuntime(t, 1)
			v, _ := rt.NewVMSession("room", WithQueueDepth(2))
			release := blockWorker(t, v)
			// Fill the queue: with ops that expire while queued (completed
			// unrun, each freeing its position), or that run.
			fctx, fcancel := context.WithTimeout(bg(), time.Hour)
			if unrun {
				fctx, fcancel = context.WithTimeout(bg(), time.Millisecond)
			}
			defer fcancel()
			var fill sync.WaitGroup
			for i := 0; i < 2; i++ {
				fill.Add(1)
				go func() { defer fill.Done(); v.Submit(fctx, func(*Session) error { return nil }) }()
			}
			waitFor(t, "the two fillers are queued", func() {
				for v.FullStats().Queued < 2 {
					time.Sleep(100 * time.Microsecond)
				}
			})
			if unrun {
				<-fctx.Done()
			}
			var wg sync.WaitGroup
			errs := make(chan error, 17)
			for i := 0; i < 16; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- v.Submit(bg(), func(*Session) error { return nil })
				}()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				fs := make([]func(*Session) error, 40)
				for i := range fs {
					fs[i] = func(*Session) error { return nil }
				}
				for _, err := range v.SubmitBatch(bg(), fs) {
					if err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
			// All 17 announced (each then finds the queue full and parks):
			// the first release is the only thing that can wake one.
			done := step(t, "17 submitters announce their wait for room")
			for v.room.waiters.Load() < 17 {
				time.Sleep(100 * time.Microsecond)
			}
			done()
			release()
			done = step(t, "16 Submits and a SubmitBatch of 40 through a queue of depth 2")
			wg.Wait()
			fill.Wait()
			done()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	if n := roomFallbacks.Load() - fb0; n != 0 {
		t.Fatalf("%d waits for room ended by the fallback timer, not by a wake", n)
	}
}

// Close wakes the submitters waiting for room: each returns
// ErrSessionClosed at once, while the drain still waits for the op that
// holds the worker (the fallback timer is an hour here). Planted (Close
// not waking them), the watchdog fires.
func TestRoomWaitEndsAtClose(t *testing.T) {
	old := roomFallback.Swap(int64(time.Hour))
	t.Cleanup(func() { roomFallback.Store(old) })
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("room", WithQueueDepth(1))
	release := blockWorker(t, v)
	filled := make(chan error, 1)
	if err := v.SubmitAsync(func(*Session) error { return nil }, func(err error) { filled <- err }); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	go func() { errs <- v.Submit(bg(), func(*Session) error { return nil }) }()
	go func() {
		errs <- v.SubmitBatch(bg(), []func(*Session) error{func(*Session) error { return nil }})[0]
	}()
	done := step(t, "a Submit and a SubmitBatch announce their wait for room")
	for v.room.waiters.Load() < 2 {
		time.Sleep(100 * time.Microsecond)
	}
	done()
	closed := make(chan error, 1)
	go func() { closed <- v.Close() }()
	done = step(t, "the waiters return once Close began, the drain still waiting")
	for i := 0; i < 2; i++ {
		if err := <-errs; !errors.Is(err, ErrSessionClosed) {
			t.Fatalf("a waiter for room returned %v, want ErrSessionClosed", err)
		}
	}
	done()
	release()
	done = step(t, "Close drains the queued op")
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if err := <-filled; err != nil {
		t.Fatalf("the queued op: %v", err)
	}
	done()
}
