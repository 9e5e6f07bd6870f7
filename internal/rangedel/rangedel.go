// Package rangedel holds range tombstones: a DeleteRange(start, end) at
// sequence number seq deletes every version of every user key in
// [start, end) whose sequence number is below seq.
//
// Tombstones are kept fragmented (as Pebble and RocksDB keep them): a List
// is a sorted sequence of non-overlapping fragments, each a key range with
// the sequence numbers of every tombstone that covers all of it, newest
// first. Two tombstones that overlap become up to three fragments, so a
// lookup is one binary search and a fragment can be split at any key
// (a table boundary) without changing what it deletes.
//
// The block encoding of a List, the range-deletion block of a table, is
// specified in sstable/FORMAT.md; Encode and Decode implement it.
package rangedel

import (
	"bytes"
	"slices"
	"sort"
)

// Tombstone is one range deletion: user keys in [Start, End) at Seq.
type Tombstone struct {
	Start, End []byte
	Seq        uint64
}

// Fragment is a key range [Start, End) and the sequence numbers of the
// tombstones covering it, strictly descending (never empty).
type Fragment struct {
	Start, End []byte
	Seqs       []uint64
}

// List is a fragmented set of tombstones: fragments sorted by Start, each
// ending at or before the next one starts. A nil *List is empty. A List is
// immutable once built and safe for concurrent readers.
type List struct {
	Frags []Fragment
}

// Empty reports whether l holds no tombstone.
func (l *List) Empty() bool { return l == nil || len(l.Frags) == 0 }

// Len returns the number of (fragment, sequence number) pairs.
func (l *List) Len() int {
	if l == nil {
		return 0
	}
	n := 0
	for _, f := range l.Frags {
		n += len(f.Seqs)
	}
	return n
}

// Tombstones returns every (fragment, sequence number) pair as a
// Tombstone, sharing l's key bytes.
func (l *List) Tombstones() []Tombstone {
	if l == nil {
		return nil
	}
	out := make([]Tombstone, 0, l.Len())
	for _, f := range l.Frags {
		for _, s := range f.Seqs {
			out = append(out, Tombstone{Start: f.Start, End: f.End, Seq: s})
		}
	}
	return out
}

// Find returns the index of the fragment that contains key, or -1.
func (l *List) Find(key []byte) int {
	if l == nil {
		return -1
	}
	i := sort.Search(len(l.Frags), func(i int) bool { return bytes.Compare(l.Frags[i].End, key) > 0 })
	if i < len(l.Frags) && bytes.Compare(l.Frags[i].Start, key) <= 0 {
		return i
	}
	return -1
}

// MaxCovering returns the largest sequence number at most readSeq of a
// tombstone covering key, or 0 when none does: an entry of key with a
// sequence number below the result is deleted for a reader at readSeq.
func (l *List) MaxCovering(key []byte, readSeq uint64) uint64 {
	i := l.Find(key)
	if i < 0 {
		return 0
	}
	return firstAtMost(l.Frags[i].Seqs, readSeq)
}

// firstAtMost returns the first (largest) of the descending seqs that is at
// most limit, or 0.
func firstAtMost(seqs []uint64, limit uint64) uint64 {
	for _, s := range seqs {
		if s <= limit {
			return s
		}
	}
	return 0
}

// Visible returns the tombstones a reader at readSeq sees, each fragment
// keeping only its newest visible sequence number (which alone decides
// what the fragment deletes for that reader). nil when there are none.
func (l *List) Visible(readSeq uint64) *List {
	if l.Empty() {
		return nil
	}
	out := &List{}
	for _, f := range l.Frags {
		if s := firstAtMost(f.Seqs, readSeq); s != 0 {
			out.Frags = append(out.Frags, Fragment{Start: f.Start, End: f.End, Seqs: []uint64{s}})
		}
	}
	if len(out.Frags) == 0 {
		return nil
	}
	return out
}

// Build fragments ts. Empty or reversed tombstones are ignored. The result
// shares the tombstones' key bytes; nil when there is nothing to hold.
func Build(ts []Tombstone) *List {
	var bounds [][]byte
	for _, t := range ts {
		if bytes.Compare(t.Start, t.End) < 0 {
			bounds = append(bounds, t.Start, t.End)
		}
	}
	if len(bounds) == 0 {
		return nil
	}
	slices.SortFunc(bounds, bytes.Compare)
	bounds = slices.CompactFunc(bounds, bytes.Equal)
	// seqs[i] collects the tombstones covering [bounds[i], bounds[i+1]).
	seqs := make([][]uint64, len(bounds)-1)
	for _, t := range ts {
		if bytes.Compare(t.Start, t.End) >= 0 {
			continue
		}
		lo, _ := slices.BinarySearchFunc(bounds, t.Start, bytes.Compare)
		hi, _ := slices.BinarySearchFunc(bounds, t.End, bytes.Compare)
		for i := lo; i < hi; i++ {
			seqs[i] = append(seqs[i], t.Seq)
		}
	}
	out := &List{}
	for i, s := range seqs {
		if len(s) == 0 {
			continue
		}
		slices.SortFunc(s, func(a, b uint64) int { return compareDesc(a, b) })
		s = slices.Compact(s)
		if n := len(out.Frags); n > 0 && bytes.Equal(out.Frags[n-1].End, bounds[i]) && slices.Equal(out.Frags[n-1].Seqs, s) {
			out.Frags[n-1].End = bounds[i+1]
			continue
		}
		out.Frags = append(out.Frags, Fragment{Start: bounds[i], End: bounds[i+1], Seqs: s})
	}
	return out
}

func compareDesc(a, b uint64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// Merge fragments the union of lists (nil entries allowed); nil when all
// are empty. A single non-empty list is returned as it is.
func Merge(lists ...*List) *List {
	var only *List
	n := 0
	for _, l := range lists {
		if !l.Empty() {
			only = l
			n++
		}
	}
	if n <= 1 {
		return only
	}
	var ts []Tombstone
	for _, l := range lists {
		ts = append(ts, l.Tombstones()...)
	}
	return Build(ts)
}

// Clip returns the fragments of l that intersect [lower, upper) (nil =
// open), cut to it.
func (l *List) Clip(lower, upper []byte) []Fragment {
	if l == nil {
		return nil
	}
	var out []Fragment
	for _, f := range l.Frags {
		if upper != nil && bytes.Compare(f.Start, upper) >= 0 {
			break
		}
		if lower != nil && bytes.Compare(f.End, lower) <= 0 {
			continue
		}
		if lower != nil && bytes.Compare(f.Start, lower) < 0 {
			f.Start = lower
		}
		if upper != nil && bytes.Compare(f.End, upper) > 0 {
			f.End = upper
		}
		out = append(out, f)
	}
	return out
}

// Cursor answers MaxCovering for keys that only grow (a compaction's or a
// forward scan's), in amortized constant time.
type Cursor struct {
	l *List
	i int
}

// NewCursor returns a cursor at the start of l.
func NewCursor(l *List) *Cursor { return &Cursor{l: l} }

// Seqs returns the sequence numbers of the fragment containing key
// (descending), or nil. Keys must not decrease between calls.
func (c *Cursor) Seqs(key []byte) []uint64 {
	if c.l == nil {
		return nil
	}
	fr := c.l.Frags
	for c.i < len(fr) && bytes.Compare(fr[c.i].End, key) <= 0 {
		c.i++
	}
	if c.i < len(fr) && bytes.Compare(fr[c.i].Start, key) <= 0 {
		return fr[c.i].Seqs
	}
	return nil
}
