package sketchcol

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/sievedb/sieve/sketchcol/internal/cuckoo"
)

// A paged cuckoo filter keeps a scalable cuckoo filter as many small keys,
// as the paged Bloom filter does (FORMAT.md, "Paged cuckoo filter"):
//
//   - the header, at the user's key in the sketch family: the geometry
//     (capacity, bucket size, max iterations, expansion), the number of
//     sub-filters, the fingerprints each holds, the deletes and the
//     blind adds dropped;
//   - the pages, in the family "sketch-pages": sub-filter i is an array of
//     pages of a power of two of buckets, at most 4 KiB of slots each. A
//     page never written reads as empty slots and costs nothing.
//
// Items hash and move exactly as in the single-value filter (cuckoo.go):
// the same fingerprint, the same two buckets, the same eviction draws, so
// a paged filter answers every command as the value would.

const (
	kindPagedCuckoo     = 0x32 // value: paged cuckoo header
	kindPagedCuckooOp   = 0x33 // operand: header counts and sub-filters
	kindPagedCuckooDump = 0x34 // Dump/Restore only, never stored
	kindCuckooPage      = 0x38 // page value: slots
	kindCuckooPageOp    = 0x39 // page operand: slot writes

	// cuckooPageBytes bounds a page: 4 KiB of slots, one data block of the
	// engine's, as a Bloom page.
	cuckooPageBytes = 4096
)

// pagedCuckoo is a decoded header.
type pagedCuckoo struct {
	spec    CuckooSpec // normalized
	items   []uint64   // fingerprints stored in each sub-filter; len is the number of sub-filters
	deletes uint64     // successful deletes
	dropped uint64     // blind adds that found the filter full
	// Adds a Batch wrote blind (item hashes, in order), not yet placed:
	// the next command under the key's lock places them first.
	pending []uint64
}

func (*pagedCuckoo) Kind() Kind { return KindCuckoo }

func (c *pagedCuckoo) clone() *pagedCuckoo {
	d := *c
	d.items = append([]uint64(nil), c.items...)
	d.pending = append([]uint64(nil), c.pending...)
	return &d
}

// newPagedCuckoo returns the header of an empty filter with one
// sub-filter.
func newPagedCuckoo(spec CuckooSpec) (*pagedCuckoo, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return &pagedCuckoo{spec: spec.normalized(), items: []uint64{0}}, nil
}

// pcLayer is one sub-filter's geometry.
type pcLayer struct {
	log2Buckets uint8
	log2PerPage uint8 // buckets per page: 2^log2PerPage
	bucketSize  int
}

func (l pcLayer) pageBytes() int { return l.bucketSize << l.log2PerPage }
func (l pcLayer) pages() int64   { return 1 << (l.log2Buckets - l.log2PerPage) }
func (l pcLayer) slots() uint64  { return uint64(l.bucketSize) << l.log2Buckets }

// cuckooPageLog2 is log2 of the buckets per page for a bucket size: the
// largest power of two of buckets within cuckooPageBytes.
func cuckooPageLog2(bucketSize int) uint8 {
	return uint8(bits.Len(uint(cuckooPageBytes/bucketSize)) - 1)
}

// layer returns sub-filter i's geometry (i within the 32 allowed).
func (c *pagedCuckoo) layer(i int) pcLayer {
	lb := cuckooLog2Buckets(c.spec.Capacity, c.spec.BucketSize)
	if c.spec.Expansion > 1 {
		lb += uint8(i * bits.TrailingZeros(uint(c.spec.Expansion)))
	}
	return pcLayer{log2Buckets: lb, log2PerPage: min(lb, cuckooPageLog2(c.spec.BucketSize)), bucketSize: c.spec.BucketSize}
}

// canGrow reports why sub-filter n (the next) may not be added, as
// CuckooFilter.grow decides: nil when it may.
func (c *pagedCuckoo) growErr(n int) error {
	if c.spec.Expansion == 0 {
		return errCuckooNoExpand
	}
	if n >= maxCuckooFilters {
		return errCuckooMaxFilters
	}
	var total uint64
	for i := range n {
		total += c.layer(i).slots()
	}
	prev := c.layer(n - 1).log2Buckets
	lb := int(prev) + bits.TrailingZeros(uint(c.spec.Expansion))
	if lb > cuckoo.MaxLog2Buckets || uint64(c.spec.BucketSize)<<lb > maxCuckooBytes-total {
		return errCuckooNoRoom
	}
	return nil
}

// stored is the fingerprints stored (CF.INFO's items inserted).
func (c *pagedCuckoo) stored() uint64 {
	var n uint64
	for _, x := range c.items {
		n += x
	}
	return n
}

// info is CF.INFO, Size as RedisBloom counts it (as CuckooFilter.Info).
func (c *pagedCuckoo) info() CFInfo {
	var slots uint64
	for i := range c.items {
		slots += c.layer(i).slots()
	}
	return CFInfo{
		Size:             int64(40 + 16*uint64(len(c.items)) + slots),
		NumBuckets:       int64(uint64(1) << c.layer(0).log2Buckets),
		NumFilters:       int64(len(c.items)),
		NumItemsInserted: int64(c.stored()),
		NumItemsDeleted:  int64(c.deletes),
		BucketSize:       int64(c.spec.BucketSize),
		ExpansionRate:    int64(c.spec.Expansion),
		MaxIteration:     int64(c.spec.MaxIterations),
		ItemsDropped:     int64(c.dropped),
	}
}

// Header value (FORMAT.md, "Paged cuckoo header"): kind, version, bucket
// size, sub-filters n, max iterations uint16, expansion uint16, capacity
// uint64, deletes uint64, dropped uint64, n fingerprint counts uint64,
// pending m uint32, m item hashes uint64; all little-endian.
const pagedCuckooHeaderLen = 4 + 2 + 2 + 8 + 8 + 8

// maxCuckooPending bounds the pending adds a header holds (a Batch's
// adds wait for the key's next command; a header beyond this refuses
// more, dropping them as a full filter does).
const maxCuckooPending = 1 << 20

func (c *pagedCuckoo) appendValue(dst []byte) []byte {
	le := binary.LittleEndian
	dst = append(dst, kindPagedCuckoo, version1, byte(c.spec.BucketSize), byte(len(c.items)))
	dst = le.AppendUint16(dst, uint16(c.spec.MaxIterations))
	dst = le.AppendUint16(dst, uint16(c.spec.Expansion))
	dst = le.AppendUint64(dst, uint64(c.spec.Capacity))
	dst = le.AppendUint64(dst, c.deletes)
	dst = le.AppendUint64(dst, c.dropped)
	for _, x := range c.items {
		dst = le.AppendUint64(dst, x)
	}
	dst = le.AppendUint32(dst, uint32(len(c.pending)))
	for _, h := range c.pending {
		dst = le.AppendUint64(dst, h)
	}
	return dst
}

// parsePagedCuckoo decodes and checks a header value.
func parsePagedCuckoo(v []byte) (*pagedCuckoo, error) {
	le := binary.LittleEndian
	if err := checkValueHeader(v, kindPagedCuckoo, pagedCuckooHeaderLen); err != nil {
		return nil, err
	}
	n := int(v[3])
	end := pagedCuckooHeaderLen + 8*n + 4
	if n < 1 || n > maxCuckooFilters || len(v) < end || uint64(len(v)-end) != 8*uint64(le.Uint32(v[end-4:])) ||
		le.Uint32(v[end-4:]) > maxCuckooPending {
		return nil, corruptf("paged cuckoo header: %d sub-filters in %d bytes", n, len(v))
	}
	spec, err := checkedCuckooSpec(le.Uint64(v[8:]), v[2], le.Uint16(v[4:]), le.Uint16(v[6:]))
	if err != nil {
		return nil, corruptf("paged cuckoo header: %v", err)
	}
	c := &pagedCuckoo{spec: spec, deletes: le.Uint64(v[16:]), dropped: le.Uint64(v[24:]), items: make([]uint64, n)}
	if c.deletes > math.MaxInt64/2 || c.dropped > math.MaxInt64/2 {
		return nil, corruptf("paged cuckoo header: counts %d, %d", c.deletes, c.dropped)
	}
	for i := range n {
		if i > 0 {
			if err := c.growErr(i); err != nil {
				return nil, corruptf("paged cuckoo header: sub-filter %d: %v", i, err)
			}
		}
		x := le.Uint64(v[pagedCuckooHeaderLen+8*i:])
		if x > c.layer(i).slots() {
			return nil, corruptf("paged cuckoo header: sub-filter %d claims %d fingerprints", i, x)
		}
		c.items[i] = x
	}
	for p := v[end:]; len(p) > 0; p = p[8:] {
		c.pending = append(c.pending, le.Uint64(p))
	}
	return c, nil
}

// checkedCuckooSpec builds and checks a stored geometry: CF.RESERVE's
// ranges, the expansion already a power of two.
func checkedCuckooSpec(capacity uint64, bucketSize byte, maxIter, expansion uint16) (CuckooSpec, error) {
	spec := CuckooSpec{Capacity: int64(min(capacity, math.MaxInt64)), BucketSize: int(bucketSize),
		MaxIterations: int(maxIter), Expansion: int(expansion)}
	if err := spec.Validate(); err != nil {
		return spec, err
	}
	if spec != spec.normalized() {
		return spec, corruptf("cuckoo expansion %d is not a power of two", spec.Expansion)
	}
	return spec, nil
}

// pagedCuckooOp is the header operand: create the header (with spec, or
// the defaults) if missing, make sure it has at least layers sub-filters,
// and add the deltas.
type pagedCuckooOp struct {
	spec    *CuckooSpec
	layers  int
	deletes uint64
	dropped uint64
	items   []int64  // fingerprint count deltas, by sub-filter
	drain   uint64   // pending adds placed: drop this many from the front
	appends []uint64 // pending adds to append (a Batch's), before drain applies
}

func (*pagedCuckooOp) kind() Kind { return KindCuckoo }

func (o *pagedCuckooOp) create() (sketch, error) {
	spec := DefaultCuckooSpec()
	if o.spec != nil {
		spec = *o.spec
	}
	return newPagedCuckoo(spec)
}

// apply folds o into a header; a cuckoo filter stored whole is left alone,
// as a value of another kind would be. Counts stay within what the
// sub-filters can hold, so that no operand makes the header unreadable.
func (o *pagedCuckooOp) apply(s sketch) {
	c, ok := s.(*pagedCuckoo)
	if !ok {
		return
	}
	for len(c.items) < min(max(o.layers, len(o.items)), maxCuckooFilters) && c.growErr(len(c.items)) == nil {
		c.items = append(c.items, 0)
	}
	for i, d := range o.items {
		j := min(i, len(c.items)-1)
		x := int64(c.items[j]) + d
		c.items[j] = uint64(min(max(x, 0), int64(c.layer(j).slots())))
	}
	c.deletes = min(c.deletes+o.deletes, math.MaxInt64/2)
	c.dropped = min(c.dropped+o.dropped, math.MaxInt64/2)
	c.appendPending(o.appends)
	c.pending = c.pending[min(o.drain, uint64(len(c.pending))):]
}

// appendPending queues blind adds, dropping (and counting) those past
// maxCuckooPending.
func (c *pagedCuckoo) appendPending(hs []uint64) {
	room := max(0, maxCuckooPending-len(c.pending))
	if len(hs) > room {
		c.dropped = min(c.dropped+uint64(len(hs)-room), math.MaxInt64/2)
		hs = hs[:room]
	}
	c.pending = append(c.pending, hs...)
}

// Header operand (FORMAT.md): kind, version, flags (bit 0: geometry
// follows), [geometry as the cuckoo operand's: capacity uint64, bucket
// size 1, max iterations uint16, expansion uint16], sub-filters 1 byte,
// deletes uvarint, dropped uvarint, m uvarint, m zigzag varint deltas,
// drain uvarint, a uvarint, a item hashes uint64.
func appendPagedCuckooOp(dst []byte, o *pagedCuckooOp) []byte {
	le := binary.LittleEndian
	dst = appendOpHeader(dst, kindPagedCuckooOp, o.spec != nil)
	if o.spec != nil {
		dst = le.AppendUint64(dst, uint64(o.spec.Capacity))
		dst = append(dst, byte(o.spec.BucketSize))
		dst = le.AppendUint16(dst, uint16(o.spec.MaxIterations))
		dst = le.AppendUint16(dst, uint16(o.spec.Expansion))
	}
	dst = append(dst, byte(o.layers))
	dst = binary.AppendUvarint(dst, o.deletes)
	dst = binary.AppendUvarint(dst, o.dropped)
	dst = binary.AppendUvarint(dst, uint64(len(o.items)))
	for _, d := range o.items {
		dst = binary.AppendVarint(dst, d)
	}
	dst = binary.AppendUvarint(dst, o.drain)
	dst = binary.AppendUvarint(dst, uint64(len(o.appends)))
	for _, h := range o.appends {
		dst = le.AppendUint64(dst, h)
	}
	return dst
}

func decodePagedCuckooOp(b []byte) (op, error) {
	spec, rest, err := opHeader(b, kindPagedCuckooOp, cuckooOpSpecLen, "paged cuckoo")
	if err != nil {
		return nil, err
	}
	o := &pagedCuckooOp{}
	if spec != nil {
		le := binary.LittleEndian
		sp, err := checkedCuckooSpec(le.Uint64(spec), spec[8], le.Uint16(spec[9:]), le.Uint16(spec[11:]))
		if err != nil {
			return nil, corruptf("paged cuckoo operand geometry: %v", err)
		}
		o.spec = &sp
	}
	if len(rest) < 1 || rest[0] > maxCuckooFilters {
		return nil, corruptf("paged cuckoo operand: bad sub-filter count")
	}
	o.layers, rest = int(rest[0]), rest[1:]
	var vals [3]uint64
	for i := range vals {
		v, k := canonicalUvarint(rest)
		if k <= 0 || v > math.MaxInt64/4 {
			return nil, corruptf("paged cuckoo operand: bad count")
		}
		vals[i], rest = v, rest[k:]
	}
	o.deletes, o.dropped = vals[0], vals[1]
	if vals[2] > maxCuckooFilters {
		return nil, corruptf("paged cuckoo operand: %d deltas", vals[2])
	}
	for range vals[2] {
		d, k := binary.Varint(rest)
		if k <= 0 || (k > 1 && rest[k-1] == 0) || d > math.MaxInt64/4 || d < -math.MaxInt64/4 {
			return nil, corruptf("paged cuckoo operand: bad delta")
		}
		o.items, rest = append(o.items, d), rest[k:]
	}
	return o, o.decodePending(rest)
}

// decodePending decodes the operand's tail: drain and appends.
func (o *pagedCuckooOp) decodePending(rest []byte) error {
	d, k := canonicalUvarint(rest)
	if k <= 0 || d > maxCuckooPending {
		return corruptf("paged cuckoo operand: bad drain")
	}
	o.drain, rest = d, rest[k:]
	n, k := canonicalUvarint(rest)
	if k <= 0 || n != uint64(len(rest)-k)/8 || (len(rest)-k)%8 != 0 {
		return corruptf("paged cuckoo operand: bad pending adds")
	}
	for rest = rest[k:]; len(rest) > 0; rest = rest[8:] {
		o.appends = append(o.appends, binary.LittleEndian.Uint64(rest))
	}
	return nil
}

// foldPagedCuckooOps folds header operands (oldest first) into one: the
// first one's geometry, the most sub-filters, the deltas and drains
// summed, the pending adds concatenated. Dropping from the front of the
// pending adds commutes with appending to their back while there are
// enough of them, which a Store's operands ensure (a command drains only
// adds it read, under the key's lock), and the counts' clamping in apply
// is never reached by them either (each one's deltas are what its command
// did), so the fold is exact.
func foldPagedCuckooOps(ops []op) *pagedCuckooOp {
	out := &pagedCuckooOp{spec: ops[0].(*pagedCuckooOp).spec}
	for _, x := range ops {
		o := x.(*pagedCuckooOp)
		out.layers = max(out.layers, o.layers)
		out.deletes = min(out.deletes+o.deletes, math.MaxInt64/4)
		out.dropped = min(out.dropped+o.dropped, math.MaxInt64/4)
		out.drain = min(out.drain+o.drain, maxCuckooPending)
		out.appends = append(out.appends, o.appends...)
		for i, d := range o.items {
			if i == len(out.items) {
				out.items = append(out.items, 0)
			}
			out.items[i] = min(max(out.items[i]+d, -math.MaxInt64/4), math.MaxInt64/4)
		}
	}
	return out
}
