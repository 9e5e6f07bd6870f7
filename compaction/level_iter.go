package compaction

import (
	"bytes"
	"sort"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
)

// TableOpener opens an iterator over one table. The iterator need not be
// bounded; LevelIter enforces its own bounds. An opener that knows the
// bounds (a closure over IterOptions) may pass them to the table iterator
// to save it work.
type TableOpener func(f *manifest.FileMetadata) (base.InternalIterator, error)

// LevelIter is a base.InternalIterator over one sorted level whose tables'
// user-key ranges do not overlap (L1..L6, or a single L0 table). It keeps
// at most one table open: moving past the end of a table closes it and
// opens its neighbour through the TableOpener. SeekGE and SeekLT find the
// table by binary search on the tables' largest and smallest user keys;
// tables entirely outside the bounds are never opened.
//
// Errors from the opener, from a table iterator, or from closing a table
// fail the iterator; the error is sticky.
//
// A LevelIter is not safe for concurrent use. The files slice and its
// FileMetadata are only read. Key and Value are valid until the next
// positioning call.
type LevelIter struct {
	opts  IterOptions
	files []*manifest.FileMetadata
	open  TableOpener

	index int                   // index in files of the open table; -1 when none is open
	iter  base.InternalIterator // the open table, nil when none
	valid bool                  // positioned at an entry of iter
	// checkUpper and checkLower are set when the open table straddles
	// that bound, so only then does each entry pay a comparison.
	checkUpper, checkLower bool
	err                    error
}

var _ base.InternalIterator = (*LevelIter)(nil)

// NewLevelIter returns an iterator over files, which must be sorted by key
// and non-overlapping. It opens nothing until positioned.
func NewLevelIter(opts IterOptions, files []*manifest.FileMetadata, open TableOpener) *LevelIter {
	l := new(LevelIter)
	l.Init(opts, files, open)
	return l
}

// Init makes l, a zero or closed LevelIter, an iterator over files as
// NewLevelIter does (for callers that recycle their iterators).
func (l *LevelIter) Init(opts IterOptions, files []*manifest.FileMetadata, open TableOpener) {
	*l = LevelIter{opts: opts, files: files, open: open, index: -1}
}

// openTable makes files[i] the open table, reusing it if it already is.
func (l *LevelIter) openTable(i int) bool {
	if l.index == i {
		return true
	}
	if !l.closeTable() {
		return false
	}
	it, err := l.open(l.files[i])
	if err != nil {
		l.err = err
		return false
	}
	f := l.files[i]
	l.index, l.iter = i, it
	l.checkUpper = l.opts.UpperBound != nil && bytes.Compare(f.Largest.UserKey, l.opts.UpperBound) >= 0
	l.checkLower = l.opts.LowerBound != nil && bytes.Compare(f.Smallest.UserKey, l.opts.LowerBound) < 0
	return true
}

func (l *LevelIter) closeTable() bool {
	if l.iter == nil {
		return l.err == nil
	}
	err := l.iter.Close()
	l.iter, l.index = nil, -1
	if err != nil && l.err == nil {
		l.err = err
	}
	return l.err == nil
}

// exhausted unpositions the iterator. It keeps the table open, so that a
// seek landing in it again does not reopen it.
func (l *LevelIter) exhausted() bool {
	l.valid = false
	return false
}

// settle settles a move in direction dir (forward or backward): ok is the
// open table's result; while it is false and no error occurred, the next
// table in that direction is opened at its first (forward) or last
// (backward) entry. An entry or a table beyond the bound on that side ends
// the move.
func (l *LevelIter) settle(ok bool, dir direction) bool {
	for {
		if ok {
			// The table's key is fetched only when the table straddles
			// the bound: an argument is evaluated even when beyondBound
			// would not look at it, and this runs on every Next.
			if (l.checkUpper || l.checkLower) && l.beyondBound(l.iter.Key().UserKey, dir) {
				return l.exhausted()
			}
			l.valid = true
			return true
		}
		if err := l.iter.Error(); err != nil {
			l.err = err
			return l.exhausted()
		}
		i := l.index + 1
		if dir == backward {
			i = l.index - 1
		}
		if i < 0 || i >= len(l.files) || l.tableBeyondBound(i, dir) || !l.openTable(i) {
			return l.exhausted()
		}
		if dir == forward {
			ok = l.iter.First()
		} else {
			ok = l.iter.Last()
		}
	}
}

// beyondBound reports whether ukey, an entry of the open table, lies past
// the bound a move in direction dir runs towards.
func (l *LevelIter) beyondBound(ukey []byte, dir direction) bool {
	if dir == forward {
		return l.checkUpper && l.opts.aboveUpper(ukey)
	}
	return l.checkLower && l.opts.belowLower(ukey)
}

// tableBeyondBound reports whether all of table i lies past the bound a
// move in direction dir runs towards.
func (l *LevelIter) tableBeyondBound(i int, dir direction) bool {
	if dir == forward {
		return l.opts.aboveUpper(l.files[i].Smallest.UserKey)
	}
	return l.opts.belowLower(l.files[i].Largest.UserKey)
}

// First implements base.InternalIterator.
func (l *LevelIter) First() bool {
	if l.opts.LowerBound != nil {
		return l.SeekGE(l.opts.LowerBound)
	}
	l.valid = false
	if l.err != nil || len(l.files) == 0 || l.opts.aboveUpper(l.files[0].Smallest.UserKey) {
		return false
	}
	if !l.openTable(0) {
		return false
	}
	return l.settle(l.iter.First(), forward)
}

// Last implements base.InternalIterator.
func (l *LevelIter) Last() bool {
	if l.opts.UpperBound != nil {
		return l.SeekLT(l.opts.UpperBound)
	}
	l.valid = false
	n := len(l.files)
	if l.err != nil || n == 0 || l.opts.belowLower(l.files[n-1].Largest.UserKey) {
		return false
	}
	if !l.openTable(n - 1) {
		return false
	}
	return l.settle(l.iter.Last(), backward)
}

// SeekGE implements base.InternalIterator. The table searched is the first
// whose largest user key is >= ukey.
func (l *LevelIter) SeekGE(ukey []byte) bool {
	l.valid = false
	if l.err != nil {
		return false
	}
	if l.opts.belowLower(ukey) {
		ukey = l.opts.LowerBound
	}
	i := manifest.SearchLargest(l.files, ukey)
	if i == len(l.files) || l.opts.aboveUpper(l.files[i].Smallest.UserKey) {
		return false
	}
	if !l.openTable(i) {
		return false
	}
	return l.settle(l.iter.SeekGE(ukey), forward)
}

// SeekLT implements base.InternalIterator. The table searched is the last
// whose smallest user key is < ukey.
func (l *LevelIter) SeekLT(ukey []byte) bool {
	l.valid = false
	if l.err != nil {
		return false
	}
	if l.opts.aboveUpper(ukey) {
		ukey = l.opts.UpperBound
	}
	i := sort.Search(len(l.files), func(i int) bool {
		return bytes.Compare(l.files[i].Smallest.UserKey, ukey) >= 0
	}) - 1
	if i < 0 || l.opts.belowLower(l.files[i].Largest.UserKey) {
		return false
	}
	if !l.openTable(i) {
		return false
	}
	return l.settle(l.iter.SeekLT(ukey), backward)
}

// Next implements base.InternalIterator.
func (l *LevelIter) Next() bool {
	if !l.valid {
		return false
	}
	return l.settle(l.iter.Next(), forward)
}

// Prev implements base.InternalIterator.
func (l *LevelIter) Prev() bool {
	if !l.valid {
		return false
	}
	return l.settle(l.iter.Prev(), backward)
}

// Key implements base.InternalIterator.
func (l *LevelIter) Key() base.InternalKey {
	if !l.valid {
		return base.InternalKey{}
	}
	return l.iter.Key()
}

// Value implements base.InternalIterator.
func (l *LevelIter) Value() []byte {
	if !l.valid {
		return nil
	}
	return l.iter.Value()
}

// Error implements base.InternalIterator.
func (l *LevelIter) Error() error { return l.err }

// Close closes the open table, if any, and returns the iterator's error.
func (l *LevelIter) Close() error {
	l.valid = false
	l.closeTable()
	return l.err
}

// LevelIters appends to dst the children a read iterator over levels
// needs, in the order NewMergingIter wants them (newest data first), and
// returns the extended slice: a LevelIter for each L0 table whose key
// range overlaps opts' bounds, newest first (each opens its table lazily),
// then one LevelIter for each non-empty level L1..L6. The DB passes its
// memtable iterators as dst. Every LevelIter gets opts; open may bound the
// table iterators it creates with the same bounds.
func LevelIters(dst []base.InternalIterator, levels *manifest.Levels, open TableOpener, opts IterOptions) []base.InternalIterator {
	return AppendLevelIters(dst, nil, levels, open, opts)
}

// AppendLevelIters is LevelIters with the LevelIters taken from store (in
// order, each Init'ed) while it lasts, then allocated.
func AppendLevelIters(dst []base.InternalIterator, store []LevelIter, levels *manifest.Levels, open TableOpener, opts IterOptions) []base.InternalIterator {
	add := func(files []*manifest.FileMetadata) {
		var l *LevelIter
		if len(store) > 0 {
			l, store = &store[0], store[1:]
		} else {
			l = new(LevelIter)
		}
		l.Init(opts, files, open)
		dst = append(dst, l)
	}
	for i, f := range levels[0] {
		// Overlaps takes an inclusive range: a table starting exactly
		// at the upper bound is included in vain, never skipped wrongly.
		if f.Overlaps(opts.LowerBound, opts.UpperBound) {
			add(levels[0][i : i+1])
		}
	}
	for l := 1; l < manifest.NumLevels; l++ {
		if len(levels[l]) > 0 {
			add(levels[l])
		}
	}
	return dst
}
