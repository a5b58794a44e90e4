// Command node is the Go twin of accel-nodesim (bench/nodesim): one node
// process hosting 17 VMs with the priorities, op costs, cadences and
// deadlines of bench/chains/default.conf, driven open-loop at a load
// relative to the capacity it measures first (with a submitter goroutine
// per arrival running, as accel-nodesim measures it), through accel and
// through the old VMSession's design (a mutex per VM, f run on the
// caller's goroutine; re-implemented below as oldVM) on the same
// arrivals in the same process. It prints, side by side, the ops on time
// per priority class, the p99 latency, the work done and the work per
// CPU-second the process used; with -reps N, N interleaved pairs per
// scenario and a table of medians, ratios and targets
// (scripts/go-node-table.sh writes it to bench/results/go-node.txt).
//
// The ops do real work with Go's standard library: consensus votes verify
// ed25519 signatures (crypto/ed25519), EVM, DEX, KMS and bridge ops verify
// ECDSA P-256 signatures (crypto/ecdsa: the standard library has no
// secp256k1, which the C program uses), oracles hash 1 KiB blocks
// (crypto/sha256); proof and FHE work, which no standard library does, is
// a calibrated spin loop ("modelled"). Inputs are made before the run and
// one in 16 is corrupted, so every check must sometimes say "invalid"; a
// wrong answer fails the run.
//
//	go run ./examples/node [-scenario all|steady|overload|blocking|blocking-hint|batch-low|batch]
//	    [-reps 1] [-duration 4s] [-seed 42] [-load 0] [-detail] [-cpuprofile FILE]
//	    [-trace FILE]
//
// docs/go.md ("The node example's numbers") says what each number means.
package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"accel"
)

// What an op runs.
type body int

const (
	model    body = iota // calibrated spin loop of the op's assumed cost
	ed25519V             // ed25519.Verify
	ecdsaV               // ecdsa.VerifyASN1, P-256
	sha256H              // sha256.Sum256 of 1 KiB, compared with the expected digest
	nBodies
)

var bodyName = [nBodies]string{"modelled (spin loop)", "ed25519 verify", "ECDSA P-256 verify", "SHA-256 of 1 KiB"}

const (
	critical = iota
	high
	normal
	low
	nClasses
)

var className = [nClasses]string{"critical", "high", "normal", "low"}
var classPrio = [nClasses]accel.Priority{accel.PriorityCritical, accel.PriorityHigh, accel.PriorityNormal, accel.PriorityLow}

// chain is one VM: a row of bench/chains/default.conf. waits: in the
// blocking scenario its ops first wait 1-5 ms with little CPU (a storage
// read, a remote signer; sources in the chains file).
type chain struct {
	name       string
	class      int
	loUs, hiUs float64       // the op's assumed cost, uniform
	share      float64       // of the offered op work
	period     time.Duration // > 0: ops arrive in batches on this cadence
	deadline   time.Duration
	body       body
	waits      bool
}

var chains = []chain{
	{"consensus-votes", critical, 20, 50, 0.02, 0, 50 * time.Millisecond, ed25519V, false},
	{"consensus-certs", critical, 400, 600, 0.03, 0, 100 * time.Millisecond, model, false}, // BLS
	{"evm-c", high, 100, 300, 0.10, 0, 500 * time.Millisecond, ecdsaV, false},
	{"dex-orderbook", high, 50, 200, 0.12, 10 * time.Millisecond, 100 * time.Millisecond, ecdsaV, false},
	{"kms-threshold", high, 400, 600, 0.04, 0, 200 * time.Millisecond, ecdsaV, true},
	{"evm-subnet", high, 100, 300, 0.06, 0, 500 * time.Millisecond, ecdsaV, true},
	{"ai-fhe-infer", normal, 5000, 20000, 0.09, 0, 2 * time.Second, model, false},
	{"ai-zkml", normal, 2000, 5000, 0.07, 0, 2 * time.Second, model, false},
	{"identity-did", normal, 2000, 5000, 0.05, 0, time.Second, model, false},
	{"identity-fhe", normal, 5000, 20000, 0.07, 0, 2 * time.Second, model, false},
	{"zk-rollup", normal, 2000, 5000, 0.06, 0, 2 * time.Second, model, false},
	{"privacy-fhe", normal, 5000, 20000, 0.05, 0, 2 * time.Second, model, false},
	{"bridge-eth", low, 400, 600, 0.06, 0, 5 * time.Second, ecdsaV, true},
	{"bridge-btc", low, 20, 50, 0.05, 0, 5 * time.Second, ecdsaV, false},
	{"oracle-price", low, 20, 50, 0.05, 0, time.Second, sha256H, false},
	{"oracle-vrf", low, 2000, 5000, 0.04, 0, 2 * time.Second, model, false},
	{"oracle-feeds", low, 20, 50, 0.04, 0, time.Second, sha256H, false},
}

// ---------------------------------------------------------------- bodies

const nItems = 64 // inputs per body; item i is corrupted when i%16 == 15

type item struct {
	msg    []byte
	digest [32]byte
	sig    []byte
	edPub  ed25519.PublicKey
	ecPub  *ecdsa.PublicKey
	valid  bool // the answer the check must give
}

var (
	items     [nBodies][nItems]item
	unitNs    [nBodies]float64 // one call, measured at start-up
	spinPerNs float64          // spin-loop iterations per ns
	// sabotage flips one expected answer per body after the self-check:
	// the test that a wrong answer fails the run.
	sabotage       bool
	checked, wrong atomic.Uint64
	sink           atomic.Uint64
)

func prepare(seed uint64) error {
	rng := rand.New(rand.NewSource(int64(seed)))
	for b := ed25519V; b < nBodies; b++ {
		for i := range items[b] {
			it := &items[b][i]
			it.msg = make([]byte, 1024)
			for k := range it.msg {
				it.msg[k] = byte(rng.Uint32())
			}
			it.valid = i%16 != 15
			switch b {
			case ed25519V:
				var s [ed25519.SeedSize]byte
				for k := range s {
					s[k] = byte(rng.Uint32())
				}
				key := ed25519.NewKeyFromSeed(s[:])
				it.edPub = key.Public().(ed25519.PublicKey)
				it.sig = ed25519.Sign(key, it.msg[:64])
				if !it.valid {
					it.sig[5] ^= 1
				}
			case ecdsaV:
				// crypto/ecdsa draws its own randomness: the keys are made
				// before the run, not from the seed.
				key, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
				if err != nil {
					return err
				}
				it.ecPub = &key.PublicKey
				it.digest = sha256.Sum256(it.msg)
				if it.sig, err = ecdsa.SignASN1(crand.Reader, key, it.digest[:]); err != nil {
					return err
				}
				if !it.valid {
					it.digest[7] ^= 1 // the signed tx was altered
				}
			case sha256H:
				it.digest = sha256.Sum256(it.msg)
				if !it.valid {
					it.digest[3] ^= 0x80
				}
			}
			if !call(b, it) {
				return fmt.Errorf("%s: self-check of item %d failed", bodyName[b], i)
			}
		}
		best := math.Inf(1)
		for pass := 0; pass < 5; pass++ {
			t0 := time.Now()
			for i := range items[b] {
				call(b, &items[b][i])
			}
			best = math.Min(best, float64(time.Since(t0).Nanoseconds())/nItems)
		}
		unitNs[b] = best
		if sabotage {
			items[b][0].valid = !items[b][0].valid
		}
	}
	// The spin loop: the fastest of several timed runs.
	const n = 200000
	best := math.Inf(1)
	for t := 0; t < 10; t++ {
		t0 := time.Now()
		spin(n)
		best = math.Min(best, float64(time.Since(t0).Nanoseconds()))
	}
	spinPerNs = n / best
	return nil
}

// call runs one check and reports whether its answer was the expected one.
func call(b body, it *item) bool {
	switch b {
	case ed25519V:
		return ed25519.Verify(it.edPub, it.msg[:64], it.sig) == it.valid
	case ecdsaV:
		return ecdsa.VerifyASN1(it.ecPub, it.digest[:], it.sig) == it.valid
	case sha256H:
		return (sha256.Sum256(it.msg) == it.digest) == it.valid
	}
	return false
}

func spin(iters int) {
	x := uint64(iters) | 1
	for i := 0; i < iters; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	sink.Add(x & 1)
}

// ------------------------------------------------------------------ ops

type outcome int32

const (
	pending  outcome = iota
	done             // f ran
	expired          // its deadline passed before f started: a miss
	dropped          // admission: the VM had depth ops outstanding: a miss
	censored         // the run ended before f started, deadline not passed
)

type op struct {
	chain int
	at    time.Duration // scheduled arrival, from the start
	work  float64       // ns of op work credited when done
	calls int           // real body: checks in the batch; 0: modelled
	first int
	wait  time.Duration // blocking scenario: the wait before the body
	out   atomic.Int32
	call  time.Duration // when its submitter called Submit, from the start
	begin time.Duration // when f started, from the start
	end   time.Duration // when f returned, from the start
}

// winCPU is the process's CPU time during drive's arrivals, ns.
var winCPU atomic.Int64

// readySpan, readyIdle (-detail): the time during drive's arrivals in
// which at least GOMAXPROCS VMs whose ops do not wait had an op
// outstanding, and the CPU time the process left unused in it, ns.
var readySpan, readyIdle atomic.Int64

// announceWaits (-announce-waits): the blocking scenario runs as blocking-hint.
var announceWaits bool

// run runs the op's body, after its wait in the blocking scenario; announce:
// accel's ops say their wait (s.Blocking).
func (o *op) run(blocking, announce bool, s *accel.Session) {
	if blocking && o.wait > 0 {
		if announce && s != nil { // s is nil on the old design's goroutines
			s.Blocking(func() { time.Sleep(o.wait) })
		} else {
			time.Sleep(o.wait)
		}
	}
	c := &chains[o.chain]
	if o.calls == 0 {
		spin(int(o.work * spinPerNs))
		return
	}
	bad := uint64(0)
	for k := 0; k < o.calls; k++ {
		if !call(c.body, &items[c.body][(o.first+k)%nItems]) {
			bad++
		}
	}
	checked.Add(uint64(o.calls))
	wrong.Add(bad)
}

// meanWork is the mean op work of chain c, as credited: the arrival
// rates use it, so -load is relative to the measured capacity.
func meanWork(c *chain) float64 {
	if c.body == model {
		return (c.loUs + c.hiUs) / 2 * 1e3
	}
	s := 0.0
	for k := 0; k < 256; k++ {
		s += float64(batch(c, (c.loUs+(c.hiUs-c.loUs)*(float64(k)+0.5)/256)*1e3))
	}
	return s / 256 * unitNs[c.body]
}

func batch(c *chain, costNs float64) int {
	n := int(math.Round(costNs / unitNs[c.body]))
	return max(n, 1)
}

// blsIndex is the batchable chain's index in chains (batch.go): its ops
// arrive in the batch scenarios only.
var blsIndex = func() int { chains = append(chains, blsChain); return len(chains) - 1 }()

// arrivals makes one system's ops: Poisson gaps or batches on the chain's
// cadence, the same for every system (same seed); bls: the batchable
// chain too, the shares renormalised over the chains that run.
func arrivals(seed uint64, load, capacity float64, d time.Duration, bls bool) []*op {
	var ops []*op
	total := 0.0
	for i := range chains {
		if i != blsIndex || bls {
			total += chains[i].share
		}
	}
	for i := range chains {
		if i == blsIndex && !bls {
			continue
		}
		c := &chains[i]
		rng := rand.New(rand.NewSource(int64(seed)*1000 + int64(i) + 1))
		rate := load * capacity * c.share / total / meanWork(c) // ops per ns
		t, carry := 0.0, 0.0
		if c.period > 0 {
			t = rng.Float64() * float64(c.period)
		}
		for {
			if c.period == 0 {
				t += rng.ExpFloat64() / rate
				carry = 1
			} else {
				carry += rate * float64(c.period)
			}
			if t >= float64(d) {
				break
			}
			for ; carry >= 1; carry-- {
				cost := (c.loUs + (c.hiUs-c.loUs)*rng.Float64()) * 1e3
				o := &op{chain: i, at: time.Duration(t), work: cost, first: rng.Intn(nItems)}
				// Drawn for every op, so that the other chains' arrivals
				// do not depend on which chains wait.
				if wait := time.Duration(1e6 + rng.Float64()*4e6); c.waits {
					o.wait = wait
				}
				if c.body != model {
					o.calls = batch(c, cost)
					o.work = float64(o.calls) * unitNs[c.body]
				}
				ops = append(ops, o)
			}
			if c.period > 0 {
				t += float64(c.period)
			}
		}
	}
	sort.Slice(ops, func(a, b int) bool { return ops[a].at < ops[b].at })
	return ops
}

// ---------------------------------------------------------------- systems

// submitter is what the node calls for each op: accel's VMSession.Submit,
// oldVM.Submit, or the capacity probe's poolVM.Submit.
type submitter interface {
	Submit(ctx context.Context, f func(*accel.Session) error) error
}

// oldVM is the design of the old Go VMSession: a mutex per VM, taken in
// arrival order through a goroutine and a channel per Submit so that ctx
// can end the wait, and f run on the caller's goroutine, so the Go
// scheduler time-slices every VM's goroutines alike, whatever their
// priority. ctx is honoured while waiting for the mutex only, as there.
type oldVM struct {
	mu                            sync.Mutex
	closed                        atomic.Bool
	dispatched, completed, failed atomic.Uint64
}

func (v *oldVM) Submit(ctx context.Context, f func(*accel.Session) error) error {
	if v.closed.Load() {
		return accel.ErrSessionClosed
	}
	acquired := make(chan struct{})
	go func() { v.mu.Lock(); close(acquired) }()
	select {
	case <-acquired:
	case <-ctx.Done():
		go func() { <-acquired; v.mu.Unlock() }() // the lock is released once taken
		return ctx.Err()
	}
	defer v.mu.Unlock()
	if v.closed.Load() {
		return accel.ErrSessionClosed
	}
	v.dispatched.Add(1)
	if err := f(nil); err != nil {
		v.failed.Add(1)
		return err
	}
	v.completed.Add(1)
	return nil
}

// pool is the capacity probe's system, neutral: one FIFO queue (an
// unbuffered channel, whose blocked senders wait in arrival order) served
// by GOMAXPROCS goroutines; no per-VM order, no priority, no deadlines.
type pool struct{ jobs chan poolJob }

type poolJob struct {
	f    func(*accel.Session) error
	done chan struct{}
}

func newPool() *pool {
	p := &pool{jobs: make(chan poolJob)}
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		go func() {
			for j := range p.jobs {
				j.f(nil)
				close(j.done)
			}
		}()
	}
	return p
}

type poolVM struct{ p *pool }

func (v poolVM) Submit(ctx context.Context, f func(*accel.Session) error) error {
	j := poolJob{f, make(chan struct{})}
	select {
	case v.p.jobs <- j:
	case <-ctx.Done():
		return ctx.Err()
	}
	<-j.done
	return nil
}

// runs says which systems run (-systems): accel, the old design.
var runs = [2]bool{true, true}

type result struct {
	system                                            string
	offered, ontime, late, expired, dropped, censored uint64
	classOn, classAll                                 [nClasses]uint64
	p99                                               [nClasses]time.Duration
	work                                              float64 // op work done in the window, ns
	workAll                                           float64 // all op work done, the backlog after it too
	cpu                                               time.Duration
	wrong                                             uint64
	det                                               detail
	batches, batchOps                                 int64         // batch calls, votes in them (batch scenarios)
	blsP99                                            time.Duration // the batchable chain's p99, arrival to return
	blsSubmitP99                                      time.Duration // the same from the vote's Submit: arrival->Submit (the driver's wait for a P) left out
}

// detail is what -detail prints per run: where an op's time went and
// what the process's scheduling cost.
type detail struct {
	wall               time.Duration           // the run, arrivals and backlog
	csw, icsw          int64                   // the process's voluntary / involuntary context switches
	schedP50, schedP99 float64                 // Go's /sched/latencies: a runnable goroutine's wait for a P, s
	callP99            time.Duration           // scheduled arrival to its Submit call (the submitter's start)
	startP50, startP99 [nClasses]time.Duration // Submit call to f's start, completed ops
	counters           map[string]float64      // accel's runtime counters over the run (accel only)
	waited             int                     // ops that ran with a wait (blocking scenarios)
	span               time.Duration           // the arrivals
	winCPU             time.Duration           // the process's CPU time during the arrivals
	opWall             time.Duration           // f's start to return, summed over the ops counted in work
	readySpan          time.Duration           // of the arrivals, with GOMAXPROCS VMs that do not wait outstanding (sampleReady)
	readyIdle          time.Duration           // the CPU time left unused in readySpan
	waiting            []waitingVM             // the VMs whose ops wait (blocking scenarios)
}

// waitingVM is -detail's account of a VM whose ops wait: how many of its
// ops ran and were on time, and f's wall time beyond its wait and its
// work (p50, p90): the time its goroutine waited for a P, or its thread
// for a CPU, after the wait.
type waitingVM struct {
	name           string
	ran, ontime    int
	over50, over90 time.Duration
	gap50, gap90   time.Duration // an op's start after the later of its Submit and the VM's previous op's return
}

// rtCounters are the accel runtime's counters -detail prints.
var rtCounters = []string{"accel_runtime_blocked_detected_total", "accel_runtime_blocked_presumed_total", "accel_runtime_extra_workers_started_total",
	"accel_runtime_parks_total", "accel_runtime_visits_total"}

// readCounters reads rtCounters from rt's Prometheus text.
func readCounters(rt *accel.Runtime) map[string]float64 {
	var b bytes.Buffer
	if rt == nil || rt.WritePrometheus(&b) != nil {
		return nil
	}
	m := map[string]float64{}
	for _, line := range strings.Split(b.String(), "\n") {
		for _, name := range rtCounters {
			if rest, ok := strings.CutPrefix(line, name); ok && (rest[0] == ' ' || rest[0] == '{') {
				f := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
				if len(f) > 0 {
					v, _ := strconv.ParseFloat(f[0], 64)
					m[name] += v
				}
			}
		}
	}
	return m
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procSnap is a snapshot of the process's counters for detail.
type procSnap struct {
	t         time.Time
	csw, icsw int64
	sched     *metrics.Float64Histogram
}

const schedLat = "/sched/latencies:seconds"

func snap() procSnap {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	m := []metrics.Sample{{Name: schedLat}}
	metrics.Read(m)
	s := procSnap{t: time.Now(), csw: int64(ru.Nvcsw), icsw: int64(ru.Nivcsw)}
	if m[0].Value.Kind() == metrics.KindFloat64Histogram {
		s.sched = m[0].Value.Float64Histogram()
	}
	return s
}

// since fills d's process figures from a to now.
func (d *detail) since(a procSnap) {
	b := snap()
	d.wall, d.csw, d.icsw = b.t.Sub(a.t), b.csw-a.csw, b.icsw-a.icsw
	if a.sched == nil || b.sched == nil || len(a.sched.Counts) != len(b.sched.Counts) {
		return
	}
	var n uint64
	diff := make([]uint64, len(b.sched.Counts))
	for i := range diff {
		diff[i] = b.sched.Counts[i] - a.sched.Counts[i]
		n += diff[i]
	}
	q := func(f float64) float64 {
		var c uint64
		for i, k := range diff {
			if c += k; float64(c) >= f*float64(n) {
				return b.sched.Buckets[i+1] // the bucket's upper bound
			}
		}
		return math.NaN()
	}
	if n > 0 {
		d.schedP50, d.schedP99 = q(0.5), q(0.99)
	}
}

func q99(x []time.Duration, f float64) time.Duration {
	if len(x) == 0 {
		return 0
	}
	sort.Slice(x, func(a, b int) bool { return x[a] < x[b] })
	return x[min(len(x)-1, int(f*float64(len(x))))]
}

// drive runs ops through one system: each arrival is a goroutine calling
// Submit at its time (a node's handler for a message or a tx), with the
// op's deadline as its context (none in the probe), unless the VM already
// has depth ops outstanding (dropped, the same rule for every system).
// After the arrivals, the backlog gets grace; then the ops not started are
// censored (their submitters return at once). It returns when every
// submitter has, and the time base.
func drive(vms []submitter, ops []*op, d, grace time.Duration, depth int64, sc scenario, probe bool) time.Time {
	outstanding := make([]atomic.Int64, len(chains))
	stop, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	var wg sync.WaitGroup
	start := time.Now().Add(10 * time.Millisecond)
	runStart.Store(&start)
	time.Sleep(time.Until(start))
	cpuStart := cpuTime()
	if showDetail && !probe {
		stopSampling := sampleReady(outstanding, sc, start.Add(d))
		defer stopSampling()
	}
	for _, o := range ops {
		time.Sleep(time.Until(start.Add(o.at)))
		if outstanding[o.chain].Add(1) > depth {
			outstanding[o.chain].Add(-1)
			o.out.Store(int32(dropped))
			continue
		}
		wg.Add(1)
		go func(o *op) {
			defer wg.Done()
			defer outstanding[o.chain].Add(-1)
			ctx, cancel := stop, context.CancelFunc(func() {})
			if !probe {
				ctx, cancel = context.WithDeadline(stop, start.Add(o.at+chains[o.chain].deadline))
			}
			defer cancel()
			o.call = time.Since(start)
			var err error
			if is, ok := vms[o.chain].(itemSubmitter); ok && sc.batch {
				err = is.SubmitItem(ctx, o) // a vote: its batch stamps begin and end
			} else {
				err = vms[o.chain].Submit(ctx, func(s *accel.Session) error {
					o.begin = time.Since(start)
					o.run(sc.blocking, sc.announce, s)
					o.end = time.Since(start)
					return nil
				})
			}
			switch {
			case err == nil:
				o.out.Store(int32(done))
			case errors.Is(err, context.DeadlineExceeded):
				o.out.Store(int32(expired))
			default:
				o.out.Store(int32(censored))
			}
		}(o)
	}
	time.Sleep(time.Until(start.Add(d)))
	winCPU.Store(int64(cpuTime() - cpuStart))
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(time.Until(start.Add(d + grace))):
		cancelAll()
		<-finished
	}
	return start
}

// sampleReady samples, every millisecond until end, whether at least
// GOMAXPROCS VMs whose ops do not wait (all of them outside the blocking
// scenarios) have an op outstanding: then every P could run an op, and
// the CPU time the process did not use in that millisecond is capacity
// the system left idle (readySpan, readyIdle). The returned func stops it.
func sampleReady(outstanding []atomic.Int64, sc scenario, end time.Time) func() {
	readySpan.Store(0)
	readyIdle.Store(0)
	procs := runtime.GOMAXPROCS(0)
	quit := make(chan struct{})
	go func() {
		t0, c0 := time.Now(), cpuTime()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			t1, c1 := time.Now(), cpuTime()
			if t1.After(end) {
				return
			}
			n := 0
			for i := range chains {
				if !(sc.blocking && chains[i].waits) && outstanding[i].Load() > 0 {
					n++
				}
			}
			if n >= procs {
				dt := t1.Sub(t0)
				readySpan.Add(int64(dt))
				readyIdle.Add(int64(time.Duration(procs)*dt - (c1 - c0)))
			}
			t0, c0 = t1, c1
		}
	}()
	return func() { close(quit) }
}

// runSystem drives ops through one system (a grace second for the
// backlog) and judges every op.
func runSystem(name string, rt *accel.Runtime, vms []submitter, ops []*op, d time.Duration, depth int64, sc scenario) result {
	var c0 map[string]float64
	if showDetail {
		c0 = readCounters(rt)
	}
	wrong0, cpu0, snap0 := wrong.Load(), cpuTime(), snap()
	runs0, items0 := batchRuns.Load(), batchItems.Load()
	start := drive(vms, ops, d, time.Second, depth, sc, false)
	r := result{system: name, cpu: cpuTime() - cpu0, wrong: wrong.Load() - wrong0,
		batches: batchRuns.Load() - runs0, batchOps: batchItems.Load() - items0}
	r.det.since(snap0)
	r.det.winCPU, r.det.span = time.Duration(winCPU.Load()), d
	if c0 != nil {
		r.det.counters = readCounters(rt)
		for k, v := range c0 {
			r.det.counters[k] -= v
		}
	}
	lat := make([][]time.Duration, nClasses)
	var calls, bls, blsSubmit []time.Duration
	starts := make([][]time.Duration, nClasses)
	for _, o := range ops {
		c := &chains[o.chain]
		r.offered++
		out := outcome(o.out.Load())
		if out == censored && o.at+c.deadline > time.Since(start) {
			r.censored++
			continue
		}
		r.classAll[c.class]++
		if out != dropped {
			calls = append(calls, o.call-o.at)
		}
		switch out {
		case done:
			lat[c.class] = append(lat[c.class], o.end-o.at)
			if o.chain == blsIndex {
				bls = append(bls, o.end-o.at)
				blsSubmit = append(blsSubmit, o.end-o.call)
			}
			starts[c.class] = append(starts[c.class], o.begin-o.call)
			if sc.blocking && o.wait > 0 {
				r.det.waited++
			}
			r.workAll += o.work
			if o.end < d {
				r.work += o.work
				r.det.opWall += o.end - o.begin
			}
			if o.end-o.at <= c.deadline {
				r.ontime++
				r.classOn[c.class]++
			} else {
				r.late++
			}
		case dropped:
			r.dropped++
		default: // expired, or censored after its deadline
			r.expired++
		}
	}
	for k := range lat {
		if n := len(lat[k]); n > 0 {
			sort.Slice(lat[k], func(a, b int) bool { return lat[k][a] < lat[k][b] })
			r.p99[k] = lat[k][min(n-1, n*99/100)]
		}
		r.det.startP50[k], r.det.startP99[k] = q99(starts[k], 0.5), q99(starts[k], 0.99)
	}
	r.det.callP99 = q99(calls, 0.99)
	r.det.readySpan, r.det.readyIdle = time.Duration(readySpan.Load()), time.Duration(readyIdle.Load())
	if sc.blocking {
		for i := range chains {
			if !chains[i].waits {
				continue
			}
			w := waitingVM{name: chains[i].name}
			var over, gaps []time.Duration
			var ran []*op
			for _, o := range ops {
				if o.chain != i || outcome(o.out.Load()) != done {
					continue
				}
				ran = append(ran, o)
				w.ran++
				if o.end-o.at <= chains[i].deadline {
					w.ontime++
				}
				over = append(over, o.end-o.begin-o.wait-time.Duration(o.work))
			}
			w.over50, w.over90 = q99(over, 0.5), q99(over, 0.9)
			sort.Slice(ran, func(a, b int) bool { return ran[a].begin < ran[b].begin })
			for k := 1; k < len(ran); k++ {
				gaps = append(gaps, ran[k].begin-max(ran[k].call, ran[k-1].end))
			}
			w.gap50, w.gap90 = q99(gaps, 0.5), q99(gaps, 0.9)
			r.det.waiting = append(r.det.waiting, w)
		}
	}
	r.blsP99 = q99(bls, 0.99)
	r.blsSubmitP99 = q99(blsSubmit, 0.99)
	return r
}

// The capacity probe: probeWarm, then probeSpan measured.
const (
	probeWarm = 300 * time.Millisecond
	probeSpan = time.Second
)

// capacity is op work per ns (CPUs) as delivered here and now with the
// submitters running, as accel-nodesim measures it: the op mix offered
// open-loop at twice GOMAXPROCS CPUs, a goroutine per arrival calling
// Submit (the cost every system then pays per op), through the neutral
// FIFO pool, no deadlines; the op work done in probeSpan after probeWarm,
// each op credited for the part of its run inside that span. A probe
// that finds less than a quarter CPU per P (the machine taken by other
// processes) probes again, at most twice, and keeps the best.
func capacity(seed uint64, depth int64, bls bool) float64 {
	p := newPool()
	defer close(p.jobs)
	vms := make([]submitter, len(chains))
	for i := range vms {
		vms[i] = poolVM{p}
	}
	procs := float64(runtime.GOMAXPROCS(0))
	best := 0.0
	for try := 0; try < 3 && best < 0.25*procs; try++ {
		d := probeWarm + probeSpan
		ops := arrivals(seed^0xcafe+uint64(try), 2, procs, d, bls)
		drive(vms, ops, d, 0, depth, scenario{}, true)
		work := 0.0
		for _, o := range ops {
			if outcome(o.out.Load()) != done || o.end <= o.begin {
				continue
			}
			from, to := max(o.begin, probeWarm), min(o.end, d)
			if to > from {
				work += o.work * float64(to-from) / float64(o.end-o.begin)
			}
		}
		best = math.Max(best, work/float64(probeSpan))
	}
	return best
}

// ---------------------------------------------------------------- the run

type scenario struct {
	name     string
	load     float64
	blocking bool // 3 VMs' ops wait 1-5 ms before their body
	announce bool // accel's ops wrap that wait in s.Blocking
	batch    bool // + the batchable chain (batch.go)
}

var scenarios = []scenario{
	{"steady", 0.9, false, false, false},
	{"overload", 1.2, false, false, false},
	{"blocking", 0.9, true, false, false},
	{"blocking-hint", 0.9, true, true, false},
	{"batch-low", 0.5, false, false, true},
	{"batch", 0.9, false, false, true},
}

// config is one invocation's settings.
type config struct {
	d      time.Duration // arrivals per system per run
	seed   uint64
	depth  int64
	reps   int           // interleaved pairs of runs per scenario
	warmup time.Duration // a discarded steady pair first; 0: none
	print  bool          // per-run tables (reps 1) or per-run lines and the summary
}

// pair is one interleaved pair of runs: both systems, the same arrivals.
type pair struct {
	seed  uint64
	capNs float64
	res   [2]result
}

// run measures the bodies, then runs each scenario reps times through
// both systems (each pair after its own capacity probe, on the same
// arrivals, the order of the systems alternating) and prints the tables;
// it returns the pairs per scenario and an error if an op is unaccounted
// for or a check said the wrong thing.
func run(list []scenario, cfg config) ([][]pair, error) {
	if err := prepare(cfg.seed); err != nil {
		return nil, err
	}
	if cfg.print {
		fmt.Printf("node: 17 VMs (bench/chains/default.conf), GOMAXPROCS %d, %v per system per run, %d run(s) of each system per scenario, seed %d\n",
			runtime.GOMAXPROCS(0), cfg.d, cfg.reps, cfg.seed)
		fmt.Println("Op bodies, one call measured here (the chains file assumes per op):")
		for b := ed25519V; b < nBodies; b++ {
			fmt.Printf("  %-20s %6.1f us:", bodyName[b], unitNs[b]/1e3)
			for i := range chains {
				if c := &chains[i]; c.body == b {
					fmt.Printf(" %s (%.0f-%.0f us: %d-%d calls)", c.name, c.loUs, c.hiUs,
						batch(c, c.loUs*1e3), batch(c, c.hiUs*1e3))
				}
			}
			fmt.Println()
		}
		fmt.Print("  modelled (spin loop):")
		for _, c := range chains {
			if c.body == model {
				fmt.Print(" ", c.name)
			}
		}
		fmt.Println()
	}
	rt, err := accel.NewRuntime(runtimeConfig)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	if cfg.warmup > 0 {
		// Warm-up: a steady pair, discarded (the heap, the goroutine
		// stacks, the runtime's workers, the CPU's clock).
		if _, err := runPair(rt, scenarios[0], -1, 0, cfg.seed+999, cfg.warmup, cfg.depth); err != nil {
			return nil, err
		}
	}
	all := make([][]pair, len(list))
	for si, sc := range list {
		if cfg.print && cfg.reps > 1 {
			fmt.Printf("\n== %s: load %.2f%s ==\n", sc.name, sc.load, scenarioNote(sc))
		}
		for r := 0; r < cfg.reps; r++ {
			seed := cfg.seed + uint64(si) + 1000*uint64(r)
			p, err := runPair(rt, sc, si, r, seed, cfg.d, cfg.depth)
			all[si] = append(all[si], p)
			if err != nil {
				return all, err
			}
			if cfg.print {
				if cfg.reps == 1 {
					printTable(sc, p.capNs, cfg.d, p.res)
				} else {
					printRunLine(r, p, cfg.d)
				}
				printDetail(p)
			}
		}
	}
	if checked.Load() == 0 {
		return all, errors.New("no real check ran")
	}
	if cfg.print {
		if cfg.reps > 1 {
			printSummary(list, all, cfg)
		}
		fmt.Printf("\nChecks run: %d, all gave the expected answer (1 input in 16 is invalid).\n", checked.Load())
	}
	return all, nil
}

// runPair probes the capacity, then runs sc's arrivals (seed) through
// both systems, accel first when si+r is even.
func runPair(rt *accel.Runtime, sc scenario, si, r int, seed uint64, d time.Duration, depth int64) (pair, error) {
	p := pair{seed: seed, capNs: capacity(seed, depth, sc.batch)}
	ops := [2][]*op{}
	for k := range ops {
		ops[k] = arrivals(seed, sc.load, p.capNs, d, sc.batch)
	}
	vmsAccel := make([]submitter, len(chains))
	vmsOld := make([]submitter, len(chains))
	for i, c := range chains {
		vm, err := rt.NewVMSession(fmt.Sprintf("%s-%d-%d", c.name, si, r), accel.WithPriority(classPrio[c.class]),
			accel.WithQueueDepth(int(depth)))
		if err != nil {
			return p, err
		}
		vmsAccel[i], vmsOld[i] = vm, &oldVM{}
		if sc.batch && i == blsIndex {
			if vmsAccel[i], err = newAccelBLS(vm, sc.load >= 0.7); err != nil {
				return p, err
			}
			h := newHandBLS()
			defer h.stop()
			vmsOld[i] = h
		}
	}
	// Alternate which system goes first, so that a drift of the machine
	// falls on both alike.
	order := [2]int{0, 1}
	if (si+r)%2 != 0 {
		order = [2]int{1, 0}
	}
	for _, k := range order {
		if !runs[k] {
			continue // a system with no ops is skipped in the output
		}
		if k == 0 {
			p.res[0] = runSystem("accel", rt, vmsAccel, ops[0], d, depth, sc)
		} else {
			p.res[1] = runSystem("old VMSession", nil, vmsOld, ops[1], d, depth, sc)
		}
	}
	for _, vm := range vmsAccel {
		v, ok := vm.(*accel.VMSession)
		if !ok {
			v = vm.(*accelBLS).VMSession
		}
		if err := v.Close(); err != nil {
			return p, err
		}
	}
	for k, r := range p.res {
		if !runs[k] {
			continue
		}
		if got := r.ontime + r.late + r.expired + r.dropped + r.censored; got != r.offered || r.offered == 0 {
			return p, fmt.Errorf("%s/%s: %d ops offered, %d accounted for", sc.name, r.system, r.offered, got)
		}
		if r.wrong != 0 {
			return p, fmt.Errorf("%s/%s: %d checks gave the wrong answer", sc.name, r.system, r.wrong)
		}
	}
	return p, nil
}

func pct(a, b uint64) string {
	if b == 0 {
		return "-"
	}
	return pctF(100 * float64(a) / float64(b))
}

// pctF prints a percentage; a miss is never rounded up to 100.
func pctF(p float64) string {
	if p >= 99.95 && p < 100 {
		return "99.9%"
	}
	return fmt.Sprintf("%.1f%%", p)
}

func lat(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.0f ms", float64(d)/1e6)
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.0f us", float64(d)/1e3)
}

func scenarioNote(sc scenario) string {
	switch {
	case sc.announce:
		return " (3 VMs' ops wait 1-5 ms on storage or a signer; accel's ops wrap the wait in s.Blocking)"
	case sc.blocking:
		return " (3 VMs' ops wait 1-5 ms on storage or a signer)"
	case sc.batch:
		return fmt.Sprintf(" (+ %s, modelled BLS votes: accel's Batcher against the old design with a hand batcher of %v or %d votes)",
			blsChain.name, blsWindow, blsMax)
	}
	return ""
}

// batchLine is a result's batch figures (batch scenarios; "" else).
func batchLine(x result) string {
	if x.batches == 0 {
		return ""
	}
	return fmt.Sprintf(" %s p99 %s (from Submit %s), %.1f votes per batch, work per CPU-s %.3f;", blsChain.name,
		lat(x.blsP99), lat(x.blsSubmitP99), float64(x.batchOps)/float64(x.batches), perCPU(x))
}

func printTable(sc scenario, capNs float64, d time.Duration, res [2]result) {
	fmt.Printf("\n== %s: load %.2f of %.2f CPUs measured%s ==\n", sc.name, sc.load, capNs, scenarioNote(sc))
	fmt.Printf("%-14s %8s %9s %8s %8s %8s %8s %9s %9s %10s %8s\n", "system", "on time", "critical",
		"high", "normal", "low", "missed", "crit p99", "high p99", "work done", "work per")
	fmt.Printf("%-14s %8s %9s %8s %8s %8s %8s %9s %9s %10s %8s\n", "", "(all)", "", "", "", "",
		"", "", "", "x capacity", "CPU-s")
	for _, r := range res {
		if r.offered == 0 {
			continue
		}
		judged := r.offered - r.censored
		fmt.Printf("%-14s %8s %9s %8s %8s %8s %8s %9s %9s %9.2fx %8.2f\n", r.system,
			pct(r.ontime, judged), pct(r.classOn[0], r.classAll[0]), pct(r.classOn[1], r.classAll[1]),
			pct(r.classOn[2], r.classAll[2]), pct(r.classOn[3], r.classAll[3]),
			pct(r.dropped+r.expired+r.late, judged), lat(r.p99[critical]), lat(r.p99[high]),
			r.work/float64(d)/capNs, perCPU(r))
	}
	for _, r := range res {
		if b := batchLine(r); b != "" {
			fmt.Printf("%-14s%s\n", r.system, strings.TrimSuffix(b, ";"))
		}
	}
}

func perCPU(r result) float64 {
	if r.cpu <= 0 {
		return 0
	}
	return r.workAll / float64(r.cpu)
}

// ontime is a result's on-time percentage for class k, or over all
// classes for k == nClasses; NaN if it had no such op.
func ontime(r result, k int) float64 {
	on, all := r.ontime, r.offered-r.censored
	if k < nClasses {
		on, all = r.classOn[k], r.classAll[k]
	}
	if all == 0 {
		return math.NaN()
	}
	return 100 * float64(on) / float64(all)
}

// showDetail (-detail): after each pair, per system, where the time went.
var showDetail bool

// runtimeConfig is accel's RuntimeConfig for the run (-workers,
// -short-lane, -short-op); zero: the defaults.
var runtimeConfig accel.RuntimeConfig

func printDetail(p pair) {
	if !showDetail {
		return
	}
	for _, x := range p.res {
		if x.offered == 0 {
			continue
		}
		d := x.det
		fmt.Printf("    %-13s wall %.2f s, CPU %.2f s (%.2f of GOMAXPROCS), switches %d voluntary %d involuntary, "+
			"wait for a P p50 %s p99 %s, arrival->Submit p99 %s, Submit->f p50/p99:",
			x.system, d.wall.Seconds(), x.cpu.Seconds(),
			x.cpu.Seconds()/d.wall.Seconds()/float64(runtime.GOMAXPROCS(0)), d.csw, d.icsw,
			lat(time.Duration(d.schedP50*1e9)), lat(time.Duration(d.schedP99*1e9)), lat(d.callP99))
		for k := 0; k < nClasses; k++ {
			fmt.Printf(" %s %s/%s", className[k], lat(d.startP50[k]), lat(d.startP99[k]))
		}
		fmt.Printf(", CPU during the arrivals %.2f of GOMAXPROCS, f's wall per work credited %.3f",
			d.winCPU.Seconds()/d.span.Seconds()/float64(runtime.GOMAXPROCS(0)), d.opWall.Seconds()/(x.work/1e9))
		if d.readySpan > 0 {
			fmt.Printf(", CPU idle while %d VMs that do not wait had ops outstanding %.1f%% (of %.2f s)",
				runtime.GOMAXPROCS(0), 100*d.readyIdle.Seconds()/d.readySpan.Seconds()/float64(runtime.GOMAXPROCS(0)), d.readySpan.Seconds())
		}
		if d.waited > 0 {
			fmt.Printf(", ops that waited %d", d.waited)
		}
		for _, w := range d.waiting {
			fmt.Printf(", %s ran %d (on time %d), start after Submit and the VM's last op p50 %s p90 %s, f's wall beyond wait and work p50 %s p90 %s",
				w.name, w.ran, w.ontime, lat(w.gap50), lat(w.gap90), lat(w.over50), lat(w.over90))
		}
		for _, name := range rtCounters {
			if v, ok := d.counters[name]; ok {
				fmt.Printf(", %s %.0f", strings.TrimPrefix(name, "accel_runtime_"), v)
			}
		}
		fmt.Println()
	}
}

// printRunLine prints one pair of runs on one line.
func printRunLine(r int, p pair, d time.Duration) {
	fmt.Printf("run %d (seed %d, capacity %.2f CPUs):", r+1, p.seed, p.capNs)
	for _, x := range p.res {
		if x.offered == 0 {
			continue
		}
		fmt.Printf("  %s work %.3fx, on time %s (crit %s high %s normal %s low %s), crit p99 %s;%s",
			x.system, x.work/float64(d)/p.capNs, pctF(ontime(x, nClasses)), pctF(ontime(x, critical)),
			pctF(ontime(x, high)), pctF(ontime(x, normal)), pctF(ontime(x, low)), lat(x.p99[critical]),
			batchLine(x))
	}
	if p.res[0].offered > 0 && p.res[1].offered > 0 {
		fmt.Printf("  work accel/old %.3f", ratio(p))
	}
	fmt.Println()
}

func ratio(p pair) float64 { return p.res[0].work / p.res[1].work }

// med is the median (the mean of the middle two of an even count),
// NaNs left out.
func med(x []float64) float64 {
	var s []float64
	for _, v := range x {
		if !math.IsNaN(v) {
			s = append(s, v)
		}
	}
	if len(s) == 0 {
		return math.NaN()
	}
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// printSummary prints the medians over the pairs of each scenario as a
// markdown table: per system the on-time share of all ops and per class,
// the Critical p99 and the work done x capacity; the median of the pairs'
// work ratios (each pair's accel over old design, same arrivals) and the
// scenario's target.
func printSummary(list []scenario, all [][]pair, cfg config) {
	both := runs[0] && runs[1]
	fmt.Printf("\nMedians of %d interleaved pairs per scenario (%v per system per run, GOMAXPROCS %d):\n\n",
		cfg.reps, cfg.d, runtime.GOMAXPROCS(0))
	fmt.Println("| scenario | system | on time | critical | high | normal | low | crit p99 | work x capacity | work accel / old design (each pair) | target |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for si, sc := range list {
		ps := all[si]
		var on [2][nClasses + 1]float64
		var work [2]float64
		var p99 [2]time.Duration
		for k := 0; k < 2; k++ {
			for c := 0; c <= nClasses; c++ {
				var x []float64
				for _, p := range ps {
					x = append(x, ontime(p.res[k], c))
				}
				on[k][c] = med(x)
			}
			var w, l []float64
			for _, p := range ps {
				w = append(w, p.res[k].work/float64(cfg.d)/p.capNs)
				l = append(l, float64(p.res[k].p99[critical]))
			}
			work[k], p99[k] = med(w), time.Duration(med(l))
		}
		rcol, tcol := "", ""
		if both {
			var rs []float64
			each := ""
			for _, p := range ps {
				rs = append(rs, ratio(p))
				each += fmt.Sprintf(" %.3f", ratio(p))
			}
			rm := med(rs)
			rcol = fmt.Sprintf("**%.3fx** (%s)", rm, each[1:])
			tcol = target(sc, rm, on)
			if sc.batch {
				tcol = batchTarget(sc, ps, on)
			}
		}
		name := fmt.Sprintf("%s %.1f", sc.name, sc.load)
		for k, sys := range [2]string{"accel", "old design"} {
			if !runs[k] {
				continue
			}
			fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %s | %.3fx | %s | %s |\n", name, sys,
				pctF(on[k][nClasses]), pctF(on[k][critical]), pctF(on[k][high]), pctF(on[k][normal]),
				pctF(on[k][low]), lat(p99[k]), work[k], rcol, tcol)
			name, rcol, tcol = "", "", ""
		}
	}
}

// target says the scenario's target and whether the medians meet it.
func target(sc scenario, work float64, on [2][nClasses + 1]float64) string {
	verdict := func(ok bool, what string) string {
		if ok {
			return what + ": met"
		}
		return what + ": **missed**"
	}
	switch {
	case sc.announce:
		return verdict(work >= 1.00, "work >= 1.00x")
	case sc.blocking:
		ok := work >= 0.97
		for c := 0; c < nClasses; c++ {
			ok = ok && !(on[0][c] < on[1][c])
		}
		return verdict(ok, "work >= 0.97x, every class on time >= the old design's")
	case sc.load > 1:
		return verdict(work >= 1.00 && on[0][critical] >= 99, "work >= 1.00x, Critical >= 99%")
	}
	return verdict(work >= 1.00 && on[0][critical] >= 100, "work >= 1.00x, Critical 100%")
}

// batchTarget is a batch scenario's target, with its figures: at load
// 0.7 or more, accel's work per CPU-second (median of the pairs' ratios)
// at least the old design's with its hand batcher, and Critical on time
// at least its; below, the batchable chain's p99 under half the hand
// batcher's window.
func batchTarget(sc scenario, ps []pair, on [2][nClasses + 1]float64) string {
	var cpu, p99a, p99o, subA, subO, callA []float64
	var per [2][]float64
	for _, p := range ps {
		cpu = append(cpu, perCPU(p.res[0])/perCPU(p.res[1]))
		p99a = append(p99a, float64(p.res[0].blsP99))
		p99o = append(p99o, float64(p.res[1].blsP99))
		subA = append(subA, float64(p.res[0].blsSubmitP99))
		subO = append(subO, float64(p.res[1].blsSubmitP99))
		callA = append(callA, float64(p.res[0].det.callP99))
		for k, r := range p.res {
			if r.batches > 0 {
				per[k] = append(per[k], float64(r.batchOps)/float64(r.batches))
			}
		}
	}
	fig := fmt.Sprintf("work per CPU-s accel/old %.3fx, %s p99 %s against %s, votes per batch %.1f (accel) and %.1f (old)",
		med(cpu), blsChain.name, lat(time.Duration(med(p99a))), lat(time.Duration(med(p99o))),
		med(per[0]), med(per[1]))
	verdict := func(ok bool, what string) string {
		if ok {
			return fig + "; " + what + ": met"
		}
		return fig + "; " + what + ": **missed**"
	}
	if sc.load >= 0.7 {
		return verdict(med(cpu) >= 1 && on[0][critical] >= on[1][critical],
			"work per CPU-s >= the old design's with its hand batcher, Critical on time >= its")
	}
	// The p99 from arrival holds the driver's own wait for a P before it
	// calls Submit (arrival->Submit, -detail): both Ps may be in ops of
	// up to 20 ms, which Go preempts after 10 ms. From Submit on is the
	// system's part.
	fig += fmt.Sprintf("; from Submit %s against %s (arrival->Submit p99 %s, all ops, accel's runs)",
		lat(time.Duration(med(subA))), lat(time.Duration(med(subO))), lat(time.Duration(med(callA))))
	return verdict(time.Duration(med(p99a)) < blsWindow/2, fmt.Sprintf("%s p99 < %v", blsChain.name, blsWindow/2))
}

func main() {
	name := flag.String("scenario", "all", "all | steady (load 0.9) | overload (1.2) | blocking (0.9, 3 VMs' ops wait 1-5 ms) | blocking-hint (blocking, accel's ops wrap the wait in s.Blocking) | batch-low (0.5) | batch (0.9): + a chain of BLS votes through a Batcher, against the old design with a hand batcher; all is the six")
	load := flag.Float64("load", 0, "offered load as a fraction of the measured capacity; 0: the scenario's")
	d := flag.Duration("duration", 4*time.Second, "arrivals per system per run")
	seed := flag.Uint64("seed", 42, "seed of the arrivals and inputs (pair r of scenario i uses seed+i+1000r)")
	depth := flag.Int64("depth", 1024, "ops a VM may have outstanding; more are dropped (both systems)")
	reps := flag.Int("reps", 1, "interleaved pairs of runs (accel, old design) per scenario; above 1: a line per pair and a table of medians and ratios")
	warmup := flag.Duration("warmup", time.Second, "a discarded steady pair of this duration per system first; 0: none")
	flag.BoolVar(&showDetail, "detail", false, "after each pair, per system: wall and CPU time, context switches, Go's wait for a P (p50, p99), arrival to Submit p99, Submit to f's start by class, the CPU used during the arrivals, f's wall time per ns of work credited, the CPU left idle while GOMAXPROCS VMs that do not wait had ops outstanding; in the blocking scenarios, per VM whose ops wait: ops run, on time, an op's start after the later of its Submit and the VM's last op, f's wall beyond its wait and work (p50, p90)")
	flag.IntVar(&runtimeConfig.Workers, "workers", 0, "accel's worker goroutines (RuntimeConfig.Workers); 0: one per CPU the process may use")
	flag.IntVar(&runtimeConfig.ShortLaneWorkers, "short-lane", 0, "of them, workers that run only sessions whose recent op cost is at most -short-op (RuntimeConfig.ShortLaneWorkers); below -workers, or below GOMAXPROCS with -workers 0")
	flag.DurationVar(&runtimeConfig.ShortOp, "short-op", 0, "RuntimeConfig.ShortOp; 0: the library's 100 us")
	systems := flag.String("systems", "both", "both | accel | old: the systems run (one alone: to profile it)")
	flag.BoolVar(&announceWaits, "announce-waits", false, "blocking runs as blocking-hint (accel's waiting ops wrap their wait in s.Blocking; the old design's just wait)")
	prof := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof reads it)")
	tracef := flag.String("trace", "", "write an execution trace of the whole run to this file (go tool trace reads it)")
	flag.Parse()
	var list []scenario
	for _, s := range scenarios {
		if announceWaits && s.blocking && !s.announce {
			continue // -announce-waits: blocking runs as blocking-hint
		}
		if *name == "all" || *name == s.name || (announceWaits && s.announce && *name == "blocking") {
			if *load > 0 {
				s.load = *load
			}
			list = append(list, s)
		}
	}
	switch *systems {
	case "both":
	case "accel":
		runs[1] = false
	case "old":
		runs[0] = false
	default:
		list = nil
	}
	if len(list) == 0 || *d < 200*time.Millisecond || *load < 0 || *depth < 1 || *reps < 1 || *warmup < 0 {
		fmt.Fprintln(os.Stderr, "node: bad -scenario, -systems, -duration (>= 200ms), -load, -depth, -reps or -warmup (try -help)")
		os.Exit(2)
	}
	if *prof != "" {
		f, err := os.Create(*prof)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "node: -cpuprofile:", err)
			os.Exit(2)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	if *tracef != "" {
		f, err := os.Create(*tracef)
		if err == nil {
			err = trace.Start(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "node: -trace:", err)
			os.Exit(2)
		}
		defer f.Close()
		defer trace.Stop()
	}
	cfg := config{d: *d, seed: *seed, depth: *depth, reps: *reps, warmup: *warmup, print: true}
	if _, err := run(list, cfg); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "node:", err)
		os.Exit(1)
	}
}
