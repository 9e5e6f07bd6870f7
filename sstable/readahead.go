package sstable

import (
	"sync"

	"github.com/sievedb/sieve/internal/cache"
)

// readaheadSize is how much of a table a compaction's input iterator reads
// with one system call. A compaction passes through its inputs once, from
// first block to last: reading them through the memory map instead would
// fault each page in on first touch, which on this project's VMs cost
// more than the copy out of the page cache (BenchmarkCompactUpdates).
// RocksDB's compaction_readahead_size does the same for its buffered
// reads.
const readaheadSize = 256 << 10

// readahead is a compaction iterator's window onto its table file: buf
// holds the n bytes at file offset off.
type readahead struct {
	buf []byte
	off uint64
	n   int
}

var readaheadPool = sync.Pool{New: func() any { return &readahead{buf: make([]byte, readaheadSize)} }}

func getReadahead() *readahead {
	ra := readaheadPool.Get().(*readahead)
	ra.off, ra.n = 0, 0
	return ra
}

// putReadahead returns ra (nil: nothing) to the pool, keeping only a
// buffer of the usual size (a block larger than the window grew it).
func putReadahead(ra *readahead) {
	if ra == nil || cap(ra.buf) != readaheadSize {
		return
	}
	ra.n = 0
	readaheadPool.Put(ra)
}

// loadBlockAhead is loadBlock for a data block, read through ra: from the
// window when the window holds it, else after refilling the window from
// the block's offset on.
func (r *Reader) loadBlockAhead(h blockHandle, ra *readahead) (*cache.Value, error) {
	ctx := blockCtx(r.opts.FileNum, "data", h.offset)
	end, ok := h.end()
	if !ok || end > uint64(r.size) {
		return nil, ctx.corruptf("block of %d bytes runs past the end of the %d-byte file", h.length, r.size)
	}
	if h.offset < ra.off || end > ra.off+uint64(ra.n) {
		n := uint64(readaheadSize)
		if n < end-h.offset {
			n = end - h.offset
		}
		if n > uint64(r.size)-h.offset {
			n = uint64(r.size) - h.offset
		}
		if uint64(cap(ra.buf)) < n {
			ra.buf = make([]byte, n)
		}
		ra.off, ra.n = h.offset, 0
		if err := r.readAt(ra.buf[:n], h.offset, ctx); err != nil {
			return nil, err
		}
		ra.n = int(n)
	}
	return decodeStored(ra.buf[h.offset-ra.off:end-ra.off], ctx, true)
}
