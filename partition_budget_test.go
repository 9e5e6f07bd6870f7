package sieve

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/sstable"
	"github.com/stretchr/testify/require"
)

// tableForms opens every table in dir and counts those with partitioned
// index or filter blocks and those with whole ones.
func tableForms(t *testing.T, dir string) (partitioned, whole int) {
	names, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	for _, name := range names {
		f, err := os.Open(name)
		require.NoError(t, err)
		st, err := f.Stat()
		require.NoError(t, err)
		r, err := sstable.NewReader(f, st.Size(), sstable.ReaderOptions{})
		require.NoError(t, err, name)
		if p := r.Properties(); p.IndexPartitions > 0 || p.FilterPartitions > 0 {
			partitioned++
		} else {
			whole++
		}
		r.Close()
		f.Close()
	}
	return partitioned, whole
}

// TestPartitionAbove: with PartitionAbove, the tables written while the
// database's metadata is small keep whole index and filter blocks, those
// written once it exceeds the budget are partitioned, and a full
// compaction then partitions them all; every key stays readable.
func TestPartitionAbove(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{
		MemTableSize: 256 << 10, BlockCacheSize: 1 << 20, CacheIndexAndFilterBlocks: true,
		PartitionAbove: 48 << 10, MetadataBlockSize: 1024, BlockSize: 256, FilterPolicy: filter.Bloom(10),
		L0CompactionTrigger: 100, L0StopWritesTrigger: 200,
	}
	db, err := Open(dir, opts)
	require.NoError(t, err)
	key := func(i int) []byte { return fmt.Appendf(nil, "key%08d", i) }
	const perFlush, flushes = 4000, 12
	for f := 0; f < flushes; f++ {
		for i := f * perFlush; i < (f+1)*perFlush; i++ {
			require.NoError(t, db.Put(key(i), fmt.Appendf(nil, "value-%d", i), NoSync))
		}
		require.NoError(t, db.Flush())
	}
	part, whole := tableForms(t, dir)
	t.Logf("after %d flushes: %d partitioned, %d whole; metadata share %.4f of %d table bytes",
		flushes, part, whole, db.metadataShare(), db.liveTableBytes())
	require.Positive(t, whole, "the first tables, written under the budget, are partitioned")
	require.Positive(t, part, "no table partitioned once the metadata outgrew PartitionAbove")
	require.NoError(t, db.Compact(nil, nil))
	part, whole = tableForms(t, dir)
	require.Zero(t, whole, "a full compaction of an over-budget database left whole tables")
	require.Positive(t, part)
	for i := 0; i < perFlush*flushes; i += 97 {
		v, err := db.Get(key(i))
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("value-%d", i), string(v))
	}
	require.NoError(t, db.Close())
}
