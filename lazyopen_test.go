package sieve

import (
	"testing"

	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// TestOpenReadsNoTable: opening a database opens none of its tables (no
// index or filter is read); a Get opens only the tables it probes, and a
// table stays open for the next one.
func TestOpenReadsNoTable(t *testing.T) {
	fs := vfs.NewMem()
	o := &Options{FS: fs, MemTableSize: 64 << 10, TargetFileSize: 16 << 10, L0CompactionTrigger: 8}
	db, err := Open("db", o)
	require.NoError(t, err)
	loadCharged(t, db, 4000)
	require.NoError(t, db.Compact(nil, nil))
	tables := db.Metrics().Levels[6].NumFiles
	require.Greater(t, tables, int64(10))
	require.NoError(t, db.Close())

	db, err = Open("db", o)
	require.NoError(t, err)
	defer db.Close()
	require.Zero(t, db.tables.opens.Load(), "Open opened tables")
	v, err := db.Get(chargedKey(1234))
	require.NoError(t, err)
	require.Equal(t, chargedValue(1234, 0), v)
	require.EqualValues(t, 1, db.tables.opens.Load(), "a Get in L6 opens the one table holding its key")
	_, err = db.Get(chargedKey(1235))
	require.NoError(t, err)
	require.EqualValues(t, 1, db.tables.opens.Load())
}
