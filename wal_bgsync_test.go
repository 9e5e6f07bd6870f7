package sieve

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// bgSyncValue is a value of 1 KiB: a thousand NoSync puts pass the 1 MiB
// of unsynced WAL at which a leader starts a background fsync.
var bgSyncValue = make([]byte, 1<<10)

func bgSyncKey(i int) []byte { return fmt.Appendf(nil, "k%06d", i) }

// waitCommitIdle waits until no group and no background WAL fsync is in
// flight.
func waitCommitIdle(db *DB) {
	for !db.commit.idle() {
		time.Sleep(time.Millisecond)
	}
}

// TestWALBackgroundSync checks that NoSync writes are fsynced in the
// background as the WAL grows (walBytesPerSync), and that what such an
// fsync covered survives a power loss: the recovered writes are a prefix
// of the history at least as long as the synced part of the WAL holds.
func TestWALBackgroundSync(t *testing.T) {
	mem := vfs.NewMem()
	db, err := Open("/db", &Options{FS: mem, MemTableSize: 64 << 20})
	require.NoError(t, err)
	const n = 3000
	for i := 0; i < n; i++ {
		require.NoError(t, db.Put(bgSyncKey(i), bgSyncValue, NoSync))
	}
	waitCommitIdle(db)
	m := db.Metrics()
	require.NotZero(t, m.WAL.BackgroundSyncs, "no background fsync:\n%s", m)
	require.Zero(t, m.WAL.Syncs, "NoSync writes counted as synced")
	// size counts the records written to the file and those still in
	// the WAL writer's buffer: all n of them. Read holding the commit
	// pipeline: the delayed buffer flush (scheduleWALFlush) may run now.
	db.commit.acquireWrite()
	synced, size := db.log.w.SyncedOffset(), db.log.w.Size()+int64(db.log.w.Buffered())
	db.commit.release()
	require.GreaterOrEqual(t, synced, int64(walBytesPerSync))
	crashed := mem.CrashClone(vfs.CrashOptions{Unsynced: vfs.DropUnsynced})
	require.NoError(t, db.Close())

	db2 := openDB(t, &Options{FS: crashed})
	got := 0
	for i := 0; i < n; i++ {
		_, err := db2.Get(bgSyncKey(i))
		if errors.Is(err, ErrNotFound) {
			break
		}
		require.NoError(t, err)
		got++
	}
	for i := got; i < n; i++ {
		_, err := db2.Get(bgSyncKey(i))
		require.ErrorIs(t, err, ErrNotFound, "key %d recovered after missing key %d: not a prefix", i, got)
	}
	// Every record costs about size/n bytes of WAL (the file header
	// aside): the synced offset covers at least synced*n/size of them,
	// less the one it may cut.
	require.GreaterOrEqual(t, got, int(synced*n/size)-1, "synced %d of %d WAL bytes", synced, size)
	t.Logf("%d background fsyncs; %d of %d WAL bytes synced, %d of %d writes survived the power loss", m.WAL.BackgroundSyncs, synced, size, got, n)
}

// TestWALBackgroundSyncFailure checks that a failed background fsync is
// not retried and fails every later write (the DB is read-only).
func TestWALBackgroundSyncFailure(t *testing.T) {
	efs := vfs.NewErrorFS(vfs.NewMem(), vfs.ErrorOptions{Ops: vfs.OpsOf(vfs.OpSync), Nth: 1,
		Match: func(_ vfs.Op, name string) bool { return fileKind(name) == "WAL" }})
	db, err := Open("/db", &Options{FS: efs, MemTableSize: 64 << 20})
	require.NoError(t, err)
	var werr error
	for i := 0; i < 100000 && werr == nil; i++ {
		werr = db.Put(bgSyncKey(i), bgSyncValue, NoSync)
		if i == 5000 {
			waitCommitIdle(db) // the fsync started and failed by now
		}
	}
	require.ErrorIs(t, werr, vfs.ErrInjected, "no write failed after the background fsync did")
	waitCommitIdle(db)
	require.ErrorIs(t, db.Put([]byte("after"), []byte("x"), NoSync), vfs.ErrInjected)
	require.Equal(t, int64(1), efs.Ops(), "WAL fsyncs attempted: the failed one was retried")
	require.Zero(t, db.Metrics().WAL.BackgroundSyncs)
	require.Error(t, db.Close())
}
