package sieve

import (
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/sievedb/sieve/internal/manifest"
	"github.com/stretchr/testify/require"
)

func TestDeleteRangeSmoke(t *testing.T) {
	db, _ := openMem(t, &Options{Merger: appendMerger{}})
	k := func(i int) []byte { return []byte(fmt.Sprintf("k%03d", i)) }
	for i := 0; i < 100; i++ {
		require.NoError(t, db.Put(k(i), []byte("v"), nil))
	}
	snap := db.NewSnapshot()
	defer snap.Close()
	require.NoError(t, db.DeleteRange(k(10), k(50), nil))
	require.NoError(t, db.Merge(k(20), []byte("m"), nil))
	snapOpen := true
	check := func(stage string) {
		for i := 0; i < 100; i++ {
			v, err := db.Get(k(i))
			switch {
			case i == 20:
				require.NoError(t, err, stage)
				require.Equal(t, "m", string(v), stage)
			case i >= 10 && i < 50:
				require.True(t, errors.Is(err, ErrNotFound), "%s %d: %v %q", stage, i, err, v)
			default:
				require.NoError(t, err, stage)
			}
			if snapOpen {
				_, err = snap.Get(k(i))
				require.NoError(t, err, stage)
			}
		}
		it := db.NewIter(nil)
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		require.Equal(t, 61, n, stage)
		n = 0
		for ok := it.Last(); ok; ok = it.Prev() {
			n++
		}
		require.Equal(t, 61, n, stage)
		require.NoError(t, it.Close())
	}
	check("memtable")
	require.NoError(t, db.Flush())
	check("flushed")
	require.NoError(t, db.Compact(nil, nil))
	check("compacted")
	snap.Close()
	snapOpen = false
	require.NoError(t, db.Compact(nil, nil))
	check("compacted without snapshot")
	t.Log(db.Metrics().String())
}

// TestDeleteRangeTableDrops: compaction drops unread only the tables a
// tombstone covers whole with every entry older and no snapshot between;
// a table of newer writes inside the range, and tables a snapshot still
// sees, are read and kept as needed.
func TestDeleteRangeTableDrops(t *testing.T) {
	k := func(i int) []byte { return []byte(fmt.Sprintf("k%04d", i)) }
	val := make([]byte, 200)
	fill := func(db *DB) {
		for i := 100; i < 400; i++ {
			require.NoError(t, db.Put(k(i), val, nil))
		}
		require.NoError(t, db.Compact(nil, nil))
	}
	opts := func() *Options { return &Options{TargetFileSize: 4 << 10, MaxSubcompactions: 1} }

	db, _ := openMem(t, opts())
	fill(db)
	require.NoError(t, db.DeleteRange(k(100), k(400), nil))
	require.NoError(t, db.Flush())
	require.NoError(t, db.Put(k(250), []byte("new"), nil)) // newer than the tombstone, inside it
	require.NoError(t, db.Flush())
	require.NoError(t, db.Compact(nil, nil))
	m := db.Metrics()
	require.Positive(t, m.RangeDel.TablesDropped, "no covered table was dropped")
	for i := 100; i < 400; i++ {
		v, err := db.Get(k(i))
		if i == 250 {
			require.NoError(t, err)
			require.Equal(t, "new", string(v))
		} else {
			require.ErrorIs(t, err, ErrNotFound, "key %d", i)
		}
	}

	db2, _ := openMem(t, opts())
	fill(db2)
	snap := db2.NewSnapshot()
	require.NoError(t, db2.DeleteRange(k(100), k(400), nil))
	require.NoError(t, db2.Compact(nil, nil))
	require.Zero(t, db2.Metrics().RangeDel.TablesDropped, "a table a snapshot sees was dropped")
	for i := 100; i < 400; i++ {
		_, err := snap.Get(k(i))
		require.NoError(t, err, "snapshot lost key %d", i)
		_, err = db2.Get(k(i))
		require.ErrorIs(t, err, ErrNotFound)
	}
	require.NoError(t, snap.Close())
	// The tables kept for the snapshot hold the tombstone (as their
	// newest entry): they are read, and their entries dropped.
	dropped := db2.Metrics().RangeDel.KeysDropped
	require.NoError(t, db2.Compact(nil, nil))
	require.Greater(t, db2.Metrics().RangeDel.KeysDropped, dropped)
	require.Zero(t, db2.Metrics().Levels[manifest.NumLevels-1].NumFiles, "released: the covered entries go")
}

// TestDeleteRangeSubcompactions: a manual compaction split into
// subcompactions with range tombstones straddling their boundaries (kept
// by a snapshot) writes tables that never share a user key, and reads
// stay right with and without the snapshot.
func TestDeleteRangeSubcompactions(t *testing.T) {
	db, _ := openMem(t, &Options{TargetFileSize: 8 << 10, MaxSubcompactions: 4})
	k := func(i int) []byte { return []byte(fmt.Sprintf("k%05d", i)) }
	val := make([]byte, 200)
	for i := 0; i < 4000; i++ {
		require.NoError(t, db.Put(k(i), val, nil))
	}
	require.NoError(t, db.Compact(nil, nil))
	for i := 0; i < 4000; i += 700 {
		require.NoError(t, db.Put(k(i+1), val, nil))
	}
	snap := db.NewSnapshot()
	defer snap.Close()
	ranges := [][2]int{{100, 1900}, {1500, 2600}, {3000, 3990}}
	for _, r := range ranges {
		require.NoError(t, db.DeleteRange(k(r[0]), k(r[1]), nil))
	}
	deleted := func(i int) bool {
		for _, r := range ranges {
			if i >= r[0] && i < r[1] {
				return true
			}
		}
		return false
	}
	split := db.Metrics().Compaction.Split
	require.NoError(t, db.Compact(nil, nil))
	require.Greater(t, db.Metrics().Compaction.Split, split, "the compaction was not split")
	require.NoError(t, db.CheckInvariants(true))
	for i := 0; i < 4000; i++ {
		_, err := db.Get(k(i))
		if deleted(i) {
			require.ErrorIs(t, err, ErrNotFound, "key %d", i)
		} else {
			require.NoError(t, err, "key %d", i)
		}
		_, err = snap.Get(k(i))
		require.NoError(t, err, "snapshot key %d", i)
	}
	n := 0
	it := db.NewIter(nil)
	for ok := it.Last(); ok; ok = it.Prev() {
		n++
	}
	require.NoError(t, it.Close())
	want := 0
	for i := 0; i < 4000; i++ {
		if !deleted(i) {
			want++
		}
	}
	require.Equal(t, want, n)
}

// genMetaRangeDel is TestMetamorphic's DeleteRange of up to 30 keys.
func genMetaRangeDel(rng *rand.Rand) metaOp {
	n := rng.Intn(600)
	return metaOp{kind: "deleterange", key: fmt.Sprintf("k%04d", n), hi: fmt.Sprintf("k%04d", n+rng.Intn(30))}
}

// deleteRange applies a metamorphic DeleteRange (in the family under test).
func (r *metaRun) deleteRange(op metaOp) error {
	if r.cf != nil {
		return r.cf.DeleteRange([]byte(op.key), []byte(op.hi), nil)
	}
	return r.db.DeleteRange([]byte(op.key), []byte(op.hi), nil)
}

// TestDeleteRangeBadInput: reversed ranges are ErrInvalidRange, empty ones
// write nothing; column families delete only their own keys, also from
// batches, and the WAL replays range deletions.
func TestDeleteRangeBadInput(t *testing.T) {
	db, fs := openMem(t, nil)
	require.ErrorIs(t, db.DeleteRange([]byte("b"), []byte("a"), nil), ErrInvalidRange)
	require.NoError(t, db.DeleteRange([]byte("a"), []byte("a"), nil))
	b := db.NewBatch()
	require.NoError(t, b.DeleteRange([]byte("a"), []byte("a")))
	require.Zero(t, b.Len(), "an empty range adds no entry")
	require.ErrorIs(t, b.DeleteRange([]byte("z"), []byte("a")), ErrInvalidRange)
	require.ErrorIs(t, db.Apply(b, nil), ErrInvalidRange, "the batch keeps its first error")
	require.Zero(t, db.Metrics().RangeDel.Written)

	cf, err := db.OpenColumnFamily("other", nil)
	require.NoError(t, err)
	for _, k := range []string{"a", "b", "c"} {
		require.NoError(t, db.Put([]byte(k), []byte("d"), nil))
		require.NoError(t, cf.Put([]byte(k), []byte("o"), nil))
	}
	require.ErrorIs(t, cf.DeleteRange([]byte("c"), []byte("a"), nil), ErrInvalidRange)
	require.NoError(t, cf.DeleteRange([]byte("a"), []byte("b"), nil))
	b = db.NewBatch()
	require.NoError(t, b.DeleteRangeCF(cf, []byte("b"), []byte("c")))
	require.NoError(t, b.DeleteRange([]byte("c"), []byte("d")))
	require.NoError(t, db.Apply(b, nil))
	expect := func(when string, get func([]byte) ([]byte, error), want map[string]string) {
		for k, w := range want {
			v, err := get([]byte(k))
			if w == "" {
				require.ErrorIs(t, err, ErrNotFound, "%s %s", when, k)
			} else {
				require.Equal(t, w, string(v), "%s %s", when, k)
			}
		}
	}
	check := func(when string) {
		expect(when+" default", db.Get, map[string]string{"a": "d", "b": "d", "c": ""})
		expect(when+" cf", cf.Get, map[string]string{"a": "", "b": "", "c": "o"})
	}
	check("memtable")
	require.EqualValues(t, 3, db.Metrics().RangeDel.Written)
	require.Contains(t, db.Metrics().String(), "range deletes: 3 written")
	// Reopen without a flush: the WAL replays the range deletions.
	require.NoError(t, db.Close())
	db, err = Open("/db", &Options{FS: fs})
	require.NoError(t, err)
	defer db.Close()
	cf, err = db.OpenColumnFamily("other", nil)
	require.NoError(t, err)
	check("replayed")
	require.NoError(t, db.Compact(nil, nil))
	require.NoError(t, cf.Compact(nil, nil))
	check("compacted")
	require.NoError(t, db.CheckInvariants(true))
}
