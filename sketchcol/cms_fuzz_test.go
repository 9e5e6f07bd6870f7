package sketchcol

import (
	"fmt"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// Fuzz targets of the Count-Min (and Top-K) decoders, and their seeds for
// FuzzMerge (files cms-NN beside mergeSeeds' seed-NN). Regenerate with
// SIEVE_WRITE_FUZZ_SEEDS=1 go test -run TestWriteCMSTopKFuzzSeeds.

func FuzzCMSDecode(f *testing.F) {
	for _, s := range cmsSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCMS(data)
		if err != nil {
			require.ErrorIs(t, err, ErrCorruption)
			return
		}
		enc, _ := c.MarshalBinary()
		require.Equal(t, data, enc, "a valid value re-encodes to itself")
		c.IncrBy([]byte("x"), 3)
		require.GreaterOrEqual(t, c.Query([]byte("x")), uint32(3))
		enc, _ = c.MarshalBinary()
		_, err = ParseCMS(enc)
		require.NoError(t, err)
	})
}

func cmsSeeds() [][]byte {
	var seeds [][]byte
	for _, spec := range []CMSSpec{{1, 1}, {5, 3}, {16, 2}} {
		c, _ := NewCMS(spec)
		for i := range 10 {
			c.IncrBy(fmt.Appendf(nil, "i%d", i), uint64(i))
		}
		enc, _ := c.MarshalBinary()
		seeds = append(seeds, enc)
	}
	return seeds
}

func cmsMergeSeeds() [][]byte {
	spec := CMSSpec{Width: 8, Depth: 3}
	init, _ := CMSInitOp(spec)
	incr, _ := CMSIncrByOp(ks("a", "b", "a"), []int64{1, 2, 3})
	incr2, _ := CMSIncrByOp(ks("c"), []int64{1 << 40})
	c, _ := NewCMS(spec)
	c.IncrBy([]byte("q"), 9)
	set := appendSetOp(nil, c)
	return [][]byte{
		joinParts(nil, init, incr, incr2, incr),
		joinParts(cmsSeeds()[1], incr, PFAddOp([]byte("a")), incr2),
		joinParts(nil, incr, set, incr),
	}
}

func FuzzTopKDecode(f *testing.F) {
	for _, s := range topKSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tk, err := ParseTopK(data)
		if err != nil {
			require.ErrorIs(t, err, ErrCorruption)
			return
		}
		enc, _ := tk.MarshalBinary()
		require.Equal(t, data, enc, "a valid value re-encodes to itself")
		tk.Add([]byte("x"), 3)
		tk.Query([]byte("x"))
		tk.List()
		enc, _ = tk.MarshalBinary()
		_, err = ParseTopK(enc)
		require.NoError(t, err, "an add leaves a valid value")
	})
}

func topKSeeds() [][]byte {
	var seeds [][]byte
	for _, spec := range []TopKSpec{{1, 1, 1, 1}, {3, 4, 2, 0.9}, {5, 8, 3, 0.5}} {
		tk, _ := NewTopK(spec)
		for i := range 30 {
			tk.Add(fmt.Appendf(nil, "i%d", i%7), uint32(i%4))
		}
		enc, _ := tk.MarshalBinary()
		seeds = append(seeds, enc)
	}
	return seeds
}

func topKMergeSeeds() [][]byte {
	spec := TopKSpec{K: 3, Width: 4, Depth: 2, Decay: 0.9}
	res, _ := TopKReserveOp(spec)
	add, _ := TopKIncrByOp(ks("a", "b", "a", "c"), nil)
	incr, _ := TopKIncrByOp(ks("d", "a"), []int64{5, 0})
	tk, _ := NewTopK(spec)
	tk.Add([]byte("q"), 2)
	set := appendSetOp(nil, tk)
	return [][]byte{
		joinParts(nil, res, add, incr, add),
		joinParts(topKSeeds()[1], add, PFAddOp([]byte("a")), incr),
		joinParts(nil, add, set, incr),
	}
}

func TestWriteCMSTopKFuzzSeeds(t *testing.T) {
	write := func(target, prefix string, seeds [][]byte) {
		for i, s := range seeds {
			testutil.WriteFuzzSeed(t, target, fmt.Sprintf("%s-%02d", prefix, i), s)
		}
	}
	write("FuzzCMSDecode", "seed", cmsSeeds())
	write("FuzzMerge", "cms", cmsMergeSeeds())
	write("FuzzTopKDecode", "seed", topKSeeds())
	write("FuzzMerge", "topk", topKMergeSeeds())
}
