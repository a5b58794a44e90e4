package accel

// #include "shim.h"
import "C"

import "time"

// SessionStats is the full set of a session's counters.
type SessionStats struct {
	ID       string
	Priority Priority
	Closed   bool

	// Go ops, counted by this package.
	Dispatched uint64 // f started
	Completed  uint64 // f returned nil
	Failed     uint64 // f returned an error or panicked
	Canceled   uint64 // ctx ended, its deadline passed or the session closed before f started

	Submitted uint64 // accepted into the queue (canceled ops too), or refused with ErrNoBackends (counted failed)
	// Once drained, Completed + Failed + Canceled == Submitted: an op
	// whose ctx deadline (passed to the C runtime) expired before it
	// started is counted Canceled here, as one whose ctx was canceled;
	// the C counters (accel_session_stats) keep the two apart.

	// From the C runtime.
	Queued       uint64        // the queue's room in use: ops (or groups: SubmitAsyncBatch, combined SubmitAsyncs) not yet started
	MemoryUsed   int64         // bytes charged now
	MemoryBudget int64         // 0 = unlimited
	Service      time.Duration // total time its ops ran
	Visits       uint64        // times a worker picked the session
	// Submit -> start wait over a sample of the ops (every 32nd); bucket
	// upper edges, within +25%. 0 until the first sample.
	WaitP50, WaitP99, WaitP999, WaitMax time.Duration
	WaitSamples                         uint64
}

// FullStats returns a snapshot of every counter (each read atomically; not
// one atomic snapshot while ops run). Once the session is closed, the C
// runtime's fields are zero, but for MemoryBudget, fixed at open, and
// MemoryUsed, as VMSession.MemoryUsed reads it.
func (v *VMSession) FullStats() SessionStats {
	st := SessionStats{
		ID:           v.id,
		Priority:     v.Priority(),
		Closed:       v.closed.Load(),
		Dispatched:   v.dispatched.Load(),
		Completed:    v.completed.Load(),
		Failed:       v.failed.Load(),
		Canceled:     v.canceled.Load(),
		Submitted:    v.submitted.Load(),
		MemoryBudget: v.budget,
	}
	c := v.sess.enter()
	if c == nil {
		// Closed (or no backend): the Go counters only, and what the
		// session held at Close.
		st.MemoryUsed = v.held.Load()
		return st
	}
	var cs C.accel_session_stats
	rc := C.accel_session_get_stats(c, &cs)
	v.h.exit()
	if rc != C.ACCEL_OK {
		return st
	}
	st.Queued = uint64(cs.queued)
	st.MemoryUsed = int64(cs.memory_used)
	st.Service = time.Duration(cs.service_ns)
	st.Visits = uint64(cs.visits)
	st.WaitP50 = time.Duration(cs.wait_p50_ns)
	st.WaitP99 = time.Duration(cs.wait_p99_ns)
	st.WaitP999 = time.Duration(cs.wait_p999_ns)
	st.WaitMax = time.Duration(cs.wait_max_ns)
	st.WaitSamples = uint64(cs.wait_samples)
	return st
}
