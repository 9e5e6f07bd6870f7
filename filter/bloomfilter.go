package filter

import (
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// StandardBloomFilter is a mutable classic Bloom filter for sets that are
// not tables: the layers of the sketch column family's Bloom values, or
// users who want a filter without a database. It uses StandardBloom's
// probes (xxhash64, Kirsch–Mitzenmacher double hashing), so the same key
// sets the same bits in both for the same m and k. (It is not the blocked
// layout that bare "Bloom" names in this package.)
//
// A StandardBloomFilter is sized for a capacity; adding more keys than that
// raises the false-positive rate quickly (a filter made for 1M keys at 1%
// is at ~44% with 3M keys). Watch FillRatio or ExpectedFPR, or stack
// filters as the sketch column family does. Keys cannot be removed; use
// CuckooTableFilter for that.
//
// A StandardBloomFilter is not safe for concurrent mutation; concurrent
// Tests are fine.
type StandardBloomFilter struct {
	words     []uint64
	m         uint64
	k         int
	capacity  uint64
	errorRate float64
	count     uint64
}

const (
	bloomValueHeaderLen = 34      // format, k, m, capacity, error rate, count
	maxBloomValueBits   = 1 << 38 // 32 GiB: beyond this a size is a mistake
)

// NewStandardBloomFilter returns an empty filter for capacity keys at false-positive
// rate errorRate, with m = −capacity·ln p/(ln 2)² bits rounded up to whole
// 64-bit words and k = OptimalK(m/capacity) probes.
func NewStandardBloomFilter(capacity uint64, errorRate float64) (*StandardBloomFilter, error) {
	if capacity == 0 {
		return nil, errors.New("filter: Bloom filter capacity must be positive")
	}
	if !(errorRate > 0 && errorRate < 1) {
		return nil, fmt.Errorf("filter: Bloom filter error rate %v is not in (0, 1)", errorRate)
	}
	m := math.Ceil(float64(capacity) * BitsPerKey(errorRate))
	if m > maxBloomValueBits {
		return nil, fmt.Errorf("filter: Bloom filter of %d keys at %v needs %.0f bits, more than %d", capacity, errorRate, m, uint64(maxBloomValueBits))
	}
	mb := max(64, (uint64(m)+63)&^63)
	return &StandardBloomFilter{
		words:     make([]uint64, mb/64),
		m:         mb,
		k:         OptimalK(float64(mb) / float64(capacity)),
		capacity:  capacity,
		errorRate: errorRate,
	}, nil
}

// Add adds key and reports whether the filter changed, i.e. whether key
// was certainly not in it before (what Redis's BF.ADD returns).
func (f *StandardBloomFilter) Add(key []byte) bool {
	if setKM(f.words, f.m, f.k, hashKey(key)) {
		f.count++
		return true
	}
	return false
}

// Test reports false if key was certainly never added.
func (f *StandardBloomFilter) Test(key []byte) bool { return testKM(f.words, f.m, f.k, hashKey(key)) }

// M returns the size of the bit array.
func (f *StandardBloomFilter) M() uint64 { return f.m }

// K returns the number of probes.
func (f *StandardBloomFilter) K() int { return f.k }

// Capacity returns the number of keys the filter was sized for.
func (f *StandardBloomFilter) Capacity() uint64 { return f.capacity }

// ErrorRate returns the false-positive rate the filter was sized for.
func (f *StandardBloomFilter) ErrorRate() float64 { return f.errorRate }

// Count returns the number of Adds that changed the filter: the number of
// distinct keys added, short of those that were false positives when added.
func (f *StandardBloomFilter) Count() uint64 { return f.count }

// BitsSet returns the number of bits set.
func (f *StandardBloomFilter) BitsSet() uint64 {
	var n uint64
	for _, w := range f.words {
		n += uint64(bits.OnesCount64(w))
	}
	return n
}

// FillRatio returns BitsSet/M; an optimally filled filter is at 1/2.
func (f *StandardBloomFilter) FillRatio() float64 { return float64(f.BitsSet()) / float64(f.m) }

// ExpectedFPR returns the false-positive rate the filter shows now,
// FillRatio^k: the chance that k random positions are all set.
func (f *StandardBloomFilter) ExpectedFPR() float64 { return math.Pow(f.FillRatio(), float64(f.k)) }

// EstimatedCount estimates the number of distinct keys added from the bits
// set X alone: −(m/k)·ln(1 − X/m) (Swamidass and Baldi 2007). Unlike Count
// it is meaningful after Union.
func (f *StandardBloomFilter) EstimatedCount() float64 {
	x := float64(f.BitsSet())
	if x >= float64(f.m) {
		return math.Inf(1)
	}
	return -float64(f.m) / float64(f.k) * math.Log1p(-x/float64(f.m))
}

// Union sets f to the union of f and g: a bitwise OR, which needs the same m
// and k. It is associative and commutative. Afterwards Count is the rounded
// EstimatedCount, since the counts of the two cannot simply be added.
func (f *StandardBloomFilter) Union(g *StandardBloomFilter) error {
	if f.m != g.m || f.k != g.k {
		return fmt.Errorf("filter: cannot union Bloom filters of m=%d,k=%d and m=%d,k=%d", f.m, f.k, g.m, g.k)
	}
	for i, w := range g.words {
		f.words[i] |= w
	}
	if e := f.EstimatedCount(); !math.IsInf(e, 1) {
		f.count = uint64(math.Round(e))
	}
	return nil
}

// MarshalBinary encodes the filter as described in FORMAT.md ("standard Bloom value").
func (f *StandardBloomFilter) MarshalBinary() ([]byte, error) {
	return f.AppendBinary(make([]byte, 0, bloomValueHeaderLen+f.m/8))
}

// AppendBinary appends the MarshalBinary encoding to b.
func (f *StandardBloomFilter) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, byte(FormatStandardBloomValue), byte(f.k))
	b = binary.LittleEndian.AppendUint64(b, f.m)
	b = binary.LittleEndian.AppendUint64(b, f.capacity)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f.errorRate))
	b = binary.LittleEndian.AppendUint64(b, f.count)
	for _, w := range f.words {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	return b, nil
}

// UnmarshalBinary replaces f with the filter encoded in data, which it does
// not retain. Malformed data returns an error wrapping ErrMalformed (or
// ErrTypeMismatch / ErrUnknownType for another format) and leaves f as it was.
func (f *StandardBloomFilter) UnmarshalBinary(data []byte) error {
	if err := checkValueFormat(data, FormatStandardBloomValue); err != nil {
		return err
	}
	if len(data) < bloomValueHeaderLen {
		return malformed("Bloom value of %d bytes is shorter than its %d-byte header", len(data), bloomValueHeaderLen)
	}
	le := binary.LittleEndian
	k := int(data[1])
	m := le.Uint64(data[2:])
	capacity := le.Uint64(data[10:])
	errorRate := math.Float64frombits(le.Uint64(data[18:]))
	body := data[bloomValueHeaderLen:]
	switch {
	case k < 1 || k > maxProbes:
		return malformed("Bloom value has k = %d, want 1..%d", k, maxProbes)
	case m == 0 || m%64 != 0 || m > maxBloomValueBits:
		return malformed("Bloom value has m = %d bits, want a positive multiple of 64", m)
	case uint64(len(body)) != m/8:
		return malformed("Bloom value has %d bytes of bits for m = %d", len(body), m)
	case capacity == 0:
		return malformed("Bloom value has capacity 0")
	case !(errorRate > 0 && errorRate < 1):
		return malformed("Bloom value has error rate %v", errorRate)
	}
	words := make([]uint64, m/64)
	for i := range words {
		words[i] = le.Uint64(body[8*i:])
	}
	*f = StandardBloomFilter{words: words, m: m, k: k, capacity: capacity, errorRate: errorRate, count: le.Uint64(data[26:])}
	return nil
}

// checkValueFormat checks the leading format code of a standalone value.
func checkValueFormat(data []byte, want Format) error {
	if len(data) == 0 {
		return malformed("empty %s", want)
	}
	switch got := Format(data[0]); {
	case got == want:
		return nil
	case got >= FormatBlockedBloom && got <= FormatCuckooTableValue:
		return fmt.Errorf("%w: %s data, want %s", ErrTypeMismatch, got, want)
	default:
		return fmt.Errorf("%w: format code %d, want %s", ErrUnknownType, uint8(got), want)
	}
}

var (
	_ encoding.BinaryMarshaler   = (*StandardBloomFilter)(nil)
	_ encoding.BinaryUnmarshaler = (*StandardBloomFilter)(nil)
	_ encoding.BinaryAppender    = (*StandardBloomFilter)(nil)
	_ encoding.BinaryMarshaler   = (*CuckooTableFilter)(nil)
	_ encoding.BinaryUnmarshaler = (*CuckooTableFilter)(nil)
	_ encoding.BinaryAppender    = (*CuckooTableFilter)(nil)
)
