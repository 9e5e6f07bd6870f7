package main

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBuckets(t *testing.T) {
	// Every value lies in its bucket's range, buckets are contiguous and a
	// bucket is at most 1/32 of its values wide.
	check := func(v uint64) {
		b := bucketOf(v)
		require.Less(t, b, histBuckets)
		lo, w := bucketRange(b)
		require.True(t, v >= lo && v-lo < w, "v=%d bucket %d [%d,+%d)", v, b, lo, w)
		if lo >= 2*histSub {
			require.LessOrEqual(t, float64(w)/float64(lo), 1.0/histSub)
		}
	}
	for v := uint64(0); v < 5000; v++ {
		check(v)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		check(r.Uint64() >> r.UintN(64))
	}
	check(math.MaxUint64)
	for b := 1; b < histBuckets; b++ {
		lo, _ := bucketRange(b)
		plo, pw := bucketRange(b - 1)
		require.Equal(t, plo+pw, lo, "bucket %d", b)
	}
}

func TestQuantiles(t *testing.T) {
	var h histogram
	require.Nil(t, h.summary())
	require.Zero(t, h.quantile(0.5))
	for v := 1; v <= 100000; v++ { // uniform 1µs..100ms in ns
		h.record(time.Duration(v) * time.Microsecond)
	}
	require.Equal(t, uint64(100000), h.count())
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		want := q * 100000 * 1000
		require.InEpsilon(t, want, h.quantile(q), 0.035, "q=%v", q)
	}
	require.Equal(t, 1000.0, h.quantile(0))
	require.Equal(t, 100000.0*1000, h.quantile(1))
	s := h.summary()
	require.InEpsilon(t, 50000.5, s.Mean, 1e-9)
	require.Equal(t, 1.0, s.Min)
	require.Equal(t, 100000.0, s.Max)
	require.True(t, s.P50 <= s.P90 && s.P90 <= s.P99 && s.P99 <= s.P999 && s.P999 <= s.Max)
}

func TestMergeAndWeights(t *testing.T) {
	var a, b, all histogram
	for i := range 1000 {
		d := time.Duration(i*i) * time.Nanosecond
		all.record(d)
		if i%2 == 0 {
			a.record(d)
		} else {
			b.record(d)
		}
	}
	var m histogram
	m.merge(&a)
	m.merge(&b)
	m.merge(&histogram{})
	require.Equal(t, all, m)

	var w histogram
	w.recordN(100, 9)
	w.record(1000)
	require.Equal(t, uint64(10), w.count())
	require.Equal(t, 190.0, w.mean())
	require.LessOrEqual(t, w.quantile(0.5), 102.0, "within the bucket of 100")
	require.Equal(t, 1000.0, w.quantile(1))
}

func TestSampleEvery(t *testing.T) {
	require.Equal(t, 1, sampleEvery(20, 5000), "cheap clock: time every op")
	require.Equal(t, 1, sampleEvery(20, 0), "unknown op cost")
	s := sampleEvery(150, 500)
	require.Greater(t, s, 1)
	require.LessOrEqual(t, 2*150.0/float64(s), clockBudget*500+1e-9, "clock stays within budget")
	require.Equal(t, maxSampleEvery, sampleEvery(1000, 1))
	require.Positive(t, clockCost())
}
