package sieve

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// sstCount is the number of table files in /db.
func sstCount(t *testing.T, fs *vfs.MemFS) int {
	t.Helper()
	names, err := fs.List("/db")
	require.NoError(t, err)
	n := 0
	for _, name := range names {
		if strings.HasSuffix(name, ".sst") {
			n++
		}
	}
	return n
}

// scanAll is every key=value the iterator sees from First.
func iterScanAll(t *testing.T, it *Iterator) []string {
	t.Helper()
	var out []string
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, string(it.Key())+"="+string(it.Value()))
	}
	require.NoError(t, it.Error())
	return out
}

// An iterator that is reused after a flush and compaction moves onto the
// new tables at its next seek, sees exactly what it saw, and releases the
// files it pinned; after a write it stays on its view.
func TestIteratorRefresh(t *testing.T) {
	db, fs := openMem(t, &Options{MemTableSize: 64 << 10, L0CompactionTrigger: 100, L0StopWritesTrigger: 200})
	for r := 0; r < 4; r++ { // four overlapping L0 tables
		for k := 0; k < 500; k++ {
			require.NoError(t, db.Put(fmt.Appendf(nil, "k%04d", k), fmt.Appendf(nil, "v%d-%d", r, k), nil))
		}
		require.NoError(t, db.Flush())
	}
	require.NoError(t, db.Put([]byte("k0007"), []byte("in the memtable"), nil))
	it := db.NewIter(nil)
	defer it.Close()
	want := iterScanAll(t, it)
	require.Len(t, want, 500)
	require.Equal(t, "k0007=in the memtable", want[7])
	require.Zero(t, db.Metrics().IteratorRefreshes, "nothing changed yet")

	require.NoError(t, db.Compact(nil, nil))
	pinned := sstCount(t, fs)
	live := 0
	for _, l := range db.Metrics().Levels {
		live += int(l.NumFiles)
	}
	require.Greater(t, pinned, live, "the iterator pins the L0 tables the compaction replaced")
	require.True(t, it.SeekGE([]byte("k0007")))
	require.Equal(t, "in the memtable", string(it.Value()))
	require.EqualValues(t, 1, db.Metrics().IteratorRefreshes)
	require.Equal(t, want, iterScanAll(t, it), "the refreshed iterator's view")
	require.EqualValues(t, 1, db.Metrics().IteratorRefreshes, "First on an unchanged state does not refresh again")
	require.Less(t, sstCount(t, fs), pinned, "the refresh released the replaced tables")

	// A write since the view: the iterator keeps it (and its tables).
	require.NoError(t, db.Put([]byte("k0008"), []byte("newer"), nil))
	require.NoError(t, db.Compact(nil, nil))
	require.Equal(t, want, iterScanAll(t, it))
	require.True(t, it.SeekLT([]byte("k0009")))
	require.Equal(t, "v3-8", string(it.Value()))
	require.EqualValues(t, 1, db.Metrics().IteratorRefreshes)

	// A snapshot's iterator refreshes only while nothing newer exists.
	require.NoError(t, db.Put([]byte("k0010"), []byte("in the memtable"), nil))
	snap := db.NewSnapshot()
	defer snap.Close()
	sit := snap.NewIter(nil)
	defer sit.Close()
	require.NoError(t, db.Flush())
	require.True(t, sit.SeekGE([]byte("k0008")))
	require.Equal(t, "newer", string(sit.Value()))
	require.EqualValues(t, 2, db.Metrics().IteratorRefreshes)
	require.NoError(t, db.Delete([]byte("k0008"), nil))
	require.NoError(t, db.Compact(nil, nil))
	require.True(t, sit.SeekGE([]byte("k0008")))
	require.Equal(t, "newer", string(sit.Value()))
	require.EqualValues(t, 2, db.Metrics().IteratorRefreshes)
}

// An iterator on a column family that is dropped keeps reading what it
// pinned: the current state no longer holds the family.
func TestIteratorRefreshDroppedFamily(t *testing.T) {
	db, _ := openMem(t, nil)
	cf, err := db.OpenColumnFamily("cf", nil)
	require.NoError(t, err)
	require.NoError(t, cf.Put([]byte("a"), []byte("1"), nil))
	require.NoError(t, db.Flush())
	it := cf.NewIter(nil)
	defer it.Close()
	require.NoError(t, db.DropColumnFamily(cf))
	require.NoError(t, db.Flush())
	require.Equal(t, []string{"a=1"}, iterScanAll(t, it))
	require.Zero(t, db.Metrics().IteratorRefreshes)
}

// TestIteratorRefreshConcurrent: readers keep iterators for many rounds of
// writes and seek them again and again, while flushes and compactions run
// (small memtables, a goroutine compacting random ranges); every read is
// checked against the model of the round the iterator was made in. An
// iterator made between rounds refreshes at seeks while the writer pauses,
// one made earlier never does (a write came after its view); both must
// read their round exactly. Replay: SIEVE_SEED.
func TestIteratorRefreshConcurrent(t *testing.T) {
	seed := testutil.Seed(t)
	rounds, keys := 300, 400
	if testing.Short() || relRaceEnabled {
		rounds = 80
	}
	db, _ := openMem(t, &Options{MemTableSize: 64 << 10, L0CompactionTrigger: 3})

	// models[r] is the database after round r's writes; roundMu is held
	// for writing while a round is written, so an iterator made under
	// its read lock has exactly the view models[round].
	var (
		roundMu sync.RWMutex
		models  [][]string // sorted "key=value"
		done    atomic.Bool
		errs    = make(chan error, 16)
	)
	fail := func(format string, args ...any) {
		select {
		case errs <- fmt.Errorf(format+" (seed %d)", append(args, seed)...):
		default:
		}
		done.Store(true)
	}
	snapshotModel := func(m map[string]string) []string {
		out := make([]string, 0, len(m))
		for k, v := range m {
			out = append(out, k+"="+v)
		}
		slices.Sort(out)
		return out
	}
	model := map[string]string{}
	models = append(models, nil)

	var wg sync.WaitGroup
	var staleSeeks, freshSeeks atomic.Int64
	reader := func(id int) {
		defer wg.Done()
		rng := rand.New(rand.NewSource(seed + int64(id)))
		type held struct {
			it    *Iterator
			round int
		}
		var its []held
		defer func() {
			for _, h := range its {
				h.it.Close()
			}
		}()
		for !done.Load() {
			if len(its) < 3 || rng.Intn(8) == 0 {
				if len(its) == 3 {
					j := rng.Intn(len(its))
					its[j].it.Close()
					its = slices.Delete(its, j, j+1)
				}
				roundMu.RLock()
				its = append(its, held{db.NewIter(nil), len(models) - 1})
				roundMu.RUnlock()
			}
			h := its[rng.Intn(len(its))]
			roundMu.RLock()
			cur := len(models) - 1
			m := models[h.round]
			roundMu.RUnlock()
			if h.round < cur {
				staleSeeks.Add(1)
			} else {
				freshSeeks.Add(1)
			}
			k := fmt.Sprintf("k%04d", rng.Intn(keys+10))
			var ok bool
			i := 0
			if rng.Intn(2) == 0 {
				ok = h.it.SeekGE([]byte(k))
				i, _ = slices.BinarySearch(m, k)
			} else {
				ok = h.it.SeekLT([]byte(k))
				i, _ = slices.BinarySearch(m, k)
				i--
			}
			for step := 0; step < 3; step++ {
				if err := h.it.Error(); err != nil {
					fail("reader %d: %v", id, err)
					return
				}
				if ok != (i >= 0 && i < len(m)) {
					fail("reader %d, round %d's iterator at %s step %d: valid %v, model has %d of %d", id, h.round, k, step, ok, i, len(m))
					return
				}
				if !ok {
					break
				}
				if got := string(h.it.Key()) + "=" + string(h.it.Value()); got != m[i] {
					fail("reader %d, round %d's iterator at %s step %d: got %s, want %s", id, h.round, k, step, got, m[i])
					return
				}
				ok = h.it.Next()
				i++
			}
		}
	}
	for id := 0; id < 3; id++ {
		wg.Add(1)
		go reader(id)
	}
	wg.Add(1)
	go func() { // manual compactions of random ranges
		defer wg.Done()
		rng := rand.New(rand.NewSource(seed - 1))
		for !done.Load() {
			a, b := fmt.Sprintf("k%04d", rng.Intn(keys)), fmt.Sprintf("k%04d", rng.Intn(keys))
			if a > b {
				a, b = b, a
			}
			if err := db.Compact([]byte(a), []byte(b)); err != nil {
				fail("compact: %v", err)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()

	rng := rand.New(rand.NewSource(seed))
	for r := 1; r <= rounds && !done.Load(); r++ {
		roundMu.Lock()
		for n := 0; n < 50; n++ {
			k := fmt.Sprintf("k%04d", rng.Intn(keys))
			var err error
			if rng.Intn(5) == 0 {
				err = db.Delete([]byte(k), nil)
				delete(model, k)
			} else {
				v := fmt.Sprintf("r%d-%s", r, strings.Repeat("x", rng.Intn(300)))
				err = db.Put([]byte(k), []byte(v), nil)
				model[k] = v
			}
			if err != nil {
				fail("write: %v", err)
			}
		}
		models = append(models, snapshotModel(model))
		roundMu.Unlock()
		if rng.Intn(4) == 0 {
			if err := db.Flush(); err != nil {
				fail("flush: %v", err)
			}
		}
		time.Sleep(2 * time.Millisecond) // the quiet time in which iterators refresh
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	m := db.Metrics()
	t.Logf("%d rounds: %d seeks of iterators of the latest round, %d of older ones; %d refreshes, %d flushes, %d compactions (seed %d)",
		len(models)-1, freshSeeks.Load(), staleSeeks.Load(), m.IteratorRefreshes, m.Flush.Count, m.Compaction.Count, seed)
	require.Positive(t, m.IteratorRefreshes, "no iterator refreshed")
	require.Positive(t, staleSeeks.Load(), "no iterator was read across a later round")
	require.Positive(t, m.Compaction.Count)
}
