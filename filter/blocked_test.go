package filter

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

func TestBloomBlockSize(t *testing.T) {
	for _, bpk := range []float64{1, 6, 9.5, 10, 16, 20, 64} {
		for _, n := range []int{0, 1, 2, 51, 52, 1000, 12345} {
			data := build(Bloom(bpk), randomKeys(uint64(n), n))
			lines := int(math.Ceil(float64(n) * bpk / lineBits))
			require.Equal(t, lines*lineBytes+blockedTrailerLen, len(data), "bpk=%v n=%d", bpk, n)
			info, err := Inspect(data)
			require.NoError(t, err)
			require.Equal(t, uint64(n), info.Keys)
			require.Equal(t, uint32(lines), info.Lines)
			require.Equal(t, BloomProbes(bpk), info.Probes)
			require.Equal(t, defaultChoiceBits, info.SelectorBits)
		}
	}
}

func TestBloomProbes(t *testing.T) {
	// The k that minimizes the exact model; the expectation table records
	// the same values for its sizes.
	for _, row := range bloomFPRTable {
		require.Equal(t, row.k, BloomProbes(row.bitsPerKey), "bits/key %v", row.bitsPerKey)
	}
	for _, bpk := range []float64{1, 2, 3.3, 10, 33, 64} {
		k := BloomProbes(bpk)
		at := BloomFPR(bpk)
		for _, other := range []int{k - 1, k + 1} {
			if other >= 1 {
				require.GreaterOrEqual(t, blockedFPR(lineBits/bpk, other, defaultChoiceBits), at, "bpk=%v k=%d", bpk, other)
			}
		}
	}
}

// TestBloomExpectationTable holds Bloom at 6..20 bits/key to the table that
// gen_fpr_table.go simulated (and which agrees with the exact model).
func TestBloomExpectationTable(t *testing.T) {
	n := figureKeys(t)
	present, absent := seqKeys(5_000_000, n, 0), seqKeys(5_000_000, n, 1)
	for _, row := range bloomFPRTable {
		t.Run(fmt.Sprint(row.bitsPerKey), func(t *testing.T) {
			r, err := OpenBlock(build(Bloom(row.bitsPerKey), present))
			require.NoError(t, err)
			requireNoFalseNegatives(t, r, present)
			got := float64(falsePositives(r, absent)) / float64(n)
			t.Logf("bits/key %v k=%d: measured %.4f%%, table %.4f%%, model %.4f%%", row.bitsPerKey, row.k, 100*got, 100*row.simulated, 100*row.model)
			require.InDelta(t, row.simulated, got, 5*sigma(row.simulated, n))
			require.InDelta(t, row.model, row.simulated, 4*sigma(row.model, bloomFPRTableProbes), "simulation vs exact model")
			require.InEpsilon(t, row.model, BloomFPR(row.bitsPerKey), 1e-5)
		})
	}
}

// TestBloomNoFalseNegatives adds random keys of random lengths (including
// empty and repeated keys) and checks every one of them.
func TestBloomNoFalseNegatives(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(testutil.Seed(t)), 1))
	for _, p := range []Policy{Bloom(rng.Float64()*20 + 1), Bloom(10), StandardBloom(rng.Float64()*20 + 1), Cuckoo(4 + rng.IntN(13))} {
		for range 20 {
			keys := randomKeyList(rng, rng.IntN(3000))
			b := p.NewBuilder()
			for _, k := range keys {
				b.Add(k)
			}
			r, err := OpenBlock(b.Finish())
			require.NoError(t, err)
			for _, k := range keys {
				require.True(t, r.MayContain(k), "%s: false negative for %q", p.Name(), k)
			}
		}
	}
}

// randomKeyList returns keys of 0..40 bytes; about a tenth repeat an
// earlier key, half of those right after it.
func randomKeyList(rng *rand.Rand, n int) [][]byte {
	keys := make([][]byte, 0, n)
	for range n {
		if len(keys) > 0 && rng.IntN(10) == 0 {
			if rng.IntN(2) == 0 {
				keys = append(keys, keys[len(keys)-1])
			} else {
				keys = append(keys, keys[rng.IntN(len(keys))])
			}
			continue
		}
		k := make([]byte, rng.IntN(41))
		for i := range k {
			k[i] = byte(rng.Uint32())
		}
		keys = append(keys, k)
	}
	return keys
}

func TestBloomSelectorsUsed(t *testing.T) {
	// Every selector value is chosen by some line; the selector bits are
	// never probe positions.
	data := build(Bloom(10), randomKeys(3, 100_000))
	info, err := Inspect(data)
	require.NoError(t, err)
	var seen [4]int
	for l := range int(info.Lines) {
		seen[data[l*lineBytes+lineBytes-1]>>6]++
	}
	for s, c := range seen {
		require.Positive(t, c, "selector %d never chosen", s)
	}
	t.Logf("lines per selector: %v", seen)
}

func TestBloomDeterministic(t *testing.T) {
	ks := randomKeys(9, 10_000)
	for _, p := range []Policy{Bloom(10), StandardBloom(10), Cuckoo(12)} {
		b := p.NewBuilder()
		first := build(p, ks)
		for i := range ks.len() {
			b.Add(ks.at(i))
		}
		require.Equal(t, first, b.Finish(), "%s: same keys, same block", p.Name())
		// The builder is reset by Finish and can be reused.
		for i := range ks.len() {
			b.Add(ks.at(i))
		}
		require.Equal(t, first, b.Finish(), "%s: reused builder", p.Name())
	}
}

func TestBloomClampsParameters(t *testing.T) {
	require.Equal(t, "sieve.bloom.blocked/1", Bloom(0).Name())
	require.Equal(t, "sieve.bloom.blocked/1", Bloom(-3).Name())
	require.Equal(t, "sieve.bloom.blocked/64", Bloom(1000).Name())
	require.Equal(t, "sieve.bloom.blocked/10", Bloom(math.NaN()).Name())
	require.Equal(t, "sieve.bloom.blocked/9.5", Bloom(9.5).Name())
	require.Equal(t, "sieve.bloom.standard/10", StandardBloom(10).Name())
	require.Equal(t, "sieve.cuckoo/4", Cuckoo(1).Name())
	require.Equal(t, "sieve.cuckoo/16", Cuckoo(40).Name())
	require.Equal(t, "sieve.cuckoo/12", Cuckoo(12).Name())
	require.Equal(t, "sieve.none", None.Name())
}

func TestStandardBlockSize(t *testing.T) {
	for _, bpk := range []float64{1, 6, 9.5, 10, 16, 64} {
		for _, n := range []int{0, 1, 7, 1000, 12345} {
			data := build(StandardBloom(bpk), randomKeys(uint64(n), n))
			m := 0
			if n > 0 {
				m = max(64, (int(math.Ceil(float64(n)*bpk))+63)/64*64)
			}
			require.Equal(t, m/8+standardTrailerLen, len(data), "bpk=%v n=%d", bpk, n)
			info, err := Inspect(data)
			require.NoError(t, err)
			require.Equal(t, uint64(m), info.FilterBits)
			require.Equal(t, OptimalK(bpk), info.Probes)
		}
	}
}
