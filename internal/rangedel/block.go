package rangedel

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/sievedb/sieve/internal/base"
)

// Encode appends the block encoding of frags (sstable/FORMAT.md,
// "Range-deletion block") to dst:
//
//	block    := count:uvarint fragment*
//	fragment := startlen:uvarint start endlen:uvarint end nseqs:uvarint seq:uvarint*
func Encode(dst []byte, frags []Fragment) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(frags)))
	for _, f := range frags {
		dst = binary.AppendUvarint(dst, uint64(len(f.Start)))
		dst = append(dst, f.Start...)
		dst = binary.AppendUvarint(dst, uint64(len(f.End)))
		dst = append(dst, f.End...)
		dst = binary.AppendUvarint(dst, uint64(len(f.Seqs)))
		for _, s := range f.Seqs {
			dst = binary.AppendUvarint(dst, s)
		}
	}
	return dst
}

// Decode decodes a range-deletion block, checking every rule of the format:
// each fragment non-empty (start < end), fragments in order and disjoint,
// at least one sequence number per fragment, strictly descending and at
// most base.SeqNumMax, nothing after the last fragment. Errors wrap
// base.ErrCorruption. The result does not alias b.
func Decode(b []byte) (*List, error) {
	b = bytes.Clone(b)
	d := base.Decoder{B: b, What: "range-deletion block"}
	n := d.Uvarint()
	if d.Err == nil && n > uint64(len(d.B)) {
		d.Failf("%d fragments in %d bytes", n, len(d.B))
	}
	l := &List{}
	if d.Err == nil {
		l.Frags = make([]Fragment, 0, n)
	}
	for i := uint64(0); i < n && d.Err == nil; i++ {
		f := Fragment{Start: d.Bytes(), End: d.Bytes()}
		k := d.Uvarint()
		switch {
		case d.Err != nil:
		case bytes.Compare(f.Start, f.End) >= 0:
			d.Failf("fragment %d: start %q not before end %q", i, f.Start, f.End)
		case i > 0 && bytes.Compare(l.Frags[i-1].End, f.Start) > 0:
			d.Failf("fragment %d: starts at %q, before the previous one ends (%q)", i, f.Start, l.Frags[i-1].End)
		case k == 0 || k > uint64(len(d.B)):
			d.Failf("fragment %d: %d sequence numbers", i, k)
		}
		if d.Err != nil {
			break
		}
		f.Seqs = make([]uint64, 0, k)
		for j := uint64(0); j < k && d.Err == nil; j++ {
			s := d.Uvarint()
			if d.Err == nil && (s > base.SeqNumMax || (j > 0 && s >= f.Seqs[j-1])) {
				d.Failf("fragment %d: sequence number %d out of order or range", i, s)
			}
			f.Seqs = append(f.Seqs, s)
		}
		l.Frags = append(l.Frags, f)
	}
	if d.Err == nil && len(d.B) != 0 {
		d.Failf("%d bytes after the last fragment", len(d.B))
	}
	if d.Err != nil {
		return nil, d.Err
	}
	if len(l.Frags) == 0 {
		return nil, nil
	}
	return l, nil
}

// Compact returns the fragments a compaction must write: per fragment, the
// newest sequence number of each snapshot stripe (stripe maps a sequence
// number to its stripe, 0 being the oldest; an older tombstone in the same
// stripe deletes nothing the newer one does not), and none of the oldest
// stripe's where canDrop says nothing below the output holds keys in the
// fragment's range (the compaction drops what it covered). dropped counts
// the sequence numbers left out.
func Compact(l *List, stripe func(seq uint64) int, canDrop func(start, end []byte) bool) (out []Fragment, dropped int) {
	if l == nil {
		return nil, 0
	}
	for _, f := range l.Frags {
		var keep []uint64
		last := -1
		for _, s := range f.Seqs {
			st := stripe(s)
			if len(keep) > 0 && st == last {
				dropped++
				continue
			}
			keep, last = append(keep, s), st
		}
		if last == 0 && canDrop != nil && canDrop(f.Start, f.End) {
			keep = keep[:len(keep)-1]
			dropped++
		}
		if len(keep) == 0 {
			continue
		}
		if n := len(out); n > 0 && bytes.Equal(out[n-1].End, f.Start) && slices.Equal(out[n-1].Seqs, keep) {
			out[n-1].End = f.End
			continue
		}
		out = append(out, Fragment{Start: f.Start, End: f.End, Seqs: keep})
	}
	return out, dropped
}
