package sketchcol

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Count-Min and Top-K in TestStoreCrashBlindIngestion: the first batch
// creates m0 and t0, paged, with small geometries (blind create-if-missing
// header operands), later batches add blind increments and adds to them
// (header and page operands in the batch).

var (
	crashCMSTopKKeys = []string{"m0", "t0"}
	crashCMSSpec     = CMSSpec{Width: 64, Depth: 4}
	crashTopKSpec    = TopKSpec{K: 5, Width: 32, Depth: 3, Decay: 0.9}
)

func (in *blindIngestion) reserveCMSTopK(t *testing.T, b *Batch) {
	// Paged sketches, created in the batch as a Batch's first add to a
	// missing key creates them (the header operand), their geometry
	// known to the batch's later adds.
	cop := appendPagedCMSOp(nil, &pagedCMSOp{spec: crashCMSSpec})
	top := appendPagedTopKOp(nil, &pagedTopKOp{spec: crashTopKSpec})
	require.NoError(t, b.b.MergeCF(b.s.cf, k("m0"), cop))
	require.NoError(t, b.b.MergeCF(b.s.cf, k("t0"), top))
	b.cms = map[string]CMSSpec{"m0": crashCMSSpec}
	hdr, err := newPagedTopK(crashTopKSpec)
	require.NoError(t, err)
	b.topk = map[string]*topKPageSet{"t0": newTopKPageSet(b.s.rawPage, k("t0"), hdr)}
	c, _ := NewCMS(crashCMSSpec)
	tk, _ := NewTopK(crashTopKSpec)
	in.model["m0"], in.model["t0"] = memPagedCMS{c}, memPagedTopK{tk}
}

// crashIncrs are the increments of a blind CMS.INCRBY of its.
func crashIncrs(its [][]byte) []int64 {
	out := make([]int64, len(its))
	for i, it := range its {
		out[i] = int64(1 + len(it)%5)
	}
	return out
}

func addCMSTopK(t *testing.T, b *Batch, key string, its [][]byte) {
	if key[0] == 'm' {
		require.NoError(t, b.CMSIncrBy(k(key), its, crashIncrs(its)))
		return
	}
	require.NoError(t, b.TopKAdd(k(key), its...))
}

func (m storeModel) applyBlindCMSTopK(key string, its [][]byte) {
	if key[0] == 'm' {
		c := cmsOfModel(m[key])
		for i, n := range crashIncrs(its) {
			c.IncrBy(its[i], uint64(n))
		}
		return
	}
	tk := topKOfModel(m[key])
	for _, it := range its {
		tk.Add(it, 1)
	}
}
