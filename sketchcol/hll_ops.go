package sketchcol

// PFCountValues returns PFCOUNT over HLL values: for one value its cached
// cardinality when valid (computed otherwise), for several the estimate
// of their union (no cache involved, as in Redis). Missing keys are
// passed as nil and count as empty.
func PFCountValues(values ...[]byte) (int64, error) {
	present := values[:0:0]
	for _, v := range values {
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
	var histo hllHisto
	for _, r := range reg {
		histo[r]++
	}
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
			if err := walkSparse(v[hllHeaderLen:], func(int, int, uint8) {}); err != nil {
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
