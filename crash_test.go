package sieve

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// crashOp is one acknowledged write of the crash workload: a batch of
// key/value pairs (value nil = delete).
type crashOp struct {
	keys   []string
	values []*string
	sync   bool
}

// crashPoint is a crash clone taken at a durability event, with what had
// been acknowledged by then.
type crashPoint struct {
	fs         *vfs.MemFS
	event      string
	ackedSync  int // ops[:ackedSync] must all survive
	inFlight   int // no op at index >= inFlight can survive
	unsynced   vfs.UnsyncedMode
	cloneIndex int
}

// applyOps replays ops[:n] onto a model.
func applyOps(model map[string]string, ops []crashOp) {
	for _, op := range ops {
		for i, k := range op.keys {
			if op.values[i] == nil {
				delete(model, k)
			} else {
				model[k] = *op.values[i]
			}
		}
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestCrashRecovery runs a random workload of puts, deletes and batches
// (some with Sync) over small memtables so that WAL rotations and flushes
// happen, takes a crash clone of the file system at every durability event
// (sync, directory sync, rename, remove, create), and checks each clone
// reopens to a state that (a) holds every Sync-acknowledged write and (b)
// equals the history replayed up to some point: a prefix, never a hole or
// half a batch. SIEVE_CRASH_OPS scales the workload up for long runs.
func TestCrashRecovery(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewSource(seed))
	nOps := envInt("SIEVE_CRASH_OPS", 4000)
	modes := []vfs.UnsyncedMode{vfs.DropUnsynced, vfs.KeepUnsyncedPrefix, vfs.KeepUnsyncedSectors, vfs.ZeroUnsynced, vfs.GarbageUnsynced}

	fs := vfs.NewMem()
	var ops []crashOp
	// The hook runs on the workload's goroutine and on the flush and
	// compaction goroutines: mu guards what it shares. The acknowledged
	// bound is read before the clone and the in-flight bound after it, so
	// that both hold for the cloned state.
	var mu sync.Mutex
	ackedSync, inFlight := 0, 0
	var points []crashPoint
	events := 0
	fs.SetDurabilityHook(func(op vfs.Op, name string) {
		mu.Lock()
		events++
		ev, acked := events, ackedSync
		mu.Unlock()
		mode := modes[ev%len(modes)]
		clone := fs.CrashClone(vfs.CrashOptions{Unsynced: mode, KeepUnsyncedFraction: 0.5, Seed: uint64(seed) + uint64(ev)})
		mu.Lock()
		points = append(points, crashPoint{
			fs: clone, event: fmt.Sprintf("%s %s", op, name),
			ackedSync: acked, inFlight: inFlight, unsynced: mode, cloneIndex: ev,
		})
		mu.Unlock()
	})
	db, err := Open("/db", &Options{FS: fs, MemTableSize: 64 << 10, L0CompactionTrigger: 1000, L0StopWritesTrigger: 1000})
	require.NoError(t, err)

	for i := 0; i < nOps; i++ {
		op := crashOp{sync: rng.Intn(8) == 0}
		n := 1
		if rng.Intn(5) == 0 {
			n = 1 + rng.Intn(6)
		}
		b := db.NewBatch()
		for j := 0; j < n; j++ {
			k := fmt.Sprintf("key%03d", rng.Intn(200))
			op.keys = append(op.keys, k)
			if rng.Intn(6) == 0 {
				op.values = append(op.values, nil)
				require.NoError(t, b.Delete([]byte(k)))
			} else {
				v := fmt.Sprintf("op%d-%d-%s", i, j, make([]byte, rng.Intn(400)))
				op.values = append(op.values, &v)
				require.NoError(t, b.Put([]byte(k), []byte(v)))
			}
		}
		mu.Lock()
		ops = append(ops, op)
		inFlight = len(ops)
		mu.Unlock()
		wo := NoSync
		if op.sync {
			wo = Sync
		}
		require.NoError(t, db.Apply(b, wo))
		if op.sync {
			mu.Lock()
			ackedSync = len(ops)
			mu.Unlock()
		}
	}
	fs.SetDurabilityHook(nil)
	require.NoError(t, db.Close())
	t.Logf("%d ops, %d crash points", len(ops), len(points))

	keys := map[string]bool{}
	for _, op := range ops {
		for _, k := range op.keys {
			keys[k] = true
		}
	}
	lost, nonPrefix := 0, 0
	for _, p := range points {
		got := readAllKeys(t, p.fs, keys)
		// Find the prefixes the recovered state equals.
		model := map[string]string{}
		match := -1
		for n := 0; n <= p.inFlight; n++ {
			if n > 0 {
				applyOps(model, ops[n-1:n])
			}
			if n >= p.ackedSync && mapsEqual(model, got) {
				match = n
				break
			}
		}
		if match < 0 {
			// Distinguish a lost synced write from a non-prefix state.
			m := map[string]string{}
			applyOps(m, ops[:p.ackedSync])
			if !mapsEqual(m, got) {
				lost++
			} else {
				nonPrefix++
			}
			t.Errorf("crash point %d (%s, %s): recovered state matches no prefix in [%d, %d] (seed %d)",
				p.cloneIndex, p.event, p.unsynced, p.ackedSync, p.inFlight, seed)
			if lost+nonPrefix > 5 {
				t.FailNow()
			}
		}
	}
	require.Zero(t, lost+nonPrefix)
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// readAllKeys opens the database on fs and reads every key in keys.
func readAllKeys(t *testing.T, fs *vfs.MemFS, keys map[string]bool) map[string]string {
	t.Helper()
	db, err := Open("/db", &Options{FS: fs})
	require.NoError(t, err, "reopen after crash")
	defer func() { require.NoError(t, db.Close()) }()
	out := map[string]string{}
	for k := range keys {
		v, err := db.Get([]byte(k))
		if errors.Is(err, ErrNotFound) {
			continue
		}
		require.NoError(t, err)
		out[k] = string(v)
	}
	return out
}
