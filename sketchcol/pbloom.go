package sketchcol

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// A paged Bloom filter keeps a scalable Bloom filter as many small keys,
// so that a command reads and writes only what an item touches (FORMAT.md,
// "Paged Bloom filter"):
//
//   - the header, at the user's key in the sketch family: the geometry
//     (error rate, capacity, expansion, non-scaling), the number of
//     sub-filters and the items counted in each;
//   - the pages, in the family "sketch-pages": sub-filter i is an array of
//     pages of at most 4 KiB of bits; an item sets (and is tested by) its
//     k_i bits all in one page of each sub-filter (a blocked Bloom filter,
//     Putze et al. 2007). A page never written reads as zeros and costs
//     nothing.
//
// Sub-filter i is built for capacity·expansion^i items at
// errorRate·0.5^(i+1): RedisBloom's tightening (ERROR_TIGHTENING_RATIO
// 0.5), so the rates sum below the requested one however far the filter
// scales, and the first sub-filter's half leaves room for what the
// blocking adds.

const (
	kindPagedBloom   = 0x22 // value: paged Bloom header
	kindPagedBloomOp = 0x23 // operand: header counts and sub-filters
	kindBloomPage    = 0x28 // page value: bits
	kindBloomPageOp  = 0x29 // page operand: bits to set

	// bloomPageBits is the largest page: 4 KiB of bits, about one data
	// block of the engine's, so a page read is one block read.
	bloomPageBits = 4096 * 8
)

// pbLayer is one sub-filter's geometry, derived from the header's.
type pbLayer struct {
	capacity int64   // items it is built for
	rate     float64 // its false-positive rate
	k        int     // bits per item
	pageBits int64   // bits per page (a multiple of 64, at most bloomPageBits)
	pages    int64   // pages
}

// bits is the sub-filter's size in bits.
func (l pbLayer) bits() int64 { return l.pageBits * l.pages }

// pagedLayer returns sub-filter i's geometry for spec (validated).
func pagedLayer(spec BloomSpec, i int) (pbLayer, error) {
	capacity := float64(spec.Capacity)
	if i > 0 {
		capacity *= math.Pow(float64(spec.Expansion), float64(i))
	}
	rate := spec.ErrorRate * math.Pow(0.5, float64(i+1))
	bpk := -math.Log(rate) / (math.Ln2 * math.Ln2)
	total := math.Ceil(capacity * bpk)
	if !(total <= maxPagedBits) || capacity > math.MaxInt64/2 {
		return pbLayer{}, fmt.Errorf("%w: Bloom sub-filter %d would need %.3g bits", ErrFilterFull, i, total)
	}
	l := pbLayer{capacity: int64(capacity), rate: rate, k: int(math.Ceil(math.Ln2 * bpk))}
	l.pageBits = min(bloomPageBits, (int64(total)+63)/64*64)
	l.pages = (int64(total) + l.pageBits - 1) / l.pageBits
	return l, nil
}

// maxPagedBits bounds one sub-filter: 2^40 bits (128 GiB), so that page
// numbers fit 32 bits with room to spare.
const maxPagedBits = 1 << 40

// pbProbe is where an item lives in one sub-filter: its page and the
// double-hashing start and step of its bits in the page.
type pbProbe struct {
	page int64
	a, b uint32
	// rb: RedisBloom's probes (rbBits), from its two hashes ra and rb2
	rb      bool
	ra, rb2 uint64
}

// bfHash is an item's hashes: h places it in pages; a and b, computed
// for a filter with RedisBloom's probing only, are RedisBloom's two
// 64-bit MurmurHash64A hashes of it (seed 0xc6a4a7935bd1e995, then a).
type bfHash struct{ h, a, b uint64 }

// rbSeed is RedisBloom's seed of an item's first hash.
const rbSeed = 0xc6a4a7935bd1e995

// hashOf returns item's hashes for b: RedisBloom's two only when some
// sub-filter is one page (sub-filters only grow, so the first one is).
func (b *pagedBloom) hashOf(item []byte) bfHash {
	x := bfHash{h: itemHash(item)}
	if b.rb && b.layer(0).pages == 1 {
		x.a = murmurHash64A(item, rbSeed)
		x.b = murmurHash64A(item, x.a)
	}
	return x
}

// probe locates x in sub-filter i: a sub-filter of one page in a filter
// with RedisBloom's probing sets the bits RedisBloom sets in a filter of
// the same bits (x.a + j·x.b mod bits, j < hashes), so that its answers,
// false positives included, are RedisBloom's; any other, probeOf's.
func (b *pagedBloom) probe(x bfHash, i int) pbProbe {
	l := b.layer(i)
	if b.rb && l.pages == 1 {
		return pbProbe{rb: true, ra: x.a, rb2: x.b}
	}
	return probeOf(x.h, i, l)
}

// probeOf locates item hash h in sub-filter i of geometry l. Each
// sub-filter remixes h with its index (MurmurHash3's finalizer), takes the
// page from the high bits by multiply-shift and the probes from a second
// remix, so that page and bits are independent.
func probeOf(h uint64, i int, l pbLayer) pbProbe {
	x := fmix64(h + uint64(i+1)*0x9e3779b97f4a7c15)
	page, _ := bits.Mul64(x, uint64(l.pages))
	y := fmix64(x)
	return pbProbe{page: int64(page), a: uint32(y), b: uint32(y>>32) | 1}
}

// bitAt returns probe j's bit in a page of n bits.
func (p pbProbe) bitAt(j int, n int64) uint32 {
	if p.rb {
		return uint32((p.ra + uint64(j)*p.rb2) % uint64(n))
	}
	return uint32((uint64(p.a) + uint64(j)*uint64(p.b)) % uint64(n))
}

// testPage reports whether every bit of p is set in page (nil: zeros).
func testPage(page []byte, p pbProbe, l pbLayer) bool {
	if page == nil {
		return false
	}
	for j := 0; j < l.k; j++ {
		bit := p.bitAt(j, l.pageBits)
		if page[bit>>3]&(1<<(bit&7)) == 0 {
			return false
		}
	}
	return true
}

// setPage sets p's bits in page and appends them to positions.
func setPage(page []byte, p pbProbe, l pbLayer, positions []uint32) []uint32 {
	for j := 0; j < l.k; j++ {
		bit := p.bitAt(j, l.pageBits)
		page[bit>>3] |= 1 << (bit & 7)
		positions = append(positions, bit)
	}
	return positions
}

func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// pagedBloom is a decoded header.
type pagedBloom struct {
	// rb: its single-page sub-filters probe as RedisBloom's (probe);
	// every filter created since format v4 does.
	rb     bool
	spec   BloomSpec
	counts []int64   // items added to each sub-filter; len is the number of sub-filters
	geo    []pbLayer // the sub-filters' geometry, derived from spec as asked for (layer)
}

func (*pagedBloom) Kind() Kind { return KindBloom }

// newPagedBloom returns the header of an empty filter with one sub-filter.
func newPagedBloom(spec BloomSpec) (*pagedBloom, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if _, err := pagedLayer(spec, 0); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	return &pagedBloom{rb: true, spec: spec.normalized(), counts: []int64{0}}, nil
}

func (b *pagedBloom) clone() *pagedBloom {
	return &pagedBloom{rb: b.rb, spec: b.spec, counts: append([]int64(nil), b.counts...), geo: append([]pbLayer(nil), b.geo...)}
}

// layer returns sub-filter i's geometry, computed once per header.
func (b *pagedBloom) layer(i int) pbLayer {
	for len(b.geo) <= i {
		l, _ := pagedLayer(b.spec, len(b.geo)) // every layer in counts was checked when added
		b.geo = append(b.geo, l)
	}
	return b.geo[i]
}

// pages is the number of pages of all its sub-filters.
func (b *pagedBloom) pages() int64 {
	var n int64
	for i := range b.counts {
		n += b.layer(i).pages
	}
	return n
}

// card is BF.CARD: the items added.
func (b *pagedBloom) card() int64 {
	var n int64
	for _, c := range b.counts {
		n += c
	}
	return n
}

// info is BF.INFO. Size is what RedisBloom reports for a filter of the
// same sub-filters (its chain's 32 bytes, then 64 per sub-filter and its
// bit array's bytes): the sub-filters' bits as bytes are what the filter
// occupies on disk when every page is written.
func (b *pagedBloom) info() BFInfo {
	inf := BFInfo{Filters: int64(len(b.counts)), ItemsInserted: b.card(), ExpansionRate: int64(b.spec.Expansion), Size: 32}
	for i := range b.counts {
		l := b.layer(i)
		inf.Capacity += l.capacity
		inf.Size += 64 + l.bits()/8
	}
	return inf
}

// Header value (FORMAT.md): kind, version, flags (bit 0 non-scaling),
// sub-filters n, expansion uint16, error rate float64, capacity uint64,
// then n counts uint64; all little-endian.
const pagedHeaderLen = 4 + 2 + 8 + 8

func (b *pagedBloom) appendValue(dst []byte) []byte {
	le := binary.LittleEndian
	flags := byte(0)
	if b.spec.NonScaling {
		flags = 1
	}
	if b.rb {
		flags |= 2
	}
	dst = append(dst, kindPagedBloom, version1, flags, byte(len(b.counts)))
	dst = le.AppendUint16(dst, uint16(b.spec.Expansion))
	dst = le.AppendUint64(dst, math.Float64bits(b.spec.ErrorRate))
	dst = le.AppendUint64(dst, uint64(b.spec.Capacity))
	for _, c := range b.counts {
		dst = le.AppendUint64(dst, uint64(c))
	}
	return dst
}

// parsePagedBloom decodes and checks a header value.
func parsePagedBloom(v []byte) (*pagedBloom, error) {
	le := binary.LittleEndian
	if err := checkValueKind(v, kindPagedBloom); err != nil {
		return nil, err
	}
	if len(v) < pagedHeaderLen {
		return nil, corruptf("paged Bloom header of %d bytes", len(v))
	}
	flags, n := v[2], int(v[3])
	if flags > 3 || n < 1 || n > maxBloomLayers || (flags&1 == 1 && n != 1) || len(v) != pagedHeaderLen+8*n {
		return nil, corruptf("paged Bloom header: flags %#x, %d sub-filters, %d bytes", flags, n, len(v))
	}
	spec := BloomSpec{Expansion: int(le.Uint16(v[4:])), ErrorRate: math.Float64frombits(le.Uint64(v[6:])),
		Capacity: int64(le.Uint64(v[14:])), NonScaling: flags&1 == 1}
	if spec.NonScaling != (spec.Expansion == 0) || spec.Validate() != nil {
		return nil, corruptf("paged Bloom header: bad geometry %+v", spec)
	}
	b := &pagedBloom{rb: flags&2 != 0, spec: spec, counts: make([]int64, n)}
	for i := range b.counts {
		if _, err := pagedLayer(spec, i); err != nil {
			return nil, corruptf("paged Bloom header: sub-filter %d: %v", i, err)
		}
		c := le.Uint64(v[pagedHeaderLen+8*i:])
		if c > math.MaxInt64/2 {
			return nil, corruptf("paged Bloom header: count %d", c)
		}
		b.counts[i] = int64(c)
	}
	return b, nil
}

// pagedBloomOp is the header operand: create the header (with spec, or
// the defaults) if missing, make sure it has at least layers sub-filters,
// and add deltas[i] to sub-filter i's count.
type pagedBloomOp struct {
	spec   *BloomSpec
	rb     bool // with spec: the filter it creates probes as RedisBloom's
	layers int
	deltas []int64 // by sub-filter
}

func (*pagedBloomOp) kind() Kind { return KindBloom }

func (o *pagedBloomOp) create() (sketch, error) {
	spec := DefaultBloomSpec()
	if o.spec != nil {
		spec = *o.spec
	}
	b, err := newPagedBloom(spec)
	if err == nil {
		// Every writer that creates a filter since format v4 gives its
		// geometry and probing; an operand without them is format v3's.
		b.rb = o.spec != nil && o.rb
	}
	return b, err
}

// apply folds o into a header; a legacy (single-value) Bloom filter is
// left alone, as a value of another kind would be.
func (o *pagedBloomOp) apply(s sketch) {
	b, ok := s.(*pagedBloom)
	if !ok {
		return
	}
	n := min(max(o.layers, len(o.deltas)), maxBloomLayers)
	if b.spec.NonScaling {
		n = 1
	}
	for len(b.counts) < n {
		if _, err := pagedLayer(b.spec, len(b.counts)); err != nil {
			break
		}
		b.counts = append(b.counts, 0)
	}
	for i, d := range o.deltas {
		if i < len(b.counts) {
			b.counts[i] += d
		} else {
			b.counts[len(b.counts)-1] += d // overfill: never lose a count
		}
	}
}

// Header operand (FORMAT.md): kind, version, flags (bit 0: geometry
// follows), [geometry as in BF.RESERVE: flags 1 byte
// (bit 0 non-scaling), expansion uint16, error rate float64, capacity
// uint64], sub-filters 1 byte, then a uvarint m and m uvarint deltas, one
// per sub-filter from the first.
func appendPagedBloomOp(dst []byte, o *pagedBloomOp) []byte {
	le := binary.LittleEndian
	flags := byte(0)
	if o.spec != nil {
		flags |= opFlagSpec
	}
	dst = append(dst, kindPagedBloomOp, version1, flags)
	if o.spec != nil {
		nf := byte(0)
		if o.spec.NonScaling {
			nf = 1
		}
		if o.rb {
			nf |= 2
		}
		dst = append(dst, nf)
		dst = le.AppendUint16(dst, uint16(o.spec.Expansion))
		dst = le.AppendUint64(dst, math.Float64bits(o.spec.ErrorRate))
		dst = le.AppendUint64(dst, uint64(o.spec.Capacity))
	}
	dst = append(dst, byte(o.layers))
	dst = binary.AppendUvarint(dst, uint64(len(o.deltas)))
	for _, d := range o.deltas {
		dst = binary.AppendUvarint(dst, uint64(d))
	}
	return dst
}

func decodePagedBloomOp(b []byte) (op, error) {
	le := binary.LittleEndian
	if err := checkValueKind(b, kindPagedBloomOp); err != nil {
		return nil, err
	}
	if len(b) < 3 || b[2] > 1 {
		return nil, corruptf("paged Bloom operand: bad flags")
	}
	o := &pagedBloomOp{}
	rest := b[3:]
	if b[2]&opFlagSpec != 0 {
		if len(rest) < 19 || rest[0] > 3 {
			return nil, corruptf("paged Bloom operand: short geometry")
		}
		spec := BloomSpec{NonScaling: rest[0]&1 == 1, Expansion: int(le.Uint16(rest[1:])),
			ErrorRate: math.Float64frombits(le.Uint64(rest[3:])), Capacity: int64(le.Uint64(rest[11:]))}
		if spec.NonScaling != (spec.Expansion == 0) || spec.Validate() != nil {
			return nil, corruptf("paged Bloom operand: bad geometry %+v", spec)
		}
		if _, err := pagedLayer(spec, 0); err != nil {
			return nil, corruptf("paged Bloom operand: %v", err)
		}
		o.spec, o.rb, rest = &spec, rest[0]&2 != 0, rest[19:]
	}
	if len(rest) < 1 || rest[0] > maxBloomLayers {
		return nil, corruptf("paged Bloom operand: bad sub-filter count")
	}
	o.layers, rest = int(rest[0]), rest[1:]
	m, k := canonicalUvarint(rest)
	if k <= 0 || m > maxBloomLayers {
		return nil, corruptf("paged Bloom operand: bad delta count")
	}
	rest = rest[k:]
	for range m {
		d, k := canonicalUvarint(rest)
		if k <= 0 || d > math.MaxInt64/4 {
			return nil, corruptf("paged Bloom operand: bad delta")
		}
		o.deltas, rest = append(o.deltas, int64(d)), rest[k:]
	}
	if len(rest) != 0 {
		return nil, corruptf("paged Bloom operand: %d trailing bytes", len(rest))
	}
	return o, nil
}

// foldPagedBloomOps folds header operands (oldest first) into one: the
// first one's geometry (the one that creates a missing key), the most
// sub-filters, the deltas summed.
func foldPagedBloomOps(ops []op) *pagedBloomOp {
	out := &pagedBloomOp{spec: ops[0].(*pagedBloomOp).spec, rb: ops[0].(*pagedBloomOp).rb}
	for _, x := range ops {
		o := x.(*pagedBloomOp)
		out.layers = max(out.layers, o.layers)
		for i, d := range o.deltas {
			if i == len(out.deltas) {
				out.deltas = append(out.deltas, 0)
			}
			out.deltas[i] += d
		}
	}
	return out
}

// canonicalUvarint is binary.Uvarint refusing (n ≤ 0) an encoding longer
// than the shortest, so that a value decodes from exactly one encoding.
func canonicalUvarint(b []byte) (uint64, int) {
	v, n := binary.Uvarint(b)
	if n > 1 && b[n-1] == 0 {
		return 0, -1
	}
	return v, n
}
