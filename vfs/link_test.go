package vfs

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLink checks hard links on MemFS, the disk FS and through ErrorFS:
// the content is shared, removing one name keeps the other, an existing
// newname is refused, and a MemFS link not yet made durable by SyncDir is
// lost in a crash (while one that was survives).
func TestLink(t *testing.T) {
	dir := t.TempDir()
	mem := NewMem()
	require.NoError(t, mem.MkdirAll("/d", 0o755))
	for name, c := range map[string]struct {
		fs  FS
		dir string
	}{"mem": {mem, "/d"}, "disk": {Default, dir}, "errorfs": {NewErrorFS(NewMem(), ErrorOptions{}), "/e"}} {
		t.Run(name, func(t *testing.T) {
			fs := c.fs
			require.NoError(t, fs.MkdirAll(c.dir, 0o755))
			a, b := filepath.Join(c.dir, "a"), filepath.Join(c.dir, "b")
			f, err := fs.Create(a)
			require.NoError(t, err)
			_, err = f.Write([]byte("hello"))
			require.NoError(t, err)
			require.NoError(t, f.Sync())
			require.NoError(t, f.Close())
			require.NoError(t, Link(fs, a, b))
			require.Error(t, Link(fs, a, b), "newname exists")
			require.NoError(t, fs.SyncDir(c.dir))
			require.NoError(t, fs.Remove(a))
			g, err := fs.Open(b)
			require.NoError(t, err)
			buf := make([]byte, 5)
			_, err = g.ReadAt(buf, 0)
			if err != io.EOF {
				require.NoError(t, err)
			}
			require.Equal(t, "hello", string(buf))
			require.NoError(t, g.Close())
		})
	}
	// Durability of the entry on MemFS.
	require.NoError(t, Link(mem, "/d/b", "/d/c"))
	clone := mem.CrashClone(CrashOptions{})
	_, err := clone.Stat("/d/c")
	require.ErrorIs(t, err, os.ErrNotExist, "an unsynced link survived a crash")
	_, err = clone.Stat("/d/b")
	require.NoError(t, err)
	require.NoError(t, mem.SyncDir("/d"))
	_, err = mem.CrashClone(CrashOptions{}).Stat("/d/c")
	require.NoError(t, err)
	require.ErrorIs(t, Link(noLink{mem}, "/d/b", "/d/x"), ErrLinkUnsupported)
}

type noLink struct{ FS }
