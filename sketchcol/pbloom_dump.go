package sketchcol

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sievedb/sieve"
)

// A paged filter's dump (Store.Dump) carries the header and every page
// written, so that Restore can rebuild the filter and BFExistsReply can
// probe it without a database (FORMAT.md, "Paged Bloom dump"):
//
//	kind 0x24 | version 1 | header length uvarint | header value
//	then per page, in key order: sub-filter 1 byte | page uint32 (big-endian)
//	| bits length uvarint | bits
//
// Its size is the filter's written pages: a dump of a large filter is as
// large as the filter.

const kindPagedBloomDump = 0x24

// pagedDump is a decoded dump: the header and its pages' bits, by page key
// (pageKey with an empty user key).
type pagedDump struct {
	header *pagedBloom
	raw    []byte // the header value
	pages  map[string][]byte
}

// dumpPaged returns the dump of the paged filter whose header is cur.
func (s *Store) dumpPaged(key, cur []byte) ([]byte, error) {
	h, err := parsePagedBloom(cur)
	if err != nil {
		return nil, err
	}
	out := append([]byte{kindPagedBloomDump, version1}, binary.AppendUvarint(nil, uint64(len(cur)))...)
	out = append(out, cur...)
	start, end := pageRange(key)
	var it *sieve.Iterator
	if s.view != nil {
		return nil, fmt.Errorf("%w: Dump of a paged Bloom filter inside a transaction", ErrInvalidArgument)
	}
	it = s.pages.NewIter(&sieve.IterOptions{LowerBound: start, UpperBound: end})
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()[len(start):]
		bits, err := pageBitsOf(it.Value())
		if err != nil || len(k) != 5 {
			_ = it.Close()
			return nil, fmt.Errorf("sketchcol: key %q: page %x: %w", clip(key), k, errors.Join(err, corruptf("bad page key")))
		}
		if i := int(k[0]); i >= len(h.counts) || int64(len(bits))*8 != h.layer(i).pageBits {
			continue // a page an earlier filter of the key left
		}
		out = append(out, k...)
		out = binary.AppendUvarint(out, uint64(len(bits)))
		out = append(out, bits...)
	}
	return out, it.Close()
}

// parsePagedDump decodes and checks a dump: the header, and every page
// within its sub-filters and of their page size.
func parsePagedDump(v []byte) (*pagedDump, error) {
	if err := checkValueKind(v, kindPagedBloomDump); err != nil {
		return nil, err
	}
	rest := v[2:]
	n, k := canonicalUvarint(rest)
	if k <= 0 || n > uint64(len(rest)-k) {
		return nil, corruptf("paged Bloom dump: bad header length")
	}
	raw := rest[k : k+int(n)]
	h, err := parsePagedBloom(raw)
	if err != nil {
		return nil, err
	}
	d := &pagedDump{header: h, raw: raw, pages: map[string][]byte{}}
	var prev []byte
	for rest = rest[k+int(n):]; len(rest) > 0; {
		if len(rest) < 6 {
			return nil, corruptf("paged Bloom dump: short page")
		}
		i, p := int(rest[0]), int64(binary.BigEndian.Uint32(rest[1:5]))
		bl, k := canonicalUvarint(rest[5:])
		if k <= 0 || i >= len(h.counts) {
			return nil, corruptf("paged Bloom dump: page of sub-filter %d", i)
		}
		l := h.layer(i)
		body := rest[5+k:]
		if p >= l.pages || int64(bl)*8 != l.pageBits || uint64(len(body)) < bl {
			return nil, corruptf("paged Bloom dump: page %d of sub-filter %d (%d bytes)", p, i, bl)
		}
		if prev != nil && string(rest[:5]) <= string(prev) {
			return nil, corruptf("paged Bloom dump: pages out of order")
		}
		prev = rest[:5]
		d.pages[string(pageKey(nil, nil, i, p))] = body[:bl]
		rest = body[bl:]
	}
	return d, nil
}

// exists probes the dump for items.
func (d *pagedDump) exists(items [][]byte) []bool {
	out := make([]bool, len(items))
	for j, it := range items {
		h := d.header.hashOf(it)
		for i := range d.header.counts {
			l := d.header.layer(i)
			p := d.header.probe(h, i)
			if testPage(d.pages[string(pageKey(nil, nil, i, p.page))], p, l) {
				out[j] = true
				break
			}
		}
	}
	return out
}

// restorePaged replaces key with the filter of a dump: its header, its
// pages, and none of the key's earlier pages. REQUIRES: key's lock.
func (s *Store) restorePaged(key []byte, d *pagedDump) error {
	return s.writeKey(key, func(wb *sieve.Batch) error {
		if err := s.dropPages(wb, key); err != nil {
			return err
		}
		if err := wb.PutCF(s.cf, key, d.raw); err != nil {
			return err
		}
		return s.putPages(wb, key, d)
	})
}

// putPages adds d's pages, as key's, to wb.
func (s *Store) putPages(wb *sieve.Batch, key []byte, d *pagedDump) error {
	for k, bits := range d.pages {
		pk := append(pagePrefix(key), k[len(pagePrefix(nil)):]...)
		if err := wb.PutCF(s.pages, pk, append([]byte{kindBloomPage, version1}, bits...)); err != nil {
			return err
		}
	}
	return nil
}
