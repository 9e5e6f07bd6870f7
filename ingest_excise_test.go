package sieve

import (
	"fmt"
	"sync"
	"testing"

	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// exciseSetup writes k00000..k00897 (every third) through the memtable
// into tables of several levels and the memtable, and two external tables
// inside [k00300, k00600): k00310..k00349 and k00400..k00449. It returns
// the state before and the state an IngestAndExcise of [k00300, k00600)
// must leave.
func exciseSetup(t *testing.T, fs *vfs.MemFS) (*DB, []string, map[string]string, map[string]string) {
	require.NoError(t, fs.MkdirAll("/ext", 0o755))
	db, err := Open("/db", &Options{FS: fs, MemTableSize: 64 << 10, TargetFileSize: 8 << 10})
	require.NoError(t, err)
	before := map[string]string{}
	for i := range 300 {
		k, v := fmt.Sprintf("k%05d", i*3), fmt.Sprintf("old%d", i)
		require.NoError(t, db.Put([]byte(k), []byte(v), Sync))
		before[k] = v
		switch i {
		case 100:
			require.NoError(t, db.Compact(nil, nil))
		case 200:
			require.NoError(t, db.Flush())
		}
	}
	writeExternal(t, fs, "/ext/a", "k", 310, 350, "a")
	writeExternal(t, fs, "/ext/b", "k", 400, 450, "b")
	after := map[string]string{}
	for k, v := range before {
		if k < "k00300" || k >= "k00600" {
			after[k] = v
		}
	}
	for i := 310; i < 350; i++ {
		after[fmt.Sprintf("k%05d", i)] = fmt.Sprintf("v%d.a", i)
	}
	for i := 400; i < 450; i++ {
		after[fmt.Sprintf("k%05d", i)] = fmt.Sprintf("v%d.b", i)
	}
	return db, []string{"/ext/b", "/ext/a"}, before, after
}

// TestIngestAndExcise: the range holds exactly the inputs' keys afterwards
// (old versions in the memtable, L0 and deeper levels gone), keys outside
// it are untouched, a snapshot taken before still reads the old range,
// the tables pass CheckInvariants, and so does the state after a reopen.
func TestIngestAndExcise(t *testing.T) {
	fs := vfs.NewMem()
	db, paths, before, after := exciseSetup(t, fs)
	snap := db.NewSnapshot()
	require.NoError(t, db.IngestAndExcise(paths, []byte("k00300"), []byte("k00600")))
	require.Equal(t, after, extScan(t, db))
	for _, k := range []string{"k00303", "k00351", "k00597"} {
		_, err := db.Get([]byte(k))
		require.ErrorIs(t, err, ErrNotFound, k)
		v, err := snap.Get([]byte(k))
		require.NoError(t, err, k)
		require.Equal(t, before[k], string(v))
	}
	require.NoError(t, snap.Close())
	require.NoError(t, db.CheckInvariants(true))
	t.Logf("after:\n%s", extLSM(db))
	require.NoError(t, db.Compact(nil, nil))
	require.Equal(t, after, extScan(t, db))
	require.NoError(t, db.Close())
	db, err := Open("/db", &Options{FS: fs})
	require.NoError(t, err)
	defer db.Close()
	require.Equal(t, after, extScan(t, db))
	require.NoError(t, db.CheckInvariants(true))

	writeExternal(t, fs, "/ext/c", "k", 700, 710, "c")
	err = db.IngestAndExcise([]string{"/ext/c"}, []byte("k00300"), []byte("k00600"))
	require.ErrorIs(t, err, ErrBadExternalTable, "an input outside the range")
	require.NoError(t, db.IngestAndExcise(nil, []byte("k00000"), []byte("k00100")), "no inputs: a DeleteRange")
	_, err = db.Get([]byte("k00003"))
	require.ErrorIs(t, err, ErrNotFound)
}

// TestIngestAndExciseCrash takes a crash clone at every durability event
// of an IngestAndExcise (as TestIngestCrash) and checks that each opens
// to exactly the state before or after it, never the range half replaced.
func TestIngestAndExciseCrash(t *testing.T) {
	fs := vfs.NewMem()
	db, paths, before, after := exciseSetup(t, fs)
	modes := []vfs.UnsyncedMode{vfs.DropUnsynced, vfs.KeepUnsyncedPrefix, vfs.KeepUnsyncedSectors, vfs.ZeroUnsynced, vfs.GarbageUnsynced}
	var mu sync.Mutex
	var clones []*vfs.MemFS
	fs.SetDurabilityHook(func(op vfs.Op, name string) {
		mu.Lock()
		defer mu.Unlock()
		n := len(clones)
		clones = append(clones, fs.CrashClone(vfs.CrashOptions{Unsynced: modes[n%len(modes)], KeepUnsyncedFraction: 0.5,
			RandomDirOps: n%2 == 1, Seed: uint64(n)}))
	})
	require.NoError(t, db.IngestAndExcise(paths, []byte("k00300"), []byte("k00600")))
	fs.SetDurabilityHook(nil)
	require.NoError(t, db.Close())
	var nBefore, nAfter int
	for i, c := range clones {
		db, err := Open("/db", &Options{FS: c})
		require.NoError(t, err, "clone %d", i)
		require.NoError(t, db.CheckInvariants(true), "clone %d", i)
		switch got := fmt.Sprint(extScan(t, db)); got {
		case fmt.Sprint(before):
			nBefore++
		case fmt.Sprint(after):
			nAfter++
		default:
			t.Fatalf("clone %d: neither before nor after the IngestAndExcise", i)
		}
		require.NoError(t, db.Close())
	}
	t.Logf("%d crash points: %d recovered to before, %d to after", len(clones), nBefore, nAfter)
	require.Positive(t, nBefore)
	require.Positive(t, nAfter)
}

// TestIngestAndExciseNilStart: a nil start is the empty key, the start of
// the keyspace (a restore replaces a family's whole key range so): the
// older keys in the range are gone, not kept beside the input's.
func TestIngestAndExciseNilStart(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("/ext", 0o755))
	db, err := Open("/db", &Options{FS: fs})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Put([]byte("a"), []byte("old"), Sync))
	require.NoError(t, db.Put([]byte("k00999"), []byte("old"), Sync))
	writeExternal(t, fs, "/ext/a", "k", 310, 320, "a")
	require.NoError(t, db.IngestAndExcise([]string{"/ext/a"}, nil, []byte("z")))
	got := extScan(t, db)
	require.Len(t, got, 10)
	require.NotContains(t, got, "a")
	require.NotContains(t, got, "k00999")
}
