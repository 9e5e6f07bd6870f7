package sstable

import (
	"bytes"
	"errors"
	"sync"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/cache"
)

// tableIter is the two-level iterator of a table: a position in the
// resident index and a block iterator over the current data block. Bounds
// are on user keys: lower inclusive, upper exclusive.
type tableIter struct {
	r            *Reader
	index        []indexEntry
	indexVal     *cache.Value // the charged index's reference, released at Close
	lower, upper []byte
	idx          int // current data block; -1 before the first, len(index) past the last
	data         blockIter
	err          error
	// val holds the reference to the loaded data block (block blk, index
	// valIdx) that data iterates over; released when another block is
	// loaded and at Close. Keys and values returned are valid until the
	// next positioning call, as InternalIterator requires.
	val    *cache.Value
	blk    block
	valIdx int
}

var errIterClosed = errors.New("sstable: iterator closed")

var _ base.InternalIterator = (*tableIter)(nil)

// NewIter returns an iterator over the table's entries whose user keys lie
// in [lower, upper); a nil bound is no bound. The bounds are retained, not
// copied. The iterator reads data blocks through the block cache and is not
// safe for concurrent use.
func (r *Reader) NewIter(lower, upper []byte) base.InternalIterator {
	t, _ := tableIterPool.Get().(*tableIter)
	if t == nil {
		t = &tableIter{}
	}
	data := t.data
	data.reset()
	*t = tableIter{r: r, lower: lower, upper: upper, idx: -1, data: data}
	t.index, t.indexVal, t.err = r.acquireIndex(nil)
	return t
}

// tableIterPool recycles table iterators and their block iterators' key
// and restart-cache buffers: a point seek opens one per table it visits.
var tableIterPool sync.Pool

func (t *tableIter) n() int { return len(t.index) }

// load positions the block iterator on data block i (before its first
// entry). Seeking again within the loaded block reuses it.
func (t *tableIter) load(i int) bool {
	t.idx = i
	if t.val == nil || t.valIdx != i {
		t.release()
		blk, v, err := t.r.dataBlock(t.index, i, nil)
		if err != nil {
			t.err = err
			return false
		}
		t.val, t.blk, t.valIdx = v, blk, i
	}
	t.data.init(t.blk, true, t.r.dataCtx(t.index, i))
	return true
}

func (t *tableIter) release() {
	if t.val != nil {
		t.val.Release()
		t.val, t.blk = nil, block{}
	}
}

func (t *tableIter) exhaustForward() bool  { t.idx = t.n(); t.data.key = nil; return false }
func (t *tableIter) exhaustBackward() bool { t.idx = -1; t.data.key = nil; return false }

// forward settles after a forward move that landed (ok) or ran out of the
// current block, moving to following blocks, and applies the upper bound.
func (t *tableIter) forward(ok bool) bool {
	for !ok {
		if t.data.err != nil {
			t.err = t.data.err
			return false
		}
		// Blocks after idx hold keys > separator[idx]; none is below upper
		// if the separator's user key is not.
		if t.idx+1 >= t.n() || (t.upper != nil && t.idx >= 0 && bytes.Compare(t.index[t.idx].sepUser, t.upper) >= 0) {
			return t.exhaustForward()
		}
		if !t.load(t.idx + 1) {
			return false
		}
		ok = t.data.first()
	}
	if t.upper != nil && bytes.Compare(t.data.ikey().UserKey, t.upper) >= 0 {
		return t.exhaustForward()
	}
	return true
}

// backward is forward's mirror image, applying the lower bound.
func (t *tableIter) backward(ok bool) bool {
	for !ok {
		if t.data.err != nil {
			t.err = t.data.err
			return false
		}
		// Block idx-1 holds keys <= separator[idx-1].
		if t.idx <= 0 || (t.lower != nil && bytes.Compare(t.index[t.idx-1].sepUser, t.lower) < 0) {
			return t.exhaustBackward()
		}
		if !t.load(t.idx - 1) {
			return false
		}
		ok = t.data.last()
	}
	if t.lower != nil && bytes.Compare(t.data.ikey().UserKey, t.lower) < 0 {
		return t.exhaustBackward()
	}
	return true
}

func (t *tableIter) First() bool {
	if t.err != nil {
		return false
	}
	if t.lower != nil {
		return t.SeekGE(t.lower)
	}
	if t.n() == 0 {
		return t.exhaustForward()
	}
	if !t.load(0) {
		return false
	}
	return t.forward(t.data.first())
}

func (t *tableIter) Last() bool {
	if t.err != nil {
		return false
	}
	if t.upper != nil {
		return t.SeekLT(t.upper)
	}
	if t.n() == 0 {
		return t.exhaustBackward()
	}
	if !t.load(t.n() - 1) {
		return false
	}
	return t.backward(t.data.last())
}

func (t *tableIter) SeekGE(ukey []byte) bool {
	if t.err != nil {
		return false
	}
	if t.lower != nil && bytes.Compare(ukey, t.lower) < 0 {
		ukey = t.lower
	}
	i := searchIndex(t.index, ukey, seekTrailer)
	if i == t.n() {
		return t.exhaustForward()
	}
	if !t.load(i) {
		return false
	}
	return t.forward(t.data.seekGE(ukey, seekTrailer))
}

func (t *tableIter) SeekLT(ukey []byte) bool {
	if t.err != nil {
		return false
	}
	if t.upper != nil && bytes.Compare(ukey, t.upper) > 0 {
		ukey = t.upper
	}
	i := searchIndex(t.index, ukey, seekTrailer)
	if i == t.n() {
		if i == 0 {
			return t.exhaustBackward()
		}
		if !t.load(i - 1) {
			return false
		}
		return t.backward(t.data.last())
	}
	if !t.load(i) {
		return false
	}
	return t.backward(t.data.seekLT(ukey, seekTrailer))
}

func (t *tableIter) Next() bool {
	if t.err != nil {
		return false
	}
	if t.idx < 0 {
		return t.First()
	}
	if t.idx >= t.n() {
		return false
	}
	return t.forward(t.data.next())
}

func (t *tableIter) Prev() bool {
	if t.err != nil {
		return false
	}
	if t.idx >= t.n() {
		return t.Last()
	}
	if t.idx < 0 {
		return false
	}
	return t.backward(t.data.prev())
}

func (t *tableIter) Key() base.InternalKey {
	if len(t.data.key) < base.TrailerLen {
		return base.InternalKey{} // not positioned
	}
	return t.data.ikey()
}
func (t *tableIter) Value() []byte { return t.data.val }
func (t *tableIter) Error() error  { return t.err }

func (t *tableIter) Close() error {
	if t.r == nil {
		return errIterClosed
	}
	err := t.err
	t.release()
	if t.indexVal != nil {
		t.indexVal.Release()
	}
	t.data.reset()
	*t = tableIter{data: t.data, err: errIterClosed}
	tableIterPool.Put(t)
	return err
}
