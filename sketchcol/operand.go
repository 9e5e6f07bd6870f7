package sketchcol

import (
	"encoding/binary"
	"math"
	"slices"
)

// Merge operands. FORMAT.md ("Operands") specifies their bytes; doc.go
// states the algebra they obey. Every operand decodes to one of the op
// types below, and every op maps a key's state (a sketch, or nil for a
// missing key) to a new one.

// sketch is a decoded value: *HLL, *ScalableBloom or *CuckooFilter.
type sketch interface {
	Kind() Kind
	// appendValue appends the value's canonical encoding (an HLL with a
	// freshly computed cached cardinality).
	appendValue(dst []byte) []byte
}

func (*HLL) Kind() Kind           { return KindHLL }
func (*ScalableBloom) Kind() Kind { return KindBloom }
func (*CuckooFilter) Kind() Kind  { return KindCuckoo }

func (h *HLL) appendValue(dst []byte) []byte {
	h.cardValid = false
	return appendHLL(dst, &h.reg, h.Count(), true)
}
func (b *ScalableBloom) appendValue(dst []byte) []byte { return b.appendBinary(dst) }
func (c *CuckooFilter) appendValue(dst []byte) []byte  { return c.appendBinary(dst) }

// decodeValue decodes a stored value of any kind.
func decodeValue(b []byte) (sketch, error) {
	k, err := KindOf(b)
	if err != nil {
		return nil, err
	}
	switch k {
	case KindHLL:
		return ParseHLL(b)
	case KindBloom:
		return ParseBloom(b)
	default:
		return ParseCuckoo(b)
	}
}

// ValidateValue checks a whole value of any kind (what Restore needs) and
// returns its kind. Malformed values return an error wrapping
// ErrCorruption.
func ValidateValue(value []byte) (Kind, error) {
	s, err := decodeValue(value)
	if err != nil {
		return KindNone, err
	}
	return s.Kind(), nil
}

// op is a decoded operand.
type op interface {
	// kind is the sketch kind the op applies to (KindNone for setOp,
	// which applies to any).
	kind() Kind
	// create returns the state the op creates on a missing key.
	create() (sketch, error)
	// apply applies the op to a state of its kind.
	apply(s sketch)
}

// applyOp is the one transition function: FullMerge folds it over the
// operands, and the in-memory reference of the property tests is the same
// fold one operation at a time. An op of another kind than the key's is
// dropped, as Redis refuses a WRONGTYPE command and leaves the value
// alone.
func applyOp(s sketch, o op) (sketch, error) {
	if so, ok := o.(*setOp); ok {
		return so.value, nil
	}
	if s == nil {
		var err error
		if s, err = o.create(); err != nil {
			return nil, err
		}
	}
	if s.Kind() == o.kind() {
		o.apply(s)
	}
	return s, nil
}

// decodeOperand decodes one operand of any kind.
func decodeOperand(b []byte) (op, error) {
	if len(b) == 0 {
		return nil, corruptf("empty operand")
	}
	switch b[0] {
	case kindSet:
		return decodeSetOp(b)
	case kindHLLOp:
		return decodeHLLOp(b)
	case kindBloomOp:
		return decodeBloomOp(b)
	case kindCuckooOp:
		return decodeCuckooOp(b)
	}
	return nil, corruptf("not a sketch operand: %s (kind byte %#02x)", kindName(b[0]), b[0])
}

// ---- set: replace the value ----

// setOp replaces the key's value, whatever it held (Restore).
type setOp struct{ value sketch }

func (*setOp) kind() Kind                { return KindNone }
func (o *setOp) create() (sketch, error) { return o.value, nil }
func (*setOp) apply(sketch)              {}

// SetOp returns an operand that replaces the key's value with value (a
// validated value of any kind): Restore written as a merge operand.
func SetOp(value []byte) ([]byte, error) {
	if _, err := ValidateValue(value); err != nil {
		return nil, err
	}
	return append([]byte{kindSet, version1}, value...), nil
}

func appendSetOp(dst []byte, s sketch) []byte {
	return s.appendValue(append(dst, kindSet, version1))
}

func decodeSetOp(b []byte) (op, error) {
	if err := checkValueKind(b, kindSet); err != nil {
		return nil, err
	}
	v, err := decodeValue(b[2:])
	if err != nil {
		return nil, err
	}
	return &setOp{value: v}, nil
}

// ---- HLL: raise registers ----

// hllOp raises registers to at least the given ranks: PFADD's
// (index, rank) pairs, or PFMERGE's union of source registers. Applying
// it is a register-wise max, so hllOps fold by max in any grouping.
type hllOp struct {
	pairs []hllPair // sorted by index, one per index
}

type hllPair struct {
	index uint16
	rank  uint8
}

const (
	hllOpFormPairs = 0 // uvarint n, n × 3 bytes: index | rank<<14, little-endian
	hllOpFormValue = 1 // a Redis HLL value (any valid one; its cache is ignored)
)

func (*hllOp) kind() Kind                { return KindHLL }
func (o *hllOp) create() (sketch, error) { return NewHLL(), nil }
func (o *hllOp) apply(s sketch) {
	h := s.(*HLL)
	for _, p := range o.pairs {
		h.set(int(p.index), p.rank)
	}
}

// newHLLOp returns the op of the non-zero registers of reg.
func newHLLOp(reg *[hllRegisters]uint8) *hllOp {
	o := &hllOp{}
	for i, r := range reg {
		if r != 0 {
			o.pairs = append(o.pairs, hllPair{uint16(i), r})
		}
	}
	return o
}

// appendHLLOp appends the smaller of the two forms (pairs on a tie).
func appendHLLOp(dst []byte, o *hllOp) []byte {
	dst = append(dst, kindHLLOp, version1)
	pairsLen := len(binary.AppendUvarint(nil, uint64(len(o.pairs)))) + 3*len(o.pairs)
	if len(o.pairs) > 64 {
		var reg [hllRegisters]uint8
		for _, p := range o.pairs {
			reg[p.index] = p.rank
		}
		at := len(dst)
		dst = appendHLL(append(dst, hllOpFormValue), &reg, 0, false)
		if len(dst)-at-1 < pairsLen {
			return dst
		}
		dst = dst[:at]
	}
	dst = append(dst, hllOpFormPairs)
	dst = binary.AppendUvarint(dst, uint64(len(o.pairs)))
	for _, p := range o.pairs {
		w := uint32(p.index) | uint32(p.rank)<<hllP
		dst = append(dst, byte(w), byte(w>>8), byte(w>>16))
	}
	return dst
}

func decodeHLLOp(b []byte) (op, error) {
	if err := checkValueKind(b, kindHLLOp); err != nil {
		return nil, err
	}
	if len(b) < 3 {
		return nil, corruptf("HLL operand has no form byte")
	}
	switch b[2] {
	case hllOpFormValue:
		var reg [hllRegisters]uint8
		if _, err := decodeHLLRegisters(b[3:], &reg); err != nil {
			return nil, err
		}
		return newHLLOp(&reg), nil
	case hllOpFormPairs:
	default:
		return nil, corruptf("HLL operand has unknown form %d", b[2])
	}
	n, k := binary.Uvarint(b[3:])
	if k <= 0 || n > hllRegisters {
		return nil, corruptf("HLL operand has a bad pair count")
	}
	body := b[3+k:]
	if uint64(len(body)) != 3*n {
		return nil, corruptf("HLL operand has %d bytes for %d pairs, want %d", len(body), n, 3*n)
	}
	o := &hllOp{pairs: make([]hllPair, n)}
	for i := range o.pairs {
		w := uint32(body[3*i]) | uint32(body[3*i+1])<<8 | uint32(body[3*i+2])<<16
		idx, rank := w&(hllRegisters-1), w>>hllP
		switch {
		case rank < 1 || rank > hllMaxRank:
			return nil, corruptf("HLL operand pair %d has rank %d, want 1..%d", i, rank, hllMaxRank)
		case i > 0 && idx <= uint32(o.pairs[i-1].index):
			return nil, corruptf("HLL operand pair %d has index %d, not above the previous %d", i, idx, o.pairs[i-1].index)
		}
		o.pairs[i] = hllPair{uint16(idx), uint8(rank)}
	}
	return o, nil
}

// foldHLLOps is the partial merge of HLL ops: the max of their registers.
func foldHLLOps(ops []op) *hllOp {
	var reg [hllRegisters]uint8
	for _, o := range ops {
		for _, p := range o.(*hllOp).pairs {
			reg[p.index] = max(reg[p.index], p.rank)
		}
	}
	return newHLLOp(&reg)
}

// hllOpOf returns the op of elements: their positions, one pair per
// register with the highest rank.
func hllOpOf(elems [][]byte) *hllOp {
	o := &hllOp{pairs: make([]hllPair, 0, len(elems))}
	for _, e := range elems {
		i, r := hllPosition(e)
		o.pairs = append(o.pairs, hllPair{uint16(i), r})
	}
	slices.SortFunc(o.pairs, func(a, b hllPair) int {
		if a.index != b.index {
			return int(a.index) - int(b.index)
		}
		return int(b.rank) - int(a.rank)
	})
	o.pairs = slices.CompactFunc(o.pairs, func(a, b hllPair) bool { return a.index == b.index })
	return o
}

// ---- Bloom: ordered adds ----

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
	b := s.(*ScalableBloom)
	for _, h := range o.hashes {
		_, _ = b.addHash(h, true) // with overfill, never an error
	}
}

const opFlagSpec = 1 << 0 // the operand carries a geometry (else: the defaults)

func appendBloomOp(dst []byte, o *bloomOp) []byte {
	le := binary.LittleEndian
	spec := o.spec.normalized()
	custom := spec != DefaultBloomSpec()
	var flags byte
	if custom {
		flags |= opFlagSpec
	}
	dst = append(dst, kindBloomOp, version1, flags)
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
	if err := checkValueKind(b, kindBloomOp); err != nil {
		return nil, err
	}
	if len(b) < 3 || b[2]&^opFlagSpec != 0 {
		return nil, corruptf("Bloom operand has no or unknown flags")
	}
	le := binary.LittleEndian
	o := &bloomOp{spec: DefaultBloomSpec()}
	rest := b[3:]
	if b[2]&opFlagSpec != 0 {
		if len(rest) < bloomOpSpecLen || rest[18]&^bloomFlagNonScaling != 0 {
			return nil, corruptf("Bloom operand geometry is cut off or has unknown flags")
		}
		o.spec = BloomSpec{
			ErrorRate:  math.Float64frombits(le.Uint64(rest)),
			Capacity:   int64(min(le.Uint64(rest[8:]), math.MaxInt64)),
			Expansion:  int(le.Uint16(rest[16:])),
			NonScaling: rest[18] != 0,
		}
		if err := o.spec.Validate(); err != nil {
			return nil, corruptf("Bloom operand geometry: %v", err)
		}
		if o.spec != o.spec.normalized() {
			return nil, corruptf("non-scaling Bloom operand has expansion %d, want 0", o.spec.Expansion)
		}
		rest = rest[bloomOpSpecLen:]
	}
	n, k := binary.Uvarint(rest)
	if k <= 0 || n != uint64(len(rest)-k)/8 || uint64(len(rest)-k)%8 != 0 {
		return nil, corruptf("Bloom operand has a bad hash count or length")
	}
	rest = rest[k:]
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

// ---- cuckoo: ordered add/addnx/delete records ----

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
func (o *cuckooOp) apply(s sketch) {
	c := s.(*CuckooFilter)
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
	var flags byte
	if custom {
		flags |= opFlagSpec
	}
	dst = append(dst, kindCuckooOp, version1, flags)
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
	if err := checkValueKind(b, kindCuckooOp); err != nil {
		return nil, err
	}
	if len(b) < 3 || b[2]&^opFlagSpec != 0 {
		return nil, corruptf("cuckoo operand has no or unknown flags")
	}
	le := binary.LittleEndian
	o := &cuckooOp{spec: DefaultCuckooSpec()}
	rest := b[3:]
	if b[2]&opFlagSpec != 0 {
		if len(rest) < cuckooOpSpecLen {
			return nil, corruptf("cuckoo operand geometry is cut off")
		}
		o.spec = CuckooSpec{
			Capacity:      int64(min(le.Uint64(rest), math.MaxInt64)),
			BucketSize:    int(rest[8]),
			MaxIterations: int(le.Uint16(rest[9:])),
			Expansion:     int(le.Uint16(rest[11:])),
		}
		if err := o.spec.Validate(); err != nil {
			return nil, corruptf("cuckoo operand geometry: %v", err)
		}
		if o.spec != o.spec.normalized() {
			return nil, corruptf("cuckoo operand expansion %d is not a power of two", o.spec.Expansion)
		}
		rest = rest[cuckooOpSpecLen:]
	}
	n, k := binary.Uvarint(rest)
	if k <= 0 || n != uint64(len(rest)-k)/9 || uint64(len(rest)-k)%9 != 0 {
		return nil, corruptf("cuckoo operand has a bad record count or length")
	}
	rest = rest[k:]
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
