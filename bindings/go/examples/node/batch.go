package main

// The batch scenarios: a batchable consensus chain beside the 17 VMs,
// through accel with a Batcher and through the old design with the
// batcher a node writes by hand today, on the same arrivals.
//
// The chain's op is one vote: a BLS12-381 signature to verify, modelled
// (the spin loop; no standard library has BLS12-381) as accel-nodesim's
// batch scenario models it (bench/nodesim/batch.c has the sources): one
// verify costs V, uniform 500-900 us; a batch of n votes verified as one
// random linear combination costs blsFixed x V (the final
// exponentiation, the blinding) + n x blsPerOp x V, so a batch of one
// costs V and 72 votes cost 33 V. A vote is credited with its V however
// it ran, so what a batch saves shows as more work per CPU-second.
//
//   accel       the chain's VMSession has a Batcher (NewBatcher, at most
//               blsMax items a call); at load 0.5 (batch-low) with no
//               added wait (a batch is what is queued when a host worker
//               visits the session), at 0.9 (batch) held back up to the
//               hand batcher's 10 ms to fill a batch, released by the
//               earliest vote deadline less a full batch's modelled cost
//               (WithMaxDelay, WithBatchCost); the other VMs as in every
//               scenario
//   old design  the other VMs on the old design (oldVM); the chain's votes
//               go to a goroutine of their own that gathers them for up to
//               10 ms or 72 votes, whichever comes first, and verifies each
//               batch itself: Nimbus's batch_validation.nim
//               (BatchAttAccumTime = 10 ms, BatchedCryptoSize = 72)

import (
	"context"
	"sync/atomic"
	"time"

	"accel"
)

const (
	blsFixed  = 0.55
	blsPerOp  = 0.45
	blsMax    = 72                    // the Batcher's max and the hand batcher's size
	blsWindow = 10 * time.Millisecond // the hand batcher's accumulation time
)

// blsChain is the batchable chain: Critical like the other consensus
// chains, Poisson arrivals, a 50 ms deadline like the ed25519 votes, 15%
// of the offered op work before the shares are renormalised (a node's
// signature checks are a large part of its CPU).
var blsChain = chain{"consensus-bls", critical, 500, 900, 0.15, 0, 50 * time.Millisecond, model, false}

// batchRuns and batchItems count the batch calls and the votes in them,
// both systems (runSystem reads each system's part).
var batchRuns, batchItems atomic.Int64

// runStart is the time base of the system being driven (drive sets it),
// for the begin and end a batch call stamps on its votes.
var runStart atomic.Pointer[time.Time]

// verifyBatch runs one batch of votes: blsFixed x their mean V plus
// blsPerOp x V each, stamping each vote's begin and end.
func verifyBatch(votes []*op) {
	base := *runStart.Load()
	t := time.Since(base)
	sum := 0.0
	for _, o := range votes {
		o.begin = t
		sum += o.work
	}
	spin(int((blsFixed*sum/float64(len(votes)) + blsPerOp*sum) * spinPerNs))
	t = time.Since(base)
	for _, o := range votes {
		o.end = t
	}
	batchRuns.Add(1)
	batchItems.Add(int64(len(votes)))
}

// itemSubmitter is a system's way in for the batchable chain's votes
// (drive calls it in place of Submit).
type itemSubmitter interface {
	SubmitItem(ctx context.Context, o *op) error
}

// accelBLS is the chain on accel: its VMSession's Batcher.
type accelBLS struct {
	*accel.VMSession
	b *accel.Batcher[*op]
}

// newAccelBLS gives vm its Batcher; hold: held back to fill batches.
func newAccelBLS(vm *accel.VMSession, hold bool) (*accelBLS, error) {
	opts := []accel.BatchOption{accel.WithMaxBatch(blsMax)}
	if hold {
		v := (blsChain.loUs + blsChain.hiUs) / 2 * float64(time.Microsecond) // a vote's mean V
		opts = append(opts, accel.WithMaxDelay(blsWindow),
			accel.WithBatchCost(time.Duration(blsFixed*v), time.Duration(blsPerOp*v)))
	}
	b, err := accel.NewBatcher(vm, func(_ *accel.Session, votes []*op, _ []error) {
		verifyBatch(votes)
	}, opts...)
	if err != nil {
		return nil, err
	}
	return &accelBLS{vm, b}, nil
}

func (a *accelBLS) SubmitItem(ctx context.Context, o *op) error { return a.b.Submit(ctx, o) }

// handBLS is the hand-written batcher: one goroutine gathers votes for up
// to blsWindow from the first, or until blsMax are waiting, then verifies
// them; a submitter waits for its vote's batch (its ctx ends only the
// wait to hand the vote over, as the old design's Submit honours ctx only
// while it waits for the VM's mutex).
type handBLS struct {
	in   chan handVote
	quit chan struct{}
	done chan struct{}
}

type handVote struct {
	o    *op
	done chan struct{}
}

func newHandBLS() *handBLS {
	h := &handBLS{in: make(chan handVote), quit: make(chan struct{}), done: make(chan struct{})}
	go h.loop()
	return h
}

func (h *handBLS) Submit(context.Context, func(*accel.Session) error) error {
	panic("node: the hand batcher takes votes only (SubmitItem)")
}

func (h *handBLS) SubmitItem(ctx context.Context, o *op) error {
	v := handVote{o, make(chan struct{})}
	select {
	case h.in <- v:
	case <-ctx.Done():
		return ctx.Err()
	}
	<-v.done
	return nil
}

func (h *handBLS) loop() {
	defer close(h.done)
	var batch []handVote
	for {
		select {
		case v := <-h.in:
			batch = append(batch[:0], v)
		case <-h.quit:
			return
		}
		window := time.NewTimer(blsWindow)
	gather:
		for len(batch) < blsMax {
			select {
			case v := <-h.in:
				batch = append(batch, v)
			case <-window.C:
				break gather
			}
		}
		window.Stop()
		votes := make([]*op, len(batch))
		for i, v := range batch {
			votes[i] = v.o
		}
		verifyBatch(votes)
		for _, v := range batch {
			close(v.done)
		}
	}
}

// stop ends the goroutine (after the run: no vote is in flight).
func (h *handBLS) stop() {
	close(h.quit)
	<-h.done
}
