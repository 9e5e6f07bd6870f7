package sketchcol

import (
	"bytes"
	"fmt"
	"math"
	"slices"
)

// TopK is a Top-K sketch with RedisBloom's TOPK.* semantics: HeavyKeeper
// (Gong et al., "HeavyKeeper: An Accurate Algorithm for Finding Top-k
// Elephant Flows", USENIX ATC 2018) — depth rows of width (fingerprint,
// count) buckets — beside a min-heap of the k items with the largest
// counts seen.
//
// It follows RedisBloom's TopK_Add step for step but for two rules, which
// make an add a function of the value and the item alone (so a replay, or
// any grouping of merges, gives the same bytes):
//
//   - Decay is deterministic. Where RedisBloom draws libc rand() to decide
//     whether a foreign bucket of count c decays (with probability
//     decay^c), sieve draws from splitmix64 seeded with rowHash(h ⊕ (fp'
//     << 32 | c), i): the item's hash h, the row i, and the bucket's
//     fingerprint fp' and count c when the add reaches it (FORMAT.md,
//     "Top-K value").
//   - After an item's heap count changes, the heap is restored in both
//     directions (RedisBloom only sifts down, which can leave a decayed
//     count above its parent).
//
// TOPK.LIST orders by count, descending, ties by the item's bytes (the
// order RedisBloom's unstable qsort leaves them in is unspecified). A TopK
// is not safe for concurrent mutation.
type TopK struct {
	spec    TopKSpec
	buckets []hkBucket  // row-major, width × depth
	heap    []topKEntry // a min-heap on count, k entries
	lookup  [topKDecayTable]float64
}

type hkBucket struct{ fp, count uint32 }

// topKEntry is one heap slot; an unused one (RedisBloom's NULL item) has
// count 0.
type topKEntry struct {
	fp, count uint32
	used      bool
	item      []byte
}

const (
	topKDecayTable = 256
	// maxTopKIncr is RedisBloom's bound on a TOPK.INCRBY increment.
	maxTopKIncr = 100000
	// maxTopKBuckets bounds width × depth (512 MiB of buckets), maxTopK
	// the heap (every add scans it, as RedisBloom's).
	maxTopKBuckets = 1 << 26
	maxTopK        = 1 << 20
)

// TopKSpec is a Top-K sketch's parameters: TOPK.RESERVE key k width depth
// decay.
type TopKSpec struct {
	K, Width, Depth int
	Decay           float64
}

// DefaultTopKSpec is RedisBloom's defaults of TOPK.RESERVE (width 8, depth
// 7, decay 0.9) with k = 10: the sketch a blind add creates on a missing
// key (RedisBloom's TOPK.ADD of a missing key fails, as TopKAdd does).
func DefaultTopKSpec() TopKSpec { return TopKSpec{K: 10, Width: 8, Depth: 7, Decay: 0.9} }

// Validate checks the parameters as TOPK.RESERVE does, and bounds their
// size.
func (s TopKSpec) Validate() error {
	switch {
	case s.K < 1 || s.K > math.MaxUint32:
		return fmt.Errorf("%w (%d)", ErrTopKInvalidK, s.K)
	case s.Width < 1 || s.Width > math.MaxUint32:
		return fmt.Errorf("%w (%d)", ErrTopKInvalidWidth, s.Width)
	case s.Depth < 1 || s.Depth > math.MaxUint32:
		return fmt.Errorf("%w (%d)", ErrTopKInvalidDepth, s.Depth)
	case !(s.Decay > 0 && s.Decay <= 1):
		return fmt.Errorf("%w (%v)", ErrTopKInvalidDecay, s.Decay)
	case s.K > maxTopK || s.Width > maxTopKBuckets/s.Depth:
		return fmt.Errorf("%w: k %d, %d × %d buckets", ErrTopKTooLarge, s.K, s.Width, s.Depth)
	}
	return nil
}

// NewTopK returns an empty Top-K sketch of spec.
func NewTopK(spec TopKSpec) (*TopK, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	t := &TopK{spec: spec, buckets: make([]hkBucket, spec.Width*spec.Depth), heap: make([]topKEntry, spec.K)}
	t.initLookup()
	return t, nil
}

func (t *TopK) initLookup() {
	for i := range t.lookup {
		t.lookup[i] = math.Pow(t.spec.Decay, float64(i))
	}
}

// Spec returns the sketch's parameters.
func (t *TopK) Spec() TopKSpec { return t.spec }

// Kind returns KindTopK.
func (*TopK) Kind() Kind                      { return KindTopK }
func (t *TopK) appendValue(dst []byte) []byte { return t.appendBinary(dst) }

func topKFingerprint(h uint64) uint32 { return uint32(h >> 32) }

// decayProb is RedisBloom's probability that a bucket of count c decays.
func (t *TopK) decayProb(c uint32) float64 {
	if c < topKDecayTable {
		return t.lookup[c]
	}
	const last = topKDecayTable - 1
	return math.Pow(t.lookup[last], float64(c/last)) * t.lookup[c%last]
}

// Add counts item incr times (TOPK.ADD is incr 1, TOPK.INCRBY up to
// 100000) and returns the item it expelled from the heap, nil when none.
func (t *TopK) Add(item []byte, incr uint32) []byte {
	h := itemHash(item)
	fp := topKFingerprint(h)
	var maxCount uint32
	for i := range t.spec.Depth {
		b := &t.buckets[i*t.spec.Width+int(rowHash(h, i)%uint64(t.spec.Width))]
		t.addBucket(b, h, i, incr)
		if b.fp == fp {
			maxCount = max(maxCount, b.count)
		}
	}
	return t.offer(item, fp, maxCount)
}

// addBucket is HeavyKeeper's step on row i's bucket b of an item of hash
// h counted incr times.
func (t *TopK) addBucket(b *hkBucket, h uint64, i int, incr uint32) {
	fp := topKFingerprint(h)
	switch {
	case b.count == 0:
		b.fp, b.count = fp, incr
	case b.fp == fp:
		b.count = uint32(min(uint64(b.count)+uint64(incr), math.MaxUint32))
	default:
		t.decay(b, h, i, fp, incr)
	}
}

// offer is the heap's step of an add of item (of fingerprint fp) whose
// buckets hold at most maxCount: it returns the item expelled, nil when
// none.
func (t *TopK) offer(item []byte, fp, maxCount uint32) []byte {
	if maxCount < t.heap[0].count {
		return nil
	}
	if j := t.find(item, fp); j >= 0 {
		t.heap[j].count = maxCount
		t.fix(j)
		return nil
	}
	var expelled []byte
	if t.heap[0].used {
		expelled = t.heap[0].item
	}
	t.heap[0] = topKEntry{fp: fp, count: maxCount, used: true, item: bytes.Clone(item)}
	t.fix(0)
	return expelled
}

// decay is HeavyKeeper's decay of a foreign bucket b by the incr units of
// an item of hash h in row i: each unit decrements b with probability
// decay^count, and once b reaches 0 the item takes it over with the units
// left. The draws come from splitmix64 seeded by the bucket's state; once
// the probability is 0 (a count so large that decay^count underflows) no
// draw can succeed, and none is made.
func (t *TopK) decay(b *hkBucket, h uint64, i int, fp, incr uint32) {
	s := rowHash(h^(uint64(b.fp)<<32|uint64(b.count)), i)
	p := t.decayProb(b.count)
	for left := incr; left > 0 && p > 0; left-- {
		s += 0x9e3779b97f4a7c15
		z := (s ^ s>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		z ^= z >> 31
		if float64(z>>11)*(1.0/(1<<53)) < p {
			if b.count--; b.count == 0 {
				b.fp, b.count = fp, left
				return
			}
			p = t.decayProb(b.count)
		}
	}
}

// find returns the heap index of item, -1 if it is not there (searching
// from the last slot, as RedisBloom).
func (t *TopK) find(item []byte, fp uint32) int {
	for j := len(t.heap) - 1; j >= 0; j-- {
		e := &t.heap[j]
		if e.used && e.fp == fp && bytes.Equal(e.item, item) {
			return j
		}
	}
	return -1
}

// fix restores the min-heap property after heap[j]'s count changed: up
// while its parent is larger (only a decayed count can need it), then
// down as RedisBloom's heapifyDown (which also moves an entry below a
// child of equal count, once: the entry an equal-count add expels is
// RedisBloom's).
func (t *TopK) fix(j int) {
	h := t.heap
	for j > 0 && h[(j-1)/2].count > h[j].count {
		h[(j-1)/2], h[j] = h[j], h[(j-1)/2]
		j = (j - 1) / 2
	}
	n := len(h)
	if n < 2 || (n-2)/2 < j {
		return
	}
	c := 2*j + 1
	if c+1 < n && h[c].count > h[c+1].count {
		c++
	}
	if h[c].count > h[j].count {
		return
	}
	top := h[j]
	for {
		h[j] = h[c]
		j = c
		if (n-2)/2 < c {
			break
		}
		c = 2*c + 1
		if c+1 < n && h[c].count > h[c+1].count {
			c++
		}
		if h[c].count >= top.count {
			break
		}
	}
	h[j] = top
}

// Count returns item's estimated count (TOPK.COUNT, deprecated in
// RedisBloom): the largest count among the buckets of its rows that hold
// its fingerprint, 0 when none does.
func (t *TopK) Count(item []byte) int64 {
	h := itemHash(item)
	fp := topKFingerprint(h)
	var n uint32
	for i := range t.spec.Depth {
		b := &t.buckets[i*t.spec.Width+int(rowHash(h, i)%uint64(t.spec.Width))]
		if b.fp == fp && b.count > n {
			n = b.count
		}
	}
	return int64(n)
}

// Query reports whether item is in the heap (TOPK.QUERY).
func (t *TopK) Query(item []byte) bool {
	return t.find(item, topKFingerprint(itemHash(item))) >= 0
}

// TopKItem is one entry of TOPK.LIST WITHCOUNT.
type TopKItem struct {
	Item  []byte
	Count int64
}

// List returns the heap's items by count, descending, ties in heap order
// (TOPK.LIST WITHCOUNT): RedisBloom sorts a copy of its heap with glibc's
// qsort, a merge sort, so equal counts keep their heap order, and the heap
// here is laid out as RedisBloom's (find, fix).
func (t *TopK) List() []TopKItem {
	var out []TopKItem
	for _, e := range t.heap {
		if e.used {
			out = append(out, TopKItem{Item: bytes.Clone(e.item), Count: int64(e.count)})
		}
	}
	slices.SortStableFunc(out, func(a, b TopKItem) int {
		switch {
		case a.Count > b.Count:
			return -1
		case a.Count < b.Count:
			return 1
		}
		return 0
	})
	return out
}

// TopKInfo is TOPK.INFO.
type TopKInfo struct {
	K, Width, Depth int
	Decay           float64
}

// Info returns TOPK.INFO.
func (t *TopK) Info() TopKInfo {
	return TopKInfo{K: t.spec.K, Width: t.spec.Width, Depth: t.spec.Depth, Decay: t.spec.Decay}
}
