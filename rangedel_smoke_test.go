package sieve

import (
	"errors"
	"fmt"
	"testing"

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
