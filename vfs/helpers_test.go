package vfs

import (
	"path"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeFile creates name with data, syncing the data if sync is set. The
// directory entry is left as the caller's business.
func writeFile(t testing.TB, fs FS, name, data string, sync bool) {
	t.Helper()
	f, err := fs.Create(name)
	require.NoError(t, err)
	_, err = f.Write([]byte(data))
	require.NoError(t, err)
	if sync {
		require.NoError(t, f.Sync())
	}
	require.NoError(t, f.Close())
}

// appendFile appends data to the existing file name.
func appendFile(t testing.TB, fs FS, name, data string, sync bool) {
	t.Helper()
	f, err := fs.OpenReadWrite(name)
	require.NoError(t, err)
	_, err = f.Write([]byte(data))
	require.NoError(t, err)
	if sync {
		require.NoError(t, f.Sync())
	}
	require.NoError(t, f.Close())
}

// durableFile writes name with data, synced, and syncs its directory.
func durableFile(t testing.TB, fs FS, name, data string) {
	t.Helper()
	writeFile(t, fs, name, data, true)
	require.NoError(t, fs.SyncDir(path.Dir(name)))
}

// tree returns every file (path -> content) and directory (path + "/" ->
// "") of a MemFS, through the FS interface.
func tree(t testing.TB, fs *MemFS) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(dir string)
	walk = func(dir string) {
		names, err := fs.List(dir)
		require.NoError(t, err)
		for _, name := range names {
			p := path.Join(dir, name)
			fi, err := fs.Stat(p)
			require.NoError(t, err)
			if fi.IsDir() {
				out[p+"/"] = ""
				walk(p)
				continue
			}
			data, err := fs.ReadFile(p)
			require.NoError(t, err)
			out[p] = string(data)
		}
	}
	walk("")
	return out
}
