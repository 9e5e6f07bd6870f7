package main

import (
	"math"
)

// Statistics shared by the engine benchmark and the labs.

// wilson returns the proportion k/n and its 95% Wilson score interval
// (zeros for n = 0). Unlike the normal approximation it stays inside [0, 1]
// and is honest for the handful of false positives a strong filter shows.
func wilson(k, n int64) (p, lo, hi float64) {
	if n <= 0 {
		return 0, 0, 0
	}
	const z = 1.959963984540054
	nf := float64(n)
	p = float64(k) / nf
	den := 1 + z*z/nf
	mid := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return p, math.Max(0, mid-half), math.Min(1, mid+half)
}

// finite maps NaN and ±Inf to 0: encoding/json refuses them.
func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}
