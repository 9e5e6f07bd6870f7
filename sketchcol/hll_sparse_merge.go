package sketchcol

import "slices"

// The full merge of the keys PFADDs write: a sparse HLL (or none) and a
// few operands of the pairs form. The general path (Merger.FullMerge)
// decodes the base into 16384 registers, applies the operands, runs the
// estimator's histogram over all registers and encodes them again: about
// 40 KiB of memory touched for a sketch of a few dozen registers, at every
// flush and compaction of the key and at every read of it with operands
// pending. This path works on the non-zero registers alone and produces
// the same bytes (the canonical encoding with a valid cached cardinality,
// a function of the registers); it declines whenever the general path
// would do anything else (a dense or malformed base, another kind of
// value or operand, registers above 32, a result too long for sparse),
// and the general path then runs.

// maxSparseMergePairs bounds the non-zero registers this path handles:
// past it a sparse value is near its 3000-byte limit and the general path
// costs no more.
const maxSparseMergePairs = 4096

// fullMergeSparseHLL returns FullMerge's result for base (hasBase false:
// a missing key) and operands, or ok=false to leave them to the general
// path.
func fullMergeSparseHLL(base []byte, hasBase bool, operands [][]byte) ([]byte, bool) {
	if !hasBase && len(operands) == 0 {
		return nil, false // the general path's error
	}
	var opBuf [64]hllPair
	ops := hllOp{pairs: opBuf[:0]}
	var ok bool
	if ops.pairs, ok = appendPairOperands(ops.pairs, operands); !ok {
		return nil, false
	}
	if len(operands) > 1 {
		ops.pairs = sortedHLLPairs(ops.pairs)
	}
	var baseBuf [128]hllPair
	regs := baseBuf[:0]
	if hasBase {
		if regs, ok = sparsePairs(regs, base); !ok {
			return nil, false
		}
	}
	var outBuf [192]hllPair
	out := mergeHLLPairs(outBuf[:0], regs, ops.pairs)
	return appendSparseHLLPairs(nil, out)
}

// sparsePairs appends to dst the non-zero registers of v, a sparse HLL
// value, as sorted pairs; ok=false if v is anything else, is malformed or
// has more than maxSparseMergePairs of them.
func sparsePairs(dst []hllPair, v []byte) ([]hllPair, bool) {
	hdr, err := parseHLLHeader(v) // its "HYLL" is the kind byte too
	if err != nil || hdr.encoding != hllEncSparse {
		return dst, false
	}
	ok := true
	err = walkSparse(v[hllHeaderLen:], func(start, n int, val uint8) {
		if val == 0 || !ok {
			return
		}
		if len(dst)+n > maxSparseMergePairs {
			ok = false
			return
		}
		for i := start; i < start+n; i++ {
			dst = append(dst, hllPair{uint16(i), val})
		}
	})
	return dst, ok && err == nil
}

// mergeHLLPairs appends to dst the register-wise max of a and b, both
// sorted by index with one pair per index.
func mergeHLLPairs(dst, a, b []hllPair) []hllPair {
	dst = slices.Grow(dst, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i].index < b[j].index:
			dst = append(dst, a[i])
			i++
		case a[i].index > b[j].index:
			dst = append(dst, b[j])
			j++
		default:
			dst = append(dst, hllPair{a[i].index, max(a[i].rank, b[j].rank)})
			i, j = i+1, j+1
		}
	}
	dst = append(dst, a[i:]...)
	return append(dst, b[j:]...)
}

// appendSparseHLLPairs appends the canonical value of the registers pairs
// (sorted, one per index, every rank 1..51) with its valid cached
// cardinality: what appendHLL(dst, reg, estimate, true) appends for the
// registers they stand for, when that is sparse. ok=false (dst unchanged)
// when it would be dense.
func appendSparseHLLPairs(dst []byte, pairs []hllPair) ([]byte, bool) {
	var histo hllHisto
	histo[0] = hllRegisters - len(pairs)
	for _, p := range pairs {
		if p.rank > hllSparseValMax {
			return dst, false
		}
		histo[p.rank]++
	}
	start := len(dst)
	// At most a zero run (2 bytes) and a VAL before each pair, a zero run
	// after the last: one allocation for the value.
	dst = slices.Grow(dst, min(hllHeaderLen+3*len(pairs)+2, hllSparseMaxBytes+1))
	dst = appendSparseHeader(dst, histo.estimate(), true)
	next := 0 // the first register not yet encoded
	for k := 0; k < len(pairs); {
		at, v := int(pairs[k].index), pairs[k].rank
		if z := at - next; z > 0 {
			dst = appendZeroRun(dst, z)
		}
		n := 1
		for k+n < len(pairs) && int(pairs[k+n].index) == at+n && pairs[k+n].rank == v {
			n++
		}
		dst = appendValRun(dst, v, n)
		k += n
		next = at + n
	}
	if z := hllRegisters - next; z > 0 {
		dst = appendZeroRun(dst, z)
	}
	if len(dst)-start > hllSparseMaxBytes {
		return dst[:start], false
	}
	return dst, true
}
