package sketchcol

import (
	"bytes"

	"github.com/sievedb/sieve"
)

// The Store's commands on paged Top-K sketches (topk_paged.go). Every
// sketch this version creates is paged; a sketch stored whole (kind 0x50)
// keeps its own path (topk_store.go).

// topKPageSet is the pages of one paged sketch a command reads, with the
// command's adds applied, the adds to write and the heap offers made.
type topKPageSet struct {
	get    pageGetter
	key    []byte
	hdr    *pagedTopK
	pages  map[int64]*topKPend
	order  []int64 // pages with adds, in order
	offers []topKOffer
	buf    []byte
	// created: the header operand must be written (a Batch creating the
	// key), even without offers.
	created bool
	cache   *pageCacheRef // the sketch's cache entry (nil: none)
}

type topKPend struct {
	body  []byte // the buckets' bytes (topKPageBody); nil: zeros
	owned bool   // body is the command's copy, which its adds change
	adds  []topKAdd
}

func newTopKPageSet(get pageGetter, key []byte, hdr *pagedTopK) *topKPageSet {
	return &topKPageSet{get: get, key: key, hdr: hdr, pages: map[int64]*topKPend{}}
}

// page returns page p, reading it the first time; a page of another size
// (an earlier sketch's) reads as zeros.
func (ps *topKPageSet) page(p int64) (*topKPend, error) {
	if pp := ps.pages[p]; pp != nil {
		return pp, nil
	}
	if body, ok := ps.cache.lookup(p); ok {
		pp := &topKPend{body: body, owned: body != nil}
		ps.pages[p] = pp
		return pp, nil
	}
	ps.buf = pageKey(ps.buf[:0], ps.key, kindTopKPage, p)
	v, err := ps.get(ps.buf)
	if err != nil {
		return nil, err
	}
	body, err := topKPageBody(v)
	if err != nil {
		return nil, err
	}
	if len(body) != 8*topKPageLen(ps.hdr.spec, p) {
		body = nil
	}
	pp := &topKPend{body: body}
	ps.pages[p] = pp
	ps.cache.keep(p, body)
	return pp, nil
}

// add is TopK.Add on the header and pages: it returns the item expelled.
func (ps *topKPageSet) add(item []byte, incr uint32) ([]byte, error) {
	t := ps.hdr.TopK
	h := itemHash(item)
	fp := topKFingerprint(h)
	var maxCount uint32
	for i := range t.spec.Depth {
		p, idx := topKCell(t.spec, h, i)
		pp, err := ps.page(p)
		if err != nil {
			return nil, err
		}
		if !pp.owned {
			body := make([]byte, 8*topKPageLen(t.spec, p))
			copy(body, pp.body)
			pp.body, pp.owned = body, true
			ps.cache.keep(p, body)
		}
		if pp.adds == nil {
			ps.order = append(ps.order, p)
		}
		b := t.addToBucket(pp.body, idx, h, i, incr)
		pp.adds = append(pp.adds, topKAdd{idx: idx, h: h, incr: incr})
		if b.fp == fp {
			maxCount = max(maxCount, b.count)
		}
	}
	if maxCount >= t.heap[0].count { // else the offer changes nothing
		ps.offers = append(ps.offers, topKOffer{count: maxCount, item: bytes.Clone(item)})
	}
	return t.offer(item, fp, maxCount), nil
}

// count is TopK.Count on the pages.
func (ps *topKPageSet) count(item []byte) (int64, error) {
	spec := ps.hdr.spec
	h := itemHash(item)
	fp := topKFingerprint(h)
	var n uint32
	for i := range spec.Depth {
		p, idx := topKCell(spec, h, i)
		pp, err := ps.page(p)
		if err != nil {
			return 0, err
		}
		if pp.body == nil {
			continue
		}
		if b := bucketAt(pp.body, idx); b.fp == fp && b.count > n {
			n = b.count
		}
	}
	return int64(n), nil
}

// writeTo adds the header operand (always when created, else when there
// are offers) and the page operands to wb, and forgets them (the header
// and buckets stay, for a later add of the same Batch).
func (ps *topKPageSet) writeTo(s *Store, wb *sieve.Batch, created bool) error {
	spec := ps.hdr.spec
	if created || len(ps.offers) > 0 {
		if err := wb.MergeCF(s.cf, ps.key, appendPagedTopKOp(nil, &pagedTopKOp{spec: spec, offers: ps.offers})); err != nil {
			return err
		}
	}
	rp := int64(topKRowPages(spec.Width))
	for _, p := range ps.order {
		pp := ps.pages[p]
		o := &topKPageOp{n: topKPageLen(spec, p), row: int(p / rp), decay: spec.Decay, adds: pp.adds}
		ps.buf = pageKey(ps.buf[:0], ps.key, kindTopKPage, p)
		if err := wb.MergeCF(s.pages, ps.buf, appendTopKPageOp(nil, o)); err != nil {
			return err
		}
		pp.adds = nil
	}
	ps.order, ps.offers = ps.order[:0], nil
	return nil
}

// topKHeaderOf returns the paged header cur holds, nil for a legacy
// value; a missing key is ErrTopKKeyNotFound, another kind ErrWrongType.
func topKHeaderOf(cur []byte) (*pagedTopK, error) {
	if cur == nil {
		return nil, ErrTopKKeyNotFound
	}
	if err := expectKind(cur, KindTopK); err != nil {
		return nil, err
	}
	if cur[0] != kindPagedTopK {
		return nil, nil
	}
	return parsePagedTopK(cur)
}

// topKAddRecs runs recs on ps: the items expelled.
func topKAddRecs(ps *topKPageSet, recs []topKRecord) ([][]byte, error) {
	out := make([][]byte, len(recs))
	for i, r := range recs {
		var err error
		if out[i], err = ps.add(r.item, r.incr); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// topKPagedAdd runs TOPK.INCRBY on a paged sketch and writes its header
// and page operands as one batch. With the key's lock held the replies
// are exact; a blind caller (no lock) writes the same adds, which the
// merge replays in commit order, with offers computed from what it read.
// The cache entry c (nil: none; REQUIRES: the key's lock) follows.
func (s *Store) topKPagedAdd(key []byte, hdr *pagedTopK, c *pageCacheRef, created bool, recs []topKRecord) ([][]byte, error) {
	ps := newTopKPageSet(s.rawPage, key, hdr)
	ps.cache = c
	out, err := topKAddRecs(ps, recs)
	wrote := created || len(ps.order) > 0
	if err == nil && wrote {
		err = s.writeKey(key, func(wb *sieve.Batch) error { return ps.writeTo(s, wb, created) })
	}
	if c != nil && (wrote || err != nil) {
		if err != nil { // the entry (header, pages) may be ahead of the value
			s.dropCounters(c.stripe, string(key))
		} else {
			c.e.st++ // past our own write, tagged as of the read: any other write makes it stale
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// topKLocked is cmsLocked for a Top-K sketch (a missing key is
// ErrTopKKeyNotFound). REQUIRES: the stripe's lock.
func (s *Store) topKLocked(stripe int, key []byte) (hdr *pagedTopK, c *pageCacheRef, cur []byte, err error) {
	st, gl := s.cacheTag(stripe)
	if e := s.counterCached(stripe, key); e != nil && e.topk != nil {
		return e.topk, &pageCacheRef{s: s, stripe: stripe, key: key, e: e}, nil, nil
	}
	if cur, err = s.get(key); err != nil {
		return nil, nil, nil, err
	}
	if hdr, err = topKHeaderOf(cur); err != nil || hdr == nil {
		return nil, nil, cur, err
	}
	e := &counterEntry{topk: hdr}
	if s.putCounters(stripe, key, e, st, gl) {
		c = &pageCacheRef{s: s, stripe: stripe, key: key, e: e}
	}
	return hdr, c, nil, nil
}

// topKReadPaged answers a reading command on key: reply gets the header
// (and the page set, for the pages it needs); ok false means the key holds
// a sketch stored whole, cur.
func topKReadPaged[R any](s *Store, key []byte, reply func(ps *topKPageSet) (R, error)) (r R, cur []byte, ok bool, err error) {
	stripe := s.stripe(key)
	s.locks[stripe].Lock() // a paged sketch's header and pages are read as one state
	defer s.locks[stripe].Unlock()
	hdr, c, cur, err := s.topKLocked(stripe, key)
	if err != nil || hdr == nil {
		return r, cur, false, err
	}
	ps := newTopKPageSet(s.rawPage, key, hdr)
	ps.cache = c
	r, err = reply(ps)
	return r, nil, true, err
}

// topKBlind is TopKAddBlind and Batch.TopKAdd on a paged sketch or a
// missing key (created with DefaultTopKSpec); ok false means the key
// holds something else, which takes the legacy operand.
func (s *Store) topKBlind(key []byte, items [][]byte) (ok bool, err error) {
	recs, err := topKRecords(items, nil)
	if err != nil {
		return false, err
	}
	cur, err := s.get(key)
	if err != nil {
		return false, err
	}
	if cur != nil && cur[0] != kindPagedTopK {
		return false, nil
	}
	hdr, created, err := topKHeaderOrNew(cur)
	if err != nil {
		return false, err
	}
	_, err = s.topKPagedAdd(key, hdr, nil, created, recs)
	return true, err
}

// topKHeaderOrNew decodes cur, a paged header, or makes one of
// DefaultTopKSpec when cur is nil (created).
func topKHeaderOrNew(cur []byte) (*pagedTopK, bool, error) {
	if cur == nil {
		hdr, err := newPagedTopK(DefaultTopKSpec())
		return hdr, true, err
	}
	hdr, err := parsePagedTopK(cur)
	return hdr, false, err
}

// topKReservePaged creates an empty paged sketch. REQUIRES: key's lock,
// key missing.
func (s *Store) topKReservePaged(key []byte, spec TopKSpec) error {
	return s.writeKey(key, func(wb *sieve.Batch) error {
		return wb.MergeCF(s.cf, key, appendPagedTopKOp(nil, &pagedTopKOp{spec: spec}))
	})
}
