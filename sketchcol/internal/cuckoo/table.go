// Package cuckoo is the bucket table of the sketch column family's cuckoo
// values: partial-key cuckoo hashing (Fan, Andersen, Kaminsky and
// Mitzenmacher, "Cuckoo Filter: Practically Better Than Bloom", CoNEXT
// 2014) with RedisBloom's geometry — 8-bit fingerprints, a configurable
// number of slots per bucket (RedisBloom's BUCKETSIZE, 1..255), a
// power-of-two number of buckets and a configurable number of evictions
// (MAXITERATIONS).
//
// It exists beside filter.CuckooTableFilter because that type fixes 4 slots
// per bucket and 500 evictions and keeps its eviction random state outside its
// encoding; here every choice is a function of the table and the item, so
// replaying the same operations on a decoded copy gives the same bytes.
//
// A Table is not safe for concurrent use.
package cuckoo

// MaxLog2Buckets bounds the bucket count (2^32): the bucket index comes
// from the low 32 bits of the item hash, the fingerprint from the high 32.
const MaxLog2Buckets = 32

// Table is a cuckoo hash table of 2^Log2Buckets buckets of BucketSize
// one-byte slots. A zero slot is empty; fingerprints are 1..255.
type Table struct {
	log2Buckets uint8
	bucketSize  int
	slots       []byte
}

// New returns an empty table.
// REQUIRES: log2Buckets ≤ MaxLog2Buckets, 1 ≤ bucketSize ≤ 255.
func New(log2Buckets uint8, bucketSize int) *Table {
	return &Table{log2Buckets: log2Buckets, bucketSize: bucketSize, slots: make([]byte, (uint64(1)<<log2Buckets)*uint64(bucketSize))}
}

// FromSlots returns a table over slots, which it keeps.
// REQUIRES: len(slots) == 2^log2Buckets · bucketSize.
func FromSlots(log2Buckets uint8, bucketSize int, slots []byte) *Table {
	return &Table{log2Buckets: log2Buckets, bucketSize: bucketSize, slots: slots}
}

// Slots returns the slot bytes, bucket after bucket; the table keeps them.
func (t *Table) Slots() []byte { return t.slots }

// Log2Buckets returns log2 of the bucket count.
func (t *Table) Log2Buckets() uint8 { return t.log2Buckets }

// Buckets returns the bucket count.
func (t *Table) Buckets() uint64 { return uint64(1) << t.log2Buckets }

// Fingerprint maps the high 32 bits of an item hash onto 1..255.
func Fingerprint(h uint64) byte { return byte((h>>32)%255) + 1 }

// fpMix spreads a fingerprint over the index bits (MurmurHash2's
// multiplier), as the paper's i2 = i1 ⊕ hash(fp).
const fpMix = 0x5bd1e995

// Buckets1And2 returns the two candidate buckets of an item with hash h
// and fingerprint fp.
func (t *Table) Buckets1And2(h uint64, fp byte) (i1, i2 uint64) {
	i1 = uint64(uint32(h)) & (t.Buckets() - 1)
	return i1, t.alt(i1, fp)
}

// alt is the other bucket of fp stored in bucket i; alt(alt(i)) = i.
func (t *Table) alt(i uint64, fp byte) uint64 { return (i ^ uint64(fp)*fpMix) & (t.Buckets() - 1) }

func (t *Table) bucket(i uint64) []byte {
	b := uint64(t.bucketSize)
	return t.slots[i*b : (i+1)*b]
}

// Count returns the number of slots holding fp in buckets i1 and i2
// (once when they are the same bucket).
func (t *Table) Count(i1, i2 uint64, fp byte) int {
	n := count(t.bucket(i1), fp)
	if i2 != i1 {
		n += count(t.bucket(i2), fp)
	}
	return n
}

func count(b []byte, fp byte) int {
	n := 0
	for _, s := range b {
		if s == fp {
			n++
		}
	}
	return n
}

// Has reports whether bucket i1 or i2 holds fp.
func (t *Table) Has(i1, i2 uint64, fp byte) bool {
	return index(t.bucket(i1), fp) >= 0 || index(t.bucket(i2), fp) >= 0
}

func index(b []byte, fp byte) int {
	for j, s := range b {
		if s == fp {
			return j
		}
	}
	return -1
}

// Delete empties one slot holding fp in bucket i1, else in i2, and
// reports whether there was one.
func (t *Table) Delete(i1, i2 uint64, fp byte) bool {
	for _, i := range [2]uint64{i1, i2} {
		b := t.bucket(i)
		if j := index(b, fp); j >= 0 {
			b[j] = 0
			return true
		}
	}
	return false
}

// InsertFree puts fp in the first empty slot of bucket i1, else of i2,
// and reports whether there was one.
func (t *Table) InsertFree(i1, i2 uint64, fp byte) bool {
	for _, i := range [2]uint64{i1, i2} {
		b := t.bucket(i)
		if j := index(b, 0); j >= 0 {
			b[j] = fp
			return true
		}
	}
	return false
}

// InsertKick places fp by evicting: up to maxIter times it swaps fp with a
// slot of its current bucket and moves the evicted fingerprint to that
// one's other bucket, stopping at the first empty slot. If none is found
// it undoes every swap and returns false, leaving the table as it was (an
// item is never lost). The slots to evict are drawn from a generator
// seeded with seed, so the outcome depends only on the table and seed.
func (t *Table) InsertKick(i1, i2 uint64, fp byte, maxIter int, seed uint64) bool {
	type step struct {
		i uint64
		j int
	}
	r := seed
	next := func() uint64 { // splitmix64
		r += 0x9e3779b97f4a7c15
		z := r
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		return z ^ z>>31
	}
	i := i1
	if next()&1 == 1 {
		i = i2
	}
	path := make([]step, 0, min(maxIter, 64))
	for range maxIter {
		b := t.bucket(i)
		j := int(next() % uint64(t.bucketSize))
		fp, b[j] = b[j], fp
		path = append(path, step{i, j})
		i = t.alt(i, fp)
		nb := t.bucket(i)
		if k := index(nb, 0); k >= 0 {
			nb[k] = fp
			return true
		}
	}
	for s := len(path) - 1; s >= 0; s-- {
		b := t.bucket(path[s].i)
		fp, b[path[s].j] = b[path[s].j], fp
	}
	return false
}

// Occupied returns the number of non-empty slots.
func (t *Table) Occupied() uint64 {
	var n uint64
	for _, s := range t.slots {
		if s != 0 {
			n++
		}
	}
	return n
}
