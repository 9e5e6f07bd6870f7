package sieve

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sievedb/sieve/sstable"
	"github.com/stretchr/testify/require"
)

func TestMultiGetBasics(t *testing.T) {
	db, _ := openMem(t, &Options{Merger: appendMerger{}})
	vals, errs := db.MultiGet(nil)
	require.Empty(t, vals)
	require.Empty(t, errs)
	require.NotNil(t, vals)
	require.NoError(t, db.Put([]byte("a"), []byte("1"), nil))
	require.NoError(t, db.Put([]byte("c"), []byte("3"), nil))
	require.NoError(t, db.Flush())
	require.NoError(t, db.Merge([]byte("c"), []byte("x"), nil))
	require.NoError(t, db.Merge([]byte("m"), []byte("y"), nil))
	require.NoError(t, db.Delete([]byte("a"), nil))
	keys := [][]byte{[]byte("c"), []byte("a"), []byte("m"), []byte("c"), []byte("zz"), []byte("")}
	vals, errs = db.MultiGet(keys)
	require.Equal(t, "3,x", string(vals[0]))
	require.ErrorIs(t, errs[1], ErrNotFound)
	require.Equal(t, "y", string(vals[2]))
	require.Equal(t, "3,x", string(vals[3]))
	require.ErrorIs(t, errs[4], ErrNotFound)
	require.ErrorIs(t, errs[5], ErrNotFound)
	vals[0][0] = '!'
	require.Equal(t, "3,x", string(vals[3]), "a repeated key's values must not alias")

	s := db.NewSnapshot()
	require.NoError(t, db.Put([]byte("a"), []byte("new"), nil))
	vals, errs = s.MultiGet([][]byte{[]byte("a")})
	require.ErrorIs(t, errs[0], ErrNotFound)
	require.Nil(t, vals[0])
	require.NoError(t, s.Close())
	_, errs = s.MultiGet([][]byte{[]byte("a")})
	require.ErrorIs(t, errs[0], ErrClosed)

	m := db.Metrics()
	require.Equal(t, int64(2), m.PointLookups.MultiGets)
	require.Equal(t, int64(len(keys)+1), m.PointLookups.MultiGetKeys)
	require.Contains(t, m.String(), "multiget 2 calls, 7 keys")

	cf, err := db.OpenColumnFamily("other", nil)
	require.NoError(t, err)
	require.NoError(t, cf.Put([]byte("a"), []byte("cf"), nil))
	vals, errs = cf.MultiGet([][]byte{[]byte("a"), []byte("b")})
	require.Equal(t, "cf", string(vals[0]))
	require.ErrorIs(t, errs[1], ErrNotFound)
	s = db.NewSnapshot()
	vals, _ = s.MultiGetCF(cf, [][]byte{[]byte("a")})
	require.Equal(t, "cf", string(vals[0]))
	require.NoError(t, s.Close())

	require.NoError(t, db.Close())
	_, errs = db.MultiGet([][]byte{[]byte("a")})
	require.ErrorIs(t, errs[0], ErrClosed)
}

// TestMultiGetBatchesBlocks checks that keys sharing a data block share
// one fetch and that a table's filter is probed once per candidate key:
// MultiGet of 64 neighbouring keys in a compacted DB fetches far fewer
// blocks than 64 Gets do.
func TestMultiGetBatchesBlocks(t *testing.T) {
	db, _ := openMem(t, &Options{BlockSize: 4 << 10})
	for i := 0; i < 5000; i++ {
		require.NoError(t, db.Put([]byte(fmt.Sprintf("k%06d", i)), []byte(strings.Repeat("v", 20)), nil))
	}
	require.NoError(t, db.Flush())
	require.NoError(t, db.Compact(nil, nil))
	var keys [][]byte
	for i := 1000; i < 1064; i++ {
		keys = append(keys, []byte(fmt.Sprintf("k%06d", i)))
	}
	before := db.Metrics().PointLookups
	for _, k := range keys {
		_, err := db.Get(k)
		require.NoError(t, err)
	}
	mid := db.Metrics().PointLookups
	vals, errs := db.MultiGet(keys)
	after := db.Metrics().PointLookups
	for i := range keys {
		require.NoError(t, errs[i])
		require.Equal(t, strings.Repeat("v", 20), string(vals[i]))
	}
	gets, multi := mid.DataBlocksRead-before.DataBlocksRead, after.DataBlocksRead-mid.DataBlocksRead
	t.Logf("64 Gets: %d blocks, %d tables; MultiGet: %d blocks, %d tables", gets,
		mid.TablesProbed-before.TablesProbed, multi, after.TablesProbed-mid.TablesProbed)
	require.Equal(t, int64(64), gets)
	require.LessOrEqual(t, multi, int64(4), "neighbouring keys should share blocks")
	require.Less(t, after.TablesProbed-mid.TablesProbed, mid.TablesProbed-before.TablesProbed)
}

// TestMultiGetCorruptBlock flips a bit in one data block of a table: the
// keys of that block fail with ErrCorruption in MultiGet exactly as they
// do in Get, and every other key still reads its value.
func TestMultiGetCorruptBlock(t *testing.T) {
	const n = 3000
	fs, table := flushedDB(t, n)
	data, err := fs.ReadFile(table)
	require.NoError(t, err)
	f, err := fs.Open(table)
	require.NoError(t, err)
	r, err := sstable.NewReader(f, int64(len(data)), sstable.ReaderOptions{})
	require.NoError(t, err)
	var dataBlocks []sstable.BlockLocation
	for _, b := range r.Layout() {
		if b.Kind == "data" {
			dataBlocks = append(dataBlocks, b)
		}
	}
	require.NoError(t, r.Close())
	require.Greater(t, len(dataBlocks), 2)
	b := dataBlocks[len(dataBlocks)/2]
	require.NoError(t, fs.FlipBit(table, int64(b.Offset+b.Length/2), 3))
	db, err := Open("/db", &Options{FS: fs})
	require.NoError(t, err)
	defer db.Close()
	var keys [][]byte
	for i := 0; i < n; i += 7 {
		keys = append(keys, []byte(fmt.Sprintf("k%05d", i)))
	}
	vals, errs := db.MultiGet(keys)
	var bad, good int
	for i, k := range keys {
		v, err := db.Get(k)
		if err != nil {
			require.ErrorIs(t, err, ErrCorruption)
			require.ErrorIs(t, errs[i], ErrCorruption, "key %s", k)
			bad++
			continue
		}
		require.NoError(t, errs[i], "key %s", k)
		require.Equal(t, string(v), string(vals[i]))
		good++
	}
	t.Logf("%d keys failed with the block, %d read", bad, good)
	require.Positive(t, bad)
	require.Positive(t, good)
}
