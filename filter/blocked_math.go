package filter

import (
	"math"
	"sync"
)

// The exact expected false-positive rate of the blocked Bloom filter, used to
// choose k and by ExpectedFPR. gen_fpr_table.go checks it against simulation.
//
// Model: the keys per line are Poisson with mean λ = n/lines. A key sets k
// distinct uniformly random bits among the B = 512 − c usable bits of its
// line, so a line with s bits set gains j new ones with the hypergeometric
// probability C(B−s, j)·C(s, k−j)/C(B, k). A line with x keys is built under
// each of the T = 2^c selectors independently and keeps the one with the
// fewest bits set, S_min; an absent key (one pattern, k distinct bits) then
// passes with probability C(S_min, k)/C(B, k). Summing over the distribution
// of x and S_min gives the rate. Unlike (1 − e^(−kn/m))^k this accounts for
// the uneven load of the lines, which is what costs a blocked filter its
// accuracy.

// blockedFPR returns the expected false-positive rate of a blocked Bloom
// filter with keysPerLine keys per line on average, k probes and c selector
// bits.
func blockedFPR(keysPerLine float64, k, c int) float64 {
	B := lineBits - c
	if k < 1 || k > B || keysPerLine < 0 || math.IsNaN(keysPerLine) {
		return math.NaN()
	}
	if keysPerLine == 0 {
		return 0
	}
	lgBk := lchoose(B, k)
	pass := make([]float64, B+1) // C(s,k)/C(B,k)
	for s := k; s <= B; s++ {
		pass[s] = math.Exp(lchoose(s, k) - lgBk)
	}
	trans := hypergeometricTable(B, k, lgBk)
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
		addKey(dist, next, trans, k)
		dist, next = next, dist
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
		if pass[s] != 0 {
			e += (pow(tail[s]) - pow(tail[s+1])) * pass[s]
		}
	}
	return e
}

// hypergeometricTable returns t[s*(k+1)+j] = P(a key adds j new bits to a
// line with s of B bits set).
func hypergeometricTable(B, k int, lgBk float64) []float64 {
	t := make([]float64, (B+1)*(k+1))
	for s := 0; s <= B; s++ {
		for j := 0; j <= k; j++ {
			if j <= B-s && k-j <= s {
				t[s*(k+1)+j] = math.Exp(lchoose(B-s, j) + lchoose(s, k-j) - lgBk)
			}
		}
	}
	return t
}

func addKey(dist, next, trans []float64, k int) {
	clear(next)
	for s, d := range dist {
		if d < 1e-300 {
			continue
		}
		row := trans[s*(k+1) : (s+1)*(k+1)]
		for j, t := range row {
			if t != 0 {
				next[s+j] += d * t
			}
		}
	}
}

// lchoose returns ln C(n, k).
func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n) + 1)
	b, _ := math.Lgamma(float64(k) + 1)
	c, _ := math.Lgamma(float64(n-k) + 1)
	return a - b - c
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
