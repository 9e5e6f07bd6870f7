package sieve

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// ingestCrashSetup opens a database on fs with acknowledged, durable
// writes in tables and in the memtable (so Ingest has a flush to do), and
// writes two external tables: one overlapping the written keys, one not.
// It returns the database, the inputs (both with withOverlap, which takes
// the rewrite path; else the one that overlaps nothing, which takes the
// copy path) and the states before and after their Ingest.
func ingestCrashSetup(t *testing.T, fs *vfs.MemFS, withOverlap bool) (*DB, []string, map[string]string, map[string]string) {
	require.NoError(t, fs.MkdirAll("/ext", 0o755))
	db, err := Open("/db", &Options{FS: fs, MemTableSize: 64 << 10, TargetFileSize: 8 << 10})
	require.NoError(t, err)
	before := map[string]string{}
	for i := 0; i < 300; i++ {
		k, v := fmt.Sprintf("k%05d", i*3), fmt.Sprintf("old%d", i)
		require.NoError(t, db.Put([]byte(k), []byte(v), Sync))
		before[k] = v
		if i == 200 {
			require.NoError(t, db.Flush())
		}
	}
	writeExternal(t, fs, "/ext/overlap", "k", 100, 700, "a") // overlaps k00000..k00897
	writeExternal(t, fs, "/ext/apart", "z", 0, 500, "b")
	after := maps(before)
	for i := 0; i < 500; i++ {
		after[fmt.Sprintf("z%05d", i)] = fmt.Sprintf("v%d.b", i)
	}
	if !withOverlap {
		return db, []string{"/ext/apart"}, before, after
	}
	for i := 100; i < 700; i++ {
		after[fmt.Sprintf("k%05d", i)] = fmt.Sprintf("v%d.a", i)
	}
	return db, []string{"/ext/overlap", "/ext/apart"}, before, after
}

// TestIngestCrash takes a crash clone of the file system at every
// durability event of an Ingest (every sync, directory sync, create,
// rename and manifest write, from its goroutine and the flush's), with a
// damage mode for unsynced data that cycles through all five, and checks
// that each clone opens to exactly the state before the Ingest or after
// it, passes CheckInvariants(true), and then either refuses the inputs
// as already ingested (after) or ingests them (before). It runs for the
// rewrite path (an input overlaps the data, which is partly in the
// memtable, so the Ingest flushes) and the copy path.
func TestIngestCrash(t *testing.T) {
	for _, path := range []string{"rewrite", "copy"} {
		t.Run(path, func(t *testing.T) { testIngestCrash(t, path == "rewrite") })
	}
}

func testIngestCrash(t *testing.T, withOverlap bool) {
	fs := vfs.NewMem()
	db, paths, before, after := ingestCrashSetup(t, fs, withOverlap)
	seqBefore := db.visibleSeq.Load()
	modes := []vfs.UnsyncedMode{vfs.DropUnsynced, vfs.KeepUnsyncedPrefix, vfs.KeepUnsyncedSectors, vfs.ZeroUnsynced, vfs.GarbageUnsynced}
	var (
		mu     sync.Mutex
		clones []*vfs.MemFS
		events []string
	)
	fs.SetDurabilityHook(func(op vfs.Op, name string) {
		mu.Lock()
		defer mu.Unlock()
		n := len(clones)
		clones = append(clones, fs.CrashClone(vfs.CrashOptions{Unsynced: modes[n%len(modes)], KeepUnsyncedFraction: 0.5,
			RandomDirOps: n%2 == 1, Seed: uint64(n)}))
		events = append(events, fmt.Sprintf("%s %s", op, name))
	})
	require.NoError(t, db.Ingest(paths))
	fs.SetDurabilityHook(nil)
	require.Equal(t, withOverlap, db.visibleSeq.Load() > seqBefore, "the copy path takes no sequence number, the rewrite path one")
	require.NoError(t, db.Close())
	var nBefore, nAfter int
	for i, c := range clones {
		what := fmt.Sprintf("clone %d (after %s, %s)", i, events[i], modes[i%len(modes)])
		db, err := Open("/db", &Options{FS: c})
		require.NoError(t, err, what)
		require.NoError(t, db.CheckInvariants(true), what)
		got := extScan(t, db)
		switch {
		case fmt.Sprint(got) == fmt.Sprint(before):
			nBefore++
			require.NoError(t, db.Ingest(paths), "%s: retrying the Ingest", what)
			require.Equal(t, after, extScan(t, db), what)
		case fmt.Sprint(got) == fmt.Sprint(after):
			nAfter++
			require.ErrorIs(t, db.Ingest(paths), ErrBadExternalTable, "%s: ingested again", what)
		default:
			t.Fatalf("%s: neither the state before the Ingest nor after it (%d keys; before %d, after %d)", what, len(got), len(before), len(after))
		}
		require.NoError(t, db.Close(), what)
	}
	t.Logf("%d crash points: %d recovered to before the Ingest, %d to after", len(clones), nBefore, nAfter)
	require.Positive(t, nBefore)
	require.Positive(t, nAfter)
}

// TestIngestFaults fails, in turn, each file-system operation an Ingest
// makes (reads, writes, syncs, creates, renames), once: Ingest must
// return the error or succeed, the database stays consistent (read-only
// after a failed manifest write), and after a reopen it holds the state
// before the Ingest or after it — after whenever Ingest returned nil. It
// runs for both paths, as TestIngestCrash.
func TestIngestFaults(t *testing.T) {
	for _, path := range []string{"rewrite", "copy"} {
		t.Run(path, func(t *testing.T) { testIngestFaults(t, path == "rewrite") })
	}
}

func testIngestFaults(t *testing.T, withOverlap bool) {
	// Count the operations of one Ingest.
	base := vfs.NewMem()
	db, paths, before, after := ingestCrashSetup(t, base, withOverlap)
	require.NoError(t, db.Close())
	counter := vfs.NewErrorFS(base.CrashClone(vfs.CrashOptions{}), vfs.ErrorOptions{})
	db, err := Open("/db", &Options{FS: counter, MemTableSize: 64 << 10, TargetFileSize: 8 << 10})
	require.NoError(t, err)
	start := counter.Ops()
	require.NoError(t, db.Ingest(paths))
	total := counter.Ops() - start
	require.NoError(t, db.Close())
	var failed, succeeded int
	for n := int64(1); n <= total; n++ {
		fs := base.CrashClone(vfs.CrashOptions{})
		var armed atomic.Bool
		efs := vfs.NewErrorFS(fs, vfs.ErrorOptions{Match: func(vfs.Op, string) bool { return armed.Load() }, Nth: n})
		db, err := Open("/db", &Options{FS: efs, MemTableSize: 64 << 10, TargetFileSize: 8 << 10})
		require.NoError(t, err)
		armed.Store(true)
		ierr := db.Ingest(paths)
		armed.Store(false)
		db.Close()
		db, err = Open("/db", &Options{FS: fs})
		require.NoError(t, err, "fault %d: reopen", n)
		require.NoError(t, db.CheckInvariants(true), "fault %d", n)
		got := fmt.Sprint(extScan(t, db))
		if ierr == nil {
			succeeded++
			require.Equal(t, fmt.Sprint(after), got, "fault %d: Ingest succeeded", n)
		} else {
			failed++
			require.Contains(t, []string{fmt.Sprint(before), fmt.Sprint(after)}, got, "fault %d (%v)", n, ierr)
		}
		require.NoError(t, db.Close())
	}
	t.Logf("%d operations of an Ingest failed in turn: %d Ingests failed, %d succeeded (a failed read-ahead or close)", total, failed, succeeded)
	require.Positive(t, failed)
}
