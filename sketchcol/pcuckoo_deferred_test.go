package sketchcol

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sievedb/sieve/internal/testutil"
)

// cfDeferredKeys are the keys of TestDeferredCFAdd: filters that grow, a
// filter that cannot, one that reaches the most sub-filters, one created
// by the first add, and keys of the same stripe as the first (so that a
// batch holds several filters) and of others.
func cfDeferredKeys(t *testing.T, s *testStore, ref *testStore) []string {
	for _, st := range []*testStore{s, ref} {
		require.NoError(t, st.CFReserve(k("grow"), 64, &CFReserveOptions{BucketSize: 2, MaxIterations: 5, Expansion: 2}))
		require.NoError(t, st.CFReserve(k("full"), 32, &CFReserveOptions{BucketSize: 1, MaxIterations: 3, NonScaling: true}))
		require.NoError(t, st.CFReserve(k("max"), 2, &CFReserveOptions{BucketSize: 1, MaxIterations: 1, Expansion: 1}))
		require.NoError(t, st.Put(k("str"), []byte{0, 's'}))
	}
	keys := []string{"grow", "full", "max", "new", "str"}
	want := s.stripe(k("grow"))
	same := 0
	for i := 0; same < 2 || len(keys) < 8; i++ {
		key := fmt.Sprint("k", i)
		if s.stripe(k(key)) == want && same < 2 {
			keys, same = append(keys, key), same+1
		} else if s.stripe(k(key)) != want && len(keys)-same < 6 {
			keys = append(keys, key)
		}
	}
	return keys
}

// TestDeferredCFAdd: a Deferred's CF.ADDs and CF.ADDNXs answer as the
// Store's would, one after the other, and leave the same values (Dump)
// after Commit; a call it refuses, run by the Store after a Commit as a
// server does, answers as the Store alone. Blind adds (Batch.CFAdd) leave
// pending adds for the Deferred's first add to place.
// The filters Commit caches for the next Deferred (pcuckoo_dcache.go) are
// tried with the default budget, one of a few pages and none; plain
// Store commands between Deferreds make them stale.
func TestDeferredCFAdd(t *testing.T) {
	for _, size := range []int64{0, 3 * cuckooPageCost, -1} {
		t.Run(fmt.Sprint("cache", size), func(t *testing.T) {
			testDeferredCFAdd(t, &StoreOptions{PageCacheSize: size})
		})
	}
}

func testDeferredCFAdd(t *testing.T, o *StoreOptions) {
	rng := rand.New(rand.NewPCG(uint64(testutil.Seed(t)), 1))
	s := openTestStore(t, nil, o)
	ref := openTestStore(t, nil, nil) // the same commands, one Store call each
	keys := cfDeferredKeys(t, s, ref)
	refused := 0
	for round := range 12 {
		key := keys[rng.IntN(len(keys))]
		for _, st := range []*testStore{s, ref} { // pending adds, the same in both
			b := st.NewBatch()
			if key != "str" {
				require.NoError(t, b.CFAdd(k(key), fmt.Appendf(nil, "p%d", round), fmt.Appendf(nil, "q%d", round)))
				require.NoError(t, b.Commit(nil))
			}
		}
		d := s.NewDeferred(s.db.NewBatch())
		for i := range 300 {
			key, nx := k(keys[rng.IntN(len(keys))]), rng.IntN(3) == 0
			item := fmt.Appendf(nil, "i%d", rng.IntN(400))
			if rng.IntN(40) == 0 { // a plain write between Deferreds
				require.NoError(t, d.Commit())
				_, err := s.CFDel(key, item)
				_, werr := ref.CFDel(key, item)
				require.Equal(t, werr, err)
			}
			if !d.CFJoins(key) {
				require.NoError(t, d.Commit())
			}
			got, err := cfDeferredAdd(d, key, item, nx)
			if err != nil { // as a server: commit, then the plain command
				refused++
				require.NoError(t, d.Commit())
				got, err = cfStoreAdd(s.Store, key, item, nx)
			}
			want, werr := cfStoreAdd(ref.Store, key, item, nx)
			require.Equal(t, werr, err, "round %d op %d key %s", round, i, key)
			require.Equal(t, want, got, "round %d op %d key %s", round, i, key)
		}
		require.NoError(t, d.Commit())
		for _, key := range keys {
			got, err := s.Dump(k(key))
			want, werr := ref.Dump(k(key))
			require.Equal(t, werr, err, "round %d key %s", round, key)
			require.Equal(t, want, got, "round %d key %s", round, key)
		}
		if round%3 == 2 {
			require.NoError(t, s.db.Flush())
			require.NoError(t, ref.db.Flush())
		}
	}
	info, err := s.CFInfo(k("max"))
	require.NoError(t, err)
	require.EqualValues(t, maxCuckooFilters, info.NumFilters, "the test reaches the most sub-filters")
	require.NotZero(t, refused)
}

func cfDeferredAdd(d *Deferred, key, item []byte, nx bool) (bool, error) {
	if nx {
		return d.CFAddNX(key, item)
	}
	return d.CFAdd(key, item)
}

func cfStoreAdd(s *Store, key, item []byte, nx bool) (bool, error) {
	if nx {
		return s.CFAddNX(key, item)
	}
	return s.CFAdd(key, item)
}

// TestDeferredCFAddRefused: a filter stored whole, a key of another type
// and a key the batch wrote as an HLL are refused with nothing written,
// and a batch that fails leaves nothing applied and the filter readable.
func TestDeferredCFAddRefused(t *testing.T) {
	s := openTestStore(t, nil, nil)
	legacy, err := NewCuckooFilter(DefaultCuckooSpec())
	require.NoError(t, err)
	v, _ := legacy.MarshalBinary()
	require.NoError(t, s.Restore(k("legacy"), v))
	require.NoError(t, s.Put(k("str"), []byte{0, 's'}))
	d := s.NewDeferred(s.db.NewBatch())
	_, err = d.CFAdd(k("legacy"), k("x"))
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = d.CFAddNX(k("str"), k("x"))
	require.ErrorIs(t, err, ErrWrongType)
	_, _, err = d.PFAdd(k("hll"), k("a"))
	require.NoError(t, err)
	_, err = d.CFAdd(k("hll"), k("x"))
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.Equal(t, 1, d.Batch().Len(), "the PFADD's operand only")
	require.NoError(t, d.Commit())

	ok, err := d.CFAdd(k("cf"), k("x"))
	require.NoError(t, err)
	require.True(t, ok)
	// A write the engine refuses fails the batch: nothing of it applies.
	require.Error(t, d.Batch().PutCF(s.cf, make([]byte, 64<<20+1), nil))
	require.Error(t, d.Commit())
	ok, err = s.CFExists(k("cf"), k("x"))
	require.NoError(t, err)
	require.False(t, ok)
	ok, err = d.CFAddNX(k("cf"), k("x"))
	require.NoError(t, err)
	require.True(t, ok, "the failed batch's add is not there")
	require.NoError(t, d.Commit())
	n, err := s.CFCount(k("cf"), k("x"))
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
}
