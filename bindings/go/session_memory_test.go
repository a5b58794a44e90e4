// Promises: 4, 5

package accel

// Session memory as VMs on one node use it: Alloc's bytes, Free's
// misuse, Reserve/Unreserve, and MemoryUsed around Close.

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// One VM frees a block holding a key; another VM's next Alloc of the same
// size must not see any of it (nor may the first VM's own next Alloc).
func TestAllocReturnsZeroedMemory(t *testing.T) {
	rt := newTestRuntime(t, 2)
	kms, _ := rt.NewVMSession("kms")
	dex, _ := rt.NewVMSession("dex")
	defer kms.Close()
	defer dex.Close()
	for round := 0; round < 8; round++ {
		var got []byte
		err := kms.Submit(bg(), func(s *Session) error {
			b, err := s.Alloc(256)
			if err != nil {
				return err
			}
			for i := range b {
				b[i] = 0xA5
			}
			s.Free(b)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []*VMSession{dex, kms} {
			err = v.Submit(bg(), func(s *Session) error {
				b, err := s.Alloc(256)
				if err != nil {
					return err
				}
				got = append(got[:0], b...)
				s.Free(b)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, c := range got {
				if c != 0 {
					n++
				}
			}
			if n != 0 {
				t.Fatalf("round %d: %s's Alloc(256) holds %d non-zero bytes (kms's key was 0xA5 x 256)", round, v.ID(), n)
			}
		}
	}
}

// allocIn returns a block of n bytes allocated on v's *Session.
func allocIn(t *testing.T, v *VMSession, n int) []byte {
	t.Helper()
	b, err := v.Session().Alloc(n)
	if err != nil {
		t.Fatalf("%s: Alloc(%d): %v", v.ID(), n, err)
	}
	return b
}

// freeMisuse calls s.Free(b) and returns the panic's message ("" if none).
func freeMisuse(s *Session, b []byte) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	s.Free(b)
	return ""
}

// Freeing another session's block panics in the caller and changes no
// session's accounting; both owners' later Frees refund in full.
func TestFreeOfAnotherSessionsBlock(t *testing.T) {
	rt := newTestRuntime(t, 1)
	a, _ := rt.NewVMSession("a", WithMemoryBudget(1024))
	b, _ := rt.NewVMSession("b", WithMemoryBudget(1024))
	defer a.Close()
	defer b.Close()
	ba := allocIn(t, a, 256)
	bb := allocIn(t, b, 512)
	msg := freeMisuse(a.Session(), bb)
	if !strings.Contains(msg, "accel: Session.Free") {
		t.Errorf("a.Free(b's block): panic %q, want one naming Session.Free", msg)
	}
	if ua, ub := a.MemoryUsed(), b.MemoryUsed(); ua != 256 || ub != 512 {
		t.Errorf("after a.Free(b's block): MemoryUsed a %d b %d, want 256 512", ua, ub)
	}
	a.Session().Free(ba)
	b.Session().Free(bb)
	if ua, ub := a.MemoryUsed(), b.MemoryUsed(); ua != 0 || ub != 0 {
		t.Errorf("after each owner freed its block: MemoryUsed a %d b %d, want 0 0", ua, ub)
	}
	// Inside an op, the panic is the op's *PanicError; the session goes on.
	bb = allocIn(t, b, 64)
	err := a.Submit(bg(), func(s *Session) error { s.Free(bb); return nil })
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Errorf("Free of b's block inside a's op: %v, want a *PanicError", err)
	}
	b.Session().Free(bb)
	if ua, ub := a.MemoryUsed(), b.MemoryUsed(); ua != 0 || ub != 0 {
		t.Errorf("at the end: MemoryUsed a %d b %d, want 0 0", ua, ub)
	}
}

// A double Free and a Free of a reslice that does not start where Alloc's
// block did panic in the caller, with the block and the accounting as
// they were (these aborted the process in glibc: the env switch runs
// them in a child first, so that an abort fails this test, not the run).
func TestFreeMisuseDoesNotKillTheProcess(t *testing.T) {
	if os.Getenv("ACCEL_TEST_FREE_MISUSE_CHILD") == "" {
		out, code := runChild(t, "^TestFreeMisuseDoesNotKillTheProcess$", "ACCEL_TEST_FREE_MISUSE_CHILD=1")
		if code != 0 || !strings.Contains(out, "FREE-MISUSE-SURVIVED") {
			t.Fatalf("child run (exit %d):\n%s", code, out)
		}
		return
	}
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("v", WithMemoryBudget(4096))
	defer v.Close()
	s := v.Session()

	b := allocIn(t, v, 256)
	s.Free(b)
	if msg := freeMisuse(s, b); !strings.Contains(msg, "accel: Session.Free") {
		t.Errorf("double Free: panic %q", msg)
	}
	if u := v.MemoryUsed(); u != 0 {
		t.Errorf("after double Free: MemoryUsed %d, want 0", u)
	}

	b = allocIn(t, v, 256)
	if msg := freeMisuse(s, b[8:]); !strings.Contains(msg, "accel: Session.Free") {
		t.Errorf("Free(b[8:]): panic %q", msg)
	}
	if u := v.MemoryUsed(); u != 256 {
		t.Errorf("after Free(b[8:]): MemoryUsed %d, want 256 (the block still held)", u)
	}
	b[255] = 1 // still ours
	// A reslice that starts where Alloc's did frees the block.
	s.Free(b[:0])
	if u := v.MemoryUsed(); u != 0 {
		t.Errorf("after Free(b[:0]): MemoryUsed %d, want 0", u)
	}
	// A slice that Alloc never returned (Go memory).
	if msg := freeMisuse(s, make([]byte, 16)); !strings.Contains(msg, "accel: Session.Free") {
		t.Errorf("Free of Go memory: panic %q", msg)
	}
	fmt.Println("FREE-MISUSE-SURVIVED")
}

// Unreserve trusts its argument no more than Free: it refunds only what
// Reserve charged, never what an Alloc's block holds (that refund is
// Free's, and would then fail).
func TestReleaseRefundsOnlyReserved(t *testing.T) {
	rt := newTestRuntime(t, 1)
	v, _ := rt.NewVMSession("v", WithMemoryBudget(1024))
	defer v.Close()
	s := v.Session()
	b := allocIn(t, v, 256)
	if err := s.Unreserve(256); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Unreserve(256) with nothing reserved = %v, want ErrInvalidArgument", err)
	}
	if err := s.Reserve(100); err != nil {
		t.Fatal(err)
	}
	if err := s.Unreserve(101); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Unreserve(101) after Reserve(100) = %v, want ErrInvalidArgument", err)
	}
	if u := v.MemoryUsed(); u != 356 {
		t.Errorf("MemoryUsed %d, want 356", u)
	}
	if err := s.Unreserve(100); err != nil {
		t.Errorf("Unreserve(100) = %v", err)
	}
	s.Free(b)
	if u := v.MemoryUsed(); u != 0 {
		t.Errorf("MemoryUsed at the end %d, want 0", u)
	}
}

// MemoryUsed after Close reads what the session held when it closed (a
// node's leak check reads it), by VMSession.Close and by Runtime.Close;
// a Free after Close refunds it.
func TestMemoryUsedAfterCloseKeepsWhatWasHeld(t *testing.T) {
	for _, how := range []string{"VMSession.Close", "Runtime.Close"} {
		t.Run(how, func(t *testing.T) {
			rt, err := NewRuntime(RuntimeConfig{Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer waitFor(t, "Runtime.Close at the subtest's end", func() { rt.Close() })
			v, _ := rt.NewVMSession("leaky")
			var kept []byte
			err = v.Submit(bg(), func(s *Session) error {
				var err error
				kept, err = s.Alloc(300)
				if err != nil {
					return err
				}
				return s.Reserve(200)
			})
			if err != nil {
				t.Fatal(err)
			}
			done := step(t, how)
			if how == "VMSession.Close" {
				err = v.Close()
			} else {
				err = rt.Close()
			}
			done()
			if err != nil {
				t.Fatal(err)
			}
			if u, su, fu := v.MemoryUsed(), v.Session().MemoryUsed(), v.FullStats().MemoryUsed; u != 500 || su != 500 || fu != 500 {
				t.Errorf("after %s: MemoryUsed %d, Session.MemoryUsed %d, FullStats.MemoryUsed %d, want 500 (held at Close)", how, u, su, fu)
			}
			v.Session().Free(kept)
			if u := v.MemoryUsed(); u != 200 {
				t.Errorf("after %s and a Free of 300: MemoryUsed %d, want 200", how, u)
			}
		})
	}
}

// A VM's double Free after its next Alloc got the same address must not
// free that live block: kms frees b1, allocates b2, frees b1 again by
// mistake. That Free panics and changes nothing; dex's next Alloc is not
// kms's live block, and kms's b2 stays charged until kms frees it.
func TestDoubleFreeAfterReuseKeepsTheLiveBlock(t *testing.T) {
	rt := newTestRuntime(t, 1)
	kms, _ := rt.NewVMSession("kms")
	dex, _ := rt.NewVMSession("dex")
	defer kms.Close()
	defer dex.Close()
	sk, sd := kms.Session(), dex.Session()
	b1 := allocIn(t, kms, 64)
	sk.Free(b1)
	b2 := allocIn(t, kms, 64) // kms's live block
	msg := freeMisuse(sk, b1) // kms's bug: b1 freed twice
	if !strings.Contains(msg, "accel: Session.Free") {
		t.Errorf("second Free of a freed block (b1 and the live b2 at the same address: %v): panic %q, want one naming Session.Free",
			&b1[0] == &b2[0], msg)
	}
	if u := sk.MemoryUsed(); u != 64 {
		t.Errorf("kms after the second Free of b1: MemoryUsed %d, want 64 (b2 live)", u)
	}
	c := allocIn(t, dex, 64)
	copy(b2, "kms secret key material")
	if &c[0] == &b2[0] || string(c[:3]) == "kms" {
		t.Fatalf("dex's Alloc'd block is kms's live block: dex reads %q", c[:23])
	}
	sd.Free(c)
	sk.Free(b2)
	if uk, ud := sk.MemoryUsed(), sd.MemoryUsed(); uk != 0 || ud != 0 {
		t.Errorf("after every Free: MemoryUsed kms %d dex %d, want 0 0", uk, ud)
	}
}
