package sieve

import (
	"fmt"
	"time"

	"github.com/sievedb/sieve/internal/base"
)

// BatchRecordKind is the kind of one write of a Batch.
type BatchRecordKind uint8

const (
	// RecordPut sets Key to Value (until Expiry, when it is not zero).
	RecordPut BatchRecordKind = iota + 1
	// RecordDelete removes Key.
	RecordDelete
	// RecordMerge adds Value as a merge operand of Key.
	RecordMerge
	// RecordDeleteRange removes every key in [Key, End).
	RecordDeleteRange
)

// BatchRecord is one write of a Batch, its column family named: what a
// caller needs to replay the write on another DB, whose family IDs
// differ (a replicated state machine).
type BatchRecord struct {
	Kind BatchRecordKind
	// Family is the column family's name ("default" for the default
	// family).
	Family string
	Key    []byte
	Value  []byte    // RecordPut, RecordMerge
	End    []byte    // RecordDeleteRange's exclusive end
	Expiry time.Time // RecordPut: zero for none
}

// Records calls fn with each write of b, in order, and returns the first
// error fn returns, or b's own error (Err). The records' byte slices
// alias the batch: valid until b is changed or reset.
func (b *Batch) Records(fn func(BatchRecord) error) error {
	if b.err != nil {
		return b.err
	}
	if len(b.data) < batchHeaderLen {
		return nil
	}
	r := newEntryReader(b.data[batchHeaderLen:], b.count)
	for {
		e, ok := r.next()
		if !ok {
			return r.Err
		}
		rec, err := b.record(e)
		if err != nil {
			return err
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
}

// record names e's family and decodes its kind.
func (b *Batch) record(e batchEntry) (BatchRecord, error) {
	rec := BatchRecord{Family: "default", Key: e.key}
	if e.cf != 0 {
		if b.db == nil {
			return rec, fmt.Errorf("sieve: batch without a DB names no column family")
		}
		st := b.db.cfs.get(e.cf)
		if st == nil {
			return rec, fmt.Errorf("sieve: batch writes unknown column family %d", e.cf)
		}
		rec.Family = st.name
	}
	switch e.kind {
	case base.KindSet:
		rec.Kind, rec.Value = RecordPut, e.value
	case base.KindSetExpiring:
		d, v, ok := base.SplitExpiring(e.value)
		if !ok {
			return rec, base.CorruptionErrorf("batch: expiring value of %d bytes", len(e.value))
		}
		rec.Kind, rec.Value, rec.Expiry = RecordPut, v, time.Unix(0, d)
	case base.KindDelete:
		rec.Kind = RecordDelete
	case base.KindMerge:
		rec.Kind, rec.Value = RecordMerge, e.value
	case base.KindRangeDelete:
		rec.Kind, rec.End = RecordDeleteRange, e.value
	default:
		return rec, base.CorruptionErrorf("batch: kind %d", e.kind)
	}
	return rec, nil
}
