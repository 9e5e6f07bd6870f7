package main

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWilson(t *testing.T) {
	p, lo, hi := wilson(0, 0)
	require.Zero(t, p+lo+hi)
	p, lo, hi = wilson(0, 1000)
	require.Zero(t, p)
	require.Zero(t, lo)
	require.InDelta(t, 0.0038, hi, 0.0002, "about 3.8/n with no hits")
	p, lo, hi = wilson(80, 10000)
	require.Equal(t, 0.008, p)
	require.True(t, lo < p && p < hi)
	require.InDelta(t, 1.96*math.Sqrt(p*(1-p)/10000), hi-p, 0.0002)
	_, lo, hi = wilson(10, 10)
	require.Equal(t, 1.0, hi)
	require.Less(t, lo, 1.0)
}
