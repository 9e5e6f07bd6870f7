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
// known. Hashes go into fixed-size chunks, so that collecting n keys
// allocates 8n bytes once instead of regrowing (and copying) one slice.
//
// A key equal to the previous one is skipped, because an SSTable adds each
// version of a user key in a row; other duplicates cost some space but
// never correctness.
type hashCollector struct {
	chunks [][]uint64
	n      int
}

const hashChunk = 1 << 13 // hashes per chunk (64 KiB)

// Add is a table-filter builder's Add: the builders embed the collector.
func (c *hashCollector) Add(key []byte) { c.add(key) }

func (c *hashCollector) add(key []byte) { c.addHash(hashKey(key)) }

// AddHash is a table-filter builder's AddHash (HashBuilder): the builders
// embed the collector.
func (c *hashCollector) AddHash(h uint64) { c.addHash(h) }

func (c *hashCollector) addHash(h uint64) {
	last := len(c.chunks) - 1
	if last >= 0 {
		ch := c.chunks[last]
		if ch[len(ch)-1] == h {
			return
		}
		if len(ch) < cap(ch) {
			c.chunks[last] = append(ch, h)
			c.n++
			return
		}
	}
	ch := make([]uint64, 1, hashChunk)
	ch[0] = h
	c.chunks = append(c.chunks, ch)
	c.n++
}

// take returns the collected hashes and resets the collector for reuse.
func (c *hashCollector) take() hashList {
	l := hashList{chunks: c.chunks, n: c.n}
	*c = hashCollector{}
	return l
}

// hashList is the hashes of one table, in the order the keys were added.
type hashList struct {
	chunks [][]uint64
	n      int
}

func (l hashList) len() int { return l.n }

// hashListOf is a hashList over one slice, for tests and tools.
func hashListOf(hs []uint64) hashList {
	if len(hs) == 0 {
		return hashList{}
	}
	return hashList{chunks: [][]uint64{hs}, n: len(hs)}
}

// HashKey is the hash every filter of this package derives its probes
// from: for their readers, MayContainHash(HashKey(k)) == MayContain(k).
func HashKey(key []byte) uint64 { return hashKey(key) }

// prefixTag separates the prefix entries of a table filter from its
// whole-key entries (HashPrefix).
const prefixTag = 0x7072656669782121 // "prefix!!"

// HashPrefix is the hash under which a table filter holds a key prefix
// (the engine's prefix filters, RocksDB's prefix_extractor with
// whole-key filtering kept): HashKey(p) xor a tag, remixed by
// MurmurHash3's 64-bit finalizer. The finalizer is a bijection, so the
// prefix entry of p and the whole-key entry of a key equal to p have
// different hashes (they collide only as two unrelated keys may, with
// probability 2^-64): a prefix can never answer for a whole key or the
// reverse. Add the result with HashBuilder.AddHash and probe it with
// HashReader.MayContainHash.
func HashPrefix(p []byte) uint64 { return mix64(hashKey(p) ^ prefixTag) }

// mix64 is MurmurHash3's 64-bit finalizer (fmix64), a bijection that
// spreads every input bit over the output.
func mix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// HashBuilder is a Builder that also takes an entry by its hash (every
// builder of this package does). A table writer adds key prefixes with
// it (HashPrefix), in the same filter as the keys.
type HashBuilder interface {
	Builder
	AddHash(h uint64)
}

// HashReader is a Reader that also takes the key's hash, so that a lookup
// probing several filters with one key (the memtables and L0 tables of an
// LSM, then one table per level) hashes the key once. Every reader this
// package returns implements it.
type HashReader interface {
	Reader
	MayContainHash(h uint64) bool
}
