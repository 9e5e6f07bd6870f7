package sieve

import (
	"fmt"
	"testing"

	"github.com/sievedb/sieve/internal/percpu"
	"github.com/sievedb/sieve/memtable"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// TestGetOptimisticPass drives Get's optimistic pass (getCF) on a read
// state it holds no reference on: answered from the memtable and from
// resident filters without pinning; failing with errReadStateRetired, not
// reading deleted tables, once the state is retired; and pinning, then
// releasing, a live state whose table it must read.
func TestGetOptimisticPass(t *testing.T) {
	db := openDB(t, &Options{FS: vfs.NewMem(), MemTableSize: 1 << 20})
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%06d", i)) }
	const n = 2000
	for i := 0; i < n; i += 2 { // even keys only: odd ones are absent
		require.NoError(t, db.Put(key(i), []byte(fmt.Sprintf("v%d", i)), NoSync))
	}
	require.NoError(t, db.Flush())
	require.NoError(t, db.Put(key(n), []byte("in the memtable"), NoSync))

	lookup := func(rs *readState, k []byte) (getState, error) {
		st := getState{key: k, hash: memtable.KeyHash(k), p: percpu.Index(), lazy: rs}
		err := db.lookupInto(&st, rs, 0, db.visibleSeq.Load())
		return st, err
	}

	// A live state: the memtable answers without a pin, and so does the
	// table's filter for most absent keys; a present key in the table
	// pins the state.
	rs := db.rs.Load()
	st, err := lookup(rs, key(n))
	require.NoError(t, err)
	require.True(t, st.found)
	require.Nil(t, st.pinned, "a memtable answer pinned the state")
	unpinned := 0
	for i := 1; i < n; i += 2 {
		st, err := lookup(rs, key(i))
		require.NoError(t, err)
		require.False(t, st.found)
		if st.pinned == nil {
			unpinned++
		}
		st.unpin()
	}
	require.Greater(t, unpinned, n/2*9/10, "absent keys the filter rules out should need no pin")
	st, err = lookup(rs, key(10))
	require.NoError(t, err)
	require.True(t, st.found)
	require.Equal(t, "v10", string(st.value))
	require.Same(t, rs, st.pinned)
	st.unpin()

	// Retire rs: a flush and a full compaction replace it, and its
	// tables are deleted once nothing references it.
	require.NoError(t, db.Flush())
	require.NoError(t, db.Compact(nil, nil))
	require.NotSame(t, rs, db.rs.Load())
	st, err = lookup(rs, key(10))
	require.ErrorIs(t, err, errReadStateRetired)
	require.Nil(t, st.pinned)
	// The memtable and filter answers stay valid on the retired state.
	st, err = lookup(rs, key(n))
	require.NoError(t, err)
	require.True(t, st.found)

	// Get itself answers through the current state.
	for i := 0; i <= n; i += 2 {
		v, err := db.Get(key(i))
		require.NoError(t, err, "key %d", i)
		if i < n {
			require.Equal(t, fmt.Sprintf("v%d", i), string(v))
		}
	}
	require.Zero(t, db.metrics.getRestarts.Load(), "no Get raced a retirement here")
}

// TestGetCountsResidentNegatives: a Get that a table's resident filter rules
// out counts one negative at the table's level and one table probed, as
// one that searched the table does (levelFilterCounters.residentNegatives).
func TestGetCountsResidentNegatives(t *testing.T) {
	db := openDB(t, &Options{FS: vfs.NewMem()})
	for i := 0; i < 1000; i++ {
		require.NoError(t, db.Put([]byte(fmt.Sprintf("key%06d", 2*i)), []byte("v"), NoSync))
	}
	require.NoError(t, db.Compact(nil, nil))
	before := db.Metrics()
	const gets = 500
	for i := 0; i < gets; i++ {
		_, err := db.Get([]byte(fmt.Sprintf("key%06d", 2*i+1)))
		require.ErrorIs(t, err, ErrNotFound)
	}
	after := db.Metrics()
	var lvl = -1
	for l := range after.Levels {
		if after.Levels[l].Filter.Checks > before.Levels[l].Filter.Checks {
			lvl = l
		}
	}
	require.NotEqual(t, -1, lvl, "no level's filter was checked")
	b, a := before.Levels[lvl].Filter, after.Levels[lvl].Filter
	require.EqualValues(t, gets, a.Checks-b.Checks)
	require.EqualValues(t, gets, (a.Negatives-b.Negatives)+(a.FalsePositives-b.FalsePositives))
	require.Greater(t, a.Negatives-b.Negatives, int64(gets*9/10))
	require.EqualValues(t, gets, after.PointLookups.TablesProbed-before.PointLookups.TablesProbed)
	require.EqualValues(t, gets, after.PointLookups.Gets-before.PointLookups.Gets)
}
