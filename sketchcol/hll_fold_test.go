package sketchcol

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
)

// TestHLLPairFoldMatchesGeneral checks PartialMerge's fast path for PFADD
// operands (foldHLLPairOperands) against the general path that decodes
// every operand: random runs of pairs-form operands, some with a
// value-form operand (PFMERGE's, many pairs), a non-HLL operand, or a
// corrupted one among them. Where the fast path answers, the general path
// must give the same bytes; where it declines, PartialMerge is the
// general path. Each case is counted and must be reached.
func TestHLLPairFoldMatchesGeneral(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	var m Merger
	counts := map[string]int{}
	big := make([][]byte, 2000)
	for i := range big {
		big[i] = fmt.Appendf(nil, "big%d", i)
	}
	valueOp, err := PFMergeOp(mustPFAddValue(t, big))
	if err != nil {
		t.Fatal(err)
	}
	bloomOp, err := BFAddOp(nil, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	for trial := 0; trial < 1500; trial++ {
		n := 1 + rng.IntN(20)
		ops := make([][]byte, n)
		for i := range ops {
			elems := make([][]byte, 1+rng.IntN([]int{2, 16, 120}[rng.IntN(3)]))
			for j := range elems {
				elems[j] = fmt.Appendf(nil, "e%d", rng.IntN(5000))
			}
			ops[i] = PFAddOp(elems...)
		}
		switch k := rng.IntN(10); {
		case k == 0:
			ops[rng.IntN(n)] = valueOp
		case k == 1:
			ops[rng.IntN(n)] = bloomOp
		case k == 2:
			i := rng.IntN(n)
			c := bytes.Clone(ops[i])
			c[rng.IntN(len(c))] ^= byte(1 + rng.IntN(255))
			ops[i] = c
		case k == 3:
			i := rng.IntN(n)
			ops[i] = ops[i][:rng.IntN(len(ops[i]))]
		}
		fast, fok := foldHLLPairOperands(ops)
		want, wok := partialMergeOps(ops)
		got, gok := m.PartialMerge(nil, ops)
		if gok != wok || !bytes.Equal(got, want) {
			t.Fatalf("seed %d trial %d: PartialMerge %v %x, general path %v %x", seed, trial, gok, got, wok, want)
		}
		switch {
		case fok && !wok:
			t.Fatalf("seed %d trial %d: fast path folded what the general path declines", seed, trial)
		case fok:
			counts["fast"]++
		case wok:
			counts["declined, general folds"]++
		default:
			counts["both decline"]++
		}
		if fok && !bytes.Equal(fast, want) {
			t.Fatalf("seed %d trial %d: fast %x, general %x", seed, trial, fast, want)
		}
	}
	for _, c := range []string{"fast", "declined, general folds", "both decline"} {
		if counts[c] == 0 {
			t.Fatalf("seed %d: case %q not reached (%v)", seed, c, counts)
		}
	}
	t.Log(counts)
}

// mustPFAddValue is the HLL value of elems.
func mustPFAddValue(t *testing.T, elems [][]byte) []byte {
	t.Helper()
	h := NewHLL()
	for _, e := range elems {
		h.Add(e)
	}
	return h.appendValue(nil)
}
