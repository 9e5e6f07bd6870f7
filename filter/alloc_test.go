package filter

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMonkeyBitsPerKey checks the closed form on a typical shape: the
// memory equals uniform's, the sum of Bloom rates is lower, smaller runs
// get more bits, and each run's rate is proportional to its entries.
func TestMonkeyBitsPerKey(t *testing.T) {
	// Four L0 tables of 64 MiB and levels of 256 MiB ×10 down to L5 (100 GiB).
	entries := []float64{64, 64, 64, 64, 256, 2560, 25600, 256000}
	budget := make([]float64, len(entries))
	for i := range budget {
		budget[i] = 10
	}
	s := AllocationSlope(Bloom(10))
	got := MonkeyBitsPerKey(entries, budget, s, 1, 30)
	var mem, n, sumU, sumM float64
	for i, e := range entries {
		mem += e * got[i]
		n += e
		sumU += BloomFPR(10)
		sumM += BloomFPR(got[i])
		if i > 0 {
			require.LessOrEqual(t, got[i], got[i-1]+1e-9, "larger runs get no more bits")
		}
	}
	require.InDelta(t, 10*n, mem, 1e-6*n, "same memory")
	t.Logf("bits/key %v; ΣFPR uniform %.4f, Monkey %.4f", got, sumU, sumM)
	require.Less(t, sumM, sumU/2, "Monkey at least halves ΣFPR on this shape")
	// p_i ∝ n_i (with the Bloom model e^{-b ln²2}).
	for i := 1; i < len(entries); i++ {
		ratio := math.Exp(-(got[i]-got[0])/s) / (entries[i] / entries[0])
		require.InDelta(t, 1, ratio, 1e-9)
	}
	// Clamping: a tiny budget pins the largest run at the minimum.
	low := MonkeyBitsPerKey(entries, []float64{1, 1, 1, 1, 1, 1, 1, 1}, s, 1, 30)
	require.Equal(t, 1.0, low[len(low)-1])
	mem = 0
	for i, e := range entries {
		mem += e * low[i]
		require.GreaterOrEqual(t, low[i], 1.0)
	}
	require.InDelta(t, n, mem, 1e-6*n)
}

func TestResize(t *testing.T) {
	require.Equal(t, "sieve.bloom.blocked/13.5", Resize(Bloom(10), 13.5).Name())
	require.Equal(t, "sieve.bloom.standard/7.25", Resize(StandardBloom(10), 7.25).Name())
	require.Equal(t, "sieve.ribbon/5.12", Resize(Ribbon(7), 5.1234).Name())
	require.Equal(t, "sieve.binaryfuse/8", Resize(BinaryFuse(16), 12).Name())
	require.Equal(t, "sieve.binaryfuse/16", Resize(BinaryFuse(8), 15).Name())
	require.Equal(t, "sieve.cuckoo/10", Resize(Cuckoo(12), 10.6).Name())
	require.Equal(t, None, Resize(None, 10))
	b, ok := BitsPerKeyOf(Ribbon(6.5))
	require.True(t, ok)
	require.Equal(t, 6.5, b)
	_, ok = BitsPerKeyOf(None)
	require.False(t, ok)
}
