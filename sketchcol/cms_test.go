package sketchcol

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

func TestCMSSpecByProb(t *testing.T) {
	for _, c := range []struct {
		eps, delta float64
		want       CMSSpec
	}{
		{0.001, 0.01, CMSSpec{2000, 7}},
		{0.01, 0.001, CMSSpec{200, 10}},
		{0.1, 0.5, CMSSpec{20, 1}},
		{0.3, 0.25, CMSSpec{7, 2}},
	} {
		got, err := CMSSpecByProb(c.eps, c.delta)
		require.NoError(t, err)
		require.Equal(t, c.want, got, "ε %v δ %v", c.eps, c.delta)
	}
	for _, bad := range [][2]float64{{0, 0.1}, {1, 0.1}, {math.NaN(), 0.1}, {0.1, 0}, {0.1, 1}, {0.1, math.NaN()}, {1e-12, 0.1}} {
		_, err := CMSSpecByProb(bad[0], bad[1])
		require.ErrorIs(t, err, ErrInvalidArgument, "%v", bad)
	}
}

func TestCMSCodec(t *testing.T) {
	c, err := NewCMS(CMSSpec{Width: 3, Depth: 2})
	require.NoError(t, err)
	c.IncrBy([]byte("a"), 7)
	enc, _ := c.MarshalBinary()
	require.Len(t, enc, cmsHeaderLen+6*4)
	require.Equal(t, []byte{0x40, 1, 3, 0, 0, 0, 2, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0}, enc[:cmsHeaderLen])
	back, err := ParseCMS(enc)
	require.NoError(t, err)
	require.Equal(t, c, back)
	require.Equal(t, uint32(7), back.Query([]byte("a")))
	for name, bad := range map[string][]byte{
		"short":         enc[:cmsHeaderLen-1],
		"version":       append([]byte{0x40, 2}, enc[2:]...),
		"width 0":       append([]byte{0x40, 1, 0, 0, 0, 0}, enc[6:cmsHeaderLen]...),
		"depth 0":       append(append(append([]byte{}, enc[:6]...), 0, 0, 0, 0), enc[10:cmsHeaderLen]...),
		"cut counters":  enc[:len(enc)-1],
		"extra counter": append(append([]byte{}, enc...), 0, 0, 0, 0),
		"huge":          binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32([]byte{0x40, 1}, 1<<20), 1<<20),
	} {
		_, err := ParseCMS(bad)
		require.ErrorIs(t, err, ErrCorruption, name)
	}
}

// TestCMSErrorBound checks Count-Min's guarantee on many random streams:
// for every item, Pr[estimate > true + ε·N] ≤ δ. It measures the fraction
// of (stream, item) pairs over the bound for several (ε, δ) and reports it
// beside δ. Estimates below the true count would be a bug, and fail.
func TestCMSErrorBound(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	streams := 40
	if testing.Short() {
		streams = 8
	}
	for _, c := range []struct{ eps, delta float64 }{{0.01, 0.1}, {0.005, 0.05}, {0.02, 0.25}, {0.05, 0.5}} {
		spec, err := CMSSpecByProb(c.eps, c.delta)
		require.NoError(t, err)
		over, total := 0, 0
		for range streams {
			o, n := cmsStreamOverestimates(t, rng, spec, c.eps)
			over, total = over+o, total+n
		}
		frac := float64(over) / float64(total)
		t.Logf("ε=%v δ=%v (%d×%d): %d of %d estimates exceed true+εN: %.4f (bound δ=%v)",
			c.eps, c.delta, spec.Width, spec.Depth, over, total, frac, c.delta)
		// The bound is on a probability; allow 3 standard errors of a
		// binomial at δ for the sampling noise of a finite test.
		slack := 3 * math.Sqrt(c.delta*(1-c.delta)/float64(total))
		require.LessOrEqual(t, frac, c.delta+slack, "ε=%v δ=%v", c.eps, c.delta)
	}
}

// cmsStreamOverestimates runs one random stream (uniform or Zipfian items,
// increments 1..10) into a sketch of spec and returns how many distinct
// items' estimates exceed their true count by more than eps·N.
func cmsStreamOverestimates(t *testing.T, rng *rand.Rand, spec CMSSpec, eps float64) (over, items int) {
	c, err := NewCMS(spec)
	require.NoError(t, err)
	truth := map[string]uint64{}
	var n uint64
	universe := uint64(500 + rng.IntN(5000))
	zipf := rand.NewZipf(rng, 1.1, 1, universe-1)
	for range 5000 + rng.IntN(20000) {
		i := rng.Uint64N(universe)
		if rng.IntN(2) == 0 {
			i = zipf.Uint64()
		}
		item := fmt.Sprintf("item-%d", i)
		incr := uint64(1 + rng.IntN(10))
		c.IncrBy([]byte(item), incr)
		truth[item] += incr
		n += incr
	}
	require.Equal(t, n, c.Info().Count)
	for item, cnt := range truth {
		est := uint64(c.Query([]byte(item)))
		require.GreaterOrEqual(t, est, cnt, "Count-Min never underestimates")
		if float64(est) > float64(cnt)+eps*float64(n) {
			over++
		}
	}
	return over, len(truth)
}

func TestCMSMergeWeightsValue(t *testing.T) {
	spec := CMSSpec{Width: 10, Depth: 3}
	a, _ := NewCMS(spec)
	b, _ := NewCMS(spec)
	a.IncrBy([]byte("x"), 4)
	b.IncrBy([]byte("x"), 1)
	m, err := mergeCMS(spec, []*CountMinSketch{a, b, a}, []int64{2, -3, 1})
	require.NoError(t, err)
	require.Equal(t, uint32(9), m.Query([]byte("x")))
	require.Equal(t, uint64(9), m.count)
	_, err = mergeCMS(spec, []*CountMinSketch{a, b}, []int64{-1, 1})
	require.ErrorIs(t, err, ErrCMSMergeOverflow)
	other, _ := NewCMS(CMSSpec{Width: 10, Depth: 4})
	_, err = mergeCMS(spec, []*CountMinSketch{a, other}, []int64{1, 1})
	require.ErrorIs(t, err, ErrCMSDimensions)
	for _, c := range []struct {
		acc, a, w int64
		ok        bool
	}{{0, math.MaxInt64, 1, true}, {1, math.MaxInt64, 1, false}, {0, math.MaxInt64, 2, false}, {0, math.MinInt64, -1, false}, {-1, math.MinInt64, 1, false}, {5, 3, -2, true}} {
		_, ok := mulAdd(c.acc, c.a, c.w)
		require.Equal(t, c.ok, ok, "%+v", c)
	}
}
