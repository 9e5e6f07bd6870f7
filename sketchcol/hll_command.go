package sketchcol

import "bytes"

// Per-command helpers for HyperLogLog values; see bloom_command.go for the
// Reply/Op pattern.

// PFCountValues returns PFCOUNT over HLL values: for one value its cached
// cardinality when valid (computed otherwise), for several the estimate
// of their union (no cache involved, as in Redis). Missing keys are
// passed as nil and count as empty. A value of another kind returns
// ErrWrongType. Every value is checked as ParseHLL checks it, except that
// the cached path does not range-check dense registers (that would cost
// a pass over 12 KB to answer from 8 bytes).
func PFCountValues(values ...[]byte) (int64, error) {
	present := values[:0:0]
	for _, v := range values {
		if err := expectKind(v, KindHLL); err != nil {
			return 0, err
		}
		if v != nil {
			present = append(present, v)
		}
	}
	switch len(present) {
	case 0:
		return 0, nil
	case 1:
		n, _, err := hllCountCached(present[0])
		return n, err
	}
	var reg [hllRegisters]uint8
	for _, v := range present {
		var r [hllRegisters]uint8
		if _, err := decodeHLLRegisters(v, &r); err != nil {
			return 0, err
		}
		for i, x := range r {
			reg[i] = max(reg[i], x)
		}
	}
	histo := histogramOf(&reg)
	return histo.estimate(), nil
}

// hllCountCached returns the cardinality of one value, from its cache when
// valid, and whether it had to be computed.
func hllCountCached(v []byte) (n int64, computed bool, err error) {
	hdr, err := parseHLLHeader(v)
	if err != nil {
		return 0, false, err
	}
	if hdr.cardValid {
		if hdr.encoding == hllEncSparse {
			// Cheap (≤ a few KB) and keeps the promise that a malformed
			// value is never answered from.
			if err := validateSparse(v[hllHeaderLen:]); err != nil {
				return 0, false, err
			}
		}
		return hdr.card, false, nil
	}
	histo, err := hllHistogram(v)
	if err != nil {
		return 0, false, err
	}
	return histo.estimate(), true, nil
}

// PFAddOp returns the blind merge operand of PFADD key elems...: the
// (index, rank) pairs of the elements. Applied to a missing key it
// creates an empty HyperLogLog first, as PFADD does even with no
// elements.
func PFAddOp(elems ...[]byte) []byte { return appendHLLOp(nil, hllOpOf(elems)) }

// PFAddReply returns PFADD's reply for adding elems to the current value
// cur (nil for a missing key): true when the key is created or a register
// rises. Write PFAddOp(elems...) after it (or skip the write when the
// reply is false: the operand would change nothing).
func PFAddReply(cur []byte, elems ...[]byte) (bool, error) {
	if cur == nil {
		return true, nil
	}
	var reg [hllRegisters]uint8
	if err := hllRegistersOf(cur, &reg); err != nil {
		return false, err
	}
	for _, e := range elems {
		if i, r := hllPosition(e); r > reg[i] {
			return true, nil
		}
	}
	return false, nil
}

// PFMergeOp returns the merge operand that raises a key's registers to
// the union of srcs (HLL values; nil entries are missing keys and are
// skipped): PFMERGE dst srcs... written blind, dst being a source by
// construction. Redis's PFMERGE makes the result dense when a source is
// dense; sieve's value stays canonical (FORMAT.md).
func PFMergeOp(srcs ...[]byte) ([]byte, error) {
	var reg [hllRegisters]uint8
	for _, v := range srcs {
		if v == nil {
			continue
		}
		var r [hllRegisters]uint8
		if err := hllRegistersOf(v, &r); err != nil {
			return nil, err
		}
		for i, x := range r {
			reg[i] = max(reg[i], x)
		}
	}
	return appendHLLOp(nil, newHLLOp(&reg)), nil
}

// RefreshHLL returns the cardinality of one HLL value and, when its cache
// was stale, the value with the cache refreshed (nil when it was valid):
// what Redis's PFCOUNT writes back. Values written by FullMerge always
// have a valid cache.
func RefreshHLL(value []byte) (n int64, refreshed []byte, err error) {
	if err := expectKind(value, KindHLL); err != nil {
		return 0, nil, err
	}
	n, computed, err := hllCountCached(value)
	if err != nil || !computed {
		return n, nil, err
	}
	return n, setHLLCache(bytes.Clone(value), n), nil
}

// hllRegistersOf decodes the registers of v, a stored value that must be
// an HLL, into reg.
func hllRegistersOf(v []byte, reg *[hllRegisters]uint8) error {
	if err := expectKind(v, KindHLL); err != nil {
		return err
	}
	_, err := decodeHLLRegisters(v, reg)
	return err
}
