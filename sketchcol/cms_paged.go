package sketchcol

import (
	"encoding/binary"
	"math"
	"slices"
)

// A paged Count-Min sketch keeps its counters in pages of their own, as a
// paged Bloom filter does (FORMAT.md, "Paged Count-Min sketch"):
//
//   - the header, at the user's key: width, depth and the total count;
//   - the pages, in the family "sketch-pages": row i is cut into chunks of
//     cmsPageCounters counters, page i·pagesPerRow + j holding counters
//     j·1024 .. j·1024+1023 of row i. An item's counter in a row lies in
//     one page, so CMS.INCRBY and CMS.QUERY read exactly one page per row
//     per item. A page never written reads as zeros.
//
// The counter of an item in a row is the legacy value's (rowHash(h, i)
// mod width): a paged sketch answers as a whole one of its contents.

const (
	kindPagedCMS     = 0x42 // value: paged Count-Min header
	kindPagedCMSOp   = 0x43 // operand: paged Count-Min header (count delta)
	kindPagedCMSDump = 0x44 // Dump/Restore only: header and pages
	kindCMSPage      = 0x4a // page value: counters
	kindCMSPageOp    = 0x4b // page operand: counter increments

	// cmsPageCounters is a page's counters: 4 KiB, about one data block of
	// the engine's, so a page read is one block read.
	cmsPageCounters = 1024
)

// pagedCMS is a decoded Count-Min header.
type pagedCMS struct {
	spec  CMSSpec
	count uint64 // total of all increments, saturating at 2⁶⁴−1
}

func (*pagedCMS) Kind() Kind { return KindCMS }

// cmsPagedHeaderLen: kind, version, width u32, depth u32, count u64.
const cmsPagedHeaderLen = 2 + 4 + 4 + 8

func (c *pagedCMS) appendValue(dst []byte) []byte {
	le := binary.LittleEndian
	dst = append(dst, kindPagedCMS, version1)
	dst = le.AppendUint32(dst, uint32(c.spec.Width))
	dst = le.AppendUint32(dst, uint32(c.spec.Depth))
	return le.AppendUint64(dst, c.count)
}

func parsePagedCMS(v []byte) (*pagedCMS, error) {
	if err := checkValueKind(v, kindPagedCMS); err != nil {
		return nil, err
	}
	if len(v) != cmsPagedHeaderLen {
		return nil, corruptf("paged Count-Min header of %d bytes", len(v))
	}
	le := binary.LittleEndian
	spec := CMSSpec{Width: int(le.Uint32(v[2:])), Depth: int(le.Uint32(v[6:]))}
	if err := spec.Validate(); err != nil {
		return nil, corruptf("paged Count-Min header: %v", err)
	}
	return &pagedCMS{spec: spec, count: le.Uint64(v[10:])}, nil
}

// cmsRowPages is the pages of one row of width counters.
func cmsRowPages(width int) int { return (width + cmsPageCounters - 1) / cmsPageCounters }

// cmsPages is the pages of a sketch of spec.
func cmsPages(spec CMSSpec) int64 { return int64(spec.Depth) * int64(cmsRowPages(spec.Width)) }

// cmsPageLen is the counters of page p of a sketch of spec.
func cmsPageLen(spec CMSSpec, p int64) int {
	j := int(p % int64(cmsRowPages(spec.Width)))
	return min(cmsPageCounters, spec.Width-j*cmsPageCounters)
}

// cmsCell locates row i's counter of hash h: its page and index there.
func cmsCell(spec CMSSpec, h uint64, i int) (page int64, idx int) {
	col := int(rowHash(h, i) % uint64(spec.Width))
	return int64(i)*int64(cmsRowPages(spec.Width)) + int64(col/cmsPageCounters), col % cmsPageCounters
}

// pagedCMSOp is the header operand: create the header (of spec) if
// missing, and add delta to its count.
type pagedCMSOp struct {
	spec  CMSSpec
	delta uint64
}

func (*pagedCMSOp) kind() Kind { return KindCMS }
func (o *pagedCMSOp) create() (sketch, error) {
	if err := o.spec.Validate(); err != nil {
		return nil, err
	}
	return &pagedCMS{spec: o.spec}, nil
}

// apply adds the delta to a header; a legacy value is left alone.
func (o *pagedCMSOp) apply(s sketch) {
	if c, ok := s.(*pagedCMS); ok {
		c.count = satAdd(c.count, o.delta)
	}
}

// Header operand: kind, version, width u32, depth u32, delta u64.
func appendPagedCMSOp(dst []byte, o *pagedCMSOp) []byte {
	le := binary.LittleEndian
	dst = append(dst, kindPagedCMSOp, version1)
	dst = le.AppendUint32(dst, uint32(o.spec.Width))
	dst = le.AppendUint32(dst, uint32(o.spec.Depth))
	return le.AppendUint64(dst, o.delta)
}

func decodePagedCMSOp(b []byte) (op, error) {
	if err := checkValueKind(b, kindPagedCMSOp); err != nil {
		return nil, err
	}
	if len(b) != cmsPagedHeaderLen {
		return nil, corruptf("paged Count-Min operand of %d bytes", len(b))
	}
	le := binary.LittleEndian
	o := &pagedCMSOp{spec: CMSSpec{Width: int(le.Uint32(b[2:])), Depth: int(le.Uint32(b[6:]))}, delta: le.Uint64(b[10:])}
	if err := o.spec.Validate(); err != nil {
		return nil, corruptf("paged Count-Min operand: %v", err)
	}
	return o, nil
}

// foldPagedCMSOps folds header operands: the first one's geometry (the
// one that creates a missing key), the deltas summed (saturating).
func foldPagedCMSOps(ops []op) *pagedCMSOp {
	out := &pagedCMSOp{spec: ops[0].(*pagedCMSOp).spec}
	for _, o := range ops {
		out.delta = satAdd(out.delta, o.(*pagedCMSOp).delta)
	}
	return out
}

// cmsAdd is one page operand record: add incr to counter idx.
type cmsAdd struct {
	idx  int
	incr uint64
}

// satCounter adds incr to a counter, saturating at 2³²−1 (RedisBloom's).
func satCounter(c uint32, incr uint64) uint32 {
	return uint32(min(uint64(c)+min(incr, math.MaxUint32), math.MaxUint32))
}

// Page value: kind 0x4a, version 1, n counters uint32 (1 ≤ n ≤ 1024).
// Page operand: kind 0x4b, version 1, n uvarint (the page's counters),
// m uvarint, m × (index uvarint, increment uvarint ≤ 2³²−1), the indexes
// strictly ascending and below n.

// cmsPageBody checks a page value and returns its counters' bytes (nil:
// none), counter i at 4i, little-endian.
func cmsPageBody(v []byte) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	if err := checkPageKind(v, kindCMSPage); err != nil {
		return nil, err
	}
	body := v[2:]
	if len(body) == 0 || len(body)%4 != 0 || len(body) > 4*cmsPageCounters {
		return nil, corruptf("Count-Min page of %d bytes", len(v))
	}
	return body, nil
}

func appendCMSPage(dst []byte, counters []uint32) []byte {
	dst = append(dst, kindCMSPage, version1)
	for _, c := range counters {
		dst = binary.LittleEndian.AppendUint32(dst, c)
	}
	return dst
}

// addCounter adds incr (saturating) to counter idx of a page body and
// returns its new value.
func addCounter(body []byte, idx int, incr uint64) uint32 {
	c := satCounter(binary.LittleEndian.Uint32(body[4*idx:]), incr)
	binary.LittleEndian.PutUint32(body[4*idx:], c)
	return c
}

// appendCMSPageOp appends the operand of adds (sorted by index, distinct)
// to a page of n counters.
func appendCMSPageOp(dst []byte, n int, adds []cmsAdd) []byte {
	dst = append(dst, kindCMSPageOp, version1)
	dst = binary.AppendUvarint(dst, uint64(n))
	dst = binary.AppendUvarint(dst, uint64(len(adds)))
	for _, a := range adds {
		dst = binary.AppendUvarint(dst, uint64(a.idx))
		dst = binary.AppendUvarint(dst, min(a.incr, math.MaxUint32))
	}
	return dst
}

// decodeCMSPageOp decodes a page operand: its page size and adds.
func decodeCMSPageOp(b []byte) (int, []cmsAdd, error) {
	if err := checkPageKind(b, kindCMSPageOp); err != nil {
		return 0, nil, err
	}
	rest := b[2:]
	n, k := canonicalUvarint(rest)
	if k <= 0 || n == 0 || n > cmsPageCounters {
		return 0, nil, corruptf("Count-Min page operand of %d counters", n)
	}
	rest = rest[k:]
	m, k := canonicalUvarint(rest)
	if k <= 0 || m > n || m > uint64(len(rest)) {
		return 0, nil, corruptf("Count-Min page operand: bad count")
	}
	rest = rest[k:]
	adds := make([]cmsAdd, m)
	for i := range adds {
		idx, k1 := canonicalUvarint(rest)
		if k1 <= 0 || idx >= n || (i > 0 && idx <= uint64(adds[i-1].idx)) {
			return 0, nil, corruptf("Count-Min page operand: bad index")
		}
		incr, k2 := canonicalUvarint(rest[k1:])
		if k2 <= 0 || incr > math.MaxUint32 {
			return 0, nil, corruptf("Count-Min page operand: bad increment")
		}
		adds[i] = cmsAdd{idx: int(idx), incr: incr}
		rest = rest[k1+k2:]
	}
	if len(rest) != 0 {
		return 0, nil, corruptf("Count-Min page operand: %d trailing bytes", len(rest))
	}
	return int(n), adds, nil
}

// mergeCMSPage is PageMerger.FullMerge of a Count-Min page: the operands'
// increments added (saturating) to the base's counters (zeros when
// missing). A base or operand of another page size than an operand is a
// page an earlier sketch of the key left: the operand starts from zeros.
func mergeCMSPage(base []byte, hasBase bool, operands [][]byte) ([]byte, error) {
	out := make([]byte, 2, 2+4*cmsPageCounters)
	out[0], out[1] = kindCMSPage, version1
	if hasBase {
		body, err := cmsPageBody(base)
		if err != nil {
			return nil, err
		}
		out = append(out, body...)
	}
	for _, o := range operands {
		n, adds, err := decodeCMSPageOp(o)
		if err != nil {
			return nil, err
		}
		if len(out)-2 != 4*n {
			out = append(out[:2], make([]byte, 4*n)...)
		}
		for _, a := range adds {
			addCounter(out[2:], a.idx, a.incr)
		}
	}
	if len(out) == 2 {
		return nil, corruptf("Count-Min page: full merge of no base and no operands")
	}
	return out, nil
}

// partialMergeCMSPage folds page operands of one page size into one, the
// increments of an index summed; it declines operands of two sizes or a
// malformed one.
func partialMergeCMSPage(operands [][]byte) ([]byte, bool) {
	size := -1
	var all []cmsAdd
	for _, o := range operands {
		n, adds, err := decodeCMSPageOp(o)
		if err != nil || (size >= 0 && n != size) {
			return nil, false
		}
		size = n
		all = append(all, adds...)
	}
	return appendCMSPageOp(nil, size, sumCMSAdds(all)), true
}

// sumCMSAdds sorts adds by index and sums (saturating at 2³²−1, where a
// counter saturates anyway) the increments of equal indexes.
func sumCMSAdds(adds []cmsAdd) []cmsAdd {
	slices.SortStableFunc(adds, func(a, b cmsAdd) int { return a.idx - b.idx })
	out := adds[:0]
	for _, a := range adds {
		if n := len(out); n > 0 && out[n-1].idx == a.idx {
			out[n-1].incr = min(out[n-1].incr+a.incr, math.MaxUint32)
			continue
		}
		a.incr = min(a.incr, math.MaxUint32)
		out = append(out, a)
	}
	return out
}

// checkPageKind is checkValueKind for the pages' family, whose kind bytes
// have names of their own (0x4a, 0x4b, 0x58, 0x59).
func checkPageKind(data []byte, want byte) error {
	switch {
	case len(data) < 2:
		return corruptf("%s of %d bytes has no kind and version", pageKindName(want), len(data))
	case data[0] != want:
		return corruptf("%s expected, found kind byte %#02x", pageKindName(want), data[0])
	case data[1] != version1:
		return corruptf("%s has unknown version %d", pageKindName(want), data[1])
	}
	return nil
}

func pageKindName(b byte) string {
	switch b {
	case kindCMSPage:
		return "Count-Min page"
	case kindCMSPageOp:
		return "Count-Min page operand"
	case kindTopKPage:
		return "Top-K page"
	case kindTopKPageOp:
		return "Top-K page operand"
	}
	return kindName(b)
}

// counterPageKind returns the page kind (kindCMSPage or kindTopKPage) of a
// Count-Min or Top-K page, judged by its first operand (else its base),
// and 0 for any other page.
func counterPageKind(base []byte, hasBase bool, operands [][]byte) byte {
	var b byte
	switch {
	case len(operands) > 0 && len(operands[0]) > 0:
		b = operands[0][0]
	case hasBase && len(base) > 0:
		b = base[0]
	}
	switch b {
	case kindCMSPage, kindCMSPageOp:
		return kindCMSPage
	case kindTopKPage, kindTopKPageOp:
		return kindTopKPage
	}
	return 0
}

// fullMergeCounterPage is PageMerger.FullMerge of a Count-Min or Top-K
// page; ok false for any other page.
func fullMergeCounterPage(base []byte, hasBase bool, operands [][]byte) (v []byte, ok bool, err error) {
	switch counterPageKind(base, hasBase, operands) {
	case kindCMSPage:
		v, err = mergeCMSPage(base, hasBase, operands)
	case kindTopKPage:
		v, err = mergeTopKPage(base, hasBase, operands)
	default:
		return nil, false, nil
	}
	return v, true, err
}

// partialMergeCounterPage is PageMerger.PartialMerge of the operands of a
// page of kind k (counterPageKind).
func partialMergeCounterPage(k byte, operands [][]byte) ([]byte, bool) {
	if k == kindCMSPage {
		return partialMergeCMSPage(operands)
	}
	return partialMergeTopKPage(operands)
}
