package sstable

import (
	"bytes"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/cache"
)

// ProbeFilterBatch is ProbeFilter for many keys at once: may[i] reports
// whether the table may hold keys[i] (whose filter.HashKey is hashes[i]).
// A charged filter block is acquired once for all of them. On error may is
// all true (the caller reads the data) and the error is the filter
// block's.
func (r *Reader) ProbeFilterBatch(keys [][]byte, hashes []uint64, may []bool, stats *ReadStats) error {
	if r.filterTop != nil {
		// Partitioned: each key's partition.
		for i, k := range keys {
			var err error
			if may[i], err = r.ProbeFilter(k, hashes[i], stats); err != nil {
				for j := range may {
					may[j] = true
				}
				return err
			}
		}
		return nil
	}
	fo := r.residentFilter
	if r.charged {
		var v *cache.Value
		var err error
		fo, v, err = r.acquireFilter(stats)
		if err != nil {
			for i := range may {
				may[i] = true
			}
			return err
		}
		if v != nil {
			defer v.Release()
		}
	}
	for i, k := range keys {
		may[i] = fo.may(k, hashes[i])
	}
	return nil
}

// GetBatch is Get for many user keys, sorted ascending (duplicates
// allowed): for each keys[i] it visits the entries whose user key is
// keys[i] and whose sequence number is at most seq, newest first, calling
// fn(i, k, v) until fn returns false, and sets errs[i] (len(errs) ==
// len(keys)) to the error Get would have returned for it; a key's error
// does not stop the others. Keys whose entries lie in the same data block
// share one access to it: each block is fetched (from the cache or the
// file) once for a run of consecutive keys that need it, and the index is
// acquired once for the call.
func (r *Reader) GetBatch(keys [][]byte, seq uint64, stats *ReadStats, errs []error, fn func(i int, k base.InternalKey, v []byte) bool) {
	if len(keys) == 0 {
		return
	}
	var c indexCursor
	err := c.init(r, stats)
	defer c.release()
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return
	}
	seq = min(seq, base.SeqNumMax)
	trailer := seq<<8 | 0xff
	it, _ := r.getPool.Get().(*blockIter)
	if it == nil {
		it = new(blockIter)
	}
	defer r.putGetIter(it)
	bc := batchBlock{r: r, stats: stats, cur: -1}
	defer bc.release()
	bv := &batchVisitor{fn: fn}
	visit := bv.visit // one closure for the call, not one per key
	for ki, ukey := range keys {
		bv.i = ki
		errs[ki] = r.getBatchKey(it, &bc, &c, ukey, trailer, visit)
	}
}

// getBatchKey is GetBatch's search for one key, with c, the index cursor
// of the call (a partitioned index keeps the partition of the previous
// key when it holds this one too).
func (r *Reader) getBatchKey(it *blockIter, bc *batchBlock, c *indexCursor, ukey []byte, trailer uint64, visit func(k base.InternalKey, v []byte) bool) error {
	ok, err := c.seek(ukey, trailer, bc.stats)
	for ; ok && err == nil; ok, err = c.next(bc.stats) {
		// The block the previous key ended in: it is where it stopped,
		// at or before ukey's entries (the keys are sorted).
		i := c.pos()
		forward := bc.cur == i
		blk, err := bc.load(i, c.entry(), c.prevEntry())
		if err != nil {
			return err
		}
		if !forward {
			it.init(blk, true, r.dataCtx(c.entry()))
		}
		more, err := visitInBlock(it, ukey, trailer, forward, visit)
		if err != nil || !more || !bytes.Equal(c.entry().sepUser, ukey) {
			return err
		}
	}
	return err
}

type batchVisitor struct {
	fn func(i int, k base.InternalKey, v []byte) bool
	i  int
}

func (b *batchVisitor) visit(k base.InternalKey, v []byte) bool { return b.fn(b.i, k, v) }

// visitInBlock visits ukey's entries in the block it is on. forward says
// that it may seek from its current position (seekGEForward). more reports
// whether ukey's entries may continue past the block's end.
func visitInBlock(it *blockIter, ukey []byte, trailer uint64, forward bool, fn func(k base.InternalKey, v []byte) bool) (more bool, err error) {
	seek := it.seekGE
	if forward {
		seek = it.seekGEForward
	}
	for ok := seek(ukey, trailer); ok; ok = it.next() {
		k := it.ikey()
		if !bytes.Equal(k.UserKey, ukey) || !fn(k, it.val) {
			return false, nil
		}
	}
	return it.err == nil, it.err
}

// batchBlock holds the data block GetBatch last fetched, so the keys it
// holds share one fetch.
type batchBlock struct {
	r     *Reader
	stats *ReadStats
	cur   int
	blk   block
	v     *cache.Value
}

// load returns data block i (index entry e, prev the one before it).
func (b *batchBlock) load(i int, e, prev *indexEntry) (block, error) {
	if i == b.cur {
		return b.blk, nil
	}
	b.release()
	blk, v, err := b.r.dataBlock(e, prev, b.stats, readPoint)
	if err != nil {
		return block{}, err
	}
	b.cur, b.blk, b.v = i, blk, v
	return blk, nil
}

func (b *batchBlock) release() {
	if b.v != nil {
		b.v.Release()
		b.v = nil
	}
	b.cur, b.blk = -1, block{}
}

// maxForwardSteps is how many entries seekGEForward steps over before it
// falls back to a binary search of the restarts.
const maxForwardSteps = 8

// seekGEForward is seekGE for a target that may lie just after the
// iterator's position, as the next of a batch of sorted keys often does:
// it steps forward a few entries from there before searching the
// restarts.
func (i *blockIter) seekGEForward(ukey []byte, trailer uint64) bool {
	if i.err != nil || i.rcIdx >= 0 || !i.valid() || compareKey(i.key, ukey, trailer) >= 0 {
		return i.seekGE(ukey, trailer)
	}
	for range maxForwardSteps {
		if !i.next() {
			return false // the block ends before the target (or failed)
		}
		if compareKey(i.key, ukey, trailer) >= 0 {
			return true
		}
	}
	return i.seekGE(ukey, trailer)
}
