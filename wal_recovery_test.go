package sieve

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/vfs"
	"github.com/sievedb/sieve/wal"
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

// writeAndKill writes n keys with Sync into a fresh DB and then the process
// "dies": no Close, so the WAL has no end-of-log trailer.
func writeAndKill(t *testing.T, n int) *vfs.MemFS {
	db, fs := openMem(t, nil)
	for i := 0; i < n; i++ {
		require.NoError(t, db.Put([]byte(fmt.Sprintf("k%04d", i)), []byte(fmt.Sprintf("value-%04d", i)), Sync))
	}
	killDB(db)
	return fs
}

// A cleanly closed WAL cut short (at a record boundary or anywhere else)
// is corruption, not a torn tail: the manifest records that a clean close
// sealed it.
func TestWALClosedAndCutIsCorruption(t *testing.T) {
	fs := writeAndClose(t, 50)
	wals := walFiles(t, fs)
	require.Len(t, wals, 1)
	data, err := fs.ReadFile(wals[0])
	require.NoError(t, err)
	for cut := len(data) - 200; cut < len(data); cut++ {
		c := fs.CrashClone(vfs.CrashOptions{})
		require.NoError(t, c.Truncate(wals[0], int64(cut)))
		_, err := Open("/db", &Options{FS: c})
		require.ErrorIs(t, err, ErrCorruption, "cut at %d", cut)
		require.Contains(t, err.Error(), wals[0], "cut at %d", cut)
	}
}

func TestWALTornTailIsTruncated(t *testing.T) {
	fs := writeAndKill(t, 50)
	wals := walFiles(t, fs)
	require.Len(t, wals, 1)
	data, err := fs.ReadFile(wals[0])
	require.NoError(t, err)

	// Cut the log at every offset inside its last 200 bytes (as if the
	// last syncs had not happened): the DB opens, keeps a prefix of the
	// writes, and truncates the log to its valid end and seals it.
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

// Recovery seals the newest WAL (truncated to its last whole record, with
// an end-of-log trailer, synced) before it starts the next: from then on
// the WAL is "older than the newest" and cutting it is corruption.
func TestRecoverySealsTheNewestWAL(t *testing.T) {
	fs := writeAndKill(t, 50)
	wals := walFiles(t, fs)
	require.Len(t, wals, 1)
	data, err := fs.ReadFile(wals[0])
	require.NoError(t, err)
	c := fs.CrashClone(vfs.CrashOptions{})
	require.NoError(t, c.Truncate(wals[0], int64(len(data)-7))) // a torn last record
	// Flushes fail, so the recovered WAL stays.
	efs := vfs.NewErrorFS(c, vfs.ErrorOptions{Nth: 1, Persistent: true, Match: func(op vfs.Op, name string) bool {
		return op == vfs.OpCreate && fileKind(name) == "table"
	}})
	db, err := Open("/db", &Options{FS: efs})
	require.NoError(t, err)
	killDB(db)

	crashed := c.CrashClone(vfs.CrashOptions{}) // only what recovery synced
	sealed, err := crashed.ReadFile(wals[0])
	require.NoError(t, err)
	r := wal.NewReader(bytes.NewReader(sealed), int64(len(sealed)), 1)
	n := 0
	for {
		_, err := r.Next()
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		n++
	}
	require.Equal(t, 49, n, "the torn 50th record is gone")
	require.True(t, r.Tail().Clean, "sealed: %s", r.Tail())
	require.Len(t, walFiles(t, crashed), 2)

	db, err = Open("/db", &Options{FS: crashed.CrashClone(vfs.CrashOptions{})})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	// Cut short now, the sealed WAL is corruption, not a torn tail.
	require.NoError(t, crashed.Truncate(wals[0], int64(len(sealed)-1)))
	_, err = Open("/db", &Options{FS: crashed})
	require.ErrorIs(t, err, ErrCorruption)
	require.Contains(t, err.Error(), wals[0])
}
