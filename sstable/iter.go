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
	r *Reader
	// cur is the position in the index (whole or partitioned), holding
	// the charged index's or partition's reference, released at Close.
	cur          indexCursor
	lower, upper []byte
	idx          int // current data block; -1 before the first, n() past the last
	data         blockIter
	err          error
	// val holds the reference to the loaded data block (block blk, index
	// valIdx) that data iterates over; released when another block is
	// loaded and at Close. Keys and values returned are valid until the
	// next positioning call, as InternalIterator requires.
	val    *cache.Value
	blk    block
	valIdx int
	// mode is how load reads data blocks: readScan, or readCompaction
	// for a NewCompactionIter.
	mode readMode
	// rel, when set (NewIterReleasing), is told at Close that the
	// iterator no longer uses the Reader.
	rel Releaser
	// ra is a compaction iterator's readahead buffer (readCompaction).
	ra *readahead
}

// Releaser is told by an iterator from NewIterReleasing, at its Close,
// that the iterator no longer uses its Reader (the DB's table cache
// counts the Reader's users this way, without a wrapper around every
// table iterator whose calls would each add an indirection).
type Releaser interface {
	ReleaseIter()
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
	*t = tableIter{r: r, lower: lower, upper: upper, idx: -1, data: data, mode: readScan}
	t.cur.seeks = true
	t.err = t.cur.init(r, nil)
	return t
}

// NewCompactionIter is NewIter for a compaction's input, which passes
// through the table once: it uses data blocks the block cache holds
// without promoting them, and does not add the blocks it reads from the
// file to the cache (where they would evict the blocks readers use, for a
// table about to be deleted).
func (r *Reader) NewCompactionIter(lower, upper []byte) base.InternalIterator {
	return r.NewIterReleasing(lower, upper, true, nil)
}

// NewIterReleasing is NewIter (NewCompactionIter when compaction is set)
// whose Close, after closing the iterator, calls rel.ReleaseIter once (a
// nil rel: nothing).
func (r *Reader) NewIterReleasing(lower, upper []byte, compaction bool, rel Releaser) base.InternalIterator {
	t := r.NewIter(lower, upper).(*tableIter)
	if compaction {
		t.mode = readCompaction
		t.ra = getReadahead()
	}
	t.rel = rel
	return t
}

// tableIterPool recycles table iterators and their block iterators' key
// and restart-cache buffers: a point seek opens one per table it visits.
var tableIterPool sync.Pool

func (t *tableIter) n() int { return int(t.r.props.NumDataBlocks) }

// load positions the block iterator on the data block of the index
// cursor after a cursor move that returned ok and err (before the block's
// first entry); !ok exhausts in direction dir (+1 forward). Seeking again
// within the loaded block reuses it.
func (t *tableIter) load(ok bool, err error, dir int) bool {
	switch {
	case err != nil:
		t.err = err
		return false
	case !ok && dir > 0:
		return t.exhaustForward()
	case !ok:
		return t.exhaustBackward()
	}
	i := t.cur.pos()
	t.idx = i
	if t.val == nil || t.valIdx != i {
		t.release()
		blk, v, err := t.r.dataBlockRA(t.cur.entry(), t.cur.prevEntry(), nil, t.mode, t.ra)
		if err != nil {
			t.err = err
			return false
		}
		t.val, t.blk, t.valIdx = v, blk, i
	}
	t.data.init(t.blk, true, t.r.dataCtx(t.cur.entry()))
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
		if t.idx+1 >= t.n() || (t.upper != nil && t.idx >= 0 && bytes.Compare(t.cur.entry().sepUser, t.upper) >= 0) {
			return t.exhaustForward()
		}
		if ok, err := t.cur.next(nil); !t.load(ok, err, +1) {
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
		if t.idx <= 0 || (t.lower != nil && bytes.Compare(t.cur.prevEntry().sepUser, t.lower) < 0) {
			return t.exhaustBackward()
		}
		if ok, err := t.cur.prev(nil); !t.load(ok, err, -1) {
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
	if ok, err := t.cur.first(nil); !t.load(ok && t.n() > 0, err, +1) {
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
	if ok, err := t.cur.last(nil); !t.load(ok && t.n() > 0, err, -1) {
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
	if ok, err := t.cur.seek(ukey, seekTrailer, nil); !t.load(ok, err, +1) {
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
	ok, err := t.cur.seek(ukey, seekTrailer, nil)
	if err == nil && !ok {
		// Every key is below ukey: the last block holds the answer.
		if ok, err := t.cur.last(nil); !t.load(ok && t.n() > 0, err, -1) {
			return false
		}
		return t.backward(t.data.last())
	}
	if !t.load(ok, err, -1) {
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
	rel := t.rel
	putReadahead(t.ra)
	t.release()
	t.cur.release()
	t.data.reset()
	*t = tableIter{data: t.data, err: errIterClosed}
	tableIterPool.Put(t)
	if rel != nil {
		rel.ReleaseIter()
	}
	return err
}
