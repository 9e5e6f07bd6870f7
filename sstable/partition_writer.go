package sstable

import (
	"encoding/binary"
)

// This file is the writer's side of partitioned index and filter blocks
// (TableFormatV3, FORMAT.md "Partitioned index and filter"): with
// WriterOptions.PartitionSize set, the index and the filter are cut into
// partitions of about that size at data-block boundaries, and a small
// top-level block maps each partition's last separator to its handle. A
// table whose index or filter fits in one partition writes it whole.

// finishedPart is a partition waiting for Finish to write it: its
// contents, the separator of its last data block (an encoded internal key)
// and, for index partitions, its number of entries.
type finishedPart struct {
	data []byte
	sep  []byte
	n    int
}

// partitioner holds the partitions a Writer has cut so far.
type partitioner struct {
	size int // target partition size in bytes; 0: no partitioning
	// filter partitions cut so far, the distinct user keys added to the
	// current one and the filter bytes per key measured on the first cut
	// (0 before it: estimated from a 10 bits/key filter).
	filterParts []finishedPart
	filterKeys  int
	bytesPerKey float64
	indexParts  []finishedPart
	// filterSize and indexSize total the partitions' contents (the index
	// ones as stored).
}

// filterFull reports whether the current filter partition has reached
// the target size (estimated from its key count).
func (p *partitioner) filterFull() bool {
	bpk := p.bytesPerKey
	if bpk == 0 {
		bpk = 10.0 / 8
	}
	return float64(p.filterKeys)*bpk >= float64(p.size)
}

// cutPartitions is called after the index entry sep of a data block was
// added: a full filter or index partition ends at that block.
func (w *Writer) cutPartitions(sep []byte) {
	p := &w.parts
	if p.size == 0 {
		return
	}
	if w.filter != nil && p.filterKeys > 0 && p.filterFull() {
		w.cutFilter(sep)
	}
	if w.index.estimatedSize() >= p.size {
		w.cutIndex(sep)
	}
}

func (w *Writer) cutFilter(sep []byte) {
	p := &w.parts
	data := w.filter.Finish()
	if len(data) == 0 {
		// A policy that builds nothing (filter.None): no filter at all.
		w.filter, p.filterParts = nil, nil
		w.props.FilterPolicy, w.props.FilterKeys, w.props.FilterPrefixes = "", 0, 0
		w.prefix.rebind(nil)
		return
	}
	if len(p.filterParts) == 0 && p.filterKeys > 0 {
		p.bytesPerKey = float64(len(data)) / float64(p.filterKeys)
	}
	p.filterParts = append(p.filterParts, finishedPart{data: data, sep: append([]byte(nil), sep...)})
	p.filterKeys = 0
	w.filter = w.opts.FilterPolicy.NewBuilder()
	// The prefixes of later keys go to the new partition (a prefix whose
	// keys straddle the cut is in the partition of its first key).
	w.prefix.rebind(w.filter)
}

func (w *Writer) cutIndex(sep []byte) {
	p := &w.parts
	data := append([]byte(nil), w.index.finish()...)
	p.indexParts = append(p.indexParts, finishedPart{data: data, sep: append([]byte(nil), sep...), n: w.index.nEntries})
	w.index.reset()
}

// finishFilter writes the filter: whole (one block, returned as whole)
// when no partition was cut, else every partition and the top-level
// filter index (returned as top). ok is false when the policy built
// nothing at all (filter.None).
func (w *Writer) finishFilter() (h blockHandle, top bool, ok bool) {
	p := &w.parts
	last := w.filter.Finish()
	if len(p.filterParts) == 0 {
		if len(last) == 0 {
			return blockHandle{}, false, false
		}
		h = w.writeBlock(last)
		w.props.FilterSize = uint64(len(last))
		return h, false, true
	}
	if p.filterKeys > 0 {
		p.filterParts = append(p.filterParts, finishedPart{data: last, sep: append([]byte(nil), w.sepBuf...)})
	}
	var topBlock blockWriter
	topBlock.restartInterval = 1
	for _, part := range p.filterParts {
		ph := w.writeBlock(part.data)
		w.props.FilterSize += uint64(len(part.data))
		topBlock.add(part.sep, appendHandle(nil, ph))
	}
	w.props.FilterPartitions = uint64(len(p.filterParts))
	return w.writeBlock(topBlock.finish()), true, true
}

// finishIndex writes the index partitions, if any were cut, and returns
// the stored form of the block the footer points at: the whole index, or
// the top-level index whose values are a partition's handle followed by
// its number of entries (uvarint).
func (w *Writer) finishIndex() (stored []byte, t blockType) {
	p := &w.parts
	if len(p.indexParts) == 0 {
		stored, t = compressBlock(w.opts.Compression, w.opts.FastCompression, w.index.finish(), nil)
		w.props.IndexSize = uint64(len(stored))
		return stored, t
	}
	if !w.index.empty() {
		p.indexParts = append(p.indexParts, finishedPart{
			data: append([]byte(nil), w.index.finish()...), sep: append([]byte(nil), w.sepBuf...), n: w.index.nEntries})
	}
	var topBlock blockWriter
	topBlock.restartInterval = 1
	for _, part := range p.indexParts {
		// Stored raw: a lookup that misses the cache then searches the
		// partition without decompressing it first (the cache holds
		// partitions decompressed either way; the cost is about 1% more
		// disk at 16-byte keys).
		ph := w.writeStored(part.data, blockTypeNone)
		w.props.IndexSize += ph.length
		v := appendHandle(nil, ph)
		topBlock.add(part.sep, binary.AppendUvarint(v, uint64(part.n)))
	}
	w.props.IndexPartitions = uint64(len(p.indexParts))
	stored, t = compressBlock(w.opts.Compression, w.opts.FastCompression, topBlock.finish(), nil)
	w.props.IndexSize += uint64(len(stored))
	return stored, t
}
