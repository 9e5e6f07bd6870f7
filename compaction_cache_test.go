package sieve

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCompactionDoesNotFillBlockCache: a compaction streams its inputs
// past the block cache (they are deleted when it commits), so the blocks
// readers keep there stay: after the compaction the cache holds only what
// reads put in it, and its hit and miss counters count only reads.
func TestCompactionDoesNotFillBlockCache(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{BlockCacheSize: 64 << 20, MemTableSize: 1 << 20, DisableSeekCompactions: true})
	require.NoError(t, err)
	defer db.Close()
	val := bytes.Repeat([]byte("v"), 100)
	for round := 0; round < 3; round++ {
		for i := 0; i < 20000; i++ {
			require.NoError(t, db.Put([]byte(fmt.Sprintf("key%08d", i*3+round)), val, NoSync))
		}
		require.NoError(t, db.Flush())
	}
	// Read a few keys: their blocks are the cache's only content.
	for i := 0; i < 10; i++ {
		_, err := db.Get([]byte(fmt.Sprintf("key%08d", i*3000)))
		require.NoError(t, err)
	}
	before := db.Metrics()
	require.Positive(t, before.BlockCache.Count)
	require.NoError(t, db.Compact(nil, nil))
	after := db.Metrics()
	require.Greater(t, after.Compaction.Count, before.Compaction.Count, "no compaction ran")
	require.Greater(t, after.Compaction.BytesRead, int64(1<<20), "the compaction read too little to tell")
	require.LessOrEqual(t, after.BlockCache.Count, before.BlockCache.Count,
		"the compaction's inputs went into the block cache (%d blocks before, %d after)", before.BlockCache.Count, after.BlockCache.Count)
	require.Equal(t, before.BlockCache.Hits, after.BlockCache.Hits)
	require.Equal(t, before.BlockCache.Misses, after.BlockCache.Misses)
}
