package sketchcol

import (
	"encoding/binary"
	"fmt"

	"github.com/sievedb/sieve"
)

// The dump of a paged Count-Min or Top-K sketch (Store.Dump; FORMAT.md,
// "Paged Count-Min and Top-K dumps") carries the header and every page
// written:
//
//	kind (0x44 or 0x54) | version 1 | header length uvarint | header value
//	then per page, in key order: page uint32 (big-endian) | length uvarint | page body
//
// a body being a page value without its kind and version bytes.

// countersDump is a decoded dump.
type countersDump struct {
	kind     Kind
	raw      []byte // the header value
	pageKind byte
	pages    []dumpPage
}

type dumpPage struct {
	p    uint32
	body []byte
}

// countersGeometry describes the pages of a paged sketch whose header is
// hdr: its page kind, and each page's body length (ok false: no such page).
func countersGeometry(hdr []byte) (kind Kind, pageKind byte, bodyLen func(p int64) (int, bool), err error) {
	switch {
	case len(hdr) > 0 && hdr[0] == kindPagedCMS:
		h, err := parsePagedCMS(hdr)
		if err != nil {
			return 0, 0, nil, err
		}
		n := cmsPages(h.spec)
		return KindCMS, kindCMSPage, func(p int64) (int, bool) { return 4 * cmsPageLen(h.spec, p), p < n }, nil
	case len(hdr) > 0 && hdr[0] == kindPagedTopK:
		h, err := parsePagedTopK(hdr)
		if err != nil {
			return 0, 0, nil, err
		}
		n := topKPages(h.spec)
		return KindTopK, kindTopKPage, func(p int64) (int, bool) { return 8 * topKPageLen(h.spec, p), p < n }, nil
	}
	return 0, 0, nil, corruptf("not a paged Count-Min or Top-K header")
}

// dumpKindOf is the dump kind of a header kind.
func dumpKindOf(headerKind byte) byte {
	if headerKind == kindPagedCMS {
		return kindPagedCMSDump
	}
	return kindPagedTopKDump
}

// dumpCounters returns the dump of the paged sketch whose header is cur:
// the pages of the sketch's geometry (a page an earlier sketch of the key
// left, of another size or past the last, is not the sketch's) that hold
// something, each as canonicalPage makes it.
func (s *Store) dumpCounters(key, cur []byte) ([]byte, error) {
	if s.view != nil {
		return nil, fmt.Errorf("%w: Dump of a paged sketch inside a transaction", ErrInvalidArgument)
	}
	_, pk, bodyLen, err := countersGeometry(cur)
	if err != nil {
		return nil, err
	}
	out := append([]byte{dumpKindOf(cur[0]), version1}, binary.AppendUvarint(nil, uint64(len(cur)))...)
	out = append(out, cur...)
	start := append(pagePrefix(key), pk)
	it := s.pages.NewIter(&sieve.IterOptions{LowerBound: start, UpperBound: append(pagePrefix(key), pk+1)})
	for ok := it.First(); ok; ok = it.Next() {
		k, v := it.Key()[len(start):], it.Value()
		if len(k) != 4 || len(v) < 2 || v[0] != pk {
			continue
		}
		p := binary.BigEndian.Uint32(k)
		if n, ok := bodyLen(int64(p)); !ok || n != len(v)-2 {
			continue
		}
		body := canonicalPage(pk, v[2:])
		if body == nil {
			continue
		}
		out = binary.BigEndian.AppendUint32(out, p)
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
	}
	return out, it.Close()
}

// parseCountersDump decodes and checks a dump: its header, and every page
// within the sketch, of its size, in order.
func parseCountersDump(v []byte) (*countersDump, error) {
	if len(v) < 2 || (v[0] != kindPagedCMSDump && v[0] != kindPagedTopKDump) {
		return nil, corruptf("not a paged Count-Min or Top-K dump")
	}
	if err := checkValueKind(v, v[0]); err != nil {
		return nil, err
	}
	rest := v[2:]
	n, k := canonicalUvarint(rest)
	if k <= 0 || n > uint64(len(rest)-k) {
		return nil, corruptf("%s: bad header length", kindName(v[0]))
	}
	d := &countersDump{raw: rest[k : k+int(n)]}
	var bodyLen func(int64) (int, bool)
	var err error
	if d.kind, d.pageKind, bodyLen, err = countersGeometry(d.raw); err != nil {
		return nil, err
	}
	if dumpKindOf(d.raw[0]) != v[0] {
		return nil, corruptf("%s holds a %s", kindName(v[0]), kindName(d.raw[0]))
	}
	for rest = rest[k+int(n):]; len(rest) > 0; {
		if len(rest) < 5 {
			return nil, corruptf("%s: short page", kindName(v[0]))
		}
		p := binary.BigEndian.Uint32(rest)
		bl, k := canonicalUvarint(rest[4:])
		want, ok := bodyLen(int64(p))
		if k <= 0 || !ok || bl != uint64(want) || uint64(len(rest)-4-k) < bl {
			return nil, corruptf("%s: bad page %d", kindName(v[0]), p)
		}
		if m := len(d.pages); m > 0 && p <= d.pages[m-1].p {
			return nil, corruptf("%s: pages out of order", kindName(v[0]))
		}
		d.pages = append(d.pages, dumpPage{p: p, body: rest[4+k : 4+k+int(bl)]})
		rest = rest[4+k+int(bl):]
	}
	return d, nil
}

// validateCountersDump is ValidateValue of a Count-Min or Top-K dump; ok
// false for any other value.
func validateCountersDump(v []byte) (Kind, bool, error) {
	if len(v) == 0 || (v[0] != kindPagedCMSDump && v[0] != kindPagedTopKDump) {
		return KindNone, false, nil
	}
	d, err := parseCountersDump(v)
	if err != nil {
		return KindNone, true, err
	}
	return d.kind, true, nil
}

// countersRestore decodes what Store.Restore writes for a paged Count-Min
// or Top-K sketch: a dump, or a header alone (an empty sketch); ok false
// for any other value.
func countersRestore(v []byte) (*countersDump, bool, error) {
	if len(v) == 0 {
		return nil, false, nil
	}
	switch v[0] {
	case kindPagedCMSDump, kindPagedTopKDump:
		d, err := parseCountersDump(v)
		return d, true, err
	case kindPagedCMS, kindPagedTopK:
		k, pk, _, err := countersGeometry(v)
		return &countersDump{kind: k, raw: v, pageKind: pk}, true, err
	}
	return nil, false, nil
}

// restoreCounters replaces key with the sketch of d: its header, its
// pages, and none of the key's earlier pages. REQUIRES: key's lock.
func (s *Store) restoreCounters(key []byte, d *countersDump) error {
	return s.writeKey(key, func(wb *sieve.Batch) error {
		if err := s.dropPages(wb, key); err != nil {
			return err
		}
		if err := wb.PutCF(s.cf, key, d.raw); err != nil {
			return err
		}
		for _, pg := range d.pages {
			v := append([]byte{d.pageKind, version1}, pg.body...)
			if err := wb.PutCF(s.pages, pageKey(nil, key, int(d.pageKind), int64(pg.p)), v); err != nil {
				return err
			}
		}
		return nil
	})
}

// cmsOfPaged builds in memory the sketch a paged Count-Min dump or header
// holds (the Reply functions answer on it, as BFExistsReply on a paged
// Bloom dump); ok false for any other value.
func cmsOfPaged(v []byte) (*CountMinSketch, bool, error) {
	if len(v) == 0 || (v[0] != kindPagedCMS && v[0] != kindPagedCMSDump) {
		return nil, false, nil
	}
	d, _, err := countersRestore(v)
	if err != nil {
		return nil, true, err
	}
	h, _ := parsePagedCMS(d.raw) // checked by countersRestore
	c, err := NewCMS(h.spec)
	if err != nil {
		return nil, true, err
	}
	c.count = h.count
	ppr := int64(cmsRowPages(h.spec.Width))
	for _, pg := range d.pages {
		p := int64(pg.p)
		start := int(p/ppr)*h.spec.Width + int(p%ppr)*cmsPageCounters
		for i := range len(pg.body) / 4 {
			c.counters[start+i] = binary.LittleEndian.Uint32(pg.body[4*i:])
		}
	}
	return c, true, nil
}

// topKOfPaged is cmsOfPaged for a paged Top-K dump or header.
func topKOfPaged(v []byte) (*TopK, bool, error) {
	if len(v) == 0 || (v[0] != kindPagedTopK && v[0] != kindPagedTopKDump) {
		return nil, false, nil
	}
	d, _, err := countersRestore(v)
	if err != nil {
		return nil, true, err
	}
	h, _ := parsePagedTopK(d.raw) // checked by countersRestore
	t := h.TopK
	t.buckets = make([]hkBucket, t.spec.Width*t.spec.Depth)
	ppr := int64(topKRowPages(t.spec.Width))
	le := binary.LittleEndian
	for _, pg := range d.pages {
		p := int64(pg.p)
		start := int(p/ppr)*t.spec.Width + int(p%ppr)*topKPageBuckets
		for i := range len(pg.body) / 8 {
			t.buckets[start+i] = hkBucket{fp: le.Uint32(pg.body[8*i:]), count: le.Uint32(pg.body[8*i+4:])}
		}
	}
	return t, true, nil
}

// canonicalPage returns a page's body as a dump carries it: nil when it
// holds nothing (all counters zero; every Top-K bucket counted zero), a
// Top-K bucket counted zero as zeros (HeavyKeeper takes it as empty,
// whatever its fingerprint), so that a dump depends on what the sketch
// holds, not on which pages an add of zero touched.
func canonicalPage(pageKind byte, body []byte) []byte {
	if pageKind == kindTopKPage {
		var out []byte
		for i := 0; i+8 <= len(body); i += 8 {
			if binary.LittleEndian.Uint32(body[i+4:]) == 0 && binary.LittleEndian.Uint32(body[i:]) != 0 {
				if out == nil {
					out = append([]byte(nil), body...)
				}
				clear(out[i : i+4])
			}
		}
		if out != nil {
			body = out
		}
	}
	for _, b := range body {
		if b != 0 {
			return body
		}
	}
	return nil
}
