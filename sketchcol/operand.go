package sketchcol

// Merge operands. FORMAT.md ("Operands") specifies their bytes; doc.go
// states the algebra they obey. Every operand decodes to one of the op
// types — setOp here, hllOp, bloomOp and cuckooOp in their own files —
// and every op maps a key's state (a sketch, or nil for a missing key) to
// a new one.

import (
	"encoding/binary"
	"fmt"

	"github.com/sievedb/sieve"
)

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
		switch b[0] {
		case kindPagedBloom:
			return parsePagedBloom(b)
		case kindPagedBloomDump:
			return nil, corruptf("a paged Bloom filter's dump is not a stored value")
		}
		return ParseBloom(b)
	case KindCMS:
		switch b[0] {
		case kindPagedCMS:
			return parsePagedCMS(b)
		case kindPagedCMSDump:
			return nil, corruptf("a paged Count-Min sketch's dump is not a stored value")
		}
		return ParseCMS(b)
	case KindTopK:
		switch b[0] {
		case kindPagedTopK:
			return parsePagedTopK(b)
		case kindPagedTopKDump:
			return nil, corruptf("a paged Top-K sketch's dump is not a stored value")
		}
		return ParseTopK(b)
	default:
		switch b[0] {
		case kindPagedCuckoo:
			return parsePagedCuckoo(b)
		case kindPagedCuckooDump:
			return nil, corruptf("a paged cuckoo filter's dump is not a stored value")
		}
		return ParseCuckoo(b)
	}
}

// ValidateValue checks a whole value of any kind (what Restore needs) and
// returns its kind. Malformed values return an error wrapping
// ErrCorruption.
func ValidateValue(value []byte) (Kind, error) {
	if len(value) > 0 && value[0] == kindPagedBloomDump {
		if _, err := parsePagedDump(value); err != nil {
			return KindNone, err
		}
		return KindBloom, nil
	}
	if k, ok, err := validateCountersDump(value); ok {
		return k, err
	}
	if len(value) > 0 && value[0] == kindPagedCuckooDump {
		if _, err := parseCuckooDump(value); err != nil {
			return KindNone, err
		}
		return KindCuckoo, nil
	}
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
	if dec := operandDecoders[b[0]]; dec != nil {
		return dec(b)
	}
	return nil, corruptf("not a sketch operand: %s (kind byte %#02x)", kindName(b[0]), b[0])
}

// operandDecoders decode the operands, by kind byte (FORMAT.md).
var operandDecoders = [256]func([]byte) (op, error){
	kindSet: decodeSetOp, kindHLLOp: decodeHLLOp, kindBloomOp: decodeBloomOp,
	kindCuckooOp: decodeCuckooOp, kindCMSOp: decodeCMSOp, kindTopKOp: decodeTopKOp,
	kindPagedBloomOp: decodePagedBloomOp, kindPagedCuckooOp: decodePagedCuckooOp, kindPagedCMSOp: decodePagedCMSOp, kindPagedTopKOp: decodePagedTopKOp,
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
	if len(value) > 0 && value[0] == kindPagedBloomDump {
		return nil, fmt.Errorf("%w: a paged Bloom filter's dump is restored with Store.Restore, not as an operand", ErrInvalidArgument)
	}
	if _, ok, _ := countersRestore(value); ok { // its pages are the key's too
		return nil, fmt.Errorf("%w: a paged Count-Min or Top-K sketch is restored with Store.Restore, not as an operand", ErrInvalidArgument)
	}
	if len(value) > 0 && (value[0] == kindPagedCuckooDump || value[0] == kindPagedCuckoo) {
		return nil, fmt.Errorf("%w: a paged cuckoo filter is restored with Store.Restore, not as an operand", ErrInvalidArgument)
	}
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

// opFlagSpec marks a Bloom or cuckoo operand that carries a geometry
// (without it, the defaults apply).
const opFlagSpec = 1 << 0

// fixedRecords splits the tail of an operand that is a uvarint count n and
// then exactly n records of width bytes each: it returns n and the records'
// bytes, and ok false when the count is malformed or disagrees with the
// length.
func fixedRecords(b []byte, width int) (n int, records []byte, ok bool) {
	c, k := binary.Uvarint(b)
	if k <= 0 || c != uint64(len(b)-k)/uint64(width) || (len(b)-k)%width != 0 {
		return 0, nil, false
	}
	return int(c), b[k:], true
}

// parseValue decodes cur, the stored value of a key that must exist and
// hold a sketch of kind, with parse: a missing key is sieve.ErrNotFound,
// another kind ErrWrongType.
func parseValue[T sketch](cur []byte, kind Kind, parse func([]byte) (T, error)) (T, error) {
	if cur == nil {
		var zero T
		return zero, sieve.ErrNotFound
	}
	if err := expectKind(cur, kind); err != nil {
		var zero T
		return zero, err
	}
	return parse(cur)
}

// valueOrNew is parseValue for a key that may be missing: then it returns
// the sketch create makes.
func valueOrNew[T sketch](cur []byte, kind Kind, parse func([]byte) (T, error), create func() (T, error)) (T, error) {
	if cur == nil {
		return create()
	}
	return parseValue(cur, kind, parse)
}

// first is the one answer of a command asked about one item.
func first(r []bool, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	return r[0], nil
}

// replyOn answers a command from cur, the value of a key that may be
// missing (then the answer is missing) and otherwise must hold a sketch of
// kind.
func replyOn[T sketch, R any](cur []byte, kind Kind, parse func([]byte) (T, error), missing R, answer func(T) R) (R, error) {
	if cur == nil {
		return missing, nil
	}
	v, err := parseValue(cur, kind, parse)
	if err != nil {
		var zero R
		return zero, err
	}
	return answer(v), nil
}

// existsAll is exists of each item.
func existsAll(exists func([]byte) bool, items [][]byte) []bool {
	out := make([]bool, len(items))
	for i, it := range items {
		out[i] = exists(it)
	}
	return out
}

// opHeader checks the head every sketch operand but the HLL's shares —
// kind and version bytes, then a flags byte whose only flag says that a
// geometry of specLen bytes follows — and splits off the geometry (nil
// when absent) from the records after it. what names the operand in
// errors.
func opHeader(b []byte, kind byte, specLen int, what string) (spec, rest []byte, err error) {
	if err := checkValueKind(b, kind); err != nil {
		return nil, nil, err
	}
	if len(b) < 3 || b[2]&^opFlagSpec != 0 {
		return nil, nil, corruptf("%s operand has no or unknown flags", what)
	}
	rest = b[3:]
	if b[2]&opFlagSpec == 0 {
		return nil, rest, nil
	}
	if len(rest) < specLen {
		return nil, nil, corruptf("%s operand geometry is cut off", what)
	}
	return rest[:specLen], rest[specLen:], nil
}

// appendOpHeader appends opHeader's head: kind, version and the flags byte,
// which says whether a geometry (custom) follows.
func appendOpHeader(dst []byte, kind byte, custom bool) []byte {
	var flags byte
	if custom {
		flags = opFlagSpec
	}
	return append(dst, kind, version1, flags)
}
