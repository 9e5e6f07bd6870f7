// Package memtable is sieve's sorted in-memory table of internal keys: the
// mutable write buffer in front of the WAL, and, once full, an immutable
// table waiting to be flushed.
//
// It is an insert-only B-tree, specialised to its entries, of entries
// ordered by base.CompareInternal. Key and value bytes are copied
// into an arena of large chunks, so an Add costs no allocation in steady
// state and the memory accounting is the arena's size.
//
// Concurrency: one writer (Add) at a time — the DB's commit pipeline
// guarantees it — and any number of concurrent readers (Get, iterators).
// Readers hold a read lock only for the few microseconds of one tree descent
// or one refill of an iterator's buffer, never across calls, so a slow
// reader never holds up the writer for longer than that.
package memtable

import (
	"bytes"
	"encoding/binary"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/prefetch"
	"github.com/sievedb/sieve/internal/rangedel"
)

// entryOverhead approximates the bytes an entry costs beyond its key and
// value: its 40-byte item and 8-byte word in a B-tree node plus node slack
// (measured: 71 bytes an entry for random inserts, whose nodes are about
// 70% full; ascending inserts leave nodes half full, 99 bytes).
const entryOverhead = 72

// arenaChunkSize is the size of the arena chunks that key and value bytes
// are copied into. Larger values get their own allocation.
const arenaChunkSize = 256 << 10

type entry struct {
	// p0 and p1 are the first 16 bytes of the user key as two big-endian
	// words, zero-padded: when two entries' words differ they order the
	// entries as their keys do (a shorter key pads with zeros, which sort
	// first), so most comparisons are one or two integer comparisons.
	p0, p1  uint64
	trailer uint64
	// data points at the user key's bytes followed by the value's (klen
	// and vlen of them), in the arena: 40 bytes an entry instead of two
	// slice headers' 72, so that B-tree nodes are denser and an insert
	// shifts less memory.
	data       unsafe.Pointer
	klen, vlen uint32
}

// wordKeyBytes is the key length p0 and p1 hold whole: an entry's key of
// at most this many bytes is its two words, zero-padded, and its length.
const wordKeyBytes = 16

// ukey returns the entry's user key (non-nil, possibly empty).
func (e *entry) ukey() []byte {
	if e.klen == 0 {
		return emptyBytes
	}
	return unsafe.Slice((*byte)(e.data), e.klen)
}

// value returns the entry's value (non-nil, possibly empty).
func (e *entry) value() []byte {
	if e.vlen == 0 {
		return emptyBytes
	}
	return unsafe.Slice((*byte)(unsafe.Add(e.data, e.klen)), e.vlen)
}

var emptyBytes = []byte{}

// keyWord returns bytes [off, off+8) of k as a big-endian word, padded
// with zeros past the end of k.
func keyWord(k []byte, off int) uint64 {
	if len(k) >= off+8 {
		return binary.BigEndian.Uint64(k[off:])
	}
	var p uint64
	for i := off; i < len(k); i++ {
		p |= uint64(k[i]) << (56 - 8*(i-off))
	}
	return p
}

// lessEntry orders entries as base.CompareInternal orders their keys. The
// first-word test is small enough to inline into the tree's searches.
func lessEntry(a, b *entry) bool {
	if a.p0 != b.p0 {
		return a.p0 < b.p0
	}
	return lessEntryTail(a, b)
}

func lessEntryTail(a, b *entry) bool {
	if a.p1 != b.p1 {
		return a.p1 < b.p1
	}
	if a.klen > wordKeyBytes || b.klen > wordKeyBytes {
		// Both keys' first 16 bytes are equal (keys no longer than 16
		// bytes are wholly in their words, up to trailing zero bytes).
		if c := bytes.Compare(a.ukey(), b.ukey()); c != 0 {
			return c < 0
		}
	} else if a.klen != b.klen {
		return a.klen < b.klen // same words: the shorter has fewer trailing zeros
	}
	return a.trailer > b.trailer
}

// makeEntry returns a search pivot for (ukey, trailer); ukey is not copied.
func makeEntry(ukey []byte, trailer uint64) entry {
	return entry{p0: keyWord(ukey, 0), p1: keyWord(ukey, 8), trailer: trailer,
		data: unsafe.Pointer(unsafe.SliceData(ukey)), klen: uint32(len(ukey))}
}

// MemTable is a sorted table of internal keys. The zero value is not usable;
// call New.
type MemTable struct {
	mu     rwLock
	tree   btree
	filter *keyFilter // nil: none
	// prefix puts the keys' prefixes in filter too (prefix.go).
	prefix prefixFilter
	// mergeCount[h%len] counts (saturating) the merge operands added for
	// the keys of hash h: at least the successive merges of any of those
	// keys, so HasSuccessiveMerges answers from it, without a descent,
	// while it is below the limit asked about. Written and read by the one
	// writer; empty (always descend) without a key filter.
	mergeCount []uint8

	// Writer-owned arena state; not read by readers.
	chunk []byte

	size    atomic.Int64 // approximate bytes used
	count   atomic.Int64 // entries
	merges  atomic.Int64 // merge operands
	minSeq  atomic.Uint64
	maxSeq  atomic.Uint64
	deletes atomic.Int64

	// rangeDels are the range tombstones added (under mu's write lock,
	// their bytes in the arena); rangeDelCount is their number, stored
	// after each append, and rangeDelList the fragmented form of the first
	// n of them, built by the first reader that needs it.
	rangeDels     []rangedel.Tombstone
	rangeDelCount atomic.Int64
	rangeDelList  atomic.Pointer[fragmented]
}

// fragmented is a memtable's range tombstones, fragmented: the first n
// added.
type fragmented struct {
	n    int64
	list *rangedel.List
}

// New returns an empty memtable without a key filter.
func New() *MemTable { return NewWithFilter(0) }

// NewWithFilter returns an empty memtable whose Gets first consult a
// whole-key Bloom filter of about filterBits bits (none for 0); size it
// for the entries the table will hold (see FilterBitsPerByte), about 10
// bits each.
func NewWithFilter(filterBits int64) *MemTable {
	m := &MemTable{filter: newKeyFilter(filterBits)}
	if filterBits > 0 {
		// One counter per 32 filter bits (about three entries' worth),
		// a power of two from 64 to 64 Ki.
		n := 64
		for n < 1<<16 && int64(n)*32 < filterBits {
			n *= 2
		}
		m.mergeCount = make([]uint8, n)
	}
	m.minSeq.Store(base.SeqNumMax)
	return m
}

// alloc copies key and value, back to back, into the arena and returns
// where they start (nil when both are empty).
func (m *MemTable) alloc(key, value []byte) unsafe.Pointer {
	n := len(key) + len(value)
	if n == 0 {
		return nil
	}
	var b []byte
	if n > arenaChunkSize/4 {
		b = make([]byte, 0, n)
	} else {
		if len(m.chunk)+n > cap(m.chunk) {
			m.chunk = make([]byte, 0, arenaChunkSize)
		}
		b = m.chunk[len(m.chunk):len(m.chunk)]
		m.chunk = m.chunk[:len(m.chunk)+n]
	}
	b = append(b, key...)
	b = append(b, value...)
	return unsafe.Pointer(unsafe.SliceData(b))
}

// Add inserts one entry. The key and value are copied. REQUIRES: no other
// Add runs concurrently; (ukey, seq) is new to this memtable.
//
// Kind base.KindRangeDelete adds a range tombstone deleting [ukey, value)
// (see RangeDels) instead of an entry.
func (m *MemTable) Add(seq uint64, kind base.Kind, ukey, value []byte) {
	if uint64(len(ukey)) > math.MaxUint32 || uint64(len(value)) > math.MaxUint32 {
		panic("memtable: key or value of 4 GiB or more") // the DB caps batches far below
	}
	if kind == base.KindRangeDelete {
		m.addRangeDel(seq, ukey, value)
		return
	}
	var h uint64
	if m.filter != nil || kind == base.KindMerge {
		h = keyHash(ukey)
	}
	// The filter word is random in a table-sized array, a cache miss: its
	// load is started here and the bits set after the B-tree insert, so
	// that the miss overlaps the copy into the arena and the descent's own
	// misses instead of stalling the writer on its own. Readers see the
	// entry only once the DB publishes its sequence number, after Add.
	var fw *atomic.Uint64
	var fmask uint64
	if m.filter != nil {
		fw, fmask = m.filter.slot(h)
		prefetch.Object(unsafe.Pointer(fw), 8)
	}
	e := makeEntry(ukey, base.MakeTrailer(seq, kind))
	e.data, e.vlen = m.alloc(ukey, value), uint32(len(value))
	if m.filter != nil {
		m.addPrefix(ukey)
	}
	// The descent runs before the lock: only this goroutine modifies the
	// tree, and readers only read it. The lock then covers the leaf's
	// shift alone, tens of nanoseconds instead of a descent's cache
	// misses, so a Get of a recently written key seldom meets it held,
	// and the writer is seldom preempted while it holds it (a reader
	// that meets it then waits for the writer to be scheduled again).
	// An insert that splits nodes takes the lock for the whole insert,
	// with the nodes it takes reserved before (btree.reserve).
	leaf, at, depth, ok := m.tree.leafFor(&e)
	if ok {
		prefetch.Object(unsafe.Pointer(&leaf.items[leaf.n]), unsafe.Sizeof(entry{}))
	} else {
		m.tree.reserve(depth)
	}
	m.mu.Lock()
	if ok {
		m.tree.insertLeaf(leaf, at, e)
	} else {
		m.tree.insert(e)
	}
	m.mu.Unlock()
	// The filter bit is set before Add returns, so before the DB
	// publishes the entry's sequence number to readers.
	if fw != nil && fw.Load()&fmask != fmask {
		fw.Or(fmask)
	}
	m.size.Add(int64(len(ukey) + len(value) + entryOverhead))
	m.count.Add(1)
	switch kind {
	case base.KindMerge:
		m.merges.Add(1)
		if n := len(m.mergeCount); n > 0 {
			if c := &m.mergeCount[h&uint64(n-1)]; *c < math.MaxUint8 {
				*c++
			}
		}
	case base.KindDelete:
		m.deletes.Add(1)
	}
	m.noteSeq(seq)
}

// noteSeq widens the table's sequence number range to seq.
func (m *MemTable) noteSeq(seq uint64) {
	if seq < m.minSeq.Load() {
		m.minSeq.Store(seq)
	}
	if seq > m.maxSeq.Load() {
		m.maxSeq.Store(seq)
	}
}

// addRangeDel records the range tombstone [start, end) at seq.
func (m *MemTable) addRangeDel(seq uint64, start, end []byte) {
	p := m.alloc(start, end)
	b := unsafe.Slice((*byte)(p), len(start)+len(end))
	t := rangedel.Tombstone{Start: b[:len(start):len(start)], End: b[len(start):], Seq: seq}
	m.mu.Lock()
	m.rangeDels = append(m.rangeDels, t)
	m.rangeDelCount.Store(int64(len(m.rangeDels)))
	m.mu.Unlock()
	m.size.Add(int64(len(start) + len(end) + entryOverhead))
	m.noteSeq(seq)
}

// rangeDelTail is how many tombstones added after the fragmented list was
// built MaxCovering scans one by one before it rebuilds the list: at
// least 32, and a sixteenth of the tombstones, so that reads interleaved
// with DeleteRanges rebuild (O(n log n)) only every n/16 of them and scan
// at most n/16.
func rangeDelTail(n int64) int64 { return max(32, n/16) }

// MaxCovering returns the newest sequence number at most seq of a range
// tombstone of the table covering ukey, or 0 (rangedel.List.MaxCovering
// over RangeDels). Tombstones added since the fragmented list was last
// built are scanned one by one, up to rangeDelTail of them.
func (m *MemTable) MaxCovering(ukey []byte, seq uint64) uint64 {
	n := m.rangeDelCount.Load()
	if n == 0 {
		return 0
	}
	f := m.rangeDelList.Load()
	if f == nil || n-f.n > rangeDelTail(n) {
		return m.RangeDels().MaxCovering(ukey, seq)
	}
	best := f.list.MaxCovering(ukey, seq)
	if f.n < n {
		m.mu.RLock()
		tail := m.rangeDels[f.n:n]
		m.mu.RUnlock()
		for _, t := range tail {
			if t.Seq <= seq && t.Seq > best && bytes.Compare(t.Start, ukey) <= 0 && bytes.Compare(ukey, t.End) < 0 {
				best = t.Seq
			}
		}
	}
	return best
}

// RangeDels returns the table's range tombstones, fragmented (nil when it
// has none). A tombstone added before the caller loaded the sequence
// number it reads at is included; the list is immutable.
func (m *MemTable) RangeDels() *rangedel.List {
	n := m.rangeDelCount.Load()
	if n == 0 {
		return nil
	}
	if f := m.rangeDelList.Load(); f != nil && f.n >= n {
		return f.list
	}
	m.mu.RLock()
	ts := m.rangeDels[:len(m.rangeDels):len(m.rangeDels)]
	m.mu.RUnlock()
	f := &fragmented{n: int64(len(ts)), list: rangedel.Build(ts)}
	for {
		old := m.rangeDelList.Load()
		if old != nil && old.n >= f.n {
			return old.list
		}
		if m.rangeDelList.CompareAndSwap(old, f) {
			return f.list
		}
	}
}

// ApproximateSize returns the memory the table's entries account for.
func (m *MemTable) ApproximateSize() int64 { return m.size.Load() }

// Len returns the number of entries.
func (m *MemTable) Len() int64 { return m.count.Load() }

// Empty reports whether the table holds no entry.
func (m *MemTable) Empty() bool { return m.count.Load() == 0 && m.rangeDelCount.Load() == 0 }

// Stats describes the table's contents.
type Stats struct {
	Entries, Merges, Deletes int64
	RangeDels                int64 // range tombstones, not counted in Entries
	Bytes                    int64
	MinSeq, MaxSeq           uint64 // MinSeq > MaxSeq when empty
}

// Stats returns counters describing the table.
func (m *MemTable) Stats() Stats {
	return Stats{
		Entries: m.count.Load(), Merges: m.merges.Load(), Deletes: m.deletes.Load(), RangeDels: m.rangeDelCount.Load(),
		Bytes: m.size.Load(), MinSeq: m.minSeq.Load(), MaxSeq: m.maxSeq.Load(),
	}
}

// Get visits the entries whose user key is ukey and whose sequence number
// is at most seq, newest first, until fn returns false. The key and value
// passed to fn stay valid for the memtable's lifetime and must not be
// modified. fn runs under the table's read lock: it must not call Add.
func (m *MemTable) Get(ukey []byte, seq uint64, fn func(k base.InternalKey, v []byte) bool) {
	m.GetHash(ukey, keyHash(ukey), seq, fn)
}

// GetHash is Get for a caller that has h = KeyHash(ukey) already.
func (m *MemTable) GetHash(ukey []byte, h uint64, seq uint64, fn func(k base.InternalKey, v []byte) bool) {
	if m.filter != nil && !m.filter.mayContain(h) {
		return
	}
	pivot := makeEntry(ukey, base.MakeTrailer(seq, base.KindMax))
	m.mu.RLock()
	defer m.mu.RUnlock()
	m.tree.ascend(&pivot, func(e *entry) bool {
		k := e.ukey()
		if !bytes.Equal(k, ukey) {
			return false
		}
		return fn(base.InternalKey{UserKey: k, Trailer: e.trailer}, e.value())
	})
}

// HasSuccessiveMerges reports whether SuccessiveMerges(ukey, limit) >=
// limit. While fewer than limit merge operands of keys of ukey's hash
// were added to the table (mergeCount, an upper bound of the count) it
// answers without a descent. REQUIRES: called by the table's writer.
func (m *MemTable) HasSuccessiveMerges(ukey []byte, limit int) bool {
	if n := len(m.mergeCount); n > 0 && limit <= math.MaxUint8 && int(m.mergeCount[keyHash(ukey)&uint64(n-1)]) < limit {
		return false
	}
	return m.SuccessiveMerges(ukey, limit) >= limit
}

// SuccessiveMerges counts the merge operands at the top of ukey's stack in
// this memtable (the newest entries, up to the first non-merge), stopping
// at limit.
func (m *MemTable) SuccessiveMerges(ukey []byte, limit int) int {
	n := 0
	m.Get(ukey, base.SeqNumMax, func(k base.InternalKey, _ []byte) bool {
		if k.Kind() != base.KindMerge {
			return false
		}
		n++
		return n < limit
	})
	return n
}
