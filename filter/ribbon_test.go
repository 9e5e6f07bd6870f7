package filter

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRibbonFPR holds Ribbon to its math: 2^-r within 10% for whole r
// (bitsPerKey chosen so that no block has an extra column), and the
// geometry's mixture rate within 10% for fractional bits/key; issue 16:
// at most 7.0 bits/key with at most 1.0% on a million keys.
func TestRibbonFPR(t *testing.T) {
	n := figureKeys(t)
	for _, r := range []int{4, 7, 10} {
		m, _, _ := ribbonGeometry(n, 1)
		bpk := (float64(r)*float64(m) + 32) / float64(n) // r columns, no extra block
		p := Ribbon(bpk)
		_, gr, gu := ribbonGeometry(n, bpk)
		require.Equal(t, r, gr)
		require.Zero(t, gu)
		theory := math.Exp2(-float64(r))
		for _, sc := range schemes(n) {
			got := measure(t, p, sc)
			tol := max(0.10*theory, 4*sigma(theory, n))
			require.InDelta(t, theory, got.fpr, tol, "Ribbon r=%d: FPR within 10%% of 2^-r", r)
		}
	}
	for _, bpk := range []float64{6.5, 7} {
		p := Ribbon(bpk)
		theory, _ := ExpectedFPR(p, n)
		for _, sc := range schemes(n) {
			got := measure(t, p, sc)
			tol := max(0.10*theory, 4*sigma(theory, n))
			require.InDelta(t, theory, got.fpr, tol, "Ribbon(%g): FPR within 10%% of the geometry's", bpk)
			require.LessOrEqual(t, got.bitsPerKey, bpk+0.01)
			if bpk == 7 && n >= 1_000_000 {
				require.LessOrEqual(t, got.fpr, 0.010, "issue 16: Ribbon at ≤ 7.0 bits/key gives ≤ 1.0%%")
			}
		}
	}
}

func TestRibbonSizes(t *testing.T) {
	for _, bpk := range []float64{1, 3.3, 7, 9.75, 16} {
		p := Ribbon(bpk)
		for _, n := range []int{0, 1, 2, 3, 5, 63, 64, 65, 127, 128, 129, 1000, 4095, 20_000, 100_003} {
			ks := randomKeys(uint64(n)*31+uint64(bpk*4), n)
			data := build(p, ks)
			rd, err := p.NewReader(data)
			require.NoError(t, err, "bpk=%g n=%d", bpk, n)
			requireNoFalseNegatives(t, rd, ks)
			info, err := Inspect(data)
			require.NoError(t, err)
			require.Equal(t, FormatRibbon, info.Format)
			require.Equal(t, uint64(n), info.Keys)
			if n >= 20_000 {
				require.LessOrEqual(t, info.BitsPerKey(), max(bpk, 1.04)+0.01, "bpk=%g n=%d: %v", bpk, n, info)
			}
		}
	}
}

// TestRibbonRetryAndFallback forces construction failures.
func TestRibbonRetryAndFallback(t *testing.T) {
	defer func() { testRibbonFailures = 0 }()
	ks := randomKeys(6, 5000)
	p := Ribbon(7)
	testRibbonFailures = 2
	b := p.NewBuilder()
	for i := range ks.len() {
		b.Add(ks.at(i))
	}
	data := b.Finish()
	require.Equal(t, BuildReport{Retries: 2}, b.(BuildReporter).LastBuild())
	require.Equal(t, FormatRibbon, blockFormat(data))
	r, err := p.NewReader(data)
	require.NoError(t, err)
	requireNoFalseNegatives(t, r, ks)

	testRibbonFailures = ribbonAttempts
	for i := range ks.len() {
		b.Add(ks.at(i))
	}
	data = b.Finish()
	require.Equal(t, BuildReport{Retries: ribbonAttempts - 1, FellBack: true}, b.(BuildReporter).LastBuild())
	require.Equal(t, FormatBlockedBloom, blockFormat(data))
	_, err = p.NewReader(data)
	require.True(t, errors.Is(err, ErrTypeMismatch), "%v", err)
	r, err = OpenBlock(data)
	require.NoError(t, err)
	requireNoFalseNegatives(t, r, ks)
}

// TestRibbonConstructionRate builds many tables and checks that first
// attempts rarely fail (the overhead is enough for w = 128).
func TestRibbonConstructionRate(t *testing.T) {
	failed := 0
	tables := iterations(200)
	for i := range tables {
		ks := randomKeys(uint64(1000+i), 20_000)
		b := Ribbon(7).NewBuilder()
		for j := range ks.len() {
			b.Add(ks.at(j))
		}
		b.Finish()
		rep := b.(BuildReporter).LastBuild()
		require.False(t, rep.FellBack)
		failed += rep.Retries
	}
	t.Logf("%d retries in %d builds of 20k keys", failed, tables)
	require.LessOrEqual(t, failed, tables/20)
}

func TestRibbonRefusesBadGeometry(t *testing.T) {
	good := build(Ribbon(7.5), randomKeys(9, 3000))
	_, err := OpenBlock(good)
	require.NoError(t, err)
	tr := len(good) - ribbonTrailer
	le := binary.LittleEndian
	cases := map[string]func(d []byte){
		"slots not a multiple of 64": func(d []byte) { le.PutUint64(d[tr+16:], le.Uint64(d[tr+16:])+1) },
		"one block more":             func(d []byte) { le.PutUint64(d[tr+16:], le.Uint64(d[tr+16:])+64) },
		"no slots":                   func(d []byte) { le.PutUint64(d[tr+16:], 0) },
		"huge slots":                 func(d []byte) { le.PutUint64(d[tr+16:], 1<<62) },
		"one upper block more":       func(d []byte) { le.PutUint32(d[tr+24:], le.Uint32(d[tr+24:])+1) },
		"upper blocks beyond m":      func(d []byte) { le.PutUint32(d[tr+24:], 1<<31) },
		"r = 0":                      func(d []byte) { d[tr+28] = 0 },
		"r + 1":                      func(d []byte) { d[tr+28]++ },
		"r = 31":                     func(d []byte) { d[tr+28] = 31 },
		"version 2":                  func(d []byte) { d[tr+29] = 2 },
		"more keys than slots":       func(d []byte) { le.PutUint64(d[tr:], 1<<41) },
		"no keys":                    func(d []byte) { le.PutUint64(d[tr:], 0) },
	}
	for name, mutate := range cases {
		d := append([]byte(nil), good...)
		mutate(d)
		_, err := OpenBlock(d)
		require.True(t, errors.Is(err, ErrMalformed), "%s: %v", name, err)
	}
	_, err = OpenBlock(good[1:])
	require.True(t, errors.Is(err, ErrMalformed), "truncated: %v", err)
}
