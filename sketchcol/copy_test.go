package sketchcol

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCopyValue copies values of every paged kind, and a plain one, with
// CopyValue: the copy's Dump equals the source's, the copy answers as the
// source after the source is deleted (a rename: both in one batch), and a
// paged destination's old pages are dropped.
func TestCopyValue(t *testing.T) {
	s := openTestStore(t, nil, nil)
	items := make([][]byte, 0, 5000)
	for i := range 5000 {
		items = append(items, fmt.Appendf(nil, "i%d", i))
	}
	require.NoError(t, s.BFReserve(k("bf"), 0.01, 2000, nil))
	_, err := s.BFMAdd(k("bf"), items...)
	require.NoError(t, err)
	require.NoError(t, s.CFReserve(k("cf"), 200_000, &CFReserveOptions{BucketSize: 4}))
	for _, it := range items[:500] {
		_, err := s.CFAdd(k("cf"), it)
		require.NoError(t, err)
	}
	require.NoError(t, s.CMSInitByDim(k("cms"), 100_000, 4))
	_, err = s.CMSIncrBy(k("cms"), items[:3], []int64{5, 6, 7})
	require.NoError(t, err)
	require.NoError(t, s.TopKReserve(k("topk"), 10, 100_000, 4, 0.9))
	_, err = s.TopKAdd(k("topk"), items[:20]...)
	require.NoError(t, err)
	_, err = s.PFAdd(k("hll"), items[:100]...)
	require.NoError(t, err)
	for _, src := range []string{"bf", "cf", "cms", "topk", "hll"} {
		raw, err := s.get(k(src))
		require.NoError(t, err)
		want, err := s.Dump(k(src))
		require.NoError(t, err)
		if src != "hll" {
			require.Contains(t, []byte{kindPagedBloom, kindPagedCuckoo, kindPagedCMS, kindPagedTopK}, raw[0], "%s is paged", src)
		}
		// The destination held a paged Bloom filter of another geometry.
		require.NoError(t, s.Delete(k("dst")))
		require.NoError(t, s.BFReserve(k("dst"), 0.001, 3000, nil))
		_, err = s.BFAdd(k("dst"), k("old"))
		require.NoError(t, err)
		b := s.db.NewBatch()
		ok, err := s.CopyValue(b, k(src), k("dst"))
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, b.DeleteCF(s.cf, k(src)))
		require.NoError(t, s.DropPages(b, k(src)))
		require.NoError(t, s.Apply(b, ks(src, "dst")))
		got, err := s.Dump(k("dst"))
		require.NoError(t, err)
		require.Equal(t, want, got, "%s (kind %#x)", src, raw[0])
		gone, err := s.get(k(src))
		require.NoError(t, err)
		require.Nil(t, gone)
		// Back, for the next round's checks of the source.
		b = s.db.NewBatch()
		_, err = s.CopyValue(b, k("dst"), k(src))
		require.NoError(t, err)
		require.NoError(t, s.Apply(b, ks(src)))
	}
	in, err := s.BFMExists(k("bf"), items[:3]...)
	require.NoError(t, err)
	require.Equal(t, []bool{true, true, true}, in)
	n, err := s.CMSQuery(k("cms"), items[:3]...)
	require.NoError(t, err)
	require.Equal(t, []int64{5, 6, 7}, n)
	// The last round copied an HLL over the paged "dst": none of the
	// Bloom filter's pages stay.
	it := s.pages.NewIter(nil)
	for ok := it.First(); ok; ok = it.Next() {
		require.NotContains(t, string(it.Key()), "dst", "a page of the replaced filter is left")
	}
	require.NoError(t, it.Close())
	ok, err := s.CopyValue(s.db.NewBatch(), k("missing"), k("dst"))
	require.NoError(t, err)
	require.False(t, ok)
	// A caller's own bytes (no sketch) are copied as they are.
	require.NoError(t, s.Put(k("own"), []byte{0, 'x'}))
	b := s.db.NewBatch()
	ok, err = s.CopyValue(b, k("own"), k("own2"))
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, s.Apply(b, ks("own2")))
	v, err := s.cf.Get(k("own2"))
	require.NoError(t, err)
	require.Equal(t, []byte{0, 'x'}, v)
}
