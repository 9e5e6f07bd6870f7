package filter

import "encoding/binary"

// blockedReader probes a FormatBlockedBloom block in place.
type blockedReader struct {
	data     []byte // the whole block; lines start at offset 0
	lines    uint32
	k        int
	selShift uint // selector = last byte of the line >> selShift (8 when c = 0)
	// selBits[i] has the selector bits of byte i of a line (only byte 63
	// has any); a probe ORs them in, so selector bits read as set.
	selBits [lineBytes]byte
}

func openBlocked(data []byte) (Reader, error) {
	t, err := blockTrailer(data, blockedTrailerLen, "blocked Bloom")
	if err != nil {
		return nil, err
	}
	keys := binary.LittleEndian.Uint64(t[0:])
	lines := binary.LittleEndian.Uint32(t[8:])
	k, c := int(t[12]), int(t[13])
	switch body := uint64(len(data) - blockedTrailerLen); {
	case body != uint64(lines)*lineBytes:
		return nil, malformed("blocked Bloom block has %d body bytes for %d lines", body, lines)
	case k < 1 || k > maxProbes:
		return nil, malformed("blocked Bloom block has k = %d, want 1..%d", k, maxProbes)
	case c > maxChoiceBits:
		return nil, malformed("blocked Bloom block has %d selector bits, want 0..%d", c, maxChoiceBits)
	case lines == 0 && keys != 0:
		return nil, malformed("blocked Bloom block has %d keys and no lines", keys)
	case lines == 0:
		return emptyFilter{}, nil
	}
	r := &blockedReader{data: data, lines: lines, k: k, selShift: uint(8 - c)}
	r.selBits[lineBytes-1] = ^byte(0xFF >> c)
	return r, nil
}

// MayContain tests all k bits without branching on them: on a line that is
// in cache, a mispredicted early exit would cost more than the probes it
// saves.
func (r *blockedReader) MayContain(key []byte) bool { return r.MayContainHash(hashKey(key)) }

// MayContainHash implements HashReader.
func (r *blockedReader) MayContainHash(h uint64) bool {
	line := (*[lineBytes]byte)(r.data[uint64(lineOf(h, r.lines))*lineBytes:])
	g := patternStart(h, uint64(line[lineBytes-1]>>r.selShift))
	acc := byte(1)
	for _, m := range probeMul[:r.k] {
		p := (g * m) >> 55
		acc &= (line[p>>3] | r.selBits[p>>3]) >> (p & 7)
	}
	return acc&1 != 0
}
