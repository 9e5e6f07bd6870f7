package sketchcol

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/sketchcol/internal/cuckoo"
)

// A paged cuckoo filter's dump (Store.Dump) carries the header and every
// page that holds a fingerprint (FORMAT.md, "Paged cuckoo dump"):
//
//	kind 0x34 | version 1 | header length uvarint | header value (0x32)
//	then per page, in key order: sub-filter 1 byte | page uint32
//	(big-endian) | slots length uvarint | slots
//
// Pages of empty slots are left out, so that a dump is a function of the
// filter's contents (not of which pages were once written), and equals
// the dump of a CuckooFilter holding the same fingerprints (pagedDump).

// cuckooDump is a decoded dump: the header and its pages' slots, by
// pageKey with an empty user key.
type cuckooDump struct {
	header *pagedCuckoo
	raw    []byte // the header value
	pages  map[string][]byte
}

// appendCuckooPageRecord appends one page record of a dump or chunk; rel
// is the page key without the user key's prefix (sub-filter | page).
func appendCuckooPageRecord(dst, rel, slots []byte) []byte {
	dst = append(dst, rel...)
	dst = binary.AppendUvarint(dst, uint64(len(slots)))
	return append(dst, slots...)
}

// cuckooPageOf checks a stored page of key (its key relative to the
// key's prefix, and value) against the header: its slots, or nil for a
// page to leave out (empty, or one an earlier filter of the key left).
func cuckooPageOf(key []byte, h *pagedCuckoo, rel, v []byte) ([]byte, error) {
	slots, err := cuckooSlotsOf(v)
	if err == nil && len(rel) != 5 {
		err = corruptf("bad page key")
	}
	if err != nil {
		return nil, fmt.Errorf("sketchcol: key %q: page %x: %w", clip(key), rel, err)
	}
	if i := int(rel[0]); i >= len(h.items) || len(slots) != h.layer(i).pageBytes() || isZero(slots) {
		return nil, nil
	}
	return slots, nil
}

func isZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// dumpPagedCuckoo returns the dump of key's paged filter (Dump found
// its header). It reads the header again and the pages
// under the key's lock, so that no command's writes are seen half done.
func (s *Store) dumpPagedCuckoo(key []byte) ([]byte, error) {
	if s.view != nil {
		return nil, fmt.Errorf("%w: Dump of a paged cuckoo filter inside a transaction", ErrInvalidArgument)
	}
	defer s.lock(key)()
	if err := s.drainCuckoo(key); err != nil {
		return nil, err
	}
	cur, err := s.get(key)
	if err == nil && cur == nil {
		err = notFound(key)
	}
	if err != nil {
		return nil, err
	}
	if cur[0] != kindPagedCuckoo {
		return cur, nil // replaced since: by a value stored whole
	}
	h, err := parsePagedCuckoo(cur)
	if err != nil {
		return nil, err
	}
	out := binary.AppendUvarint([]byte{kindPagedCuckooDump, version1}, uint64(len(cur)))
	out = append(out, cur...)
	start, end := pageRange(key)
	it := s.pages.NewIter(&sieve.IterOptions{LowerBound: start, UpperBound: end})
	for ok := it.First(); ok; ok = it.Next() {
		rel := it.Key()[len(start):]
		slots, err := cuckooPageOf(key, h, rel, it.Value())
		if err != nil {
			_ = it.Close()
			return nil, err
		}
		if slots != nil {
			out = appendCuckooPageRecord(out, rel, slots)
		}
	}
	return out, it.Close()
}

// parseCuckooDump decodes and checks a dump: the header, every page
// within its sub-filters, of their page size, in order, not empty, and
// each sub-filter's fingerprints as many as the header counts.
func parseCuckooDump(v []byte) (*cuckooDump, error) {
	if err := checkValueKind(v, kindPagedCuckooDump); err != nil {
		return nil, err
	}
	rest := v[2:]
	n, k := canonicalUvarint(rest)
	if k <= 0 || n > uint64(len(rest)-k) {
		return nil, corruptf("paged cuckoo dump: bad header length")
	}
	h, err := parsePagedCuckoo(rest[k : k+int(n)])
	if err != nil {
		return nil, err
	}
	d := &cuckooDump{header: h, raw: rest[k : k+int(n)], pages: map[string][]byte{}}
	if err := d.parsePages(rest[k+int(n):], nil); err != nil {
		return nil, err
	}
	stored := make([]uint64, len(h.items))
	for pk, slots := range d.pages {
		for _, x := range slots {
			if x != 0 {
				stored[pk[len(pk)-5]]++
			}
		}
	}
	if !slices.Equal(stored, h.items) {
		return nil, corruptf("paged cuckoo dump: header counts %v fingerprints, pages hold %v", h.items, stored)
	}
	return d, nil
}

// parsePages decodes page records into d.pages, each after prev (nil: any).
func (d *cuckooDump) parsePages(rest, prev []byte) error {
	for len(rest) > 0 {
		if len(rest) < 6 {
			return corruptf("paged cuckoo dump: short page")
		}
		i, p := int(rest[0]), int64(binary.BigEndian.Uint32(rest[1:5]))
		n, k := canonicalUvarint(rest[5:])
		if k <= 0 || i >= len(d.header.items) {
			return corruptf("paged cuckoo dump: page of sub-filter %d", i)
		}
		l := d.header.layer(i)
		body := rest[5+k:]
		if p >= l.pages() || n != uint64(l.pageBytes()) || uint64(len(body)) < n || isZero(body[:n]) {
			return corruptf("paged cuckoo dump: page %d of sub-filter %d (%d bytes)", p, i, n)
		}
		if prev != nil && bytes.Compare(rest[:5], prev) <= 0 {
			return corruptf("paged cuckoo dump: pages out of order")
		}
		prev = rest[:5]
		d.pages[string(pageKey(nil, nil, i, p))] = body[:n]
		rest = body[n:]
	}
	return nil
}

// restorePagedCuckoo replaces key with the filter of a dump: its header,
// its pages, and none of the key's earlier pages. REQUIRES: key's lock.
func (s *Store) restorePagedCuckoo(key []byte, d *cuckooDump) error {
	return s.writeKey(key, func(wb *sieve.Batch) error {
		if err := s.dropPages(wb, key); err != nil {
			return err
		}
		if err := wb.PutCF(s.cf, key, d.raw); err != nil {
			return err
		}
		return s.putCuckooPages(wb, key, d)
	})
}

// putCuckooPages adds d's pages, as key's, to wb.
func (s *Store) putCuckooPages(wb *sieve.Batch, key []byte, d *cuckooDump) error {
	prefix := pagePrefix(key)
	for rel, slots := range d.pages {
		pk := append(slices.Clone(prefix), rel[len(pagePrefix(nil)):]...)
		if err := wb.PutCF(s.pages, pk, append([]byte{kindCuckooPage, version1}, slots...)); err != nil {
			return err
		}
	}
	return nil
}

// drainCuckoo places the pending adds of key's paged filter, if it has
// any, and writes them (what any command does first). It does nothing to
// a key that holds no paged cuckoo filter. REQUIRES: key's lock.
func (s *Store) drainCuckoo(key []byte) error {
	cur, err := s.get(key)
	if err != nil || cur == nil {
		return err
	}
	if h, err := pagedCuckooHeader(cur); err != nil || h == nil || len(h.pending) == 0 {
		return nil // the caller's own read reports what is wrong
	}
	return s.cuckooDo(key, nil, false, func(*cuckooPages) error { return nil })
}

// filter returns the in-memory filter of the dump, its pending adds
// placed.
func (d *cuckooDump) filter() *CuckooFilter {
	h := d.header
	c := &CuckooFilter{spec: h.spec, items: h.stored(), deletes: h.deletes, dropped: h.dropped}
	for i := range h.items {
		l := h.layer(i)
		slots := make([]byte, l.slots())
		for p := range l.pages() {
			copy(slots[p*int64(l.pageBytes()):], d.pages[string(pageKey(nil, nil, i, p))])
		}
		c.filters = append(c.filters, cuckoo.FromSlots(l.log2Buckets, l.bucketSize, slots))
	}
	for _, hash := range h.pending {
		applyCuckooRecord(c, cuckooRecord{op: cuckooAdd, hash: hash})
	}
	return c
}

// PagedDump returns what Store.Dump returns for a paged filter (every
// filter the Store creates) given the same commands as c: its header and
// the pages that hold fingerprints, which Store.Restore loads.
func (c *CuckooFilter) PagedDump() []byte { return c.pagedDump() }

// pagedDump is PagedDump.
func (c *CuckooFilter) pagedDump() []byte {
	h := &pagedCuckoo{spec: c.spec, deletes: c.deletes, dropped: c.dropped}
	for _, t := range c.filters {
		h.items = append(h.items, t.Occupied())
	}
	hdr := h.appendValue(nil)
	out := binary.AppendUvarint([]byte{kindPagedCuckooDump, version1}, uint64(len(hdr)))
	out = append(out, hdr...)
	for i, t := range c.filters {
		l := h.layer(i)
		for p := range l.pages() {
			slots := t.Slots()[p*int64(l.pageBytes()) : (p+1)*int64(l.pageBytes())]
			if !isZero(slots) {
				out = appendCuckooPageRecord(out, pageKey(nil, nil, i, p)[1:], slots)
			}
		}
	}
	return out
}

// parseCuckooAny decodes what the CF*Reply functions take: a value stored
// whole, or a paged filter's dump. A header alone holds no fingerprints
// to answer from: the Store's commands read its pages.
func parseCuckooAny(b []byte) (*CuckooFilter, error) {
	switch {
	case len(b) > 0 && b[0] == kindPagedCuckooDump:
		d, err := parseCuckooDump(b)
		if err != nil {
			return nil, err
		}
		return d.filter(), nil
	case len(b) > 0 && b[0] == kindPagedCuckoo:
		return nil, fmt.Errorf("%w: a paged cuckoo filter's header: its items are in its pages (use the Store, or a Dump)", ErrInvalidArgument)
	}
	return ParseCuckoo(b)
}

// restoreCuckoo is Store.Restore of a paged cuckoo filter's dump, or of a
// header alone that holds no fingerprints (an empty filter).
func (s *Store) restoreCuckoo(key, value []byte) error {
	var d *cuckooDump
	var err error
	if value[0] == kindPagedCuckoo {
		var h *pagedCuckoo
		if h, err = parsePagedCuckoo(value); err == nil && h.stored() != 0 {
			err = corruptf("a paged cuckoo header of %d fingerprints without its pages", h.stored())
		}
		d = &cuckooDump{header: h, raw: value}
	} else {
		d, err = parseCuckooDump(value)
	}
	if err != nil {
		return fmt.Errorf("sketchcol: restore: %w", err)
	}
	defer s.lock(key)()
	return s.restorePagedCuckoo(key, d)
}
