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
// every memtable it passes. It is blocked to one 64-bit word per key: the
// key's xxhash64 picks a word and filterProbes bits in it, so an Add costs
// one atomic OR (the writer) and a Get one atomic load (the readers) —
// the filter is on every Put's path, where a cache-line-blocked filter's
// six ORs cost 10–15% of a fill. Add sets a key's bits right after the
// entry's insert (after it lets the write lock go) and before it returns,
// so before the DB publishes the entry's sequence number: a reader whose
// snapshot holds the entry sees its bits.
type keyFilter struct {
	words []atomic.Uint64
}

const filterProbes = 5

// newKeyFilter returns a filter of about bitsTotal bits (nil for 0).
func newKeyFilter(bitsTotal int64) *keyFilter {
	if bitsTotal <= 0 {
		return nil
	}
	return &keyFilter{words: make([]atomic.Uint64, max(1, (bitsTotal+63)/64))}
}

// slot returns the word of hash h (multiply-shift over the word count)
// and the mask of its bits: filterProbes 6-bit fields of h remixed by an
// odd constant.
func (f *keyFilter) slot(h uint64) (*atomic.Uint64, uint64) {
	hi, _ := bits.Mul64(h, uint64(len(f.words)))
	g := h * 0x9E3779B97F4A7C15
	var mask uint64
	for i := 0; i < filterProbes; i++ {
		mask |= 1 << (g >> 58)
		g <<= 6
	}
	return &f.words[hi], mask
}

func (f *keyFilter) add(h uint64) {
	w, mask := f.slot(h)
	if w.Load()&mask != mask {
		w.Or(mask)
	}
}

func (f *keyFilter) mayContain(h uint64) bool {
	w, mask := f.slot(h)
	return w.Load()&mask == mask
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
