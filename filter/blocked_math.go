package filter

import (
	"math"
	"sync"
)

// The exact expected false-positive rate of the blocked Bloom filter, used to
// choose k and by ExpectedFPR. gen_fpr_table.go checks it against simulation.
//
// Model: the keys per line are Poisson with mean λ = n/lines. Each of a
// key's k probes lands on one of the 512 bits of its line uniformly and
// independently; the B = 512 − c plain bits it hits are set, the c selector
// bits read as set anyway. So one probe turns a line with s plain bits set
// into s+1 with probability (B − s)/512. A line with x keys is built under
// each of the T = 2^c selectors independently and keeps the one with the
// fewest plain bits set, S_min; an absent key then passes all k probes with
// probability ((S_min + c)/512)^k. Summing over the distribution of x and
// S_min gives the rate. Unlike (1 − e^(−kn/m))^k this accounts for the
// uneven load of the lines, which is what costs a blocked filter its
// accuracy, and for the bits a key's own probes set twice.

// blockedFPR returns the expected false-positive rate of a blocked Bloom
// filter with keysPerLine keys per line on average, k probes and c selector
// bits.
func blockedFPR(keysPerLine float64, k, c int) float64 {
	B := lineBits - c
	if k < 1 || k > maxProbes || c < 0 || c > maxChoiceBits || keysPerLine < 0 || math.IsNaN(keysPerLine) {
		return math.NaN()
	}
	if keysPerLine == 0 {
		return 0
	}
	pass := make([]float64, B+1)
	for s := range pass {
		pass[s] = math.Pow(float64(s+c)/lineBits, float64(k))
	}
	dist := make([]float64, B+1)
	next := make([]float64, B+1)
	tail := make([]float64, B+2)
	dist[0] = 1
	lam := keysPerLine
	xMax := int(lam + 12*math.Sqrt(lam) + 30)
	var fpr float64
	for x := 0; x <= xMax; x++ {
		lgP, _ := math.Lgamma(float64(x) + 1)
		px := math.Exp(-lam + float64(x)*math.Log(lam) - lgP)
		fpr += px * minOfChoices(dist, tail, pass, c)
		for range k {
			probe(dist, next)
			dist, next = next, dist
		}
	}
	return fpr
}

// minOfChoices returns E[pass(S_min)] where S_min is the least of 2^c
// independent draws from dist: P(S_min ≥ s) = P(S ≥ s)^(2^c).
func minOfChoices(dist, tail, pass []float64, c int) float64 {
	B := len(dist) - 1
	tail[B+1] = 0
	for s := B; s >= 0; s-- {
		tail[s] = tail[s+1] + dist[s]
	}
	pow := func(t float64) float64 {
		for range c {
			t *= t
		}
		return t
	}
	var e float64
	for s := 0; s <= B; s++ {
		e += (pow(tail[s]) - pow(tail[s+1])) * pass[s]
	}
	return e
}

// probe advances the distribution of plain bits set by one probe.
func probe(dist, next []float64) {
	B := len(dist) - 1
	clear(next)
	for s, d := range dist {
		if d < 1e-300 {
			continue
		}
		up := float64(B-s) / lineBits
		next[s] += d * (1 - up)
		if s < B {
			next[s+1] += d * up
		}
	}
}

var probesMemo sync.Map // float64 bits/key -> int

// BloomProbes returns the number of probes k that Bloom(bitsPerKey) uses:
// the k minimizing the exact expected false-positive rate of the blocked
// filter at that size. It is about 0.7·bitsPerKey (7 at 10 bits/key). The
// first call for a given size costs a few milliseconds; results are cached.
func BloomProbes(bitsPerKey float64) int {
	bpk := clampBitsPerKey(bitsPerKey)
	if k, ok := probesMemo.Load(bpk); ok {
		return k.(int)
	}
	k := bestProbes(lineBits/bpk, defaultChoiceBits)
	probesMemo.Store(bpk, k)
	return k
}

// bestProbes walks downhill from the classic optimum round(bpk·ln 2); the
// rate is unimodal in k.
func bestProbes(keysPerLine float64, c int) int {
	f := func(k int) float64 { return blockedFPR(keysPerLine, k, c) }
	k := min(maxProbes, max(1, int(math.Round(lineBits/keysPerLine*math.Ln2))))
	best := f(k)
	for dir := -1; dir <= 1; dir += 2 {
		for k+dir >= 1 && k+dir <= maxProbes {
			v := f(k + dir)
			if v >= best {
				break
			}
			k, best = k+dir, v
		}
	}
	return k
}
