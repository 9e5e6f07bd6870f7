//go:build !sieve_plainlock

package memtable

import (
	"runtime"
	"sync/atomic"
	"time"
)

// rwLock is a memtable's B-tree lock: one writer at a time (Add and
// addRangeDel, which the DB calls from one goroutine) and any number of
// readers (Get, iterator refills, the range tombstone list). A reader
// holds it for one bounded descent, about a microsecond; the writer for
// one leaf's shift (Add descends before it takes the lock), or for a whole
// insert that splits nodes, whose nodes it reserved before.
//
// A waiter spins, then yields its P between checks (spinSpins), then
// sleeps between them (yieldSpins). sync.RWMutex parks a reader that
// meets the writer at once (RLock does not spin), and the writer's Unlock
// readies it on the writer's own P while the reader's P has gone idle, so
// the reader runs again only when an idle P is woken to steal it: tens of
// microseconds on a VM, the tail of Gets during writes. The sleeps are for
// a holder whose thread the kernel descheduled (more runnable threads than
// processors): a Gosched does not give the processor back to the kernel,
// so a waiter that only yielded kept the holder's thread off it. The A/B
// against sync.RWMutex (build tag sieve_plainlock) is in
// doc/performance.md's ledger.
//
// The writer has priority: once it has set writerBit no reader enters,
// and it waits for those inside to leave, so a stream of readers cannot
// starve inserts.
//
// Lock order: a leaf (locks.go); nothing else is taken while it is held.
type rwLock struct {
	// state is the readers inside, or entering and about to back out,
	// plus writerBit while a writer holds the lock or waits for readers
	// to leave.
	state atomic.Int32
}

const writerBit = 1 << 30

// spinSpins is how many times a waiter checks the lock before it starts
// yielding between checks: a few microseconds, longer than an insert or a
// descent holds it, so a waiter whose holder is running keeps its P. A
// holder that is not running (preempted with the lock held, or on the
// same P when GOMAXPROCS is 1) is let run by the yields.
const spinSpins = 1 << 12

// yieldSpins is how many checks after spinSpins a waiter yields its P
// between (runtime.Gosched), about a hundred microseconds, before it
// sleeps between checks instead: 1 us, doubling up to maxSleep.
const yieldSpins = 64

// backoff is a waiter's pause before its check number i+1.
func backoff(i int) {
	switch {
	case i < spinSpins:
	case i < spinSpins+yieldSpins:
		runtime.Gosched()
	default:
		time.Sleep(min(time.Microsecond<<min(i-spinSpins-yieldSpins, 10), maxSleep))
	}
}

// maxSleep caps the sleep a waiter asks for between checks. It is not a
// bound on how late a waiter notices a release: when the waiter's
// processor has nothing else to run, Go's netpoller rounds a timer under
// a millisecond up to one. Parking on a condition variable that the
// release signals instead (tried: it wakes the waiter at once, on the
// releasing goroutine's processor) gave back the reader's losses: 165-198k
// Gets/s beside the writer against 248-281k with the sleeps, p99 7.0-7.4
// against 5.3-5.7 us (peers scaling, sieve only, three alternating runs).
const maxSleep = 200 * time.Microsecond

// RLock takes the lock shared.
func (l *rwLock) RLock() {
	if l.state.Add(1)&writerBit != 0 {
		l.rlockSlow()
	}
}

// rlockSlow backs out of a writer's lock and waits to enter again.
func (l *rwLock) rlockSlow() {
	for {
		l.state.Add(-1)
		for i := 0; l.state.Load()&writerBit != 0; i++ {
			backoff(i)
		}
		if l.state.Add(1)&writerBit == 0 {
			return
		}
	}
}

// RUnlock releases a shared hold.
func (l *rwLock) RUnlock() {
	if l.state.Add(-1)&^writerBit < 0 {
		panic("memtable: RUnlock of an unlocked rwLock")
	}
}

// Lock takes the lock exclusively: it claims writerBit, then waits for
// the readers inside to leave.
func (l *rwLock) Lock() {
	if !l.state.CompareAndSwap(0, writerBit) {
		l.lockSlow()
	}
}

func (l *rwLock) lockSlow() {
	for i := 0; ; i++ {
		if s := l.state.Load(); s&writerBit == 0 && l.state.CompareAndSwap(s, s|writerBit) {
			break
		}
		backoff(i)
	}
	for i := 0; l.state.Load() != writerBit; i++ {
		backoff(i)
	}
}

// Unlock releases an exclusive hold.
func (l *rwLock) Unlock() {
	if l.state.Add(-writerBit) < 0 {
		panic("memtable: Unlock of an unlocked rwLock")
	}
}
