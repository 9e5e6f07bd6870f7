package sketchcol

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Count-Min and Top-K in TestStoreCrashBlindIngestion: the first batch
// creates m0 and t0 with small geometries (blind create-if-missing
// operands), later batches add blind increments and adds to them.

var (
	crashCMSTopKKeys = []string{"m0", "t0"}
	crashCMSSpec     = CMSSpec{Width: 64, Depth: 4}
	crashTopKSpec    = TopKSpec{K: 5, Width: 32, Depth: 3, Decay: 0.9}
)

func (in *blindIngestion) reserveCMSTopK(t *testing.T, b *Batch) {
	cop, err := CMSInitOp(crashCMSSpec)
	require.NoError(t, err)
	top, err := TopKReserveOp(crashTopKSpec)
	require.NoError(t, err)
	require.NoError(t, b.b.MergeCF(b.s.cf, k("m0"), cop))
	require.NoError(t, b.b.MergeCF(b.s.cf, k("t0"), top))
	in.model["m0"], _ = NewCMS(crashCMSSpec)
	in.model["t0"], _ = NewTopK(crashTopKSpec)
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
		c := m[key].(*CountMinSketch)
		for i, n := range crashIncrs(its) {
			c.IncrBy(its[i], uint64(n))
		}
		return
	}
	tk := m[key].(*TopK)
	for _, it := range its {
		tk.Add(it, 1)
	}
}
