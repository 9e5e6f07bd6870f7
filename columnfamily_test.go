package sieve

import (
	"fmt"
	"testing"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/sstable"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

func TestColumnFamilies(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("/db", &Options{FS: fs})
	require.NoError(t, err)
	counters, err := db.OpenColumnFamily("counters", &ColumnFamilyOptions{Merger: counterMerger{}})
	require.NoError(t, err)
	other, err := db.OpenColumnFamily("other", nil)
	require.NoError(t, err)

	// Isolation: the same key in three families.
	require.NoError(t, db.Put([]byte("k"), []byte("default"), nil))
	require.NoError(t, counters.Merge([]byte("k"), []byte("5"), nil))
	require.NoError(t, other.Put([]byte("k"), []byte("other"), nil))
	require.ErrorIs(t, other.Merge([]byte("k"), []byte("1"), nil), ErrNoMerger)

	// A batch across families is atomic.
	b := db.NewBatch()
	require.NoError(t, b.Put([]byte("b"), []byte("1")))
	require.NoError(t, b.MergeCF(counters, []byte("k"), []byte("7")))
	require.NoError(t, b.DeleteCF(other, []byte("k")))
	require.NoError(t, db.Apply(b, Sync))

	check := func(db *DB, counters, other *ColumnFamily) {
		v, err := db.Get([]byte("k"))
		require.NoError(t, err)
		require.Equal(t, "default", string(v))
		v, err = counters.Get([]byte("k"))
		require.NoError(t, err)
		require.Equal(t, "12", string(v))
		_, err = other.Get([]byte("k"))
		require.ErrorIs(t, err, ErrNotFound)
	}
	check(db, counters, other)
	require.NoError(t, db.Flush())
	check(db, counters, other)
	require.NoError(t, db.Close())

	db = openDB(t, &Options{FS: fs})
	counters, err = db.OpenColumnFamily("counters", &ColumnFamilyOptions{Merger: counterMerger{}})
	require.NoError(t, err)
	other, err = db.OpenColumnFamily("other", nil)
	require.NoError(t, err)
	check(db, counters, other)
	_, err = db.OpenColumnFamily("counters", &ColumnFamilyOptions{Merger: appendMerger{}})
	require.Error(t, err)
}

// TestColumnFamilyFilterPolicyInProperties: each family's tables carry its
// own filter policy.
func TestColumnFamilyFilterPolicyInProperties(t *testing.T) {
	db, _ := openMem(t, &Options{FilterPolicy: filter.Bloom(10)})
	cu, err := db.OpenColumnFamily("cuckoo", &ColumnFamilyOptions{FilterPolicy: filter.Cuckoo(12)})
	require.NoError(t, err)
	none, err := db.OpenColumnFamily("nofilter", &ColumnFamilyOptions{FilterPolicy: filter.None})
	require.NoError(t, err)
	for i := 0; i < 100; i++ {
		k := []byte(fmt.Sprintf("k%03d", i))
		require.NoError(t, db.Put(k, k, nil))
		require.NoError(t, cu.Put(k, k, nil))
		require.NoError(t, none.Put(k, k, nil))
	}
	require.NoError(t, db.Flush())
	v := db.versions.Current()
	defer v.Unref()
	policy := func(cf *ColumnFamily, id uint32) (string, sstable.FilterState) {
		f := v.Levels(id)[0][0]
		e, err := db.tables.get(f)
		require.NoError(t, err)
		defer db.tables.release(e)
		return e.r.Properties().FilterPolicy, e.r.FilterState()
	}
	p, st := policy(nil, 0)
	require.Equal(t, filter.Bloom(10).Name(), p)
	require.Equal(t, sstable.FilterLoaded, st)
	p, st = policy(cu, cu.id)
	require.Equal(t, filter.Cuckoo(12).Name(), p)
	require.Equal(t, sstable.FilterLoaded, st)
	_, st = policy(none, none.id)
	require.Equal(t, sstable.FilterNone, st)
}
