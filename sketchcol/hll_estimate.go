package sketchcol

import "math"

// hllHisto counts registers by value: histo[k] is the number of registers
// holding k. Values above 51 cannot come from a hash; decoders refuse them.
type hllHisto [hllMaxRank + 1]int

// hllAlphaInf is α∞ = 1/(2 ln 2), the limit of the HyperLogLog bias
// constant as the number of registers grows.
const hllAlphaInf = 0.721347520444481703680

// estimate is Otmar Ertl's improved raw estimator ("New cardinality
// estimation algorithms for HyperLogLog sketches", 2017, algorithm 6),
// which Redis uses since 5.0. It needs no bias tables and no switch to
// linear counting: the σ term handles the registers still at zero, the τ
// term those that saturated at q+1.
//
//	z = m·τ(1 − C[q+1]/m)
//	for k = q … 1: z = (z + C[k]) / 2
//	z = z + m·σ(C[0]/m)
//	E = α∞·m² / z, rounded half away from zero
//
// The operations are done in exactly this order, and the products that
// feed a sum are by powers of two (exact), so the result is the same
// double as Redis's on any IEEE-754 machine; PFCOUNT answers agree to the
// unit.
func (histo *hllHisto) estimate() int64 {
	const m = float64(hllRegisters)
	z := m * hllTau((m-float64(histo[hllQ+1]))/m)
	for k := hllQ; k >= 1; k-- {
		z += float64(histo[k])
		z *= 0.5
	}
	z += m * hllSigma(float64(histo[0])/m)
	e := math.Round(hllAlphaInf * m * m / z)
	if !(e < math.MaxInt64) { // z = 0: every register at 51, beyond any real input
		return math.MaxInt64
	}
	return int64(e)
}

// hllSigma is σ(x) = x + Σ_{k≥1} x^(2^k)·2^(k−1), summed until the sum
// stops changing; σ(1) = ∞ (an empty sketch estimates 0).
func hllSigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	z, y := x, 1.0
	for {
		x *= x
		prev := z
		z += float64(x * y)
		y += y
		if z == prev {
			return z
		}
	}
}

// hllTau is τ(x) = (1 − x − Σ_{k≥1} (1 − x^(2^−k))²·2^−k) / 3, summed until
// the sum stops changing; τ(0) = τ(1) = 0.
func hllTau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	z, y := 1-x, 1.0
	for {
		x = math.Sqrt(x)
		prev := z
		y *= 0.5
		d := float64((1 - x) * (1 - x))
		z -= float64(d * y)
		if z == prev {
			return z / 3
		}
	}
}
