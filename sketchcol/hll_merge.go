package sketchcol

import (
	"encoding/binary"
	"slices"
)

// HLL operands raise registers; FORMAT.md, "HLL operand".

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
	pairsLen := uvarintLen(uint64(len(o.pairs))) + 3*len(o.pairs)
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
	pairs, err := appendHLLOpPairs(nil, b[3:])
	if err != nil {
		return nil, err
	}
	return &hllOp{pairs: pairs}, nil
}

// appendHLLOpPairs appends to dst the pairs of body, an HLL operand of
// the pairs form from its pair count on, and checks them.
func appendHLLOpPairs(dst []hllPair, body []byte) ([]hllPair, error) {
	n, k := binary.Uvarint(body)
	if k <= 0 || n > hllRegisters {
		return dst, corruptf("HLL operand has a bad pair count")
	}
	body = body[k:]
	if uint64(len(body)) != 3*n {
		return dst, corruptf("HLL operand has %d bytes for %d pairs, want %d", len(body), n, 3*n)
	}
	start := len(dst)
	dst = slices.Grow(dst, int(n))
	for i := range int(n) {
		w := uint32(body[3*i]) | uint32(body[3*i+1])<<8 | uint32(body[3*i+2])<<16
		idx, rank := w&(hllRegisters-1), w>>hllP
		switch {
		case rank < 1 || rank > hllMaxRank:
			return dst[:start], corruptf("HLL operand pair %d has rank %d, want 1..%d", i, rank, hllMaxRank)
		case i > 0 && idx <= uint32(dst[start+i-1].index):
			return dst[:start], corruptf("HLL operand pair %d has index %d, not above the previous %d", i, idx, dst[start+i-1].index)
		}
		dst = append(dst, hllPair{uint16(idx), uint8(rank)})
	}
	return dst, nil
}

// uvarintLen is the length of x's uvarint encoding.
func uvarintLen(x uint64) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}

// maxFoldPairs is the most pairs foldHLLOps merges by sorting.
const maxFoldPairs = 1024

// foldHLLPairOperands is PartialMerge of operands that are all HLL
// operands of the pairs form, without decoding each into an op: their
// pairs in one buffer, sorted, one per index, encoded. It declines
// (ok=false) on anything else, more than maxFoldPairs pairs or a
// malformed operand, for PartialMerge's general path to handle; when it
// does not, its result is the general path's.
func foldHLLPairOperands(operands [][]byte) ([]byte, bool) {
	var buf [64]hllPair
	f := hllOp{pairs: buf[:0]}
	var ok bool
	if f.pairs, ok = appendPairOperands(f.pairs, operands); !ok {
		return nil, false
	}
	f.pairs = sortedHLLPairs(f.pairs)
	return appendHLLOp(nil, &f), true
}

// appendPairOperands appends to dst the pairs of operands, each an HLL
// operand of the pairs form (their concatenation: not sorted across
// operands). ok=false on any other operand, a malformed one, or more than
// maxFoldPairs pairs in all.
func appendPairOperands(dst []hllPair, operands [][]byte) ([]hllPair, bool) {
	for _, raw := range operands {
		if len(raw) < 3 || raw[0] != kindHLLOp || raw[1] != version1 || raw[2] != hllOpFormPairs {
			return dst, false
		}
		var err error
		if dst, err = appendHLLOpPairs(dst, raw[3:]); err != nil || len(dst) > maxFoldPairs {
			return dst, false
		}
	}
	return dst, true
}

// foldHLLOps is the partial merge of HLL ops: the max of their registers.
// Few pairs (the operands of single PFADDs) are merged by sorting them,
// without the pass over 16384 registers; the result is the same op.
func foldHLLOps(ops []op) *hllOp {
	n := 0
	for _, o := range ops {
		n += len(o.(*hllOp).pairs)
	}
	if n <= maxFoldPairs {
		f := &hllOp{pairs: make([]hllPair, 0, n)}
		for _, o := range ops {
			f.pairs = append(f.pairs, o.(*hllOp).pairs...)
		}
		sortHLLPairs(f)
		return f
	}
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
	sortHLLPairs(o)
	return o
}

// sortHLLPairs sorts o's pairs by index and keeps the highest rank of each.
func sortHLLPairs(o *hllOp) { o.pairs = sortedHLLPairs(o.pairs) }

// sortedHLLPairs is sortHLLPairs of a slice (which it reorders in place):
// a caller's stack buffer stays on the stack.
func sortedHLLPairs(p []hllPair) []hllPair {
	slices.SortFunc(p, func(a, b hllPair) int {
		if a.index != b.index {
			return int(a.index) - int(b.index)
		}
		return int(b.rank) - int(a.rank)
	})
	return slices.CompactFunc(p, func(a, b hllPair) bool { return a.index == b.index })
}
