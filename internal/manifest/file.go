package manifest

import (
	"bytes"
	"fmt"
	"sync/atomic"

	"github.com/sievedb/sieve/internal/base"
)

// FileMetadata describes one table file. It is immutable once added to a
// version, except for the reference count.
type FileMetadata struct {
	FileNum     uint64
	Size        uint64
	Smallest    base.InternalKey
	Largest     base.InternalKey
	SmallestSeq uint64
	LargestSeq  uint64

	// refs counts the versions that include this file. When it drops to
	// zero the file is obsolete and may be deleted.
	refs atomic.Int32
	// Compacting is set while a compaction has the file as an input.
	// REQUIRES: the DB mutex for reads and writes.
	Compacting bool
	// TableCache is the DB's table cache's handle on the table's open
	// reader (a typed nil when there is none); this package never looks
	// inside. It lets a lookup reach an open table without a lock.
	TableCache atomic.Value
	// RangeDels records whether the table holds range tombstones, once
	// known (not persisted): RangeDelsUnknown until the DB has opened the
	// table or wrote it.
	RangeDels atomic.Uint32
	// Seeks counts the iterator seeks that had to position in this L0
	// table beside other sources at the key (not persisted), for the
	// DB's seek-triggered compactions (sieve.Options.DisableSeekCompactions).
	Seeks atomic.Int64
}

// Values of FileMetadata.RangeDels.
const (
	RangeDelsUnknown uint32 = iota
	RangeDelsNone
	RangeDelsSome
)

func (m *FileMetadata) validate() error {
	if base.CompareInternal(m.Smallest, m.Largest) > 0 {
		return fmt.Errorf("table %s: smallest %s > largest %s", base.FileName(base.FileTypeTable, m.FileNum), m.Smallest, m.Largest)
	}
	if m.SmallestSeq > m.LargestSeq {
		return fmt.Errorf("table %s: seqnum range %d > %d", base.FileName(base.FileTypeTable, m.FileNum), m.SmallestSeq, m.LargestSeq)
	}
	return nil
}

// Overlaps reports whether the table's user-key range intersects
// [start, end] (both inclusive; nil = unbounded).
func (m *FileMetadata) Overlaps(start, end []byte) bool {
	if end != nil && bytes.Compare(m.Smallest.UserKey, end) > 0 {
		return false
	}
	if start != nil && bytes.Compare(m.Largest.UserKey, start) < 0 {
		return false
	}
	return true
}

// String describes the table: number, key range, sequence numbers and size.
func (m *FileMetadata) String() string {
	return fmt.Sprintf("%06d:[%s-%s] seqs=[%d-%d] size=%d", m.FileNum, m.Smallest, m.Largest, m.SmallestSeq, m.LargestSeq, m.Size)
}

// Ref and Unref maintain the reference count; Unref returns the count after
// the decrement.
func (m *FileMetadata) Ref() { m.refs.Add(1) }

// Unref drops one reference and returns the remaining count.
func (m *FileMetadata) Unref() int32 { return m.refs.Add(-1) }

// Refs returns the current reference count.
func (m *FileMetadata) Refs() int32 { return m.refs.Load() }
