package sketchcol

import (
	"encoding/binary"
	"math"

	"github.com/sievedb/sieve/filter"
)

// The Bloom value encoding; FORMAT.md ("Bloom value") specifies it.
//
//	kind 0x20 | version 1 | flags | layers n | expansion u16 | error rate f64 | capacity u64
//	n × ( length u64 | filter.StandardBloomFilter encoding )
const (
	bloomHeaderLen = 22
	// bloomLayerOverhead is the length prefix plus the filter package's
	// 34-byte Bloom value header (format, k, m, capacity, error rate,
	// count); a test holds it to the filter package's real encoding.
	bloomLayerOverhead = 8 + 34

	bloomFlagNonScaling = 1 << 0
)

// MarshalBinary encodes b as described in FORMAT.md.
func (b *ScalableBloom) MarshalBinary() ([]byte, error) { return b.appendBinary(nil), nil }

func (b *ScalableBloom) appendBinary(dst []byte) []byte {
	var flags byte
	if b.spec.NonScaling {
		flags |= bloomFlagNonScaling
	}
	dst = append(dst, kindBloomValue, version1, flags, byte(len(b.layers)))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(b.spec.Expansion))
	dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(b.spec.ErrorRate))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(b.spec.Capacity))
	for _, l := range b.layers {
		at := len(dst)
		dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
		dst, _ = l.AppendBinary(dst)
		binary.LittleEndian.PutUint64(dst[at:], uint64(len(dst)-at-8))
	}
	return dst
}

// ParseBloom decodes a Bloom value. Every field is checked — kind,
// version, flags, the geometry of each sub-filter against the one the
// header implies, that only the newest sub-filter is below its capacity,
// and the exact length; a malformed value returns an error wrapping
// ErrCorruption.
func ParseBloom(data []byte) (*ScalableBloom, error) {
	if err := checkValueHeader(data, kindBloomValue, bloomHeaderLen); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	flags, n := data[2], int(data[3])
	spec := BloomSpec{
		NonScaling: flags&bloomFlagNonScaling != 0,
		Expansion:  int(le.Uint16(data[4:])),
		ErrorRate:  math.Float64frombits(le.Uint64(data[6:])),
	}
	capacity := le.Uint64(data[14:])
	switch {
	case flags&^bloomFlagNonScaling != 0:
		return nil, corruptf("Bloom value has unknown flags %#x", flags)
	case n < 1 || n > maxBloomLayers:
		return nil, corruptf("Bloom value has %d sub-filters, want 1..%d", n, maxBloomLayers)
	case spec.NonScaling && (n != 1 || spec.Expansion != 0):
		return nil, corruptf("non-scaling Bloom value has %d sub-filters and expansion %d, want 1 and 0", n, spec.Expansion)
	case !spec.NonScaling && (spec.Expansion < 1 || spec.Expansion > maxBloomExpansion):
		return nil, corruptf("Bloom value has expansion %d, want 1..%d", spec.Expansion, maxBloomExpansion)
	case !(spec.ErrorRate > 0 && spec.ErrorRate < 1):
		return nil, corruptf("Bloom value has error rate %v", spec.ErrorRate)
	case capacity < 1 || capacity > math.MaxInt64:
		return nil, corruptf("Bloom value has capacity %d", capacity)
	}
	spec.Capacity = int64(capacity)
	b := &ScalableBloom{spec: spec, layers: make([]*filter.StandardBloomFilter, 0, n)}
	rest := data[bloomHeaderLen:]
	wantCap, wantRate := capacity, spec.ErrorRate
	for i := range n {
		if len(rest) < 8 {
			return nil, corruptf("Bloom value is cut off before sub-filter %d", i)
		}
		l := le.Uint64(rest)
		rest = rest[8:]
		if l > uint64(len(rest)) {
			return nil, corruptf("Bloom sub-filter %d claims %d bytes, %d left", i, l, len(rest))
		}
		layer := new(filter.StandardBloomFilter)
		if err := layer.UnmarshalBinary(rest[:l]); err != nil {
			return nil, corruptf("Bloom sub-filter %d: %w", i, err)
		}
		rest = rest[l:]
		switch {
		case layer.Capacity() != wantCap || layer.ErrorRate() != wantRate:
			return nil, corruptf("Bloom sub-filter %d is built for %d items at %v, want %d at %v",
				i, layer.Capacity(), layer.ErrorRate(), wantCap, wantRate)
		case i < n-1 && layer.Count() < layer.Capacity():
			return nil, corruptf("Bloom sub-filter %d holds %d of %d items but is not the newest", i, layer.Count(), layer.Capacity())
		}
		b.layers = append(b.layers, layer)
		if i < n-1 {
			if wantCap > math.MaxInt64/uint64(max(1, spec.Expansion)) {
				return nil, corruptf("Bloom sub-filter %d's capacity overflows", i+1)
			}
			wantCap *= uint64(spec.Expansion)
			wantRate *= 0.5
		}
	}
	if len(rest) != 0 {
		return nil, corruptf("Bloom value has %d bytes after its last sub-filter", len(rest))
	}
	return b, nil
}
