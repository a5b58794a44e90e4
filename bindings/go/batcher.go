//go:build cgo && linux

package accel

import (
	"context"
	"fmt"
	"time"
)

// Batcher gives many goroutines' items of one VMSession to one call of a
// batch function: a signature batch verification that shares its final
// exponentiation, one device launch for many items. Each Submit hands in
// one item with its own ctx and gets that item's own error back.
//
// Forming a batch: items are the session's ops, in its FIFO order with
// its other ops. A runtime worker goroutine that visits the session takes
// what is queued at that moment, up to the Batcher's max (WithMaxBatch),
// and calls fn once with those items: by default there is no added wait,
// so an idle session runs batches of one and batches grow only as items
// queue up (the runtime's C batch core forms them, docs/batching.md).
// WithMaxDelay holds the session back to fill a batch instead: a visit
// that finds fewer than the max queued takes none, and the session waits
// in no queue (no worker waits for it; other sessions run) until the max
// are queued, the delay has passed since that visit, or the earliest
// deadline of its queued items less a full batch's cost (WithBatchCost)
// has come, whichever is first. The hold is the session's: while it is
// held, its other ops (Submit, SubmitAsync, ...) wait too, and count
// toward the fill, as its items do. An item
// whose ctx ended before its batch formed never reaches fn and gets
// ctx.Err() (context.DeadlineExceeded past its deadline); the others of
// the batch run without it.
//
// fn runs as an op's f does: on one of the runtime's worker goroutines
// (never on a submitter's, never beside another op or batch of the
// session), with the session's *Session, its time charged to the
// session's fair share, once per batch. It gets the items in FIFO order
// (so each submitter's items in the order it submitted them) and errs,
// zeroed, one per item: it writes each item's error there. items and
// errs are fn's for the call only. A panic in fn fails every item of
// that batch with the same *PanicError (the session and the worker go
// on); runtime.Goexit in fn (t.Fatal) fails every item of the batch:
// each Submit of one of them calls runtime.Goexit on its own goroutine,
// as Submit does for f, and SubmitAsync's done gets ErrGoexit. From
// inside fn, as from inside f, a Submit (of the Batcher or the session)
// to the same session returns ErrDeadlock; Submits to other sessions,
// and to their Batchers, work and count the worker blocked meanwhile.
//
// A VMSession has at most one Batcher, for as long as it is open. Its
// other ops (Submit, SubmitAsync, ...) still run one by one, each in its
// place in the session's order between batches (held with its items
// under WithMaxDelay; the session's C batch
// statistics count them in the batch they were handed out with). Close
// the VMSession to stop: Close runs the items accepted before it (in
// batches) before it returns, and Submit after it returns
// ErrSessionClosed. A Batcher is safe for concurrent use; one not made
// by NewBatcher (a nil or zero Batcher) answers ErrInvalidArgument.
type Batcher[T any] struct {
	c batchCore
}

// maxBatch is the most items one call of a batch function takes (the C
// runtime's ACCEL_BATCH_MAX); defaultMaxBatch the max without
// WithMaxBatch.
const (
	maxBatch        = 256
	defaultMaxBatch = 64
)

// BatchOption configures NewBatcher.
type BatchOption func(*batchConfig)

type batchConfig struct {
	max                   int
	delay, fixed, perItem time.Duration
}

// WithMaxBatch sets the most items one call of fn takes: 1..256
// (NewBatcher refuses others with ErrInvalidArgument); 64 without it.
func WithMaxBatch(n int) BatchOption {
	return func(c *batchConfig) { c.max = n }
}

// maxDelay is the longest WithMaxDelay: the C runtime's
// ACCEL_BATCH_DELAY_MAX (batch.go checks that they agree).
const maxDelay = time.Second

// WithMaxDelay holds the session back up to d to fill a batch (see
// Batcher): 0 (the default) adds no wait; at most a second (NewBatcher
// refuses more, or a negative d, with ErrInvalidArgument).
func WithMaxDelay(d time.Duration) BatchOption {
	return func(c *batchConfig) { c.delay = d }
}

// WithBatchCost is fn's expected cost for a batch of n items, fixed + n x
// perItem, which a held session subtracts from its earliest deadline to
// release in time (WithMaxDelay; NewBatcher refuses it without a delay,
// or negative, with ErrInvalidArgument). An item whose deadline passes
// while held anyway (no free worker, a cost set too small) gets
// context.DeadlineExceeded and never reaches fn.
func WithBatchCost(fixed, perItem time.Duration) BatchOption {
	return func(c *batchConfig) { c.fixed, c.perItem = fixed, perItem }
}

// errBatcherTaken: NewBatcher on a VMSession that has a Batcher.
var errBatcherTaken = fmt.Errorf("%w: the VMSession has a Batcher already", ErrInvalidArgument)

// NewBatcher makes v's queued ops run in batches and returns the Batcher
// whose items go to fn (see Batcher). Errors, with v unchanged:
// ErrInvalidArgument for a nil v or fn, a max outside 1..256, or a v that
// has a Batcher already; ErrSessionClosed on a closed v; ErrNoBackends on
// an unavailable one (IsAvailable); a Status for a session whose backend
// does not batch (CUDA).
func NewBatcher[T any](v *VMSession, fn func(s *Session, items []T, errs []error), opts ...BatchOption) (*Batcher[T], error) {
	if v == nil || fn == nil {
		return nil, ErrInvalidArgument
	}
	cfg := batchConfig{max: defaultMaxBatch}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.max < 1 || cfg.max > maxBatch || cfg.delay < 0 || cfg.delay > maxDelay ||
		cfg.fixed < 0 || cfg.perItem < 0 || (cfg.delay == 0 && cfg.fixed+cfg.perItem != 0) {
		return nil, ErrInvalidArgument
	}
	b := &Batcher[T]{c: batchCore{v: v, max: cfg.max, delay: cfg.delay, fixed: cfg.fixed, perItem: cfg.perItem}}
	b.c.call = func(s *Session, run []*opRec, errs []error) {
		items := make([]T, len(run))
		for i, r := range run {
			items[i] = r.item.(T)
		}
		fn(s, items, errs)
	}
	if err := b.c.attach(); err != nil {
		return nil, err
	}
	return b, nil
}

// Submit queues item behind the session's ops submitted before it, waits
// for its batch, and returns the error fn wrote for it. ctx is the item's
// until its batch forms: its deadline goes with it to the scheduler, and
// when ctx ends before the batch forms, Submit returns ctx.Err() at once
// and the item never reaches fn (once its batch formed, Submit waits for
// fn). A full queue makes Submit wait for room, or for ctx. It returns
// ErrSessionClosed once the session is closed (also when its Close wins
// a race with this Submit), and ErrDeadlock from inside one of the
// session's own ops or its fn. If fn calls runtime.Goexit, Submit calls
// runtime.Goexit (see Batcher).
func (b *Batcher[T]) Submit(ctx context.Context, item T) error {
	if b == nil || b.c.v == nil {
		return ErrInvalidArgument // not made by NewBatcher
	}
	return b.c.submit(ctx, item)
}

// SubmitAsync queues item and returns at once; done(err) is called on the
// worker goroutine after item's batch, with the error fn wrote for it
// (done may be nil; keep it short: the batch's other items wait for it).
// It returns ErrQueueFull rather than wait when the queue is full, and
// ErrSessionClosed on a closed session; on any error item is not queued
// and done is not called.
func (b *Batcher[T]) SubmitAsync(item T, done func(error)) error {
	if b == nil || b.c.v == nil {
		return ErrInvalidArgument // not made by NewBatcher
	}
	return b.c.submitAsync(item, done)
}
