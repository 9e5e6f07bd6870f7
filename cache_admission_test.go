package sieve

import (
	"fmt"
	"testing"

	"github.com/sievedb/sieve/internal/percpu"

	"github.com/stretchr/testify/require"
)

// TestBlockCacheAdmission: with the data many times the block cache, a
// pass of Gets over every key once fills the cache and then mostly passes
// it by (the doorkeeper keeps blocks read once out, counted in
// Metrics.BlockCache.NotAdmitted), while a few keys read again and again
// are cached and hit; every answer is right and the cache stays within its
// capacity.
func TestBlockCacheAdmission(t *testing.T) {
	db, _ := openMem(t, &Options{BlockCacheSize: 64 << 10, BlockSize: 1024})
	const n = 20000
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%07d", i)) }
	val := func(i int) []byte { return []byte(fmt.Sprintf("value-%d-%0100d", i, i)) }
	for i := 0; i < n; i++ {
		require.NoError(t, db.Put(key(i), val(i), NoSync))
	}
	require.NoError(t, db.Compact(nil, nil))
	check := func(i int) {
		v, err := db.Get(key(i))
		require.NoError(t, err)
		require.Equal(t, string(val(i)), string(v))
	}
	for i := 0; i < n; i += 3 {
		check((i * 7919) % n)
	}
	m := db.Metrics().BlockCache
	require.Positive(t, m.NotAdmitted, "blocks read once were kept out of the full cache")
	require.LessOrEqual(t, m.Size+m.Reserved, m.Capacity)
	hot := []int{11, 5003, 12007, 19999}
	// A block is cached at its second miss on one processor (each has
	// its own doorkeeper): Stripes+1 misses put two on one processor
	// however the goroutine moves, and one more round covers a
	// doorkeeper clearing between them.
	for range percpu.Stripes + 2 {
		for _, i := range hot {
			check(i)
		}
	}
	before := db.Metrics().BlockCache.Hits
	for _, i := range hot {
		check(i)
	}
	require.Equal(t, before+int64(len(hot)), db.Metrics().BlockCache.Hits, "keys read again and again are cached")
	t.Logf("block cache: %+v", db.Metrics().BlockCache)
}
