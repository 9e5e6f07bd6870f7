package sketchcol

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// The in-memory models of paged Count-Min and Top-K sketches: a sketch
// stored whole, whose bytes are the paged sketch's dump (what Store.Dump
// returns for it).

type memPagedCMS struct{ *CountMinSketch }

func (m memPagedCMS) appendValue(dst []byte) []byte {
	return append(dst, pagedDumpOf(m.CountMinSketch)...)
}

type memPagedTopK struct{ *TopK }

func (m memPagedTopK) appendValue(dst []byte) []byte { return append(dst, pagedDumpOf(m.TopK)...) }

// cmsOfModel and topKOfModel unwrap a model's sketch (nil: another kind).
func cmsOfModel(s sketch) *CountMinSketch {
	switch c := s.(type) {
	case *CountMinSketch:
		return c
	case memPagedCMS:
		return c.CountMinSketch
	}
	return nil
}

func topKOfModel(s sketch) *TopK {
	switch t := s.(type) {
	case *TopK:
		return t
	case memPagedTopK:
		return t.TopK
	}
	return nil
}

// pagedDumpOf is the dump of the paged sketch holding what s (a
// *CountMinSketch or *TopK) holds.
func pagedDumpOf(s sketch) []byte {
	var hdr []byte
	var pages int64
	var page func(p int64) []byte
	le := binary.LittleEndian
	switch x := s.(type) {
	case *CountMinSketch:
		hdr = (&pagedCMS{spec: x.spec, count: x.count}).appendValue(nil)
		pages = cmsPages(x.spec)
		ppr := int64(cmsRowPages(x.spec.Width))
		page = func(p int64) []byte {
			start := int(p/ppr)*x.spec.Width + int(p%ppr)*cmsPageCounters
			var b []byte
			for _, c := range x.counters[start : start+cmsPageLen(x.spec, p)] {
				b = le.AppendUint32(b, c)
			}
			return canonicalPage(kindCMSPage, b)
		}
	case *TopK:
		hdr = (&pagedTopK{x}).appendValue(nil)
		pages = topKPages(x.spec)
		ppr := int64(topKRowPages(x.spec.Width))
		page = func(p int64) []byte {
			start := int(p/ppr)*x.spec.Width + int(p%ppr)*topKPageBuckets
			var b []byte
			for _, c := range x.buckets[start : start+topKPageLen(x.spec, p)] {
				b = le.AppendUint32(le.AppendUint32(b, c.fp), c.count)
			}
			return canonicalPage(kindTopKPage, b)
		}
	default:
		panic("pagedDumpOf: not a Count-Min or Top-K sketch")
	}
	out := append([]byte{dumpKindOf(hdr[0]), version1}, binary.AppendUvarint(nil, uint64(len(hdr)))...)
	out = append(out, hdr...)
	for p := range pages {
		if b := page(p); b != nil {
			out = binary.BigEndian.AppendUint32(out, uint32(p))
			out = append(binary.AppendUvarint(out, uint64(len(b))), b...)
		}
	}
	return out
}

// TestPagedCMSTopKReplies: a paged sketch answers every command as the
// sketch stored whole fed the same commands, across flushes, compactions
// and a reopen; Dump/Restore round-trip it.
func TestPagedCMSTopKReplies(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 21))
	opts := sieve.Options{MemTableSize: 64 << 10, L0CompactionTrigger: 2}
	s := openTestStore(t, &opts, nil)
	cspec := CMSSpec{Width: 2100, Depth: 3} // rows of 3 pages, the last short
	tspec := TopKSpec{K: 7, Width: 1100, Depth: 3, Decay: 0.9}
	require.NoError(t, s.CMSInitByDim(k("c"), cspec.Width, cspec.Depth))
	require.NoError(t, s.TopKReserve(k("t"), tspec.K, tspec.Width, tspec.Depth, tspec.Decay))
	cm, _ := NewCMS(cspec)
	tm, _ := NewTopK(tspec)
	item := func() []byte {
		return []byte{byte('a' + rng.IntN(26)), byte('a' + rng.IntN(1+int(rng.ExpFloat64()*5)%25))}
	}
	for i := range 3000 {
		its := [][]byte{item(), item()}
		incrs := []int64{int64(rng.IntN(4)), int64(rng.IntN(50))}
		got, err := s.CMSIncrBy(k("c"), its, incrs)
		require.NoError(t, err)
		want, _ := CMSIncrByReply(cm.appendValue(nil), its, incrs)
		for j, it := range its {
			cm.IncrBy(it, uint64(incrs[j]))
		}
		require.Equal(t, want, got, "CMS.INCRBY %d", i)
		exp, err := s.TopKIncrBy(k("t"), its, incrs)
		require.NoError(t, err)
		var wexp [][]byte
		for j, it := range its {
			wexp = append(wexp, tm.Add(it, uint32(incrs[j])))
		}
		require.Equal(t, wexp, exp, "TOPK.INCRBY %d", i)
		switch i % 500 {
		case 100:
			require.NoError(t, s.db.Flush())
		case 300:
			require.NoError(t, s.pages.Compact(nil, nil))
		case 499:
			s = reopenTestStore(t, s, opts)
		}
	}
	q, err := s.CMSQuery(k("c"), k("aa"), k("zz"), k("ab"))
	require.NoError(t, err)
	require.Equal(t, []int64{int64(cm.Query(k("aa"))), int64(cm.Query(k("zz"))), int64(cm.Query(k("ab")))}, q)
	info, err := s.CMSInfo(k("c"))
	require.NoError(t, err)
	require.Equal(t, cm.Info(), info)
	l, err := s.TopKListWithCount(k("t"))
	require.NoError(t, err)
	require.Equal(t, tm.List(), l)
	n, err := s.TopKCount(k("t"), k("aa"), k("ab"))
	require.NoError(t, err)
	require.Equal(t, []int64{tm.Count(k("aa")), tm.Count(k("ab"))}, n)
	for key, m := range map[string]sketch{"c": cm, "t": tm} {
		d, err := s.Dump(k(key))
		require.NoError(t, err)
		require.Equal(t, pagedDumpOf(m), d, "Dump %s", key)
		require.NoError(t, s.Restore(k(key+"2"), d))
		d2, err := s.Dump(k(key + "2"))
		require.NoError(t, err)
		require.Equal(t, d, d2, "Dump of the restored %s", key)
	}
}

// reopenTestStore closes s's DB and opens it again with opts.
func reopenTestStore(t *testing.T, s *testStore, opts sieve.Options) *testStore {
	require.NoError(t, s.db.Close())
	opts.FS = s.fs
	return openTestStore(t, &opts, nil)
}

// TestPagedCMSMergeLarge: CMS.MERGE of sketches of more pages than a
// batch takes, with weights and the destination among the sources, and
// an overflow found in the last page writing nothing.
func TestPagedCMSMergeLarge(t *testing.T) {
	s := openTestStore(t, nil, nil)
	spec := CMSSpec{Width: 1500, Depth: 600} // 1200 pages
	a, _ := NewCMS(spec)
	b, _ := NewCMS(spec)
	require.NoError(t, s.CMSInitByDim(k("a"), spec.Width, spec.Depth))
	require.NoError(t, s.CMSInitByDim(k("b"), spec.Width, spec.Depth))
	for i := range 60 {
		it := [][]byte{{byte(i), 1}}
		_, err := s.CMSIncrBy(k("a"), it, []int64{int64(i)})
		require.NoError(t, err)
		a.IncrBy(it[0], uint64(i))
		require.NoError(t, s.CMSIncrByBlind(k("b"), it, []int64{3}))
		b.IncrBy(it[0], 3)
	}
	require.NoError(t, s.CMSMerge(k("a"), ks("a", "b"), []int64{2, 1}))
	want, err := mergeCMS(spec, []*CountMinSketch{a, b}, []int64{2, 1})
	require.NoError(t, err)
	d, err := s.Dump(k("a"))
	require.NoError(t, err)
	require.Equal(t, pagedDumpOf(want), d)
	// −b is negative: nothing is written.
	require.ErrorIs(t, s.CMSMerge(k("a"), ks("b"), []int64{-1}), ErrCMSMergeOverflow)
	d2, err := s.Dump(k("a"))
	require.NoError(t, err)
	require.Equal(t, d, d2, "a failed merge wrote something")
}

// TestLegacyCMSTopK: sketches stored whole (kinds 0x40, 0x50, restored
// from an earlier version) keep their path: commands answer as before,
// they stay whole, and CMS.MERGE into one makes it paged.
func TestLegacyCMSTopK(t *testing.T) {
	s := openTestStore(t, nil, nil)
	c, _ := NewCMS(CMSSpec{Width: 50, Depth: 3})
	tk, _ := NewTopK(TopKSpec{K: 3, Width: 20, Depth: 3, Decay: 0.9})
	require.NoError(t, s.Restore(k("c"), c.appendValue(nil)))
	require.NoError(t, s.Restore(k("t"), tk.appendValue(nil)))
	for i := range 300 {
		it := []byte{byte('a' + i%7)}
		got, err := s.CMSIncrBy(k("c"), [][]byte{it}, []int64{2})
		require.NoError(t, err)
		require.Equal(t, []int64{int64(c.IncrBy(it, 2))}, got)
		require.NoError(t, s.CMSIncrByBlind(k("c"), [][]byte{it}, []int64{1}))
		c.IncrBy(it, 1)
		exp, err := s.TopKAdd(k("t"), it)
		require.NoError(t, err)
		require.Equal(t, [][]byte{tk.Add(it, 1)}, exp)
		require.NoError(t, s.TopKAddBlind(k("t"), it))
		tk.Add(it, 1)
		if i == 150 {
			require.NoError(t, s.db.Flush())
		}
	}
	for key, m := range map[string]sketch{"c": c, "t": tk} {
		d, err := s.Dump(k(key))
		require.NoError(t, err)
		require.Equal(t, m.appendValue(nil), d, "%s stays whole", key)
	}
	require.NoError(t, s.CMSInitByDim(k("p"), 50, 3))
	require.NoError(t, s.CMSMerge(k("c"), ks("c", "p"), nil))
	d, err := s.Dump(k("c"))
	require.NoError(t, err)
	require.Equal(t, pagedDumpOf(c), d, "merged with a paged sketch: paged")
	q, err := s.CMSQuery(k("c"), []byte("a"))
	require.NoError(t, err)
	require.Equal(t, []int64{int64(c.Query([]byte("a")))}, q)
}

// TestPagedPageMergeAlgebra: every grouping of partial and full merges of
// random Count-Min and Top-K page operands equals applying them in order.
func TestPagedPageMergeAlgebra(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 22))
	var m PageMerger
	for h := range 300 {
		topk := h%2 == 1
		n := 1 + rng.IntN(40)
		var ops [][]byte
		for range 1 + rng.IntN(12) {
			if topk {
				o := &topKPageOp{n: n, row: 2, decay: 0.9}
				for range rng.IntN(6) {
					o.adds = append(o.adds, topKAdd{idx: rng.IntN(n), h: uint64(rng.IntN(5)) << 32, incr: uint32(rng.IntN(4))})
				}
				ops = append(ops, appendTopKPageOp(nil, o))
				continue
			}
			var adds []cmsAdd
			for range rng.IntN(6) {
				adds = append(adds, cmsAdd{idx: rng.IntN(n), incr: []uint64{0, 1, 5, 1 << 31, 1 << 32}[rng.IntN(5)]})
			}
			ops = append(ops, appendCMSPageOp(nil, n, sumCMSAdds(adds)))
		}
		want, err := m.FullMerge(nil, nil, false, ops)
		require.NoError(t, err)
		for range 4 {
			seg := append([][]byte(nil), ops...)
			for range rng.IntN(2 * len(seg)) {
				if len(seg) < 2 {
					break
				}
				i := rng.IntN(len(seg) - 1)
				j := i + 2 + rng.IntN(len(seg)-i-1)
				merged, ok := m.PartialMerge(nil, seg[i:j])
				require.True(t, ok)
				seg = append(append(append([][]byte(nil), seg[:i]...), merged), seg[j:]...)
			}
			cut := rng.IntN(len(seg) + 1)
			var base []byte
			if cut > 0 {
				base, err = m.FullMerge(nil, nil, false, seg[:cut])
				require.NoError(t, err)
			}
			got, err := m.FullMerge(nil, base, base != nil, seg[cut:])
			if cut == len(seg) {
				got, err = base, nil
			}
			require.NoError(t, err)
			require.Equal(t, want, got, "history %d (seed %d)", h, seed)
		}
	}
}

// TestPagedCountersCacheCoherence: the cached header and pages of a paged
// sketch follow every other way of writing it — a Batch, a transaction's
// view, a blind command, Delete and Restore — so that every reply equals
// the model's.
func TestPagedCountersCacheCoherence(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 23))
	s := openTestStore(t, &sieve.Options{MemTableSize: 256 << 10}, nil)
	cspec, tspec := CMSSpec{Width: 1500, Depth: 3}, TopKSpec{K: 4, Width: 600, Depth: 3, Decay: 0.9}
	var cm *CountMinSketch
	var tm *TopK
	reset := func() {
		require.NoError(t, s.Delete(k("c")))
		require.NoError(t, s.Delete(k("t")))
		require.NoError(t, s.CMSInitByDim(k("c"), cspec.Width, cspec.Depth))
		require.NoError(t, s.TopKReserve(k("t"), tspec.K, tspec.Width, tspec.Depth, tspec.Decay))
		cm, _ = NewCMS(cspec)
		tm, _ = NewTopK(tspec)
	}
	reset()
	item := func() []byte { return []byte{byte('a' + rng.IntN(8))} }
	for i := range 3000 {
		it := item()
		switch rng.IntN(8) {
		case 0, 1:
			got, err := s.CMSIncrBy(k("c"), [][]byte{it}, []int64{2})
			require.NoError(t, err)
			require.Equal(t, []int64{int64(cm.IncrBy(it, 2))}, got, "step %d (seed %d)", i, seed)
		case 2, 3:
			got, err := s.TopKAdd(k("t"), it)
			require.NoError(t, err)
			require.Equal(t, [][]byte{tm.Add(it, 1)}, got, "step %d (seed %d)", i, seed)
		case 4:
			b := s.NewBatch()
			require.NoError(t, b.CMSIncrBy(k("c"), [][]byte{it}, []int64{3}))
			require.NoError(t, b.TopKAdd(k("t"), it, it))
			require.NoError(t, b.Commit(nil))
			cm.IncrBy(it, 3)
			tm.Add(it, 1)
			tm.Add(it, 1)
		case 5:
			wb := s.db.NewIndexedBatch()
			v := s.WithBatch(wb)
			_, err := v.CMSIncrBy(k("c"), [][]byte{it}, []int64{1})
			require.NoError(t, err)
			_, err = v.TopKAdd(k("t"), it)
			require.NoError(t, err)
			require.NoError(t, s.Apply(wb, ks("c", "t")))
			cm.IncrBy(it, 1)
			tm.Add(it, 1)
		case 6:
			require.NoError(t, s.CMSIncrByBlind(k("c"), [][]byte{it}, []int64{1}))
			require.NoError(t, s.TopKAddBlind(k("t"), it))
			cm.IncrBy(it, 1)
			tm.Add(it, 1)
		default:
			if rng.IntN(10) == 0 {
				reset()
			} else if rng.IntN(5) == 0 {
				d, err := s.Dump(k("t"))
				require.NoError(t, err)
				require.NoError(t, s.Restore(k("t"), d))
			}
		}
	}
	for _, it := range ks("a", "b", "c", "h") {
		q, err := s.CMSQuery(k("c"), it)
		require.NoError(t, err)
		require.Equal(t, []int64{int64(cm.Query(it))}, q)
	}
	l, err := s.TopKListWithCount(k("t"))
	require.NoError(t, err)
	require.Equal(t, tm.List(), l)
}

// TestPagedCountersHeaderAlgebra: every grouping of partial and full
// merges of paged Count-Min and Top-K header operands (with a header
// base or none) equals applying them one at a time.
func TestPagedCountersHeaderAlgebra(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 24))
	cspec, tspec := CMSSpec{Width: 7, Depth: 2}, TopKSpec{K: 3, Width: 5, Depth: 2, Decay: 0.9}
	for h := range 200 {
		topk := h%2 == 1
		var ops [][]byte
		for range 1 + rng.IntN(15) {
			if !topk {
				ops = append(ops, appendPagedCMSOp(nil, &pagedCMSOp{spec: cspec, delta: []uint64{0, 1, 1 << 63}[rng.IntN(3)]}))
				continue
			}
			o := &pagedTopKOp{spec: tspec}
			for range rng.IntN(4) {
				o.offers = append(o.offers, topKOffer{count: uint32(rng.IntN(9)), item: []byte{byte('a' + rng.IntN(6))}})
			}
			ops = append(ops, appendPagedTopKOp(nil, o))
		}
		var base []byte
		var s sketch
		if rng.IntN(2) == 0 {
			if topk {
				p, _ := newPagedTopK(tspec)
				s = p
			} else {
				s = &pagedCMS{spec: cspec, count: 5}
			}
			base = s.appendValue(nil)
		}
		want := make([][]byte, len(ops)+1)
		for i, raw := range ops {
			o, err := decodeOperand(raw)
			require.NoError(t, err)
			s, err = applyOp(s, o)
			require.NoError(t, err)
			want[i+1] = s.appendValue(nil)
		}
		for g := range 4 {
			values, cuts := mergeInAnyGrouping(t, rng, base, ops)
			for k, v := range values {
				require.Equal(t, want[cuts[k]], v, "history %d grouping %d (seed %d)", h, g, seed)
			}
		}
	}
}
