package sieve

import (
	"fmt"
	"math/rand"
	"sync/atomic"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// subcompactionOpts make a manual compaction of a few hundred KiB run as
// three subcompactions, with no background compaction to get in the way.
func subcompactionOpts(fs vfs.FS) *Options {
	return &Options{FS: fs, TargetFileSize: 4 << 10, MaxSubcompactions: 3,
		L0CompactionTrigger: 50, L0StopWritesTrigger: 60}
}

func loadForSubcompaction(t *testing.T, db *DB) map[string]string {
	want := map[string]string{}
	for round := 0; round < 3; round++ {
		for i := 0; i < 3000; i++ {
			k := fmt.Sprintf("key%05d", (i*7919+round*13)%4000)
			v := fmt.Sprintf("r%d-%d-%090d", round, i, i)
			if i%17 == round {
				require.NoError(t, db.Delete([]byte(k), NoSync))
				delete(want, k)
				continue
			}
			require.NoError(t, db.Put([]byte(k), []byte(v), NoSync))
			want[k] = v
		}
		require.NoError(t, db.Flush())
	}
	return want
}

// requireContents checks the database against want with checkIterator
// (scans both ways, seeks, a random walk); some seeks must land inside
// the key range.
func requireContents(t *testing.T, db *DB, want map[string]string) {
	t.Helper()
	it := db.NewIter(nil)
	st := checkIterator(t, rand.New(rand.NewSource(1)), it, want, "", "")
	require.NoError(t, it.Close())
	st.requireInside(t)
}

// liveAndOnDiskTables returns the tables the current version names and
// the table files in the directory.
func liveAndOnDiskTables(t *testing.T, db *DB, fs vfs.FS) (live, onDisk []uint64) {
	v := db.versions.Current()
	defer v.Unref()
	for _, files := range v.Levels(0) {
		for _, f := range files {
			live = append(live, f.FileNum)
		}
	}
	names, err := fs.List("/db")
	require.NoError(t, err)
	for _, name := range names {
		if ft, num, ok := base.ParseFilename(name); ok && ft == base.FileTypeTable {
			onDisk = append(onDisk, num)
		}
	}
	return live, onDisk
}

// Compact splits a large manual compaction into key ranges written in
// parallel; the result holds exactly what a single run would.
func TestSubcompactions(t *testing.T) {
	mem := vfs.NewMem()
	db, err := Open("/db", subcompactionOpts(mem))
	require.NoError(t, err)
	want := loadForSubcompaction(t, db)
	snap := db.NewSnapshot()
	require.NoError(t, db.Put([]byte("key00001"), []byte("after snapshot"), nil))
	require.NoError(t, db.Compact(nil, nil))
	m := db.Metrics()
	require.EqualValues(t, 1, m.Compaction.Split, "the L0->L6 compaction ran as subcompactions:\n%s", m)
	require.NoError(t, db.CheckInvariants(true))
	// The snapshot still reads the value the compaction had to keep.
	sv, err := snap.Get([]byte("key00001"))
	if w, ok := want["key00001"]; ok {
		require.NoError(t, err)
		require.Equal(t, w, string(sv))
	} else {
		require.ErrorIs(t, err, ErrNotFound)
	}
	require.NoError(t, snap.Close())
	want["key00001"] = "after snapshot"
	requireContents(t, db, want)
	require.NoError(t, db.Close())

	db, err = Open("/db", subcompactionOpts(mem))
	require.NoError(t, err)
	requireContents(t, db, want)
	require.NoError(t, db.CheckInvariants(true))
	require.NoError(t, db.Close())
}

// One range failing (a table sync error in the middle of the compaction)
// stops the others; nothing is installed and every table any range wrote
// is removed; the data is intact, and a retry succeeds (the error went to
// the caller, so the retry does not get it again).
func TestSubcompactionFailureInstallsNothing(t *testing.T) {
	mem := vfs.NewMem()
	var armed atomic.Bool
	efs := vfs.NewErrorFS(mem, vfs.ErrorOptions{Nth: 5, Match: func(o vfs.Op, name string) bool {
		return armed.Load() && o == vfs.OpSync && fileKind(name) == "table"
	}})
	db, err := Open("/db", subcompactionOpts(efs))
	require.NoError(t, err)
	want := loadForSubcompaction(t, db)
	liveBefore, _ := liveAndOnDiskTables(t, db, mem)
	armed.Store(true)
	require.ErrorIs(t, db.Compact(nil, nil), vfs.ErrInjected)
	armed.Store(false)
	require.Zero(t, db.Metrics().Compaction.Split)
	live, onDisk := liveAndOnDiskTables(t, db, mem)
	require.ElementsMatch(t, liveBefore, live, "the failed compaction changed the version")
	require.ElementsMatch(t, live, onDisk, "tables left behind by the failed ranges")
	requireContents(t, db, want)
	require.NoError(t, db.CheckInvariants(true))

	// The caller got the error; the retry compacts (no stale error).
	require.NoError(t, db.Compact(nil, nil))
	require.EqualValues(t, 1, db.Metrics().Compaction.Split)
	requireContents(t, db, want)
	require.NoError(t, db.CheckInvariants(true))
	require.NoError(t, db.Close())
	db, err = Open("/db", subcompactionOpts(mem))
	require.NoError(t, err)
	requireContents(t, db, want)
	require.NoError(t, db.Compact(nil, nil))
	requireContents(t, db, want)
	require.NoError(t, db.CheckInvariants(true))
	require.NoError(t, db.Close())
}
