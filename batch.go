package sieve

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/sievedb/sieve/internal/base"
)

// Batch encoding (see FORMAT.md, "Batch"): a 17-byte header — format
// version (1 byte), sequence number of the first entry (8 bytes LE, set at
// commit), entry count (4 bytes LE), encoded size including the header (4
// bytes LE) — followed by the entries, each
//
//	kind (1 byte) | column family (uvarint) | key length (uvarint) | key
//	| value length (uvarint) | value        (value omitted for Delete)
//
// A DeleteRange entry (kind 3) holds the range's start as its key and its
// end as its value.
const (
	batchVersion    = 1
	batchHeaderLen  = 17
	batchMaxEntries = 1<<32 - 1
)

// Batch is a set of writes applied atomically by DB.Apply: after a crash
// either all of them are present or none is. A Batch is not safe for
// concurrent use; it may be reused after Reset once Apply has returned.
type Batch struct {
	data  []byte
	count uint32
	err   error // first error of a Put/Delete/Merge; Apply returns it
	db    *DB   // for column family checks; nil for batches decoded from the WAL
	// cfs and mergeCFs list the non-default column families the batch
	// writes and the families it merges into, for checks at Apply.
	cfs, mergeCFs []uint32
	index         *batchIndex // nil unless made by NewIndexedBatch
}

// NewBatch returns an empty batch for db.
func (db *DB) NewBatch() *Batch { return &Batch{db: db} }

func (b *Batch) init() {
	if len(b.data) == 0 {
		b.data = append(b.data[:0], make([]byte, batchHeaderLen)...)
		b.data[0] = batchVersion
	}
}

// Reset empties the batch, keeping its memory.
func (b *Batch) Reset() {
	b.data = b.data[:0]
	b.count = 0
	b.err = nil
	b.cfs = b.cfs[:0]
	b.mergeCFs = b.mergeCFs[:0]
	if b.index != nil {
		b.index = &batchIndex{points: map[string][]idxEntry{}}
	}
}

// Len returns the number of entries in the batch.
func (b *Batch) Len() int { return int(b.count) }

// Empty reports whether the batch has no entries.
func (b *Batch) Empty() bool { return b.count == 0 }

// Size returns the encoded size of the batch in bytes.
func (b *Batch) Size() int { return len(b.data) }

// Err returns the first error recorded by Put, Delete or Merge.
func (b *Batch) Err() error { return b.err }

func (b *Batch) add(kind base.Kind, cf uint32, key, value []byte) error {
	if b.err != nil {
		return b.err
	}
	switch {
	case len(key) > MaxKeySize:
		b.err = fmt.Errorf("%w: key of %d bytes (limit %d)", ErrTooLarge, len(key), MaxKeySize)
	case len(value) > MaxValueSize:
		b.err = fmt.Errorf("%w: value of %d bytes (limit %d)", ErrTooLarge, len(value), MaxValueSize)
	case b.count == batchMaxEntries:
		b.err = fmt.Errorf("%w: batch has %d entries", ErrTooLarge, b.count)
	case len(b.data)+len(key)+len(value)+32 > MaxBatchSize:
		b.err = fmt.Errorf("%w: batch would exceed %d bytes", ErrTooLarge, MaxBatchSize)
	}
	if b.err != nil {
		return b.err
	}
	b.init()
	b.data = append(b.data, byte(kind))
	b.data = binary.AppendUvarint(b.data, uint64(cf))
	b.data = binary.AppendUvarint(b.data, uint64(len(key)))
	b.data = append(b.data, key...)
	if kind != base.KindDelete {
		b.data = binary.AppendUvarint(b.data, uint64(len(value)))
		b.data = append(b.data, value...)
	}
	if b.index != nil {
		b.noteIndexed(kind, cf, key, value)
	}
	b.count++
	if cf != 0 {
		b.cfs = addUnique(b.cfs, cf)
	}
	if kind == base.KindMerge {
		b.mergeCFs = addUnique(b.mergeCFs, cf)
	}
	return nil
}

// Put sets key to value in the default column family.
func (b *Batch) Put(key, value []byte) error { return b.add(base.KindSet, 0, key, value) }

// Delete removes key from the default column family.
func (b *Batch) Delete(key []byte) error { return b.add(base.KindDelete, 0, key, nil) }

// Merge adds a merge operand for key in the default column family.
func (b *Batch) Merge(key, operand []byte) error { return b.add(base.KindMerge, 0, key, operand) }

// DeleteRange removes every key in [start, end) of the default column
// family: one entry (one sequence number) however many keys it covers.
// start == end deletes nothing and adds nothing; start > end is an error.
func (b *Batch) DeleteRange(start, end []byte) error { return b.addRange(0, start, end) }

// addRange adds a range tombstone [start, end) of column family cf.
func (b *Batch) addRange(cf uint32, start, end []byte) error {
	if b.err != nil {
		return b.err
	}
	switch c := bytes.Compare(start, end); {
	case c > 0:
		b.err = fmt.Errorf("%w: start %q > end %q", ErrInvalidRange, start, end)
		return b.err
	case c == 0:
		return nil
	}
	return b.add(base.KindRangeDelete, cf, start, end)
}

func (b *Batch) setSeq(seq uint64) { binary.LittleEndian.PutUint64(b.data[1:9], seq) }

func (b *Batch) seq() uint64 { return binary.LittleEndian.Uint64(b.data[1:9]) }

func (b *Batch) finish() {
	b.init()
	binary.LittleEndian.PutUint32(b.data[9:13], b.count)
	binary.LittleEndian.PutUint32(b.data[13:17], uint32(len(b.data)))
}

// batchLen returns the encoded size of the batch at the start of data.
func batchLen(data []byte) (int, error) {
	if len(data) < batchHeaderLen {
		return 0, base.CorruptionErrorf("batch: %d bytes, shorter than its header", len(data))
	}
	n := binary.LittleEndian.Uint32(data[13:17])
	if n < batchHeaderLen || uint64(n) > uint64(len(data)) {
		return 0, base.CorruptionErrorf("batch: size %d out of range (%d bytes left)", n, len(data))
	}
	return int(n), nil
}

// batchEntry is one decoded entry.
type batchEntry struct {
	kind       base.Kind
	cf         uint32
	key, value []byte
}

// batchReader decodes entries of an encoded batch. Errors wrap
// ErrCorruption: a batch comes from the WAL, where bytes are checksummed, so
// a bad batch means a bug or bad memory, never a torn write.
type batchReader struct {
	base.Decoder // What: "batch"
	left         uint32
}

// newEntryReader reads count entries from data, a batch without its header.
func newEntryReader(data []byte, count uint32) *batchReader {
	return &batchReader{Decoder: base.Decoder{B: data, What: "batch"}, left: count}
}

func newBatchReader(data []byte) (*batchReader, uint64, error) {
	if len(data) < batchHeaderLen {
		return nil, 0, base.CorruptionErrorf("batch: %d bytes, shorter than its header", len(data))
	}
	if data[0] != batchVersion {
		return nil, 0, base.CorruptionErrorf("batch: unknown format version %d", data[0])
	}
	seq := binary.LittleEndian.Uint64(data[1:9])
	count := binary.LittleEndian.Uint32(data[9:13])
	if seq == 0 || seq > base.SeqNumMax || uint64(count) > base.SeqNumMax-seq+1 {
		return nil, 0, base.CorruptionErrorf("batch: sequence number %d with %d entries out of range", seq, count)
	}
	return newEntryReader(data[batchHeaderLen:], count), seq, nil
}

// next decodes the next entry; ok is false at the end or on error (see err).
func (r *batchReader) next() (e batchEntry, ok bool) {
	if r.Err != nil {
		return e, false
	}
	if r.left == 0 {
		if len(r.B) != 0 {
			r.Failf("%d bytes after the last entry", len(r.B))
		}
		return e, false
	}
	if len(r.B) == 0 {
		r.Failf("%d entries missing", r.left)
		return e, false
	}
	e.kind = base.Kind(r.B[0])
	r.B = r.B[1:]
	if !e.kind.Valid() && e.kind != base.KindRangeDelete {
		r.Failf("unknown kind %d", e.kind)
		return e, false
	}
	cf := r.Uvarint()
	if r.Err == nil && cf > 1<<31 {
		r.Failf("column family %d out of range", cf)
	}
	e.cf = uint32(cf)
	e.key = r.Bytes()
	if e.kind != base.KindDelete {
		e.value = r.Bytes()
	}
	if e.kind == base.KindRangeDelete && r.Err == nil && bytes.Compare(e.key, e.value) >= 0 {
		r.Failf("range deletion [%q, %q) is empty or reversed", e.key, e.value)
	}
	if r.Err != nil {
		return batchEntry{}, false
	}
	r.left--
	return e, true
}

func addUnique(s []uint32, v uint32) []uint32 {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
