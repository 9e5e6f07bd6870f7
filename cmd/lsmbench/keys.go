package main

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
)

// Keys. Present key i (0 ≤ i < num) carries the number 2i and missing key j
// the number 2j+1; the number goes through mix64, a fixed bijection of the
// 64-bit integers, and is written big-endian, followed by '0' padding up to
// -key_size (db_bench's layout). Because mix64 is a bijection and the
// numbers differ in parity, a missing key is never equal to a present one —
// readmissing measures only filter negatives and false positives — and both
// kinds spread uniformly over the key space, so a missing key falls inside
// some table's key range and only a filter (or a data-block search) can rule
// it out.
//
// The keys do not depend on -seed (only the access order does), so
// -use_existing_db finds the keys an earlier run wrote with the same -num and
// -key_size.
type keyspace struct {
	num     int
	keySize int
}

// mix64 is the SplitMix64 finalizer (Steele, Lea and Flood 2014). Each step
// — xor with a right shift, multiplication by an odd constant — is
// invertible, so the whole is a bijection of uint64.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// presentNumber and missingNumber are the scrambled numbers of present key i
// and missing key j.
func presentNumber(i uint64) uint64 { return mix64(2 * i) }
func missingNumber(j uint64) uint64 { return mix64(2*j + 1) }

// encode writes the key of scrambled number v into dst, which must hold
// keySize bytes, and returns dst[:keySize]. Keys sort as their numbers do.
func (ks keyspace) encode(dst []byte, v uint64) []byte {
	dst = dst[:ks.keySize]
	binary.BigEndian.PutUint64(dst, v)
	for i := 8; i < len(dst); i++ {
		dst[i] = '0'
	}
	return dst
}

func (ks keyspace) present(dst []byte, i uint64) []byte {
	return ks.encode(dst, presentNumber(i))
}

func (ks keyspace) missing(dst []byte, j uint64) []byte {
	return ks.encode(dst, missingNumber(j))
}

// hotKeys is the size of readhot's subset: 1% of the keys (at least one),
// as in db_bench.
func (ks keyspace) hotKeys() int { return max(1, ks.num/100) }

// sortedNumbers returns the scrambled numbers of all present keys in key
// order: fillseq writes them in this order.
func (ks keyspace) sortedNumbers() []uint64 {
	v := make([]uint64, ks.num)
	for i := range v {
		v[i] = presentNumber(uint64(i))
	}
	slices.Sort(v)
	return v
}

// shuffledNumbers returns the scrambled numbers of all present keys in a
// random order (each key once): fillrandom writes them in this order, so the
// database ends up holding exactly num keys.
func (ks keyspace) shuffledNumbers(seed uint64) []uint64 {
	v := make([]uint64, ks.num)
	for i := range v {
		v[i] = presentNumber(uint64(i))
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	rng.Shuffle(len(v), func(i, j int) { v[i], v[j] = v[j], v[i] })
	return v
}

// split returns the half-open range [lo, hi) of n items that thread t of
// threads handles.
func split(n, t, threads int) (lo, hi int) {
	return n * t / threads, n * (t + 1) / threads
}

// valueSource hands out values that each compress to about ratio of
// their size, like db_bench's and peerbench's: a value is ⌈ratio·size⌉
// random printable bytes followed by copies of them. Values are slots of a
// pool (at least 1 MiB, at least two slots) handed out in turn.
type valueSource struct {
	pool []byte
	size int
	next int // next slot
}

const valuePoolSize = 1 << 20

func newValueSource(size int, ratio float64, seed uint64) *valueSource {
	rng := rand.New(rand.NewPCG(seed, 0x7a1))
	slots := max(2, valuePoolSize/max(1, size))
	pool := make([]byte, slots*size)
	raw := max(1, int(math.Ceil(ratio*float64(size))))
	for off := 0; off < len(pool); off += size {
		v := pool[off : off+size]
		for j := 0; j < min(raw, size); j++ {
			v[j] = byte(' ' + rng.IntN(95))
		}
		for j := raw; j < size; j += raw {
			copy(v[j:], v[:raw])
		}
	}
	return &valueSource{pool: pool, size: size, next: int(seed % uint64(slots))}
}

// value returns the next value, a slice of the pool: fine for Put, which
// copies it.
func (v *valueSource) value() []byte {
	off := v.next * v.size
	v.next++
	if (v.next+1)*v.size > len(v.pool) {
		v.next = 0
	}
	return v.pool[off : off+v.size : off+v.size]
}
