package sieve

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/internal/testutil"
)

// TestTableCacheConcurrentEviction reads from many goroutines across many
// more tables than MaxOpenFiles while compactions replace and delete
// tables: the lock-free hits race evictions, reopenings and deletions.
// Every read is checked against the values written (no write happens
// during the reads, so each key has one answer).
func TestTableCacheConcurrentEviction(t *testing.T) {
	seed := testutil.Seed(t)
	const keys, perTable = 6000, 100
	db, _ := openMem(t, &Options{MaxOpenFiles: 16, L0CompactionTrigger: 1000, L0StopWritesTrigger: 2000})
	val := func(i int) []byte { return []byte(fmt.Sprintf("value-%d-%d", i, i*7)) }
	for i := 0; i < keys; i++ {
		require.NoError(t, db.Put([]byte(fmt.Sprintf("k%05d", (i*7919)%keys)), val((i*7919)%keys), NoSync))
		if i%perTable == perTable-1 {
			require.NoError(t, db.Flush())
		}
	}
	require.Greater(t, db.Metrics().Levels[0].NumFiles, int64(40), "many more L0 tables than open files")
	opensBefore := db.tables.opens.Load()

	var wrong, reads, absent atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(g)))
			for n := 0; ; n++ {
				if n%64 == 0 {
					select {
					case <-stop:
						return
					default:
					}
				}
				i := rng.IntN(keys)
				if n%2 == 1 {
					// An absent key: most tables' filters rule it
					// out without a reference on the table
					// (filterRulesOut), racing its eviction.
					if v, err := db.Get([]byte(fmt.Sprintf("k%05d-absent", i))); err != ErrNotFound {
						wrong.Add(1)
						t.Errorf("Get(k%05d-absent) = %q, %v; want ErrNotFound", i, v, err)
						return
					}
					reads.Add(1)
					absent.Add(1)
					continue
				}
				v, err := db.Get([]byte(fmt.Sprintf("k%05d", i)))
				if err != nil || string(v) != string(val(i)) {
					wrong.Add(1)
					t.Errorf("Get(k%05d) = %q, %v; want %q", i, v, err, val(i))
					return
				}
				reads.Add(1)
			}
		}()
	}
	// Compactions replace the L0 tables by L6 tables (deleting the inputs
	// and dropping them from the cache) while the readers run.
	for lo := 0; lo < keys; lo += keys / 6 {
		require.NoError(t, db.Compact([]byte(fmt.Sprintf("k%05d", lo)), []byte(fmt.Sprintf("k%05d", lo+keys/6))))
	}
	close(stop)
	wg.Wait()
	require.Zero(t, wrong.Load())
	require.Positive(t, reads.Load())
	require.Greater(t, db.tables.opens.Load()-opensBefore, int64(16), "tables were evicted and opened again during the reads")
	var negatives int64
	for _, l := range db.Metrics().Levels {
		negatives += l.Filter.Negatives
	}
	// Each absent Get probes at least one table, and at 10 bits a key
	// all but about 1% of probes are negative.
	require.Greater(t, negatives, absent.Load()*9/10, "the absent keys' probes were ruled out by filters")
	t.Logf("%d reads, %d table opens during them", reads.Load(), db.tables.opens.Load()-opensBefore)
}

// TestTableCacheSkipsClosedEntry: a lookup that finds a published entry
// whose last reference is gone (its reader closed or closing) must not use
// it, but open the table again.
func TestTableCacheSkipsClosedEntry(t *testing.T) {
	db, meta, e1 := evictedButPublished(t)
	e2, err := db.tables.get(meta)
	require.NoError(t, err)
	defer db.tables.release(e2)
	require.NotSame(t, e1, e2, "a closed entry is never handed out")
	require.True(t, e1.refs.Released())
}

// evictedButPublished opens a database holding "a" = "1" in one table,
// opens the table through the cache and evicts it (its reader closes: the
// cache's reference was the last), then publishes the closed entry in the
// table's metadata again, as a lookup that loaded it before the eviction
// sees it.
func evictedButPublished(t *testing.T) (*DB, *manifest.FileMetadata, *tableEntry) {
	db, _ := openMem(t, nil)
	require.NoError(t, db.Put([]byte("a"), []byte("1"), NoSync))
	require.NoError(t, db.Flush())
	meta := db.loadReadState().version.Levels(0)[0][0]
	e, err := db.tables.get(meta)
	require.NoError(t, err)
	db.tables.release(e)
	cur, _ := meta.TableCache.Load().(*tableEntry)
	require.Same(t, e, cur, "an open table is published in its metadata")

	db.tables.mu.Lock()
	db.tables.removeLocked(e)
	db.tables.mu.Unlock()
	require.True(t, e.refs.Released(), "the reader's close is under way")
	cur, _ = meta.TableCache.Load().(*tableEntry)
	require.Nil(t, cur, "eviction unpublishes")
	meta.TableCache.Store(e)
	return db, meta, e
}

// TestFilterRulesOutClosedEntry: a Get that rules a table out by its
// filter takes no reference on it, so it may probe the filter of a reader
// an eviction has closed meanwhile; the answer must still be right (the
// resident filter is ordinary memory, not the memory map Close releases).
func TestFilterRulesOutClosedEntry(t *testing.T) {
	db, meta, e := evictedButPublished(t)
	require.True(t, e.r.ExcludesResident([]byte("zz"), filter.HashKey([]byte("zz"))), "the closed reader's filter rules the key out")
	_, err := db.Get([]byte("zz"))
	require.ErrorIs(t, err, ErrNotFound)
	require.False(t, e.r.ExcludesResident([]byte("a"), filter.HashKey([]byte("a"))))
	meta.TableCache.Store((*tableEntry)(nil))
	v, err := db.Get([]byte("a"))
	require.NoError(t, err)
	require.Equal(t, "1", string(v))
}

// TestFilterRulesOutKeepsRangeTombstones: a table whose filter rules the
// key out still deletes it from the tables below with its range
// tombstones, on the path that takes no reference on it as on the other.
func TestFilterRulesOutKeepsRangeTombstones(t *testing.T) {
	db, _ := openMem(t, &Options{L0CompactionTrigger: 100, L0StopWritesTrigger: 200})
	require.NoError(t, db.Put([]byte("k"), []byte("old"), NoSync))
	require.NoError(t, db.Flush())
	require.NoError(t, db.Put([]byte("other"), []byte("x"), NoSync))
	require.NoError(t, db.DeleteRange([]byte("a"), []byte("m"), NoSync))
	require.NoError(t, db.Flush())
	l0 := db.loadReadState().version.Levels(0)[0]
	require.Len(t, l0, 2)
	newer := l0[0] // L0 is newest first
	for i := 0; i < 2; i++ {
		// The first Get opens and publishes the tables; the second finds
		// the newer one published and rules "k" out by its filter.
		_, err := db.Get([]byte("k"))
		require.ErrorIs(t, err, ErrNotFound, "Get %d", i)
	}
	e, _ := newer.TableCache.Load().(*tableEntry)
	require.NotNil(t, e, "the newer table is published open")
	require.True(t, e.r.ExcludesResident([]byte("k"), filter.HashKey([]byte("k"))), "its filter rules k out: the second Get took filterRulesOut")
	require.NotNil(t, e.r.RangeDels())
}
