// Promises: none

package accel_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"accel"
)

// One session per VM: its ops run in order, on the runtime's workers.
func ExampleVMSession_Submit() {
	vm, err := accel.NewVMSession("evm", accel.WithPriority(accel.PriorityHigh))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer vm.Close()
	var out []int
	for i := 0; i < 3; i++ {
		i := i
		if err := vm.Submit(context.Background(), func(*accel.Session) error {
			out = append(out, i) // ops of a session never overlap
			return nil
		}); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println(out)
	// Output: [0 1 2]
}

// A ctx's deadline is the op's: an op that cannot start in time never
// runs, and Submit returns at the deadline.
func ExampleVMSession_Submit_deadline() {
	vm, _ := accel.NewVMSession("slow")
	defer vm.Close()
	release := make(chan struct{})
	vm.SubmitAsync(func(*accel.Session) error { <-release; return nil }, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	ran := false
	err := vm.Submit(ctx, func(*accel.Session) error { ran = true; return nil })
	close(release)
	vm.Sync()
	fmt.Println(errors.Is(err, context.DeadlineExceeded), ran)
	// Output: true false
}

// SubmitAsync returns at once; the completion runs on a worker.
func ExampleVMSession_SubmitAsync() {
	vm, _ := accel.NewVMSession("async")
	defer vm.Close()
	done := make(chan error, 1)
	vm.SubmitAsync(func(*accel.Session) error { return nil }, func(err error) { done <- err })
	fmt.Println(<-done)
	// Output: <nil>
}

// A VM picks its CPU path when the device it asks for is not there.
func ExampleVMSession_IsAvailable() {
	vm, _ := accel.NewVMSession("gpu-vm", accel.WithVMBackend(accel.BackendMetal))
	defer vm.Close()
	fmt.Println(vm.IsAvailable(), vm.Submit(context.Background(), func(*accel.Session) error { return nil }))
	// Output: false accel: no backends available
}

// Ops charge what they allocate to the session's budget.
func ExampleSession_Alloc() {
	vm, _ := accel.NewVMSession("budgeted", accel.WithMemoryBudget(1<<10))
	defer vm.Close()
	err := vm.Submit(context.Background(), func(s *accel.Session) error {
		buf, err := s.Alloc(512)
		if err != nil {
			return err
		}
		defer s.Free(buf)
		_, err = s.Alloc(1024)
		return err
	})
	fmt.Println(errors.Is(err, accel.ErrSessionBudgetExceeded))
	// Output: true
}
