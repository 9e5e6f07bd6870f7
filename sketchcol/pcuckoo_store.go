package sketchcol

import (
	"errors"
	"slices"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/sketchcol/internal/cuckoo"
)

// The Store's commands on paged cuckoo filters (pcuckoo.go). Every cuckoo
// filter created by this version is paged; a filter stored whole by an
// earlier one (kind 0x30) keeps its own code path (cuckoo_store.go).
//
// Page writes are slot assignments, which do not commute: every command
// that writes a filter holds the key's stripe lock from its first read to
// its write, and so does every read of pages (a kick moves fingerprints
// between pages, and a reader between two of its pages must not see half
// of one). A Batch, which takes no lock, writes pending adds to the
// header instead; every command places them first (placePending).

// cuckooPages is a filter's header and the pages one command (or one
// Batch) reads and writes: each page read once, then kept with the
// command's own writes applied; the slots written are the operands to
// write.
type cuckooPages struct {
	s     *Store
	key   []byte
	hdr   *pagedCuckoo // as the command's changes leave it
	orig  *pagedCuckoo // as read (nil: created by the command)
	fresh bool         // created here: no page is read, all are empty
	pages map[string]*cuckooPage
	order []string // pages written, in order
	buf   []byte
}

type cuckooPage struct {
	slots []byte
	dirty []uint32 // offsets written since the last writeTo
}

func (s *Store) newCuckooPages(key []byte, hdr *pagedCuckoo, created bool) *cuckooPages {
	ps := &cuckooPages{s: s, key: key, hdr: hdr, fresh: created, pages: map[string]*cuckooPage{}}
	if !created {
		ps.orig = hdr.clone()
	}
	return ps
}

// getCuckooPage returns a stored page's slots (nil when never written).
func (s *Store) getCuckooPage(pkey []byte) ([]byte, error) {
	v, err := s.rawPage(pkey)
	if err != nil || v == nil {
		return nil, err
	}
	return cuckooSlotsOf(v)
}

// page returns sub-filter i's page p, reading it the first time.
func (ps *cuckooPages) page(i int, l pcLayer, p int64) (string, *cuckooPage, error) {
	ps.buf = pageKey(ps.buf[:0], ps.key, i, p)
	if pg, ok := ps.pages[string(ps.buf)]; ok {
		return string(ps.buf), pg, nil
	}
	var slots []byte
	if !ps.fresh {
		var err error
		if slots, err = ps.s.getCuckooPage(ps.buf); err != nil {
			return "", nil, err
		}
	}
	if len(slots) != l.pageBytes() {
		// Never written, or a page an earlier filter of the key left
		// with another geometry: empty slots.
		slots = make([]byte, l.pageBytes())
	} else {
		slots = slices.Clone(slots)
	}
	k := string(ps.buf)
	pg := &cuckooPage{slots: slots}
	ps.pages[k] = pg
	return k, pg, nil
}

// layerBuckets is sub-filter i of a cuckooPages, as cuckoo.Kick sees it.
type layerBuckets struct {
	ps *cuckooPages
	i  int
	l  pcLayer
}

// Bucket returns bucket b's slots, in its page.
func (lb layerBuckets) Bucket(b uint64) ([]byte, error) {
	_, pg, err := lb.ps.page(lb.i, lb.l, int64(b>>lb.l.log2PerPage))
	if err != nil {
		return nil, err
	}
	off := int(b&(1<<lb.l.log2PerPage-1)) * lb.l.bucketSize
	return pg.slots[off : off+lb.l.bucketSize], nil
}

// wrote records that slot j of bucket b of sub-filter i was written.
func (lb layerBuckets) wrote(b uint64, j int) {
	k, pg, _ := lb.ps.page(lb.i, lb.l, int64(b>>lb.l.log2PerPage)) // read before: no error now
	if pg.dirty == nil {
		lb.ps.order = append(lb.ps.order, k)
	}
	pg.dirty = append(pg.dirty, uint32(int(b&(1<<lb.l.log2PerPage-1))*lb.l.bucketSize+j))
}

func (ps *cuckooPages) layer(i int) layerBuckets {
	return layerBuckets{ps: ps, i: i, l: ps.hdr.layer(i)}
}

// candidates returns sub-filter i and the item's two buckets in it.
func (ps *cuckooPages) candidates(i int, h uint64, fp byte) (layerBuckets, uint64, uint64) {
	lb := ps.layer(i)
	i1, i2 := cuckoo.Buckets1And2(lb.l.log2Buckets, h, fp)
	return lb, i1, i2
}

// count returns the slots holding h's fingerprint in its buckets of every
// sub-filter (a bucket counted once when i1 = i2), or, with stop, 1 at
// the first.
func (ps *cuckooPages) count(h uint64, stop bool) (int64, error) {
	fp := cuckoo.Fingerprint(h)
	var n int64
	for i := range ps.hdr.items {
		lb, i1, i2 := ps.candidates(i, h, fp)
		for k, b := range [2]uint64{i1, i2} {
			if k == 1 && i2 == i1 {
				break
			}
			slots, err := lb.Bucket(b)
			if err != nil {
				return 0, err
			}
			for _, s := range slots {
				if s == fp {
					if n++; stop {
						return n, nil
					}
				}
			}
		}
	}
	return n, nil
}

func (ps *cuckooPages) exists(h uint64) (bool, error) {
	n, err := ps.count(h, true)
	return n > 0, err
}

// del empties one slot holding h's fingerprint, in i1 then i2, of the
// newest sub-filter that has one (CuckooFilter.deleteHash).
func (ps *cuckooPages) del(h uint64) (bool, error) {
	fp := cuckoo.Fingerprint(h)
	for i := len(ps.hdr.items) - 1; i >= 0; i-- {
		lb, i1, i2 := ps.candidates(i, h, fp)
		for _, b := range [2]uint64{i1, i2} {
			slots, err := lb.Bucket(b)
			if err != nil {
				return false, err
			}
			if j := slices.Index(slots, fp); j >= 0 {
				slots[j] = 0
				lb.wrote(b, j)
				ps.hdr.items[i]--
				ps.hdr.deletes++
				return true, nil
			}
		}
	}
	return false, nil
}

// insertFree puts fp in the first empty slot of i1, else i2.
func (ps *cuckooPages) insertFree(lb layerBuckets, i1, i2 uint64, fp byte) (bool, error) {
	for _, b := range [2]uint64{i1, i2} {
		slots, err := lb.Bucket(b)
		if err != nil {
			return false, err
		}
		if j := slices.Index(slots, 0); j >= 0 {
			slots[j] = fp
			lb.wrote(b, j)
			ps.hdr.items[lb.i]++
			return true, nil
		}
	}
	return false, nil
}

// add places h's fingerprint as CuckooFilter.addHash does: a free slot of
// its buckets in any sub-filter, oldest first; else by evictions in the
// newest; else in a new sub-filter; else an error wrapping ErrFilterFull
// (nothing changed).
func (ps *cuckooPages) add(h uint64) error {
	fp := cuckoo.Fingerprint(h)
	for i := range ps.hdr.items {
		lb, i1, i2 := ps.candidates(i, h, fp)
		if ok, err := ps.insertFree(lb, i1, i2, fp); ok || err != nil {
			return err
		}
	}
	top := len(ps.hdr.items) - 1
	lb, i1, i2 := ps.candidates(top, h, fp)
	ok, path, err := cuckoo.Kick(lb, lb.l.log2Buckets, lb.l.bucketSize, i1, i2, fp, ps.hdr.spec.MaxIterations, h)
	if err != nil {
		return err
	}
	if ok {
		for _, sl := range path {
			lb.wrote(sl.Bucket, sl.Index)
		}
		ps.hdr.items[top]++
		return nil
	}
	if err := ps.hdr.growErr(len(ps.hdr.items)); err != nil {
		return err
	}
	ps.hdr.items = append(ps.hdr.items, 0)
	lb, i1, i2 = ps.candidates(top+1, h, fp)
	_, err = ps.insertFree(lb, i1, i2, fp) // a new sub-filter always has room
	return err
}

// headerOp returns the header operand of the changes made, nil when
// there are none.
func (ps *cuckooPages) headerOp() *pagedCuckooOp {
	o := &pagedCuckooOp{layers: len(ps.hdr.items), deletes: ps.hdr.deletes, dropped: ps.hdr.dropped}
	if ps.orig == nil {
		o.spec = &ps.hdr.spec
		o.items = make([]int64, len(ps.hdr.items))
		for i, x := range ps.hdr.items {
			o.items[i] = int64(x)
		}
		return o
	}
	o.deletes -= ps.orig.deletes
	o.dropped -= ps.orig.dropped
	o.drain = uint64(len(ps.orig.pending) - len(ps.hdr.pending))
	changed := o.deletes != 0 || o.dropped != 0 || o.drain != 0 || len(ps.hdr.items) != len(ps.orig.items)
	for i, x := range ps.hdr.items {
		var was uint64
		if i < len(ps.orig.items) {
			was = ps.orig.items[i]
		}
		o.items = append(o.items, int64(x)-int64(was))
		changed = changed || x != was
	}
	if !changed && len(ps.order) == 0 {
		return nil
	}
	return o
}

// writeTo adds the header operand and the pages' operands to wb (a
// created filter's first write drops whatever pages the key had) and
// takes the changes as written: a later write of the same cuckooPages
// (a Batch's) carries only what changed since.
func (ps *cuckooPages) writeTo(wb *sieve.Batch) error {
	o := ps.headerOp()
	if o == nil {
		return nil
	}
	if ps.orig == nil {
		if err := ps.s.dropPages(wb, ps.key); err != nil {
			return err
		}
	}
	if err := wb.MergeCF(ps.s.cf, ps.key, appendPagedCuckooOp(nil, o)); err != nil {
		return err
	}
	for _, k := range ps.order {
		pg := ps.pages[k]
		slices.Sort(pg.dirty)
		ws := make([]slotWrite, 0, len(pg.dirty))
		for j, off := range pg.dirty {
			if j == 0 || off != pg.dirty[j-1] {
				ws = append(ws, slotWrite{off: off, fp: pg.slots[off]})
			}
		}
		if err := wb.MergeCF(ps.s.pages, []byte(k), appendCuckooPageOp(nil, len(pg.slots), ws)); err != nil {
			return err
		}
		pg.dirty = nil
	}
	ps.order = ps.order[:0]
	ps.orig = ps.hdr.clone()
	return nil
}

// pagedCuckooHeader decodes cur, a paged header, or returns nil for a
// cuckoo value stored whole; another kind is ErrWrongType.
func pagedCuckooHeader(cur []byte) (*pagedCuckoo, error) {
	if err := expectKind(cur, KindCuckoo); err != nil {
		return nil, err
	}
	switch cur[0] {
	case kindCuckooValue:
		return nil, nil
	case kindPagedCuckooDump:
		return nil, corruptf("a paged cuckoo filter's dump is not a stored value")
	}
	return parsePagedCuckoo(cur)
}

// errLegacyCuckoo tells cuckooDo's caller that key holds a filter stored
// whole, which takes its own path.
var errLegacyCuckoo = errors.New("sketchcol: a cuckoo filter stored whole")

// cuckooDo runs fn on key's paged filter and writes what it changed, as
// one batch. A missing key is created with spec (nil: the defaults) if
// create, else fn is not run and it returns an error wrapping
// sieve.ErrNotFound. On a filter stored whole it returns errLegacyCuckoo.
// fn's error (but one wrapping ErrFilterFull, after which what fn did is
// written) writes nothing. REQUIRES: key's lock.
func (s *Store) cuckooDo(key []byte, spec *CuckooSpec, create bool, fn func(ps *cuckooPages) error) error {
	cur, err := s.get(key)
	if err != nil {
		return err
	}
	var ps *cuckooPages
	if cur == nil {
		if !create {
			return notFound(key)
		}
		sp, err := cuckooSpecOrDefault(spec)
		if err != nil {
			return err
		}
		hdr, err := newPagedCuckoo(sp)
		if err != nil {
			return err
		}
		ps = s.newCuckooPages(key, hdr, true)
	} else {
		hdr, err := pagedCuckooHeader(cur)
		switch {
		case err != nil:
			return err
		case hdr == nil:
			return errLegacyCuckoo
		}
		ps = s.newCuckooPages(key, hdr, false)
	}
	ferr := ps.placePending()
	if ferr == nil {
		ferr = fn(ps)
	}
	if ferr != nil && !errors.Is(ferr, ErrFilterFull) {
		return ferr
	}
	if ps.headerOp() == nil {
		return ferr // nothing changed: nothing written
	}
	if err := s.writeKey(key, ps.writeTo); err != nil {
		return err
	}
	return ferr
}

// cuckooRead runs fn on key's paged filter without writing: nil, nil for
// a missing key; errLegacyCuckoo for a filter stored whole. REQUIRES:
// key's lock.
func (s *Store) cuckooRead(key []byte, fn func(ps *cuckooPages) error) error {
	cur, err := s.get(key)
	if err != nil || cur == nil {
		return err
	}
	hdr, err := pagedCuckooHeader(cur)
	switch {
	case err != nil:
		return err
	case hdr == nil:
		return errLegacyCuckoo
	}
	ps := s.newCuckooPages(key, hdr, false)
	if err := ps.placePending(); err != nil {
		return err
	}
	return fn(ps)
}

// placePending places the adds a Batch wrote blind, in order, as
// CFAddBlind does (one that finds the filter full is dropped and
// counted). A command that writes then writes them placed (and the
// header operand's drain); a read places them in memory only.
func (ps *cuckooPages) placePending() error {
	if len(ps.hdr.pending) == 0 {
		return nil
	}
	if err := ps.addHashes(ps.hdr.pending); err != nil {
		return err
	}
	ps.hdr.pending = nil
	return nil
}

// addHashes adds items by hash, counting those that find the filter full
// as dropped.
func (ps *cuckooPages) addHashes(hs []uint64) error {
	for _, h := range hs {
		err := ps.add(h)
		if errors.Is(err, ErrFilterFull) {
			ps.hdr.dropped++
		} else if err != nil {
			return err
		}
	}
	return nil
}
