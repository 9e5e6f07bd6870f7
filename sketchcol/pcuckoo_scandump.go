package sketchcol

import (
	"encoding/binary"
	"fmt"

	"github.com/sievedb/sieve"
)

// CF.SCANDUMP and CF.LOADCHUNK, as BF.SCANDUMP and BF.LOADCHUNK
// (pbloom_scandump.go): iterator 0's chunk is the header value (a filter
// stored whole: its value, the only chunk); each later chunk is up to
// scanDumpPages page records as in a dump (FORMAT.md, "Paged cuckoo
// dump"), and its iterator is 2 + sub-filter<<32 + page + 1 of its last
// page (0 after the last chunk). Pages of empty slots are not sent.

// CFScanDump returns the chunk of key's cuckoo filter at iter and the
// iterator of the next one (0, nil after the last). A missing key returns
// an error wrapping sieve.ErrNotFound.
func (s *Store) CFScanDump(key []byte, iter int64) (int64, []byte, error) {
	if iter == 0 { // the header with no pending adds, if no Batch writes meanwhile
		unlock := s.lock(key)
		err := s.drainCuckoo(key)
		unlock()
		if err != nil {
			return 0, nil, err
		}
	}
	cur, err := s.get(key)
	if err == nil && cur == nil {
		err = notFound(key)
	}
	if err == nil {
		err = expectKind(cur, KindCuckoo)
	}
	if err != nil {
		return 0, nil, err
	}
	switch {
	case iter < 0:
		return 0, nil, fmt.Errorf("%w: iterator %d", ErrInvalidArgument, iter)
	case iter == 0:
		return 1, cur, nil
	case cur[0] == kindCuckooValue:
		return 0, nil, nil // the single value was the only chunk
	}
	h, err := parsePagedCuckoo(cur)
	if err != nil {
		return 0, nil, err
	}
	return s.scanCuckooPages(key, h, max(iter, 2))
}

// scanCuckooPages returns the records of up to scanDumpPages pages from
// the one iter names on, and the next iterator.
func (s *Store) scanCuckooPages(key []byte, h *pagedCuckoo, iter int64) (int64, []byte, error) {
	if s.view != nil {
		return 0, nil, fmt.Errorf("%w: CFScanDump inside a transaction", ErrInvalidArgument)
	}
	pos := uint64(iter - 2)
	layer, page := int(pos>>32), int64(pos&(1<<32-1))
	if layer >= len(h.items) {
		return 0, nil, nil
	}
	start, end := pageRange(key)
	it := s.pages.NewIter(&sieve.IterOptions{LowerBound: pageKey(nil, key, layer, page), UpperBound: end})
	var out []byte
	n, next := 0, int64(0)
	for ok := it.First(); ok && n < scanDumpPages; ok = it.Next() {
		rel := it.Key()[len(start):]
		slots, err := cuckooPageOf(key, h, rel, it.Value())
		if err != nil {
			_ = it.Close()
			return 0, nil, err
		}
		if slots == nil {
			continue
		}
		out = appendCuckooPageRecord(out, rel, slots)
		n++
		next = 2 + int64(rel[0])<<32 + int64(binary.BigEndian.Uint32(rel[1:])) + 1
	}
	if err := it.Close(); err != nil {
		return 0, nil, err
	}
	if n == 0 {
		return 0, nil, nil
	}
	return next, out, nil
}

// CFLoadChunk loads one chunk of CFScanDump into key: iterator 1's chunk
// (the header, or a filter stored whole) replaces whatever key held and
// its pages; a later chunk's pages are written into the filter that chunk
// 1 created. A chunk that does not decode, or pages that do not fit the
// key's filter, return an error wrapping ErrCorruption and write nothing.
func (s *Store) CFLoadChunk(key []byte, iter int64, chunk []byte) error {
	if iter < 1 {
		return fmt.Errorf("%w: iterator %d", ErrInvalidArgument, iter)
	}
	if iter == 1 {
		if len(chunk) > 0 && chunk[0] == kindCuckooValue {
			return s.Restore(key, chunk)
		}
		h, err := parsePagedCuckoo(chunk)
		if err != nil {
			return fmt.Errorf("sketchcol: CF.LOADCHUNK: %w", err)
		}
		defer s.lock(key)()
		return s.restorePagedCuckoo(key, &cuckooDump{header: h, raw: chunk})
	}
	defer s.lock(key)()
	cur, err := s.get(key)
	if err == nil && cur == nil {
		err = notFound(key)
	}
	if err != nil {
		return err
	}
	h, err := pagedCuckooHeader(cur)
	if err == nil && h == nil {
		err = fmt.Errorf("%w: page chunk for a cuckoo filter stored whole", ErrInvalidArgument)
	}
	if err != nil {
		return err
	}
	d := &cuckooDump{header: h, pages: map[string][]byte{}}
	if err := d.parsePages(chunk, nil); err != nil {
		return fmt.Errorf("sketchcol: CF.LOADCHUNK: %w", err)
	}
	return s.writeKey(key, func(wb *sieve.Batch) error { return s.putCuckooPages(wb, key, d) })
}
