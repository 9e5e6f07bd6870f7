package memtable

import (
	"bytes"
	"encoding/binary"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/prefetch"
)

// An iterator copies a run of entries out of the tree per descent: minRun
// after a seek (or First, Last, a change of direction), doubling with each
// further refill in the same direction up to maxRun. A seek followed by a
// few steps — the common short scan, where the merging iterator above takes
// only a few entries from each memtable — then copies 8 entries, not 64,
// while a long scan still pays one descent per 64 entries.
const (
	minRun = 8
	maxRun = 64
)

// prefetchSpan bounds the bytes of an entry a fill prefetches: a 16-byte
// key and a 100-byte value span two cache lines.
const prefetchSpan = 128

// Iterator is a base.InternalIterator over a memtable. Entries added after
// the iterator was created may or may not be seen; callers filter by
// sequence number. Bounds are on user keys: lower inclusive, upper
// exclusive; nil means unbounded.
//
// The iterator buffers a run of entries in the current direction, so each
// step costs a tree descent only once per run (minRun to maxRun entries).
type Iterator struct {
	m            *MemTable
	lower, upper []byte
	buf          []entry
	pos          int
	run          int // size of the next refill in the current direction
	forward      bool
	exhausted    bool // no entries beyond buf in the current direction
	// small backs buf for runs of up to minRun entries, so that an
	// iterator that only seeks allocates nothing beyond itself.
	small [minRun]entry
	// keys[i] holds buf[i]'s user key when it is at most wordKeyBytes long,
	// rebuilt from the entry's two key words: Key returns these bytes,
	// just written, instead of the arena's, which lie wherever the key's
	// insert put them (a cache miss in the first comparison the merging
	// iterator makes with each memtable key).
	keys [maxRun][wordKeyBytes]byte
	// seekKey holds a seek's key of up to wordKeyBytes for the fill: the key
	// may be one Key returned, in keys, which the fill overwrites.
	seekKey [wordKeyBytes]byte
	// spare is the maxRun buffer a fill beyond minRun entries allocated,
	// kept (emptied) by InitIter and Recycle so that a recycled iterator
	// does not allocate it again for each scan past minRun entries;
	// spareUsed says a fill wrote to it since it was last emptied.
	spare     []entry
	spareUsed bool
}

var _ base.InternalIterator = (*Iterator)(nil)

// NewIter returns an iterator over the memtable, bounded to user keys in
// [lower, upper).
func (m *MemTable) NewIter(lower, upper []byte) *Iterator {
	it := new(Iterator)
	m.InitIter(it, lower, upper)
	return it
}

// InitIter makes it, a zero or recycled Iterator, an iterator over the
// memtable as NewIter does (for callers that recycle their iterators),
// keeping the run buffer a recycled one still has.
func (m *MemTable) InitIter(it *Iterator, lower, upper []byte) {
	it.reset()
	it.m, it.lower, it.upper = m, lower, upper
	it.buf = it.small[:0]
}

// Recycle resets a closed (or never used) Iterator for a later InitIter,
// dropping every reference into its memtable but keeping its run buffer's
// memory.
func (it *Iterator) Recycle() {
	it.reset()
}

// reset drops every reference into a memtable (the entries in small and
// spare point into its arena) and the position, keeping spare's memory.
// The key copies (keys, seekKey) hold no pointers and are left as they
// are: zeroing their kilobyte on every NewIter and Close cost more than
// the rest of both (BenchmarkCachedShortScan/entries=1).
func (it *Iterator) reset() {
	if it.spareUsed {
		clear(it.spare[:cap(it.spare)])
		it.spareUsed = false
	}
	clear(it.small[:])
	it.m, it.lower, it.upper, it.buf = nil, nil, nil, nil
	it.pos, it.run, it.forward, it.exhausted = 0, 0, false, false
	it.spare = it.spare[:0]
}

func (it *Iterator) inUpper(e *entry) bool {
	return it.upper == nil || bytes.Compare(e.ukey(), it.upper) < 0
}
func (it *Iterator) inLower(e *entry) bool {
	return it.lower == nil || bytes.Compare(e.ukey(), it.lower) >= 0
}

// fill loads a run of up to n entries in direction forward into buf: those
// after pivot (>= pivot, or > pivot when strict; <= and < going backward),
// or from the start of the table without a pivot, stopping at the bound
// ahead.
func (it *Iterator) fill(forward bool, pivot entry, hasPivot, strict bool, n int) bool {
	if cap(it.buf) < n {
		if it.spare == nil {
			it.spare = make([]entry, 0, maxRun)
		}
		it.buf = it.spare
		it.spareUsed = true
	}
	it.buf, it.pos, it.forward, it.exhausted, it.run = it.buf[:0], 0, forward, false, n
	visit := func(e *entry) bool {
		if strict && ((forward && !lessEntry(&pivot, e)) || (!forward && !lessEntry(e, &pivot))) {
			return true
		}
		if (forward && !it.inUpper(e)) || (!forward && !it.inLower(e)) {
			it.exhausted = true
			return false
		}
		if e.klen <= wordKeyBytes {
			k := &it.keys[len(it.buf)]
			binary.BigEndian.PutUint64(k[:8], e.p0)
			binary.BigEndian.PutUint64(k[8:], e.p1)
		}
		it.buf = append(it.buf, *e)
		// The run's keys and values are read soon (longer keys compared,
		// values copied out): their first arena lines are fetched
		// meanwhile (at most prefetchSpan bytes an entry, so a run of
		// large values does not flush the CPU caches under the lock).
		prefetch.Object(e.data, min(uintptr(e.klen)+uintptr(e.vlen), prefetchSpan))
		return len(it.buf) < n
	}
	var p *entry
	if hasPivot {
		p = &pivot
	}
	t := &it.m.tree
	it.m.mu.RLock()
	if forward {
		t.ascend(p, visit)
	} else {
		t.descend(p, visit)
	}
	it.m.mu.RUnlock()
	if len(it.buf) < n {
		it.exhausted = true
	}
	return len(it.buf) > 0
}

// First implements base.InternalIterator.
func (it *Iterator) First() bool {
	if it.lower != nil {
		return it.SeekGE(it.lower)
	}
	return it.fill(true, entry{}, false, false, minRun)
}

// Last implements base.InternalIterator.
func (it *Iterator) Last() bool {
	if it.upper != nil {
		return it.SeekLT(it.upper)
	}
	return it.fill(false, entry{}, false, false, minRun)
}

// SeekGE implements base.InternalIterator.
func (it *Iterator) SeekGE(ukey []byte) bool {
	if it.lower != nil && bytes.Compare(ukey, it.lower) < 0 {
		ukey = it.lower
	}
	// The smallest internal key for ukey has the largest trailer.
	return it.fill(true, makeEntry(it.ownSeekKey(ukey), ^uint64(0)), true, false, minRun)
}

// SeekLT implements base.InternalIterator.
func (it *Iterator) SeekLT(ukey []byte) bool {
	if it.upper != nil && bytes.Compare(ukey, it.upper) > 0 {
		ukey = it.upper
	}
	// Every internal key of ukey is greater than (ukey, max trailer)...
	// except that one itself, which no real entry has; descend strictly.
	return it.fill(false, makeEntry(it.ownSeekKey(ukey), ^uint64(0)), true, true, minRun)
}

// ownSeekKey returns ukey, copied into it.seekKey when it is short enough
// to be (or be inside) one of it.keys, which the coming fill overwrites.
func (it *Iterator) ownSeekKey(ukey []byte) []byte {
	if len(ukey) > len(it.seekKey) {
		return ukey
	}
	n := copy(it.seekKey[:], ukey)
	return it.seekKey[:n:n]
}

// Next implements base.InternalIterator.
func (it *Iterator) Next() bool { return it.step(true) }

// Prev implements base.InternalIterator.
func (it *Iterator) Prev() bool { return it.step(false) }

// step moves one entry in direction forward: within the buffered run, or
// by loading the next, twice as long, run past its last entry; a change of
// direction loads a minRun run from the current entry.
func (it *Iterator) step(forward bool) bool {
	if it.pos >= len(it.buf) {
		return false
	}
	if it.forward != forward {
		return it.fill(forward, it.buf[it.pos], true, true, minRun)
	}
	it.pos++
	if it.pos < len(it.buf) {
		return true
	}
	if it.exhausted {
		return false
	}
	return it.fill(forward, it.buf[len(it.buf)-1], true, true, min(2*it.run, maxRun))
}

// Valid reports whether the iterator is positioned at an entry.
func (it *Iterator) Valid() bool { return it.pos < len(it.buf) }

// Key implements base.InternalIterator.
func (it *Iterator) Key() base.InternalKey {
	e := &it.buf[it.pos]
	if e.klen <= wordKeyBytes {
		return base.InternalKey{UserKey: it.keys[it.pos][:e.klen:e.klen], Trailer: e.trailer}
	}
	return base.InternalKey{UserKey: e.ukey(), Trailer: e.trailer}
}

// Value implements base.InternalIterator.
func (it *Iterator) Value() []byte { return it.buf[it.pos].value() }

// Error implements base.InternalIterator; a memtable iterator never fails.
func (it *Iterator) Error() error { return nil }

// Close implements base.InternalIterator.
func (it *Iterator) Close() error {
	it.buf = nil
	it.pos = 0
	return nil
}
