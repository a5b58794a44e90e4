// Promises: 3, 7
package accel

import (
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A session's share pays for the CPU its ops used, not for the time a
// host worker sat in their announced waits while another ran in its
// place (accel.h, "Shares"; host visits are charged as the C runtime's
// own): a Low session whose ops wait in s.Blocking keeps up beside two
// backlogged High sessions of 1 ms CPU-bound ops, on one worker.
//
// The measure is a count, not a time: the High ops completed between
// the starts of consecutive Low ops that each wait W = 5 ms. Charged
// the wall time of its waits (weight 1 against 10), the Low session is
// owed an op per 10 W of each High session's work: about 100 High ops
// per Low op. Not charged for them, it is picked as soon as its next op
// is queued, and the High ops run beside its wait on the worker added
// for it: about W / 1 ms = 5 per Low op. A loaded machine makes the High
// ops no longer (they spin on the wall clock) and only fewer of them run
// beside a wait; the bound, 25, sits well between. Planted (host visits
// charged whole), the median reads about 100.
func TestAnnouncedWaitNotChargedOnHostWorkers(t *testing.T) {
	rt := newTestRuntime(t, 1)
	var high [2]*VMSession
	for i := range high {
		high[i], _ = rt.NewVMSession([]string{"high-a", "high-b"}[i], WithPriority(PriorityHigh))
	}
	low, _ := rt.NewVMSession("low", WithPriority(PriorityLow))
	var highDone atomic.Int64
	var stop atomic.Bool
	var feed sync.WaitGroup
	spin := func() {
		for t0 := time.Now(); time.Since(t0) < time.Millisecond; {
		}
	}
	// Each High session is kept 8 ops deep: every op that completes
	// queues the next.
	var op func(v *VMSession) func(*Session) error
	op = func(v *VMSession) func(*Session) error {
		return func(*Session) error {
			spin()
			highDone.Add(1)
			return nil
		}
	}
	var resubmit func(v *VMSession)
	resubmit = func(v *VMSession) {
		feed.Add(1)
		err := v.SubmitAsync(op(v), func(error) {
			defer feed.Done()
			if !stop.Load() {
				resubmit(v)
			}
		})
		if err != nil {
			feed.Done()
		}
	}
	for _, v := range high {
		for k := 0; k < 8; k++ {
			resubmit(v)
		}
	}
	const lowOps = 14
	at := make([]int64, 0, lowOps)
	done := stepLong(t, "14 Low ops that each wait 5 ms beside two backlogged High sessions")
	for i := 0; i < lowOps; i++ {
		// On a host worker (a Submit may run its op on its own goroutine,
		// the direct hand-off, which holds no worker and announces
		// nothing).
		err := onHostWorker(low, func(s *Session) error {
			at = append(at, highDone.Load())
			s.Blocking(func() { time.Sleep(5 * time.Millisecond) })
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	done()
	stop.Store(true)
	done = step(t, "the High sessions' feeders stop")
	feed.Wait()
	done()
	// The first two gaps are not measured: the Low session's cost is
	// not known until its first visit ends.
	var gaps []int64
	for i := 3; i < len(at); i++ {
		gaps = append(gaps, at[i]-at[i-1])
	}
	sort.Slice(gaps, func(a, b int) bool { return gaps[a] < gaps[b] })
	med := gaps[len(gaps)/2]
	t.Logf("High ops per Low op: median %d (%v)", med, gaps)
	if med > 25 {
		t.Fatalf("median %d High ops per Low op that waits 5 ms announced, want about 5 (about 100: its waits charged to its share)", med)
	}
}
