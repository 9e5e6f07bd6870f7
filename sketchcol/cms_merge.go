package sketchcol

import (
	"encoding/binary"
	"slices"
)

// Count-Min operands are sets of (item hash, increment); FORMAT.md,
// "Count-Min operand".

// cmsOp adds each increment to its item's counters (and to the total). On
// a missing key it first creates a sketch of spec. Saturating addition of
// non-negative increments is associative and commutative, so cms ops fold
// by summing the increments of equal hashes, in any order: a fold is exact.
type cmsOp struct {
	spec CMSSpec
	recs []cmsRecord
}

type cmsRecord struct {
	hash, incr uint64
}

func (*cmsOp) kind() Kind                { return KindCMS }
func (o *cmsOp) create() (sketch, error) { return NewCMS(o.spec) }
func (o *cmsOp) apply(s sketch) {
	c, ok := s.(*CountMinSketch)
	if !ok {
		return // a paged sketch: an operand of a sketch stored whole is dropped
	}
	for _, r := range o.recs {
		c.incrHash(r.hash, r.incr)
	}
}

const cmsOpSpecLen = 8

func appendCMSOp(dst []byte, o *cmsOp) []byte {
	le := binary.LittleEndian
	custom := o.spec != DefaultCMSSpec()
	dst = appendOpHeader(dst, kindCMSOp, custom)
	if custom {
		dst = le.AppendUint32(dst, uint32(o.spec.Width))
		dst = le.AppendUint32(dst, uint32(o.spec.Depth))
	}
	dst = binary.AppendUvarint(dst, uint64(len(o.recs)))
	for _, r := range o.recs {
		dst = le.AppendUint64(le.AppendUint64(dst, r.hash), r.incr)
	}
	return dst
}

func decodeCMSOp(b []byte) (op, error) {
	spec, rest, err := opHeader(b, kindCMSOp, cmsOpSpecLen, "Count-Min")
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	o := &cmsOp{spec: DefaultCMSSpec()}
	if spec != nil {
		o.spec = CMSSpec{Width: int(le.Uint32(spec)), Depth: int(le.Uint32(spec[4:]))}
		if err := o.spec.Validate(); err != nil {
			return nil, corruptf("Count-Min operand geometry: %v", err)
		}
		if o.spec == DefaultCMSSpec() {
			return nil, corruptf("Count-Min operand spells out the default geometry")
		}
	}
	n, rest, ok := fixedRecords(rest, 16)
	if !ok {
		return nil, corruptf("Count-Min operand has a bad record count or length")
	}
	o.recs = make([]cmsRecord, n)
	for i := range o.recs {
		o.recs[i] = cmsRecord{hash: le.Uint64(rest[16*i:]), incr: le.Uint64(rest[16*i+8:])}
	}
	return o, nil
}

// foldCMSOps is the partial merge of Count-Min ops: the first op's
// geometry (after it the key exists) and the increments summed per hash
// (saturating), sorted by hash.
func foldCMSOps(ops []op) *cmsOp {
	out := &cmsOp{spec: ops[0].(*cmsOp).spec}
	for _, o := range ops {
		out.recs = append(out.recs, o.(*cmsOp).recs...)
	}
	out.recs = sumCMSRecords(out.recs)
	return out
}

// sumCMSRecords sorts records by hash and sums the increments of equal
// hashes (saturating at 2⁶⁴−1, which a counter reaches as 2³²−1 anyway
// and the total as 2⁶⁴−1).
func sumCMSRecords(recs []cmsRecord) []cmsRecord {
	slices.SortFunc(recs, func(a, b cmsRecord) int {
		switch {
		case a.hash < b.hash:
			return -1
		case a.hash > b.hash:
			return 1
		}
		return 0
	})
	out := recs[:0]
	for _, r := range recs {
		if n := len(out); n > 0 && out[n-1].hash == r.hash {
			out[n-1].incr = satAdd(out[n-1].incr, r.incr)
			continue
		}
		out = append(out, r)
	}
	return out
}
