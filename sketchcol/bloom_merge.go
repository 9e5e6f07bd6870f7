package sketchcol

import (
	"encoding/binary"
	"math"
)

// Bloom operands add item hashes in order; FORMAT.md, "Bloom operand".

// bloomOp adds item hashes in order, each with BF.ADD's rule (skipped when
// possibly present). On a missing key it first creates a filter of spec:
// the RESERVE's geometry, or the defaults for an add. Its hashes are kept
// in order, without repeats: a later repeat of a hash is a no-op however
// the ops are grouped, but the order of distinct hashes decides which
// sub-filter takes each and what the count is.
type bloomOp struct {
	spec   BloomSpec
	hashes []uint64
}

func (*bloomOp) kind() Kind                { return KindBloom }
func (o *bloomOp) create() (sketch, error) { return NewScalableBloom(o.spec) }
func (o *bloomOp) apply(s sketch) {
	b, ok := s.(*ScalableBloom)
	if !ok {
		return // a paged filter: blind adds of the single-value encoding do not apply
	}
	for _, h := range o.hashes {
		_, _ = b.addHash(h, true) // with overfill, never an error
	}
}

func appendBloomOp(dst []byte, o *bloomOp) []byte {
	le := binary.LittleEndian
	spec := o.spec.normalized()
	custom := spec != DefaultBloomSpec()
	dst = appendOpHeader(dst, kindBloomOp, custom)
	if custom {
		dst = le.AppendUint64(dst, math.Float64bits(spec.ErrorRate))
		dst = le.AppendUint64(dst, uint64(spec.Capacity))
		dst = le.AppendUint16(dst, uint16(spec.Expansion))
		var sf byte
		if spec.NonScaling {
			sf = bloomFlagNonScaling
		}
		dst = append(dst, sf)
	}
	dst = binary.AppendUvarint(dst, uint64(len(o.hashes)))
	for _, h := range o.hashes {
		dst = le.AppendUint64(dst, h)
	}
	return dst
}

const bloomOpSpecLen = 8 + 8 + 2 + 1

func decodeBloomOp(b []byte) (op, error) {
	spec, rest, err := opHeader(b, kindBloomOp, bloomOpSpecLen, "Bloom")
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	o := &bloomOp{spec: DefaultBloomSpec()}
	if spec != nil {
		if spec[18]&^bloomFlagNonScaling != 0 {
			return nil, corruptf("Bloom operand geometry has unknown flags")
		}
		o.spec = BloomSpec{
			ErrorRate:  math.Float64frombits(le.Uint64(spec)),
			Capacity:   int64(min(le.Uint64(spec[8:]), math.MaxInt64)),
			Expansion:  int(le.Uint16(spec[16:])),
			NonScaling: spec[18] != 0,
		}
		if err := o.spec.Validate(); err != nil {
			return nil, corruptf("Bloom operand geometry: %v", err)
		}
		if o.spec != o.spec.normalized() {
			return nil, corruptf("non-scaling Bloom operand has expansion %d, want 0", o.spec.Expansion)
		}
	}
	n, rest, ok := fixedRecords(rest, 8)
	if !ok {
		return nil, corruptf("Bloom operand has a bad hash count or length")
	}
	o.hashes = make([]uint64, n)
	for i := range o.hashes {
		o.hashes[i] = le.Uint64(rest[8*i:])
	}
	return o, nil
}

// foldBloomOps is the partial merge of Bloom ops: the first op's
// geometry (it is the one that creates a missing key; the others then
// find it present), and the hashes in order without repeats.
func foldBloomOps(ops []op) *bloomOp {
	out := &bloomOp{spec: ops[0].(*bloomOp).spec}
	n := 0
	for _, o := range ops {
		n += len(o.(*bloomOp).hashes)
	}
	seen := make(map[uint64]struct{}, n)
	out.hashes = make([]uint64, 0, n)
	for _, o := range ops {
		for _, h := range o.(*bloomOp).hashes {
			if _, dup := seen[h]; !dup {
				seen[h] = struct{}{}
				out.hashes = append(out.hashes, h)
			}
		}
	}
	return out
}
