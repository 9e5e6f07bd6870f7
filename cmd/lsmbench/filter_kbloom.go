package main

import (
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// kBloom is a classic Bloom filter with a free choice of k, for the lab's
// k-sweep: filter.StandardBloom always picks the optimal k, and the point of
// the sweep is to show what the other choices cost. It probes as
// StandardBloom does — xxhash64 of the key, Kirsch–Mitzenmacher double
// hashing g_i = h + i·rotl(h, 32), position = ⌊g_i·m / 2^64⌋ — so at the
// optimal k it measures what StandardBloom measures.
type kBloom struct {
	words []uint64
	m     uint64
	k     int
}

// newKBloom returns an empty filter of at least mBits bits (rounded up to
// whole words) and k probes.
func newKBloom(mBits uint64, k int) *kBloom {
	m := max(64, (mBits+63)&^63)
	return &kBloom{words: make([]uint64, m/64), m: m, k: k}
}

func (f *kBloom) add(key []byte) {
	h := xxhash.Sum64(key)
	g, step := h, bits.RotateLeft64(h, 32)
	for range f.k {
		p, _ := bits.Mul64(g, f.m)
		f.words[p>>6] |= 1 << (p & 63)
		g += step
	}
}

func (f *kBloom) mayContain(key []byte) bool {
	h := xxhash.Sum64(key)
	g, step := h, bits.RotateLeft64(h, 32)
	for range f.k {
		p, _ := bits.Mul64(g, f.m)
		if f.words[p>>6]&(1<<(p&63)) == 0 {
			return false
		}
		g += step
	}
	return true
}

// fillRatio is the fraction of bits set.
func (f *kBloom) fillRatio() float64 {
	n := 0
	for _, w := range f.words {
		n += bits.OnesCount64(w)
	}
	return float64(n) / float64(f.m)
}
