package sieve

import (
	"testing"

	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// TestMemTableHugePagesOption checks which memtables advise their memory
// for huge pages: those of MemTableSize 8 MiB or more, unless
// Options.DisableMemTableHugePages, in every group (the first, recovered
// and rotated ones).
func TestMemTableHugePagesOption(t *testing.T) {
	for _, tc := range []struct {
		size    int64
		disable bool
		want    bool
	}{
		{0, false, true}, // the default, 32 MiB
		{8 << 20, false, true},
		{8<<20 - 1, false, false},
		{1 << 20, false, false},
		{0, true, false},
	} {
		fs := vfs.NewMem()
		o := &Options{FS: fs, MemTableSize: tc.size, DisableMemTableHugePages: tc.disable}
		db, err := Open("db", o)
		require.NoError(t, err)
		check := func(when string) {
			db.mu.Lock()
			got := db.mu.mem.hugePages
			db.mu.Unlock()
			require.Equal(t, tc.want, got, "MemTableSize %d, disable %v: %s", tc.size, tc.disable, when)
		}
		check("after open")
		require.NoError(t, db.Put([]byte("k"), []byte("v"), NoSync))
		require.NoError(t, db.Flush())
		check("after a flush")
		require.NoError(t, db.Put([]byte("k2"), []byte("v"), NoSync))
		require.NoError(t, db.Close())
		db, err = Open("db", o)
		require.NoError(t, err)
		check("after recovery")
		require.NoError(t, db.Close())
	}
}
