package sieve

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
	"time"
	"unsafe"

	"github.com/sievedb/sieve/compaction"
	"github.com/sievedb/sieve/internal/base"
)

// IterOptions bound an iterator to user keys in [LowerBound, UpperBound);
// nil bounds are open.
type IterOptions struct {
	// LowerBound is the smallest key the iterator may return (inclusive).
	LowerBound []byte
	// UpperBound is the key the iterator stops before (exclusive).
	UpperBound []byte
}

// Iterator walks the user keys of a consistent view (the moment it was
// created, or its snapshot) in order, forward or backward, resolving merge
// operands and hiding deleted keys. It pins the memtables and tables it
// reads: they are not freed or deleted until Close, or until First, Last,
// SeekGE, SeekLT or SeekPrefixGE moves it onto the current ones, which
// they do when a flush or compaction has changed them and nothing has been
// written since the iterator's view. Such a move changes nothing it reads
// (the view stays the same); it only lets the older memtables and tables
// go.
//
// Positioning methods (First, Last, SeekGE, SeekLT, SeekPrefixGE, Next,
// Prev) report whether the iterator is at a key; Key and Value are valid
// until the next positioning call or Close, and must not be modified (a
// Value may be the bytes of a cached block or of the memtable). When one
// returns false check Error. An Iterator is not safe for concurrent use.
type Iterator struct {
	db    *DB
	cf    uint32
	iter  base.InternalIterator
	seq   uint64
	lower []byte
	upper []byte

	// release drops the resources the iterator pins (read state); run
	// once by Close.
	release func()
	// rs is the pinned read state (nil for an iterator that failed at
	// creation); ps the state of SeekPrefixGE (prefix.go), nil until one.
	rs *readState
	ps *prefixState
	// alloc is the recycled stack iter was built in (newiter.go), freed
	// at Close; nil when the iterator failed at creation.
	alloc *iterAlloc

	// key is the current key (the iterator's copy); value the current
	// value: valueBuf, which the iterator owns, or, for a key whose
	// newest visible entry is a Set while moving forward, that entry's
	// value in iter, borrowed (atKey) — a cached block's or the
	// memtable's bytes, valid while iter stays there.
	key, value []byte
	valueBuf   []byte
	// deadline is the current value's (0: none; see Expiry).
	deadline int64
	valid    bool
	// forward is the direction of the last move: when valid and forward,
	// iter is at the first entry after the current key's entries (at the
	// key's Set itself when atKey: Next skips the key's entries first, so
	// that the value need not be copied); when valid and backward, at the
	// last entry before them.
	forward bool
	atKey   bool
	// seekBuf holds a seek key that aliased a borrowed value (ownSeekKey).
	seekBuf []byte
	// iterPositioned records whether iter was left at an entry by the
	// last move (false: it ran off the end in the direction of travel).
	iterPositioned bool
	err            error
	closed         bool

	// scratch for merge resolution
	operands [][]byte
	opBuf    []byte
	baseBuf  []byte
}

var errIterClosed = errors.New("sieve: iterator closed")

func (it *Iterator) inBounds(k []byte) bool {
	return (it.lower == nil || bytes.Compare(k, it.lower) >= 0) && (it.upper == nil || bytes.Compare(k, it.upper) < 0)
}

func (it *Iterator) fail(err error) bool {
	if it.err == nil {
		if it.db != nil && it.db.closed.Load() && !errors.Is(err, ErrClosed) {
			// An iterator used across Close may find a table closed.
			err = fmt.Errorf("%w (%v)", ErrClosed, err)
		}
		it.err = err
	}
	it.valid = false
	return false
}

// checkInternal records the internal iterator's error after it ran out.
func (it *Iterator) checkInternal() bool {
	if err := it.iter.Error(); err != nil {
		return it.fail(err)
	}
	it.valid = false
	return false
}

func (it *Iterator) usable() bool {
	if it.closed {
		it.err = errIterClosed
		return false
	}
	return it.err == nil
}

// First moves to the first key.
func (it *Iterator) First() bool {
	if !it.usable() {
		return false
	}
	it.leavePrefix()
	it.maybeRefresh()
	ok := it.iter.First()
	return it.findNext(ok)
}

// Last moves to the last key.
func (it *Iterator) Last() bool {
	if !it.usable() {
		return false
	}
	it.leavePrefix()
	it.maybeRefresh()
	ok := it.iter.Last()
	return it.findPrev(ok)
}

// SeekGE moves to the first key >= key.
func (it *Iterator) SeekGE(key []byte) bool {
	if !it.usable() {
		return false
	}
	key = it.ownSeekKey(key)
	it.leavePrefix()
	it.maybeRefresh()
	if it.lower != nil && bytes.Compare(key, it.lower) < 0 {
		key = it.lower
	}
	it.chargeSeek(key)
	return it.findNext(it.iter.SeekGE(key))
}

// SeekLT moves to the last key < key.
func (it *Iterator) SeekLT(key []byte) bool {
	if !it.usable() {
		return false
	}
	key = it.ownSeekKey(key)
	it.leavePrefix()
	it.maybeRefresh()
	if it.upper != nil && bytes.Compare(key, it.upper) > 0 {
		key = it.upper
	}
	it.chargeSeek(key)
	return it.findPrev(it.iter.SeekLT(key))
}

// Next moves to the following key.
func (it *Iterator) Next() bool {
	if !it.usable() || !it.valid {
		return false
	}
	if it.forward {
		if it.atKey {
			// iter is still at the current key's Set, whose value Value
			// returned: step past the key's entries now.
			return it.findNext(it.skipKey(it.key))
		}
		// iter is already past the current key's entries; a false from
		// the last move is represented by iter being unpositioned.
		return it.findNext(it.iterPositioned)
	}
	// Switch direction: go to the first entry after the current key.
	succ := append(append(it.opBuf[:0], it.key...), 0)
	it.opBuf = succ
	return it.findNext(it.iter.SeekGE(succ))
}

// Prev moves to the preceding key.
func (it *Iterator) Prev() bool {
	if !it.usable() || !it.valid {
		return false
	}
	if !it.forward {
		return it.findPrev(it.iterPositioned)
	}
	return it.findPrev(it.iter.SeekLT(it.key))
}

// ownSeekKey returns key, or a copy of it when it lies in the value the
// iterator borrowed (a caller seeking to bytes of its own Value, a
// secondary index's pointer, say): the move releases the block that
// memory belongs to, which another goroutine may then evict and reuse.
func (it *Iterator) ownSeekKey(key []byte) []byte {
	if !it.atKey || len(key) == 0 || len(it.value) == 0 {
		return key
	}
	k := uintptr(unsafe.Pointer(unsafe.SliceData(key)))
	v := uintptr(unsafe.Pointer(unsafe.SliceData(it.value)))
	if k < v || k >= v+uintptr(cap(it.value)) {
		return key
	}
	it.seekBuf = append(it.seekBuf[:0], key...)
	return it.seekBuf
}

// Valid reports whether the iterator is at a key.
func (it *Iterator) Valid() bool { return it.valid }

// Key returns the current key.
func (it *Iterator) Key() []byte { return it.key }

// Value returns the current value.
func (it *Iterator) Value() []byte { return it.value }

// Expiry returns the current value's deadline (zero: none): a value
// written with PutWithExpiry, or merged onto one. Keys whose deadline has
// come (by Options.Now, when the iterator reaches them) are skipped.
func (it *Iterator) Expiry() time.Time { return deadlineTime(it.deadline) }

// liveExpiring splits a SetExpiring entry's value, reporting ok=false
// when its deadline has come (it reads as a Delete) or it is malformed.
func (it *Iterator) liveExpiring(v []byte) (deadline int64, value []byte, ok bool) {
	d, val, ok := base.SplitExpiring(v)
	if !ok || it.db.expired(d) {
		return 0, nil, false
	}
	return d, val, true
}

// Error returns the error that stopped the iterator, if any.
func (it *Iterator) Error() error { return it.err }

// Close releases the iterator. It returns Error().
func (it *Iterator) Close() error {
	if it.closed {
		return it.err
	}
	it.leavePrefix()
	it.closed = true
	it.valid = false
	if err := it.iter.Close(); err != nil && it.err == nil {
		it.err = err
	}
	if it.release != nil {
		it.release()
	}
	it.iter = emptyIter{}
	if it.alloc != nil {
		it.alloc.free(it)
		it.alloc = nil
		it.db.openIters.Add(-1)
	}
	if errors.Is(it.err, errIterClosed) {
		return nil
	}
	return it.err
}

// All returns a range-over-func form of a forward scan from First:
//
//	for k, v := range it.All() { ... }
//	if err := it.Error(); err != nil { ... }
//
// k and v are valid only for one loop iteration.
func (it *Iterator) All() iter.Seq2[[]byte, []byte] {
	return func(yield func([]byte, []byte) bool) {
		for ok := it.First(); ok; ok = it.Next() {
			if !yield(it.key, it.value) {
				return
			}
		}
	}
}

// findNext moves forward from the internal iterator's position (ok tells
// whether it is positioned) to the next visible user key, and leaves iter
// past that key's entries.
func (it *Iterator) findNext(ok bool) bool {
	if m, isMerging := it.iter.(*compaction.MergingIter); isMerging {
		return it.findNextMerging(m, ok)
	}
	return it.findNextAny(ok)
}

// findNextMerging is findNext over the merging iterator itself (the stack
// of every iterator without range deletions), calling it directly: a
// forward scan's steady state, the visible Set of the next key, makes no
// interface call here. Any other case is findNextAny's.
func (it *Iterator) findNextMerging(m *compaction.MergingIter, ok bool) bool {
	if ok {
		k := m.Key()
		if k.SeqNum() <= it.seq && k.Kind() == base.KindSet &&
			(it.upper == nil || bytes.Compare(k.UserKey, it.upper) < 0) {
			it.forward = true
			it.atSet(k.UserKey, m.Value())
			return it.yieldErr(m.Error())
		}
	}
	return it.findNextAny(ok)
}

// findNextAny is findNext through the InternalIterator interface.
func (it *Iterator) findNextAny(ok bool) bool {
	it.forward, it.atKey = true, false
	for ok {
		k := it.iter.Key()
		if it.upper != nil && bytes.Compare(k.UserKey, it.upper) >= 0 {
			it.iterPositioned = false
			it.valid = false
			return false
		}
		if k.SeqNum() > it.seq {
			ok = it.iter.Next()
			continue
		}
		switch k.Kind() {
		case base.KindSet:
			it.atSet(k.UserKey, it.iter.Value())
			return it.yield()
		case base.KindSetExpiring:
			if d, v, live := it.liveExpiring(it.iter.Value()); live {
				it.atSet(k.UserKey, v)
				it.deadline = d
				return it.yield()
			}
			it.key = append(it.key[:0], k.UserKey...)
			ok = it.skipKey(it.key)
		case base.KindDelete:
			it.key = append(it.key[:0], k.UserKey...)
			ok = it.skipKey(it.key)
		case base.KindMerge:
			it.key = append(it.key[:0], k.UserKey...)
			var err error
			ok, err = it.mergeForward()
			if err != nil {
				return it.fail(err)
			}
			it.iterPositioned = ok
			return it.yield()
		default:
			return it.fail(base.CorruptionErrorf("iterator: key %s of unknown kind", k))
		}
	}
	it.iterPositioned = false
	return it.checkInternal()
}

// atSet makes the iterator's current entry ukey's visible Set, whose value
// is borrowed from iter: iter stays at this entry until the next move
// (Next skips the key's older entries).
func (it *Iterator) atSet(ukey, value []byte) {
	it.key = append(it.key[:0], ukey...)
	it.value, it.deadline = value, 0
	it.atKey, it.iterPositioned = true, true
}

func (it *Iterator) yield() bool { return it.yieldErr(it.iter.Error()) }

// yieldErr is yield given iter's error.
func (it *Iterator) yieldErr(iterErr error) bool {
	if it.err != nil {
		return false
	}
	if iterErr != nil {
		return it.fail(iterErr)
	}
	it.valid = true
	return true
}

// skipKey advances iter past every entry of ukey.
func (it *Iterator) skipKey(ukey []byte) bool {
	if m, isMerging := it.iter.(*compaction.MergingIter); isMerging {
		for {
			if !m.Next() {
				return false
			}
			if !bytes.Equal(m.Key().UserKey, ukey) {
				return true
			}
		}
	}
	for {
		if !it.iter.Next() {
			return false
		}
		if !bytes.Equal(it.iter.Key().UserKey, ukey) {
			return true
		}
	}
}

// setOperands sets it.operands to the operands packed in it.opBuf, the
// i-th starting at offs[i] and ending where the next starts; reversed
// lists them last first.
func (it *Iterator) setOperands(offs []int, reversed bool) {
	it.operands = it.operands[:0]
	for j := range offs {
		i := j
		if reversed {
			i = len(offs) - 1 - j
		}
		end := len(it.opBuf)
		if i+1 < len(offs) {
			end = offs[i+1]
		}
		it.operands = append(it.operands, it.opBuf[offs[i]:end])
	}
}

// mergeForward resolves the merge stack of it.key starting at the current
// (visible, Merge) entry and leaves iter past the key's entries.
func (it *Iterator) mergeForward() (bool, error) {
	it.operands = it.operands[:0]
	it.opBuf = it.opBuf[:0]
	var offs []int
	hasBase := false
	var deadline int64
	it.baseBuf = it.baseBuf[:0]
	ok := true
	for ok {
		k := it.iter.Key()
		if !bytes.Equal(k.UserKey, it.key) {
			break
		}
		if k.SeqNum() <= it.seq {
			done := false
			switch k.Kind() {
			case base.KindMerge:
				offs = append(offs, len(it.opBuf))
				it.opBuf = append(it.opBuf, it.iter.Value()...)
			case base.KindSet:
				it.baseBuf = append(it.baseBuf, it.iter.Value()...)
				hasBase, done = true, true
			case base.KindSetExpiring:
				if d, v, live := it.liveExpiring(it.iter.Value()); live {
					it.baseBuf = append(it.baseBuf, v...)
					hasBase, deadline = true, d
				}
				done = true
			case base.KindDelete:
				done = true
			}
			if done {
				ok = it.skipKey(it.key)
				break
			}
		}
		ok = it.iter.Next()
	}
	// Operands were gathered newest first; FullMerge wants oldest first.
	it.setOperands(offs, true)
	v, err := it.db.fullMerge(it.cf, it.key, it.baseBuf, hasBase, it.operands)
	if err != nil {
		return false, err
	}
	it.valueBuf = append(it.valueBuf[:0], v...)
	it.value, it.deadline = it.valueBuf, deadline
	return ok, nil
}

// findPrev moves backward from the internal iterator's position to the
// previous visible user key, leaving iter at the last entry before that
// key's entries. Walking backward meets a key's versions oldest first, so
// the state is rebuilt as if replaying them.
func (it *Iterator) findPrev(ok bool) bool {
	it.forward, it.atKey = false, false
	for ok {
		k := it.iter.Key()
		if it.lower != nil && bytes.Compare(k.UserKey, it.lower) < 0 {
			break
		}
		it.key = append(it.key[:0], k.UserKey...)
		// Replay this key's visible versions, oldest first.
		var (
			present  bool
			hasBase  bool
			merging  bool
			offs     []int
			anyEntry bool
			deadline int64
		)
		it.opBuf, it.baseBuf = it.opBuf[:0], it.baseBuf[:0]
		for ok {
			k = it.iter.Key()
			if !bytes.Equal(k.UserKey, it.key) {
				break
			}
			if k.SeqNum() <= it.seq {
				anyEntry = true
				switch k.Kind() {
				case base.KindSet:
					it.baseBuf = append(it.baseBuf[:0], it.iter.Value()...)
					present, hasBase, merging, deadline = true, true, false, 0
					it.opBuf, offs = it.opBuf[:0], offs[:0]
				case base.KindSetExpiring:
					d, v, live := it.liveExpiring(it.iter.Value())
					it.baseBuf = append(it.baseBuf[:0], v...)
					present, hasBase, merging, deadline = live, live, false, d
					it.opBuf, offs = it.opBuf[:0], offs[:0]
				case base.KindDelete:
					present, hasBase, merging, deadline = false, false, false, 0
					it.opBuf, offs = it.opBuf[:0], offs[:0]
				case base.KindMerge:
					offs = append(offs, len(it.opBuf))
					it.opBuf = append(it.opBuf, it.iter.Value()...)
					present, merging = true, true
				default:
					return it.fail(base.CorruptionErrorf("iterator: key %s of unknown kind", k))
				}
			}
			ok = it.iter.Prev()
		}
		if !anyEntry || !present {
			continue
		}
		it.iterPositioned = ok
		it.deadline = deadline
		if !merging {
			it.valueBuf = append(it.valueBuf[:0], it.baseBuf...)
			it.value = it.valueBuf
			return it.yield()
		}
		it.setOperands(offs, false)
		v, err := it.db.fullMerge(it.cf, it.key, it.baseBuf, hasBase, it.operands)
		if err != nil {
			return it.fail(err)
		}
		it.valueBuf = append(it.valueBuf[:0], v...)
		it.value = it.valueBuf
		return it.yield()
	}
	it.iterPositioned = false
	if err := it.iter.Error(); err != nil {
		return it.fail(err)
	}
	it.valid = false
	return false
}
