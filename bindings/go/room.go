package accel

// Waiting for room in a session's queue, in Go: a Submit or SubmitBatch
// that finds the queue full parks its goroutine here, not in a C call.
// A goroutine asleep inside a cgo call keeps its P until Go's sysmon
// takes it back, which in a busy program is up to 10 ms later: under
// overload, submitters that waited for room in C left CPUs idle (the
// node example's overload scenario; CHANGELOG.md has the figures).
//
// Room is freed only when C releases positions of the queue: a visit
// takes its ops (each then runs in a host worker's runVisit), or C
// completes an op unrun (goAccelUnrun), or runs a device session's op
// itself (goAccelRun). Each of those tells the session's roomWait
// (freed), after the release. Close wakes them too: each waiter's next
// try finds the session closed and returns, waking the next.

/*
#include "shim.h"
*/
import "C"

import (
	"sync/atomic"
	"time"
)

// roomWait is a session's goroutines waiting for room in its queue.
type roomWait struct {
	// waiters: goroutines between their announcement and their return.
	// Seq-cst (Go's atomics): the Add before a waiter's retry and the
	// Load in freed after the releaser's C store of the queue's head are
	// the two halves of a store-load pair: either the retry sees the
	// room, or freed sees the waiter. The releaser's store and its Load
	// are ordered by the cgo transition between them (a return from C or
	// a callback into Go: an atomic CAS of the goroutine's status, a full
	// barrier on amd64; on arm64 a store-release is never passed by a
	// later load-acquire). roomFallback bounds a wait if that ever fails.
	waiters atomic.Int32
	// wake: a token for one waiter (cap 1, so a wake sent before the
	// waiter parks is kept).
	wake chan struct{}
}

// roomFallback: a waiter retries after this long (ns) without a wake.
// Every release wakes a waiter, so this only bounds a wake lost to a path
// that does not call freed; roomFallbacks counts them. The tests set it
// to an hour, so that such a path hangs and their watchdog names it.
var roomFallback atomic.Int64

func init() { roomFallback.Store(int64(10 * time.Millisecond)) }

// roomFallbacks counts waits for room ended by roomFallback, not by a
// wake (a statistic the tests read).
var roomFallbacks atomic.Uint64

func newRoomWait() roomWait { return roomWait{wake: make(chan struct{}, 1)} }

// freed: C released positions of the session's queue (or a waiter left
// with a token it may owe another): wake one waiter, if any. One load
// when none waits.
func (w *roomWait) freed() {
	if w.waiters.Load() != 0 {
		select {
		case w.wake <- struct{}{}:
		default: // a token is already waiting for a waiter
		}
	}
}

// wait calls try, a submit that does not wait, until it returns other
// than ACCEL_EAGAIN (the queue full), parking in Go between tries, and
// returns that. done (nil: never) ends the wait: ACCEL_ETIMEDOUT, true.
// Inside an op the wait counts the host worker blocked (compensate.go).
func (w *roomWait) wait(try func() int, done <-chan struct{}) (rc int, ended bool) {
	if rc = try(); rc != C.ACCEL_EAGAIN {
		return rc, false
	}
	m := blockBegin()
	defer m.blockEnd()
	var tm *time.Timer
	defer func() {
		if tm != nil {
			tm.Stop()
		}
	}()
	for {
		w.waiters.Add(1) // before the retry: the pair above
		rc = try()
		if rc != C.ACCEL_EAGAIN {
			w.waiters.Add(-1)
			// A release may have freed more than this one's room (a
			// visit takes several ops) and sent one token: pass it on.
			w.freed()
			return rc, false
		}
		if fb := time.Duration(roomFallback.Load()); tm == nil {
			tm = time.NewTimer(fb)
		} else {
			// go.mod's go 1.21: the timer's channel is buffered, so a
			// tick that fired while a wake won is drained first (else
			// the next park would end at once, counted a fallback).
			if !tm.Stop() {
				select {
				case <-tm.C:
				default:
				}
			}
			tm.Reset(fb)
		}
		select {
		case <-w.wake:
		case <-tm.C:
			roomFallbacks.Add(1)
		case <-done:
			w.waiters.Add(-1)
			return C.ACCEL_ETIMEDOUT, true
		}
		w.waiters.Add(-1)
	}
}
