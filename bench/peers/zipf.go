package main

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
)

// The key choosers of YCSB (Cooper et al., SoCC 2010; the generators of
// YCSB's core package), written from their published definitions.

// zipfian draws item numbers in [0, items) with P(i) ∝ 1/(i+1)^theta by
// the method of Gray et al., "Quickly generating billion-record synthetic
// databases" (SIGMOD 1994), which YCSB's ZipfianGenerator uses. Item 0 is
// the most popular. It is read-only after newZipfian, so goroutines may
// share it (each with its own rand source).
type zipfian struct {
	items            float64
	theta, alpha     float64
	zetan, eta, half float64
	zeta2theta       float64
}

// ycsbZipfianConstant is YCSB's default request-distribution skew.
const ycsbZipfianConstant = 0.99

func newZipfian(items int, theta float64) *zipfian {
	return newZipfianZeta(items, theta, zeta(items, theta))
}

// scrambledItems and scrambledZeta are YCSB's ScrambledZipfianGenerator
// item space (10^10) and its zeta at theta 0.99, which YCSB precomputes
// (26.46902820178302) because summing 10^10 terms takes too long.
const (
	scrambledItems = 10_000_000_000
	scrambledZeta  = 26.46902820178302
)

func newZipfianZeta(items int, theta, zetan float64) *zipfian {
	z := &zipfian{items: float64(items), theta: theta, alpha: 1 / (1 - theta), zetan: zetan}
	z.zeta2theta = zeta(2, theta)
	z.eta = (1 - math.Pow(2/z.items, 1-theta)) / (1 - z.zeta2theta/z.zetan)
	z.half = 1 + math.Pow(0.5, theta)
	return z
}

// zeta is Σ_{i=1..n} 1/i^theta.
func zeta(n int, theta float64) float64 {
	var s float64
	for i := 1; i <= n; i++ {
		s += 1 / math.Pow(float64(i), theta)
	}
	return s
}

func (z *zipfian) next(r *rand.Rand) int {
	u := r.Float64()
	uz := u * z.zetan
	switch {
	case uz < 1:
		return 0
	case uz < z.half:
		return 1
	}
	v := int(z.items * math.Pow(z.eta*u-z.eta+1, z.alpha))
	return min(v, int(z.items)-1)
}

// fnv64 is FNV-1a over the 8 bytes of v, as YCSB's Utils.fnvhash64.
func fnv64(v uint64) uint64 {
	h := uint64(0xCBF29CE484222325)
	for i := 0; i < 8; i++ {
		h ^= v & 0xff
		h *= 1099511628211
		v >>= 8
	}
	return h
}

// chooser picks the record an operation touches.
type chooser interface {
	next(r *rand.Rand) int
}

// scrambledZipfian is YCSB's ScrambledZipfianGenerator as CoreWorkload
// uses it: a zipfian item over a fixed large space, hashed (FNV) onto a
// keyspace of items records, so the popular records are scattered over
// the key space rather than being the first keys. The keyspace is fixed
// for the whole workload — the records present at its start plus twice
// the inserts it expects (CoreWorkload's expectednewkeys) — and a draw of
// a record not inserted yet is drawn again: hashing onto the current
// record count instead would move every popular record at each insert,
// and a workload with inserts (E) would read uniformly.
type scrambledZipfian struct {
	z       *zipfian
	items   uint64
	records *atomic.Int64
}

// newScrambledZipfian returns the chooser of a workload that starts with
// records.Load() records and expects to insert about inserts more.
func newScrambledZipfian(z *zipfian, records *atomic.Int64, inserts int) scrambledZipfian {
	return scrambledZipfian{z: z, items: uint64(records.Load()) + 2*uint64(max(0, inserts)), records: records}
}

func (s scrambledZipfian) next(r *rand.Rand) int {
	for {
		if v := fnv64(uint64(s.z.next(r))) % s.items; v < uint64(s.records.Load()) {
			return int(v)
		}
	}
}

// skewedLatest is YCSB's SkewedLatestGenerator (workload D's "latest"):
// the newest record is the most popular, then the one before it, and so
// on, zipfian over the records' age.
type skewedLatest struct {
	z       *zipfian
	records *atomic.Int64
}

func (s skewedLatest) next(r *rand.Rand) int {
	n := int(s.records.Load())
	return max(0, n-1-s.z.next(r)%n)
}
