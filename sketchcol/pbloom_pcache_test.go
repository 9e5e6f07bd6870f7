package sketchcol

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// TestPageCacheCoherence runs reply-bearing adds, blind Batch adds,
// Deferred adds and reads of one paged filter at once, with small
// memtables (flushes and compactions happen) and a page cache too small
// for the filter (evictions happen), and checks that no item added is
// ever answered absent, that every reply-bearing add of a new item says
// so, and that a Delete leaves nothing cached. Budgets: off, tiny, whole.
func TestPageCacheCoherence(t *testing.T) {
	for _, budget := range []int64{-1, 256 << 10, 64 << 20} {
		t.Run(fmt.Sprintf("budget=%d", budget), func(t *testing.T) {
			seed := testutil.Seed(t)
			ts := openTestStore(t, &sieve.Options{MemTableSize: 256 << 10}, &StoreOptions{PageCacheSize: budget})
			pageCacheRun(t, ts, seed)
		})
	}
}

func pageCacheRun(t *testing.T, ts *testStore, seed int64) {
	st := ts.Store
	key := []byte("guard")
	require.NoError(t, st.BFReserve(key, 0.01, 20_000_000, nil))
	var added sync.Map // items known added (their add returned)
	var wg sync.WaitGroup
	var violations, hits atomic.Int64
	var keyMu sync.Mutex // a Deferred's contract: its key locked until Commit
	writer := func(w int, add func(its [][]byte) error) {
		defer wg.Done()
		for i := range 600 {
			its := make([][]byte, 8)
			for j := range its {
				its[j] = fmt.Appendf(nil, "w%d-%d-%d", w, i, j)
			}
			if err := add(its); err != nil {
				t.Error(err)
				return
			}
			for _, it := range its {
				added.Store(string(it), true)
			}
		}
	}
	wg.Add(4)
	go writer(0, func(its [][]byte) error {
		keyMu.Lock()
		defer keyMu.Unlock()
		r, err := st.BFMAdd(key, its...)
		for _, a := range r {
			if !a {
				hits.Add(1) // a false positive of a fresh item: rare, allowed
			}
		}
		return err
	})
	go writer(1, func(its [][]byte) error {
		time.Sleep(200 * time.Microsecond) // so that the cache answers between blind commits
		b := st.NewBatch()
		if err := b.BFAdd(key, its...); err != nil {
			return err
		}
		return b.Commit(nil)
	})
	go writer(2, func(its [][]byte) error {
		keyMu.Lock()
		defer keyMu.Unlock()
		d := st.NewDeferred(ts.db.NewBatch())
		if _, err := d.BFAdd(key, its...); err != nil {
			return err
		}
		return d.Commit()
	})
	go pageCacheReader(t, st, key, seed, &added, &violations, &wg)
	wg.Wait()
	require.Zero(t, violations.Load())
	checkAllPresent(t, st, key, &added)
	require.LessOrEqual(t, st.pageBudget.used.Load(), max(st.pageBudget.limit, 0))
	require.NoError(t, ts.db.Flush())
	checkAllPresent(t, st, key, &added)
	require.NoError(t, st.Delete(key))
	require.NoError(t, st.BFReserve(key, 0.01, 20_000_000, nil))
	var its [][]byte
	added.Range(func(k, _ any) bool { its = append(its, []byte(k.(string))); return true })
	ex, err := st.BFMExists(key, its...)
	require.NoError(t, err)
	for i, e := range ex {
		require.False(t, e, "item %q of the deleted filter answered present in the new one", its[i])
	}
	t.Logf("fresh items answered not added (false positives): %d; pages answered from the cache: %d", hits.Load(), st.pageBudget.hits.Load())
	if st.pageBudget.limit > 0 {
		require.NotZero(t, st.pageBudget.hits.Load(), "the cache never answered")
	}
}

// pageCacheReader checks, 400 times, that a sample of the items known
// added tests positive.
func pageCacheReader(t *testing.T, st *Store, key []byte, seed int64, added *sync.Map, violations *atomic.Int64, wg *sync.WaitGroup) {
	defer wg.Done()
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	for range 400 {
		var its [][]byte
		added.Range(func(k, _ any) bool {
			if rng.IntN(50) == 0 {
				its = append(its, []byte(k.(string)))
			}
			return len(its) < 64
		})
		if len(its) == 0 {
			continue
		}
		ex, err := st.BFMExists(key, its...)
		if err != nil {
			t.Error(err)
			return
		}
		for i, e := range ex {
			if !e {
				violations.Add(1)
				t.Errorf("item %q added but answered absent", its[i])
			}
		}
	}
}

func checkAllPresent(t *testing.T, st *Store, key []byte, added *sync.Map) {
	t.Helper()
	var its [][]byte
	added.Range(func(k, _ any) bool { its = append(its, []byte(k.(string))); return true })
	ex, err := st.BFMExists(key, its...)
	require.NoError(t, err)
	for i, e := range ex {
		require.True(t, e, "item %q added but answered absent", its[i])
	}
}

// TestPageCacheUsed shows the cache holds pages (so the coherence test
// above runs with a cache that answers) and stays within its budget.
func TestPageCacheUsed(t *testing.T) {
	ts := openTestStore(t, nil, &StoreOptions{PageCacheSize: 1 << 20})
	st := ts.Store
	key := []byte("bf")
	require.NoError(t, st.BFReserve(key, 0.01, 10_000_000, nil))
	for i := range 2000 {
		_, err := st.BFAdd(key, fmt.Appendf(nil, "i%d", i))
		require.NoError(t, err)
	}
	e := st.cachedHLL(st.stripe(key), key)
	require.NotNil(t, e)
	require.NotNil(t, e.pages)
	require.NotEmpty(t, e.pages.m)
	require.LessOrEqual(t, st.pageBudget.used.Load(), int64(1<<20))
	require.Equal(t, e.pages.bytes, st.pageBudget.used.Load())
	require.NoError(t, st.Delete(key))
	require.Zero(t, st.pageBudget.used.Load(), "a deleted filter's pages go back to the budget at once")

	// A batch applied for any key (FLUSHALL's) releases every filter's pages.
	for _, k := range []string{"a", "b"} {
		require.NoError(t, st.BFReserve([]byte(k), 0.01, 10_000_000, nil))
		_, err := st.BFMAdd([]byte(k), []byte("x"), []byte("y"))
		require.NoError(t, err)
	}
	require.NoError(t, st.CMSInitByDim([]byte("cms"), 2000, 7))
	_, err := st.CMSIncrBy([]byte("cms"), [][]byte{[]byte("x")}, []int64{1})
	require.NoError(t, err)
	require.Positive(t, st.pageBudget.used.Load())
	require.Positive(t, st.counters.used.Load())
	b := ts.db.NewBatch()
	require.NoError(t, st.DropAllPages(b))
	require.NoError(t, st.Apply(b, nil))
	require.Zero(t, st.pageBudget.used.Load())
	require.Zero(t, st.counters.used.Load())
}

// TestPageCacheModel interleaves, in one goroutine and in a random order
// (the seed is printed; SIEVE_SEED replays it), the writes that keep the
// page cache (BFMAdd, a Deferred's adds) with those that make it stale
// (blind Batch adds, Delete, a transaction's view) and flushes, and after
// each step checks the items just added and a sample of older ones.
func TestPageCacheModel(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 2))
	ts := openTestStore(t, &sieve.Options{MemTableSize: 256 << 10}, &StoreOptions{PageCacheSize: 512 << 10})
	st := ts.Store
	key := []byte("bf")
	require.NoError(t, st.BFReserve(key, 0.01, 5_000_000, nil))
	var all [][]byte
	steps := map[string]int{}
	for step := range 3000 {
		its := make([][]byte, 1+rng.IntN(6))
		for j := range its {
			its[j] = fmt.Appendf(nil, "s%d-%d", step, j)
		}
		op := []string{"madd", "madd", "madd", "deferred", "blind", "exists", "flush", "delete"}[rng.IntN(8)]
		steps[op]++
		switch op {
		case "madd":
			_, err := st.BFMAdd(key, its...)
			require.NoError(t, err)
		case "deferred":
			d := st.NewDeferred(ts.db.NewBatch())
			_, err := d.BFAdd(key, its...)
			require.NoError(t, err)
			require.NoError(t, d.Commit())
		case "blind":
			b := st.NewBatch()
			require.NoError(t, b.BFAdd(key, its...))
			require.NoError(t, b.Commit(nil))
		case "exists":
			its = nil
		case "flush":
			require.NoError(t, ts.db.Flush())
			its = nil
		case "delete":
			if rng.IntN(20) != 0 {
				its = nil
				break
			}
			require.NoError(t, st.Delete(key))
			require.NoError(t, st.BFReserve(key, 0.01, 5_000_000, nil))
			all, its = nil, nil
		}
		all = append(all, its...)
		check := slices.Clone(its)
		for range min(32, len(all)) {
			check = append(check, all[rng.IntN(len(all))])
		}
		if len(check) == 0 {
			continue
		}
		ex, err := st.BFMExists(key, check...)
		require.NoError(t, err)
		for i, e := range ex {
			require.True(t, e, "seed %d step %d (%s): item %q answered absent", seed, step, op, check[i])
		}
	}
	t.Logf("steps %v; pages answered from the cache %d", steps, st.pageBudget.hits.Load())
	require.NotZero(t, st.pageBudget.hits.Load())
}
