package filter

import "encoding/binary"

// blockedReader probes a FormatBlockedBloom block in place.
type blockedReader struct {
	data      []byte // the whole block; lines start at offset 0
	lines     uint32
	k         int
	drawLimit int
	usable    uint64 // probe positions are below usable = 512 - c
	selShift  uint   // selector = last byte of the line >> selShift (8 when c = 0)
}

func openBlocked(data []byte) (Reader, error) {
	if len(data) < blockedTrailerLen {
		return nil, malformed("blocked Bloom block of %d bytes is shorter than its %d-byte trailer", len(data), blockedTrailerLen)
	}
	t := data[len(data)-blockedTrailerLen:]
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
	return &blockedReader{
		data:      data,
		lines:     lines,
		k:         k,
		drawLimit: probeDrawLimit(k),
		usable:    uint64(lineBits - c),
		selShift:  uint(8 - c),
	}, nil
}

// MayContain walks the probe sequence of addPattern and stops at the first
// clear bit; an absent key usually stops after one or two probes.
func (r *blockedReader) MayContain(key []byte) bool {
	h := hashKey(key)
	line := (*[lineBytes]byte)(r.data[uint64(lineOf(h, r.lines))*lineBytes:])
	sel := uint64(line[lineBytes-1] >> r.selShift)
	var seen [8]uint64
	g := (h ^ sel*choiceSalt) | 1
	for n, draws := 0, 0; n < r.k && draws < r.drawLimit; draws++ {
		g *= golden64
		p := g >> 55
		w, bit := p>>6, uint64(1)<<(p&63)
		if p >= r.usable || seen[w]&bit != 0 {
			continue
		}
		if line[p>>3]&(1<<(p&7)) == 0 {
			return false
		}
		seen[w] |= bit
		n++
	}
	return true
}
