package sieve

// Regression tests for bugs the reliability suite found, one scenario
// each, small enough to read.

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// killDB simulates the death of the process that had db open: nothing
// more is written (buffered WAL records are lost, background work stops),
// the directory lock is released, and the file system keeps what the
// process had written, synced or not (the page cache survives a process
// kill, not a power loss).
func killDB(db *DB) {
	db.closed.Store(true)
	db.mu.Lock()
	db.mu.cond.Broadcast()
	db.mu.Unlock()
	db.bg.Wait()
	db.lock.Close()
}

// A process dies with NoSync writes in the page cache; the next Open
// recovers them from the WAL and a Sync write is acknowledged into a new
// WAL; then the power fails. The recovered writes were acknowledged before
// the Sync write, so they must survive with it: recovery has to make the
// WALs it replays durable before new writes can depend on them.
func TestRecoveredWALSyncedBeforeNewWrites(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("/db", &Options{FS: fs})
	require.NoError(t, err)
	require.NoError(t, db.Put([]byte("a"), []byte("1"), Sync))
	require.NoError(t, db.Put([]byte("b"), []byte("2"), NoSync))
	db.flushWALBuffer() // in the OS, not synced
	killDB(db)

	db, err = Open("/db", &Options{FS: fs})
	require.NoError(t, err)
	v, err := db.Get([]byte("b"))
	require.NoError(t, err)
	require.Equal(t, "2", string(v))
	// Hold the flush of the recovered memtable back: the window is until
	// it is durable in a table.
	require.NoError(t, db.Put([]byte("c"), []byte("3"), Sync))
	crashed := fs.CrashClone(vfs.CrashOptions{})
	killDB(db)

	db, err = Open("/db", &Options{FS: crashed})
	require.NoError(t, err)
	defer db.Close()
	for _, k := range []string{"a", "b", "c"} {
		_, err := db.Get([]byte(k))
		require.NoError(t, err, "key %s: the state after the power loss is not a prefix of the acknowledged writes", k)
	}
}

// failingOn returns an ErrorFS over fs that fails the first operation op
// on a file of kind (fileKind) from the moment armed is set.
func failingOn(fs vfs.FS, op vfs.Op, kind string, armed *bool) *vfs.ErrorFS {
	return vfs.NewErrorFS(fs, vfs.ErrorOptions{Nth: 1, Match: func(o vfs.Op, name string) bool {
		return *armed && o == op && fileKind(name) == kind
	}})
}

// A compaction whose manifest edit was written but whose fsync failed must
// not delete its output tables: the edit may be in the manifest (a failed
// fsync leaves the data's state unknown), and it names them.
func TestCompactionKeepsOutputsWhenManifestSyncFails(t *testing.T) {
	mem := vfs.NewMem()
	armed := false
	efs := failingOn(mem, vfs.OpSync, "MANIFEST", &armed)
	db, err := Open("/db", &Options{FS: efs})
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		require.NoError(t, db.Put([]byte(fmt.Sprintf("k%d", i)), []byte("v"), nil))
		require.NoError(t, db.Flush())
	}
	armed = true
	err = db.Compact(nil, nil)
	require.ErrorIs(t, err, vfs.ErrInjected)
	require.Error(t, db.Put([]byte("x"), []byte("y"), nil), "read-only after a failed manifest sync")
	db.Close()

	// Without the fault, as it is (the process restarted) and after a
	// crash: the database opens and holds everything.
	for _, fs := range []*vfs.MemFS{mem, mem.CrashClone(vfs.CrashOptions{Unsynced: vfs.KeepUnsyncedSectors, KeepUnsyncedFraction: 1})} {
		db, err := Open("/db", &Options{FS: fs})
		require.NoError(t, err)
		for i := 0; i < 3; i++ {
			_, err := db.Get([]byte(fmt.Sprintf("k%d", i)))
			require.NoError(t, err)
		}
		require.NoError(t, db.CheckInvariants(true))
		require.NoError(t, db.Close())
	}
}

// Open's new manifest: when the directory sync after CURRENT's rename
// fails, CURRENT may already name the new manifest, so it must not be
// deleted; a retried Open must work.
func TestOpenRetryAfterFailedCurrentSync(t *testing.T) {
	for _, create := range []bool{true, false} {
		t.Run(fmt.Sprintf("create=%v", create), func(t *testing.T) {
			mem := vfs.NewMem()
			if !create {
				db, err := Open("/db", &Options{FS: mem})
				require.NoError(t, err)
				require.NoError(t, db.Put([]byte("k"), []byte("v"), Sync))
				require.NoError(t, db.Close())
			}
			renamed := false
			efs := vfs.NewErrorFS(mem, vfs.ErrorOptions{Nth: 1, Match: func(o vfs.Op, name string) bool {
				if o == vfs.OpRename && fileKind(name) == "CURRENT" {
					renamed = true
				}
				return renamed && o == vfs.OpSyncDir
			}})
			_, err := Open("/db", &Options{FS: efs})
			require.ErrorIs(t, err, vfs.ErrInjected)
			db, err := Open("/db", &Options{FS: efs})
			require.NoError(t, err, "Open after a transient failure")
			if !create {
				v, err := db.Get([]byte("k"))
				require.NoError(t, err)
				require.Equal(t, "v", string(v))
			}
			require.NoError(t, db.Close())
		})
	}
}

// An I/O error taking the directory lock is not "locked by another DB",
// and it keeps its cause.
func TestLockIOError(t *testing.T) {
	efs := vfs.NewErrorFS(vfs.NewMem(), vfs.ErrorOptions{Nth: 1, Ops: vfs.OpsOf(vfs.OpLock)})
	_, err := Open("/db", &Options{FS: efs})
	require.ErrorIs(t, err, vfs.ErrInjected)
	require.False(t, errors.Is(err, ErrLocked), "%v", err)
}

// A Flush whose WAL rotation fails closing the old WAL turns the DB
// read-only; Close then reports the cause, not a double close.
func TestCloseAfterFailedWALRotation(t *testing.T) {
	mem := vfs.NewMem()
	armed := false
	efs := failingOn(mem, vfs.OpSync, "WAL", &armed)
	db, err := Open("/db", &Options{FS: efs})
	require.NoError(t, err)
	require.NoError(t, db.Put([]byte("k"), []byte("v"), nil))
	armed = true
	require.ErrorIs(t, db.Flush(), vfs.ErrInjected)
	if err := db.Close(); err != nil {
		require.ErrorIs(t, err, vfs.ErrInjected)
	}
}
