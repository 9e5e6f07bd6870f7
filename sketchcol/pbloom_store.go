package sketchcol

import (
	"errors"
	"fmt"

	"github.com/sievedb/sieve"
)

// The Store's commands on paged Bloom filters (pbloom.go). Every Bloom
// filter created by this version is paged; a filter stored whole by an
// earlier one (kind 0x20) keeps its own code path (bloom_store.go).

// getPage returns the bits of a page (nil when never written).
func (s *Store) getPage(pkey []byte) ([]byte, error) {
	v, err := s.rawPage(pkey)
	if err != nil || v == nil {
		return nil, err
	}
	return pageBitsOf(v)
}

// pagedHeader decodes cur, a paged header, or returns nil for a legacy
// Bloom value; another kind is ErrWrongType.
func pagedHeader(cur []byte) (*pagedBloom, error) {
	if err := expectKind(cur, KindBloom); err != nil {
		return nil, err
	}
	if cur[0] != kindPagedBloom {
		return nil, nil
	}
	return parsePagedBloom(cur)
}

// pageSet holds the pages one command reads and writes: read once, then
// kept with the command's own bits set, so that a later item of the same
// command sees them; the positions set are the operands to write.
type pageSet struct {
	s     *Store
	key   []byte
	pages map[string]*pendPage
	order []string // pages written, in order
	buf   []byte
	hdr   *pagedBloom // a Batch's header of the key, as its adds left it
	// create: a Batch's key was missing, and its first operand is to
	// carry the header's geometry
	create bool
	// pc is the filter's page cache (nil: none), which the set bits go
	// into as they are set: the command that owns it releases it if its
	// write fails.
	pc *pageCache
}

type pendPage struct {
	bits      []byte // nil: never written and not yet set
	n         int64  // page bits
	id        uint64 // pageID
	positions []uint32
}

func (s *Store) newPageSet(key []byte) *pageSet {
	return &pageSet{s: s, key: key, pages: map[string]*pendPage{}}
}

// page returns sub-filter i's page p, reading it the first time.
func (ps *pageSet) page(i int, l pbLayer, p int64) (string, *pendPage, error) {
	ps.buf = pageKey(ps.buf[:0], ps.key, i, p)
	if pp, ok := ps.pages[string(ps.buf)]; ok {
		return string(ps.buf), pp, nil
	}
	id := pageID(i, p)
	bits, hit := ps.pc.get(id)
	if !hit {
		var err error
		if bits, err = ps.s.getPage(ps.buf); err != nil {
			return "", nil, err
		}
		if bits != nil && int64(len(bits))*8 != l.pageBits {
			// A page an earlier filter of the key left (one replaced by a
			// Put, not deleted) with another geometry: it reads as zeros, and
			// the first operand of this filter's size replaces it (PageMerger).
			bits = nil
		}
		ps.pc.put(id, bits)
	}
	pp := &pendPage{bits: bits, n: l.pageBits, id: id}
	k := string(ps.buf)
	ps.pages[k] = pp
	return k, pp, nil
}

// contains reports whether h tests positive in some sub-filter of b.
func (ps *pageSet) contains(b *pagedBloom, h bfHash) (bool, error) {
	for i := range b.counts {
		l := b.layer(i)
		p := b.probe(h, i)
		_, pp, err := ps.page(i, l, p.page)
		if err != nil {
			return false, err
		}
		if testPage(pp.bits, p, l) {
			return true, nil
		}
	}
	return false, nil
}

// set sets h's bits in sub-filter i.
func (ps *pageSet) set(b *pagedBloom, i int, h bfHash) error {
	l := b.layer(i)
	p := b.probe(h, i)
	k, pp, err := ps.page(i, l, p.page)
	if err != nil {
		return err
	}
	if pp.bits == nil {
		pp.bits = make([]byte, l.pageBits/8)
		ps.pc.put(pp.id, pp.bits)
	}
	if pp.positions == nil {
		ps.order = append(ps.order, k)
	}
	pp.positions = setPage(pp.bits, p, l, pp.positions)
	return nil
}

// writeTo adds the pages' operands to wb and forgets their positions
// (the pages' bits stay, for a later add of the same batch).
func (ps *pageSet) writeTo(wb *sieve.Batch) error {
	for _, k := range ps.order {
		pp := ps.pages[k]
		if err := wb.MergeCF(ps.s.pages, []byte(k), appendPageOp(nil, pp.n, pp.positions)); err != nil {
			return err
		}
		pp.positions = nil
	}
	ps.order = ps.order[:0]
	return nil
}

// errLegacyBloom tells pagedAdd's caller that key holds a filter stored
// whole, which takes its own path.
var errLegacyBloom = errors.New("sketchcol: a Bloom filter stored whole")

// pagedHeaderLocked returns key's paged header from the cache, or reads
// and caches it: nil for a missing key, errLegacyBloom for a filter
// stored whole. The caller may change the header it gets and must then
// cache it again (putPaged) or invalidate the key. REQUIRES: the
// stripe's lock.
func (s *Store) pagedHeaderLocked(stripe int, key []byte) (*pagedBloom, error) {
	if e := s.cachedHLL(stripe, key); e != nil && e.paged != nil {
		return e.paged.clone(), nil
	}
	st, gl := s.cacheTag(stripe)
	cur, err := s.get(key)
	if err != nil || cur == nil {
		return nil, err
	}
	b, err := pagedHeader(cur)
	switch {
	case err != nil:
		return nil, err
	case b == nil:
		return nil, errLegacyBloom
	}
	s.putPaged(stripe, key, b.clone(), st, gl)
	return b, nil
}

// pagedAdd adds items to key's paged filter (a missing key is created
// with spec, or the defaults, if create), as BF.ADD, BF.MADD and
// BF.INSERT do: an item that tests positive in some sub-filter is not
// added; otherwise it goes into the newest, which is first stacked with a
// new one when it holds its capacity. REQUIRES: the stripe's lock.
func (s *Store) pagedAdd(stripe int, key []byte, spec *BloomSpec, create, overfill bool, items [][]byte) ([]bool, error) {
	// The tag is taken before the header is read: a blind writer's commit
	// (a Batch takes no lock) after it makes the header cached below stale.
	st, gl := s.cacheTag(stripe)
	b, err := s.pagedHeaderLocked(stripe, key)
	if err != nil {
		return nil, err
	}
	created := b == nil
	if created {
		if !create {
			return nil, notFound(key)
		}
		sp := DefaultBloomSpec()
		if spec != nil {
			sp = *spec
		}
		if b, err = newPagedBloom(sp); err != nil {
			return nil, err
		}
	}
	ps := s.newPageSet(key)
	ps.pc = s.takePages(stripe, key)
	added, deltas, fullErr := s.addItemsTo(ps, key, b, items, overfill)
	if fullErr != nil && !errors.Is(fullErr, ErrFilterFull) {
		ps.pc.release() // bits set in place that are not written
		return nil, fullErr
	}
	if !created && len(ps.order) == 0 {
		s.givePages(stripe, key, ps.pc)
		return added, fullErr // nothing new: nothing written
	}
	hop := &pagedBloomOp{layers: len(b.counts), deltas: deltas}
	if created {
		hop.spec, hop.rb = &b.spec, b.rb
	}
	if err := s.writePaged(key, hop, ps); err != nil {
		ps.pc.release()
		return nil, err
	}
	if s.view == nil {
		s.putPagedWith(stripe, key, b, ps.pc, st+1, gl) // writePaged made the stripe's entries stale
	}
	return added, fullErr
}

// addItemsTo runs the adds on b (updated in memory) and returns the
// answers, the count added to each sub-filter and the pages to write (in ps); an
// item that does not fit a full non-scaling (or 64-deep) filter stops the
// adds with ErrFilterFull, unless overfill (blind adds), which puts it
// in the full sub-filter anyway: more false positives, never a false
// negative.
func (s *Store) addItemsTo(ps *pageSet, key []byte, b *pagedBloom, items [][]byte, overfill bool) ([]bool, []int64, error) {
	added := make([]bool, 0, len(items))
	deltas := make([]int64, len(b.counts))
	for _, it := range items {
		h := b.hashOf(it)
		in, err := ps.contains(b, h)
		if err != nil {
			return nil, nil, err
		}
		if in {
			added = append(added, false)
			continue
		}
		top := len(b.counts) - 1
		if full := b.counts[top] >= b.layer(top).capacity; full && (b.spec.NonScaling || len(b.counts) == maxBloomLayers) {
			if !overfill {
				return added, deltas, fmt.Errorf("%w: key %q", ErrFilterFull, clip(key))
			}
		} else if full {
			if _, err := pagedLayer(b.spec, top+1); err != nil {
				return added, deltas, err
			}
			b.counts = append(b.counts, 0)
			deltas = append(deltas, 0)
			top++
		}
		if err := ps.set(b, top, h); err != nil {
			return nil, nil, err
		}
		b.counts[top]++
		deltas[top]++
		added = append(added, true)
	}
	return added, deltas, nil
}

// writePaged writes a header operand and pages as one batch (into the
// view's batch in a transaction). A created filter deletes no pages: a
// blind Batch may be creating the same key at once, and its pages must
// not be lost; pages an earlier filter left are dropped when the key is
// deleted, and one of another size reads as zeros.
func (s *Store) writePaged(key []byte, hop *pagedBloomOp, ps *pageSet) error {
	return s.writeKey(key, func(wb *sieve.Batch) error {
		if err := wb.MergeCF(s.cf, key, appendPagedBloomOp(nil, hop)); err != nil {
			return err
		}
		if ps == nil {
			return nil
		}
		return ps.writeTo(wb)
	})
}

// writeKey applies the writes fill adds to a batch as one (in a view, adds
// them to its batch) and then makes key's cache entries stale.
func (s *Store) writeKey(key []byte, fill func(wb *sieve.Batch) error) error {
	wb := s.view
	if wb == nil {
		wb = s.db.NewBatch()
	}
	if err := fill(wb); err != nil {
		return err
	}
	var err error
	if s.view == nil {
		err = s.db.Apply(wb, s.wo)
	}
	s.invalidate(key)
	return err
}

// pagedExists answers BF.EXISTS / BF.MEXISTS on a paged filter, reading
// one page per sub-filter per item.
// REQUIRES: the stripe's lock when pc is not nil (the filter's cached
// pages, taken with takePages; pagedExists gives them back).
func (s *Store) pagedExists(stripe int, key []byte, b *pagedBloom, pc *pageCache, items [][]byte) ([]bool, error) {
	ps := s.newPageSet(key)
	ps.pc = pc
	defer s.givePages(stripe, key, pc)
	out := make([]bool, len(items))
	for i, it := range items {
		in, err := ps.contains(b, b.hashOf(it))
		if err != nil {
			return nil, err
		}
		out[i] = in
	}
	return out, nil
}

// pagedReserve creates an empty paged filter at key (BF.RESERVE).
// REQUIRES: key's lock, and key missing.
func (s *Store) pagedReserve(key []byte, spec BloomSpec) error {
	b, err := newPagedBloom(spec)
	if err != nil {
		return err
	}
	return s.writePaged(key, &pagedBloomOp{spec: &b.spec, rb: b.rb, layers: 1}, nil)
}

// dropPages adds to wb the deletion of every page of key.
func (s *Store) dropPages(wb *sieve.Batch, key []byte) error {
	start, end := pageRange(key)
	return wb.DeleteRangeCF(s.pages, start, end)
}

// DropPages adds to b (a batch of the Store's DB) the deletion of the
// pages a paged filter at key keeps in their own family: a caller that
// deletes or replaces such a key with its own batch adds this too, or
// the pages stay on disk until the key is deleted through the Store or
// becomes a Bloom filter again.
func (s *Store) DropPages(b *sieve.Batch, key []byte) error { return s.dropPages(b, key) }

// DropAllPages adds to b the deletion of every page of every key (a
// caller that empties the sketch family with its own batch).
func (s *Store) DropAllPages(b *sieve.Batch) error {
	return b.DeleteRangeCF(s.pages, nil, allPagesEnd)
}

// PagesColumnFamily returns the family of the pages (PagesColumnFamilyName),
// for a caller that keeps pages of its own there with this package's
// formats (a paged string, strpage.go).
func (s *Store) PagesColumnFamily() *sieve.ColumnFamily { return s.pages }
