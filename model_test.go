package sieve

import (
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// modelDB is a map model of the database with snapshots.
type modelDB struct {
	cur   map[string]string
	snaps map[*Snapshot]map[string]string
}

func (m *modelDB) merge(k, op string) {
	if v, ok := m.cur[k]; ok && v != "" {
		m.cur[k] = v + "," + op
	} else {
		m.cur[k] = op
	}
}

// TestRandomizedModel runs a long random mix of puts, deletes, merges,
// batches, gets, bounded iteration both ways, snapshots, flushes, manual
// compactions and close/reopen against a map model, with a small memtable
// and L0 trigger so that background compactions run constantly. The LSM
// invariants are checked at every reopen and at the end.
// SIEVE_MODEL_OPS scales it (default 50,000; 10,000 with -short).
func TestRandomizedModel(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewSource(seed))
	nOps := envInt("SIEVE_MODEL_OPS", 50000)
	if testing.Short() {
		nOps = 10000
	}
	fs := vfs.NewMem()
	opts := &Options{FS: fs, Merger: appendMerger{}, MemTableSize: 64 << 10, L0CompactionTrigger: 2,
		L0StopWritesTrigger: 8, LBaseMaxBytes: 256 << 10, TargetFileSize: 4 << 10, BlockSize: 512, MaxSuccessiveMerges: 16,
		MaxSubcompactions: 3, Prefix: modelPrefixLen, PrefixName: "model6"}
	db, err := Open("/db", opts)
	require.NoError(t, err)
	r := &modelRun{t: t, rng: rng, seed: seed, opts: opts, db: db,
		m: &modelDB{cur: map[string]string{}, snaps: map[*Snapshot]map[string]string{}}}
	for i := 0; i < nOps; i++ {
		r.step(i)
	}
	r.finish()
}

// modelRun is TestRandomizedModel's database, its model and its counts.
type modelRun struct {
	t     *testing.T
	rng   *rand.Rand
	seed  int64
	opts  *Options
	db    *DB
	m     *modelDB
	seeks seekStats
	// prefix counts the SeekPrefixGE checks (model_prefix_test.go).
	prefix prefixModelStats
	// ingestStats counts the Ingests (model_ingest_test.go).
	ingestStats ingestModelStats
	// splits counts the manual compactions run as subcompactions, over
	// all reopens.
	splits int64
	mg     multiGetStats
	cf     modelCF
	ckpt   modelCheckpoints
	rd     modelRangeDels
}

func (r *modelRun) key() string { return fmt.Sprintf("key%04d", r.rng.Intn(1500)) }

// keyRange is two random keys, in order.
func (r *modelRun) keyRange() (lo, hi string) {
	lo, hi = r.key(), r.key()
	if lo > hi {
		lo, hi = hi, lo
	}
	return lo, hi
}

// step is the i-th random operation, on the database and the model.
func (r *modelRun) step(i int) {
	t := r.t
	switch x := r.rng.Intn(1000); {
	case x < 700:
		r.write(i, x)
	case x < 880:
		r.get(i)
	case x < 900:
		r.multiGet(i)
	case x < 915:
		lo, hi := r.keyRange()
		it := r.db.NewIter(&IterOptions{LowerBound: []byte(lo), UpperBound: []byte(hi)})
		r.seeks.add(checkIterator(t, r.rng, it, r.m.cur, lo, hi))
		require.NoError(t, it.Close())
	case x < 930:
		r.takeOrReleaseSnapshot()
	case x < 950:
		r.snapshotRead(i)
	case x < 960:
		require.NoError(t, r.db.Flush())
	case x < 965:
		lo, hi := r.keyRange()
		require.NoError(t, r.db.Compact([]byte(lo), []byte(hi)))
	case x < 968:
		r.reopen()
	case x < 973:
		r.prefixSeek(i)
	case x < 978:
		r.cfOp(i)
	case x < 980:
		r.ingest(i)
	case x < 982:
		r.checkpoint(i)
	case x < 992:
		r.deleteRange(i)
	default:
		// Let background work run.
	}
}

// write is a Put, Delete, Merge or batch (x < 700 picks which).
func (r *modelRun) write(i, x int) {
	t, db, m := r.t, r.db, r.m
	switch {
	case x < 400:
		k, v := r.key(), fmt.Sprintf("v%d%s", i, strings.Repeat("x", r.rng.Intn(100)))
		require.NoError(t, db.Put([]byte(k), []byte(v), nil))
		m.cur[k] = v
	case x < 500:
		k := r.key()
		require.NoError(t, db.Delete([]byte(k), nil))
		delete(m.cur, k)
	case x < 650:
		k, op := r.key(), fmt.Sprintf("m%d", i)
		require.NoError(t, db.Merge([]byte(k), []byte(op), nil))
		m.merge(k, op)
	default:
		r.batch(i)
	}
}

// batch applies a batch of one to eight puts, deletes and merges.
func (r *modelRun) batch(i int) {
	t, m := r.t, r.m
	b := r.db.NewBatch()
	for j := r.rng.Intn(8); j >= 0; j-- {
		k := r.key()
		switch r.rng.Intn(3) {
		case 0:
			v := fmt.Sprintf("b%d-%d", i, j)
			require.NoError(t, b.Put([]byte(k), []byte(v)))
			m.cur[k] = v
		case 1:
			require.NoError(t, b.Delete([]byte(k)))
			delete(m.cur, k)
		case 2:
			op := fmt.Sprintf("bm%d-%d", i, j)
			require.NoError(t, b.Merge([]byte(k), []byte(op)))
			m.merge(k, op)
		}
	}
	require.NoError(t, r.db.Apply(b, nil))
}

// get reads a random key and checks it against the model.
func (r *modelRun) get(i int) {
	t, seed := r.t, r.seed
	t.Helper()
	k := r.key()
	v, err := r.db.Get([]byte(k))
	if want, ok := r.m.cur[k]; ok {
		require.NoError(t, err, "op %d key %s (seed %d)", i, k, seed)
		require.Equal(t, want, string(v), "op %d key %s (seed %d)", i, k, seed)
	} else {
		require.ErrorIs(t, err, ErrNotFound, "op %d key %s (seed %d)", i, k, seed)
	}
}

// takeOrReleaseSnapshot takes a snapshot, or releases one once three are
// held.
func (r *modelRun) takeOrReleaseSnapshot() {
	m := r.m
	if len(m.snaps) < 3 {
		m.snaps[r.db.NewSnapshot()] = maps(m.cur)
		return
	}
	for s := range m.snaps {
		require.NoError(r.t, s.Close())
		delete(m.snaps, s)
		break
	}
}

// snapshotRead reads a random key through one of the snapshots (and
// sometimes iterates it) and checks it against the model as of then.
func (r *modelRun) snapshotRead(i int) {
	t, seed := r.t, r.seed
	t.Helper()
	for s, sm := range r.m.snaps {
		k := r.key()
		v, err := s.Get([]byte(k))
		if want, ok := sm[k]; ok {
			require.NoError(t, err)
			require.Equal(t, want, string(v), "snapshot read op %d (seed %d)", i, seed)
		} else {
			require.ErrorIs(t, err, ErrNotFound, "snapshot read op %d key %s (seed %d)", i, k, seed)
		}
		if r.rng.Intn(10) == 0 {
			it := s.NewIter(nil)
			r.seeks.add(checkIterator(t, r.rng, it, sm, "", ""))
			require.NoError(t, it.Close())
		}
		break
	}
}

func (r *modelRun) closeSnaps() {
	for s := range r.m.snaps {
		require.NoError(r.t, s.Close())
	}
	r.m.snaps = map[*Snapshot]map[string]string{}
}

// reopen closes and reopens the database, checking the LSM invariants
// before and after.
func (r *modelRun) reopen() {
	t := r.t
	t.Helper()
	r.closeSnaps()
	require.NoError(t, r.db.CheckInvariants(false))
	r.splits += r.db.Metrics().Compaction.Split
	r.rd.add(r.db.Metrics())
	require.NoError(t, r.db.Close())
	db, err := Open("/db", r.opts)
	require.NoError(t, err)
	r.db = db
	require.NoError(t, db.CheckInvariants(true))
}

// finish compacts everything, checks the invariants and a full scan, and
// that compactions (some split in subcompactions) ran.
func (r *modelRun) finish() {
	t, db := r.t, r.db
	t.Helper()
	r.closeSnaps()
	require.NoError(t, db.Compact(nil, nil))
	require.NoError(t, db.CheckInvariants(true))
	it := db.NewIter(nil)
	r.seeks.add(checkIterator(t, r.rng, it, r.m.cur, "", ""))
	require.NoError(t, it.Close())
	r.seeks.requireInside(t)
	r.prefix.requireReached(t)
	r.ingestStats.requireReached(t)
	r.mg.requireReached(t)
	r.cf.requireReached(t)
	r.verifyCheckpoints()
	r.ckpt.requireReached(t)
	mt := db.Metrics()
	t.Logf("final shape:\n%s", mt)
	require.Greater(t, mt.Compaction.Count+mt.Compaction.Moves, int64(0))
	r.splits += mt.Compaction.Split
	t.Logf("compactions run as subcompactions: %d", r.splits)
	require.Positive(t, r.splits, "no manual compaction was split: the subcompaction path went untested")
	r.rd.add(mt)
	r.rd.require(t)
	require.NoError(t, db.Close())
}

// TestConcurrentReadersDuringCompaction writes and compacts while readers
// scan snapshots and iterators; run with -race.
func TestConcurrentReadersDuringCompaction(t *testing.T) {
	db, _ := openMem(t, &Options{MemTableSize: 64 << 10, L0CompactionTrigger: 2, LBaseMaxBytes: 256 << 10, TargetFileSize: 32 << 10})
	const keys = 2000
	for i := 0; i < keys; i++ {
		require.NoError(t, db.Put([]byte(fmt.Sprintf("k%05d", i)), []byte("v0"), nil))
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s := db.NewSnapshot()
				it := s.NewIter(nil)
				n := 0
				var round string
				for ok := it.First(); ok; ok = it.Next() {
					if round == "" {
						round = string(it.Value())
					}
					if string(it.Value()) != round {
						t.Errorf("snapshot saw mixed rounds %s and %s", round, it.Value())
					}
					n++
				}
				if err := it.Close(); err != nil {
					t.Error(err)
				}
				s.Close()
				if n != keys {
					t.Errorf("snapshot scan saw %d keys, want %d", n, keys)
				}
			}
		}()
	}
	for round := 1; round <= 10; round++ {
		b := db.NewBatch()
		for i := 0; i < keys; i++ {
			require.NoError(t, b.Put([]byte(fmt.Sprintf("k%05d", i)), []byte(fmt.Sprintf("v%d", round))))
		}
		require.NoError(t, db.Apply(b, nil))
		if round%3 == 0 {
			require.NoError(t, db.Compact(nil, nil))
		}
	}
	close(stop)
	wg.Wait()
}
