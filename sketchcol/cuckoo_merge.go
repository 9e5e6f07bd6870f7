package sketchcol

import (
	"encoding/binary"
	"math"
)

// Cuckoo operands are ordered add/addnx/delete records; FORMAT.md,
// "Cuckoo operand".

// cuckooOp applies records in order. On a missing key it first creates a
// filter of spec. Records do not commute (an add then a delete is not a
// delete then an add), so cuckoo ops fold by concatenation.
type cuckooOp struct {
	spec CuckooSpec
	recs []cuckooRecord
}

type cuckooRecord struct {
	op   byte // cuckooAdd, cuckooAddNX, cuckooDel
	hash uint64
}

const (
	cuckooAdd   = 1
	cuckooAddNX = 2
	cuckooDel   = 3
)

func (*cuckooOp) kind() Kind                { return KindCuckoo }
func (o *cuckooOp) create() (sketch, error) { return NewCuckooFilter(o.spec) }

// apply applies the records to a filter stored whole; a paged filter's
// header is left alone (its writers place items under the key's lock).
func (o *cuckooOp) apply(s sketch) {
	c, ok := s.(*CuckooFilter)
	if !ok {
		return
	}
	for _, r := range o.recs {
		applyCuckooRecord(c, r)
	}
}

// applyCuckooRecord applies one record. A blind add that finds the filter
// full cannot fail its writer any more: it is counted in dropped (CF.INFO's
// ItemsDropped) so the loss is visible.
func applyCuckooRecord(c *CuckooFilter, r cuckooRecord) {
	switch r.op {
	case cuckooAddNX:
		if c.existsHash(r.hash) {
			return
		}
		fallthrough
	case cuckooAdd:
		if c.addHash(r.hash) != nil {
			c.dropped++
		}
	case cuckooDel:
		c.deleteHash(r.hash)
	}
}

const cuckooOpSpecLen = 8 + 1 + 2 + 2

func appendCuckooOp(dst []byte, o *cuckooOp) []byte {
	le := binary.LittleEndian
	spec := o.spec.normalized()
	custom := spec != DefaultCuckooSpec()
	dst = appendOpHeader(dst, kindCuckooOp, custom)
	if custom {
		dst = le.AppendUint64(dst, uint64(spec.Capacity))
		dst = append(dst, byte(spec.BucketSize))
		dst = le.AppendUint16(dst, uint16(spec.MaxIterations))
		dst = le.AppendUint16(dst, uint16(spec.Expansion))
	}
	dst = binary.AppendUvarint(dst, uint64(len(o.recs)))
	for _, r := range o.recs {
		dst = le.AppendUint64(append(dst, r.op), r.hash)
	}
	return dst
}

func decodeCuckooOp(b []byte) (op, error) {
	spec, rest, err := opHeader(b, kindCuckooOp, cuckooOpSpecLen, "cuckoo")
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	o := &cuckooOp{spec: DefaultCuckooSpec()}
	if spec != nil {
		o.spec = CuckooSpec{
			Capacity:      int64(min(le.Uint64(spec), math.MaxInt64)),
			BucketSize:    int(spec[8]),
			MaxIterations: int(le.Uint16(spec[9:])),
			Expansion:     int(le.Uint16(spec[11:])),
		}
		if err := o.spec.Validate(); err != nil {
			return nil, corruptf("cuckoo operand geometry: %v", err)
		}
		if o.spec != o.spec.normalized() {
			return nil, corruptf("cuckoo operand expansion %d is not a power of two", o.spec.Expansion)
		}
	}
	n, rest, ok := fixedRecords(rest, 9)
	if !ok {
		return nil, corruptf("cuckoo operand has a bad record count or length")
	}
	o.recs = make([]cuckooRecord, n)
	for i := range o.recs {
		r := cuckooRecord{op: rest[9*i], hash: le.Uint64(rest[9*i+1:])}
		if r.op < cuckooAdd || r.op > cuckooDel {
			return nil, corruptf("cuckoo operand record %d has unknown kind %d", i, r.op)
		}
		o.recs[i] = r
	}
	return o, nil
}

// foldCuckooOps is the partial merge of cuckoo ops: the first op's
// geometry and all records in order.
func foldCuckooOps(ops []op) *cuckooOp {
	out := &cuckooOp{spec: ops[0].(*cuckooOp).spec}
	for _, o := range ops {
		out.recs = append(out.recs, o.(*cuckooOp).recs...)
	}
	return out
}
