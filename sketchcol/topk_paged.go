package sketchcol

import (
	"encoding/binary"
	"math"
	"sync/atomic"
)

// A paged Top-K sketch (FORMAT.md, "Paged Top-K sketch") keeps its heap
// in a header at the user's key and its HeavyKeeper buckets in pages of
// their own in the family "sketch-pages": row i is cut into chunks of
// topKPageBuckets buckets, page i·pagesPerRow + j holding buckets
// j·512 .. j·512+511 of row i, so an add reads and writes one page per
// row.
//
// HeavyKeeper's adds do not commute, so neither kind of operand is a
// difference: a page operand is the list of adds that reach the page's
// buckets (item hash, increment), which the merge replays in order with
// the decay rule of TopK.addBucket — a bucket's next state depends only
// on itself and the add — and a header operand is the list of heap offers
// (item, the largest count of its buckets after its add), replayed with
// TopK.offer. Under the key's lock, the replay leaves exactly what the
// command computed from the state it read: the replies and values are
// those of the sketch stored whole.

const (
	kindPagedTopK     = 0x52 // value: paged Top-K header (parameters, heap)
	kindPagedTopKOp   = 0x53 // operand: heap offers
	kindPagedTopKDump = 0x54 // Dump/Restore only: header and pages
	kindTopKPage      = 0x58 // page value: buckets
	kindTopKPageOp    = 0x59 // page operand: adds

	// topKPageBuckets is a page's buckets: 4 KiB.
	topKPageBuckets = 512
)

// pagedTopK is a decoded Top-K header: a TopK without buckets.
type pagedTopK struct{ *TopK }

func (*pagedTopK) Kind() Kind { return KindTopK }

func newPagedTopK(spec TopKSpec) (*pagedTopK, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	t := &TopK{spec: spec, heap: make([]topKEntry, spec.K)}
	t.initLookup()
	return &pagedTopK{t}, nil
}

// appendTopKSpec appends k, width, depth (uint32) and decay (float64).
func appendTopKSpec(dst []byte, s TopKSpec) []byte {
	le := binary.LittleEndian
	dst = le.AppendUint32(dst, uint32(s.K))
	dst = le.AppendUint32(dst, uint32(s.Width))
	dst = le.AppendUint32(dst, uint32(s.Depth))
	return le.AppendUint64(dst, math.Float64bits(s.Decay))
}

func topKSpecOf(b []byte) TopKSpec {
	le := binary.LittleEndian
	return TopKSpec{K: int(le.Uint32(b)), Width: int(le.Uint32(b[4:])), Depth: int(le.Uint32(b[8:])),
		Decay: math.Float64frombits(le.Uint64(b[12:]))}
}

// Header value: kind, version, k, width, depth, decay, then the k heap
// entries as in a Top-K value.
func (t *pagedTopK) appendValue(dst []byte) []byte {
	dst = appendTopKSpec(append(dst, kindPagedTopK, version1), t.spec)
	return t.appendHeap(dst)
}

func (t *TopK) appendHeap(dst []byte) []byte {
	le := binary.LittleEndian
	for _, e := range t.heap {
		if !e.used {
			dst = append(dst, 0)
			continue
		}
		dst = le.AppendUint32(append(dst, 1), e.count)
		dst = append(binary.AppendUvarint(dst, uint64(len(e.item))), e.item...)
	}
	return dst
}

func parsePagedTopK(v []byte) (*pagedTopK, error) {
	if err := checkValueHeader(v, kindPagedTopK, topKHeaderLen); err != nil {
		return nil, err
	}
	spec := topKSpecOf(v[2:])
	if err := spec.Validate(); err != nil {
		return nil, corruptf("paged Top-K header: %v", err)
	}
	rest := v[topKHeaderLen:]
	if len(rest) < spec.K {
		return nil, corruptf("paged Top-K header of k %d is cut off", spec.K)
	}
	t := &TopK{spec: spec, heap: make([]topKEntry, spec.K)}
	if err := t.parseHeap(rest); err != nil {
		return nil, err
	}
	t.initLookup()
	return &pagedTopK{t}, nil
}

// topKRowPages is the pages of a row of width buckets.
func topKRowPages(width int) int { return (width + topKPageBuckets - 1) / topKPageBuckets }

func topKPages(spec TopKSpec) int64 { return int64(spec.Depth) * int64(topKRowPages(spec.Width)) }

// topKPageLen is the buckets of page p of a sketch of spec.
func topKPageLen(spec TopKSpec, p int64) int {
	j := int(p % int64(topKRowPages(spec.Width)))
	return min(topKPageBuckets, spec.Width-j*topKPageBuckets)
}

// topKCell locates row i's bucket of hash h: its page and index there.
func topKCell(spec TopKSpec, h uint64, i int) (page int64, idx int) {
	col := int(rowHash(h, i) % uint64(spec.Width))
	return int64(i)*int64(topKRowPages(spec.Width)) + int64(col/topKPageBuckets), col % topKPageBuckets
}

// topKOffer is a heap offer: item, with its buckets' largest count.
type topKOffer struct {
	count uint32
	item  []byte
}

// pagedTopKOp is the header operand: create the header (of spec) if
// missing, then make the offers in order.
type pagedTopKOp struct {
	spec   TopKSpec
	offers []topKOffer
}

func (*pagedTopKOp) kind() Kind                { return KindTopK }
func (o *pagedTopKOp) create() (sketch, error) { return newPagedTopK(o.spec) }

// apply makes the offers on a header; a legacy value is left alone.
func (o *pagedTopKOp) apply(s sketch) {
	t, ok := s.(*pagedTopK)
	if !ok {
		return
	}
	for _, f := range o.offers {
		t.offer(f.item, topKFingerprint(itemHash(f.item)), f.count)
	}
}

// Header operand: kind, version, k, width, depth, decay, m uvarint, then
// m × (count uint32, item length uvarint, item).
func appendPagedTopKOp(dst []byte, o *pagedTopKOp) []byte {
	dst = appendTopKSpec(append(dst, kindPagedTopKOp, version1), o.spec)
	dst = binary.AppendUvarint(dst, uint64(len(o.offers)))
	for _, f := range o.offers {
		dst = binary.LittleEndian.AppendUint32(dst, f.count)
		dst = append(binary.AppendUvarint(dst, uint64(len(f.item))), f.item...)
	}
	return dst
}

func decodePagedTopKOp(b []byte) (op, error) {
	if err := checkValueHeader(b, kindPagedTopKOp, topKHeaderLen); err != nil {
		return nil, err
	}
	o := &pagedTopKOp{spec: topKSpecOf(b[2:])}
	if err := o.spec.Validate(); err != nil {
		return nil, corruptf("paged Top-K operand: %v", err)
	}
	rest := b[topKHeaderLen:]
	m, k := canonicalUvarint(rest)
	if k <= 0 || m > uint64(len(rest)-k)/5 {
		return nil, corruptf("paged Top-K operand: bad offer count")
	}
	rest = rest[k:]
	o.offers = make([]topKOffer, m)
	for i := range o.offers {
		if len(rest) < 5 {
			return nil, corruptf("paged Top-K operand: offer %d is cut off", i)
		}
		n, k := canonicalUvarint(rest[4:])
		if k <= 0 || n > uint64(len(rest)-4-k) {
			return nil, corruptf("paged Top-K operand: offer %d has a bad item length", i)
		}
		o.offers[i] = topKOffer{count: binary.LittleEndian.Uint32(rest), item: rest[4+k : 4+k+int(n)]}
		rest = rest[4+k+int(n):]
	}
	if len(rest) != 0 {
		return nil, corruptf("paged Top-K operand: %d trailing bytes", len(rest))
	}
	return o, nil
}

// foldPagedTopKOps folds header operands: the first one's parameters, the
// offers in order.
func foldPagedTopKOps(ops []op) *pagedTopKOp {
	out := &pagedTopKOp{spec: ops[0].(*pagedTopKOp).spec}
	for _, o := range ops {
		out.offers = append(out.offers, o.(*pagedTopKOp).offers...)
	}
	return out
}

// topKAdd is one page operand record: an add of an item of hash h reaching
// bucket idx, incr times.
type topKAdd struct {
	idx  int
	h    uint64
	incr uint32
}

// topKPageOp is a decoded page operand.
type topKPageOp struct {
	n     int     // the page's buckets
	row   int     // the page's row (the decay's draws depend on it)
	decay float64 // the sketch's decay
	adds  []topKAdd
}

// Page value: kind 0x58, version 1, n × (fingerprint uint32, count
// uint32), 1 ≤ n ≤ 512. Page operand: kind 0x59, version 1, n uvarint,
// row uvarint, decay float64, m uvarint, m × (index uvarint < n, hash
// uint64, increment uvarint ≤ 100000).

// topKPageBody checks a page value and returns its buckets' bytes (nil:
// none), bucket i at 8i: fingerprint, count.
func topKPageBody(v []byte) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	if err := checkPageKind(v, kindTopKPage); err != nil {
		return nil, err
	}
	body := v[2:]
	if len(body) == 0 || len(body)%8 != 0 || len(body) > 8*topKPageBuckets {
		return nil, corruptf("Top-K page of %d bytes", len(v))
	}
	return body, nil
}

func bucketAt(body []byte, idx int) hkBucket {
	le := binary.LittleEndian
	return hkBucket{fp: le.Uint32(body[8*idx:]), count: le.Uint32(body[8*idx+4:])}
}

// addToBucket is TopK.addBucket on bucket idx of a page body (of row
// row); it returns the bucket after it.
func (t *TopK) addToBucket(body []byte, idx int, h uint64, row int, incr uint32) hkBucket {
	b := bucketAt(body, idx)
	t.addBucket(&b, h, row, incr)
	binary.LittleEndian.PutUint32(body[8*idx:], b.fp)
	binary.LittleEndian.PutUint32(body[8*idx+4:], b.count)
	return b
}

func appendTopKPageOp(dst []byte, o *topKPageOp) []byte {
	dst = append(dst, kindTopKPageOp, version1)
	dst = binary.AppendUvarint(dst, uint64(o.n))
	dst = binary.AppendUvarint(dst, uint64(o.row))
	dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(o.decay))
	dst = binary.AppendUvarint(dst, uint64(len(o.adds)))
	for _, a := range o.adds {
		dst = binary.AppendUvarint(dst, uint64(a.idx))
		dst = binary.LittleEndian.AppendUint64(dst, a.h)
		dst = binary.AppendUvarint(dst, uint64(a.incr))
	}
	return dst
}

func decodeTopKPageOp(b []byte) (*topKPageOp, error) {
	if err := checkPageKind(b, kindTopKPageOp); err != nil {
		return nil, err
	}
	rest := b[2:]
	n, k1 := canonicalUvarint(rest)
	if k1 <= 0 || n == 0 || n > topKPageBuckets {
		return nil, corruptf("Top-K page operand of %d buckets", n)
	}
	row, k2 := canonicalUvarint(rest[k1:])
	if k2 <= 0 || row > math.MaxUint32 || len(rest) < k1+k2+8 {
		return nil, corruptf("Top-K page operand: bad row")
	}
	o := &topKPageOp{n: int(n), row: int(row), decay: math.Float64frombits(binary.LittleEndian.Uint64(rest[k1+k2:]))}
	if !(o.decay > 0 && o.decay <= 1) {
		return nil, corruptf("Top-K page operand: decay %v", o.decay)
	}
	rest = rest[k1+k2+8:]
	m, k := canonicalUvarint(rest)
	if k <= 0 || m > uint64(len(rest)-k)/10 {
		return nil, corruptf("Top-K page operand: bad count")
	}
	rest = rest[k:]
	o.adds = make([]topKAdd, m)
	for i := range o.adds {
		idx, k1 := canonicalUvarint(rest)
		if k1 <= 0 || idx >= n || len(rest) < k1+8 {
			return nil, corruptf("Top-K page operand: bad index")
		}
		incr, k2 := canonicalUvarint(rest[k1+8:])
		if k2 <= 0 || incr > maxTopKIncr {
			return nil, corruptf("Top-K page operand: bad increment")
		}
		o.adds[i] = topKAdd{idx: int(idx), h: binary.LittleEndian.Uint64(rest[k1:]), incr: uint32(incr)}
		rest = rest[k1+8+k2:]
	}
	if len(rest) != 0 {
		return nil, corruptf("Top-K page operand: %d trailing bytes", len(rest))
	}
	return o, nil
}

// lastDecay caches the decay table of the last decay the page merger met
// (a store's sketches mostly share one).
var lastDecay atomic.Pointer[TopK]

// decayer returns a TopK whose decay table is decay's (only its decay rule
// is used).
func decayer(decay float64) *TopK {
	if t := lastDecay.Load(); t != nil && t.spec.Decay == decay {
		return t
	}
	t := &TopK{spec: TopKSpec{Decay: decay}}
	t.initLookup()
	lastDecay.Store(t)
	return t
}

// mergeTopKPage is PageMerger.FullMerge of a Top-K page: the adds replayed
// in order on the base's buckets (zeros when missing). A base of another
// size than an operand is a page an earlier sketch of the key left: the
// operand starts from zeros.
func mergeTopKPage(base []byte, hasBase bool, operands [][]byte) ([]byte, error) {
	out := make([]byte, 2, 2+8*topKPageBuckets)
	out[0], out[1] = kindTopKPage, version1
	if hasBase {
		body, err := topKPageBody(base)
		if err != nil {
			return nil, err
		}
		out = append(out, body...)
	}
	for _, raw := range operands {
		o, err := decodeTopKPageOp(raw)
		if err != nil {
			return nil, err
		}
		if len(out)-2 != 8*o.n {
			out = append(out[:2], make([]byte, 8*o.n)...)
		}
		t := decayer(o.decay)
		for _, a := range o.adds {
			t.addToBucket(out[2:], a.idx, a.h, o.row, a.incr)
		}
	}
	if len(out) == 2 {
		return nil, corruptf("Top-K page: full merge of no base and no operands")
	}
	return out, nil
}

// partialMergeTopKPage concatenates page operands of one page (size, row,
// decay); it declines others, and a malformed one.
func partialMergeTopKPage(operands [][]byte) ([]byte, bool) {
	var out *topKPageOp
	for _, raw := range operands {
		o, err := decodeTopKPageOp(raw)
		if err != nil {
			return nil, false
		}
		if out == nil {
			out = o
			continue
		}
		if o.n != out.n || o.row != out.row || math.Float64bits(o.decay) != math.Float64bits(out.decay) {
			return nil, false
		}
		out.adds = append(out.adds, o.adds...)
	}
	if out == nil {
		return nil, false
	}
	return appendTopKPageOp(nil, out), true
}
