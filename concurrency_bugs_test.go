package sieve

// Regression tests for defects that only concurrent use shows: each is
// built the way a user hits it (several goroutines, public API only) and
// failed on the main of 2026-12-01.

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sievedb/sieve/internal/lockrank"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// lwwMerger is a last-writer-wins merger: FullMerge returns its newest
// operand itself, as the Merger contract allows.
type lwwMerger struct{}

func (lwwMerger) Name() string { return "test.lww" }

func (lwwMerger) FullMerge(key, base []byte, hasBase bool, ops [][]byte) ([]byte, error) {
	if len(ops) == 0 {
		return base, nil
	}
	return ops[len(ops)-1], nil
}

func (lwwMerger) PartialMerge(key []byte, ops [][]byte) ([]byte, bool) {
	return ops[len(ops)-1], true
}

// raceDuration bounds the concurrent regression tests: long enough for the
// old bugs to show on every run (they showed within ~100 ms), short enough
// for go test ./....
func raceDuration() time.Duration {
	if testing.Short() {
		return 500 * time.Millisecond
	}
	return 1500 * time.Millisecond
}

// TestMergeNotDoubleCountedAroundFlush: one writer adds +1 to a counter
// while filler writes rotate small memtables and compactions run; readers
// must never see more than the merges started, nor less than those
// acknowledged. Before the fix, a read state published between a flush's
// manifest install and the retirement of its memtable held both, and the
// operands were counted twice (and MaxSuccessiveMerges wrote the doubled
// value back as a Set).
func TestMergeNotDoubleCountedAroundFlush(t *testing.T) {
	for _, collapse := range []int{-1, 4} {
		t.Run(fmt.Sprintf("MaxSuccessiveMerges=%d", collapse), func(t *testing.T) {
			fs := vfs.NewMem()
			opts := &Options{FS: fs, Merger: counterMerger{}, MemTableSize: 64 << 10,
				L0CompactionTrigger: 2, TargetFileSize: 16 << 10, MaxSuccessiveMerges: collapse}
			db, err := Open("db", opts)
			require.NoError(t, err)
			c := &mergeCountRace{db: db, key: []byte("counter"), errc: make(chan error, 8)}
			var wg sync.WaitGroup
			wg.Go(c.count)
			wg.Go(c.fill)
			for range 2 {
				wg.Go(c.read)
			}
			// Run for raceDuration and until several flushes have raced the
			// merges (a loaded machine may starve the filler at first).
			for start := time.Now(); time.Since(start) < raceDuration() ||
				(db.Metrics().Flush.Count < 3 && time.Since(start) < time.Minute); {
				time.Sleep(20 * time.Millisecond)
			}
			c.stop.Store(true)
			wg.Wait()
			close(c.errc)
			for err := range c.errc {
				require.NoError(t, err)
			}
			m := db.Metrics()
			t.Logf("%d merges, %d reads checked, %d flushes, %d compactions", c.acked.Load(), c.reads.Load(), m.Flush.Count, m.Compaction.Count)
			require.Positive(t, m.Flush.Count, "no flush ran: the test did not reach the race")
			checkCounterDurable(t, db, opts, c.key, c.acked.Load())
		})
	}
}

// mergeCountRace is what TestMergeNotDoubleCountedAroundFlush's goroutines
// share: the merges started and acknowledged, the reads checked, and the
// first errors.
type mergeCountRace struct {
	db             *DB
	key            []byte
	started, acked atomic.Int64
	reads          atomic.Int64
	stop           atomic.Bool
	errc           chan error
}

// report records err (if there is room) and stops every goroutine.
func (c *mergeCountRace) report(err error) {
	select {
	case c.errc <- err:
	default:
	}
	c.stop.Store(true)
}

// count is the counter's only writer: +1 merges until stopped.
func (c *mergeCountRace) count() {
	for !c.stop.Load() {
		c.started.Add(1)
		if err := c.db.Merge(c.key, []byte("1"), NoSync); err != nil {
			c.report(err)
			return
		}
		c.acked.Add(1)
	}
}

// fill rotates memtables with puts of other keys, so that flushes and
// compactions run.
func (c *mergeCountRace) fill() {
	val := make([]byte, 512)
	for i := 0; !c.stop.Load(); i++ {
		if err := c.db.Put(fmt.Appendf(nil, "f%06d", i%5000), val, NoSync); err != nil {
			c.report(err)
			return
		}
	}
}

// read checks Gets of the counter: at least the merges acknowledged before
// the read, at most those started by its end.
func (c *mergeCountRace) read() {
	for !c.stop.Load() {
		lo := c.acked.Load()
		v, err := c.db.Get(c.key)
		hi := c.started.Load()
		if errors.Is(err, ErrNotFound) {
			v, err = []byte("0"), nil
		}
		if err != nil {
			c.report(err)
			return
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || n < lo || n > hi {
			c.report(fmt.Errorf("Get = %s, but %d merges acknowledged before the read and %d started by its end", v, lo, hi))
			return
		}
		c.reads.Add(1)
	}
}

// checkCounterDurable: the stored value must be exact, before and after a
// reopen and a full compaction. It closes db.
func checkCounterDurable(t *testing.T, db *DB, opts *Options, key []byte, total int64) {
	t.Helper()
	check := func() {
		t.Helper()
		v, err := db.Get(key)
		require.NoError(t, err)
		require.Equal(t, strconv.FormatInt(total, 10), string(v))
	}
	check()
	require.NoError(t, db.Close())
	var err error
	db, err = Open("db", opts)
	require.NoError(t, err)
	check()
	require.NoError(t, db.Compact(nil, nil))
	check()
	require.NoError(t, db.Close())
}

// TestOpenColumnFamilyDuringRotation: creating column families while
// another goroutine writes and flushes. OpenColumnFamily held versionMu
// and took db.mu; a memtable rotation held db.mu and took versionMu.
func TestOpenColumnFamilyDuringRotation(t *testing.T) {
	db, err := Open("db", &Options{FS: vfs.NewMem(), MemTableSize: 64 << 10})
	require.NoError(t, err)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var werr atomic.Value
	wg.Go(func() {
		val := make([]byte, 256)
		for i := 0; !stop.Load(); i++ {
			if err := db.Put(fmt.Appendf(nil, "k%06d", i), val, NoSync); err != nil {
				werr.Store(err)
				return
			}
			if i%50 == 0 {
				if err := db.Flush(); err != nil {
					werr.Store(err)
					return
				}
			}
		}
	})
	done := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(raceDuration())
		for i := 0; time.Now().Before(deadline); i++ {
			cf, err := db.OpenColumnFamily(fmt.Sprintf("cf%d", i), nil)
			if err != nil {
				done <- err
				return
			}
			if err := cf.Put([]byte("a"), []byte("b"), NoSync); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(60 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("OpenColumnFamily hung against writes and flushes:\n%s", buf[:runtime.Stack(buf, true)])
	}
	stop.Store(true)
	wg.Wait()
	if err, _ := werr.Load().(error); err != nil {
		t.Fatal(err)
	}
	require.NoError(t, db.Close())
}

// TestGetReturnsOwnedMemory: a merger may return one of its operands; the
// value Get returns must still be the caller's to change, wherever the
// operand came from (memtable or table).
func TestGetReturnsOwnedMemory(t *testing.T) {
	db, _ := openMem(t, &Options{Merger: lwwMerger{}})
	key := []byte("k")
	require.NoError(t, db.Merge(key, []byte("first"), nil))
	require.NoError(t, db.Merge(key, []byte("value"), nil))
	scribble := func() {
		v, err := db.Get(key)
		require.NoError(t, err)
		require.Equal(t, "value", string(v))
		for i := range v {
			v[i] = 'X'
		}
	}
	scribble()
	scribble() // fails here if the first call handed out memtable memory
	snap := db.NewSnapshot()
	v, err := snap.Get(key)
	require.NoError(t, err)
	copy(v, "XXXXX")
	require.NoError(t, snap.Close())
	require.NoError(t, db.Flush())
	scribble()
	require.NoError(t, db.Compact(nil, nil))
	scribble()
}

// TestReadsRacingClose: Get, NewIter and snapshots racing Close return
// ErrClosed (or succeed), never an internal error or a panic.
func TestReadsRacingClose(t *testing.T) {
	var closedReads atomic.Int64 // reads that met Close: the race happened
	for round := range 20 {
		db, err := Open("db", &Options{FS: vfs.NewMem()})
		require.NoError(t, err)
		require.NoError(t, db.Put([]byte("a"), []byte("1"), nil))
		var wg sync.WaitGroup
		errc := make(chan error, 16)
		start := make(chan struct{})
		for range 4 {
			wg.Go(func() {
				<-start
				for i := 0; i < 200; i++ {
					_, err := db.Get([]byte("a"))
					if err != nil && !errors.Is(err, ErrClosed) {
						errc <- fmt.Errorf("round %d: Get: %w", round, err)
						return
					}
					it := db.NewIter(nil)
					for it.First(); it.Valid(); it.Next() {
					}
					ierr := it.Close()
					if ierr != nil && !errors.Is(ierr, ErrClosed) {
						errc <- fmt.Errorf("round %d: iterator: %w", round, ierr)
						return
					}
					if err != nil || ierr != nil {
						closedReads.Add(1)
					}
				}
			})
		}
		close(start)
		runtime.Gosched()
		if err := db.Close(); err != nil {
			require.ErrorIs(t, err, ErrLeaked, "iterators racing Close may be open; nothing else may fail")
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
	}
	t.Logf("%d reads met Close", closedReads.Load())
	require.Positive(t, closedReads.Load(), "no read raced Close")
}

// TestLockOrderChecked: the DB's locks carry their ranks, so an inversion
// (here the one OpenColumnFamily and a rotation used to make: versionMu
// taken under db.mu) panics at once in race and invariants builds.
func TestLockOrderChecked(t *testing.T) {
	if !lockrank.Enabled {
		t.Skip("lock ranks are checked under -race or -tags invariants")
	}
	db, err := Open("db", &Options{FS: vfs.NewMem()})
	require.NoError(t, err)
	defer db.Close()
	got := func() (msg string) {
		defer func() { msg, _ = recover().(string) }()
		db.mu.Lock()
		defer db.mu.Unlock()
		db.versionMu.Lock()
		db.versionMu.Unlock()
		return ""
	}()
	require.Contains(t, got, "acquiring Version (rank 4) while holding DB (rank 5)")
	// And the right order is accepted.
	db.versionMu.Lock()
	db.mu.Lock()
	db.mu.Unlock()
	db.versionMu.Unlock()
}
