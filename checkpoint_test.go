package sieve

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// dbContents returns every key and value of the default family and of the
// named families of db.
func dbContents(t *testing.T, db *DB, cfs ...string) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{"default": scanAll(t, db.NewIter(nil))}
	for _, name := range cfs {
		cf, err := db.OpenColumnFamily(name, &ColumnFamilyOptions{Merger: appendMerger{}})
		require.NoError(t, err)
		out[name] = scanAll(t, cf.NewIter(nil))
	}
	return out
}

func scanAll(t *testing.T, it *Iterator) map[string]string {
	t.Helper()
	got := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	require.NoError(t, it.Close())
	return got
}

// fillForCheckpoint writes data that ends up in every place a checkpoint
// must copy: tables in several levels, an immutable memtable or two, the
// mutable memtable, merge operands, two column families.
func fillForCheckpoint(t *testing.T, db *DB, cf *ColumnFamily, round int) {
	t.Helper()
	for i := 0; i < 600; i++ {
		k := []byte(fmt.Sprintf("k%04d", (i*37)%500))
		require.NoError(t, db.Put(k, fmt.Appendf(nil, "r%d-%d-%0150d", round, i, i), nil))
		require.NoError(t, cf.Merge(k, fmt.Appendf(nil, "m%d", i%7), nil))
		if i%9 == 0 {
			require.NoError(t, db.Delete([]byte(fmt.Sprintf("k%04d", (i*11)%500)), nil))
		}
		if i == 300 {
			require.NoError(t, db.Compact(nil, nil))
		}
	}
}

func TestCheckpoint(t *testing.T) {
	for _, link := range []bool{true, false} {
		t.Run(fmt.Sprintf("link=%v", link), func(t *testing.T) {
			mem := vfs.NewMem()
			var fs vfs.FS = mem
			if !link {
				fs = noLinkFS{mem}
			}
			opts := &Options{FS: fs, Merger: appendMerger{}, MemTableSize: 64 << 10, L0CompactionTrigger: 2, TargetFileSize: 8 << 10}
			db, err := Open("/db", opts)
			require.NoError(t, err)
			defer db.Close()
			cf, err := db.OpenColumnFamily("cf", &ColumnFamilyOptions{Merger: appendMerger{}})
			require.NoError(t, err)
			fillForCheckpoint(t, db, cf, 0)
			want := dbContents(t, db, "cf")
			t.Logf("source before the checkpoint:\n%s", db.Metrics())
			require.NoError(t, db.Checkpoint("/ckpt"))
			require.Error(t, db.Checkpoint("/ckpt"), "the directory exists")
			m := db.Metrics()
			if link {
				require.Positive(t, m.Checkpoints.TablesLinked)
				require.Zero(t, m.Checkpoints.TablesCopied)
			} else {
				require.Positive(t, m.Checkpoints.TablesCopied)
			}
			require.Contains(t, m.String(), "checkpoints: 1 (")
			// The source goes on: more writes, compactions that delete the
			// tables the checkpoint took.
			fillForCheckpoint(t, db, cf, 1)
			require.NoError(t, db.Compact(nil, nil))
			require.NoError(t, cf.Compact(nil, nil))
			for _, ro := range []bool{true, false, false} {
				ck, err := Open("/ckpt", &Options{FS: fs, Merger: appendMerger{}, ReadOnly: ro})
				require.NoError(t, err)
				require.Equal(t, want, dbContents(t, ck, "cf"), "read-only=%v", ro)
				require.NoError(t, ck.CheckInvariants(true))
				require.NoError(t, ck.Close())
			}
			require.NotEqual(t, want, dbContents(t, db, "cf"))
			_, err = mem.Stat("/ckpt.checkpoint-tmp")
			require.ErrorIs(t, err, os.ErrNotExist)
		})
	}
}

// noLinkFS hides MemFS's Link: the checkpoint must copy.
type noLinkFS struct{ vfs.FS }

// TestCheckpointCrash takes a crash clone of the file system at every
// durability event of a Checkpoint (each create, write, sync, link,
// rename, directory sync) in three unsynced-data modes. In every clone the
// source opens with its acknowledged state, the checkpoint directory is
// either absent or opens with exactly the state at the checkpoint, and a
// new Checkpoint to the same directory succeeds (clearing what the crash
// left).
func TestCheckpointCrash(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs, Merger: appendMerger{}, MemTableSize: 64 << 10, L0CompactionTrigger: 2, TargetFileSize: 8 << 10}
	db, err := Open("/db", opts)
	require.NoError(t, err)
	cf, err := db.OpenColumnFamily("cf", &ColumnFamilyOptions{Merger: appendMerger{}})
	require.NoError(t, err)
	fillForCheckpoint(t, db, cf, 0)
	require.NoError(t, db.Put([]byte("last"), []byte("synced"), Sync)) // every write so far durable
	want := dbContents(t, db, "cf")
	// The fill's flushes and compactions finish first, so that the clones
	// are taken at the checkpoint's own events (the hook would also run on
	// their goroutines, concurrently; it locks for that all the same).
	waitCompactionsIdle(db)
	var mu sync.Mutex
	var clones []*vfs.MemFS
	events := map[string]int{}
	fs.SetDurabilityHook(func(op vfs.Op, name string) {
		mu.Lock()
		defer mu.Unlock()
		for _, mode := range []vfs.UnsyncedMode{vfs.DropUnsynced, vfs.KeepUnsyncedPrefix, vfs.GarbageUnsynced} {
			clones = append(clones, fs.CrashClone(vfs.CrashOptions{Unsynced: mode}))
		}
		events[op.String()]++
	})
	require.NoError(t, db.Checkpoint("/ckpt"))
	fs.SetDurabilityHook(nil)
	require.NoError(t, db.Close())
	t.Logf("events during Checkpoint: %v; %d clones", events, len(clones))
	require.Positive(t, events["link"])
	require.Positive(t, events["rename"])
	var absent, complete int
	for i, c := range clones {
		o := *opts
		o.FS = c
		src, err := Open("/db", &o)
		require.NoError(t, err, "clone %d: source", i)
		require.Equal(t, want, dbContents(t, src, "cf"), "clone %d: source", i)
		if _, err := c.Stat("/ckpt"); err == nil {
			ck, err := Open("/ckpt", &o)
			require.NoError(t, err, "clone %d: checkpoint", i)
			require.Equal(t, want, dbContents(t, ck, "cf"), "clone %d: checkpoint", i)
			require.NoError(t, ck.Close())
			complete++
		} else {
			require.ErrorIs(t, err, os.ErrNotExist)
			absent++
			require.NoError(t, src.Checkpoint("/ckpt"), "clone %d: checkpoint again", i)
			ck, err := Open("/ckpt", &o)
			require.NoError(t, err, "clone %d: second checkpoint", i)
			require.Equal(t, want, dbContents(t, ck, "cf"), "clone %d: second checkpoint", i)
			require.NoError(t, ck.Close())
		}
		require.NoError(t, src.Close())
	}
	t.Logf("%d clones: checkpoint absent in %d, complete in %d", len(clones), absent, complete)
	require.Positive(t, absent)
	require.Positive(t, complete)
}
