package sstable

import (
	"bytes"
	"encoding/binary"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/cache"
	"github.com/sievedb/sieve/internal/prefetch"
)

// ReadStats counts the data-block accesses of reads. The caller owns it;
// a Reader only adds to it. It is not safe for concurrent updates.
type ReadStats struct {
	BlocksRead int64 // data blocks accessed (CacheHits + FileReads)
	CacheHits  int64 // of which found in the block cache
	FileReads  int64 // of which read from the file
	BytesRead  int64 // bytes read from the file, trailers included
	// Charged index and filter blocks (ReaderOptions.CacheIndexAndFilter)
	// found in the cache or not; FilterFailOpen counts probes that read
	// the data because the filter block could not be loaded or decoded.
	IndexHits, IndexMisses, FilterHits, FilterMisses, FilterFailOpen int64
	// IndexPartitions and FilterPartitions count the partitions of
	// partitioned (charged) indexes and filters that reads went through.
	IndexPartitions, FilterPartitions int64
}

// searchIndex returns the first data block of index whose separator is >=
// (ukey, trailer), or len(index): the only block that can hold the first
// entry >= that key (FORMAT.md, item 5).
func searchIndex(index []indexEntry, ukey []byte, trailer uint64) int {
	lo, hi := 0, len(index)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		e := &index[m]
		c := bytes.Compare(e.sepUser, ukey)
		if c < 0 || (c == 0 && e.sepTrailer > trailer) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// readMode says who reads a data block, which sets how dataBlock uses the
// block cache.
type readMode uint8

const (
	// readPoint: a point lookup, which reads the restarts and one
	// restart interval of the block.
	readPoint readMode = iota
	// readScan: an iterator, which reads most of the block.
	readScan
	// readCompaction: a compaction's input, read once from first block
	// to last and deleted when the compaction commits. A cached block is
	// used (Peek: neither promoted nor counted as a hit); a block read
	// from the file is not added, so that streaming a compaction's inputs
	// through the cache does not evict the blocks readers keep there (as
	// RocksDB's compactions read with fill_cache off).
	readCompaction
)

// dataBlock returns data block i, from the cache when it is there, else read
// from the file, verified and (unless mode is readCompaction) added to the
// cache. The block lives in the returned Value, whose reference the caller
// must Release when it no longer uses the block (or any key or value in
// it).
func (r *Reader) dataBlock(e, prev *indexEntry, stats *ReadStats, mode readMode) (block, *cache.Value, error) {
	return r.dataBlockRA(e, prev, stats, mode, nil)
}

// dataBlockRA is dataBlock reading a block the cache does not hold
// through ra when it is not nil (a compaction's sequential pass).
func (r *Reader) dataBlockRA(e, prev *indexEntry, stats *ReadStats, mode readMode, ra *readahead) (block, *cache.Value, error) {
	h := e.h
	var v *cache.Value
	var ok, admit bool
	if mode == readCompaction {
		v, ok = r.opts.Cache.Peek(r.opts.FileNum, h.offset)
	} else {
		v, ok, admit = r.opts.Cache.Lookup(r.opts.FileNum, h.offset)
	}
	if ok {
		if stats != nil {
			stats.BlocksRead++
			stats.CacheHits++
		}
		b := v.Bytes()
		if mode != readPoint {
			// A cached block is usually in no CPU cache either (the
			// block cache is larger than they are). An iterator reads
			// most of its block: ask for all its lines at once, as
			// loadBlock does for a stored block, so that the restart
			// array and the entries arrive together instead of one line
			// after another (BenchmarkCachedShortScan: about 10% less
			// time). A point lookup reads the restarts and one restart
			// interval, and is left to fetch those alone.
			prefetch.Read(b[:min(len(b), prefetchMax)])
		}
		return trustedBlock(b), v, nil
	}
	// checkBlockRange reads the separators around the block once it is
	// decoded; the index search may have compared only their words, so
	// their bytes are fetched while the block is read.
	prefetch.Read(e.sepUser)
	if prev != nil {
		prefetch.Read(prev.sepUser)
	}
	var err error
	v, err = r.loadBlockVia(h, "data", true, ra)
	if stats != nil {
		stats.BlocksRead++
		stats.FileReads++
		stats.BytesRead += int64(h.length + blockTrailerLen)
	}
	if err != nil {
		return block{}, nil, err
	}
	blk, err := parseBlock(v.Bytes())
	if err != nil {
		v.Release()
		return block{}, nil, blockCtx(r.opts.FileNum, "data", h.offset).corrupt(err)
	}
	if err := r.checkBlockRange(e, prev, blk); err != nil {
		v.Release()
		return block{}, nil, err
	}
	if admit {
		// The cache said at the miss that it takes the block (it has room,
		// or its doorkeeper saw the block miss before).
		r.opts.Cache.Set(r.opts.FileNum, h.offset, v)
	}
	return blk, v, nil
}

// checkBlockRange checks that the first key of data block e lies between
// the separators around it (prev: the previous block's, nil for the
// first). The checksum does not cover a block's position, so
// a block written at the wrong offset (a misdirected write, a copy of
// another block of the same size) passes it and would otherwise answer for
// keys it does not hold: "not found", or another key's value. Every key of
// another block of this table lies at or below the previous separator (an
// earlier block) or above this block's separator (a later one), so the
// first key alone tells a misplaced block: no need to decode the last.
// Paid once per block read from the file (the cache keeps checked blocks).
//
// The first entry is decoded in place (a block's first key shares nothing
// with a previous one), without a block iterator: this runs on every
// block-cache miss of a seek.
func (r *Reader) checkBlockRange(e, prev *indexEntry, blk block) error {
	if blk.numRestarts == 0 {
		return nil // no entries (as a block iterator's first() finds)
	}
	ctx := r.dataCtx(e)
	first, err := blk.decodeEntry(0, 0)
	if err == nil {
		err = checkInternalKey(first.delta)
	}
	if err != nil {
		return ctx.corrupt(err)
	}
	key := first.delta
	ikey := func() base.InternalKey {
		n := len(key) - base.TrailerLen
		return base.InternalKey{UserKey: key[:n], Trailer: binary.LittleEndian.Uint64(key[n:])}
	}
	if compareKey(key, e.sepUser, e.sepTrailer) > 0 {
		return ctx.corruptf("first key %s is above the block's separator %s (misplaced block?)",
			ikey(), base.InternalKey{UserKey: e.sepUser, Trailer: e.sepTrailer})
	}
	if prev != nil && compareKey(key, prev.sepUser, prev.sepTrailer) <= 0 {
		return ctx.corruptf("first key %s is not above the previous separator %s (misplaced block?)",
			ikey(), base.InternalKey{UserKey: prev.sepUser, Trailer: prev.sepTrailer})
	}
	return nil
}

// trustedBlock rebuilds the block view of contents that parseBlock accepted
// before (blocks in the cache), without walking the restart array again.
func trustedBlock(data []byte) block {
	n := int(binary.LittleEndian.Uint32(data[len(data)-4:]))
	return block{data: data, restartsOff: len(data) - 4 - 4*n, numRestarts: n}
}

func (r *Reader) dataCtx(e *indexEntry) errCtx {
	return blockCtx(r.opts.FileNum, "data", e.h.offset)
}

// Get visits the entries whose user key is ukey and whose sequence number is
// at most seq, newest first, until fn returns false. The key and value
// passed to fn are valid only during the call. Get does not probe the filter
// (the caller does, to count the probe). It adds the data blocks it touches
// to stats when stats is non-nil. On a block-cache hit it does not allocate.
// A charged index is referenced for the call.
func (r *Reader) Get(ukey []byte, seq uint64, stats *ReadStats, fn func(k base.InternalKey, v []byte) bool) error {
	var c indexCursor
	err := c.init(r, stats)
	defer c.release()
	if err != nil {
		return err
	}
	seq = min(seq, base.SeqNumMax)
	trailer := seq<<8 | 0xff // sorts before every version with seqnum <= seq
	ok, err := c.seek(ukey, trailer, stats)
	if !ok || err != nil {
		return err
	}
	it, _ := r.getPool.Get().(*blockIter)
	if it == nil {
		it = new(blockIter)
	}
	defer r.putGetIter(it)
	for ok {
		more, err := r.getInBlock(it, c.entry(), c.prevEntry(), ukey, trailer, stats, fn)
		if !more || err != nil {
			return err
		}
		if ok, err = c.next(stats); err != nil {
			return err
		}
	}
	return nil
}

// getInBlock is Get's visit of data block e (prev: the block before it).
// more reports whether the key's entries may continue in the next block.
func (r *Reader) getInBlock(it *blockIter, e, prev *indexEntry, ukey []byte, trailer uint64, stats *ReadStats,
	fn func(k base.InternalKey, v []byte) bool) (more bool, err error) {
	blk, v, err := r.dataBlock(e, prev, stats, readPoint)
	if err != nil {
		return false, err
	}
	defer v.Release()
	it.init(blk, true, r.dataCtx(e))
	// When the block runs out while still at or before ukey, the next
	// block can hold more of ukey only if this separator's user key is
	// ukey.
	more, err = visitInBlock(it, ukey, trailer, false, fn)
	return more && bytes.Equal(e.sepUser, ukey), err
}

// putGetIter returns a Get iterator to the pool without the block it points
// at, so that pooled iterators do not pin evicted blocks in memory.
func (r *Reader) putGetIter(it *blockIter) {
	it.blk = block{}
	it.key, it.val = nil, nil
	r.getPool.Put(it)
}
