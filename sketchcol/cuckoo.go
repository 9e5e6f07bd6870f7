package sketchcol

import (
	"fmt"
	"math/bits"

	"github.com/sievedb/sieve/sketchcol/internal/cuckoo"
)

// CuckooSpec is the geometry of a cuckoo filter (CF.RESERVE's arguments).
// Every field is explicit; DefaultCuckooSpec gives RedisBloom's defaults
// for a filter created by an add on a missing key.
type CuckooSpec struct {
	// Capacity is the number of items the first sub-filter is sized for:
	// it gets the power of two of buckets at or above Capacity/BucketSize.
	// At least 2·BucketSize. A cuckoo filter usually declares itself full
	// somewhat before its capacity.
	Capacity int64
	// BucketSize is the number of one-byte slots per bucket, 1..255. The
	// false-positive rate per sub-filter is about 2·BucketSize/255.
	BucketSize int
	// MaxIterations is the number of evictions tried before a sub-filter
	// is declared full, 1..65535.
	MaxIterations int
	// Expansion is the growth factor of each new sub-filter, 0..32768,
	// rounded up to a power of two; 0 means no new sub-filters (the
	// filter is full when the first is).
	Expansion int
}

// DefaultCuckooSpec returns RedisBloom's defaults: capacity 1024, bucket
// size 2, 20 iterations, expansion 1.
func DefaultCuckooSpec() CuckooSpec {
	return CuckooSpec{Capacity: 1024, BucketSize: 2, MaxIterations: 20, Expansion: 1}
}

const (
	// maxCuckooFilters is RedisBloom's limit of sub-filters ("the filter
	// can grow up to 32 times"); an add that finds them all full fails.
	maxCuckooFilters = 32
	// maxCuckooBytes bounds one value (16 GiB) so that a corrupt header
	// can never ask for more.
	maxCuckooBytes      = 1 << 34
	maxCuckooFirstBytes = 1 << 32 // the first sub-filter: 4 GiB
	maxCuckooExpansion  = 32768
	maxCuckooIterations = 65535
)

// Validate checks the ranges RedisBloom documents, and that the first
// sub-filter fits in a value.
func (s CuckooSpec) Validate() error {
	switch {
	case s.BucketSize < 1 || s.BucketSize > 255:
		return fmt.Errorf("%w: cuckoo bucket size %d must be in 1..255", ErrInvalidArgument, s.BucketSize)
	case s.MaxIterations < 1 || s.MaxIterations > maxCuckooIterations:
		return fmt.Errorf("%w: cuckoo max iterations %d must be in 1..%d", ErrInvalidArgument, s.MaxIterations, maxCuckooIterations)
	case s.Expansion < 0 || s.Expansion > maxCuckooExpansion:
		return fmt.Errorf("%w: cuckoo expansion %d must be in 0..%d", ErrInvalidArgument, s.Expansion, maxCuckooExpansion)
	case s.Capacity < 2*int64(s.BucketSize):
		return fmt.Errorf("%w: cuckoo capacity %d must be at least twice the bucket size (%d)", ErrInvalidArgument, s.Capacity, 2*s.BucketSize)
	}
	if lb := cuckooLog2Buckets(s.Capacity, s.BucketSize); lb > cuckoo.MaxLog2Buckets || uint64(s.BucketSize)<<lb > maxCuckooFirstBytes {
		return fmt.Errorf("%w: cuckoo capacity %d is too large", ErrCFTooLarge, s.Capacity)
	}
	return nil
}

// normalized rounds Expansion up to a power of two, as RedisBloom does.
func (s CuckooSpec) normalized() CuckooSpec {
	if s.Expansion > 1 {
		s.Expansion = 1 << bits.Len(uint(s.Expansion-1))
	}
	return s
}

// cuckooLog2Buckets is log2 of the first sub-filter's bucket count: the
// power of two at or above ⌈capacity/bucketSize⌉.
func cuckooLog2Buckets(capacity int64, bucketSize int) uint8 {
	n := (uint64(capacity) + uint64(bucketSize) - 1) / uint64(bucketSize)
	return uint8(bits.Len64(n - 1))
}

// CuckooFilter is a cuckoo value with RedisBloom's semantics: sub-filters
// of 8-bit fingerprints in buckets of BucketSize slots; when an add finds
// no room in any of them within MaxIterations evictions in the newest, a
// sub-filter Expansion times larger is stacked, up to 32.
//
// Items may be added several times (CF.ADD) and each CF.DEL removes one
// copy, newest sub-filter first. HAZARD: delete only items that were
// added; deleting an absent item that happens to match (a false positive)
// removes another item's fingerprint, which then tests negative.
//
// A CuckooFilter is not safe for concurrent use.
type CuckooFilter struct {
	spec    CuckooSpec
	filters []*cuckoo.Table
	items   uint64 // fingerprints stored: adds − deletes
	deletes uint64 // successful deletes
	dropped uint64 // blind adds that found the filter full (see applyCuckooRecord)
}

// CFInfo is what CF.INFO reports, with go-redis's field names, plus
// ItemsDropped.
type CFInfo struct {
	Size             int64 // as RedisBloom counts it: 40 bytes, 16 per sub-filter, one per slot
	NumBuckets       int64 // buckets of the first sub-filter
	NumFilters       int64
	NumItemsInserted int64 // fingerprints stored now (adds − deletes)
	NumItemsDeleted  int64
	BucketSize       int64
	ExpansionRate    int64
	MaxIteration     int64
	// ItemsDropped counts blind adds (written without reading, e.g. by
	// CFAddBlind) that found the filter full when merged: those items
	// are NOT in the filter. Adds with a reply fail with ErrFilterFull
	// instead and are never dropped.
	ItemsDropped int64
}

// NewCuckooFilter returns an empty filter with one sub-filter.
func NewCuckooFilter(spec CuckooSpec) (*CuckooFilter, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	spec = spec.normalized()
	t := cuckoo.New(cuckooLog2Buckets(spec.Capacity, spec.BucketSize), spec.BucketSize)
	return &CuckooFilter{spec: spec, filters: []*cuckoo.Table{t}}, nil
}

// Spec returns the geometry (Expansion rounded to a power of two).
func (c *CuckooFilter) Spec() CuckooSpec { return c.spec }

// Add adds one copy of item (CF.ADD). When no sub-filter has room and no
// new one may be stacked it returns ErrFilterFull, leaving c unchanged.
func (c *CuckooFilter) Add(item []byte) error { return c.addHash(itemHash(item)) }

// AddNX adds item unless it is possibly present (CF.ADDNX) and reports
// whether it added it. An absent item that does not fit is not added: it
// returns false and ErrFilterFull, leaving c unchanged, as Add does.
func (c *CuckooFilter) AddNX(item []byte) (bool, error) {
	h := itemHash(item)
	if c.existsHash(h) {
		return false, nil
	}
	if err := c.addHash(h); err != nil {
		return false, err
	}
	return true, nil
}

// Exists reports whether item is possibly present (CF.EXISTS).
func (c *CuckooFilter) Exists(item []byte) bool { return c.existsHash(itemHash(item)) }

// Count returns how many copies of item's fingerprint the filter holds
// (CF.COUNT): at least the times it was added and not deleted, more when
// other items share its fingerprint and buckets.
func (c *CuckooFilter) Count(item []byte) int64 {
	h := itemHash(item)
	fp := cuckoo.Fingerprint(h)
	var n int64
	for _, t := range c.filters {
		i1, i2 := t.Buckets1And2(h, fp)
		n += int64(t.Count(i1, i2, fp))
	}
	return n
}

// Delete removes one copy of item's fingerprint, from the newest
// sub-filter that holds one, and reports whether there was one (CF.DEL).
func (c *CuckooFilter) Delete(item []byte) bool { return c.deleteHash(itemHash(item)) }

func (c *CuckooFilter) existsHash(h uint64) bool {
	fp := cuckoo.Fingerprint(h)
	for _, t := range c.filters {
		if i1, i2 := t.Buckets1And2(h, fp); t.Has(i1, i2, fp) {
			return true
		}
	}
	return false
}

func (c *CuckooFilter) deleteHash(h uint64) bool {
	fp := cuckoo.Fingerprint(h)
	for k := len(c.filters) - 1; k >= 0; k-- {
		t := c.filters[k]
		if i1, i2 := t.Buckets1And2(h, fp); t.Delete(i1, i2, fp) {
			c.items--
			c.deletes++
			return true
		}
	}
	return false
}

// addHash places one fingerprint: in a free slot of its buckets in any
// sub-filter, oldest first ("unused capacity in prior sub-filters is
// used"); else by evictions in the newest; else in a new sub-filter.
// Evictions are seeded with the item hash, so the result is a function of
// the filter and the item.
func (c *CuckooFilter) addHash(h uint64) error {
	fp := cuckoo.Fingerprint(h)
	for _, t := range c.filters {
		if i1, i2 := t.Buckets1And2(h, fp); t.InsertFree(i1, i2, fp) {
			c.items++
			return nil
		}
	}
	last := c.filters[len(c.filters)-1]
	if i1, i2 := last.Buckets1And2(h, fp); last.InsertKick(i1, i2, fp, c.spec.MaxIterations, h) {
		c.items++
		return nil
	}
	t, err := c.grow()
	if err != nil {
		return err
	}
	i1, i2 := t.Buckets1And2(h, fp)
	t.InsertFree(i1, i2, fp) // an empty table always has room
	c.items++
	return nil
}

// grow stacks a new sub-filter, or returns ErrFilterFull.
func (c *CuckooFilter) grow() (*cuckoo.Table, error) {
	if c.spec.Expansion == 0 {
		return nil, fmt.Errorf("%w: cuckoo filter may not expand (expansion 0)", ErrFilterFull)
	}
	if len(c.filters) >= maxCuckooFilters {
		return nil, fmt.Errorf("%w: cuckoo filter has the most sub-filters allowed (%d)", ErrFilterFull, maxCuckooFilters)
	}
	lb := c.filters[len(c.filters)-1].Log2Buckets() + uint8(bits.TrailingZeros(uint(c.spec.Expansion)))
	if lb > cuckoo.MaxLog2Buckets || uint64(c.spec.BucketSize)<<lb > maxCuckooBytes-c.slotBytes() {
		return nil, fmt.Errorf("%w: no room for another cuckoo sub-filter of 2^%d buckets", ErrFilterFull, lb)
	}
	t := cuckoo.New(lb, c.spec.BucketSize)
	c.filters = append(c.filters, t)
	return t, nil
}

func (c *CuckooFilter) slotBytes() uint64 {
	var n uint64
	for _, t := range c.filters {
		n += uint64(len(t.Slots()))
	}
	return n
}

// Info returns CF.INFO's fields.
func (c *CuckooFilter) Info() CFInfo {
	return CFInfo{
		Size:             int64(40 + 16*uint64(len(c.filters)) + c.slotBytes()),
		NumBuckets:       int64(c.filters[0].Buckets()),
		NumFilters:       int64(len(c.filters)),
		NumItemsInserted: int64(c.items),
		NumItemsDeleted:  int64(c.deletes),
		BucketSize:       int64(c.spec.BucketSize),
		ExpansionRate:    int64(c.spec.Expansion),
		MaxIteration:     int64(c.spec.MaxIterations),
		ItemsDropped:     int64(c.dropped),
	}
}
