package sketchcol

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/sievedb/sieve"
)

// The Store's commands on paged Count-Min sketches (cms_paged.go). Every
// sketch this version creates is paged; a sketch stored whole (kind 0x40)
// keeps its own path (cms_store.go).

// pageGetter reads a raw page value (nil when missing).
type pageGetter func(pkey []byte) ([]byte, error)

// rawPage reads a page of the Store (or its view): nil when missing.
func (s *Store) rawPage(pkey []byte) ([]byte, error) {
	var v []byte
	var err error
	if s.view != nil {
		v, err = s.view.GetCF(s.pages, pkey)
	} else {
		v, err = s.pages.Get(pkey)
	}
	if errors.Is(err, sieve.ErrNotFound) {
		return nil, nil
	}
	return v, err
}

// cmsPageSet is the pages of one paged sketch a command reads, with the
// command's own increments applied, and the increments to write.
type cmsPageSet struct {
	get   pageGetter
	key   []byte
	spec  CMSSpec
	pages map[int64]*cmsPend
	order []int64 // pages with increments, in order
	buf   []byte
	cache *pageCacheRef // the sketch's cache entry (nil: none)
}

// pageCacheRef is a page set's cache entry: pages are looked up in it
// first, and kept in it as read and changed. REQUIRES: the stripe's lock.
type pageCacheRef struct {
	s      *Store
	stripe int
	key    []byte
	e      *counterEntry
}

// lookup returns a cached page body (nil: zeros), which the command may
// change in place.
func (c *pageCacheRef) lookup(p int64) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	b, ok := c.e.pages[p]
	return b, ok
}

func (c *pageCacheRef) keep(p int64, body []byte) {
	if c != nil {
		c.s.cachePage(c.stripe, c.key, c.e, p, body)
	}
}

type cmsPend struct {
	body  []byte // the counters' bytes (cmsPageBody); nil: zeros
	owned bool   // body is the command's copy, which its increments change
	adds  []cmsAdd
}

func newCMSPageSet(get pageGetter, key []byte, spec CMSSpec) *cmsPageSet {
	return &cmsPageSet{get: get, key: key, spec: spec, pages: map[int64]*cmsPend{}}
}

// page returns page p, reading it the first time; a page of another size
// than the sketch's (one an earlier sketch of the key left) reads as
// zeros.
func (ps *cmsPageSet) page(p int64) (*cmsPend, error) {
	if pp := ps.pages[p]; pp != nil {
		return pp, nil
	}
	if body, ok := ps.cache.lookup(p); ok {
		pp := &cmsPend{body: body, owned: body != nil}
		ps.pages[p] = pp
		return pp, nil
	}
	ps.buf = pageKey(ps.buf[:0], ps.key, kindCMSPage, p)
	v, err := ps.get(ps.buf)
	if err != nil {
		return nil, err
	}
	body, err := cmsPageBody(v)
	if err != nil {
		return nil, err
	}
	if len(body) != 4*cmsPageLen(ps.spec, p) {
		body = nil
	}
	pp := &cmsPend{body: body}
	ps.pages[p] = pp
	ps.cache.keep(p, body)
	return pp, nil
}

// counter returns row i's counter of hash h.
func (ps *cmsPageSet) counter(h uint64, i int) (uint32, error) {
	p, idx := cmsCell(ps.spec, h, i)
	pp, err := ps.page(p)
	if err != nil || pp.body == nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(pp.body[4*idx:]), nil
}

// query is the estimate of hash h: its least counter.
func (ps *cmsPageSet) query(h uint64) (uint32, error) {
	est := uint32(math.MaxUint32)
	for i := range ps.spec.Depth {
		c, err := ps.counter(h, i)
		if err != nil {
			return 0, err
		}
		est = min(est, c)
	}
	return est, nil
}

// incr adds incr to h's counter in each row and returns the estimate
// after it, as CountMinSketch.incrHash.
func (ps *cmsPageSet) incr(h, incr uint64) (uint32, error) {
	est := uint32(math.MaxUint32)
	for i := range ps.spec.Depth {
		p, idx := cmsCell(ps.spec, h, i)
		pp, err := ps.page(p)
		if err != nil {
			return 0, err
		}
		if !pp.owned {
			body := make([]byte, 4*cmsPageLen(ps.spec, p))
			copy(body, pp.body)
			pp.body, pp.owned = body, true
			ps.cache.keep(p, body)
		}
		if pp.adds == nil {
			ps.order = append(ps.order, p)
		}
		pp.adds = append(pp.adds, cmsAdd{idx: idx, incr: incr})
		est = min(est, addCounter(pp.body, idx, incr))
	}
	return est, nil
}

// writeTo adds the page operands to wb.
func (ps *cmsPageSet) writeTo(s *Store, wb *sieve.Batch) error {
	for _, p := range ps.order {
		pp := ps.pages[p]
		ps.buf = pageKey(ps.buf[:0], ps.key, kindCMSPage, p)
		if err := wb.MergeCF(s.pages, ps.buf, appendCMSPageOp(nil, cmsPageLen(ps.spec, p), sumCMSAdds(pp.adds))); err != nil {
			return err
		}
		pp.adds = nil
	}
	ps.order = ps.order[:0]
	return nil
}

// cmsHeaderOf returns the paged header cur holds, nil for a legacy value;
// a missing key is ErrCMSKeyNotFound, another kind ErrWrongType.
func cmsHeaderOf(cur []byte) (*pagedCMS, error) {
	if cur == nil {
		return nil, ErrCMSKeyNotFound
	}
	if err := expectKind(cur, KindCMS); err != nil {
		return nil, err
	}
	if cur[0] != kindPagedCMS {
		return nil, nil
	}
	return parsePagedCMS(cur)
}

// cmsLocked returns key's paged header and its cache entry (from the
// cache, or read and cached), or the key's value when it holds no paged
// sketch (hdr nil; a missing key is ErrCMSKeyNotFound). REQUIRES: the
// stripe's lock.
func (s *Store) cmsLocked(stripe int, key []byte) (hdr *pagedCMS, c *pageCacheRef, cur []byte, err error) {
	st, gl := s.cacheTag(stripe)
	if e := s.counterCached(stripe, key); e != nil && e.cms != nil {
		return e.cms, &pageCacheRef{s: s, stripe: stripe, key: key, e: e}, nil, nil
	}
	if cur, err = s.get(key); err != nil {
		return nil, nil, nil, err
	}
	if hdr, err = cmsHeaderOf(cur); err != nil || hdr == nil {
		return nil, nil, cur, err
	}
	e := &counterEntry{cms: hdr}
	if s.putCounters(stripe, key, e, st, gl) {
		c = &pageCacheRef{s: s, stripe: stripe, key: key, e: e}
	}
	return hdr, c, nil, nil
}

// cmsPagedIncr runs CMS.INCRBY on a paged sketch: the estimates after each
// increment, and header and page operands written as one batch; the cache
// entry (c, nil for none) follows. REQUIRES: key's lock.
func (s *Store) cmsPagedIncr(key []byte, hdr *pagedCMS, c *pageCacheRef, recs []cmsRecord) ([]int64, error) {
	ps := newCMSPageSet(s.rawPage, key, hdr.spec)
	ps.cache = c
	out, delta, err := cmsIncrRecs(ps, recs)
	wrote := len(ps.order) > 0
	if err == nil && wrote {
		err = s.writeKey(key, func(wb *sieve.Batch) error {
			if err := wb.MergeCF(s.cf, key, appendPagedCMSOp(nil, &pagedCMSOp{spec: hdr.spec, delta: delta})); err != nil {
				return err
			}
			return ps.writeTo(s, wb)
		})
		hdr.count = satAdd(hdr.count, delta)
	}
	if c != nil && (wrote || err != nil) {
		if err != nil { // the entry may be ahead of the value
			s.dropCounters(c.stripe, string(key))
		} else {
			c.e.st++ // past our own write, tagged as of the read: any other write makes it stale
		}
	}
	return out, err
}

// cmsIncrRecs applies recs to the pages of ps: the estimates and the
// increments' saturating sum.
func cmsIncrRecs(ps *cmsPageSet, recs []cmsRecord) ([]int64, uint64, error) {
	out := make([]int64, len(recs))
	var delta uint64
	for i, r := range recs {
		est, err := ps.incr(r.hash, r.incr)
		if err != nil {
			return nil, 0, err
		}
		out[i] = int64(est)
		delta = satAdd(delta, r.incr)
	}
	return out, delta, nil
}

// cmsQueryPaged answers CMS.QUERY on a paged sketch. REQUIRES: key's
// lock.
func (s *Store) cmsQueryPaged(key []byte, hdr *pagedCMS, c *pageCacheRef, items [][]byte) ([]int64, error) {
	ps := newCMSPageSet(s.rawPage, key, hdr.spec)
	ps.cache = c
	out := make([]int64, len(items))
	for i, it := range items {
		est, err := ps.query(itemHash(it))
		if err != nil {
			return nil, err
		}
		out[i] = int64(est)
	}
	return out, nil
}

// cmsInitPaged creates an empty paged sketch. REQUIRES: key's lock, key
// missing. Like a paged Bloom filter's creation it deletes no pages (a
// blind writer may be creating the key at once).
func (s *Store) cmsInitPaged(key []byte, spec CMSSpec) error {
	return s.writeKey(key, func(wb *sieve.Batch) error {
		return wb.MergeCF(s.cf, key, appendPagedCMSOp(nil, &pagedCMSOp{spec: spec}))
	})
}

// cmsIncrBlind is CMSIncrByBlind: the key's header is read for its
// geometry (a missing key is created with DefaultCMSSpec, paged), the
// pages are not; a sketch stored whole takes the legacy operand.
func (s *Store) cmsIncrBlind(key []byte, items [][]byte, increments []int64) (op []byte, paged bool, err error) {
	recs, err := cmsRecords(items, increments)
	if err != nil {
		return nil, false, err
	}
	cur, err := s.get(key)
	if err != nil {
		return nil, false, err
	}
	if cur != nil && cur[0] != kindPagedCMS {
		op, err := CMSIncrByOp(items, increments)
		return op, false, err // legacy, or another kind: the operand is dropped
	}
	hdr := &pagedCMS{spec: DefaultCMSSpec()}
	if cur != nil {
		if hdr, err = parsePagedCMS(cur); err != nil {
			return nil, false, err
		}
	}
	return nil, true, s.cmsBlindWrite(key, hdr.spec, recs, nil)
}

// cmsBlindWrite writes recs to a paged sketch of spec without reading its
// pages: into wb when not nil (a Batch), else as one batch of its own.
func (s *Store) cmsBlindWrite(key []byte, spec CMSSpec, recs []cmsRecord, wb *sieve.Batch) error {
	adds := map[int64][]cmsAdd{}
	var order []int64
	var delta uint64
	for _, r := range recs {
		for i := range spec.Depth {
			p, idx := cmsCell(spec, r.hash, i)
			if adds[p] == nil {
				order = append(order, p)
			}
			adds[p] = append(adds[p], cmsAdd{idx: idx, incr: r.incr})
		}
		delta = satAdd(delta, r.incr)
	}
	fill := func(wb *sieve.Batch) error {
		if err := wb.MergeCF(s.cf, key, appendPagedCMSOp(nil, &pagedCMSOp{spec: spec, delta: delta})); err != nil {
			return err
		}
		for _, p := range order {
			if err := wb.MergeCF(s.pages, pageKey(nil, key, kindCMSPage, p), appendCMSPageOp(nil, cmsPageLen(spec, p), sumCMSAdds(adds[p]))); err != nil {
				return err
			}
		}
		return nil
	}
	if wb != nil {
		return fill(wb)
	}
	return s.writeKey(key, fill)
}

// cmsMergeChunk is the pages CMS.MERGE writes per batch: a larger
// destination is written in several batches, after a first pass has
// checked the whole sum for overflow, so that it is never in memory whole.
const cmsMergeChunk = 1024

// cmsMergeSrc is a CMS.MERGE source: a sketch stored whole, or a paged one
// read page by page.
type cmsMergeSrc struct {
	whole *CountMinSketch
	pages *cmsPageSet
	count uint64
}

// pageCounters returns page p of the source (nil: zeros) in buf.
func (m *cmsMergeSrc) pageCounters(spec CMSSpec, p int64, buf []uint32) ([]uint32, error) {
	if m.whole != nil {
		ppr := int64(cmsRowPages(spec.Width))
		start := int(p/ppr)*spec.Width + int(p%ppr)*cmsPageCounters
		return m.whole.counters[start : start+cmsPageLen(spec, p)], nil
	}
	pp, err := m.pages.page(p)
	if err != nil || pp.body == nil {
		return nil, err
	}
	delete(m.pages.pages, p) // read once: keep none in memory
	buf = buf[:len(pp.body)/4]
	for i := range buf {
		buf[i] = binary.LittleEndian.Uint32(pp.body[4*i:])
	}
	return buf, nil
}

// cmsMergeSources decodes CMS.MERGE's sources (vals, read from one
// snapshot; pages through get) and checks that they have spec.
func cmsMergeSources(keys, vals [][]byte, spec CMSSpec, get pageGetter) ([]*cmsMergeSrc, error) {
	out := make([]*cmsMergeSrc, len(vals))
	for i, v := range vals {
		hdr, err := cmsHeaderOf(v)
		if err != nil {
			return nil, err
		}
		src := &cmsMergeSrc{}
		if hdr == nil {
			if src.whole, err = ParseCMS(v); err != nil {
				return nil, err
			}
			hdr = &pagedCMS{spec: src.whole.spec, count: src.whole.count}
		} else {
			src.pages = newCMSPageSet(get, keys[i], spec)
		}
		if hdr.spec != spec {
			return nil, ErrCMSDimensions
		}
		src.count = hdr.count
		out[i] = src
	}
	return out, nil
}

// cmsMergeTotal is the merged total count, as mergeCMS checks it.
func cmsMergeTotal(srcs []*cmsMergeSrc, weights []int64) (uint64, error) {
	var total int64
	for k, s := range srcs {
		var ok bool
		if s.count > math.MaxInt64 {
			return 0, ErrCMSMergeOverflow
		}
		if total, ok = mulAdd(total, int64(s.count), weights[k]); !ok {
			return 0, ErrCMSMergeOverflow
		}
	}
	if total < 0 {
		return 0, ErrCMSMergeOverflow
	}
	return uint64(total), nil
}

// cmsMergePage returns page p of Σ weights[k]·srcs[k] in out, and whether
// it has a counter above zero.
func cmsMergePage(spec CMSSpec, srcs []*cmsMergeSrc, weights []int64, p int64, out []uint32) (bool, error) {
	sums := make([]int64, len(out))
	buf := make([]uint32, cmsPageCounters)
	for k, s := range srcs {
		c, err := s.pageCounters(spec, p, buf)
		if err != nil {
			return false, err
		}
		for j, v := range c {
			var ok bool
			if sums[j], ok = mulAdd(sums[j], int64(v), weights[k]); !ok {
				return false, ErrCMSMergeOverflow
			}
		}
	}
	nonzero := false
	for j, v := range sums {
		if v < 0 || v > math.MaxUint32 {
			return false, ErrCMSMergeOverflow
		}
		out[j] = uint32(v)
		nonzero = nonzero || v != 0
	}
	return nonzero, nil
}

// cmsMergePaged sets dst to the merge of srcs (CMS.MERGE) as a paged
// sketch of spec, page by page: each page of the sum put (deleted when
// zeros), the header put last. Sources are read from a snapshot (or the
// view, where each page is read before it is written), so dst may be one
// of them. REQUIRES: dst's lock.
func (s *Store) cmsMergePaged(dst []byte, spec CMSSpec, srcs []*cmsMergeSrc, weights []int64) error {
	total, err := cmsMergeTotal(srcs, weights)
	if err != nil {
		return err
	}
	n := cmsPages(spec)
	buf := make([]uint32, cmsPageCounters)
	run := func(write func(p int64, c []uint32) error) error {
		for p := range n {
			c := buf[:cmsPageLen(spec, p)]
			nonzero, err := cmsMergePage(spec, srcs, weights, p, c)
			if err != nil {
				return err
			}
			if !nonzero {
				c = nil
			}
			if write != nil {
				if err := write(p, c); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if s.view != nil || n > cmsMergeChunk {
		if err := run(nil); err != nil { // overflow anywhere: nothing written
			return err
		}
	}
	w := s.newChunkWriter(dst)
	defer s.invalidate(dst)
	err = run(func(p int64, c []uint32) error {
		if c == nil {
			return w.put(pageKey(nil, dst, kindCMSPage, p), nil)
		}
		return w.put(pageKey(nil, dst, kindCMSPage, p), appendCMSPage(nil, c))
	})
	if err != nil {
		return err
	}
	return w.finish(appendValue(&pagedCMS{spec: spec, count: total}))
}

func appendValue(v sketch) []byte { return v.appendValue(nil) }

// chunkWriter writes a key replaced page by page: pages put (nil:
// deleted), cmsMergeChunk per batch, then its header, in the last batch
// (into the view's batch in a transaction). A crash between two of its
// batches leaves the key partly written: only a sketch of more than
// cmsMergeChunk pages takes several.
type chunkWriter struct {
	s   *Store
	key []byte
	wb  *sieve.Batch
	n   int
}

func (s *Store) newChunkWriter(key []byte) *chunkWriter {
	w := &chunkWriter{s: s, key: key, wb: s.view}
	if w.wb == nil {
		w.wb = s.db.NewBatch()
	}
	return w
}

func (w *chunkWriter) put(pkey, v []byte) error {
	if w.n > 0 && w.n%cmsMergeChunk == 0 && w.s.view == nil { // a full batch, and more to come
		if err := w.s.db.Apply(w.wb, w.s.wo); err != nil {
			return err
		}
		w.wb = w.s.db.NewBatch()
	}
	w.n++
	if v == nil {
		return w.wb.DeleteCF(w.s.pages, pkey)
	}
	return w.wb.PutCF(w.s.pages, pkey, v)
}

func (w *chunkWriter) finish(header []byte) error {
	if err := w.wb.PutCF(w.s.cf, w.key, header); err != nil {
		return err
	}
	if w.s.view != nil {
		return nil
	}
	return w.s.db.Apply(w.wb, w.s.wo)
}

// snapshotReaders returns a getter of the sketch family and a pageGetter
// of the pages' family reading one snapshot (a view's batch in a
// transaction), and their release.
func (s *Store) snapshotReaders() (getter, pageGetter, func()) {
	if s.view != nil {
		return s.viewGet, s.rawPage, func() {}
	}
	snap := s.db.NewSnapshot()
	pg := func(pkey []byte) ([]byte, error) {
		v, err := snap.GetCF(s.pages, pkey)
		if errors.Is(err, sieve.ErrNotFound) {
			return nil, nil
		}
		return v, err
	}
	return func(key []byte) ([]byte, error) { return snap.GetCF(s.cf, key) }, pg, func() { _ = snap.Close() }
}

// cmsOverflow adds ErrCMSIncrByOverflow to estimates of which one is
// saturated, as CMSIncrByReply.
func cmsOverflow(out []int64, err error) ([]int64, error) {
	if err != nil {
		return nil, err
	}
	for _, e := range out {
		if e == math.MaxUint32 {
			return out, ErrCMSIncrByOverflow
		}
	}
	return out, nil
}

// cmsMergeAnyPaged runs CMS.MERGE page by page when the destination or a
// source is paged (the destination is then paged, whatever it was), and
// reports whether it did. keys and vals are the destination's and the
// sources'.
func (s *Store) cmsMergeAnyPaged(keys, vals [][]byte, weights []int64, pg pageGetter) (bool, error) {
	paged := false
	for _, v := range vals {
		paged = paged || (v != nil && v[0] == kindPagedCMS)
	}
	if !paged {
		return false, nil
	}
	if weights == nil {
		weights = make([]int64, len(vals)-1)
		for i := range weights {
			weights[i] = 1
		}
	}
	if len(weights) != len(vals)-1 {
		return true, ErrCMSKeysWeights
	}
	for _, v := range vals { // every key must exist and be a Count-Min sketch
		if _, err := cmsHeaderOf(v); err != nil {
			return true, err
		}
	}
	var spec CMSSpec
	if hdr, _ := cmsHeaderOf(vals[0]); hdr != nil {
		spec = hdr.spec
	} else {
		c, err := ParseCMS(vals[0])
		if err != nil {
			return true, err
		}
		spec = c.spec
	}
	srcs, err := cmsMergeSources(keys[1:], vals[1:], spec, pg)
	if err != nil {
		return true, err
	}
	return true, s.cmsMergePaged(keys[0], spec, srcs, weights)
}
