package sieve

import (
	"fmt"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/sstable"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// flushedDB writes n keys, flushes them into one table and closes the DB.
func flushedDB(t *testing.T, n int) (*vfs.MemFS, string) {
	db, fs := openMem(t, nil)
	for i := 0; i < n; i++ {
		require.NoError(t, db.Put([]byte(fmt.Sprintf("k%05d", i)), []byte(fmt.Sprintf("value-%05d", i)), nil))
	}
	require.NoError(t, db.Flush())
	require.NoError(t, db.Close())
	names, err := fs.List("/db")
	require.NoError(t, err)
	for _, n := range names {
		if ty, _, ok := base.ParseFilename(n); ok && ty == base.FileTypeTable {
			return fs, "/db/" + n
		}
	}
	t.Fatal("no table")
	return nil, ""
}

// readEverything opens the DB on fs and reads every key; it returns the
// first error.
func readEverything(fs vfs.FS, n int) error {
	return readEverythingPrefix(fs, n, "value-")
}

func readEverythingPrefix(fs vfs.FS, n int, prefix string) error {
	db, err := Open("/db", &Options{FS: fs})
	if err != nil {
		return err
	}
	defer db.Close()
	for i := 0; i < n; i++ {
		v, err := db.Get([]byte(fmt.Sprintf("k%05d", i)))
		if err != nil {
			return err
		}
		if string(v) != fmt.Sprintf("%s%05d", prefix, i) {
			return fmt.Errorf("wrong value for k%05d: %q", i, v)
		}
	}
	return nil
}

// TestTableCorruptionThroughDB flips a bit in every block kind of a table
// (located with the sstable layout) and checks that reading through the DB
// reports ErrCorruption naming the table — never a wrong value, never a
// panic. A damaged filter block is caught by its checksum.
func TestTableCorruptionThroughDB(t *testing.T) {
	const n = 3000
	fs, table := flushedDB(t, n)
	require.NoError(t, readEverything(fs, n))
	data, err := fs.ReadFile(table)
	require.NoError(t, err)
	f, err := fs.Open(table)
	require.NoError(t, err)
	r, err := sstable.NewReader(f, int64(len(data)), sstable.ReaderOptions{})
	require.NoError(t, err)
	blocks := r.Layout()
	require.NoError(t, r.Close())
	kinds := map[string]bool{}
	for _, b := range blocks {
		for _, off := range []int64{int64(b.Offset), int64(b.Offset + b.Length/2), int64(b.Offset + b.Length - 1)} {
			c := fs.CrashClone(vfs.CrashOptions{})
			require.NoError(t, c.FlipBit(table, off, 5))
			err := readEverything(c, n)
			require.ErrorIs(t, err, ErrCorruption, "%s block at %d, flip at %d", b.Kind, b.Offset, off)
			kinds[b.Kind] = true
		}
	}
	t.Logf("block kinds damaged: %v", kinds)
	for _, k := range []string{"data", "index", "filter", "properties", "metaindex", "footer"} {
		require.True(t, kinds[k], "layout has no %s block", k)
	}
}

func TestMissingTableFailsOpen(t *testing.T) {
	fs, table := flushedDB(t, 100)
	require.NoError(t, fs.Remove(table))
	_, err := Open("/db", &Options{FS: fs})
	require.Error(t, err)
	require.Contains(t, err.Error(), "missing")
}

func TestManifestCorruptionFailsOpen(t *testing.T) {
	fs, _ := flushedDB(t, 100)
	names, err := fs.List("/db")
	require.NoError(t, err)
	var manifest string
	for _, n := range names {
		if ty, _, ok := base.ParseFilename(n); ok && ty == base.FileTypeManifest {
			manifest = "/db/" + n
		}
	}
	data, err := fs.ReadFile(manifest)
	require.NoError(t, err)
	// The last 19 bytes are the log's clean-close trailer (wal/FORMAT.md):
	// damage there loses nothing and reads as a torn tail.
	const trailer = 19
	for off := int64(0); off < int64(len(data)); off++ {
		c := fs.CrashClone(vfs.CrashOptions{})
		require.NoError(t, c.FlipBit(manifest, off, 1))
		if off >= int64(len(data))-trailer {
			require.NoError(t, readEverything(c, 100), "flip in the trailer at %d", off)
			continue
		}
		_, err := Open("/db", &Options{FS: c})
		require.ErrorIs(t, err, ErrCorruption, "flip at %d of %d", off, len(data))
	}
	// CURRENT too.
	cur, err := fs.ReadFile("/db/CURRENT")
	require.NoError(t, err)
	for off := int64(0); off < int64(len(cur)); off++ {
		c := fs.CrashClone(vfs.CrashOptions{})
		require.NoError(t, c.FlipBit("/db/CURRENT", off, 0))
		_, err := Open("/db", &Options{FS: c})
		require.Error(t, err, "CURRENT flip at %d", off)
	}
}
