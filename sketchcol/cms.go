package sketchcol

import (
	"fmt"
	"math"
)

// CountMinSketch is a Count-Min sketch (Cormode and Muthukrishnan, 2005)
// with RedisBloom's CMS.* semantics: depth rows of width uint32 counters
// that saturate at 2³²−1, and a total count of increments. An item's
// estimate is the minimum of its counter in each row: never below its true
// count, and above it by more than ε·N (N the total count, width = ⌈2/ε⌉)
// with probability at most δ (depth = ⌈log δ / log ½⌉).
//
// Items are hashed once, h = xxhash64(item); the item's counter in row i
// is rowHash(h, i) mod width (FORMAT.md, "Count-Min value"). A
// CountMinSketch is not safe for concurrent mutation.
type CountMinSketch struct {
	spec     CMSSpec
	count    uint64   // total of all increments, saturating at 2⁶⁴−1
	counters []uint32 // row-major: row i is counters[i·width : (i+1)·width]
}

// CMSSpec is a Count-Min sketch's dimensions.
type CMSSpec struct {
	Width, Depth int
}

// maxCMSCounters bounds width × depth (512 MiB of counters): larger
// dimensions are refused as RedisBloom refuses what it cannot allocate.
const maxCMSCounters = 1 << 27

// DefaultCMSSpec is the geometry a blind CMS.INCRBY gives a missing key
// (ε = 0.001, δ = 0.01: 2000 × 7). RedisBloom has no default: its
// CMS.INCRBY of a missing key fails, as CMSIncrBy does.
func DefaultCMSSpec() CMSSpec { return CMSSpec{Width: 2000, Depth: 7} }

// Validate checks the dimensions as CMS.INITBYDIM does.
func (s CMSSpec) Validate() error {
	switch {
	case s.Width < 1 || s.Width > math.MaxUint32:
		return fmt.Errorf("%w (%d)", ErrCMSInvalidWidth, s.Width)
	case s.Depth < 1 || s.Depth > math.MaxUint32:
		return fmt.Errorf("%w (%d)", ErrCMSInvalidDepth, s.Depth)
	case s.Width > maxCMSCounters/s.Depth:
		return fmt.Errorf("%w: %d × %d counters is more than %d", ErrCMSTooLarge, s.Width, s.Depth, maxCMSCounters)
	}
	return nil
}

// CMSSpecByProb returns the dimensions CMS.INITBYPROB error probability
// gives, as RedisBloom computes them: width = ⌈2/error⌉, depth =
// ⌈log₁₀ probability / log₁₀ ½⌉ (the logarithms and their quotient in
// float32, as RedisBloom's log10f).
func CMSSpecByProb(errorRate, probability float64) (CMSSpec, error) {
	if !(errorRate > 0 && errorRate < 1) {
		return CMSSpec{}, fmt.Errorf("%w (%v)", ErrCMSInvalidError, errorRate)
	}
	if !(probability > 0 && probability < 1) {
		return CMSSpec{}, fmt.Errorf("%w (%v)", ErrCMSInvalidProb, probability)
	}
	w := math.Ceil(2 / errorRate)
	d := math.Ceil(float64(float32(math.Log10(float64(float32(probability)))) / float32(math.Log10(0.5))))
	if w > maxCMSCounters || d > maxCMSCounters || d < 1 {
		return CMSSpec{}, fmt.Errorf("%w: width %v depth %v", ErrCMSInvalidInit, w, d)
	}
	s := CMSSpec{Width: int(w), Depth: int(d)}
	return s, s.Validate()
}

// NewCMS returns an empty sketch of spec.
func NewCMS(spec CMSSpec) (*CountMinSketch, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return &CountMinSketch{spec: spec, counters: make([]uint32, spec.Width*spec.Depth)}, nil
}

// Spec returns the sketch's dimensions.
func (c *CountMinSketch) Spec() CMSSpec { return c.spec }

// rowHash is the hash of row i of an item of hash h: splitmix64's
// finalizer of h + (i+1)·φ64, so rows are independent functions of h.
func rowHash(h uint64, i int) uint64 {
	z := h + uint64(i+1)*0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// cell returns the index in counters of row i's counter of hash h.
func (c *CountMinSketch) cell(h uint64, i int) int {
	return i*c.spec.Width + int(rowHash(h, i)%uint64(c.spec.Width))
}

// incrHash adds incr to each row's counter of hash h (saturating at
// 2³²−1, as RedisBloom) and to the total, and returns the new estimate.
func (c *CountMinSketch) incrHash(h, incr uint64) uint32 {
	est := uint32(math.MaxUint32)
	for i := range c.spec.Depth {
		p := &c.counters[c.cell(h, i)]
		*p = uint32(min(uint64(*p)+min(incr, math.MaxUint32), math.MaxUint32))
		est = min(est, *p)
	}
	c.count = satAdd(c.count, incr)
	return est
}

func (c *CountMinSketch) queryHash(h uint64) uint32 {
	est := uint32(math.MaxUint32)
	for i := range c.spec.Depth {
		est = min(est, c.counters[c.cell(h, i)])
	}
	return est
}

// IncrBy adds incr to item's count and returns its estimate after it
// (2³²−1 once saturated: RedisBloom's "CMS: INCRBY overflow").
func (c *CountMinSketch) IncrBy(item []byte, incr uint64) uint32 {
	return c.incrHash(itemHash(item), incr)
}

// Query returns item's estimated count (CMS.QUERY).
func (c *CountMinSketch) Query(item []byte) uint32 { return c.queryHash(itemHash(item)) }

// CMSInfo is CMS.INFO: the dimensions and the total of all increments.
type CMSInfo struct {
	Width, Depth int
	Count        uint64
}

// Info returns CMS.INFO.
func (c *CountMinSketch) Info() CMSInfo {
	return CMSInfo{Width: c.spec.Width, Depth: c.spec.Depth, Count: c.count}
}

// satAdd is a + b saturating at 2⁶⁴−1.
func satAdd(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxUint64
}

// mergeCMS returns Σ weights[i]·srcs[i] (CMS.MERGE), or ErrCMSMergeOverflow
// when a counter of the sum falls outside 0..2³²−1 or the total count
// outside 0..2⁶³−1 (RedisBloom's checks), or ErrCMSDimensions when the
// sources' dimensions differ from spec.
func mergeCMS(spec CMSSpec, srcs []*CountMinSketch, weights []int64) (*CountMinSketch, error) {
	for _, s := range srcs {
		if s.spec != spec {
			return nil, ErrCMSDimensions
		}
	}
	out, err := NewCMS(spec)
	if err != nil {
		return nil, err
	}
	var total int64
	for k, s := range srcs {
		if s.count > math.MaxInt64 {
			return nil, ErrCMSMergeOverflow
		}
		var ok bool
		if total, ok = mulAdd(total, int64(s.count), weights[k]); !ok {
			return nil, ErrCMSMergeOverflow
		}
	}
	if total < 0 {
		return nil, ErrCMSMergeOverflow
	}
	out.count = uint64(total)
	for j := range out.counters {
		var sum int64
		for k, s := range srcs {
			var ok bool
			if sum, ok = mulAdd(sum, int64(s.counters[j]), weights[k]); !ok {
				return nil, ErrCMSMergeOverflow
			}
		}
		if sum < 0 || sum > math.MaxUint32 {
			return nil, ErrCMSMergeOverflow
		}
		out.counters[j] = uint32(sum)
	}
	return out, nil
}

// mulAdd is acc + a·w in int64, ok false on overflow.
func mulAdd(acc, a, w int64) (int64, bool) {
	if a != 0 && w != 0 {
		p := a * w
		if p/w != a || (a == -1 && w == math.MinInt64) || (w == -1 && a == math.MinInt64) {
			return 0, false
		}
		s := acc + p
		if (p > 0 && s < acc) || (p < 0 && s > acc) {
			return 0, false
		}
		return s, true
	}
	return acc, true
}

// Kind returns KindCMS.
func (*CountMinSketch) Kind() Kind                      { return KindCMS }
func (c *CountMinSketch) appendValue(dst []byte) []byte { return c.appendBinary(dst) }
