// Command node is a node hosting 17 VMs, written against the old
// accel.VMSession API only (NewVMSession, its options, Submit, Stats,
// Sync, Close): switching it to this package took nothing but its import
// path. Each VM opens a session with its priority and budget, and several
// goroutines per VM submit work to it; a summary is printed at the end.
//
//	go run ./examples/node [-ops 200] [-producers 4]
package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"accel"
)

type vmSpec struct {
	id    string
	opts  []accel.VMSessionOption
	work  int // sha256 rounds per op: the op's cost
	fails bool
}

func vms() []vmSpec {
	mb := int64(1 << 20)
	return []vmSpec{
		{"consensus", []accel.VMSessionOption{accel.WithPriority(accel.PriorityCritical), accel.WithQueueDepth(4096)}, 20, false},
		{"platform", []accel.VMSessionOption{accel.WithPriority(accel.PriorityHigh)}, 50, false},
		{"evm", []accel.VMSessionOption{accel.WithPriority(accel.PriorityHigh), accel.WithMemoryBudget(512 * mb)}, 200, false},
		{"exchange", []accel.VMSessionOption{accel.WithPriority(accel.PriorityHigh)}, 100, false},
		{"dex", []accel.VMSessionOption{accel.WithPriority(accel.PriorityHigh), accel.WithMemoryBudget(256 * mb)}, 100, false},
		{"ai-inference", []accel.VMSessionOption{accel.WithPriority(accel.PriorityNormal), accel.WithMemoryBudget(1024 * mb), accel.WithVMBackend(accel.BackendAuto)}, 400, false},
		{"ai-training", []accel.VMSessionOption{accel.WithPriority(accel.PriorityNormal), accel.WithMemoryBudget(2048 * mb), accel.WithVMBackend(accel.BackendAuto)}, 800, false},
		{"ai-agents", []accel.VMSessionOption{accel.WithPriority(accel.PriorityNormal), accel.WithSharedDevice()}, 300, false},
		{"bridge", []accel.VMSessionOption{accel.WithPriority(accel.PriorityNormal)}, 150, false},
		{"oracle", []accel.VMSessionOption{accel.WithPriority(accel.PriorityNormal), accel.WithSharedDevice()}, 60, false},
		{"zk", []accel.VMSessionOption{accel.WithPriority(accel.PriorityNormal), accel.WithMemoryBudget(256 * mb)}, 600, false},
		{"threshold", []accel.VMSessionOption{accel.WithPriority(accel.PriorityNormal)}, 120, false},
		{"fhe", []accel.VMSessionOption{accel.WithPriority(accel.PriorityLow), accel.WithMemoryBudget(128 * mb)}, 1000, false},
		{"quantum", []accel.VMSessionOption{accel.WithPriority(accel.PriorityLow)}, 300, false},
		{"identity", []accel.VMSessionOption{accel.WithPriority(accel.PriorityLow), accel.WithQueueDepth(256)}, 80, true},
		{"graph", []accel.VMSessionOption{accel.WithPriority(accel.PriorityLow), accel.WithSharedDevice()}, 200, false},
		{"archive", []accel.VMSessionOption{accel.WithPriority(accel.PriorityLow), accel.WithQueueDepth(128)}, 100, false},
	}
}

var errInvalidTx = errors.New("invalid transaction")

// run opens the VMs, floods them from producers goroutines each, closes
// them and prints a summary. It returns an error if any VM's counts are off.
func run(ops, producers int) error {
	specs := vms()
	sessions := make([]*accel.VMSession, len(specs))
	for i, s := range specs {
		vm, err := accel.NewVMSession(s.id, s.opts...)
		if err != nil {
			return fmt.Errorf("open %s: %w", s.id, err)
		}
		sessions[i] = vm
	}
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	stale := make(map[string]int)
	for i, vm := range sessions {
		spec := specs[i]
		for p := 0; p < producers; p++ {
			wg.Add(1)
			go func(vm *accel.VMSession, p int) {
				defer wg.Done()
				for k := 0; k < ops; k++ {
					ctx, cancel := context.Background(), context.CancelFunc(func() {})
					if spec.id == "consensus" {
						// A vote not started within its round is stale.
						ctx, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
					}
					err := vm.Submit(ctx, func(*accel.Session) error {
						sum := sha256.Sum256([]byte(spec.id))
						for r := 0; r < spec.work; r++ {
							sum = sha256.Sum256(sum[:])
						}
						if spec.fails && (k+p)%10 == 0 {
							return errInvalidTx
						}
						return nil
					})
					cancel()
					if errors.Is(err, context.DeadlineExceeded) {
						mu.Lock()
						stale[spec.id]++
						mu.Unlock()
					} else if err != nil && !errors.Is(err, errInvalidTx) {
						fmt.Fprintf(os.Stderr, "%s: %v\n", spec.id, err)
					}
				}
			}(vm, p)
		}
	}
	wg.Wait()
	elapsed := time.Since(start)

	fmt.Printf("%-13s %-4s %10s %10s %7s %6s\n", "vm", "prio", "dispatched", "completed", "failed", "stale")
	var total uint64
	var bad error
	for _, vm := range sessions {
		if err := vm.Sync(); err != nil {
			return err
		}
		d, c, f := vm.Stats()
		total += d
		fmt.Printf("%-13s %-4d %10d %10d %7d %6d\n", vm.ID(), vm.Priority(), d, c, f, stale[vm.ID()])
		if d != c+f || d+uint64(stale[vm.ID()]) != uint64(ops*producers) {
			bad = fmt.Errorf("%s: counts do not add up", vm.ID())
		}
		if err := vm.Close(); err != nil {
			return err
		}
	}
	fmt.Printf("%d VMs, %d ops in %v (%.0f ops/s)\n", len(sessions), total,
		elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds())
	return bad
}

func main() {
	ops := flag.Int("ops", 200, "ops per producer goroutine")
	producers := flag.Int("producers", 4, "producer goroutines per VM")
	flag.Parse()
	if err := run(*ops, *producers); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
