package sieve

import (
	"bytes"
	"context"
	"fmt"

	"github.com/sievedb/sieve/internal/rangedel"
)

// IngestAndExcise atomically replaces the keys of the default column
// family in [start, end) with those of the external tables at paths,
// which must lie within the range. See ColumnFamily.IngestAndExcise.
func (db *DB) IngestAndExcise(paths []string, start, end []byte) error {
	return db.ingestAndExcise(0, paths, start, end)
}

// IngestAndExcise atomically replaces every key of the family in
// [start, end) with the keys of the external tables at paths (Pebble's
// IngestAndExcise; CockroachDB applies a replica snapshot so): after it,
// a read of the range sees exactly the tables' keys, and a snapshot taken
// before sees the range as it was. The inputs are checked as Ingest checks
// them, and must lie within [start, end).
//
// Each input is rewritten (never copied) with the call's one sequence
// number, and each of its tables carries a range tombstone at that
// sequence number over its part of [start, end) (the first from start,
// the last to end), which deletes every older version in the range and
// none of the tables' own keys; the tables land above every level holding
// data in the range. One manifest edit adds them all, so a crash recovers
// to before the call or after it, never to the range half replaced. With
// no paths it is DeleteRange, synced.
func (cf *ColumnFamily) IngestAndExcise(paths []string, start, end []byte) error {
	if err := cf.check(); err != nil {
		return err
	}
	return cf.db.ingestAndExcise(cf.id, paths, start, end)
}

func (db *DB) ingestAndExcise(cf uint32, paths []string, start, end []byte) error {
	if bytes.Compare(start, end) >= 0 {
		return fmt.Errorf("sieve: IngestAndExcise: empty range [%q, %q)", start, end)
	}
	if len(paths) == 0 {
		b := db.NewBatch()
		if err := b.addRange(cf, start, end); err != nil {
			return err
		}
		return db.Apply(b, Sync)
	}
	return db.ingestExcise(context.Background(), cf, paths, &exciseSpan{start: start, end: end})
}

// exciseSpan is an IngestAndExcise's range.
type exciseSpan struct{ start, end []byte }

// assign checks that the inputs (sorted, not overlapping) lie within the
// span and gives each its part of it: the first from start, each up to
// just past its largest key (where the next one's part begins: no two
// tables share a user key, so they can share a level), the last to end.
func (ex *exciseSpan) assign(ins []*ingestInput) error {
	lo := ex.start
	if lo == nil {
		lo = []byte{} // a nil exLo means "no excise": keep the empty start
	}
	for i, in := range ins {
		if bytes.Compare(in.smallest, ex.start) < 0 || bytes.Compare(in.largest, ex.end) >= 0 {
			return fmt.Errorf("%w: %s holds keys [%q, %q] outside the excised range [%q, %q)",
				ErrBadExternalTable, in.path, in.smallest, in.largest, ex.start, ex.end)
		}
		in.exLo, in.exHi = lo, ex.end
		if i < len(ins)-1 {
			in.exHi = append(bytes.Clone(in.largest), 0)
		}
		lo = in.exHi
	}
	return nil
}

// bounds is the user-key range the input's tables cover: its part of an
// excised range (end inclusive, as table bounds count it), else its keys.
func (in *ingestInput) bounds() (lo, hi []byte) {
	if in.exLo != nil {
		return in.exLo, in.exHi
	}
	return in.smallest, in.largest
}

// exciseInto gives out, the input's table output, its range tombstone at
// seq.
func (in *ingestInput) exciseInto(out *tableOutput, seq uint64) {
	if in.exLo == nil {
		return
	}
	out.rd = rangedel.Build([]rangedel.Tombstone{{Start: in.exLo, End: in.exHi, Seq: seq}})
	out.rdLower, out.rdUpper = in.exLo, in.exHi
}
