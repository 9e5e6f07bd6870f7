package sketchcol

import "encoding/binary"

// The Redis HyperLogLog encoding; FORMAT.md ("HyperLogLog value") is the
// specification this file implements.

const (
	hllEncDense  = 0
	hllEncSparse = 1

	hllCardInvalid = 0x80 // top bit of header byte 15: the cached cardinality is stale

	// Sparse opcodes.
	opZeroMaxLen  = 64    // ZERO 00xxxxxx: 1..64 zero registers
	opXZeroMaxLen = 16384 // XZERO 01xxxxxx yyyyyyyy: 1..16384 zero registers
	opValMaxLen   = 4     // VAL 1vvvvvxx: 1..4 registers of value 1..32
)

var hllMagic = [4]byte{'H', 'Y', 'L', 'L'}

// hllHeader is the decoded 16-byte header.
type hllHeader struct {
	encoding  byte
	card      int64
	cardValid bool
}

// parseHLLHeader checks the header and the length that goes with its
// encoding. It does not look at the registers.
func parseHLLHeader(b []byte) (hllHeader, error) {
	if len(b) < hllHeaderLen {
		return hllHeader{}, corruptf("HLL value of %d bytes is shorter than its %d-byte header", len(b), hllHeaderLen)
	}
	if [4]byte(b[:4]) != hllMagic {
		return hllHeader{}, corruptf("HLL value does not start with \"HYLL\" (% x)", b[:4])
	}
	if b[5] != 0 || b[6] != 0 || b[7] != 0 {
		return hllHeader{}, corruptf("HLL value has unused header bytes % x, want zeros", b[5:8])
	}
	hdr := hllHeader{encoding: b[4]}
	switch hdr.encoding {
	case hllEncDense:
		if len(b) != hllDenseLen {
			return hllHeader{}, corruptf("dense HLL value of %d bytes, want exactly %d", len(b), hllDenseLen)
		}
	case hllEncSparse:
		if len(b) == hllHeaderLen {
			return hllHeader{}, corruptf("sparse HLL value has no opcodes")
		}
	default:
		return hllHeader{}, corruptf("HLL value has unknown encoding %d (0 dense, 1 sparse)", hdr.encoding)
	}
	c := binary.LittleEndian.Uint64(b[8:16])
	hdr.cardValid = b[15]&hllCardInvalid == 0
	hdr.card = int64(c &^ (uint64(hllCardInvalid) << 56))
	return hdr, nil
}

// walkSparse calls fn for every opcode of a sparse body, with the first
// register it covers, how many and their value. It returns an error
// wrapping ErrCorruption, having called fn only for registers below 16384,
// unless the opcodes cover exactly the 16384 registers: a truncated XZERO,
// a run passing the last register and a short total are all refused. Runs
// are at most 16384 and are checked against the registers left before they
// are added, so no sum can overflow.
func walkSparse(p []byte, fn func(start, n int, v uint8)) error {
	idx := 0
	for i := 0; i < len(p); {
		op := p[i]
		var n int
		var v uint8
		switch op >> 6 {
		case 0: // ZERO
			n = int(op&0x3f) + 1
			i++
		case 1: // XZERO
			if i+1 >= len(p) {
				return corruptf("sparse HLL: XZERO at byte %d is cut off", hllHeaderLen+i)
			}
			n = (int(op&0x3f)<<8 | int(p[i+1])) + 1
			i += 2
		default: // VAL
			v = (op>>2)&0x1f + 1
			n = int(op&0x3) + 1
			i++
		}
		if n > hllRegisters-idx {
			return corruptf("sparse HLL: opcode at byte %d covers %d registers from register %d, past the last (%d)",
				hllHeaderLen+i-1, n, idx, hllRegisters-1)
		}
		fn(idx, n, v)
		idx += n
	}
	if idx != hllRegisters {
		return corruptf("sparse HLL covers %d registers, want %d", idx, hllRegisters)
	}
	return nil
}

// validateSparse is walkSparse without a callback, for the cached PFCOUNT
// path: the same checks (and the same errors, from walkSparse) at a few
// cycles per opcode.
func validateSparse(p []byte) error {
	idx := 0
	for i := 0; i < len(p); {
		op := p[i]
		n := 0
		switch op >> 6 {
		case 0:
			n = int(op&0x3f) + 1
			i++
		case 1:
			if i+1 >= len(p) {
				return walkSparse(p, func(int, int, uint8) {})
			}
			n = (int(op&0x3f)<<8 | int(p[i+1])) + 1
			i += 2
		default:
			n = int(op&0x3) + 1
			i++
		}
		if n > hllRegisters-idx {
			return walkSparse(p, func(int, int, uint8) {})
		}
		idx += n
	}
	if idx != hllRegisters {
		return walkSparse(p, func(int, int, uint8) {})
	}
	return nil
}

// unpackDense fills reg from a dense body of exactly 12288 bytes:
// registers are 6 bits each, packed from the least significant bit of byte
// 0, so 3 bytes hold 4 registers.
func unpackDense(p []byte, reg *[hllRegisters]uint8) {
	_ = p[hllRegisters*6/8-1]
	for g := 0; g < hllRegisters/4; g++ {
		w := uint32(p[3*g]) | uint32(p[3*g+1])<<8 | uint32(p[3*g+2])<<16
		reg[4*g] = uint8(w & 63)
		reg[4*g+1] = uint8(w >> 6 & 63)
		reg[4*g+2] = uint8(w >> 12 & 63)
		reg[4*g+3] = uint8(w >> 18 & 63)
	}
}

// checkRanks refuses registers above 51, which no hash produces.
func checkRanks(reg *[hllRegisters]uint8) error {
	for i, v := range reg {
		if v > hllMaxRank {
			return corruptf("dense HLL register %d holds %d, above the largest possible rank %d", i, v, hllMaxRank)
		}
	}
	return nil
}

// decodeHLLRegisters fills reg from a whole value and returns its header.
// Dense registers above 51 are refused: no hash produces them.
// REQUIRES: reg is all zeros (sparse zero runs are skipped).
func decodeHLLRegisters(b []byte, reg *[hllRegisters]uint8) (hllHeader, error) {
	hdr, err := parseHLLHeader(b)
	if err != nil {
		return hdr, err
	}
	if hdr.encoding == hllEncSparse {
		return hdr, walkSparse(b[hllHeaderLen:], func(start, n int, v uint8) {
			if v != 0 {
				for i := start; i < start+n; i++ {
					reg[i] = v
				}
			}
		})
	}
	unpackDense(b[hllHeaderLen:], reg)
	return hdr, checkRanks(reg)
}

// hllHistogram validates a value and returns its register histogram,
// without building the registers.
func hllHistogram(b []byte) (hllHisto, error) {
	var histo hllHisto
	hdr, err := parseHLLHeader(b)
	if err != nil {
		return histo, err
	}
	if hdr.encoding == hllEncSparse {
		err := walkSparse(b[hllHeaderLen:], func(_, n int, v uint8) { histo[v] += n })
		return histo, err
	}
	var reg [hllRegisters]uint8
	unpackDense(b[hllHeaderLen:], &reg)
	if err := checkRanks(&reg); err != nil {
		return histo, err
	}
	return histogramOf(&reg), nil
}

// ParseHLL decodes a HyperLogLog value in Redis's format (as GET returns
// it from redis-server), sparse or dense. Malformed values return an error
// wrapping ErrCorruption; see FORMAT.md for every check. A valid cached
// cardinality is kept, as Redis keeps it.
func ParseHLL(b []byte) (*HLL, error) {
	h := new(HLL)
	hdr, err := decodeHLLRegisters(b, &h.reg)
	if err != nil {
		return nil, err
	}
	h.card, h.cardValid = hdr.card, hdr.cardValid
	return h, nil
}

// Bytes returns the canonical Redis encoding of h with a valid cached
// cardinality: sparse when every register is at most 32 and the sparse
// encoding fits in 3000 bytes, dense otherwise (FORMAT.md, "Canonical
// encoding").
func (h *HLL) Bytes() []byte {
	return appendHLL(nil, &h.reg, h.Count(), true)
}

// appendHLL appends the canonical encoding of reg with the given cache.
func appendHLL(dst []byte, reg *[hllRegisters]uint8, card int64, cardValid bool) []byte {
	start := len(dst)
	dst = appendSparseHeader(dst, card, cardValid)
	if sparse, ok := appendSparse(dst, reg, start+hllSparseMaxBytes); ok {
		return sparse
	}
	dst = dst[:start+hllHeaderLen]
	dst[start+4] = hllEncDense
	return appendDense(dst, reg)
}

// appendSparse appends the canonical sparse opcodes of reg: each run of
// zeros as one ZERO (up to 64) or XZERO, each run of a value v as VALs of
// 4 and one of the rest. It gives up (ok=false) when a register is above
// 32 or dst would pass limit bytes.
func appendSparse(dst []byte, reg *[hllRegisters]uint8, limit int) ([]byte, bool) {
	for i := 0; i < hllRegisters; {
		v := reg[i]
		j := i + 1
		if v == 0 { // zero runs are long in a sparse sketch: skip 8 at a time
			for j+8 <= hllRegisters && binary.LittleEndian.Uint64(reg[j:]) == 0 {
				j += 8
			}
		}
		for j < hllRegisters && reg[j] == v {
			j++
		}
		n := j - i
		switch {
		case v > hllSparseValMax:
			return dst, false
		case v == 0:
			dst = appendZeroRun(dst, n)
		default:
			dst = appendValRun(dst, v, n)
		}
		if len(dst) > limit {
			return dst, false
		}
		i = j
	}
	return dst, true
}

// appendSparseHeader appends the 16-byte header of a sparse value with
// the given cache.
func appendSparseHeader(dst []byte, card int64, cardValid bool) []byte {
	dst = append(dst, 'H', 'Y', 'L', 'L', hllEncSparse, 0, 0, 0)
	c := uint64(card)
	if !cardValid {
		c = uint64(hllCardInvalid) << 56
	}
	return binary.LittleEndian.AppendUint64(dst, c)
}

// appendZeroRun appends the opcode of n (1..16384) zero registers: one
// ZERO up to 64, else one XZERO.
func appendZeroRun(dst []byte, n int) []byte {
	if n <= opZeroMaxLen {
		return append(dst, byte(n-1))
	}
	return append(dst, 0x40|byte((n-1)>>8), byte(n-1))
}

// appendValRun appends the opcodes of n registers of value v (1..32):
// VALs of 4, the rest last.
func appendValRun(dst []byte, v uint8, n int) []byte {
	for ; n > 0; n -= opValMaxLen {
		dst = append(dst, 0x80|(v-1)<<2|byte(min(n, opValMaxLen)-1))
	}
	return dst
}

// appendDense appends the 12288 bytes of packed registers.
func appendDense(dst []byte, reg *[hllRegisters]uint8) []byte {
	for g := 0; g < hllRegisters/4; g++ {
		w := uint32(reg[4*g]) | uint32(reg[4*g+1])<<6 | uint32(reg[4*g+2])<<12 | uint32(reg[4*g+3])<<18
		dst = append(dst, byte(w), byte(w>>8), byte(w>>16))
	}
	return dst
}

// setHLLCache returns b with its cached cardinality set to card (valid).
// b must have passed parseHLLHeader; it is modified in place.
func setHLLCache(b []byte, card int64) []byte {
	binary.LittleEndian.PutUint64(b[8:16], uint64(card)) // card ≥ 0, so the invalid bit is clear
	return b
}
