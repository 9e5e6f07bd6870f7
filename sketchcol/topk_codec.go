package sketchcol

import (
	"bytes"
	"encoding/binary"
	"math"
)

// The Top-K value encoding; FORMAT.md ("Top-K value") specifies it.
//
//	kind 0x50 | version 1 | k u32 | width u32 | depth u32 | decay f64
//	width·depth × ( fp u32 | count u32 )
//	k × ( 0 | 1 count u32 len uvarint item )
const topKHeaderLen = 2 + 4 + 4 + 4 + 8

// MarshalBinary encodes t as described in FORMAT.md.
func (t *TopK) MarshalBinary() ([]byte, error) { return t.appendBinary(nil), nil }

func (t *TopK) appendBinary(dst []byte) []byte {
	le := binary.LittleEndian
	dst = append(dst, kindTopKValue, version1)
	dst = le.AppendUint32(dst, uint32(t.spec.K))
	dst = le.AppendUint32(dst, uint32(t.spec.Width))
	dst = le.AppendUint32(dst, uint32(t.spec.Depth))
	dst = le.AppendUint64(dst, math.Float64bits(t.spec.Decay))
	for _, b := range t.buckets {
		dst = le.AppendUint32(le.AppendUint32(dst, b.fp), b.count)
	}
	return t.appendHeap(dst)
}

// ParseTopK decodes a Top-K value, checking every field: kind, version,
// the parameters (as TOPK.RESERVE's), the exact length of the buckets,
// every heap entry (flag, length within the value), that no item is in the
// heap twice, that unused entries are counted 0 and that the heap is a
// min-heap on count, and nothing after it. A malformed value returns an
// error wrapping ErrCorruption.
func ParseTopK(data []byte) (*TopK, error) {
	if err := checkValueHeader(data, kindTopKValue, topKHeaderLen); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	spec := TopKSpec{K: int(le.Uint32(data[2:])), Width: int(le.Uint32(data[6:])), Depth: int(le.Uint32(data[10:])),
		Decay: math.Float64frombits(le.Uint64(data[14:]))}
	if err := spec.Validate(); err != nil {
		return nil, corruptf("Top-K value: %v", err)
	}
	rest := data[topKHeaderLen:]
	nb := spec.Width * spec.Depth
	if len(rest) < 8*nb+spec.K {
		return nil, corruptf("Top-K value of %d buckets and k %d is cut off", nb, spec.K)
	}
	t := &TopK{spec: spec, buckets: make([]hkBucket, nb), heap: make([]topKEntry, spec.K)}
	for i := range t.buckets {
		t.buckets[i] = hkBucket{fp: le.Uint32(rest[8*i:]), count: le.Uint32(rest[8*i+4:])}
	}
	if err := t.parseHeap(rest[8*nb:]); err != nil {
		return nil, err
	}
	t.initLookup()
	return t, nil
}

func (t *TopK) parseHeap(rest []byte) error {
	seen := make(map[string]struct{}, len(t.heap))
	for j := range t.heap {
		if len(rest) == 0 {
			return corruptf("Top-K value is cut off at heap entry %d", j)
		}
		flag := rest[0]
		rest = rest[1:]
		if flag == 0 {
			continue
		}
		if flag != 1 || len(rest) < 4 {
			return corruptf("Top-K heap entry %d is malformed (flag %d)", j, flag)
		}
		count := binary.LittleEndian.Uint32(rest)
		n, k := binary.Uvarint(rest[4:])
		if k <= 0 || n > uint64(len(rest)-4-k) {
			return corruptf("Top-K heap entry %d has a bad item length", j)
		}
		item := bytes.Clone(rest[4+k : 4+k+int(n)])
		rest = rest[4+k+int(n):]
		if _, dup := seen[string(item)]; dup {
			return corruptf("Top-K heap holds item %q twice", clip(item))
		}
		seen[string(item)] = struct{}{}
		t.heap[j] = topKEntry{fp: topKFingerprint(itemHash(item)), count: count, used: true, item: item}
	}
	if len(rest) != 0 {
		return corruptf("Top-K value has %d bytes after its heap", len(rest))
	}
	for j := 1; j < len(t.heap); j++ {
		if t.heap[(j-1)/2].count > t.heap[j].count {
			return corruptf("Top-K heap is not a min-heap at entry %d", j)
		}
	}
	return nil
}
