package compaction

import (
	"bytes"
	"cmp"
	"encoding/binary"

	"github.com/sievedb/sieve/internal/base"
)

// IterOptions bound the read iterators of this package (MergingIter and
// LevelIter) to user keys in [LowerBound, UpperBound); a nil bound is no
// bound. The bounds are retained, not copied: the caller must not modify
// them while the iterator is in use.
type IterOptions struct {
	LowerBound []byte
	UpperBound []byte
}

func (o IterOptions) aboveUpper(ukey []byte) bool {
	return o.UpperBound != nil && bytes.Compare(ukey, o.UpperBound) >= 0
}

func (o IterOptions) belowLower(ukey []byte) bool {
	return o.LowerBound != nil && bytes.Compare(ukey, o.LowerBound) < 0
}

// direction of a MergingIter: which heap order its items are in.
type direction int8

const (
	unpositioned direction = iota
	forward
	backward
)

// mergingItem is one child in the heap, with its current key cached so that
// heap comparisons make no interface calls.
type mergingItem struct {
	index int // position of the child in MergingIter.children
	key   base.InternalKey
}

// MergingIter is a base.InternalIterator over the union of its children's
// entries, in CompareInternal order: user keys ascending, and for one user
// key the newest version first. Two children holding the very same internal
// key (which a consistent LSM never produces) come out lower child index
// first when moving forward, and in the reverse order when moving backward,
// so that Next and Prev are exact inverses.
//
// It keeps a binary heap of the positioned children: a min-heap while
// moving forward, a max-heap while moving backward. Every child other than
// the one at the top is positioned at its entry just after (forward) or
// just before (backward) the current entry. Switching direction therefore
// repositions every other child relative to the current key (SeekGE on the
// current user key, then steps) — the LevelDB/Pebble approach — and costs
// one seek per child; runs in one direction cost one child step and
// O(log n) comparisons per entry.
//
// Bounds (IterOptions) are enforced on the merged stream; the children may
// also be bounded, which saves them work but is not required.
//
// Errors: a child that fails (a positioning call returns false with a
// non-nil Error) fails the whole iterator, since skipping it would return
// wrong results. The error is sticky: every later positioning call returns
// false and Error returns it.
//
// A MergingIter is not safe for concurrent use. Key and Value are valid
// until the next positioning call.
type MergingIter struct {
	opts     IterOptions
	children []base.InternalIterator
	heap     []mergingItem
	// minChild is the heap position (1 or 2) of the top's successor, the
	// smaller of the root's children, when known; 0 when not. A run of
	// entries from the top child leaves both root children in place, so
	// each step of the run compares the new top with the successor only.
	minChild int
	dir      direction
	err      error
}

var _ base.InternalIterator = (*MergingIter)(nil)

// NewMergingIter returns an iterator over the union of children. It takes
// ownership of the children: Close closes them. Order the children from
// newest data to oldest (memtables, then L0 newest first, then L1..L6); the
// order only matters for identical internal keys.
func NewMergingIter(opts IterOptions, children ...base.InternalIterator) *MergingIter {
	m := new(MergingIter)
	m.Init(opts, children...)
	return m
}

// Init makes m, a zero or closed MergingIter, an iterator over children as
// NewMergingIter does, reusing the memory of m's heap: a caller that
// recycles its iterators (the DB's, one per NewIter) allocates nothing.
func (m *MergingIter) Init(opts IterOptions, children ...base.InternalIterator) {
	h := m.heap[:0]
	if cap(h) < len(children) {
		h = make([]mergingItem, 0, len(children))
	}
	*m = MergingIter{opts: opts, children: children, heap: h}
}

// less is the heap order: the item that should be at the top comes first.
func (m *MergingIter) less(a, b *mergingItem) bool {
	c := compareInternal(a.key, b.key)
	if m.dir == backward {
		return c > 0 || (c == 0 && a.index > b.index)
	}
	return c < 0 || (c == 0 && a.index < b.index)
}

// before reports whether child index ai at key a precedes child index bi at
// key b in the forward total order.
func before(a base.InternalKey, ai int, b base.InternalKey, bi int) bool {
	c := base.CompareInternal(a, b)
	return c < 0 || (c == 0 && ai < bi)
}

// compareInternal is base.CompareInternal with the user keys compared by
// compareUser.
func compareInternal(a, b base.InternalKey) int {
	if c := compareUser(a.UserKey, b.UserKey); c != 0 {
		return c
	}
	return cmp.Compare(b.Trailer, a.Trailer)
}

// compareUser is bytes.Compare, with up to two leading 8-byte words
// compared inline: the heap compares keys of a few to 16 bytes on every
// step, for which bytes.Compare's call costs more than the comparison.
func compareUser(a, b []byte) int {
	for range 2 {
		if len(a) < 8 || len(b) < 8 {
			break
		}
		if x, y := binary.BigEndian.Uint64(a), binary.BigEndian.Uint64(b); x != y {
			if x < y {
				return -1
			}
			return 1
		}
		a, b = a[8:], b[8:]
	}
	if len(a) == 0 || len(b) == 0 {
		return cmp.Compare(len(a), len(b))
	}
	return bytes.Compare(a, b)
}

// fixTop restores the heap order after the top item's key moved in the
// heap's direction: compared with its successor only (minChild, found once
// per change of the root's children), it stays or sinks.
func (m *MergingIter) fixTop() {
	h := m.heap
	if len(h) < 2 {
		return
	}
	j := m.minChild
	if j == 0 {
		j = 1
		if len(h) > 2 && m.less(&h[2], &h[1]) {
			j = 2
		}
		m.minChild = j
	}
	if !m.less(&h[j], &h[0]) {
		return
	}
	h[0], h[j] = h[j], h[0]
	m.minChild = 0
	m.siftDown(j)
}

func (m *MergingIter) siftDown(i int) {
	h := m.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && m.less(&h[r], &h[l]) {
			j = r
		}
		if !m.less(&h[j], &h[i]) {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}

// settle records the result of a positioning call on child i; it returns
// false when the child failed, after recording the error.
func (m *MergingIter) settle(i int, ok bool) bool {
	if ok {
		m.heap = append(m.heap, mergingItem{index: i, key: m.children[i].Key()})
		return true
	}
	if err := m.children[i].Error(); err != nil {
		m.err = err
		return false
	}
	return true
}

// build heapifies the items collected by settle in direction dir and
// applies the bound that direction runs into.
func (m *MergingIter) build(dir direction) bool {
	if m.err != nil {
		return m.fail()
	}
	m.dir, m.minChild = dir, 0
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		m.siftDown(i)
	}
	return m.checkTop()
}

// checkTop reports whether the iterator is positioned at an entry within
// bounds, and unpositions it otherwise.
func (m *MergingIter) checkTop() bool {
	if len(m.heap) == 0 {
		m.dir = unpositioned
		return false
	}
	top := m.heap[0].key.UserKey
	if (m.dir == forward && m.opts.aboveUpper(top)) || (m.dir == backward && m.opts.belowLower(top)) {
		m.heap = m.heap[:0]
		m.dir = unpositioned
		return false
	}
	return true
}

func (m *MergingIter) fail() bool {
	m.heap = m.heap[:0]
	m.dir = unpositioned
	return false
}

// position places every child with pos and builds the heap for dir.
func (m *MergingIter) position(dir direction, pos func(c base.InternalIterator) bool) bool {
	m.heap = m.heap[:0]
	for i, c := range m.children {
		if !m.settle(i, pos(c)) {
			break
		}
	}
	return m.build(dir)
}

// First implements base.InternalIterator.
func (m *MergingIter) First() bool {
	if m.opts.LowerBound != nil {
		return m.SeekGE(m.opts.LowerBound)
	}
	if m.err != nil {
		return false
	}
	return m.position(forward, func(c base.InternalIterator) bool { return c.First() })
}

// Last implements base.InternalIterator.
func (m *MergingIter) Last() bool {
	if m.opts.UpperBound != nil {
		return m.SeekLT(m.opts.UpperBound)
	}
	if m.err != nil {
		return false
	}
	return m.position(backward, func(c base.InternalIterator) bool { return c.Last() })
}

// SeekGE implements base.InternalIterator. A key below the lower bound
// seeks to the lower bound.
func (m *MergingIter) SeekGE(ukey []byte) bool {
	if m.err != nil {
		return false
	}
	if m.opts.belowLower(ukey) {
		ukey = m.opts.LowerBound
	}
	return m.position(forward, func(c base.InternalIterator) bool { return c.SeekGE(ukey) })
}

// SeekLT implements base.InternalIterator. A key above the upper bound
// seeks to the upper bound.
func (m *MergingIter) SeekLT(ukey []byte) bool {
	if m.err != nil {
		return false
	}
	if m.opts.aboveUpper(ukey) {
		ukey = m.opts.UpperBound
	}
	return m.position(backward, func(c base.InternalIterator) bool { return c.SeekLT(ukey) })
}

// Next implements base.InternalIterator.
func (m *MergingIter) Next() bool {
	switch m.dir {
	case unpositioned:
		return false
	case backward:
		return m.switchTo(forward)
	}
	top := &m.heap[0]
	if l, ok := m.children[top.index].(*LevelIter); ok {
		// A level (an SSTable's entries, the bulk of a scan) is called
		// directly: the interface calls to Next and Key were a good part
		// of the cost of each entry (BenchmarkCachedShortScan).
		if l.Next() {
			top.key = l.Key()
			m.fixTop()
			return m.checkTop()
		}
		return m.step(false)
	}
	return m.step(m.children[top.index].Next())
}

// Prev implements base.InternalIterator.
func (m *MergingIter) Prev() bool {
	switch m.dir {
	case unpositioned:
		return false
	case forward:
		return m.switchTo(backward)
	}
	return m.step(m.children[m.heap[0].index].Prev())
}

// step settles the top child after it moved in the current direction.
func (m *MergingIter) step(ok bool) bool {
	top := &m.heap[0]
	if ok {
		top.key = m.children[top.index].Key()
		m.fixTop()
		return m.checkTop()
	}
	if err := m.children[top.index].Error(); err != nil {
		m.err = err
		return m.fail()
	}
	last := len(m.heap) - 1
	m.heap[0] = m.heap[last]
	m.heap = m.heap[:last]
	m.minChild = 0
	m.siftDown(0)
	return m.checkTop()
}

// switchTo turns the iterator at entry K (child cur) around to direction
// dir. Forward: every other child moves to its first entry after K in the
// forward total order, cur to its next entry. Backward, the mirror image:
// every other child moves to its last entry before K, cur to its previous
// entry.
func (m *MergingIter) switchTo(dir direction) bool {
	cur := m.heap[0].index
	key := m.heap[0].key
	m.heap = m.heap[:0]
	for i, c := range m.children {
		if i != cur && !m.settle(i, placeBeside(c, i, key, cur, dir)) {
			return m.fail()
		}
	}
	var ok bool
	if dir == forward {
		ok = m.children[cur].Next()
	} else {
		ok = m.children[cur].Prev()
	}
	if !m.settle(cur, ok) {
		return m.fail()
	}
	return m.build(dir)
}

// placeBeside positions child c (index i) beside entry key of child cur:
// at its first entry after it (forward) or its last entry before it
// (backward). With only user-key seeks available, a child is placed at its
// first entry after key (SeekGE, then steps over newer versions of key's
// user key); backward, it then steps back once, and a child with nothing
// after key steps back from its end (Last).
func placeBeside(c base.InternalIterator, i int, key base.InternalKey, cur int, dir direction) bool {
	ok := c.SeekGE(key.UserKey)
	for ok && !before(key, cur, c.Key(), i) {
		ok = c.Next()
	}
	switch {
	case dir == forward:
		return ok
	case ok:
		return c.Prev()
	case c.Error() == nil:
		return c.Last()
	}
	return false
}

// Key implements base.InternalIterator.
func (m *MergingIter) Key() base.InternalKey {
	if m.dir == unpositioned {
		return base.InternalKey{}
	}
	return m.heap[0].key
}

// Value implements base.InternalIterator.
func (m *MergingIter) Value() []byte {
	if m.dir == unpositioned {
		return nil
	}
	c := m.children[m.heap[0].index]
	if l, ok := c.(*LevelIter); ok {
		return l.Value()
	}
	return c.Value()
}

// Error implements base.InternalIterator.
func (m *MergingIter) Error() error { return m.err }

// Close closes every child. It returns the iterator's error if it failed,
// else the first error a child's Close returned.
func (m *MergingIter) Close() error {
	err := m.err
	for _, c := range m.children {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	m.children = nil
	// Keep the heap's memory for Init; drop its keys' references.
	clear(m.heap[:cap(m.heap)])
	m.heap = m.heap[:0]
	m.dir = unpositioned
	return err
}
