package filter

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
)

// The classic Bloom filter (FormatStandardBloom, see FORMAT.md): m bits,
// k = round((m/n)·ln 2) probes anywhere in the array at
// g_i = h1 + i·h2 (Kirsch–Mitzenmacher 2006 double hashing, i = 0..k−1, as
// Guava does), with h1 = h and h2 = h rotated by 32 bits, both from the one
// xxhash64 of the key. Each g_i (mod 2^64) is mapped onto [0, m) by
// multiply-shift. The standalone StandardBloomFilter uses the same probes and bit
// order, so a table block and a StandardBloomFilter of the same m and k set the
// same bits.

const standardTrailerLen = 18 // keys u64, m u64, k u8, format u8

// kmStart returns the first position seed and the step of the double
// hashing sequence for hash h.
func kmStart(h uint64) (g, step uint64) { return h, bits.RotateLeft64(h, 32) }

// StandardBloom returns the classic Bloom policy with k = OptimalK(bitsPerKey).
// bitsPerKey is clamped to [1, 64] (NaN means 10). Its Name is
// "sieve.bloom.standard/<bitsPerKey>".
func StandardBloom(bitsPerKey float64) Policy {
	bpk := clampBitsPerKey(bitsPerKey)
	return &standardPolicy{
		policyBase: policyBase{"sieve.bloom.standard/" + strconv.FormatFloat(bpk, 'g', -1, 64), FormatStandardBloom},
		bitsPerKey: bpk,
		k:          OptimalK(bpk),
	}
}

type standardPolicy struct {
	policyBase
	bitsPerKey float64
	k          int
}

func (p *standardPolicy) NewBuilder() Builder { return &standardBuilder{p: p} }

// standardBits is m for n keys: ⌈n·bitsPerKey⌉ rounded up to whole 64-bit
// words.
func standardBits(n int, bitsPerKey float64) uint64 {
	if n == 0 {
		return 0
	}
	m := math.Ceil(float64(n) * bitsPerKey)
	return max(64, (uint64(m)+63)&^63)
}

type standardBuilder struct {
	hashCollector
	p *standardPolicy
}

// Finish returns the block and resets the builder.
func (b *standardBuilder) Finish() []byte {
	hs := b.take()
	m := standardBits(hs.len(), b.p.bitsPerKey)
	words := make([]uint64, m/64)
	for _, ch := range hs.chunks {
		for _, h := range ch {
			setKM(words, m, b.p.k, h)
		}
	}
	out := make([]byte, m/8+standardTrailerLen)
	for i, w := range words {
		binary.LittleEndian.PutUint64(out[8*i:], w)
	}
	t := out[m/8:]
	binary.LittleEndian.PutUint64(t[0:], uint64(hs.len()))
	binary.LittleEndian.PutUint64(t[8:], m)
	t[16] = byte(b.p.k)
	t[17] = byte(FormatStandardBloom)
	return out
}

// setKM sets the k probe bits of h in an m-bit array and reports whether any
// of them was clear.
func setKM(words []uint64, m uint64, k int, h uint64) bool {
	changed := false
	g, step := kmStart(h)
	for range k {
		p := reduce64(g, m)
		w, bit := p>>6, uint64(1)<<(p&63)
		changed = changed || words[w]&bit == 0
		words[w] |= bit
		g += step
	}
	return changed
}

// testKM reports whether all k probe bits of h are set.
func testKM(words []uint64, m uint64, k int, h uint64) bool {
	g, step := kmStart(h)
	for range k {
		p := reduce64(g, m)
		if words[p>>6]&(1<<(p&63)) == 0 {
			return false
		}
		g += step
	}
	return true
}

// standardReader probes a FormatStandardBloom block in place.
type standardReader struct {
	bits []byte // m/8 bytes; bit p is bits[p>>3] & (1 << (p&7))
	m    uint64
	k    int
}

func openStandard(data []byte) (Reader, error) {
	if _, err := blockTrailer(data, standardTrailerLen, "standard Bloom"); err != nil {
		return nil, err
	}
	body := data[:len(data)-standardTrailerLen]
	t := data[len(body):]
	keys := binary.LittleEndian.Uint64(t[0:])
	m := binary.LittleEndian.Uint64(t[8:])
	k := int(t[16])
	switch {
	case m/8 != uint64(len(body)) || m%8 != 0:
		return nil, malformed("standard Bloom block has %d body bytes for m = %d bits", len(body), m)
	case k < 1 || k > maxProbes:
		return nil, malformed("standard Bloom block has k = %d, want 1..%d", k, maxProbes)
	case m == 0 && keys != 0:
		return nil, malformed("standard Bloom block has %d keys and no bits", keys)
	case m == 0:
		return emptyFilter{}, nil
	}
	return &standardReader{bits: body, m: m, k: k}, nil
}

// MayContain tests all k bits without branching on them: a mispredicted
// early exit costs more than the loads it saves while the filter is in
// cache, and the k independent loads overlap when it is not.
func (r *standardReader) MayContain(key []byte) bool { return r.MayContainHash(hashKey(key)) }

// MayContainHash implements HashReader.
func (r *standardReader) MayContainHash(h uint64) bool {
	g, step := kmStart(h)
	acc := byte(1)
	for range r.k {
		p := reduce64(g, r.m)
		acc &= r.bits[p>>3] >> (p & 7)
		g += step
	}
	return acc&1 != 0
}
