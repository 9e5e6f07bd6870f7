package cache

import (
	"cmp"
	"slices"
	"sync/atomic"
)

// index is a shard's hash table of its entries: chained, written under
// the shard's mutex, read without it. Lookup finds a block, or finds that
// none is cached, without taking the lock, so that a miss on one core does
// not write the lines (the mutex, the map) that a miss on another core
// reads; only the doorkeeper bit of a first miss is written (see admit).
//
// Why a reader's walk is safe and ends: entries are never reused (a
// removed entry is left to the garbage collector), their key, kind, val
// and seq never change once published, and every chain link (a bucket
// head or an entry's hnext) points to an entry inserted before the one
// that holds it: insert puts a new entry in front of older ones, remove
// links a newer predecessor to an older successor, and grow relinks the
// entries oldest first. A walk therefore visits entries of strictly
// decreasing seq and ends at nil. A reader that stands on an entry while
// it is removed, or while grow relinks it, may walk into another chain or
// past the key it wants: the walk then reports a miss, which costs the
// block's read from the file and is otherwise harmless (the caller reads
// it, and Set finds whatever is cached under the lock). A found entry may
// be removed at any time; tryHit settles that.
type index struct {
	buckets []atomic.Pointer[entry]
	mask    uint64
}

// minBuckets is a new index's size; grow doubles it whenever the entries
// reach half the buckets. A short chain matters more than the 8 bytes of
// a bucket: a Lookup that misses walks its whole chain, and every entry
// on it is a line of its own, most often not in the CPU's cache.
const minBuckets = 64

func newIndex(n int) *index {
	return &index{buckets: make([]atomic.Pointer[entry], n), mask: uint64(n - 1)}
}

// find returns the entry of k (of hash h), or nil. Safe without s.mu.
func (s *shard) find(k key, h uint64) *entry {
	t := s.table.Load()
	for e := t.buckets[h&t.mask].Load(); e != nil; e = e.hnext.Load() {
		if e.key == k {
			return e
		}
	}
	return nil
}

// link publishes e (its fields set, e.hash and e.seq included) in s's
// index. REQUIRES: s.mu is held, e.key is not in the index.
func (s *shard) link(e *entry) {
	t := s.table.Load()
	if 2*s.count.Load() >= int64(len(t.buckets)) {
		t = s.grow(t)
	}
	b := &t.buckets[e.hash&t.mask]
	e.hnext.Store(b.Load())
	b.Store(e)
}

// unlink takes e out of s's index. e.hnext is left as it is, so that a
// reader standing on e walks on into entries older than e. REQUIRES: s.mu
// is held, e is in the index.
func (s *shard) unlink(e *entry) {
	t := s.table.Load()
	p := &t.buckets[e.hash&t.mask]
	for x := p.Load(); x != e; x = p.Load() {
		if x == nil {
			panic("cache: an entry missing from its index chain")
		}
		p = &x.hnext
	}
	p.Store(e.hnext.Load())
}

// grow replaces t by an index of twice as many buckets, relinking the
// entries oldest first so that every link still points to an older entry
// (see index). REQUIRES: s.mu is held.
func (s *shard) grow(t *index) *index {
	var all []*entry
	for i := range t.buckets {
		for e := t.buckets[i].Load(); e != nil; e = e.hnext.Load() {
			all = append(all, e)
		}
	}
	slices.SortFunc(all, func(a, b *entry) int { return cmp.Compare(a.seq, b.seq) })
	n := newIndex(2 * len(t.buckets))
	for _, e := range all {
		b := &n.buckets[e.hash&n.mask]
		e.hnext.Store(b.Load())
		b.Store(e)
	}
	s.table.Store(n)
	return n
}
