package filter

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStandardBloomFilterSizing(t *testing.T) {
	f, err := NewStandardBloomFilter(1_000_000, 0.01)
	require.NoError(t, err)
	want := uint64(math.Ceil(1_000_000 * -math.Log(0.01) / (math.Ln2 * math.Ln2)))
	require.Equal(t, (want+63)&^63, f.M())
	require.Equal(t, 7, f.K())
	require.Equal(t, uint64(1_000_000), f.Capacity())
	require.Equal(t, 0.01, f.ErrorRate())

	_, err = NewStandardBloomFilter(0, 0.01)
	require.Error(t, err)
	for _, p := range []float64{0, 1, -1, math.NaN()} {
		_, err = NewStandardBloomFilter(10, p)
		require.Error(t, err, "error rate %v", p)
	}
	_, err = NewStandardBloomFilter(1<<40, 0.001)
	require.Error(t, err, "absurd size")
}

// TestStandardBloomFilterRate fills a filter to capacity and measures its rate
// against the requested one.
func TestStandardBloomFilterRate(t *testing.T) {
	n := figureKeys(t)
	for _, p := range []float64{0.01, 0.001} {
		f, err := NewStandardBloomFilter(uint64(n), p)
		require.NoError(t, err)
		present, absent := randomKeys(41, n), randomKeys(42, n)
		for i := range n {
			f.Add(present.at(i))
		}
		for i := range n {
			require.True(t, f.Test(present.at(i)))
		}
		fp := 0
		for i := range n {
			if f.Test(absent.at(i)) {
				fp++
			}
		}
		got := float64(fp) / float64(n)
		t.Logf("p=%v: measured %.4f%%, expected from fill %.4f%%, fill %.3f, count %d, estimated %.0f",
			p, 100*got, 100*f.ExpectedFPR(), f.FillRatio(), f.Count(), f.EstimatedCount())
		require.InDelta(t, p, got, max(0.1*p, 5*sigma(p, n)))
		require.InDelta(t, 1-math.Exp(-float64(f.K())*float64(n)/float64(f.M())), f.FillRatio(), 0.002)
		require.InEpsilon(t, float64(n), f.EstimatedCount(), 0.01)
		require.InEpsilon(t, float64(n), float64(f.Count()), 0.01)
	}
}

func TestStandardBloomFilterAddReportsChange(t *testing.T) {
	f, err := NewStandardBloomFilter(100, 0.01)
	require.NoError(t, err)
	require.True(t, f.Add([]byte("a")))
	require.False(t, f.Add([]byte("a")))
	require.Equal(t, uint64(1), f.Count())
	require.LessOrEqual(t, f.BitsSet(), uint64(f.K()))
	require.True(t, f.Test([]byte("a")))
}

// TestStandardBloomFilterMatchesStandardBlock: a StandardBloomFilter and a StandardBloom
// block with the same m and k hold the same bits.
func TestStandardBloomFilterMatchesStandardBlock(t *testing.T) {
	ks := randomKeys(43, 6400)
	data := build(StandardBloom(10), ks) // m = 64000, k = 7
	f, err := NewStandardBloomFilter(6400, 0.0082)
	require.NoError(t, err)
	f.words, f.m, f.k = make([]uint64, 1000), 64000, 7
	for i := range ks.len() {
		f.Add(ks.at(i))
	}
	enc, err := f.MarshalBinary()
	require.NoError(t, err)
	require.Equal(t, data[:len(data)-standardTrailerLen], enc[bloomValueHeaderLen:])
}

func TestStandardBloomFilterUnion(t *testing.T) {
	a, _ := NewStandardBloomFilter(10_000, 0.01)
	b, _ := NewStandardBloomFilter(10_000, 0.01)
	both, _ := NewStandardBloomFilter(10_000, 0.01)
	ka, kb := randomKeys(44, 4000), randomKeys(45, 4000)
	for i := range 4000 {
		a.Add(ka.at(i))
		b.Add(kb.at(i))
		both.Add(ka.at(i))
		both.Add(kb.at(i))
	}
	// Union is commutative and equals adding both sets.
	ab, ba := clone(t, a), clone(t, b)
	require.NoError(t, ab.Union(b))
	require.NoError(t, ba.Union(a))
	require.Equal(t, both.words, ab.words)
	require.Equal(t, ab.words, ba.words)
	require.Equal(t, ab.Count(), ba.Count())
	require.InEpsilon(t, 8000, float64(ab.Count()), 0.02)

	other, _ := NewStandardBloomFilter(20_000, 0.01)
	require.Error(t, a.Union(other))
}

func clone(t *testing.T, f *StandardBloomFilter) *StandardBloomFilter {
	enc, err := f.MarshalBinary()
	require.NoError(t, err)
	var g StandardBloomFilter
	require.NoError(t, g.UnmarshalBinary(enc))
	return &g
}

func TestStandardBloomFilterMarshal(t *testing.T) {
	f, _ := NewStandardBloomFilter(1000, 0.02)
	ks := randomKeys(46, 800)
	for i := range 800 {
		f.Add(ks.at(i))
	}
	enc, err := f.MarshalBinary()
	require.NoError(t, err)
	require.Equal(t, byte(FormatStandardBloomValue), enc[0])
	g := clone(t, f)
	require.Equal(t, f, g)
	for i := range 800 {
		require.True(t, g.Test(ks.at(i)))
	}
	app, err := f.AppendBinary([]byte("prefix"))
	require.NoError(t, err)
	require.Equal(t, enc, app[6:])
}

func TestStandardBloomFilterUnmarshalRejects(t *testing.T) {
	f, _ := NewStandardBloomFilter(100, 0.01)
	f.Add([]byte("x"))
	good, _ := f.MarshalBinary()
	le := binary.LittleEndian
	mutate := func(fn func(b []byte) []byte) []byte {
		return fn(append([]byte(nil), good...))
	}
	cases := map[string][]byte{
		"empty":          {},
		"header only":    good[:bloomValueHeaderLen],
		"short":          good[:len(good)-1],
		"long":           append(append([]byte(nil), good...), 0),
		"k=0":            mutate(func(b []byte) []byte { b[1] = 0; return b }),
		"k=65":           mutate(func(b []byte) []byte { b[1] = 65; return b }),
		"m=0":            mutate(func(b []byte) []byte { le.PutUint64(b[2:], 0); return b }),
		"m not ×64":      mutate(func(b []byte) []byte { le.PutUint64(b[2:], le.Uint64(b[2:])-8); return b }),
		"m huge":         mutate(func(b []byte) []byte { le.PutUint64(b[2:], 1<<63); return b }),
		"capacity 0":     mutate(func(b []byte) []byte { le.PutUint64(b[10:], 0); return b }),
		"error rate 0":   mutate(func(b []byte) []byte { le.PutUint64(b[18:], 0); return b }),
		"error rate NaN": mutate(func(b []byte) []byte { le.PutUint64(b[18:], math.Float64bits(math.NaN())); return b }),
		"cuckoo value":   mutate(func(b []byte) []byte { b[0] = byte(FormatCuckooTableValue); return b }),
		"unknown format": mutate(func(b []byte) []byte { b[0] = 77; return b }),
	}
	for name, data := range cases {
		g := *f
		err := g.UnmarshalBinary(data)
		require.Error(t, err, name)
		require.Equal(t, *f, g, "%s: a failed decode leaves the filter as it was", name)
	}
	var g StandardBloomFilter
	require.ErrorIs(t, g.UnmarshalBinary(cases["cuckoo value"]), ErrTypeMismatch)
	require.ErrorIs(t, g.UnmarshalBinary(cases["unknown format"]), ErrUnknownType)
	require.ErrorIs(t, g.UnmarshalBinary(cases["short"]), ErrMalformed)
}
