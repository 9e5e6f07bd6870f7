//go:build !sieve_plainlock

package memtable

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// lockCheck is state guarded by an rwLock: a writer changes a and b
// together, so a reader that sees them differ, or a writer that finds a
// reader inside, caught the lock letting two sides in at once. a and b
// are plain fields: under -race an acquisition that did not order them
// after the last release is reported as a race too.
type lockCheck struct {
	l       rwLock
	a, b    int
	readers atomic.Int32
	writers atomic.Int32
	bad     atomic.Int64
}

func (c *lockCheck) write() {
	c.l.Lock()
	if c.writers.Add(1) != 1 || c.readers.Load() != 0 {
		c.bad.Add(1)
	}
	c.a++
	runtime.Gosched() // a holder that is not running: waiters must still get in after
	c.b++
	c.writers.Add(-1)
	c.l.Unlock()
}

func (c *lockCheck) read() {
	c.l.RLock()
	c.readers.Add(1)
	if c.writers.Load() != 0 || c.a != c.b {
		c.bad.Add(1)
	}
	c.readers.Add(-1)
	c.l.RUnlock()
}

func runLockCheck(t *testing.T, writers, readers, writes int) {
	var c lockCheck
	var stop atomic.Bool
	var reads atomic.Int64
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			for !stop.Load() {
				c.read()
				reads.Add(1)
			}
		})
	}
	var ww sync.WaitGroup
	for range writers {
		ww.Go(func() {
			for range writes {
				c.write()
			}
		})
	}
	ww.Wait() // a stream of readers did not starve the writers
	stop.Store(true)
	wg.Wait()
	require.Zero(t, c.bad.Load(), "a reader and a writer, or two writers, were inside at once")
	require.Equal(t, writers*writes, c.a)
	require.Equal(t, c.a, c.b)
	require.Positive(t, reads.Load(), "the readers never got in")
}

// TestRWLockExcludes runs writers and readers on one rwLock, as many as
// the race detector allows quickly: writers are exclusive, readers shared,
// and the writers finish while readers keep coming.
func TestRWLockExcludes(t *testing.T) {
	for _, tc := range []struct{ writers, readers int }{{1, 1}, {1, 8}, {3, 8}} {
		runLockCheck(t, tc.writers, tc.readers, 2000)
	}
}

// TestRWLockOneProcessor checks progress with GOMAXPROCS 1, where a
// waiter's holder never runs while the waiter spins: the yields after
// spinSpins must let it.
func TestRWLockOneProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	runLockCheck(t, 2, 4, 500)
}

func TestRWLockMisuse(t *testing.T) {
	var l rwLock
	require.PanicsWithValue(t, "memtable: RUnlock of an unlocked rwLock", l.RUnlock)
	var m rwLock
	require.PanicsWithValue(t, "memtable: Unlock of an unlocked rwLock", m.Unlock)
	var n rwLock
	n.RLock()
	n.RLock()
	n.RUnlock()
	n.RUnlock()
	n.Lock()
	n.Unlock()
	require.Zero(t, n.state.Load())
}

// TestRWLockLongHold holds the lock far longer than the spins and yields
// last (as a holder whose thread the kernel descheduled would), shared
// and exclusive, and checks that waiters of both kinds get it once it is
// released, after having reached the sleeping part of their backoff.
func TestRWLockLongHold(t *testing.T) {
	var l rwLock
	for _, exclusive := range []bool{true, false} {
		if exclusive {
			l.Lock()
		} else {
			l.RLock()
		}
		var got atomic.Int32
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				l.RLock()
				got.Add(1)
				l.RUnlock()
			}()
			go func() {
				defer wg.Done()
				l.Lock()
				got.Add(1)
				l.Unlock()
			}()
		}
		time.Sleep(20 * time.Millisecond)
		if exclusive {
			require.Zero(t, got.Load(), "a waiter got in while the writer held the lock")
		} else {
			// Readers may share; writers must wait.
			require.LessOrEqual(t, got.Load(), int32(3))
		}
		if exclusive {
			l.Unlock()
		} else {
			l.RUnlock()
		}
		wg.Wait()
		require.Equal(t, int32(6), got.Load())
		require.Zero(t, l.state.Load())
	}
}
