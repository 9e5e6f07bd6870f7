package sketchcol

import "encoding/binary"

// The Count-Min value encoding; FORMAT.md ("Count-Min value") specifies it.
//
//	kind 0x40 | version 1 | width u32 | depth u32 | count u64 | width·depth × counter u32
const cmsHeaderLen = 2 + 4 + 4 + 8

// MarshalBinary encodes c as described in FORMAT.md.
func (c *CountMinSketch) MarshalBinary() ([]byte, error) {
	return c.appendBinary(make([]byte, 0, cmsHeaderLen+4*len(c.counters))), nil
}

func (c *CountMinSketch) appendBinary(dst []byte) []byte {
	le := binary.LittleEndian
	dst = append(dst, kindCMSValue, version1)
	dst = le.AppendUint32(dst, uint32(c.spec.Width))
	dst = le.AppendUint32(dst, uint32(c.spec.Depth))
	dst = le.AppendUint64(dst, c.count)
	for _, v := range c.counters {
		dst = le.AppendUint32(dst, v)
	}
	return dst
}

// ParseCMS decodes a Count-Min value, checking its kind, version,
// dimensions (as CMS.INITBYDIM's) and exact length. A malformed value
// returns an error wrapping ErrCorruption.
func ParseCMS(data []byte) (*CountMinSketch, error) {
	if err := checkValueHeader(data, kindCMSValue, cmsHeaderLen); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	spec := CMSSpec{Width: int(le.Uint32(data[2:])), Depth: int(le.Uint32(data[6:]))}
	if err := spec.Validate(); err != nil {
		return nil, corruptf("Count-Min value: %v", err)
	}
	body := data[cmsHeaderLen:]
	if n := spec.Width * spec.Depth; len(body) != 4*n {
		return nil, corruptf("Count-Min value of %d × %d counters has %d bytes of counters, want %d", spec.Width, spec.Depth, len(body), 4*n)
	}
	c := &CountMinSketch{spec: spec, count: le.Uint64(data[10:]), counters: make([]uint32, len(body)/4)}
	for i := range c.counters {
		c.counters[i] = le.Uint32(body[4*i:])
	}
	return c, nil
}
