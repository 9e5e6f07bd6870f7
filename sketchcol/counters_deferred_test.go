package sketchcol

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// TestDeferredCounters: a Deferred's CMS.INCRBY, TOPK.ADD and TOPK.INCRBY
// answer as the Store's locked commands do on the same random sequence,
// one after the other (the batch's earlier writes count), over several
// commits with plain commands and DB flushes between them, and leave the
// same Dump; keys the Deferred does not take are refused with
// ErrInvalidArgument and nothing written.
func TestDeferredCounters(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	s := openTestStore(t, nil, nil)
	ref := openTestStore(t, nil, nil) // the same commands, one Store call each
	for _, st := range []*testStore{s, ref} {
		require.NoError(t, st.CMSInitByDim(k("cms"), 2500, 3))
		require.NoError(t, st.CMSInitByDim(k("cms2"), 40, 2))
		require.NoError(t, st.TopKReserve(k("tk"), 5, 30, 4, 0.9))
		require.NoError(t, st.TopKReserve(k("tk2"), 3, 8, 2, 0.5))
	}
	keys := []string{"cms", "cms2", "tk", "tk2"}
	item := func() []byte { return fmt.Appendf(nil, "i%d", int(rng.ExpFloat64()*20)) }
	for round := range 12 {
		d := s.NewDeferred(s.db.NewBatch())
		for i := range 1 + rng.IntN(200) {
			key := k(keys[rng.IntN(len(keys))])
			n := 1 + rng.IntN(3)
			items := make([][]byte, n)
			incrs := make([]int64, n)
			for j := range items {
				items[j], incrs[j] = item(), int64(rng.IntN(12))
				if rng.IntN(400) == 0 {
					incrs[j] = math.MaxInt64 - int64(rng.IntN(2)) // overflow (CMS), or a bad increment (Top-K)
				}
			}
			where := fmt.Sprintf("round %d op %d key %s %q %v", round, i, key, items, incrs)
			switch {
			case key[0] == 'c':
				got, err := d.CMSIncrBy(key, items, incrs)
				want, werr := ref.CMSIncrBy(key, items, incrs)
				require.Equal(t, werr, err, where)
				require.Equal(t, want, got, where)
			case rng.IntN(2) == 0:
				got, err := d.TopKAdd(key, items...)
				want, werr := ref.TopKAdd(key, items...)
				require.Equal(t, werr, err, where)
				require.Equal(t, want, got, where)
			default:
				got, err := d.TopKIncrBy(key, items, incrs)
				want, werr := ref.TopKIncrBy(key, items, incrs)
				require.Equal(t, fmt.Sprint(werr), fmt.Sprint(err), where)
				require.Equal(t, want, got, where)
			}
		}
		for _, key := range keys { // reads while pending cache the value without the batch
			if key[0] == 'c' {
				_, err := s.CMSQuery(k(key), k("i1"))
				require.NoError(t, err)
			} else {
				_, err := s.TopKList(k(key))
				require.NoError(t, err)
			}
		}
		require.NoError(t, d.Commit())
		compareCounters(t, s, ref, keys, round)
		if rng.IntN(3) == 0 { // a plain command between commits
			for _, st := range []*testStore{s, ref} {
				_, err := st.CMSIncrBy(k("cms"), [][]byte{k("i1")}, []int64{3})
				if err != nil { // the random increments may have saturated i1's counters
					require.ErrorIs(t, err, ErrCMSIncrByOverflow)
				}
				_, err = st.TopKAdd(k("tk"), k("i2"))
				require.NoError(t, err)
			}
		}
		if rng.IntN(3) == 0 {
			require.NoError(t, s.db.Flush())
			require.NoError(t, ref.db.Flush())
		}
	}
}

// compareCounters requires keys to dump and answer alike in s and ref.
func compareCounters(t *testing.T, s, ref *testStore, keys []string, round int) {
	t.Helper()
	for _, key := range keys {
		got, err := s.Dump(k(key))
		require.NoError(t, err)
		want, err := ref.Dump(k(key))
		require.NoError(t, err)
		require.Equal(t, want, got, "round %d key %s", round, key)
		items := [][]byte{k("i0"), k("i1"), k("i2"), k("i9")}
		if key[0] == 'c' {
			ge, err := s.CMSQuery(k(key), items...)
			require.NoError(t, err)
			we, err := ref.CMSQuery(k(key), items...)
			require.NoError(t, err)
			require.Equal(t, we, ge, "round %d key %s", round, key)
		} else {
			gl, err := s.TopKListWithCount(k(key))
			require.NoError(t, err)
			wl, err := ref.TopKListWithCount(k(key))
			require.NoError(t, err)
			require.Equal(t, wl, gl, "round %d key %s", round, key)
		}
	}
}

// TestDeferredCountersRefused: a missing key, another kind and sketches
// stored whole are refused (ErrInvalidArgument, with the Store's error)
// and nothing is added to the batch.
func TestDeferredCountersRefused(t *testing.T) {
	s := openTestStore(t, nil, nil)
	c, err := NewCMS(CMSSpec{Width: 10, Depth: 2})
	require.NoError(t, err)
	v, _ := c.MarshalBinary()
	require.NoError(t, s.Restore(k("lcms"), v))
	tk, err := NewTopK(DefaultTopKSpec())
	require.NoError(t, err)
	v, _ = tk.MarshalBinary()
	require.NoError(t, s.Restore(k("ltk"), v))
	require.NoError(t, s.Put(k("str"), []byte{0, 's'}))
	require.NoError(t, s.TopKReserve(k("tk"), 3, 8, 2, 0.9))
	d := s.NewDeferred(s.db.NewBatch())
	for _, key := range []string{"lcms", "nokey", "str", "tk"} {
		_, err := d.CMSIncrBy(k(key), [][]byte{k("a")}, []int64{1})
		require.ErrorIs(t, err, ErrInvalidArgument, key)
	}
	_, err = d.CMSIncrBy(k("nokey"), [][]byte{k("a")}, []int64{1})
	require.ErrorIs(t, err, ErrCMSKeyNotFound)
	for _, key := range []string{"ltk", "nokey", "str", "lcms"} {
		_, err := d.TopKAdd(k(key), k("a"))
		require.ErrorIs(t, err, ErrInvalidArgument, key)
	}
	_, err = d.TopKAdd(k("str"), k("a"))
	require.ErrorIs(t, err, ErrWrongType)
	_, err = d.TopKIncrBy(k("tk"), [][]byte{k("a")}, []int64{-1})
	require.ErrorIs(t, err, ErrTopKInvalidIncr)
	require.False(t, d.Pending())
	require.NoError(t, d.Commit())
}
