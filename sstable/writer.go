package sstable

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/rangedel"
)

// DefaultBlockSize is the data-block size a zero BlockSize means, both
// here and in the engine's Options: 3 KiB (sieve.Options.BlockSize says
// why it is below the usual 4 KiB).
const DefaultBlockSize = 3 << 10

// WriterOptions configure a Writer. The zero value is usable.
type WriterOptions struct {
	// BlockSize is the uncompressed size at which a data block is cut.
	// Default DefaultBlockSize.
	BlockSize int
	// BlockRestartInterval is the number of keys between restart points in
	// data blocks. Default 16.
	BlockRestartInterval int
	// Compression of blocks; DefaultCompression means snappy.
	Compression Compression
	// FastCompression encodes Snappy blocks with s2's fast Snappy encoder
	// instead of its denser "better" one: same format, blocks a few
	// percent larger, about a third of the encoding CPU. The DB uses it
	// for flushes and compactions (ingested tables get the denser one).
	FastCompression bool
	// FilterPolicy builds the table's filter over its user keys; nil
	// writes no filter block.
	FilterPolicy filter.Policy
	// TableFormat to write; zero means the oldest format that holds the
	// table: TableFormatV1, TableFormatV2 for one with range tombstones,
	// TableFormatV3 for one whose index or filter was partitioned. A
	// table cannot be written in a format older than what it holds.
	TableFormat TableFormat
	// PartitionSize, when positive, partitions the index and the filter
	// of a table whose index or filter outgrows it: each is cut, at data
	// block boundaries, into partitions of about PartitionSize bytes
	// under a small top-level index, so that a reader going through the
	// block cache loads one partition per lookup instead of the whole
	// block (RocksDB's partitioned index and filters; its
	// metadata_block_size is 4096). A partitioned table is
	// TableFormatV3. Zero writes them whole.
	PartitionSize int
	// Prefix, when set with PrefixName and a FilterPolicy whose builder
	// takes hashes (filter.HashBuilder), adds each key's prefix
	// ukey[:Prefix(ukey)] (clamped to the key) to the filter beside the
	// whole key, as filter.HashPrefix, and records PrefixName in the
	// properties (FORMAT.md, item 2).
	Prefix func(ukey []byte) int
	// PrefixName names Prefix; a table is ruled out for a prefix only by
	// a reader using the same name.
	PrefixName string
	// ExternalID, when set, marks the table as an external table (made
	// outside a database, for ingestion) with this unique ID, recorded as
	// sieve.external.id.
	ExternalID []byte
	// ColumnFamily is recorded as the sieve.column.family property.
	ColumnFamily string
	// YieldEvery, when positive, makes the writer yield its processor
	// (runtime.Gosched) after every YieldEvery data blocks. The DB sets it
	// for flushes and compactions: Go's scheduler gives every runnable
	// goroutine an equal turn and preempts only after 10 ms, so a table
	// being written would otherwise hold a P for whole slices while a
	// reader's Get, runnable behind it, waits.
	YieldEvery int
}

func (o WriterOptions) withDefaults() (WriterOptions, error) {
	if o.BlockSize <= 0 {
		o.BlockSize = DefaultBlockSize
	}
	if o.BlockRestartInterval <= 0 {
		o.BlockRestartInterval = 16
	}
	if o.Compression == DefaultCompression {
		o.Compression = SnappyCompression
	}
	if o.Compression > SnappyCompression {
		return o, fmt.Errorf("sstable: unknown compression %d", uint8(o.Compression))
	}
	if o.PartitionSize < 0 || (o.PartitionSize > 0 && o.TableFormat != 0 && o.TableFormat < TableFormatV3) {
		return o, fmt.Errorf("sstable: partition size %d needs table format v3 or later (have %s)", o.PartitionSize, o.TableFormat)
	}
	if o.TableFormat > TableFormatLatest {
		return o, fmt.Errorf("sstable: unknown table format %d", uint32(o.TableFormat))
	}
	return o, nil
}

// WriterMetadata describes a finished table.
type WriterMetadata struct {
	Size                    uint64 // bytes written, footer included
	Smallest, Largest       base.InternalKey
	SmallestSeq, LargestSeq uint64
	Props                   Properties
}

// ErrWriterFinished is returned by Add and Finish after Finish.
var ErrWriterFinished = errors.New("sstable: writer already finished")

// Writer writes one table. Call order: NewWriter Add* Finish. A Writer is
// not safe for concurrent use. After a write error every later call returns
// that error.
type Writer struct {
	w        *bufio.Writer
	opts     WriterOptions
	offset   uint64
	err      error
	finished bool

	data   blockWriter
	index  blockWriter
	filter filter.Builder
	props  Properties
	prefix prefixAdder
	parts  partitioner

	rangeDels    []rangedel.Fragment
	lastKey      []byte // encoded last key added
	pendingIndex bool   // a data block was flushed; its index entry waits for the next key
	pendingH     blockHandle
	keyBuf       []byte
	sepBuf       []byte
	compressBuf  []byte
	digest       *xxhash.Digest
}

// writeBufSize is the size of a Writer's buffer, and so of its writes to
// the file: 2 MiB, at offsets that are multiples of it. On file systems
// that cache files in large folios (ext4 and xfs on recent Linux), a
// 2 MiB-aligned 2 MiB write lands in one 2 MiB page-cache folio, which a
// memory map of the table (Reader) then maps with one page-table entry
// instead of 512: faulting in a fresh map of the table is many times
// cheaper than with 256 KiB writes (BenchmarkMappedFaultIn measures it),
// and random reads of a fresh database are faster (doc/performance.md's
// ledger). Elsewhere it is only a larger buffer.
// A block larger than the buffer (a huge value, a filter block of more
// than 2 MiB) goes to the file in one write of its own, which leaves the
// rest of that table's writes unaligned: only slower, never wrong.
const writeBufSize = 2 << 20

// writeBufs recycles the Writers' buffers: a table is a few MiB, and a new
// 2 MiB buffer for each would be as much garbage as the table's blocks.
var writeBufs = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, writeBufSize) }}

// NewWriter returns a Writer that writes a table to w. Invalid options
// (an unknown compression or format) make every call return an error.
func NewWriter(w io.Writer, o WriterOptions) *Writer {
	opts, err := o.withDefaults()
	wr := &Writer{
		w:      newWriteBuf(w),
		opts:   opts,
		err:    err,
		data:   blockWriter{restartInterval: opts.BlockRestartInterval},
		index:  blockWriter{restartInterval: 1},
		digest: xxhash.New(),
		parts:  partitioner{size: opts.PartitionSize},
	}
	if opts.FilterPolicy != nil {
		wr.filter = opts.FilterPolicy.NewBuilder()
		wr.props.FilterPolicy = opts.FilterPolicy.Name()
		wr.prefix.init(wr.filter, opts)
	}
	wr.props.ExternalID = string(opts.ExternalID)
	wr.props.ColumnFamily = opts.ColumnFamily
	wr.props.BlockSize = uint64(opts.BlockSize)
	wr.props.BlockRestartInterval = uint64(opts.BlockRestartInterval)
	wr.props.Compression = opts.Compression.String()
	return wr
}

// Add appends an entry. Keys must be strictly increasing in CompareInternal
// order and have a valid kind; a key that is not is refused with an error
// (the writer stays usable). value may be reused by the caller afterwards.
func (w *Writer) Add(key base.InternalKey, value []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.finished {
		return ErrWriterFinished
	}
	if !key.Kind().Valid() {
		return fmt.Errorf("sstable: Add %s: invalid kind", key)
	}
	w.keyBuf = key.AppendEncoded(w.keyBuf[:0])
	if w.props.NumEntries > 0 && base.CompareEncoded(w.lastKey, w.keyBuf) >= 0 {
		last, _ := base.DecodeInternalKey(w.lastKey)
		return fmt.Errorf("sstable: Add %s: not after previous key %s", key, last)
	}
	if w.pendingIndex {
		last, _ := base.DecodeInternalKey(w.lastKey)
		w.addIndexEntry(indexSeparator(w.sepBuf[:0], last, key))
	}
	if w.filter != nil && (w.props.NumEntries == 0 || !bytes.Equal(w.lastKey[:len(w.lastKey)-base.TrailerLen], key.UserKey)) {
		w.filter.Add(key.UserKey)
		w.props.FilterKeys++
		w.prefix.add(key.UserKey, &w.props)
		w.parts.filterKeys++
	}
	w.data.add(w.keyBuf, value)
	w.lastKey, w.keyBuf = w.keyBuf, w.lastKey
	w.updateProps(key, value)
	if w.data.estimatedSize() >= w.opts.BlockSize {
		w.flushDataBlock()
	}
	return w.err
}

func (w *Writer) updateProps(key base.InternalKey, value []byte) { w.props.count(key, value) }

func (w *Writer) addIndexEntry(sep []byte) {
	w.sepBuf = sep
	w.index.add(sep, appendHandle(nil, w.pendingH))
	w.pendingIndex = false
	w.cutPartitions(sep)
}

func (w *Writer) flushDataBlock() {
	raw := w.data.finish()
	h := w.writeBlock(raw)
	w.props.NumDataBlocks++
	w.props.RawDataSize += uint64(len(raw))
	w.props.DataSize += h.length + blockTrailerLen
	w.data.reset()
	w.pendingH, w.pendingIndex = h, true
	if y := w.opts.YieldEvery; y > 0 && w.props.NumDataBlocks%uint64(y) == 0 {
		runtime.Gosched()
	}
}

// writeBlock compresses raw per the options and writes it with its trailer.
func (w *Writer) writeBlock(raw []byte) blockHandle {
	stored, t := compressBlock(w.opts.Compression, w.opts.FastCompression, raw, w.compressBuf)
	if t == blockTypeSnappy {
		w.compressBuf = stored
	}
	return w.writeStored(stored, t)
}

// writeStored writes an already compressed block and its trailer.
func (w *Writer) writeStored(stored []byte, t blockType) blockHandle {
	h := blockHandle{offset: w.offset, length: uint64(len(stored))}
	var trailer [blockTrailerLen]byte
	trailer[0] = byte(t)
	w.digest.Reset()
	w.digest.Write(stored)
	w.digest.Write(trailer[:1])
	binary.LittleEndian.PutUint32(trailer[1:], uint32(w.digest.Sum64()))
	w.write(stored)
	w.write(trailer[:])
	return h
}

func (w *Writer) write(b []byte) {
	if w.err != nil {
		return
	}
	n, err := w.w.Write(b)
	w.offset += uint64(n)
	if err != nil {
		w.err = fmt.Errorf("sstable: write: %w", err)
	}
}

// EstimatedSize returns the size of the table if it were finished now,
// roughly: bytes written plus the pending data block.
func (w *Writer) EstimatedSize() uint64 {
	return w.offset + uint64(w.data.estimatedSize()) + uint64(w.index.estimatedSize())
}

// Finish writes the filter, properties, metaindex and index blocks and the
// footer, and flushes the Writer's buffer. It does not sync or close the
// underlying writer.
func (w *Writer) Finish() (*WriterMetadata, error) {
	if w.err != nil {
		return nil, w.err
	}
	if w.finished {
		return nil, ErrWriterFinished
	}
	w.finished = true
	if !w.data.empty() {
		w.flushDataBlock()
	}
	if w.pendingIndex {
		last, _ := base.DecodeInternalKey(w.lastKey)
		w.addIndexEntry(indexSuccessor(w.sepBuf[:0], last))
	}
	if w.props.NumEntries > 0 {
		w.props.LargestKey, _ = base.DecodeInternalKey(w.lastKey)
		w.props.LargestKey = w.props.LargestKey.Clone()
	}
	if err := w.setFormat(); err != nil {
		return nil, err
	}

	var meta blockWriter
	meta.restartInterval = 1
	if w.filter != nil {
		// A policy that builds nothing (filter.None) gets no filter block,
		// and the table records no policy.
		if h, top, ok := w.finishFilter(); ok {
			if n := w.props.FilterKeys + w.props.FilterPrefixes; n > 0 {
				w.props.FilterBitsPerKey = float64(8*w.props.FilterSize) / float64(n)
			}
			w.props.PrefixExtractor = w.prefix.name()
			name := "sieve.filter"
			if top {
				name = "sieve.filter.top"
			}
			meta.add([]byte(name), appendHandle(nil, h))
		} else {
			w.props.FilterPolicy, w.props.FilterKeys, w.props.FilterPrefixes = "", 0, 0
		}
	}

	var rh blockHandle
	if len(w.rangeDels) > 0 {
		rh = w.writeBlock(rangedel.Encode(nil, w.rangeDels))
	}

	// The properties record the index size, so write the index
	// partitions and compress the index (or top-level index) first.
	indexStored, indexType := w.finishIndex()

	ph := w.writeBlock(encodeProperties(&w.props))
	meta.add([]byte("sieve.properties"), appendHandle(nil, ph))
	if len(w.rangeDels) > 0 {
		meta.add([]byte(rangeDelBlockName), appendHandle(nil, rh))
	}
	mh := w.writeBlock(meta.finish())
	ih := w.writeStored(indexStored, indexType)
	w.write(footer{metaindex: mh, index: ih, format: w.props.FormatVersion}.encode())
	if w.err == nil {
		if err := w.w.Flush(); err != nil {
			w.err = fmt.Errorf("sstable: write: %w", err)
		}
	}
	w.releaseWriteBuf()
	if w.err != nil {
		return nil, w.err
	}
	md := &WriterMetadata{
		Size:        w.offset,
		Smallest:    w.props.SmallestKey,
		Largest:     w.props.LargestKey,
		SmallestSeq: w.props.SmallestSeq,
		LargestSeq:  w.props.LargestSeq,
		Props:       w.props,
	}
	md.Smallest, md.Largest, md.SmallestSeq, md.LargestSeq = TableBounds(&w.props, &rangedel.List{Frags: w.rangeDels})
	return md, nil
}

// newWriteBuf returns a pooled buffer writing to w.
func newWriteBuf(w io.Writer) *bufio.Writer {
	bw := writeBufs.Get().(*bufio.Writer)
	bw.Reset(w)
	return bw
}

// releaseWriteBuf returns w's buffer to the pool once w is finished (its
// writes end there: every method checks finished first).
func (w *Writer) releaseWriteBuf() {
	if w.w != nil {
		w.w.Reset(nil)
		writeBufs.Put(w.w)
		w.w = nil
	}
}

// setFormat settles the table's format version (see
// WriterOptions.TableFormat).
func (w *Writer) setFormat() error {
	need := TableFormatV1
	if len(w.rangeDels) > 0 {
		need = TableFormatV2
	}
	// Every cut is made by now (the last index entry is in); Finish
	// writes the rest of a cut index or filter as its last partition.
	if len(w.parts.filterParts) > 0 || len(w.parts.indexParts) > 0 {
		need = TableFormatV3
	}
	f := w.opts.TableFormat
	switch {
	case f == 0:
		f = need
	case f < need:
		w.err = fmt.Errorf("sstable: this table (range tombstones or partitions) needs table format %s or later, not %s", need, f)
		return w.err
	}
	w.props.FormatVersion = f
	return nil
}

// SetRangeDels sets the table's range tombstones: fragments in order and
// disjoint, as a rangedel.List holds them (the Writer keeps frags; the
// caller must not modify them). Call it before Finish. The table's key
// range (WriterMetadata) covers them.
func (w *Writer) SetRangeDels(frags []rangedel.Fragment) error {
	if w.err != nil {
		return w.err
	}
	if w.finished {
		return ErrWriterFinished
	}
	// The decoder's checks are the specification: refuse what it would.
	if _, err := rangedel.Decode(rangedel.Encode(nil, frags)); err != nil {
		return fmt.Errorf("sstable: SetRangeDels: %w", err)
	}
	w.rangeDels = frags
	return nil
}

// TableBounds returns the key range and sequence-number range of a table
// with point-entry properties p and range tombstones l: the union of the
// points' range and the tombstones'. A tombstone's start gives the
// smallest internal key of that user key; its exclusive end e gives, as
// the largest key, the largest internal key of u when e is u+"\x00" (then
// exactly u and below are covered), and otherwise the smallest internal
// key of e, which includes e in user-key comparisons although no key e is
// deleted: a conservative bound. Table boundaries within one compaction's
// output are cut at u+"\x00" so that neighbouring tables never share a
// user key.
func TableBounds(p *Properties, l *rangedel.List) (smallest, largest base.InternalKey, smallestSeq, largestSeq uint64) {
	smallest, largest, smallestSeq, largestSeq = p.SmallestKey, p.LargestKey, p.SmallestSeq, p.LargestSeq
	if l.Empty() {
		return
	}
	fr := l.Frags
	ts := base.InternalKey{UserKey: fr[0].Start, Trailer: separatorTrailer}
	e := fr[len(fr)-1].End
	te := base.InternalKey{UserKey: e, Trailer: separatorTrailer}
	if n := len(e); n > 0 && e[n-1] == 0 {
		te = base.InternalKey{UserKey: e[:n-1], Trailer: base.MakeTrailer(0, base.KindDelete)}
	}
	lo, hi := base.SeqNumMax, uint64(0)
	for _, f := range fr {
		lo, hi = min(lo, f.Seqs[len(f.Seqs)-1]), max(hi, f.Seqs[0])
	}
	if p.NumEntries == 0 {
		return ts.Clone(), te.Clone(), lo, hi
	}
	if base.CompareInternal(ts, smallest) < 0 {
		smallest = ts.Clone()
	}
	if base.CompareInternal(te, largest) > 0 {
		largest = te.Clone()
	}
	return smallest, largest, min(lo, smallestSeq), max(hi, largestSeq)
}
