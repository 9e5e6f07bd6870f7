package sketchcol

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/sievedb/sieve"
)

// BF.SCANDUMP and BF.LOADCHUNK: a filter dumped and loaded in chunks, so
// that neither side holds it whole. A client calls BFScanDump with
// iterator 0, then with each iterator returned, until it returns 0, and
// gives every (iterator, chunk) pair to BFLoadChunk in the same order.
//
// Chunks are sieve's own bytes (as RedisBloom's are its own): iterator 1's
// chunk is the header value; each later chunk is up to scanDumpPages page
// records as in a dump (FORMAT.md, "Paged Bloom dump"), and its iterator
// says where the scan resumes: 2 + sub-filter<<32 + page. A filter stored
// whole (before paging) is one chunk, its value.

// scanDumpPages is how many pages a chunk carries (64 KiB of bits).
const scanDumpPages = 16

// BFScanDump returns the chunk of key's Bloom filter at iter and the
// iterator of the next one (0 after the last). A missing key returns an
// error wrapping sieve.ErrNotFound.
func (s *Store) BFScanDump(key []byte, iter int64) (int64, []byte, error) {
	cur, err := s.get(key)
	if err == nil && cur == nil {
		err = notFound(key)
	}
	if err == nil {
		err = expectKind(cur, KindBloom)
	}
	if err != nil {
		return 0, nil, err
	}
	switch {
	case iter < 0:
		return 0, nil, fmt.Errorf("%w: iterator %d", ErrInvalidArgument, iter)
	case iter == 0:
		return 1, cur, nil
	case iter == 1 && cur[0] == kindBloomValue:
		return 0, nil, nil // the single value was the only chunk
	case cur[0] == kindBloomValue:
		return 0, nil, fmt.Errorf("%w: iterator %d of a one-chunk filter", ErrInvalidArgument, iter)
	}
	h, err := parsePagedBloom(cur)
	if err != nil {
		return 0, nil, err
	}
	return s.scanPages(key, h, max(iter, 2))
}

// scanPages returns the page records of up to scanDumpPages pages from the
// one iter names on, and the next iterator.
func (s *Store) scanPages(key []byte, h *pagedBloom, iter int64) (int64, []byte, error) {
	if s.view != nil {
		return 0, nil, fmt.Errorf("%w: BFScanDump inside a transaction", ErrInvalidArgument)
	}
	pos := uint64(iter - 2)
	layer, page := int(pos>>32), int64(pos&(1<<32-1))
	if layer >= len(h.counts) {
		return 0, nil, nil
	}
	if h.pages() <= scanByGetPages {
		return s.scanPagesByGet(key, h, layer, page)
	}
	start, end := pageRange(key)
	it := s.pages.NewIter(&sieve.IterOptions{LowerBound: pageKey(nil, key, layer, page), UpperBound: end})
	var out []byte
	n, next := 0, int64(0)
	for ok := it.First(); ok && n < scanDumpPages; ok = it.Next() {
		k := it.Key()[len(start):]
		bits, err := pageBitsOf(it.Value())
		if err != nil || len(k) != 5 {
			_ = it.Close()
			return 0, nil, fmt.Errorf("sketchcol: key %q: page %x: %w", clip(key), k, err)
		}
		i, p := int(k[0]), int64(binary.BigEndian.Uint32(k[1:]))
		if i >= len(h.counts) || int64(len(bits))*8 != h.layer(i).pageBits {
			continue // a page an earlier filter of the key left
		}
		out = append(out, k...)
		out = binary.AppendUvarint(out, uint64(len(bits)))
		out = append(out, bits...)
		n++
		next = 2 + int64(i)<<32 + p + 1
	}
	if err := it.Close(); err != nil {
		return 0, nil, err
	}
	if n == 0 {
		return 0, nil, nil
	}
	return next, out, nil
}

// BFLoadChunk loads one chunk of BFScanDump into key: iterator 1's chunk
// (the header, or a filter stored whole) replaces whatever key held and
// its pages; a later chunk's pages are written into the filter that chunk
// 1 created. A chunk that does not decode, or pages that do not fit the
// key's filter, return an error wrapping ErrCorruption and write nothing.
func (s *Store) BFLoadChunk(key []byte, iter int64, chunk []byte) error {
	if iter < 1 {
		return fmt.Errorf("%w: iterator %d", ErrInvalidArgument, iter)
	}
	if iter == 1 {
		if len(chunk) > 0 && chunk[0] == kindBloomValue {
			return s.Restore(key, chunk)
		}
		h, err := parsePagedBloom(chunk)
		if err != nil {
			return fmt.Errorf("sketchcol: BF.LOADCHUNK: %w", err)
		}
		defer s.lock(key)()
		return s.restorePaged(key, &pagedDump{header: h, raw: chunk})
	}
	defer s.lock(key)()
	cur, err := s.get(key)
	if err == nil && cur == nil {
		err = notFound(key)
	}
	if err != nil {
		return err
	}
	h, err := pagedHeader(cur)
	if err == nil && h == nil {
		err = fmt.Errorf("%w: page chunk for a filter stored whole", ErrInvalidArgument)
	}
	if err != nil {
		return err
	}
	hdr := h.appendValue(nil)
	d, err := parsePagedDump(bytes.Join([][]byte{{kindPagedBloomDump, version1}, binary.AppendUvarint(nil, uint64(len(hdr))), hdr, chunk}, nil))
	if err != nil {
		return fmt.Errorf("sketchcol: BF.LOADCHUNK: %w", err)
	}
	return s.writePages(key, d)
}

// writePages writes a dump's pages over key's (its header unchanged).
// REQUIRES: key's lock.
func (s *Store) writePages(key []byte, d *pagedDump) error {
	return s.writeKey(key, func(wb *sieve.Batch) error { return s.putPages(wb, key, d) })
}

// scanByGetPages: a filter of at most this many pages is scanned by a
// point read of each page rather than by an iterator over the key's page
// range, which steps one by one over the pages of an earlier filter of
// the key that a deletion covers until compaction drops them (a deleted
// 100M-item filter's pages made each chunk of a new small one take 80 ms).
var scanByGetPages int64 = 4096

// scanPagesByGet is scanPages reading the pages one by one.
func (s *Store) scanPagesByGet(key []byte, h *pagedBloom, layer int, page int64) (int64, []byte, error) {
	var out, pk []byte
	n, next := 0, int64(0)
	for i := layer; i < len(h.counts) && n < scanDumpPages; i, page = i+1, 0 {
		l := h.layer(i)
		for p := page; p < l.pages && n < scanDumpPages; p++ {
			pk = pageKey(pk[:0], key, i, p)
			bits, err := s.getPage(pk)
			if err != nil {
				return 0, nil, fmt.Errorf("sketchcol: key %q: page %d of sub-filter %d: %w", clip(key), p, i, err)
			}
			if bits == nil || int64(len(bits))*8 != l.pageBits {
				continue // never written, or a page an earlier filter of the key left
			}
			out = append(out, pk[len(pk)-5:]...)
			out = binary.AppendUvarint(out, uint64(len(bits)))
			out = append(out, bits...)
			n++
			next = 2 + int64(i)<<32 + p + 1
		}
	}
	if n == 0 {
		return 0, nil, nil
	}
	return next, out, nil
}
