package filter

import (
	"encoding/binary"
	"math"
)

// Buckets of the cuckoo filters (table blocks and the standalone
// CuckooTableFilter). A bucket holds 4 slots of f bits, slot j in bits
// [j·f, (j+1)·f) of a little-endian word; a zero slot is empty, so
// fingerprints are never zero. Buckets are stride = ⌈4f/8⌉ bytes apart.
//
// Bucket choice is partial-key cuckoo hashing (Fan, Andersen, Kaminsky and
// Mitzenmacher 2014): a key's home bucket i1 comes from its hash, and its
// other bucket is computed from a bucket and the fingerprint alone, so a
// fingerprint can be moved without its key. The paper uses i2 = i1 XOR
// hash(fp), which needs a power-of-two bucket count; rounding up to one
// would leave tables between 48% and 95% full and break the 12.8 bits/key
// budget of Cuckoo(12). sieve uses the reflection
//
//	i2 = (c(fp) − i1) mod N,  c(fp) = ⌊(fp·φ mod 2^64) / 2^32 · N / 2^32⌋
//
// which, like XOR, is an involution for each fingerprint (applying it to i2
// gives back i1), so it keeps the property the paper relies on, while N can
// be any count. For the few keys with 2·i1 ≡ c(fp) mod N both buckets
// coincide; such a key simply has 4 slots instead of 8.

const (
	bucketSlots        = 4
	minFingerprintBits = 4
	maxFingerprintBits = 16
	cuckooTargetLoad   = 0.95
	// maxKicks bounds the evictions of one insertion. Fan et al. use 500,
	// with which a large table fills to 95.4–96.2% before the first failure;
	// with 2000 it fills to about 97.3%, so the 95% target leaves margin
	// (measured on 1M keys, f = 12).
	maxKicks = 2000
)

// cuckooLayout holds the constants derived from the fingerprint width f.
type cuckooLayout struct {
	f      uint
	stride uint64 // bytes per bucket
	fpMax  uint64 // 2^f − 1: fingerprints are 1..fpMax
	mask   uint64 // the 4f bits of a bucket
	lo, hi uint64 // the lowest and highest bit of every slot
}

func newCuckooLayout(f int) cuckooLayout {
	l := cuckooLayout{f: uint(f), stride: uint64(bucketSlots*f+7) / 8, fpMax: 1<<f - 1}
	l.mask = math.MaxUint64 >> (64 - bucketSlots*l.f)
	for j := range uint(bucketSlots) {
		l.lo |= 1 << (j * l.f)
	}
	l.hi = l.lo << (l.f - 1)
	return l
}

// fingerprint maps the low 32 bits of h uniformly onto 1..2^f−1.
func (l *cuckooLayout) fingerprint(h uint64) uint64 {
	return 1 + uint64(reduce32(uint32(h), uint32(l.fpMax)))
}

// homeBucket picks the first bucket from the high 32 bits of h.
func homeBucket(h uint64, n uint32) uint32 { return reduce32(uint32(h>>32), n) }

// altBucket returns the other bucket of fingerprint fp stored in bucket i.
func altBucket(i uint32, fp uint64, n uint32) uint32 {
	c := reduce32(uint32(fp*golden64>>32), n)
	if c >= i {
		return c - i
	}
	return uint32(uint64(c) + uint64(n) - uint64(i))
}

// load returns bucket i of data. REQUIRES: i·stride + 8 ≤ len(data).
func (l *cuckooLayout) load(data []byte, i uint32) uint64 {
	return binary.LittleEndian.Uint64(data[uint64(i)*l.stride:]) & l.mask
}

// store writes bucket i, leaving the bytes of neighbouring buckets as they
// are. REQUIRES: i·stride + 8 ≤ len(data).
func (l *cuckooLayout) store(data []byte, i uint32, w uint64) {
	b := data[uint64(i)*l.stride:]
	old := binary.LittleEndian.Uint64(b)
	binary.LittleEndian.PutUint64(b, old&^l.mask|w)
}

// has reports whether any slot of bucket w holds fp (fp = 0 finds an empty
// slot).
func (l *cuckooLayout) has(w, fp uint64) bool { return l.matches(w, fp) != 0 }

// matches is non-zero if and only if a slot of w holds fp. It XORs fp into
// every slot and looks for a zero slot with the borrow trick
// (v − lo) & ^v & hi, which is exact for "some slot is zero" (it may flag
// the wrong slot above the first zero one, never a slot when none is zero).
// Bits above the bucket are set first, so a neighbour's bytes in w do not
// matter.
func (l *cuckooLayout) matches(w, fp uint64) uint64 {
	v := (w ^ fp*l.lo) | ^l.mask
	return (v - l.lo) &^ v & l.hi
}

func (l *cuckooLayout) slot(w uint64, j uint) uint64 { return w >> (j * l.f) & l.fpMax }

func (l *cuckooLayout) setSlot(w uint64, j uint, fp uint64) uint64 {
	return w&^(l.fpMax<<(j*l.f)) | fp<<(j*l.f)
}

// put stores fp in the first empty slot of w and reports whether there was one.
func (l *cuckooLayout) put(w, fp uint64) (uint64, bool) {
	for j := range uint(bucketSlots) {
		if l.slot(w, j) == 0 {
			return l.setSlot(w, j, fp), true
		}
	}
	return w, false
}

// count returns the number of slots of w holding fp.
func (l *cuckooLayout) count(w, fp uint64) int {
	n := 0
	for j := range uint(bucketSlots) {
		if l.slot(w, j) == fp {
			n++
		}
	}
	return n
}

// cuckooBuckets is the bucket count for n entries at the target load.
func cuckooBuckets(n uint64, load float64) uint32 {
	b := math.Ceil(float64(n) / (bucketSlots * load))
	if b > math.MaxUint32 {
		return math.MaxUint32
	}
	return max(1, uint32(b))
}

// kickRand is the deterministic generator that picks victims during
// insertion (a 64-bit LCG; its top bits are used). Determinism makes a
// table's filter block a pure function of its keys.
type kickRand uint64

func (r *kickRand) next() uint64 {
	*r = *r*6364136223846793005 + 1442695040888963407
	return uint64(*r) >> 33
}
