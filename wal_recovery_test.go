package sieve

import (
	"fmt"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// walFiles lists the WAL files in /db.
func walFiles(t *testing.T, fs *vfs.MemFS) []string {
	names, err := fs.List("/db")
	require.NoError(t, err)
	var out []string
	for _, n := range names {
		if ty, _, ok := base.ParseFilename(n); ok && ty == base.FileTypeLog {
			out = append(out, "/db/"+n)
		}
	}
	return out
}

// writeAndClose writes n keys into a fresh DB and closes it cleanly; the
// data stays in the WAL (no flush at Close).
func writeAndClose(t *testing.T, n int) *vfs.MemFS {
	db, fs := openMem(t, nil)
	for i := 0; i < n; i++ {
		require.NoError(t, db.Put([]byte(fmt.Sprintf("k%04d", i)), []byte(fmt.Sprintf("value-%04d", i)), nil))
	}
	require.NoError(t, db.Close())
	return fs
}

func TestWALMiddleCorruptionFailsOpen(t *testing.T) {
	fs := writeAndClose(t, 200)
	wals := walFiles(t, fs)
	require.Len(t, wals, 1)
	data, err := fs.ReadFile(wals[0])
	require.NoError(t, err)
	// Flip one bit at several places in the body of the cleanly closed log.
	for _, off := range []int64{64, int64(len(data)) / 3, int64(len(data)) / 2, int64(len(data)) - 40} {
		c := fs.CrashClone(vfs.CrashOptions{})
		require.NoError(t, c.FlipBit(wals[0], off, 3))
		_, err := Open("/db", &Options{FS: c})
		require.ErrorIs(t, err, ErrCorruption, "flip at %d", off)
		require.Contains(t, err.Error(), wals[0])
		require.Contains(t, err.Error(), "offset")
	}
}

func TestWALTornTailIsTruncated(t *testing.T) {
	fs := writeAndClose(t, 50)
	wals := walFiles(t, fs)
	require.Len(t, wals, 1)
	data, err := fs.ReadFile(wals[0])
	require.NoError(t, err)

	// Cut the log at every offset inside its last 200 bytes: the DB opens,
	// keeps a prefix of the writes, and truncates the log to its valid end.
	for cut := len(data) - 200; cut < len(data); cut++ {
		c := fs.CrashClone(vfs.CrashOptions{})
		require.NoError(t, c.Truncate(wals[0], int64(cut)))
		db, err := Open("/db", &Options{FS: c})
		require.NoError(t, err, "cut at %d", cut)
		present := 0
		for i := 0; i < 50; i++ {
			v, err := db.Get([]byte(fmt.Sprintf("k%04d", i)))
			if err != nil {
				require.ErrorIs(t, err, ErrNotFound)
				// Everything after a missing key is missing too.
				for j := i + 1; j < 50; j++ {
					_, err := db.Get([]byte(fmt.Sprintf("k%04d", j)))
					require.ErrorIs(t, err, ErrNotFound, "cut %d: k%04d present after a hole at %d", cut, j, i)
				}
				break
			}
			require.Equal(t, fmt.Sprintf("value-%04d", i), string(v))
			present++
		}
		require.GreaterOrEqual(t, present, 45, "cut %d", cut)
		require.NoError(t, db.Close())
		// A second open sees a clean log.
		db, err = Open("/db", &Options{FS: c})
		require.NoError(t, err)
		require.NoError(t, db.Close())
	}
}
