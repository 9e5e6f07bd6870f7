package sketchcol

import (
	"encoding/binary"
	"math"
)

// Top-K operands are ordered lists of (increment, item); FORMAT.md,
// "Top-K operand".

// topKOp adds each item its increment, in order. On a missing key it first
// creates a sketch of spec. HeavyKeeper's adds do not commute (the decay
// and the heap depend on the order), so Top-K ops fold by concatenation.
type topKOp struct {
	spec TopKSpec
	recs []topKRecord
}

type topKRecord struct {
	incr uint32
	item []byte
}

func (*topKOp) kind() Kind                { return KindTopK }
func (o *topKOp) create() (sketch, error) { return NewTopK(o.spec) }
func (o *topKOp) apply(s sketch) {
	t, ok := s.(*TopK)
	if !ok {
		return // a paged sketch: an operand of a sketch stored whole is dropped
	}
	for _, r := range o.recs {
		t.Add(r.item, r.incr)
	}
}

const topKOpSpecLen = 4 + 4 + 4 + 8

func appendTopKOp(dst []byte, o *topKOp) []byte {
	le := binary.LittleEndian
	custom := o.spec != DefaultTopKSpec()
	dst = appendOpHeader(dst, kindTopKOp, custom)
	if custom {
		dst = le.AppendUint32(dst, uint32(o.spec.K))
		dst = le.AppendUint32(dst, uint32(o.spec.Width))
		dst = le.AppendUint32(dst, uint32(o.spec.Depth))
		dst = le.AppendUint64(dst, math.Float64bits(o.spec.Decay))
	}
	dst = binary.AppendUvarint(dst, uint64(len(o.recs)))
	for _, r := range o.recs {
		dst = binary.AppendUvarint(dst, uint64(r.incr))
		dst = append(binary.AppendUvarint(dst, uint64(len(r.item))), r.item...)
	}
	return dst
}

func decodeTopKOp(b []byte) (op, error) {
	spec, rest, err := opHeader(b, kindTopKOp, topKOpSpecLen, "Top-K")
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	o := &topKOp{spec: DefaultTopKSpec()}
	if spec != nil {
		o.spec = TopKSpec{K: int(le.Uint32(spec)), Width: int(le.Uint32(spec[4:])), Depth: int(le.Uint32(spec[8:])),
			Decay: math.Float64frombits(le.Uint64(spec[12:]))}
		if err := o.spec.Validate(); err != nil {
			return nil, corruptf("Top-K operand geometry: %v", err)
		}
		if o.spec == DefaultTopKSpec() {
			return nil, corruptf("Top-K operand spells out the default geometry")
		}
	}
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(len(rest)-k)/2 {
		return nil, corruptf("Top-K operand has a bad record count")
	}
	rest = rest[k:]
	o.recs = make([]topKRecord, n)
	for i := range o.recs {
		incr, k1 := binary.Uvarint(rest)
		if k1 <= 0 || incr > maxTopKIncr {
			return nil, corruptf("Top-K operand record %d has a bad increment", i)
		}
		l, k2 := binary.Uvarint(rest[k1:])
		if k2 <= 0 || l > uint64(len(rest)-k1-k2) {
			return nil, corruptf("Top-K operand record %d has a bad item length", i)
		}
		o.recs[i] = topKRecord{incr: uint32(incr), item: rest[k1+k2 : k1+k2+int(l)]}
		rest = rest[k1+k2+int(l):]
	}
	if len(rest) != 0 {
		return nil, corruptf("Top-K operand has %d bytes after its records", len(rest))
	}
	return o, nil
}

// foldTopKOps is the partial merge of Top-K ops: the first op's geometry
// and all records in order.
func foldTopKOps(ops []op) *topKOp {
	out := &topKOp{spec: ops[0].(*topKOp).spec}
	for _, o := range ops {
		out.recs = append(out.recs, o.(*topKOp).recs...)
	}
	return out
}
