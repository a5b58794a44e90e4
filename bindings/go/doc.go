// Package accel runs the ops of many tenants (VMs, chains) on a shared pool
// of workers, each tenant in its own ordered, budgeted, prioritised queue:
// the Go face of the C library accel, and a drop-in for the old
// VMSession type (same names, same errors, same promises).
//
// # Sessions
//
// A VMSession is one tenant. Its ops (Submit, SubmitAsync, SubmitBatch,
// SubmitAsyncBatch) start in submission order and never overlap; busy
// sessions share the workers in proportion to their Priority; what the
// ops allocate through the *Session they get is charged to the session's
// memory budget; closing one session never affects another. Sessions
// belong to a Runtime: NewVMSession uses the process default
// (DefaultRuntime); NewRuntime makes others.
//
// # Batching
//
// A Batcher (NewBatcher) gives many goroutines' items of one VMSession to
// one call of a batch function on a worker goroutine, each item with its
// own ctx and its own error back: the session's queued items, up to the
// Batcher's max, with no added wait (batches grow as items queue up).
//
// # Which goroutine runs what
//
// Every completion callback of SubmitAsync and SubmitAsyncBatch, and
// every f of theirs and of SubmitBatch, runs on one of the runtime's
// host workers: goroutines that run ops through the C runtime
// (Runtime.Workers of them, and extra workers while ops
// block: below). The f of a Submit runs
// there too, or on the goroutine that called Submit: only when the
// scheduler hands the idle session straight over (the direct hand-off,
// which saves two goroutine switches; with any ctx: an op that is queued
// instead keeps ctx's deadline and cancel). A goroutine that calls Submit never runs another session's
// op, so a lock it holds around Submit is held only against its own f,
// and its ctx is answered whatever the other sessions' ops do. Keep
// completion callbacks short: they hold the worker.
//
// # Context
//
// A ctx given to Submit or SubmitBatch is kept until f starts: its
// deadline is the op's deadline in the scheduler (one past what the C
// clock's int64 of ns holds, as context.WithTimeout(ctx, math.MaxInt64)
// or a year-9999 deadline, is none), and when ctx is done
// the op is canceled. f never starts after its ctx is done, and the call
// returns ctx.Err() at once, also while it waits for queue room. A running
// f is not interrupted (it gets no ctx; pass one in its closure if it
// should stop early).
//
// # Errors, panics and Goexit
//
// A panic in f comes back from Submit as a *PanicError (errors.Is sees
// through it to an error panic value); the op counts as failed and the
// session goes on. runtime.Goexit in f (t.Fatal and t.FailNow call it)
// fails the op and ends the goroutine that called Submit, as it would if
// f had run there; the session and its worker go on. A panic in a
// completion callback is not recovered: it ends the program, as an
// unrecovered panic in any goroutine does.
//
// # Ops that block
//
// An f (or completion callback) may block, on a channel, a mutex,
// time.Sleep, I/O, a nested Submit to another session, Sync or Close of
// another session, without stalling any other session: the worker
// goroutine it blocks hands its place to another one, started for it if
// none is free, so another session's op waits for a P and its fair share,
// never for a worker held by a blocked op. Nested Submits across
// sessions work to any depth, also with Workers: 1. A cycle of them (a's
// f waits on b while b's f waits on a) waits, as with the old type's
// per-session lock, until a ctx of one of its Submits ends: that Submit
// then returns ctx.Err() at once and its op never runs; meanwhile the
// other sessions go on. Give a nested Submit that may close a cycle a ctx
// with a deadline. The package's own
// waits count at once, and so does a wait f wraps in s.Blocking (a
// storage read, a remote call); other waits 1-2 ms in, while other work
// waits: the C runtime's monitor, the one that watches its own worker
// threads, asleep while nothing waits, reads the CPU clock and run state
// of the thread a host worker runs f on (it is locked to it during
// its visit): a CPU-bound op, however long, gets no extra worker; one
// whose goroutine waits a whole millisecond for a P looks blocked, and
// gets one only if the process used under GOMAXPROCS - 1/2 CPUs then. Bounds: at most the C runtime's max_extra_workers extra worker
// goroutines (4 x its workers, at least 64); an extra one leaves once no
// op needs it (surplus after its visit, or idle 50 ms). Per-session
// order, priorities and exactly-once are unchanged.
//
// Host workers share the Ps with the rest of the program: one that
// has run ops for 2 ms without blocking gives its P up
// (runtime.Gosched) before its next session: the program's other
// goroutines get the P between sessions about every 2 ms, not only
// when Go preempts a worker, 10 ms into an op. An op itself is never
// interrupted by the package.
//
// # Close
//
// Close stops the session taking ops, waits until the ops it accepted
// have run and frees its memory; from inside one of its own ops it does
// not wait. Runtime.Close closes every session and stops the workers; a
// Close racing another waits for it. Every method stays safe after
// either: ErrSessionClosed or ErrRuntimeClosed where it needs the
// session or runtime (and change nothing: SetPriority), what was fixed at
// open or last set (ID, Priority, MemoryBudget, Backend), the counters as
// they were, and MemoryUsed what the session held when it closed (less
// what Free releases after that).
//
// # Memory
//
// Session.Alloc returns zeroed Go memory charged to the session's budget.
// Session.Free releases only a block of its own session's Alloc not yet
// freed: a double Free (also after a later Alloc got the same address),
// another session's block or a slice starting inside a block panics in
// the caller, with nothing changed (inside an op, the op fails with a
// *PanicError). Unreserve refunds only what Reserve charged.
//
// # Differences from the old type
//
//   - f runs on a host worker, not on the caller's: a goroutine-local
//     assumption in f (runtime.LockOSThread, a goroutine id) does not
//     carry over from the caller. runtime.Goexit in f still ends the
//     caller's goroutine. f's goroutine is locked to its thread, except
//     while it waits in a Submit or SubmitBatch for its ops and inside
//     s.Blocking (the wait leaves the thread, docs/go.md): an f that keeps
//     per-thread state across such a call locks the thread itself
//     (runtime.LockOSThread).
//     f must not call runtime.UnlockOSThread more often than it called
//     runtime.LockOSThread (with the old type an extra unlock did
//     nothing): it would undo the host worker's own lock, and the
//     goroutine could move off the thread that holds the visit's state,
//     which other goroutines then see (ErrDeadlock where there is none).
//   - DefaultRuntime is never closed: its Close returns
//     ErrInvalidArgument.
//   - ctx is kept until f starts, not only while waiting for the session's
//     lock.
//   - Sync from inside one of the session's own ops returns nil at once.
//     Session.Sync (the old device sync) never waits for a running op:
//     while one runs, f and goroutines f waits for may call it, and it
//     returns nil at once; VMSession.Sync waits for every op accepted
//     before it, the running one included.
//   - The queue is bounded (WithQueueDepth): a Submit on a full queue
//     waits for room, SubmitAsync returns ErrQueueFull.
//   - CUDA comes from the library's loadable module (libaccel-backend-cuda.so,
//     from $ACCEL_BACKEND_DIR or beside the program): where it or a device
//     is missing, a session that asks for CUDA is unavailable (IsAvailable
//     false, Session nil, Submit ErrNoBackends), as the old type's was on
//     a host without the device, and BackendAuto runs on the CPU.
//
// The package needs cgo on Linux and liburcu (apt install liburcu-dev): it
// compiles the C runtime from the repository's sources and calls only its
// public API (include/accel/accel.h and host.h). The names it exports
// beyond the old type's (Runtime, the asynchronous and batch submits,
// FullStats, Session's memory calls and Blocking, the errors the old type
// never returned) are listed with the reason for each in docs/go.md
// ("The surface").
package accel
