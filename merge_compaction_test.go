package sieve

import (
	"fmt"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// tableEntriesFor counts the entries of key in every live table of cf.
func tableEntriesFor(t *testing.T, db *DB, cf uint32, key []byte) (n int, kinds []base.Kind) {
	v := db.versions.Current()
	defer v.Unref()
	for _, files := range v.Levels(cf) {
		for _, f := range files {
			e, err := db.tables.get(f)
			require.NoError(t, err)
			it := e.r.NewIter(nil, nil)
			for ok := it.SeekGE(key); ok && string(it.Key().UserKey) == string(key); ok = it.Next() {
				n++
				kinds = append(kinds, it.Key().Kind())
			}
			require.NoError(t, it.Close())
			db.tables.release(e)
		}
	}
	return n, kinds
}

// TestMergeStackCollapsesInCompaction stacks 10,000 operands on one key
// with the memtable cap off: after Flush and Compact one value is left in
// the tables and Get reads it.
func TestMergeStackCollapsesInCompaction(t *testing.T) {
	db, _ := openMem(t, &Options{Merger: counterMerger{}, MaxSuccessiveMerges: -1})
	k := []byte("hot")
	for i := 1; i <= 10000; i++ {
		require.NoError(t, db.Merge(k, []byte("1"), nil))
	}
	st, err := db.lookup(0, k, db.visibleSeq.Load())
	require.NoError(t, err)
	require.Len(t, st.opEnds, 10000, "cap off: the memtable holds every operand")
	require.NoError(t, db.Flush())
	require.NoError(t, db.Compact(nil, nil))
	n, kinds := tableEntriesFor(t, db, 0, k)
	require.Equal(t, 1, n)
	require.Equal(t, []base.Kind{base.KindSet}, kinds, "collapsed at the bottom into a value")
	v, err := db.Get(k)
	require.NoError(t, err)
	require.Equal(t, "10000", string(v))
}

// TestMergeSnapshotBoundary: operands on both sides of an open snapshot
// are not merged together by compaction; the snapshot reads its own answer.
func TestMergeSnapshotBoundary(t *testing.T) {
	db, _ := openMem(t, &Options{Merger: appendMerger{}})
	k := []byte("k")
	require.NoError(t, db.Put(k, []byte("base"), nil))
	require.NoError(t, db.Merge(k, []byte("a"), nil))
	require.NoError(t, db.Merge(k, []byte("b"), nil))
	snap := db.NewSnapshot()
	require.NoError(t, db.Merge(k, []byte("c"), nil))
	require.NoError(t, db.Merge(k, []byte("d"), nil))
	snap2 := db.NewSnapshot()
	require.NoError(t, db.Merge(k, []byte("e"), nil))

	check := func() {
		v, err := snap.Get(k)
		require.NoError(t, err)
		require.Equal(t, "base,a,b", string(v))
		v, err = snap2.Get(k)
		require.NoError(t, err)
		require.Equal(t, "base,a,b,c,d", string(v))
		v, err = db.Get(k)
		require.NoError(t, err)
		require.Equal(t, "base,a,b,c,d,e", string(v))
	}
	check()
	require.NoError(t, db.Compact(nil, nil))
	check()
	_, kinds := tableEntriesFor(t, db, 0, k)
	require.Equal(t, []base.Kind{base.KindMerge, base.KindMerge, base.KindSet}, kinds,
		"one collapsed entry per snapshot stripe: e | c,d | base,a,b")
	require.NoError(t, snap.Close())
	require.NoError(t, snap2.Close())
	require.NoError(t, db.Compact(nil, nil))
	_, kinds = tableEntriesFor(t, db, 0, k)
	require.Equal(t, []base.Kind{base.KindSet}, kinds, "no snapshot left: one value")
	check2, err := db.Get(k)
	require.NoError(t, err)
	require.Equal(t, "base,a,b,c,d,e", string(check2))
}

// TestMergeErrorInCompaction: a merger that fails on one key leaves that
// key's operands uncollapsed (and counted); other keys collapse.
func TestMergeErrorInCompaction(t *testing.T) {
	db, _ := openMem(t, &Options{Merger: failingMerger{}})
	require.NoError(t, db.Merge([]byte("bad"), []byte("x"), nil))
	require.NoError(t, db.Merge([]byte("bad"), []byte("bad"), nil))
	require.NoError(t, db.Merge([]byte("good"), []byte("x"), nil))
	require.NoError(t, db.Merge([]byte("good"), []byte("y"), nil))
	require.NoError(t, db.Compact(nil, nil))
	require.Positive(t, db.Metrics().Compaction.MergeErrors)
	n, _ := tableEntriesFor(t, db, 0, []byte("bad"))
	require.Equal(t, 2, n, "operands copied through")
	_, err := db.Get([]byte("bad"))
	require.ErrorContains(t, err, "bad operand")
	v, err := db.Get([]byte("good"))
	require.NoError(t, err)
	require.Equal(t, "x,y", string(v))
	n, _ = tableEntriesFor(t, db, 0, []byte("good"))
	require.Equal(t, 1, n)
}

// TestMissingMergerBlocksCompaction: a family whose recorded merger is not
// supplied is not compacted (its operands could not be collapsed), and
// Compact says why; plain reads still work and writes do not deadlock.
func TestMissingMergerBlocksCompaction(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("/db", &Options{FS: fs, Merger: appendMerger{}, L0CompactionTrigger: 1000, L0StopWritesTrigger: 1000})
	require.NoError(t, err)
	for i := 0; i < 6; i++ {
		require.NoError(t, db.Merge([]byte("m"), []byte(fmt.Sprint(i)), nil))
		require.NoError(t, db.Put([]byte(fmt.Sprintf("p%d", i)), []byte("v"), nil))
		require.NoError(t, db.Flush())
	}
	require.NoError(t, db.Close())

	db, err = Open("/db", &Options{FS: fs, L0CompactionTrigger: 2, L0StopWritesTrigger: 4})
	require.NoError(t, err)
	require.ErrorIs(t, db.Compact(nil, nil), ErrNoMerger)
	for i := 0; i < 4; i++ {
		require.NoError(t, db.Put([]byte(fmt.Sprintf("q%d", i)), []byte("v"), nil))
		require.NoError(t, db.Flush())
	}
	m := db.Metrics()
	require.Zero(t, m.Compaction.Count+m.Compaction.Moves, "nothing compacted without the merger")
	require.GreaterOrEqual(t, m.Levels[0].NumFiles, int64(10))
	v, err := db.Get([]byte("p3"))
	require.NoError(t, err)
	require.Equal(t, "v", string(v))
	_, err = db.Get([]byte("m"))
	require.ErrorIs(t, err, ErrNoMerger)
	require.NoError(t, db.Close())

	db, err = Open("/db", &Options{FS: fs, Merger: appendMerger{}})
	require.NoError(t, err)
	require.NoError(t, db.Compact(nil, nil))
	v, err = db.Get([]byte("m"))
	require.NoError(t, err)
	require.Equal(t, "0,1,2,3,4,5", string(v))
	require.NoError(t, db.Close())
}
