package memtable

import (
	"math/bits"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
)

// keyFilter is a memtable's whole-key Bloom filter (RocksDB's
// memtable_whole_key_filtering): a Get of a key the table does not hold
// usually ends after one cache line instead of a B-tree descent, which is
// what a lookup of an absent key, or of a key in an older table, costs in
// every memtable it passes. Blocked like the table filter (filter.Bloom):
// a key sets filterProbes bits in one 64-byte line, chosen by its xxhash64.
// The writer sets bits with atomic ORs while readers test them with atomic
// loads; a key's bits are set before its entry is inserted, so a reader
// that can see the entry sees its bits.
type keyFilter struct {
	lines []filterLine
}

type filterLine [8]atomic.Uint64

const filterProbes = 6

// newKeyFilter returns a filter of about bitsTotal bits (nil for 0).
func newKeyFilter(bitsTotal int64) *keyFilter {
	if bitsTotal <= 0 {
		return nil
	}
	n := max(1, (bitsTotal+511)/512)
	return &keyFilter{lines: make([]filterLine, n)}
}

// line returns the line of hash h (multiply-shift over the line count);
// the bits in it come from successive multiples of h by an odd constant,
// 9 bits each.
func (f *keyFilter) line(h uint64) *filterLine {
	hi, _ := bits.Mul64(h, uint64(len(f.lines)))
	return &f.lines[hi]
}

func (f *keyFilter) add(h uint64) {
	l := f.line(h)
	g := h | 1
	for i := 0; i < filterProbes; i++ {
		g *= 0x9E3779B97F4A7C15
		b := g >> 55 // 0..511
		l[b>>6].Or(1 << (b & 63))
	}
}

func (f *keyFilter) mayContain(h uint64) bool {
	l := f.line(h)
	g := h | 1
	for i := 0; i < filterProbes; i++ {
		g *= 0x9E3779B97F4A7C15
		b := g >> 55
		if l[b>>6].Load()&(1<<(b&63)) == 0 {
			return false
		}
	}
	return true
}

func keyHash(ukey []byte) uint64 { return xxhash.Sum64(ukey) }

// KeyHash is the hash the key filter uses: xxhash64, as filter.HashKey, so
// a lookup hashes its key once for the memtables and the table filters.
func KeyHash(ukey []byte) uint64 { return keyHash(ukey) }

// FilterBitsPerByte is the filter size NewWithFilter is given per byte of
// memtable budget: 1/8 bit per byte, about 10 bits per entry for entries
// of ~80 bytes of key, value and overhead (more for larger ones), at
// 1.6% of the memtable's memory.
const FilterBitsPerByte = 1.0 / 8
