package filter

import (
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// hashKey is the one hash computed per key: xxhash64 with seed 0. Every probe
// position, line, bucket and fingerprint in this package derives from it, so
// a key costs exactly one pass over its bytes.
func hashKey(key []byte) uint64 { return xxhash.Sum64(key) }

// golden64 is 2^64/φ rounded to odd. Multiplying by it is the per-probe remix
// of the blocked Bloom filter and spreads cuckoo fingerprints over buckets.
const golden64 = 0x9E3779B97F4A7C15

// reduce32 maps x onto [0, n) by multiply-shift (Lemire's "fastrange"). It
// uses the high bits of x, so x should come from the well-mixed top of a
// hash; it costs one multiply instead of a division.
func reduce32(x, n uint32) uint32 { return uint32(uint64(x) * uint64(n) >> 32) }

// reduce64 is reduce32 for 64-bit x and n.
func reduce64(x, n uint64) uint64 {
	hi, _ := bits.Mul64(x, n)
	return hi
}

// hashCollector is the part every table-filter builder shares: it keeps one
// hash per key until Finish, when the key count (and so the geometry) is
// known. A key equal to the previous one is skipped, because an SSTable adds
// each version of a user key in a row; other duplicates cost some space but
// never correctness.
type hashCollector struct {
	hashes []uint64
}

func (c *hashCollector) add(key []byte) {
	h := hashKey(key)
	if n := len(c.hashes); n > 0 && c.hashes[n-1] == h {
		return
	}
	c.hashes = append(c.hashes, h)
}

// take returns the collected hashes and resets the collector for reuse.
func (c *hashCollector) take() []uint64 {
	hs := c.hashes
	c.hashes = nil
	return hs
}
