package sketchcol

import (
	"encoding/binary"
	"math/bits"

	"github.com/sievedb/sieve/sketchcol/internal/cuckoo"
)

// The cuckoo value encoding; FORMAT.md ("Cuckoo value") specifies it.
//
//	kind 0x30 | version 1 | bucket size | filters n | max iterations u16 | expansion u16
//	capacity u64 | items u64 | deletes u64 | dropped u64
//	n × ( log2 buckets u8 | 2^log2 × bucket size slot bytes )
const cuckooHeaderLen = 40

// MarshalBinary encodes c as described in FORMAT.md.
func (c *CuckooFilter) MarshalBinary() ([]byte, error) {
	return c.appendBinary(make([]byte, 0, cuckooHeaderLen+uint64(len(c.filters))+c.slotBytes())), nil
}

func (c *CuckooFilter) appendBinary(dst []byte) []byte {
	le := binary.LittleEndian
	dst = append(dst, kindCuckooValue, version1, byte(c.spec.BucketSize), byte(len(c.filters)))
	dst = le.AppendUint16(dst, uint16(c.spec.MaxIterations))
	dst = le.AppendUint16(dst, uint16(c.spec.Expansion))
	dst = le.AppendUint64(dst, uint64(c.spec.Capacity))
	dst = le.AppendUint64(dst, c.items)
	dst = le.AppendUint64(dst, c.deletes)
	dst = le.AppendUint64(dst, c.dropped)
	for _, t := range c.filters {
		dst = append(dst, t.Log2Buckets())
		dst = append(dst, t.Slots()...)
	}
	return dst
}

// ParseCuckoo decodes a cuckoo value, checking every field: kind,
// version, the geometry against the one the header implies (first
// sub-filter sized from the capacity, each next one Expansion times
// larger), the exact length, and that the item count equals the
// fingerprints stored. A malformed value returns an error wrapping
// ErrCorruption.
func ParseCuckoo(data []byte) (*CuckooFilter, error) {
	if err := checkValueHeader(data, kindCuckooValue, cuckooHeaderLen); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	n := int(data[3])
	spec := CuckooSpec{
		BucketSize:    int(data[2]),
		MaxIterations: int(le.Uint16(data[4:])),
		Expansion:     int(le.Uint16(data[6:])),
	}
	capacity := le.Uint64(data[8:])
	c := &CuckooFilter{items: le.Uint64(data[16:]), deletes: le.Uint64(data[24:]), dropped: le.Uint64(data[32:])}
	switch {
	case n < 1 || n > maxCuckooFilters:
		return nil, corruptf("cuckoo value has %d sub-filters, want 1..%d", n, maxCuckooFilters)
	case capacity > 1<<62:
		return nil, corruptf("cuckoo value has capacity %d", capacity)
	case spec.Expansion&(spec.Expansion-1) != 0:
		return nil, corruptf("cuckoo value has expansion %d, not a power of two", spec.Expansion)
	case spec.Expansion == 0 && n != 1:
		return nil, corruptf("cuckoo value with expansion 0 has %d sub-filters", n)
	}
	spec.Capacity = int64(capacity)
	if err := spec.Validate(); err != nil {
		return nil, corruptf("cuckoo value: %v", err)
	}
	c.spec = spec
	lb := cuckooLog2Buckets(spec.Capacity, spec.BucketSize)
	step := uint8(bits.TrailingZeros(uint(max(spec.Expansion, 1))))
	rest := data[cuckooHeaderLen:]
	var stored, total uint64
	for i := range n {
		if len(rest) < 1 {
			return nil, corruptf("cuckoo value is cut off before sub-filter %d", i)
		}
		if rest[0] != lb {
			return nil, corruptf("cuckoo sub-filter %d has 2^%d buckets, want 2^%d", i, rest[0], lb)
		}
		size := uint64(spec.BucketSize) << lb
		total += size
		if total > maxCuckooBytes || size > uint64(len(rest)-1) {
			return nil, corruptf("cuckoo sub-filter %d of %d bytes does not fit in the %d bytes left", i, size, len(rest)-1)
		}
		slots := make([]byte, size)
		copy(slots, rest[1:])
		t := cuckoo.FromSlots(lb, spec.BucketSize, slots)
		stored += t.Occupied()
		c.filters = append(c.filters, t)
		rest = rest[1+size:]
		if lb += step; lb > cuckoo.MaxLog2Buckets && i < n-1 {
			return nil, corruptf("cuckoo sub-filter %d would have 2^%d buckets", i+1, lb)
		}
	}
	switch {
	case len(rest) != 0:
		return nil, corruptf("cuckoo value has %d bytes after its last sub-filter", len(rest))
	case stored != c.items:
		return nil, corruptf("cuckoo value claims %d items and holds %d fingerprints", c.items, stored)
	}
	return c, nil
}
