package filter

import "math"

// Sizing policies, for allocations that give each table its own bits per
// key (Monkey; see README.md "Per-level allocation").

// BitsPerKeyOf returns the configured bits per key of p, and false for
// policies without a size (None, other packages). For the discrete
// families it is the size they build: about 1.125·f for BinaryFuse(f)
// and f/0.95 for Cuckoo(f).
func BitsPerKeyOf(p Policy) (float64, bool) {
	switch p := p.(type) {
	case *blockedPolicy:
		return p.bitsPerKey, true
	case *standardPolicy:
		return p.bitsPerKey, true
	case *ribbonPolicy:
		return p.bitsPerKey, true
	case *fusePolicy:
		return fuseFallbackBits(p.f), true
	case *cuckooPolicy:
		return float64(p.f) / cuckooTargetLoad, true
	}
	return 0, false
}

// Resize returns a policy of p's family at (about) bitsPerKey bits per
// key: the same family with that knob for Bloom, StandardBloom and Ribbon
// (continuous), the nearest size for BinaryFuse (8 or 16) and Cuckoo
// (f = round(0.95·bitsPerKey) in 4..16). Other policies are returned
// unchanged. The result's Name records its size, and its blocks are read
// by any policy of the family (the blocks carry their geometry).
func Resize(p Policy, bitsPerKey float64) Policy {
	switch p := p.(type) {
	case *blockedPolicy:
		if bitsPerKey == p.bitsPerKey {
			return p
		}
		return Bloom(roundBits(bitsPerKey))
	case *standardPolicy:
		if bitsPerKey == p.bitsPerKey {
			return p
		}
		return StandardBloom(roundBits(bitsPerKey))
	case *ribbonPolicy:
		if bitsPerKey == p.bitsPerKey {
			return p
		}
		return Ribbon(roundBits(bitsPerKey))
	case *fusePolicy:
		f := 8
		if bitsPerKey >= (fuseFallbackBits(8)+fuseFallbackBits(16))/2 {
			f = 16
		}
		if f == p.f {
			return p
		}
		return BinaryFuse(f)
	case *cuckooPolicy:
		f := min(maxFingerprintBits, max(minFingerprintBits, int(math.Round(bitsPerKey*cuckooTargetLoad))))
		if f == p.f {
			return p
		}
		return Cuckoo(f)
	}
	return p
}

// roundBits keeps policy names short: sizes to 1/100 bit per key.
func roundBits(b float64) float64 { return math.Round(b*100) / 100 }

// AllocationSlope returns s, the bits per key p's family spends per factor
// e of false-positive rate (bits ≈ a − s·ln FPR): 1/ln²2 = 2.08 for the
// classic Bloom filter; for the blocked one the slope of its exact model
// (BloomFPR) between b−2 and b+4 bits/key around p's size b (2.29 at 10:
// its 512-bit lines make each extra bit worth less than in a classic
// filter); 1/ln 2 for Ribbon, 1.125/ln 2 for binary fuse, 1/(0.95·ln 2)
// for cuckoo. It is 0 for policies without a size.
func AllocationSlope(p Policy) float64 {
	switch p := p.(type) {
	case *blockedPolicy:
		lo, hi := max(1, p.bitsPerKey-2), p.bitsPerKey+4
		return (hi - lo) / math.Log(BloomFPR(lo)/BloomFPR(hi))
	case *standardPolicy:
		return 1 / (math.Ln2 * math.Ln2)
	case *ribbonPolicy:
		return 1 / math.Ln2
	case *fusePolicy:
		return 1.125 / math.Ln2
	case *cuckooPolicy:
		return 1 / (cuckooTargetLoad * math.Ln2)
	}
	return 0
}

// MonkeyBitsPerKey returns the bits per key of each run (an L0 table, or
// a level of L1+: what one lookup probes once) that minimizes the sum of
// the runs' false-positive rates for the memory of entries[i] keys at
// budget[i] bits per key each, for a family of slope s (AllocationSlope),
// each result clamped to [lo, hi].
//
// With bits_i = a − s·ln p_i, minimizing Σ p_i subject to
// Σ n_i·bits_i = M gives p_i ∝ n_i (Dayan, Athanassoulis and Idreos,
// "Monkey", SIGMOD 2017), that is
//
//	bits_i = b̄ + s·ln(G / n_i),   ln G = Σ (n_j/N)·ln n_j,   b̄ = M/N:
//
// runs smaller than the entry-weighted geometric mean G get more bits,
// larger ones fewer, and the memory is the same. Runs whose result falls
// outside [lo, hi] are pinned there and the rest solved again.
func MonkeyBitsPerKey(entries, budget []float64, s, lo, hi float64) []float64 {
	return MonkeyBitsPerKeyProbed(entries, nil, budget, s, lo, hi)
}

// MonkeyBitsPerKeyProbed is MonkeyBitsPerKey for runs that a lookup probes
// only with probability probed[i] (a level whose tables cover part of the
// key space; nil means 1 for all). It minimizes Σ probed_i·p_i for the
// same memory: p_i ∝ n_i/probed_i, so the closed form holds with
// n_i/probed_i in place of n_i inside the logarithms.
func MonkeyBitsPerKeyProbed(entries, probed, budget []float64, s, lo, hi float64) []float64 {
	eff := func(i int) float64 {
		if probed == nil || probed[i] <= 0 {
			return entries[i]
		}
		return entries[i] / min(1, probed[i])
	}
	out := make([]float64, len(entries))
	pinned := make([]bool, len(entries))
	var total float64 // M
	for i, n := range entries {
		total += n * budget[i]
	}
	for range len(entries) + 1 {
		var n, nlogn, mem float64
		for i, e := range entries {
			if pinned[i] {
				mem += e * out[i]
			} else if e > 0 {
				n += e
				nlogn += e * math.Log(eff(i))
			}
		}
		if n == 0 {
			break
		}
		avg := (total - mem) / n
		lnG := nlogn / n
		changed := false
		for i, e := range entries {
			if pinned[i] {
				continue
			}
			if e <= 0 {
				out[i] = hi // an empty run costs no memory
				continue
			}
			b := avg + s*(lnG-math.Log(eff(i)))
			out[i] = b
			if b < lo || b > hi {
				out[i] = min(hi, max(lo, b))
				pinned[i] = true
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	return out
}
