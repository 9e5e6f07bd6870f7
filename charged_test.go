package sieve

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

func chargedKey(i int) []byte { return []byte(fmt.Sprintf("key%08d", i)) }

// chargedValue is key i's value at version ver: the version, then padding
// derived from both (so a value read for the wrong key or version shows).
func chargedValue(i int, ver int64) []byte {
	h := uint64(i)<<32 ^ uint64(ver)
	var pad strings.Builder
	for range 4 { // splitmix64: incompressible padding
		h += 0x9e3779b97f4a7c15
		z := (h ^ h>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		fmt.Fprintf(&pad, "%016x", z^z>>31)
	}
	return []byte(fmt.Sprintf("%d:%d:%s", ver, i, pad.String()))
}

// chargedOptions: a cache far smaller than the data, index and filter
// charged to it, several L0 tables left in place.
func chargedOptions(cacheSize int64) *Options {
	return &Options{FS: vfs.NewMem(), CacheIndexAndFilterBlocks: true, BlockCacheSize: cacheSize,
		MemTableSize: 256 << 10, L0CompactionTrigger: 4, L0StopWritesTrigger: 16,
		TargetFileSize: 64 << 10, LBaseMaxBytes: 256 << 10, BlockSize: 1024,
		DisableSeekCompactions: true} // the tests pin the shape they build
}

func loadCharged(t *testing.T, db *DB, n int) {
	for i := 0; i < n; i++ {
		require.NoError(t, db.Put(chargedKey(i), chargedValue(i, 0), NoSync))
	}
}

// TestChargedBudgetHolds samples the block cache during concurrent reads of
// a database many times larger than the cache, with charging and pinning
// on: cached plus pinned bytes never exceed BlockCacheSize by more than
// one block.
func TestChargedBudgetHolds(t *testing.T) {
	for _, partitioned := range []bool{false, true} {
		t.Run(fmt.Sprintf("partitioned=%v", partitioned), func(t *testing.T) { testChargedBudget(t, partitioned) })
	}
}

func testChargedBudget(t *testing.T, partitioned bool) {
	seed := testutil.Seed(t)
	const cacheSize, n = 256 << 10, 40000
	o := chargedOptions(cacheSize)
	o.PartitionIndexAndFilters, o.MetadataBlockSize = partitioned, 1024
	db, err := Open("db", o)
	require.NoError(t, err)
	defer db.Close()
	loadCharged(t, db, n)
	require.NoError(t, db.Compact(nil, nil))
	for i := 0; i < n; i += 7 { // leave L0 tables over the bottom level
		require.NoError(t, db.Put(chargedKey(i), chargedValue(i, 0), NoSync))
	}
	require.NoError(t, db.Flush())
	const maxBlock = 4 << 10 // a 1 KiB block, its entries' overshoot, or one index/filter block
	var stop atomic.Bool
	var over atomic.Int64
	var samples atomic.Int64
	c := db.tables.cache
	go func() {
		for !stop.Load() {
			size, reserved := c.Usage()
			if excess := size + reserved - cacheSize; excess > maxBlock && excess > over.Load() {
				over.Store(excess)
			}
			samples.Add(1)
		}
	}()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(g)))
			for j := 0; j < 5000; j++ {
				i := rng.IntN(2 * n)
				if j%20 == 0 && !seekCharged(t, db, i, n) {
					return
				}
				v, err := db.Get(chargedKey(i))
				if i >= n {
					if err != ErrNotFound {
						t.Errorf("absent key %d: %q, %v", i, v, err)
					}
					continue
				}
				if err != nil || string(v) != string(chargedValue(i, 0)) {
					t.Errorf("key %d: %q, %v", i, v, err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	stop.Store(true)
	require.Zero(t, over.Load(), "cache + pinned bytes exceeded the budget by more than one block")
	m := db.Metrics()
	t.Logf("%d samples\n%s", samples.Load(), m)
	require.Greater(t, samples.Load(), int64(100))
	checkChargedMetrics(t, m, cacheSize, partitioned)
}

// seekCharged seeks to key i and checks the iterator lands on it (or at
// the end, i >= n) and steps to the next key: iterators pack the index
// partitions they read, which the budget must hold with.
func seekCharged(t *testing.T, db *DB, i, n int) bool {
	it := db.NewIter(nil)
	defer it.Close()
	ok := it.SeekGE(chargedKey(i))
	if i >= n {
		ok = !ok
	} else if ok = ok && bytes.Equal(it.Key(), chargedKey(i)); ok && i+1 < n {
		ok = it.Next() && bytes.Equal(it.Key(), chargedKey(i+1))
	}
	if !ok {
		t.Errorf("seek to key %d: at %q", i, it.Key())
	}
	return ok
}

func checkChargedMetrics(t *testing.T, m *Metrics, cacheSize int64, partitioned bool) {
	x := m.IndexFilter
	require.Greater(t, m.Levels[6].Size, 4*int64(cacheSize), "the workload must be larger than the cache")
	if partitioned {
		// Only the top-level blocks stay resident; lookups go through
		// one index partition and at most one filter partition a table.
		require.Greater(t, x.ResidentIndexBytes, int64(0))
		require.Less(t, x.ResidentIndexBytes+x.ResidentFilterBytes, m.Levels[6].Size/50, "top-level blocks too large")
		require.Greater(t, x.IndexPartitions, int64(0))
		require.Greater(t, x.FilterPartitions, int64(0))
		require.LessOrEqual(t, x.FilterPartitions, m.PointLookups.TablesProbed)
		require.Contains(t, m.String(), "partitions: index")
		require.Greater(t, x.IndexPartitionsPacked, int64(0), "no iterator packed an index partition")
		require.Zero(t, x.PinnedIndexBytes+x.PinnedFilterBytes, "partitioned tables are not pinned")
	} else {
		require.Zero(t, x.ResidentIndexBytes+x.ResidentFilterBytes, "charged tables kept blocks resident")
		require.Greater(t, x.PinnedFilterBytes, int64(0), "no L0 table pinned")
	}
	require.Equal(t, x.PinnedIndexBytes+x.PinnedFilterBytes, m.BlockCache.Reserved)
	require.Greater(t, x.IndexMisses, int64(0))
	require.Greater(t, x.FilterHits+x.FilterMisses, int64(0))
	require.Greater(t, x.CachedIndexBytes+x.CachedFilterBytes, int64(0))
	require.Contains(t, m.String(), "index/filter: resident")
}

// TestChargedConcurrentCompactions reads from many goroutines, checked
// against an oracle, while a writer overwrites keys, flushes and
// compactions replace tables and a small cache keeps evicting their
// index, filter and data blocks.
func TestChargedConcurrentCompactions(t *testing.T) {
	for _, partitioned := range []bool{false, true} {
		t.Run(fmt.Sprintf("partitioned=%v", partitioned), func(t *testing.T) { testChargedConcurrent(t, partitioned) })
	}
}

func testChargedConcurrent(t *testing.T, partitioned bool) {
	seed := testutil.Seed(t)
	const n = 20000
	o := chargedOptions(128 << 10)
	o.MaxConcurrentCompactions = 2
	o.PartitionIndexAndFilters, o.MetadataBlockSize = partitioned, 512
	db, err := Open("db", o)
	require.NoError(t, err)
	defer db.Close()
	loadCharged(t, db, n)
	// committed[i] is the version of key i last acknowledged, started[i]
	// the last one written: a read returns a version between them.
	committed, started := make([]atomic.Int64, n), make([]atomic.Int64, n)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(uint64(seed), 99))
		// At least 2 s and until compactions have run (a loaded machine
		// may need longer for the first), at most 60 s.
		start := time.Now()
		for j := 0; !t.Failed(); j++ {
			if j%1000 == 0 && time.Since(start) > 2*time.Second &&
				(db.Metrics().Compaction.Count >= 2 || time.Since(start) > 60*time.Second) {
				break
			}
			i := rng.IntN(n)
			ver := started[i].Add(1)
			if err := db.Put(chargedKey(i), chargedValue(i, ver), NoSync); err != nil {
				t.Errorf("put: %v", err)
				return
			}
			committed[i].Store(ver)
		}
		stop.Store(true)
	}()
	var reads atomic.Int64
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(g)))
			for !stop.Load() && !t.Failed() {
				i := rng.IntN(n)
				lo := committed[i].Load()
				v, err := db.Get(chargedKey(i))
				hi := started[i].Load()
				ver, _ := strconv.ParseInt(strings.SplitN(string(v), ":", 2)[0], 10, 64)
				if err != nil || ver < lo || ver > hi || string(v) != string(chargedValue(i, ver)) {
					t.Errorf("key %d: %.20q, %v (versions %d..%d)", i, v, err, lo, hi)
					return
				}
				reads.Add(1)
			}
		}(g)
	}
	wg.Wait()
	m := db.Metrics()
	t.Logf("%d reads\n%s", reads.Load(), m)
	require.Greater(t, m.Compaction.Count, int64(0))
	require.Greater(t, m.IndexFilter.IndexMisses, int64(0))
	require.Greater(t, reads.Load(), int64(1000))
}

// TestChargedPinOff: PinOff leaves every table's blocks in the cache,
// unpinned; an out-of-range PinMode is refused; charging off keeps the
// blocks resident and the cache free of them.
func TestChargedPinOff(t *testing.T) {
	o := chargedOptions(256 << 10)
	o.PinL0FilterAndIndexBlocks = PinOff
	db, err := Open("db", o)
	require.NoError(t, err)
	loadCharged(t, db, 5000)
	require.NoError(t, db.Flush())
	for i := 0; i < 5000; i += 3 {
		_, err := db.Get(chargedKey(i))
		require.NoError(t, err)
	}
	x := db.Metrics().IndexFilter
	require.Greater(t, db.Metrics().Levels[0].NumFiles+db.Metrics().Levels[6].NumFiles, int64(0))
	require.Zero(t, x.PinnedIndexBytes+x.PinnedFilterBytes, "PinOff pinned")
	require.Greater(t, x.CachedFilterBytes, int64(0))
	require.Greater(t, x.FilterHits, int64(0))
	require.NoError(t, db.Close())

	bad := chargedOptions(256 << 10)
	bad.PinL0FilterAndIndexBlocks = PinOff + 1
	_, err = Open("db", bad)
	require.ErrorIs(t, err, ErrInvalidOptions)

	plain := chargedOptions(256 << 10)
	plain.CacheIndexAndFilterBlocks = false
	db, err = Open("db", plain)
	require.NoError(t, err)
	defer db.Close()
	loadCharged(t, db, 5000)
	require.NoError(t, db.Flush())
	_, err = db.Get(chargedKey(3))
	require.NoError(t, err)
	x = db.Metrics().IndexFilter
	require.Greater(t, x.ResidentFilterBytes, int64(0))
	require.Zero(t, x.CachedFilterBytes+x.CachedIndexBytes+x.PinnedFilterBytes+x.FilterHits+x.FilterMisses)
}
