package sketchcol

import (
	"fmt"
	"reflect"

	"github.com/sievedb/sieve"
)

// Merger is the merge operator of the sketch column family. It is
// stateless, deterministic and safe for concurrent use. The package doc
// states the algebra it implements.
type Merger struct{}

var _ sieve.Merger = Merger{}

// MergerName is recorded in the manifest for the sketch column family.
const MergerName = "sieve.sketchcol"

// Name returns MergerName.
func (Merger) Name() string { return MergerName }

// FullMerge applies operands (oldest first) to base, or to a missing key
// when hasBase is false, and returns the collapsed value: an HLL in
// canonical Redis encoding with a valid cached cardinality, a Bloom or a
// cuckoo value. A malformed base or operand fails this key only, with an
// error wrapping ErrCorruption. An operand for another kind of sketch
// than the key holds is dropped (see the package doc, "Wrong types").
func (Merger) FullMerge(key, base []byte, hasBase bool, operands [][]byte) ([]byte, error) {
	if v, ok := fullMergeSparseHLL(base, hasBase, operands); ok {
		return v, nil // PFADDs' keys, the common case
	}
	return fullMergeGeneral(key, base, hasBase, operands)
}

// fullMergeGeneral is FullMerge by decoding the base and every operand.
func fullMergeGeneral(key, base []byte, hasBase bool, operands [][]byte) ([]byte, error) {
	var s sketch
	if hasBase {
		var err error
		if s, err = decodeValue(base); err != nil {
			return nil, fmt.Errorf("sketchcol: key %q: base value: %w", clip(key), err)
		}
	}
	for i, raw := range operands {
		o, err := decodeOperand(raw)
		if err != nil {
			return nil, fmt.Errorf("sketchcol: key %q: operand %d of %d: %w", clip(key), i+1, len(operands), err)
		}
		if s, err = applyOp(s, o); err != nil {
			return nil, fmt.Errorf("sketchcol: key %q: operand %d of %d: %w", clip(key), i+1, len(operands), err)
		}
	}
	if s == nil {
		return nil, fmt.Errorf("sketchcol: key %q: full merge of no base and no operands", clip(key))
	}
	return s.appendValue(nil), nil
}

// PartialMerge combines adjacent operands (oldest first) into one:
//
//   - from the newest set operand on, everything collapses into one set
//     operand of the resulting value (what came before it is dead);
//   - otherwise operands of one kind fold: HLL by register-wise max,
//     Bloom by ordered union of hashes, cuckoo by concatenation.
//
// It declines (ok=false) when an operand is malformed — so the error
// surfaces on reads of that key alone — or when operands of different
// kinds meet without a set operand (which of them applies depends on the
// base, unknown here).
func (Merger) PartialMerge(key []byte, operands [][]byte) ([]byte, bool) {
	if len(operands) == 0 {
		return nil, false
	}
	if v, ok := foldHLLPairOperands(operands); ok {
		return v, true // PFADDs' operands, the common case
	}
	return partialMergeOps(operands)
}

// partialMergeOps is PartialMerge by decoding every operand.
func partialMergeOps(operands [][]byte) ([]byte, bool) {
	ops := make([]op, len(operands))
	lastSet := -1
	for i, raw := range operands {
		o, err := decodeOperand(raw)
		if err != nil {
			return nil, false
		}
		ops[i] = o
		if _, ok := o.(*setOp); ok {
			lastSet = i
		}
	}
	if lastSet >= 0 {
		var s sketch
		for _, o := range ops[lastSet:] {
			var err error
			if s, err = applyOp(s, o); err != nil {
				return nil, false
			}
		}
		return appendSetOp(nil, s), true
	}
	k := ops[0].kind()
	for _, o := range ops[1:] {
		if o.kind() != k || reflect.TypeOf(o) != reflect.TypeOf(ops[0]) { // a paged op and a legacy one of one kind do not fold
			return nil, false
		}
	}
	switch ops[0].(type) {
	case *pagedBloomOp:
		return appendPagedBloomOp(nil, foldPagedBloomOps(ops)), true
	case *pagedCuckooOp:
		return appendPagedCuckooOp(nil, foldPagedCuckooOps(ops)), true
	case *pagedCMSOp:
		return appendPagedCMSOp(nil, foldPagedCMSOps(ops)), true
	case *pagedTopKOp:
		return appendPagedTopKOp(nil, foldPagedTopKOps(ops)), true
	}
	switch k {
	case KindHLL:
		return appendHLLOp(nil, foldHLLOps(ops)), true
	case KindBloom:
		return appendBloomOp(nil, foldBloomOps(ops)), true
	case KindCuckoo:
		return appendCuckooOp(nil, foldCuckooOps(ops)), true
	case KindCMS:
		return appendCMSOp(nil, foldCMSOps(ops)), true
	case KindTopK:
		return appendTopKOp(nil, foldTopKOps(ops)), true
	}
	return nil, false
}

// clip shortens a key for an error message.
func clip(key []byte) []byte {
	if len(key) > 64 {
		return key[:64]
	}
	return key
}
