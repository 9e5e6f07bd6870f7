package filter

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// CuckooTableFilter is a mutable cuckoo filter (Fan et al. 2014) that
// supports deletion, for users who need a filter they can remove keys
// from: one fixed-size table whose buckets, fingerprints and alternate
// bucket are those of the Cuckoo policy's blocks (FORMAT.md). It does not
// grow. The sketch column family's cuckoo values are not this
// type but sketchcol.CuckooFilter (RedisBloom's CF.*: stacked sub-filters
// of 8-bit fingerprints).
//
// The same key may be added several times (up to 8 copies, two full
// buckets); each Delete removes one copy.
//
// HAZARD: Delete only keys that were added. Deleting a key that was never
// added but happens to test positive (a false positive) removes the
// fingerprint of another key, which then tests negative. Delete reports
// false, and changes nothing, for a key whose fingerprint is in neither of
// its buckets.
//
// A CuckooTableFilter is not safe for concurrent mutation; concurrent
// Tests are fine.
type CuckooTableFilter struct {
	data     []byte // n·stride bytes of buckets, then 8 bytes of padding for loads
	n        uint32
	l        cuckooLayout
	count    uint64
	capacity uint64
	rng      kickRand
	path     []kickStep // scratch for undoing a failed insertion
}

type kickStep struct {
	bucket uint32
	slot   uint
}

const (
	cuckooValueHeaderLen = 22 // format, f, buckets, capacity, count
	maxCuckooBuckets     = 1 << 31
)

// ErrFull is returned by CuckooTableFilter.Add when no place is found for a key
// within 2000 evictions. The filter is left exactly as it was.
var ErrFull = errors.New("filter: cuckoo filter is full")

// NewCuckooTableFilter returns an empty cuckoo filter with fingerprintBits-bit
// fingerprints (4..16) and ⌈capacity/(4·0.95)⌉ buckets. Inserting capacity
// distinct keys succeeds with high probability; beyond that Add starts to
// fail with ErrFull. Its false-positive rate is at most 8/2^f.
func NewCuckooTableFilter(capacity uint64, fingerprintBits int) (*CuckooTableFilter, error) {
	if capacity == 0 {
		return nil, errors.New("filter: cuckoo filter capacity must be positive")
	}
	if fingerprintBits < minFingerprintBits || fingerprintBits > maxFingerprintBits {
		return nil, fmt.Errorf("filter: cuckoo fingerprint bits %d, want %d..%d", fingerprintBits, minFingerprintBits, maxFingerprintBits)
	}
	n := cuckooBuckets(capacity, cuckooTargetLoad)
	if n > maxCuckooBuckets {
		return nil, fmt.Errorf("filter: cuckoo filter of capacity %d needs %d buckets, more than %d", capacity, n, maxCuckooBuckets)
	}
	l := newCuckooLayout(fingerprintBits)
	return &CuckooTableFilter{data: make([]byte, uint64(n)*l.stride+8), n: n, l: l, capacity: capacity, rng: kickRand(n)}, nil
}

// locate returns the fingerprint and the two buckets of key.
func (c *CuckooTableFilter) locate(key []byte) (fp uint64, i1, i2 uint32) {
	h := hashKey(key)
	fp = c.l.fingerprint(h)
	i1 = homeBucket(h, c.n)
	return fp, i1, altBucket(i1, fp, c.n)
}

// Add adds one copy of key. It returns ErrFull, leaving the filter
// unchanged, if the key cannot be placed.
func (c *CuckooTableFilter) Add(key []byte) error {
	fp, i1, i2 := c.locate(key)
	for _, i := range [2]uint32{i1, i2} {
		if w, ok := c.l.put(c.l.load(c.data, i), fp); ok {
			c.l.store(c.data, i, w)
			c.count++
			return nil
		}
	}
	if !c.kick(i1, i2, fp) {
		return ErrFull
	}
	c.count++
	return nil
}

// kick is kickIn of the table builder, recording its path so that a failed
// insertion can be undone.
func (c *CuckooTableFilter) kick(i1, i2 uint32, fp uint64) bool {
	i := i1
	if c.rng.next()&1 == 1 {
		i = i2
	}
	c.path = c.path[:0]
	for range maxKicks {
		j := uint(c.rng.next() % bucketSlots)
		w := c.l.load(c.data, i)
		victim := c.l.slot(w, j)
		c.l.store(c.data, i, c.l.setSlot(w, j, fp))
		c.path = append(c.path, kickStep{i, j})
		fp = victim
		i = altBucket(i, fp, c.n)
		if w, ok := c.l.put(c.l.load(c.data, i), fp); ok {
			c.l.store(c.data, i, w)
			return true
		}
	}
	// Undo: walk back, putting each evicted fingerprint where it was.
	for s := len(c.path) - 1; s >= 0; s-- {
		st := c.path[s]
		w := c.l.load(c.data, st.bucket)
		placed := c.l.slot(w, st.slot)
		c.l.store(c.data, st.bucket, c.l.setSlot(w, st.slot, fp))
		fp = placed
	}
	return false
}

// Test reports false if key is certainly not in the filter.
func (c *CuckooTableFilter) Test(key []byte) bool {
	fp, i1, i2 := c.locate(key)
	return c.l.has(c.l.load(c.data, i1), fp) || c.l.has(c.l.load(c.data, i2), fp)
}

// Delete removes one copy of key's fingerprint and reports whether there
// was one. See the hazard in the type's comment.
func (c *CuckooTableFilter) Delete(key []byte) bool {
	fp, i1, i2 := c.locate(key)
	for _, i := range [2]uint32{i1, i2} {
		w := c.l.load(c.data, i)
		for j := range uint(bucketSlots) {
			if c.l.slot(w, j) == fp {
				c.l.store(c.data, i, c.l.setSlot(w, j, 0))
				c.count--
				return true
			}
		}
	}
	return false
}

// Count returns how many copies of key's fingerprint the filter holds (what
// Redis's CF.COUNT returns): at least the times key was added and not
// deleted, more if other keys share its fingerprint and buckets.
func (c *CuckooTableFilter) Count(key []byte) int {
	fp, i1, i2 := c.locate(key)
	n := c.l.count(c.l.load(c.data, i1), fp)
	if i2 != i1 {
		n += c.l.count(c.l.load(c.data, i2), fp)
	}
	return n
}

// Len returns the number of fingerprints stored: adds minus deletes.
func (c *CuckooTableFilter) Len() uint64 { return c.count }

// Load returns Len over the number of slots.
func (c *CuckooTableFilter) Load() float64 {
	return float64(c.count) / float64(bucketSlots*uint64(c.n))
}

// Capacity returns the capacity the filter was sized for.
func (c *CuckooTableFilter) Capacity() uint64 { return c.capacity }

// Buckets returns the number of 4-slot buckets.
func (c *CuckooTableFilter) Buckets() uint32 { return c.n }

// FingerprintBits returns f.
func (c *CuckooTableFilter) FingerprintBits() int { return int(c.l.f) }

// ExpectedFPR returns the false-positive rate at the current load, CuckooFPR(f, Load()).
func (c *CuckooTableFilter) ExpectedFPR() float64 { return CuckooFPR(int(c.l.f), c.Load()) }

// MarshalBinary encodes the filter as described in FORMAT.md ("cuckoo table value").
func (c *CuckooTableFilter) MarshalBinary() ([]byte, error) {
	return c.AppendBinary(make([]byte, 0, cuckooValueHeaderLen+uint64(c.n)*c.l.stride))
}

// AppendBinary appends the MarshalBinary encoding to b.
func (c *CuckooTableFilter) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, byte(FormatCuckooTableValue), byte(c.l.f))
	b = binary.LittleEndian.AppendUint32(b, c.n)
	b = binary.LittleEndian.AppendUint64(b, c.capacity)
	b = binary.LittleEndian.AppendUint64(b, c.count)
	return append(b, c.data[:uint64(c.n)*c.l.stride]...), nil
}

// UnmarshalBinary replaces c with the filter encoded in data, which it does
// not retain. Malformed data returns an error wrapping ErrMalformed (or
// ErrTypeMismatch / ErrUnknownType for another format) and leaves c as it was.
func (c *CuckooTableFilter) UnmarshalBinary(data []byte) error {
	if err := checkValueFormat(data, FormatCuckooTableValue); err != nil {
		return err
	}
	if len(data) < cuckooValueHeaderLen {
		return malformed("cuckoo value of %d bytes is shorter than its %d-byte header", len(data), cuckooValueHeaderLen)
	}
	f := int(data[1])
	if f < minFingerprintBits || f > maxFingerprintBits {
		return malformed("cuckoo value has %d-bit fingerprints, want %d..%d", f, minFingerprintBits, maxFingerprintBits)
	}
	le := binary.LittleEndian
	l := newCuckooLayout(f)
	n := le.Uint32(data[2:])
	capacity := le.Uint64(data[6:])
	count := le.Uint64(data[14:])
	body := data[cuckooValueHeaderLen:]
	switch {
	case n == 0 || n > maxCuckooBuckets:
		return malformed("cuckoo value has %d buckets", n)
	case uint64(len(body)) != uint64(n)*l.stride:
		return malformed("cuckoo value has %d bytes of buckets for %d buckets of %d bytes", len(body), n, l.stride)
	case capacity == 0:
		return malformed("cuckoo value has capacity 0")
	}
	buf := make([]byte, len(body)+8)
	copy(buf, body)
	stored, err := countSlots(buf, &l, n)
	if err != nil {
		return err
	}
	if stored != count {
		return malformed("cuckoo value claims %d fingerprints and holds %d", count, stored)
	}
	*c = CuckooTableFilter{data: buf, n: n, l: l, count: count, capacity: capacity, rng: kickRand(uint64(n) ^ count)}
	return nil
}

// countSlots returns the number of occupied slots, and an error if the
// padding bits of a bucket (odd f) are not zero.
func countSlots(data []byte, l *cuckooLayout, n uint32) (uint64, error) {
	var stored uint64
	pad := (uint64(1)<<(8*l.stride) - 1) &^ l.mask
	if l.stride == 8 {
		pad = 0
	}
	for i := range n {
		raw := binary.LittleEndian.Uint64(data[uint64(i)*l.stride:])
		if raw&pad != 0 {
			return 0, malformed("cuckoo value bucket %d has padding bits set", i)
		}
		w := raw & l.mask
		for j := range uint(bucketSlots) {
			if l.slot(w, j) != 0 {
				stored++
			}
		}
	}
	return stored, nil
}
