package sketchcol

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// The merge algebra and compaction equivalence for Count-Min and Top-K
// values, on the harness of merger_test.go and store_model_test.go.

type cmsTopKGen struct{ rng *rand.Rand }

func (g *cmsTopKGen) items(prefix string, maxN int) [][]byte {
	out := make([][]byte, g.rng.IntN(maxN+1))
	for i := range out {
		out[i] = fmt.Appendf(nil, "%s%d", prefix, g.rng.IntN(60))
	}
	return out
}

func (g *cmsTopKGen) cmsSpec() CMSSpec {
	return CMSSpec{Width: 1 + g.rng.IntN(30), Depth: 1 + g.rng.IntN(4)}
}

func (g *cmsTopKGen) topKSpec() TopKSpec {
	return TopKSpec{K: 1 + g.rng.IntN(6), Width: 1 + g.rng.IntN(12), Depth: 1 + g.rng.IntN(4), Decay: []float64{0.9, 0.5, 1, 0.99}[g.rng.IntN(4)]}
}

func (g *cmsTopKGen) cmsIncrs(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = []int64{0, 1, 2, 7, 1 << 31, 1 << 40}[g.rng.IntN(6)]
	}
	return out
}

func (g *cmsTopKGen) topKIncrs(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = []int64{0, 1, 1, 3, 20, 300}[g.rng.IntN(6)]
	}
	return out
}

// next returns a random command: mostly Count-Min or Top-K (fam), some of
// the other, a few restores and HLL adds (of another kind: dropped).
func (g *cmsTopKGen) next(t *testing.T, fam Kind) histOp {
	if g.rng.IntN(8) == 0 {
		fam = KindCMS + KindTopK - fam
	}
	switch r := g.rng.IntN(20); {
	case r == 0:
		return g.restore(t, fam)
	case r == 1:
		elems := g.items("h", 3)
		return histOp{"pfadd", PFAddOp(elems...), func(t *testing.T, s sketch) sketch {
			if s == nil {
				s = NewHLL()
			}
			if h, ok := s.(*HLL); ok {
				for _, e := range elems {
					h.Add(e)
				}
			}
			return s
		}}
	case fam == KindCMS:
		return g.cmsOp(t, r < 4)
	default:
		return g.topKOp(t, r < 4)
	}
}

func (g *cmsTopKGen) cmsOp(t *testing.T, init bool) histOp {
	spec, items := DefaultCMSSpec(), g.items("c", 8)
	incrs := g.cmsIncrs(len(items))
	var o []byte
	var err error
	if init {
		spec, items = g.cmsSpec(), nil
		o, err = CMSInitOp(spec)
	} else {
		o, err = CMSIncrByOp(items, incrs)
	}
	require.NoError(t, err)
	return histOp{fmt.Sprintf("cms init=%v", init), o, func(t *testing.T, s sketch) sketch {
		if s == nil {
			var err error
			s, err = NewCMS(spec)
			require.NoError(t, err)
		}
		if c, ok := s.(*CountMinSketch); ok {
			for i, it := range items {
				c.IncrBy(it, uint64(incrs[i]))
			}
		}
		return s
	}}
}

func (g *cmsTopKGen) topKOp(t *testing.T, reserve bool) histOp {
	spec, items := DefaultTopKSpec(), g.items("t", 8)
	incrs := g.topKIncrs(len(items))
	var o []byte
	var err error
	if reserve {
		spec, items = g.topKSpec(), nil
		o, err = TopKReserveOp(spec)
	} else {
		o, err = TopKIncrByOp(items, incrs)
	}
	require.NoError(t, err)
	return histOp{fmt.Sprintf("topk reserve=%v", reserve), o, func(t *testing.T, s sketch) sketch {
		if s == nil {
			var err error
			s, err = NewTopK(spec)
			require.NoError(t, err)
		}
		if tk, ok := s.(*TopK); ok {
			for i, it := range items {
				tk.Add(it, uint32(incrs[i]))
			}
		}
		return s
	}}
}

func (g *cmsTopKGen) value(t *testing.T, fam Kind) sketch {
	if fam == KindCMS {
		c, err := NewCMS(g.cmsSpec())
		require.NoError(t, err)
		for _, it := range g.items("c", 20) {
			c.IncrBy(it, uint64(1+g.rng.IntN(9)))
		}
		return c
	}
	tk, err := NewTopK(g.topKSpec())
	require.NoError(t, err)
	for _, it := range g.items("t", 40) {
		tk.Add(it, uint32(g.rng.IntN(5)))
	}
	return tk
}

func (g *cmsTopKGen) restore(t *testing.T, fam Kind) histOp {
	v := g.value(t, fam).appendValue(nil)
	o, err := SetOp(v)
	require.NoError(t, err)
	return histOp{"restore-" + fam.String(), o, func(t *testing.T, _ sketch) sketch {
		s, err := decodeValue(v)
		require.NoError(t, err)
		return s
	}}
}

// TestCMSTopKMergeAlgebra: every grouping of partial and full merges of a
// random history equals applying its commands one item at a time.
func TestCMSTopKMergeAlgebra(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 3))
	histories := 200
	if testing.Short() {
		histories = 40
	}
	g := &cmsTopKGen{rng: rng}
	for h := range histories {
		fam := []Kind{KindCMS, KindTopK}[h%2]
		n := 1 + rng.IntN(25)
		hist := make([]histOp, n)
		ops := make([][]byte, n)
		for i := range hist {
			hist[i] = g.next(t, fam)
			ops[i] = hist[i].operand
		}
		var base []byte
		var s sketch
		if rng.IntN(3) == 0 {
			s = g.value(t, []Kind{KindCMS, KindTopK}[rng.IntN(2)])
			base = s.appendValue(nil)
		}
		want := make([][]byte, n+1)
		for i, op := range hist {
			s = op.apply(t, s)
			want[i+1] = s.appendValue(nil)
		}
		for grouping := range 4 {
			values, cuts := mergeInAnyGrouping(t, rng, base, ops)
			for k, v := range values {
				require.Equal(t, want[cuts[k]], v, "history %d grouping %d: value after %d commands (cuts %v)", h, grouping, cuts[k], cuts)
			}
		}
	}
}

// TestStoreCMSTopKCompactionEquivalence runs random CMS.* and TOPK.*
// commands (replied and blind, with wrong-type keys) on the Store and on
// an in-memory model; replies must agree, and values and replies must be
// identical before and after Flush + Compact.
func TestStoreCMSTopKCompactionEquivalence(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 4))
	s := openTestStore(t, &sieve.Options{MemTableSize: 64 << 10, L0CompactionTrigger: 2}, nil)
	w := &workload{t: t, rng: rng, s: s, m: storeModel{}}
	g := &cmsTopKGen{rng: rng}
	steps := 3000
	if raceEnabled || testing.Short() {
		steps = 800
	}
	for i := range steps {
		cmsTopKStep(w, g)
		if i%250 == 249 {
			require.NoError(t, s.db.Flush())
		}
	}
	before := cmsTopKReplies(t, w)
	require.NoError(t, s.db.Flush())
	require.NoError(t, s.ColumnFamily().Compact(nil, nil))
	merges := s.merger.fullMerges.Load()
	require.Equal(t, before, cmsTopKReplies(t, w), "values and replies differ across Flush + Compact")
	require.Equal(t, merges, s.merger.fullMerges.Load(), "after compaction reads merge nothing")
	t.Logf("%d commands on %d keys", w.n, len(w.m))
}

// cmsTopKReplies returns every key's Dump (checked against the model) and
// the read-only replies on it.
func cmsTopKReplies(t *testing.T, w *workload) map[string][]any {
	out := map[string][]any{}
	probe := ks("c1", "c2", "t1", "t2", "t3")
	for _, key := range w.m.keys() {
		d, err := w.s.Dump(k(key))
		require.NoError(t, err)
		require.Equal(t, w.m.bytes(key), d, "key %s", key)
		q, qerr := w.s.CMSQuery(k(key), probe...)
		l, lerr := w.s.TopKListWithCount(k(key))
		tq, tqerr := w.s.TopKQuery(k(key), probe...)
		out[key] = []any{d, q, qerr, l, lerr, tq, tqerr}
	}
	return out
}

func cmsTopKKey(w *workload, fam string) string {
	if w.rng.IntN(10) == 0 {
		fam = []string{"m", "k", "h"}[w.rng.IntN(3)]
	}
	return fmt.Sprintf("%s%d", fam, w.rng.IntN(3))
}

// cmsTopKStep runs one random command on the Store and the model.
func cmsTopKStep(w *workload, g *cmsTopKGen) {
	switch w.rng.IntN(12) {
	case 0:
		cmsInitStep(w, g)
	case 1, 2:
		cmsIncrStep(w, g, w.rng.IntN(2) == 0)
	case 3:
		key := cmsTopKKey(w, "m")
		got, err := w.s.CMSQuery(k(key), g.items("c", 4)...)
		_, werr := CMSQueryReply(w.m.bytes(key), g.items("c", 0)...)
		w.checkKnown("CMS.QUERY "+key, got != nil, werr == nil, err, werr)
	case 4:
		cmsMergeStep(w)
	case 5:
		topKReserveStep(w, g)
	case 6, 7, 8:
		topKAddStep(w, g, w.rng.IntN(3) == 0)
	case 9:
		key := cmsTopKKey(w, "k")
		got, err := w.s.TopKListWithCount(k(key))
		want, werr := TopKListReply(w.m.bytes(key))
		w.checkKnown("TOPK.LIST "+key, got, want, err, werr)
	case 10:
		key := cmsTopKKey(w, "h")
		elems := g.items("h", 3)
		require.NoError(w.t, w.s.PFAddBlind(k(key), elems...))
		op := (&cmsTopKGen{}).pfApply(elems)
		w.m[key] = op(w.t, w.m[key])
	case 11:
		key := cmsTopKKey(w, []string{"m", "k"}[w.rng.IntN(2)])
		v := g.value(w.t, []Kind{KindCMS, KindTopK}[w.rng.IntN(2)])
		if w.rng.IntN(2) == 0 { // a paged sketch's dump
			switch x := v.(type) {
			case *CountMinSketch:
				v = memPagedCMS{x}
			case *TopK:
				v = memPagedTopK{x}
			}
		}
		require.NoError(w.t, w.s.Restore(k(key), v.appendValue(nil)))
		w.m[key] = v
	}
}

func (*cmsTopKGen) pfApply(elems [][]byte) func(*testing.T, sketch) sketch {
	return func(_ *testing.T, s sketch) sketch {
		if s == nil {
			s = NewHLL()
		}
		if h, ok := s.(*HLL); ok {
			for _, e := range elems {
				h.Add(e)
			}
		}
		return s
	}
}

func cmsInitStep(w *workload, g *cmsTopKGen) {
	key, spec := cmsTopKKey(w, "m"), g.cmsSpec()
	err := w.s.CMSInitByDim(k(key), spec.Width, spec.Depth)
	var werr error
	if w.m[key] != nil {
		werr = ErrCMSKeyExists
	} else {
		c, _ := NewCMS(spec)
		w.m[key] = memPagedCMS{c}
	}
	w.checkKnown("CMS.INITBYDIM "+key, nil, nil, err, werr)
}

func cmsIncrStep(w *workload, g *cmsTopKGen, blind bool) {
	key, items := cmsTopKKey(w, "m"), g.items("c", 6)
	incrs := g.cmsIncrs(len(items))
	if blind {
		require.NoError(w.t, w.s.CMSIncrByBlind(k(key), items, incrs))
		w.m[key] = (&cmsTopKGen{}).cmsApply(items, incrs)(w.t, w.m[key])
		return
	}
	got, err := w.s.CMSIncrBy(k(key), items, incrs)
	want, werr := CMSIncrByReply(w.m.bytes(key), items, incrs)
	if want != nil {
		w.m[key] = (&cmsTopKGen{}).cmsApply(items, incrs)(w.t, w.m[key])
	}
	w.checkKnown("CMS.INCRBY "+key, got, want, err, werr)
}

func (*cmsTopKGen) cmsApply(items [][]byte, incrs []int64) func(*testing.T, sketch) sketch {
	return func(t *testing.T, s sketch) sketch {
		if s == nil { // a blind write creates a paged sketch
			c, _ := NewCMS(DefaultCMSSpec())
			s = memPagedCMS{c}
		}
		if c := cmsOfModel(s); c != nil {
			for i, it := range items {
				c.IncrBy(it, uint64(incrs[i]))
			}
		}
		return s
	}
}

func cmsMergeStep(w *workload) {
	dst := cmsTopKKey(w, "m")
	srcs := []string{cmsTopKKey(w, "m"), cmsTopKKey(w, "m")}[:1+w.rng.IntN(2)]
	weights := []int64{1, 2, -1, 3}[:len(srcs)]
	if w.rng.IntN(3) == 0 {
		weights = nil
	}
	err := w.s.CMSMerge(k(dst), ks(srcs...), weights)
	vs := make([][]byte, len(srcs))
	for i, src := range srcs {
		vs[i] = w.m.bytes(src)
	}
	op, werr := CMSMergeOp(w.m.bytes(dst), vs, weights)
	if werr == nil {
		o, derr := decodeOperand(op)
		require.NoError(w.t, derr)
		paged := false // the destination becomes paged if any key is (dst may be a source)
		for _, key := range append([]string{dst}, srcs...) {
			_, p := w.m[key].(memPagedCMS)
			paged = paged || p
		}
		w.m[dst] = o.(*setOp).value
		if paged {
			w.m[dst] = memPagedCMS{o.(*setOp).value.(*CountMinSketch)}
		}
	}
	w.checkKnown("CMS.MERGE "+dst, nil, nil, err, werr)
}

func topKReserveStep(w *workload, g *cmsTopKGen) {
	key, spec := cmsTopKKey(w, "k"), g.topKSpec()
	err := w.s.TopKReserve(k(key), spec.K, spec.Width, spec.Depth, spec.Decay)
	var werr error
	if w.m[key] != nil {
		werr = ErrTopKKeyExists
	} else {
		tk, _ := NewTopK(spec)
		w.m[key] = memPagedTopK{tk}
	}
	w.checkKnown("TOPK.RESERVE "+key, nil, nil, err, werr)
}

func topKAddStep(w *workload, g *cmsTopKGen, blind bool) {
	key, items := cmsTopKKey(w, "k"), g.items("t", 6)
	incrs := g.topKIncrs(len(items))
	apply := func(s sketch) sketch {
		if s == nil { // a blind write creates a paged sketch
			tk, _ := NewTopK(DefaultTopKSpec())
			s = memPagedTopK{tk}
		}
		if tk := topKOfModel(s); tk != nil {
			for i, it := range items {
				tk.Add(it, uint32(incrs[i]))
			}
		}
		return s
	}
	if blind {
		for i := range incrs {
			incrs[i] = 1
		}
		require.NoError(w.t, w.s.TopKAddBlind(k(key), items...))
		w.m[key] = apply(w.m[key])
		return
	}
	got, err := w.s.TopKIncrBy(k(key), items, incrs)
	want, werr := TopKIncrByReply(w.m.bytes(key), items, incrs)
	if werr == nil {
		w.m[key] = apply(w.m[key])
	}
	w.checkKnown("TOPK.INCRBY "+key, got, want, err, werr)
}

// checkKnown is workload.check with the model's error reduced to the
// package's sentinel it wraps.
func (w *workload) checkKnown(name string, got, want any, gotErr, wantErr error) {
	w.t.Helper()
	for _, e := range []error{ErrWrongType, ErrCMSKeyNotFound, ErrCMSKeyExists, ErrCMSDimensions, ErrCMSMergeOverflow,
		ErrCMSIncrByOverflow, ErrTopKKeyNotFound, ErrTopKKeyExists} {
		if errors.Is(wantErr, e) {
			wantErr = e
			break
		}
	}
	w.check(name, got, want, gotErr, wantErr)
}
