package sketchcol

import "encoding/binary"

// murmurHash64A is Austin Appleby's MurmurHash64A (public domain), the hash
// Redis applies to HyperLogLog elements. Blocks of 8 bytes are read
// little-endian whatever the machine, as Redis does, so the hash of an
// element is the same everywhere. The 1 to 7 tail bytes are folded in as
// unsigned values, the highest-indexed byte in the highest position, before
// one final multiply.
func murmurHash64A(key []byte, seed uint64) uint64 {
	const (
		m = 0xc6a4a7935bd1e995
		r = 47
	)
	h := seed ^ uint64(len(key))*m
	for ; len(key) >= 8; key = key[8:] {
		k := binary.LittleEndian.Uint64(key)
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
	}
	if len(key) > 0 {
		for i := len(key) - 1; i >= 0; i-- {
			h ^= uint64(key[i]) << (8 * uint(i))
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}
