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
	return Buckets1And2(t.log2Buckets, h, fp)
}

// alt is the other bucket of fp stored in bucket i; alt(alt(i)) = i.
func (t *Table) alt(i uint64, fp byte) uint64 { return Alt(t.log2Buckets, i, fp) }

// Buckets1And2 returns the two candidate buckets, in a table of
// 2^log2Buckets buckets, of an item with hash h and fingerprint fp.
func Buckets1And2(log2Buckets uint8, h uint64, fp byte) (i1, i2 uint64) {
	i1 = uint64(uint32(h)) & (uint64(1)<<log2Buckets - 1)
	return i1, Alt(log2Buckets, i1, fp)
}

// Alt is the other bucket of fp stored in bucket i of a table of
// 2^log2Buckets buckets; Alt(Alt(i)) = i.
func Alt(log2Buckets uint8, i uint64, fp byte) uint64 {
	return (i ^ uint64(fp)*fpMix) & (uint64(1)<<log2Buckets - 1)
}

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
	ok, _, _ := Kick(tableBuckets{t}, t.log2Buckets, t.bucketSize, i1, i2, fp, maxIter, seed)
	return ok
}

type tableBuckets struct{ t *Table }

func (b tableBuckets) Bucket(i uint64) ([]byte, error) { return b.t.bucket(i), nil }

// Buckets gives Kick the buckets of a table kept elsewhere (in pages): the
// bucket slices it returns are the table's own, changed in place.
type Buckets interface {
	Bucket(i uint64) ([]byte, error)
}

// Slot names one slot: bucket and index in it.
type Slot struct {
	Bucket uint64
	Index  int
}

// Kick is Table.InsertKick on any Buckets of a table of 2^log2Buckets
// buckets of bucketSize slots. It returns whether fp was placed and, when
// it was, every slot it changed (the last one the empty slot filled). On
// failure, or on an error from b, the buckets are as they were.
func Kick(b Buckets, log2Buckets uint8, bucketSize int, i1, i2 uint64, fp byte, maxIter int, seed uint64) (bool, []Slot, error) {
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
	path := make([]Slot, 0, min(maxIter, 64))
	var err error
	for range maxIter {
		var cur, nb []byte
		if cur, err = b.Bucket(i); err != nil {
			break
		}
		j := int(next() % uint64(bucketSize))
		fp, cur[j] = cur[j], fp
		path = append(path, Slot{i, j})
		i = Alt(log2Buckets, i, fp)
		if nb, err = b.Bucket(i); err != nil {
			break
		}
		if k := index(nb, 0); k >= 0 {
			nb[k] = fp
			return true, append(path, Slot{i, k}), nil
		}
	}
	for s := len(path) - 1; s >= 0; s-- {
		cur, _ := b.Bucket(path[s].Bucket) // read before: no error now
		fp, cur[path[s].Index] = cur[path[s].Index], fp
	}
	return false, nil, err
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
