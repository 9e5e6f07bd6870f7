package filter

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClassicFormulas(t *testing.T) {
	require.Equal(t, 7, OptimalK(10))
	require.Equal(t, 1, OptimalK(0.1))
	require.Equal(t, 64, OptimalK(1000))
	require.InDelta(t, 9.585, BitsPerKey(0.01), 0.001)
	require.InDelta(t, 14.378, BitsPerKey(0.001), 0.001)
	require.True(t, math.IsNaN(BitsPerKey(0)))
	require.True(t, math.IsNaN(BitsPerKey(1)))
	require.InDelta(t, 0.00819, StandardFPR(10, 7), 0.00001)
	// With m = −n ln p/(ln 2)² and optimal k, the rate is p.
	for _, p := range []float64{0.1, 0.01, 0.001, 1e-6} {
		b := BitsPerKey(p)
		require.InEpsilon(t, p, StandardFPR(b, int(math.Round(b*math.Ln2))), 0.05)
	}
}

func TestBlockedModel(t *testing.T) {
	// One probe, no selector: a line with x keys has 1 − (1 − 1/512)^x of
	// its bits set, and over Poisson x that averages to 1 − e^(−λ/512).
	for _, lam := range []float64{1, 10, 51.2, 200} {
		require.InEpsilon(t, 1-math.Exp(-lam/lineBits), blockedFPR(lam, 1, 0), 1e-9)
	}
	// The plain blocked filter (no selector) is worse than the classic
	// formula at 10 bits/key; four choices per line bring it back.
	plain := blockedFPR(51.2, 6, 0)
	require.InDelta(t, 0.009665, plain, 0.000001)
	require.Greater(t, plain, StandardFPR(10, 7))
	require.InDelta(t, 0.00829, BloomFPR(10), 0.00001)
	require.True(t, math.IsNaN(blockedFPR(10, 0, 0)))
	require.Zero(t, blockedFPR(0, 7, 2))
}

func TestBloomBitsPerKey(t *testing.T) {
	targets := []float64{0.05, 0.01, 0.001}
	if raceEnabled || testing.Short() {
		targets = targets[1:2] // the model is slow under the race detector
	}
	for _, p := range targets {
		b := BloomBitsPerKey(p)
		require.LessOrEqual(t, BloomFPR(b), p, "p=%v b=%v", p, b)
		require.Greater(t, BloomFPR(b-0.01), p, "p=%v b=%v is not the smallest", p, b)
		t.Logf("BloomBitsPerKey(%v) = %v (classic %.2f)", p, b, BitsPerKey(p))
	}
	require.Equal(t, 1.0, BloomBitsPerKey(0.9))
	require.Equal(t, 64.0, BloomBitsPerKey(1e-30))
	require.True(t, math.IsNaN(BloomBitsPerKey(2)))
}

func TestCuckooFormulas(t *testing.T) {
	require.Equal(t, 13, CuckooFingerprintBits(0.001))
	require.Equal(t, 10, CuckooFingerprintBits(0.01))
	require.Equal(t, 4, CuckooFingerprintBits(0.9))
	require.Equal(t, 16, CuckooFingerprintBits(1e-9))
	require.InDelta(t, 0.001854, CuckooFPR(12, 0.95), 0.000001)
	for f := 4; f <= 16; f++ {
		require.LessOrEqual(t, CuckooFPR(f, 1), 8/math.Exp2(float64(f))*1.01)
	}
}

func TestExpectedFPR(t *testing.T) {
	e, ok := ExpectedFPR(Bloom(10), 1_000_000)
	require.True(t, ok)
	require.InDelta(t, 0.00829, e, 0.00001)
	e, ok = ExpectedFPR(StandardBloom(10), 1_000_000)
	require.True(t, ok)
	require.InDelta(t, 0.00819, e, 0.00001)
	e, ok = ExpectedFPR(Cuckoo(12), 1_000_000)
	require.True(t, ok)
	require.InDelta(t, 0.001854, e, 0.000001)
	e, ok = ExpectedFPR(Bloom(10), 0)
	require.True(t, ok)
	require.Zero(t, e)
	_, ok = ExpectedFPR(foreignPolicy{}, 10)
	require.False(t, ok)
}

type foreignPolicy struct{}

func (foreignPolicy) Name() string                          { return "other" }
func (foreignPolicy) NewBuilder() Builder                   { return nil }
func (foreignPolicy) NewReader(data []byte) (Reader, error) { return nil, nil }
