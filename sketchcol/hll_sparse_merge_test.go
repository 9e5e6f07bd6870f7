package sketchcol

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// TestSparseFullMergeMatchesGeneral: wherever the sparse path of FullMerge
// answers, its value is the general path's, byte for byte; it declines
// on everything else. Bases run from empty to past the sparse limit,
// canonical or not, with stale caches, with registers above 32 (dense);
// operands are PFADDs' pairs, PFMERGEs' value form, and another kind's.
// The counters check that each case is reached.
func TestSparseFullMergeMatchesGeneral(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(testutil.Seed(t)), 2))
	rounds := 3000
	if testing.Short() {
		rounds = 600
	}
	reached := map[string]int{}
	elem := func() []byte { return fmt.Appendf(nil, "e%d", rng.Uint64()) }
	for range rounds {
		var base []byte
		hasBase := rng.IntN(5) != 0
		if hasBase {
			base = randomHLLBase(rng, elem, reached)
		}
		var ops [][]byte
		for range rng.IntN(5) {
			switch r := rng.IntN(20); {
			case r == 0:
				ops = append(ops, appendBloomOp(nil, &bloomOp{spec: DefaultBloomSpec(), hashes: []uint64{rng.Uint64()}}))
				reached["bloom operand"]++
			case r == 1: // PFMERGE's source registers: the value form when smaller
				elems := make([][]byte, 200+rng.IntN(2000))
				for i := range elems {
					elems[i] = elem()
				}
				ops = append(ops, appendHLLOp(nil, hllOpOf(elems)))
				reached["large operand"]++
			case r == 2: // a rank no sparse value holds
				ops = append(ops, appendHLLOp(nil, &hllOp{pairs: []hllPair{{uint16(rng.IntN(hllRegisters)), uint8(33 + rng.IntN(19))}}}))
				reached["rank above 32"]++
			default:
				elems := make([][]byte, 1+rng.IntN(8))
				for i := range elems {
					elems[i] = elem()
				}
				ops = append(ops, appendHLLOp(nil, hllOpOf(elems)))
			}
		}
		fast, ok := fullMergeSparseHLL(base, hasBase, ops)
		general, err := fullMergeGeneral(nil, base, hasBase, ops)
		if !ok {
			reached["declined"]++
			if err == nil && general[4] == hllEncDense {
				reached["declined, dense result"]++
			}
			continue
		}
		reached["sparse path"]++
		require.NoError(t, err, "the sparse path accepted what the general path refuses")
		require.Equal(t, general, fast, "base %x ops %x", base, ops)
	}
	t.Logf("reached: %v", reached)
	for _, c := range []string{"sparse path", "declined", "bloom operand", "large operand", "rank above 32", "declined, dense result", "dense base", "non-canonical base", "stale cache", "near the sparse limit"} {
		require.NotZero(t, reached[c], "case %q never reached", c)
	}
}

// randomHLLBase returns a random HLL value, noting its shape in reached.
func randomHLLBase(rng *rand.Rand, elem func() []byte, reached map[string]int) []byte {
	h := NewHLL()
	n := rng.IntN(60)
	if rng.IntN(6) == 0 {
		n = 500 + rng.IntN(1500) // around the 3000-byte limit
	}
	for range n {
		h.Add(elem())
	}
	if rng.IntN(10) == 0 {
		h.set(rng.IntN(hllRegisters), uint8(33+rng.IntN(19))) // dense
	}
	v := h.Bytes()
	switch {
	case v[4] == hllEncDense:
		reached["dense base"]++
		return v
	case len(v) > 2000:
		reached["near the sparse limit"]++
	}
	switch rng.IntN(4) {
	case 0:
		v[15] |= hllCardInvalid
		reached["stale cache"]++
	case 1:
		v = splitZeroRuns(v)
		reached["non-canonical base"]++
	}
	return v
}

// splitZeroRuns re-encodes a sparse value's zero runs as ZEROs of at most
// 16: valid, not canonical (what another writer could store).
func splitZeroRuns(v []byte) []byte {
	out := append([]byte(nil), v[:hllHeaderLen]...)
	_ = walkSparse(v[hllHeaderLen:], func(_, n int, val uint8) {
		for n > 0 {
			l := min(n, 16)
			if val == 0 {
				out = append(out, byte(l-1))
			} else {
				l = min(n, opValMaxLen)
				out = append(out, 0x80|(val-1)<<2|byte(l-1))
			}
			n -= l
		}
	})
	return out
}
