// Package percpu spreads hot shared counters over stripes, one cache line
// each, so that goroutines running at the same moment on different
// processors write different lines.
//
// Why: an atomic add to a line another core wrote last moves the line
// between the cores' caches, and two readers that do it several times per
// Get (a read state's reference count, a table's, the read counters) lose
// a good part of their throughput to it (doc/performance.md's ledger has
// the figures and the benchmark that measures them). Striping by key
// hash does not help: a key-picked stripe was last written by the other
// core as often as not. Stripes must follow the processor.
//
// Index returns the number of the processor (the Go runtime's P) the
// calling goroutine runs on, masked to the stripes: goroutines running at
// once on different Ps get different stripes as long as there are no more
// Ps than Stripes. A goroutine that moves to another P after calling Index
// only shares a line for a while, never breaks a count (see Ref).
package percpu

import (
	"runtime"
	"sync/atomic"
	_ "unsafe" // go:linkname
)

// CacheLine is the size the stripes are padded to.
const CacheLine = 64

// MaxStripes bounds Stripes (the memory of a Ref is Stripes cache lines).
const MaxStripes = 16

// Stripes is the number of stripes: the least power of two at least
// GOMAXPROCS when the program started, at most MaxStripes.
var Stripes = stripesFor(runtime.GOMAXPROCS(0))

func stripesFor(procs int) int {
	n := 1
	for n < procs && n < MaxStripes {
		n <<= 1
	}
	return n
}

// procPin and procUnpin are the runtime's (sync.Pool's pinning): procPin
// returns the P's id and keeps the goroutine on it until procUnpin. They
// are reached by linkname, which the runtime keeps for them ("widely used
// packages access it using linkname ... Do not remove or change the type
// signature", runtime/proc.go, go.dev/issue/67401).
//
// A per-P sync.Pool token is no substitute: it costs several times as
// much as procPin, and a token that changes Ps with a goroutine between
// Get and Put leaves the P it left to make a new one, whose number may be
// the other P's stripe: two Ps then share every stripe, which with two
// stripes happens half the time.
//
//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// Index returns the calling goroutine's stripe number, in [0, Stripes).
func Index() int {
	p := procPin()
	procUnpin()
	return p & (Stripes - 1)
}

// paddedInt64 is one stripe: a counter alone on its cache line.
type paddedInt64 struct {
	n atomic.Int64
	_ [CacheLine - 8]byte
}

// Ref is a reference count in stripes, for an object that many goroutines
// pin briefly and one owner retires: a read state (retired when a newer
// one is published), a table cache entry (retired on eviction).
//
// The owner's reference is implicit until Retire. TryAcquire adds one to
// the caller's stripe and fails once the Ref is retired; Release takes one
// from a stripe (any stripe: a goroutine that moved keeps the sum right).
// After Retire, whoever makes the sum zero — Retire itself, the last
// Release, or a TryAcquire backing out — runs the release function, exactly
// once.
//
// Why it is safe: Go's atomics are sequentially consistent. A successful
// TryAcquire added to its stripe before it read retired as false, so
// before Retire stored true, so before any sum is taken (sums are taken
// only after reading retired as true). A held reference therefore counts
// +1 in every sum; a released one +1-1 or +1 (if the sum read the
// releasing stripe first); a failed TryAcquire's add and undo are on one
// stripe, so 0 or +1. No stripe read makes a held reference vanish, so a
// sum of zero means none is held, and none can be taken any more. And the
// last of all the adds and subtractions in that order is followed by a sum
// of zero taken by the goroutine that made it.
type Ref struct {
	stripes []paddedInt64
	// retired is read by every TryAcquire and Release and written once;
	// release is read-only: they share a line that is never written hot.
	retired atomic.Bool
	once    atomic.Bool
	release func()
}

// Init readies r, held by its owner; release runs when r is retired and
// every reference taken is released.
func (r *Ref) Init(release func()) {
	r.stripes = make([]paddedInt64, Stripes)
	r.release = release
}

// TryAcquire takes a reference on stripe i (from Index) unless r is
// retired, reporting whether it did. The caller gives it back with
// Release.
func (r *Ref) TryAcquire(i int) bool {
	if r.retired.Load() {
		return false
	}
	s := &r.stripes[i&(len(r.stripes)-1)].n
	s.Add(1)
	if !r.retired.Load() {
		return true
	}
	s.Add(-1)
	r.releaseIfZero()
	return false
}

// Acquire takes a reference on stripe i unconditionally. REQUIRES: r is
// not retired and cannot be retired meanwhile (the owner excludes Retire,
// as the table cache does under its mutex). Holding a reference is not
// enough, unlike with a one-word count: after Retire, a sum that read
// stripe i before this add and another stripe after the holder released
// there would see zero. It panics on a retired Ref.
func (r *Ref) Acquire(i int) {
	if r.retired.Load() {
		panic("percpu: Acquire on a retired Ref")
	}
	r.stripes[i&(len(r.stripes)-1)].n.Add(1)
}

// Release gives back a reference taken by TryAcquire or Acquire, on any
// stripe (best the one it was taken on).
func (r *Ref) Release(i int) {
	r.stripes[i&(len(r.stripes)-1)].n.Add(-1)
	if r.retired.Load() {
		r.releaseIfZero()
	}
}

// Retire drops the owner's reference: TryAcquire fails from now on, and
// the release function runs once no reference is held. Call it once.
func (r *Ref) Retire() {
	if r.retired.Swap(true) {
		panic("percpu: Ref retired twice")
	}
	r.releaseIfZero()
}

// Retired reports whether Retire was called.
func (r *Ref) Retired() bool { return r.retired.Load() }

// Released reports whether the release function has run (or is running).
func (r *Ref) Released() bool { return r.once.Load() }

// held returns the sum of the stripes.
func (r *Ref) held() int64 {
	var n int64
	for i := range r.stripes {
		n += r.stripes[i].n.Load()
	}
	return n
}

func (r *Ref) releaseIfZero() {
	if r.held() == 0 && r.once.CompareAndSwap(false, true) {
		r.release()
	}
}
