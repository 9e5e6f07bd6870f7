package sieve

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// tableFiles lists the table numbers in /db.
func tableFiles(t *testing.T, fs vfs.FS) map[uint64]bool {
	t.Helper()
	names, err := fs.List("/db")
	require.NoError(t, err)
	out := map[uint64]bool{}
	for _, n := range names {
		if ft, num, ok := base.ParseFilename(n); ok && ft == base.FileTypeTable {
			out[num] = true
		}
	}
	return out
}

func TestDropColumnFamily(t *testing.T) {
	db, fs := openMem(t, &Options{})
	cf, err := db.OpenColumnFamily("a", &ColumnFamilyOptions{Merger: appendMerger{}})
	require.NoError(t, err)
	other, err := db.OpenColumnFamily("b", nil)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "default"}, db.ColumnFamilies())
	for i := 0; i < 100; i++ {
		require.NoError(t, cf.Put(fmt.Appendf(nil, "k%03d", i), []byte("old"), nil))
	}
	require.NoError(t, db.Flush())
	require.NoError(t, cf.Put([]byte("unflushed"), []byte("old"), nil)) // only in the WAL and memtable
	require.NoError(t, other.Put([]byte("k"), []byte("b"), nil))
	built := db.NewBatch()
	require.NoError(t, built.PutCF(cf, []byte("x"), []byte("y")))

	require.ErrorIs(t, db.DropColumnFamily(&ColumnFamily{db: db, id: 0, name: "default"}), ErrDropDefault)
	require.NoError(t, db.DropColumnFamily(cf))
	require.ErrorIs(t, db.DropColumnFamily(cf), ErrColumnFamilyDropped)
	require.Equal(t, []string{"b", "default"}, db.ColumnFamilies())
	_, err = cf.Get([]byte("k000"))
	require.ErrorIs(t, err, ErrColumnFamilyDropped)
	require.ErrorIs(t, cf.Put([]byte("k"), nil, nil), ErrColumnFamilyDropped)
	require.ErrorIs(t, cf.Delete([]byte("k"), nil), ErrColumnFamilyDropped)
	require.ErrorIs(t, cf.Merge([]byte("k"), nil, nil), ErrColumnFamilyDropped)
	require.ErrorIs(t, cf.Compact(nil, nil), ErrColumnFamilyDropped)
	require.ErrorIs(t, cf.NewIter(nil).Error(), ErrColumnFamilyDropped)
	_, errs := cf.MultiGet([][]byte{[]byte("k")})
	require.ErrorIs(t, errs[0], ErrColumnFamilyDropped)
	require.ErrorIs(t, db.NewBatch().PutCF(cf, []byte("k"), nil), ErrColumnFamilyDropped)
	require.ErrorIs(t, db.Apply(built, nil), ErrColumnFamilyDropped, "a batch built before the drop")
	s := db.NewSnapshot()
	_, err = s.GetCF(cf, []byte("k000"))
	require.ErrorIs(t, err, ErrColumnFamilyDropped)
	s.Close()

	// A new family of the same name is new and empty, and survives a
	// reopen whose WAL replay skips the dropped family's records.
	again, err := db.OpenColumnFamily("a", nil)
	require.NoError(t, err)
	require.NotEqual(t, cf.id, again.id)
	_, err = again.Get([]byte("k000"))
	require.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, again.Put([]byte("new"), []byte("1"), nil))
	require.NoError(t, db.Close())
	for range 2 { // the second open reads a manifest rotated by the first
		db, err = Open("/db", &Options{FS: fs})
		require.NoError(t, err)
		require.Equal(t, []string{"a", "b", "default"}, db.ColumnFamilies())
		a, err := db.OpenColumnFamily("a", nil)
		require.NoError(t, err)
		require.Equal(t, again.id, a.id)
		checkCFContents(t, a, map[string]string{"new": "1"})
		b, err := db.OpenColumnFamily("b", nil)
		require.NoError(t, err)
		checkCFContents(t, b, map[string]string{"k": "b"})
		require.NoError(t, db.CheckInvariants(true))
		require.NoError(t, db.Close())
	}
	// The new family's ID outlives a drop of the highest ID too.
	db, err = Open("/db", &Options{FS: fs})
	require.NoError(t, err)
	defer db.Close()
	a, err := db.OpenColumnFamily("a", nil)
	require.NoError(t, err)
	require.NoError(t, db.DropColumnFamily(a))
	c, err := db.OpenColumnFamily("c", nil)
	require.NoError(t, err)
	require.Greater(t, c.id, a.id)
}

// checkCFContents checks that cf holds exactly want.
func checkCFContents(t *testing.T, cf *ColumnFamily, want map[string]string) {
	t.Helper()
	it := cf.NewIter(nil)
	got := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	require.NoError(t, it.Close())
	require.Equal(t, want, got)
}

// TestDropColumnFamilyTablesOutliveReaders checks that a dropped family's
// tables stay while an iterator opened before the drop reads them and are
// deleted when it closes.
func TestDropColumnFamilyTablesOutliveReaders(t *testing.T) {
	db, fs := openMem(t, &Options{})
	cf, err := db.OpenColumnFamily("a", nil)
	require.NoError(t, err)
	want := map[string]string{}
	for i := 0; i < 3; i++ {
		for j := 0; j < 50; j++ {
			k := fmt.Sprintf("k%d-%02d", i, j)
			require.NoError(t, cf.Put([]byte(k), []byte(strings.Repeat("v", j)), nil))
			want[k] = strings.Repeat("v", j)
		}
		require.NoError(t, db.Flush())
	}
	require.NoError(t, db.Put([]byte("d"), []byte("1"), nil))
	require.NoError(t, db.Flush())
	before := tableFiles(t, fs)
	it := cf.NewIter(nil)
	require.NoError(t, db.DropColumnFamily(cf))
	require.Equal(t, before, tableFiles(t, fs), "tables deleted under an open iterator")
	got := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	require.NoError(t, it.Error())
	require.Equal(t, want, got)
	require.NoError(t, it.Close())
	after := tableFiles(t, fs)
	require.Len(t, after, 1, "the dropped family's tables outlived their last reader")
	v, err := db.Get([]byte("d"))
	require.NoError(t, err)
	require.Equal(t, "1", string(v))
}

// TestDropColumnFamilyCrash takes a crash clone at every durability event
// of DropColumnFamily (each sync, directory sync, write, rename, create
// and remove) in each unsynced-data mode, and checks that every clone
// recovers to before the drop (the family there with all its data) or
// after it (the family gone), with the default family intact.
func TestDropColumnFamilyCrash(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("/db", &Options{FS: fs})
	require.NoError(t, err)
	cf, err := db.OpenColumnFamily("a", nil)
	require.NoError(t, err)
	want := map[string]string{}
	for i := 0; i < 200; i++ {
		k := fmt.Sprintf("k%03d", i)
		require.NoError(t, cf.Put([]byte(k), []byte("v"), nil))
		want[k] = "v"
		if i == 100 {
			require.NoError(t, db.Flush())
		}
	}
	require.NoError(t, db.Put([]byte("d"), []byte("1"), Sync))
	var clones []*vfs.MemFS
	var events []string
	fs.SetDurabilityHook(func(op vfs.Op, name string) {
		for _, mode := range []vfs.UnsyncedMode{vfs.DropUnsynced, vfs.KeepUnsyncedPrefix, vfs.GarbageUnsynced} {
			clones = append(clones, fs.CrashClone(vfs.CrashOptions{Unsynced: mode}))
		}
		events = append(events, op.String()+" "+name)
	})
	require.NoError(t, db.DropColumnFamily(cf))
	fs.SetDurabilityHook(nil)
	clones = append(clones, fs.CrashClone(vfs.CrashOptions{}))
	require.NoError(t, db.Close())
	t.Logf("events during DropColumnFamily: %v", events)
	require.NotEmpty(t, events)
	var present, gone int
	for i, c := range clones {
		db, err := Open("/db", &Options{FS: c})
		require.NoError(t, err, "clone %d", i)
		v, err := db.Get([]byte("d"))
		require.NoError(t, err, "clone %d", i)
		require.Equal(t, "1", string(v))
		if names := db.ColumnFamilies(); len(names) == 2 {
			h, err := db.OpenColumnFamily("a", nil)
			require.NoError(t, err)
			checkCFContents(t, h, want)
			present++
		} else {
			require.Equal(t, []string{"default"}, names, "clone %d", i)
			gone++
		}
		require.NoError(t, db.CheckInvariants(true), "clone %d", i)
		require.NoError(t, db.Close())
	}
	t.Logf("%d clones: %d before the drop, %d after", len(clones), present, gone)
	require.Positive(t, present)
	require.Positive(t, gone)
}

// TestDropColumnFamilyDuringCompaction drops a family while a compaction
// of it is writing its output: the compaction's edit is pruned (no table
// added to a family that is gone), its output table is removed, and the
// DB stays writable with consistent levels.
func TestDropColumnFamilyDuringCompaction(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("/db", &Options{FS: fs, L0CompactionTrigger: 20, L0StopWritesTrigger: 40})
	require.NoError(t, err)
	defer db.Close()
	cf, err := db.OpenColumnFamily("a", nil)
	require.NoError(t, err)
	for round := 0; round < 3; round++ {
		for i := 0; i < 100; i++ {
			require.NoError(t, cf.Put(fmt.Appendf(nil, "k%03d", i), fmt.Appendf(nil, "v%d", round), nil))
		}
		require.NoError(t, db.Flush())
	}
	require.NoError(t, db.Put([]byte("d"), []byte("1"), nil))
	require.NoError(t, db.Flush())
	blocked, release := make(chan string), make(chan struct{})
	var once sync.Once
	fs.SetDurabilityHook(func(op vfs.Op, name string) {
		if op == vfs.OpCreate && strings.HasSuffix(name, ".sst") {
			once.Do(func() {
				blocked <- name
				<-release
			})
		}
	})
	done := make(chan error)
	go func() { done <- cf.Compact(nil, nil) }()
	output := <-blocked
	require.NoError(t, db.DropColumnFamily(cf))
	close(release)
	require.NoError(t, <-done)
	fs.SetDurabilityHook(nil)
	_, err = fs.Stat(output)
	require.ErrorIs(t, err, os.ErrNotExist, "the compaction's output for the dropped family was left behind")
	require.Len(t, tableFiles(t, fs), 1, "only the default family's table remains")
	require.NoError(t, db.Put([]byte("e"), []byte("2"), Sync))
	require.NoError(t, db.CheckInvariants(true))
}
