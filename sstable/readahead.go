package sstable

import "sync"

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

// readAhead returns the stored block at file offsets [off, end) from the
// window ra, refilling the window from off on when it does not hold the
// block. The caller has checked end against the file size.
func (r *Reader) readAhead(ra *readahead, off, end uint64, ctx errCtx) ([]byte, error) {
	if off < ra.off || end > ra.off+uint64(ra.n) {
		n := max(uint64(readaheadSize), end-off)
		n = min(n, uint64(r.size)-off)
		if uint64(cap(ra.buf)) < n {
			ra.buf = make([]byte, n)
		}
		ra.off, ra.n = off, 0
		if err := r.readAt(ra.buf[:n], off, ctx); err != nil {
			return nil, err
		}
		ra.n = int(n)
	}
	return ra.buf[off-ra.off : end-ra.off], nil
}
