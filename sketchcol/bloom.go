package sketchcol

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cespare/xxhash/v2"
	"github.com/sievedb/sieve/filter"
)

// BloomSpec is the geometry of a scalable Bloom filter (BF.RESERVE's
// arguments). Every field is explicit; DefaultBloomSpec gives RedisBloom's
// defaults for a filter created by an add on a missing key.
type BloomSpec struct {
	// ErrorRate is the false-positive rate of the first sub-filter, in
	// (0, 1). Sub-filter i is built for ErrorRate·0.5^i, so the whole
	// filter stays below 2·ErrorRate however far it scales.
	ErrorRate float64
	// Capacity is the number of items the first sub-filter is built for
	// (≥ 1). Sub-filter i holds Capacity·Expansion^i.
	Capacity int64
	// Expansion is the growth factor of each new sub-filter, 1..32768.
	// Ignored (may be 0) when NonScaling.
	Expansion int
	// NonScaling keeps a single sub-filter: an add that would pass
	// Capacity fails with ErrFilterFull.
	NonScaling bool
}

// DefaultBloomSpec returns RedisBloom's defaults: error rate 0.01,
// capacity 100, expansion 2, scaling.
func DefaultBloomSpec() BloomSpec {
	return BloomSpec{ErrorRate: 0.01, Capacity: 100, Expansion: 2}
}

const (
	maxBloomExpansion = 32768
	// maxBloomLayers bounds the sub-filters of one value. With expansion
	// 2 it is never reached (2^63 items); with expansion 1 it caps the
	// filter at 64 × capacity, beyond which it behaves as non-scaling.
	maxBloomLayers = 64
	// maxBloomLayerBits bounds the first sub-filter (4 GiB of bits), below
	// the filter package's own limit, so that Validate can answer without
	// allocating and filter.NewStandardBloomFilter never refuses a validated spec.
	maxBloomLayerBits = 1 << 35
)

// Validate checks the ranges RedisBloom documents.
func (s BloomSpec) Validate() error {
	switch {
	case !(s.ErrorRate > 0 && s.ErrorRate < 1):
		return fmt.Errorf("%w: Bloom error rate %v must be between 0 and 1, exclusive", ErrInvalidArgument, s.ErrorRate)
	case s.Capacity < 1:
		return fmt.Errorf("%w: Bloom capacity %d must be at least 1", ErrInvalidArgument, s.Capacity)
	case !s.NonScaling && (s.Expansion < 1 || s.Expansion > maxBloomExpansion):
		return fmt.Errorf("%w: Bloom expansion %d must be in 1..%d", ErrInvalidArgument, s.Expansion, maxBloomExpansion)
	}
	if bits := float64(s.Capacity) * filter.BitsPerKey(s.ErrorRate); !(bits <= maxBloomLayerBits) {
		return fmt.Errorf("%w: a Bloom filter of %d items at %v needs %.3g bits, more than %d",
			ErrInvalidArgument, s.Capacity, s.ErrorRate, bits, uint64(maxBloomLayerBits))
	}
	return nil
}

// normalized returns s with the fields that do not matter zeroed, so that
// equal geometries encode equally.
func (s BloomSpec) normalized() BloomSpec {
	if s.NonScaling {
		s.Expansion = 0
	}
	return s
}

// ScalableBloom is a Bloom value with RedisBloom's semantics: a stack of
// the filter package's mutable Bloom filters (sub-filters), the newest
// taking the adds. When the newest holds its capacity, the next add
// stacks a sub-filter Expansion times larger at half the error rate.
//
// Items are hashed once (xxhash64); every sub-filter is given the 8 bytes
// of that hash as its key, so a merge operand needs to carry only the
// hash (FORMAT.md, "Bloom value").
//
// A Bloom filter answers "possibly present" or "certainly not": never use
// it to decide permissions or billing. It cannot delete; use a cuckoo
// filter for that. A ScalableBloom is not safe for concurrent use.
type ScalableBloom struct {
	spec   BloomSpec
	layers []*filter.StandardBloomFilter
}

// BFInfo is what BF.INFO reports, with go-redis's field names.
type BFInfo struct {
	Capacity      int64 // items the sub-filters are built for, summed
	Size          int64 // bytes of the encoded value
	Filters       int64 // number of sub-filters
	ItemsInserted int64 // items added (adds that found the item absent)
	ExpansionRate int64 // 0 for a non-scaling filter
}

// NewScalableBloom returns an empty filter with one sub-filter.
func NewScalableBloom(spec BloomSpec) (*ScalableBloom, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	first, err := filter.NewStandardBloomFilter(uint64(spec.Capacity), spec.ErrorRate)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	return &ScalableBloom{spec: spec.normalized(), layers: []*filter.StandardBloomFilter{first}}, nil
}

// itemHash is the one hash of a Bloom or cuckoo item.
func itemHash(item []byte) uint64 { return xxhash.Sum64(item) }

// layerKey is the key a sub-filter is given for an item hash.
func layerKey(h uint64) [8]byte {
	var k [8]byte
	binary.LittleEndian.PutUint64(k[:], h)
	return k
}

// Exists reports whether item is possibly present (BF.EXISTS).
func (b *ScalableBloom) Exists(item []byte) bool { return b.existsHash(itemHash(item)) }

func (b *ScalableBloom) existsHash(h uint64) bool {
	k := layerKey(h)
	for i := len(b.layers) - 1; i >= 0; i-- {
		if b.layers[i].Test(k[:]) {
			return true
		}
	}
	return false
}

// Add adds item and reports whether it was absent (BF.ADD): an item that
// is possibly present already is not inserted again. A non-scaling filter
// at capacity returns ErrFilterFull and is left unchanged.
func (b *ScalableBloom) Add(item []byte) (bool, error) {
	return b.addHash(itemHash(item), false)
}

// addHash is Add for a hash. With overfill, an add that does not fit
// (non-scaling at capacity, or no room for another sub-filter) goes into
// the newest sub-filter anyway: blind writes must not lose items, and an
// overfilled Bloom filter only answers "possibly present" more often.
func (b *ScalableBloom) addHash(h uint64, overfill bool) (bool, error) {
	if b.existsHash(h) {
		return false, nil
	}
	last := b.layers[len(b.layers)-1]
	if last.Count() >= last.Capacity() {
		next, err := b.nextLayer()
		switch {
		case err == nil:
			b.layers = append(b.layers, next)
			last = next
		case !overfill:
			return false, err
		}
	}
	k := layerKey(h)
	last.Add(k[:])
	return true, nil
}

// nextLayer returns the sub-filter to stack when the newest is full, or
// ErrFilterFull.
func (b *ScalableBloom) nextLayer() (*filter.StandardBloomFilter, error) {
	if b.spec.NonScaling {
		return nil, fmt.Errorf("%w: non-scaling Bloom filter holds its capacity of %d", ErrFilterFull, b.spec.Capacity)
	}
	if len(b.layers) >= maxBloomLayers {
		return nil, fmt.Errorf("%w: Bloom filter has the most sub-filters allowed (%d)", ErrFilterFull, maxBloomLayers)
	}
	last := b.layers[len(b.layers)-1]
	c, p := last.Capacity(), last.ErrorRate()*0.5
	if c > math.MaxInt64/uint64(b.spec.Expansion) {
		return nil, fmt.Errorf("%w: next Bloom sub-filter's capacity overflows", ErrFilterFull)
	}
	next, err := filter.NewStandardBloomFilter(c*uint64(b.spec.Expansion), p)
	if err != nil {
		return nil, fmt.Errorf("%w: no room for another sub-filter: %v", ErrFilterFull, err)
	}
	return next, nil
}

// Card returns the number of items added (BF.CARD).
func (b *ScalableBloom) Card() int64 {
	var n uint64
	for _, l := range b.layers {
		n += l.Count()
	}
	return int64(n)
}

// Spec returns the geometry the filter was created with.
func (b *ScalableBloom) Spec() BloomSpec { return b.spec }

// Info returns BF.INFO's fields.
func (b *ScalableBloom) Info() BFInfo {
	info := BFInfo{Filters: int64(len(b.layers)), ItemsInserted: b.Card(), ExpansionRate: int64(b.spec.Expansion)}
	info.Size = bloomHeaderLen
	for _, l := range b.layers {
		info.Capacity += int64(l.Capacity())
		info.Size += bloomLayerOverhead + int64(l.M()/8)
	}
	return info
}

// ExpectedFPR returns the false-positive rate the filter shows now: the
// chance that an absent item passes some sub-filter, from each one's
// fill.
func (b *ScalableBloom) ExpectedFPR() float64 {
	pass := 1.0
	for _, l := range b.layers {
		pass *= 1 - l.ExpectedFPR()
	}
	return 1 - pass
}
