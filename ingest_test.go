package sieve

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// writeExternal writes the external table path on fs with keys
// <prefix><i> for i in [from, to) (formatted %05d) and values v<i>.<tag>.
func writeExternal(t testing.TB, fs vfs.FS, path, prefix string, from, to int, tag string) {
	t.Helper()
	w, err := NewExternalTableWriter(path, &Options{FS: fs, BlockSize: 512})
	require.NoError(t, err)
	for i := from; i < to; i++ {
		require.NoError(t, w.Set([]byte(fmt.Sprintf("%s%05d", prefix, i)), []byte(fmt.Sprintf("v%d.%s", i, tag))))
	}
	require.NoError(t, w.Close())
}

// extScan is a full scan of the default family, for before/after checks.
func extScan(t testing.TB, db *DB) map[string]string {
	t.Helper()
	out := map[string]string{}
	it := db.NewIter(nil)
	for ok := it.First(); ok; ok = it.Next() {
		out[string(it.Key())] = string(it.Value())
	}
	require.NoError(t, it.Close())
	return out
}

func extLSM(db *DB) string {
	v := db.versions.Current()
	defer v.Unref()
	return v.String()
}

// TestIngestRefusesBadInputs checks that each bad input is refused with
// ErrBadExternalTable before anything changes: the tree, the contents,
// the memtable (not flushed) and the manifest's next ingest.
func TestIngestRefusesBadInputs(t *testing.T) {
	db, fs := openMem(t, &Options{L0CompactionTrigger: 100, L0StopWritesTrigger: 200})
	require.NoError(t, fs.MkdirAll("/ext", 0o755))
	require.NoError(t, db.Put([]byte("k00001"), []byte("old"), nil))
	require.NoError(t, db.Flush())
	require.NoError(t, db.Put([]byte("k00002"), []byte("in the memtable"), nil))

	writeExternal(t, fs, "/ext/good", "k", 0, 2000, "good")
	writeExternal(t, fs, "/ext/corrupt", "k", 0, 2000, "corrupt")
	extFlipByte(t, fs, "/ext/corrupt", 3000) // inside a data block
	writeExternal(t, fs, "/ext/a", "k", 0, 10, "a")
	writeExternal(t, fs, "/ext/b", "k", 5, 20, "b")
	own := extCopyFile(t, fs, "/db/"+extFirstTable(t, db), "/ext/own")
	w, err := NewExternalTableWriter("/ext/unordered", &Options{FS: fs})
	require.NoError(t, err)
	require.NoError(t, w.Set([]byte("b"), nil))
	require.Error(t, w.Set([]byte("a"), nil), "out of order")
	require.Error(t, w.Set([]byte("b"), nil), "equal")
	require.NoError(t, w.Close())
	require.Error(t, w.Set([]byte("c"), nil), "after Close")

	before, shape, flushes := extScan(t, db), extLSM(db), db.Metrics().Flush.Count
	cases := map[string][]string{
		"corrupt block":      {"/ext/corrupt"},
		"overlapping inputs": {"/ext/a", "/ext/b"},
		"same file twice":    {"/ext/good", "/ext/good"},
		"a database's table": {own},
		"missing":            {"/ext/missing"},
		"one bad of two":     {"/ext/good", "/ext/corrupt"},
	}
	for name, paths := range cases {
		err := db.Ingest(paths)
		require.ErrorIs(t, err, ErrBadExternalTable, name)
		if name == "corrupt block" {
			require.ErrorIs(t, err, ErrCorruption)
		}
		require.Equal(t, before, extScan(t, db), name)
		require.Equal(t, shape, extLSM(db), name)
		require.Equal(t, flushes, db.Metrics().Flush.Count, "%s: the memtable was flushed", name)
	}
	require.NoError(t, db.Ingest([]string{"/ext/unordered"}), "the keys the writer took")
	require.NoError(t, db.Ingest([]string{"/ext/good"}))
	require.Equal(t, "v1.good", string(extGet(t, db, "k00001")))
	require.Equal(t, "v2.good", string(extGet(t, db, "k00002")), "newer than the memtable's write")
	require.ErrorIs(t, db.Ingest([]string{"/ext/good"}), ErrBadExternalTable, "already ingested")
	require.EqualValues(t, 2, db.Metrics().Ingest.Count)
	require.Contains(t, db.Metrics().String(), "ingest: 2 calls (1 copied)")
}

// TestIngestRemembersAcrossReopen checks that the manifest remembers
// ingested tables across reopens (and the manifest rotation each Open
// does), and that a column family ingests into its own keyspace with its
// prefix function.
func TestIngestRemembersAcrossReopen(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("/ext", 0o755))
	opts := &Options{FS: fs}
	db := openDB(t, opts)
	writeExternal(t, fs, "/ext/t1", "k", 0, 100, "t1")
	require.NoError(t, db.Ingest([]string{"/ext/t1"}))
	cf, err := db.OpenColumnFamily("cf", &ColumnFamilyOptions{Prefix: first4, PrefixName: "first4"})
	require.NoError(t, err)
	// Copied as it is (nothing overlaps it): the table's own prefixes
	// are the family's because it was written with the family's Prefix.
	w, err := NewExternalTableWriter("/ext/t2", &Options{FS: fs, Prefix: first4, PrefixName: "first4"})
	require.NoError(t, err)
	for i := 0; i < 100; i++ {
		require.NoError(t, w.Set([]byte(fmt.Sprintf("p%05d", i)), []byte(fmt.Sprintf("v%d.t2", i))))
	}
	require.NoError(t, w.Close())
	require.NoError(t, cf.Ingest([]string{"/ext/t2"}))
	require.NoError(t, db.Close())
	for i := 0; i < 2; i++ {
		db = openDB(t, opts)
		require.ErrorIs(t, db.Ingest([]string{"/ext/t1"}), ErrBadExternalTable)
		require.Equal(t, "v7.t1", string(extGet(t, db, "k00007")))
		_, err := db.Get([]byte("p00007"))
		require.ErrorIs(t, err, ErrNotFound, "the family's keys are not the default's")
		cf, err := db.OpenColumnFamily("cf", &ColumnFamilyOptions{Prefix: first4, PrefixName: "first4"})
		require.NoError(t, err)
		require.ErrorIs(t, cf.Ingest([]string{"/ext/t2"}), ErrBadExternalTable)
		it := cf.NewIter(nil)
		require.True(t, it.SeekPrefixGE([]byte("p000")))
		require.NoError(t, it.Close())
		m := db.Metrics().PrefixSeeks
		require.Zero(t, m.Unfiltered, "the ingested table holds the family's prefixes")
		require.Positive(t, m.Checks)
		require.NoError(t, db.Close())
	}
}

func extGet(t testing.TB, db *DB, k string) []byte {
	t.Helper()
	v, err := db.Get([]byte(k))
	require.NoError(t, err, k)
	return v
}

func extFlipByte(t testing.TB, fs vfs.FS, path string, off int) {
	t.Helper()
	data := extReadAll(t, fs, path)
	data[off] ^= 0x5a
	extWriteAll(t, fs, path, data)
}

func extCopyFile(t testing.TB, fs vfs.FS, from, to string) string {
	t.Helper()
	extWriteAll(t, fs, to, extReadAll(t, fs, from))
	return to
}

func extReadAll(t testing.TB, fs vfs.FS, path string) []byte {
	t.Helper()
	f, err := fs.Open(path)
	require.NoError(t, err)
	defer f.Close()
	n, err := f.Size()
	require.NoError(t, err)
	data := make([]byte, n)
	_, err = f.ReadAt(data, 0)
	require.NoError(t, err)
	return data
}

func extWriteAll(t testing.TB, fs vfs.FS, path string, data []byte) {
	t.Helper()
	f, err := fs.Create(path)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

// extFirstTable returns the file name of some table of the default family.
func extFirstTable(t testing.TB, db *DB) string {
	t.Helper()
	v := db.versions.Current()
	defer v.Unref()
	for _, files := range v.Levels(0) {
		for _, f := range files {
			return fmt.Sprintf("%06d.sst", f.FileNum)
		}
	}
	t.Fatal("no table")
	return ""
}

// TestIngestConcurrentSnapshots ingests tables of fresh keys while other
// goroutines write, take snapshots and read through them: a snapshot sees
// each Ingest's keys all or none, and the same each time it reads them
// (the copy path holds new snapshots back while it installs, the rewrite
// path gives the keys a sequence number above every snapshot's). Run
// with -race.
func TestIngestConcurrentSnapshots(t *testing.T) {
	db, fs := openMem(t, &Options{MemTableSize: 64 << 10})
	require.NoError(t, fs.MkdirAll("/ext", 0o755))
	const ingests, perTable = 40, 20
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var checks atomic.Int64
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := db.Put([]byte(fmt.Sprintf("a%05d", i%500)), []byte("w"), nil); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			s := db.NewSnapshot()
			j := rand.IntN(ingests)
			first := snapshotCount(t, s, j, perTable)
			time.Sleep(100 * time.Microsecond)
			if again := snapshotCount(t, s, j, perTable); again != first {
				t.Errorf("snapshot saw %d keys of ingest %d, then %d", first, j, again)
			}
			s.Close()
			checks.Add(1)
			time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond) // no snapshot open: room for the copy path
		}
	}()
	for j := 0; j < ingests; j++ {
		writeExternal(t, fs, fmt.Sprintf("/ext/%d", j), fmt.Sprintf("x%03d-", j), 0, perTable, "x")
		require.NoError(t, db.Ingest([]string{fmt.Sprintf("/ext/%d", j)}))
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	m := db.Metrics().Ingest
	t.Logf("%d Ingests (%d by copy), %d snapshot checks", m.Count, m.Copied, checks.Load())
	require.EqualValues(t, ingests, m.Count)
	require.Positive(t, checks.Load())
	require.Positive(t, m.Copied, "no Ingest took the copy path")
	require.Less(t, m.Copied, m.Count, "no Ingest took the rewrite path")
}

// snapshotCount returns how many of ingest j's keys s holds: all or none.
func snapshotCount(t *testing.T, s *Snapshot, j, n int) int {
	got := 0
	for i := 0; i < n; i++ {
		if _, err := s.Get([]byte(fmt.Sprintf("x%03d-%05d", j, i))); err == nil {
			got++
		} else if !errors.Is(err, ErrNotFound) {
			t.Error(err)
		}
	}
	if got != 0 && got != n {
		t.Errorf("snapshot holds %d of ingest %d's %d keys", got, j, n)
	}
	return got
}

// TestIngestSnapshotDuringInstall takes a snapshot at the moment a
// copy-path Ingest syncs its manifest edit (from the durability hook) and
// reads through it then and after the Ingest: it must read the same. The
// snapshot waits for the install (it then sees the keys both times); one
// taken before the install would see them appear.
func TestIngestSnapshotDuringInstall(t *testing.T) {
	db, fs := openMem(t, nil)
	require.NoError(t, fs.MkdirAll("/ext", 0o755))
	writeExternal(t, fs, "/ext/t", "x000-", 0, 20, "x")
	var (
		armed   atomic.Bool
		started atomic.Bool
		snap    *Snapshot
		first   int
		done    = make(chan struct{})
	)
	fs.SetDurabilityHook(func(op vfs.Op, name string) {
		if op != vfs.OpSync || !strings.Contains(name, "MANIFEST") || !armed.Load() || started.Swap(true) {
			return
		}
		go func() {
			snap = db.NewSnapshot()
			first = snapshotCount(t, snap, 0, 20)
			close(done)
		}()
		select { // give a snapshot that does not wait the time to be taken
		case <-done:
		case <-time.After(50 * time.Millisecond):
		}
	})
	armed.Store(true)
	require.NoError(t, db.Ingest([]string{"/ext/t"}))
	armed.Store(false)
	<-done
	defer snap.Close()
	require.True(t, started.Load())
	require.EqualValues(t, 1, db.Metrics().Ingest.Copied)
	require.Equal(t, first, snapshotCount(t, snap, 0, 20), "the snapshot's view changed")
}
