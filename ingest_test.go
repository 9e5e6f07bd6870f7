package sieve

import (
	"fmt"
	"testing"

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
	require.Contains(t, db.Metrics().String(), "ingest: 2 calls")
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
	writeExternal(t, fs, "/ext/t2", "p", 0, 100, "t2")
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
