package sketchcol

import "math/bits"

// Parameters of Redis's HyperLogLog, which sieve's HLL values reproduce
// byte for byte (FORMAT.md, "HyperLogLog value").
const (
	hllP              = 14                              // index bits
	hllQ              = 64 - hllP                       // bits left for the rank: 50
	hllRegisters      = 1 << hllP                       // 16384
	hllMaxRank        = hllQ + 1                        // 51: the rank of a hash whose top 50 bits are zero
	hllHeaderLen      = 16                              // "HYLL", encoding, 3 unused, 8 cache
	hllDenseLen       = hllHeaderLen + hllRegisters*6/8 // 12304
	hllSparseMaxBytes = 3000                            // Redis's hll-sparse-max-bytes default
	hllSparseValMax   = 32                              // largest value a sparse VAL opcode holds
	hllSeed           = 0xadc83b19                      // Redis's MurmurHash64A seed
)

// HLL is an in-memory HyperLogLog with Redis's parameters: 16384 six-bit
// registers, MurmurHash64A with Redis's seed, Ertl's improved estimator.
// The zero value is an empty sketch.
//
// Its encoding (Bytes) is canonical: the Redis bytes are a function of the
// registers alone (see FORMAT.md, "Canonical encoding"), which is what
// lets merge operands be folded in any grouping.
//
// An HLL is not safe for concurrent use.
type HLL struct {
	reg       [hllRegisters]uint8
	card      int64 // cached estimate, meaningful when cardValid
	cardValid bool
}

// NewHLL returns an empty HyperLogLog.
func NewHLL() *HLL { return new(HLL) }

// hllPosition returns the register an element goes to and the rank it
// offers there: the index is the low 14 bits of the hash, the rank is one
// more than the number of trailing zeros of the other 50 bits (a 1 is put
// above them so the rank is at most 51).
func hllPosition(elem []byte) (index int, rank uint8) {
	h := murmurHash64A(elem, hllSeed)
	index = int(h & (hllRegisters - 1))
	h = h>>hllP | 1<<hllQ
	return index, uint8(bits.TrailingZeros64(h) + 1)
}

// Add adds elem and reports whether a register changed (what PFADD
// counts).
func (h *HLL) Add(elem []byte) bool {
	i, r := hllPosition(elem)
	return h.set(i, r)
}

// set raises register i to r and reports whether it changed.
func (h *HLL) set(i int, r uint8) bool {
	if h.reg[i] >= r {
		return false
	}
	h.reg[i] = r
	h.cardValid = false
	return true
}

// Merge raises every register of h to the one of o (PFMERGE): the union of
// the two sets. It is associative, commutative and idempotent.
func (h *HLL) Merge(o *HLL) {
	changed := false
	for i, r := range o.reg {
		if r > h.reg[i] {
			h.reg[i] = r
			changed = true
		}
	}
	if changed {
		h.cardValid = false
	}
}

// Register returns register i (0 ≤ i < 16384).
func (h *HLL) Register(i int) uint8 { return h.reg[i] }

// Count returns the estimated number of distinct elements added (PFCOUNT),
// from the cache when it is valid, and caches it.
func (h *HLL) Count() int64 {
	if !h.cardValid {
		histo := histogramOf(&h.reg)
		h.card = histo.estimate()
		h.cardValid = true
	}
	return h.card
}

// Clone returns an independent copy of h.
func (h *HLL) Clone() *HLL {
	c := *h
	return &c
}

// Equal reports whether h and o have the same registers.
func (h *HLL) Equal(o *HLL) bool { return h.reg == o.reg }

// histogramOf counts registers by value. Four interleaved counters break
// the dependency between increments of the same bucket (most registers of
// a small sketch are zero), which makes it about four times faster.
// REQUIRES: every register ≤ 51.
func histogramOf(reg *[hllRegisters]uint8) hllHisto {
	var part [4][64]int32
	for i := 0; i < hllRegisters; i += 4 {
		part[0][reg[i]&63]++
		part[1][reg[i+1]&63]++
		part[2][reg[i+2]&63]++
		part[3][reg[i+3]&63]++
	}
	var histo hllHisto
	for v := range histo {
		histo[v] = int(part[0][v] + part[1][v] + part[2][v] + part[3][v])
	}
	return histo
}
