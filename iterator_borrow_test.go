package sieve

import (
	"fmt"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// Moving forward onto a Set, the iterator lends out the entry's value
// (no copy) and skips the key's older entries only at the next Next. The
// value is still right after that deferred skip crosses older versions and
// blocks, and a seek to bytes of the borrowed value (a chain of keys
// stored in values, followed while a second goroutine churns a small
// block cache) lands where a copy of those bytes would.
func TestIteratorBorrowedValue(t *testing.T) {
	db, _ := openMem(t, &Options{BlockCacheSize: 64 << 10, BlockSize: 512, L0CompactionTrigger: 100, L0StopWritesTrigger: 100})
	const n = 3000
	key := func(i int) string { return fmt.Sprintf("k%05d", i) }
	// Three versions of every key, in three tables and the memtable: the
	// newest (in the memtable for even keys) names the next key in a chain.
	for v := range 3 {
		for i := range n {
			val := fmt.Sprintf("old%d-%d", v, i)
			if v == 2 {
				val = key((i*7 + 1) % n)
			}
			if v == 2 && i%2 == 0 {
				continue
			}
			require.NoError(t, db.Put([]byte(key(i)), []byte(val), nil))
		}
		require.NoError(t, db.Flush())
	}
	for i := 0; i < n; i += 2 {
		require.NoError(t, db.Put([]byte(key(i)), []byte(key((i*7+1)%n)), nil))
	}

	// A forward scan sees each key once, with its newest value.
	it := db.NewIter(nil)
	count := 0
	for ok := it.First(); ok; ok = it.Next() {
		require.Equal(t, key(count), string(it.Key()))
		require.Equal(t, key((count*7+1)%n), string(it.Value()))
		count++
	}
	require.NoError(t, it.Error())
	require.Equal(t, n, count)

	// Seeking to the borrowed value copies it first.
	require.True(t, it.SeekGE([]byte(key(10))))
	require.True(t, it.atKey)
	v := it.Value()
	own := it.ownSeekKey(v[1:])
	require.NotEqual(t, addr(v[1:]), addr(own), "a key inside the borrowed value is copied")
	require.Equal(t, string(v[1:]), string(own))
	other := []byte(key(5))
	require.Equal(t, addr(other), addr(it.ownSeekKey(other)), "any other key is used as is")

	// Follow the chain by seeking to each value, while Gets evict blocks.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i = (i + 97) % n {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := db.Get([]byte(key(i))); err != nil {
				t.Error(err)
				return
			}
		}
	})
	at := 10
	for range 20000 {
		want := (at*7 + 1) % n
		require.True(t, it.SeekGE(it.Value()), "seek from %s", key(at))
		require.Equal(t, key(want), string(it.Key()))
		at = want
		if at%3 == 0 {
			// Step once, then back: the deferred skip and a direction change.
			if it.Next() {
				require.True(t, it.Prev())
				require.Equal(t, key(at), string(it.Key()))
			}
		}
	}
	close(stop)
	wg.Wait()
	require.NoError(t, it.Close())
	require.Positive(t, db.Metrics().BlockCache.Misses, "the cache churned")
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
