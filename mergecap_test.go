package sieve

import (
	"fmt"
	"testing"

	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// TestColumnFamilyMergeCap: a family's own MaxSuccessiveMerges replaces
// the DB's: off, its hot key keeps every operand in the memtable; at the
// DB's cap, the key's operands are collapsed; both read the same value.
func TestColumnFamilyMergeCap(t *testing.T) {
	db, err := Open("/db", &Options{FS: vfs.NewMem(), MaxSuccessiveMerges: 8})
	require.NoError(t, err)
	defer db.Close()
	capped, err := db.OpenColumnFamily("capped", &ColumnFamilyOptions{Merger: appendMerger{}})
	require.NoError(t, err)
	uncapped, err := db.OpenColumnFamily("uncapped", &ColumnFamilyOptions{Merger: appendMerger{}, MaxSuccessiveMerges: -1})
	require.NoError(t, err)
	collapsed := func() int64 { return db.Metrics().MemTable.MergesCollapsed }
	for i := range 40 {
		require.NoError(t, uncapped.Merge([]byte("k"), fmt.Appendf(nil, "%d,", i), nil))
	}
	require.Zero(t, collapsed(), "no cap: no collapse")
	for i := range 40 {
		require.NoError(t, capped.Merge([]byte("k"), fmt.Appendf(nil, "%d,", i), nil))
	}
	require.Positive(t, collapsed(), "the DB's cap")
	a, err := capped.Get([]byte("k"))
	require.NoError(t, err)
	b, err := uncapped.Get([]byte("k"))
	require.NoError(t, err)
	require.Equal(t, a, b)
}
