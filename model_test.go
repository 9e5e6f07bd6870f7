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
		MaxSubcompactions: 3}
	db, err := Open("/db", opts)
	splits := int64(0) // manual compactions run as subcompactions, over all reopens
	require.NoError(t, err)
	m := &modelDB{cur: map[string]string{}, snaps: map[*Snapshot]map[string]string{}}
	closeSnaps := func() {
		for s := range m.snaps {
			require.NoError(t, s.Close())
		}
		m.snaps = map[*Snapshot]map[string]string{}
	}
	key := func() string { return fmt.Sprintf("key%04d", rng.Intn(1500)) }
	var seeks seekStats
	for i := 0; i < nOps; i++ {
		switch r := rng.Intn(1000); {
		case r < 400:
			k, v := key(), fmt.Sprintf("v%d%s", i, strings.Repeat("x", rng.Intn(100)))
			require.NoError(t, db.Put([]byte(k), []byte(v), nil))
			m.cur[k] = v
		case r < 500:
			k := key()
			require.NoError(t, db.Delete([]byte(k), nil))
			delete(m.cur, k)
		case r < 650:
			k, op := key(), fmt.Sprintf("m%d", i)
			require.NoError(t, db.Merge([]byte(k), []byte(op), nil))
			m.merge(k, op)
		case r < 700:
			b := db.NewBatch()
			for j := rng.Intn(8); j >= 0; j-- {
				k := key()
				switch rng.Intn(3) {
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
			require.NoError(t, db.Apply(b, nil))
		case r < 900:
			k := key()
			v, err := db.Get([]byte(k))
			if want, ok := m.cur[k]; ok {
				require.NoError(t, err, "op %d key %s (seed %d)", i, k, seed)
				require.Equal(t, want, string(v), "op %d key %s (seed %d)", i, k, seed)
			} else {
				require.ErrorIs(t, err, ErrNotFound, "op %d key %s (seed %d)", i, k, seed)
			}
		case r < 915:
			lo, hi := key(), key()
			if lo > hi {
				lo, hi = hi, lo
			}
			it := db.NewIter(&IterOptions{LowerBound: []byte(lo), UpperBound: []byte(hi)})
			seeks.add(checkIterator(t, rng, it, m.cur, lo, hi))
			require.NoError(t, it.Close())
		case r < 930:
			if len(m.snaps) < 3 {
				m.snaps[db.NewSnapshot()] = maps(m.cur)
			} else {
				for s := range m.snaps {
					require.NoError(t, s.Close())
					delete(m.snaps, s)
					break
				}
			}
		case r < 950:
			for s, sm := range m.snaps {
				k := key()
				v, err := s.Get([]byte(k))
				if want, ok := sm[k]; ok {
					require.NoError(t, err)
					require.Equal(t, want, string(v), "snapshot read op %d (seed %d)", i, seed)
				} else {
					require.ErrorIs(t, err, ErrNotFound, "snapshot read op %d key %s (seed %d)", i, k, seed)
				}
				if rng.Intn(10) == 0 {
					it := s.NewIter(nil)
					seeks.add(checkIterator(t, rng, it, sm, "", ""))
					require.NoError(t, it.Close())
				}
				break
			}
		case r < 960:
			require.NoError(t, db.Flush())
		case r < 965:
			lo, hi := key(), key()
			if lo > hi {
				lo, hi = hi, lo
			}
			require.NoError(t, db.Compact([]byte(lo), []byte(hi)))
		case r < 968:
			closeSnaps()
			require.NoError(t, db.CheckInvariants(false))
			splits += db.Metrics().Compaction.Split
			require.NoError(t, db.Close())
			db, err = Open("/db", opts)
			require.NoError(t, err)
			require.NoError(t, db.CheckInvariants(true))
		default:
			// Let background work run.
		}
	}
	closeSnaps()
	require.NoError(t, db.Compact(nil, nil))
	require.NoError(t, db.CheckInvariants(true))
	it := db.NewIter(nil)
	seeks.add(checkIterator(t, rng, it, m.cur, "", ""))
	require.NoError(t, it.Close())
	seeks.requireInside(t)
	mt := db.Metrics()
	t.Logf("final shape:\n%s", mt)
	require.Greater(t, mt.Compaction.Count+mt.Compaction.Moves, int64(0))
	splits += mt.Compaction.Split
	t.Logf("compactions run as subcompactions: %d", splits)
	require.Positive(t, splits, "no manual compaction was split: the subcompaction path went untested")
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
