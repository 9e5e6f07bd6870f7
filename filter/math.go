package filter

import "math"

// The formulas users of a filter need, and the expected rate of each
// policy. The tests hold the filters to these numbers.

// OptimalK returns the number of probes that minimizes a classic Bloom
// filter's false-positive rate at bitsPerKey = m/n: round((m/n)·ln 2),
// within [1, 64]. (Bloom uses BloomProbes instead: a blocked filter wants
// about one probe fewer at high bits/key.)
func OptimalK(bitsPerKey float64) int {
	if math.IsNaN(bitsPerKey) {
		return 1
	}
	return int(min(maxProbes, max(1, math.Round(bitsPerKey*math.Ln2))))
}

// BitsPerKey returns m/n = −ln p/(ln 2)², the size per key of a classic
// Bloom filter with optimal k whose false-positive rate is p: 9.59 bits for
// 1%, 14.38 for 0.1%. It returns NaN unless 0 < p < 1.
func BitsPerKey(p float64) float64 {
	if !(p > 0 && p < 1) {
		return math.NaN()
	}
	return -math.Log(p) / (math.Ln2 * math.Ln2)
}

// StandardFPR returns (1 − e^(−k/bitsPerKey))^k, the expected
// false-positive rate of a classic Bloom filter with m/n = bitsPerKey and k
// probes. It slightly underestimates small filters (Bose et al. 2008); at a
// million keys the difference is far below measurement noise.
func StandardFPR(bitsPerKey float64, k int) float64 {
	return math.Pow(1-math.Exp(-float64(k)/bitsPerKey), float64(k))
}

// BloomFPR returns the exact expected false-positive rate of Bloom(bitsPerKey)
// for many keys (the line rounding of small tables aside): 0.83% at 10
// bits/key. The model takes the uneven number of keys per cache line
// (Poisson) and each line's choice of probe pattern into account, which
// (1 − e^(−kn/m))^k does not. It costs about a millisecond.
func BloomFPR(bitsPerKey float64) float64 {
	bpk := clampBitsPerKey(bitsPerKey)
	return blockedFPR(lineBits/bpk, BloomProbes(bpk), defaultChoiceBits)
}

// BloomBitsPerKey returns the smallest bits/key, in steps of 1/100 and
// within [1, 64], for which Bloom's expected false-positive rate is at most
// p: 9.60 for 1% (classic: 9.59), 15.02 for 0.1% (14.38). It takes a few
// hundred milliseconds; call it once.
func BloomBitsPerKey(p float64) float64 {
	if !(p > 0 && p < 1) {
		return math.NaN()
	}
	rate := func(centi int) float64 {
		bpk := float64(centi) / 100
		return blockedFPR(lineBits/bpk, bestProbes(lineBits/bpk, defaultChoiceBits), defaultChoiceBits)
	}
	lo, hi := 100, 6400 // in 1/100 bits
	if rate(lo) <= p {
		return 1
	}
	if rate(hi) > p {
		return 64
	}
	for hi-lo > 1 { // invariant: rate(lo) > p >= rate(hi)
		mid := (lo + hi) / 2
		if rate(mid) <= p {
			hi = mid
		} else {
			lo = mid
		}
	}
	return float64(hi) / 100
}

// CuckooFPR returns the expected false-positive rate of a cuckoo filter
// with f-bit fingerprints filled to load (stored fingerprints / slots): an
// absent key compares its fingerprint, uniform over 1..2^f−1, with the 8
// slots of its two buckets, 1 − (1 − load/(2^f−1))^8. It is below the bound
// 2b/2^f = 8/2^f of Fan et al.
func CuckooFPR(fingerprintBits int, load float64) float64 {
	return 1 - math.Pow(1-load/(math.Exp2(float64(fingerprintBits))-1), 2*bucketSlots)
}

// CuckooFingerprintBits returns the smallest fingerprint width, within
// [4, 16], whose bound 8/2^f is at most p: 13 for 0.1%, 10 for 1%.
func CuckooFingerprintBits(p float64) int {
	for f := minFingerprintBits; f < maxFingerprintBits; f++ {
		if 2*bucketSlots/math.Exp2(float64(f)) <= p {
			return f
		}
	}
	return maxFingerprintBits
}

// ExpectedFPR returns the false-positive rate that a table filter of policy
// p over n distinct keys is expected to show, from the geometry p would
// build (lines, bits or buckets rounded as the builder does). None gives 1
// (every lookup passes). ok is false for policies of other packages.
func ExpectedFPR(p Policy, n int) (fpr float64, ok bool) {
	if n <= 0 {
		return 0, p != nil
	}
	switch p := p.(type) {
	case *blockedPolicy:
		lines := blockedLines(n, p.bitsPerKey)
		return blockedFPR(float64(n)/float64(lines), p.probes, p.choiceBits), true
	case *standardPolicy:
		m := standardBits(n, p.bitsPerKey)
		return StandardFPR(float64(m)/float64(n), p.k), true
	case *cuckooPolicy:
		b := cuckooBuckets(uint64(n), cuckooTargetLoad)
		return CuckooFPR(p.f, float64(n)/float64(bucketSlots*uint64(b))), true
	case *fusePolicy:
		return math.Exp2(-float64(p.f)), true
	case *ribbonPolicy:
		m, r, u := ribbonGeometry(n, p.bitsPerKey)
		return ribbonFPR(m, r, u), true
	case nonePolicy:
		return 1, true
	}
	return 0, false
}
