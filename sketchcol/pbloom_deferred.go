package sketchcol

import (
	"bytes"
	"errors"
)

// deferredBloom is a paged filter a Deferred adds to: its header and
// pages as the Deferred's earlier adds left them.
type deferredBloom struct {
	hdr    *pagedBloom
	ps     *pageSet
	stripe int
	st, gl uint64 // the cache's epochs before the header was read
}

// BFAdd is Store.BFMAdd on a paged Bloom filter with its writes added to
// the batch: the replies are exact, computed from the key's header and
// pages with the batch's earlier adds applied. The Deferred's contract
// holds (the caller locks key until Commit). A missing key is created
// with the defaults. On a key that holds a Bloom filter stored whole it
// returns an error wrapping ErrInvalidArgument and adds nothing: run
// Store.BFMAdd instead. On any error nothing of this call is in the batch
// (earlier calls' writes are).
func (d *Deferred) BFAdd(key []byte, items ...[]byte) ([]bool, error) {
	s := d.s
	stripe := s.stripe(key)
	m := &s.locks[stripe]
	m.Lock()
	defer m.Unlock()
	db := d.bloom[string(key)]
	created := false
	if db == nil {
		st, gl := s.cacheTag(stripe)
		hdr, err := s.pagedHeaderLocked(stripe, key)
		if errors.Is(err, errLegacyBloom) {
			return nil, ErrInvalidArgument
		}
		if err != nil {
			return nil, err
		}
		if hdr == nil {
			if hdr, err = newPagedBloom(DefaultBloomSpec()); err != nil {
				return nil, err
			}
			created = true
		}
		db = &deferredBloom{hdr: hdr, ps: s.newPageSet(bytes.Clone(key)), stripe: stripe, st: st, gl: gl}
		db.ps.pc = s.takePages(stripe, key)
	}
	added, deltas, err := s.addItemsTo(db.ps, key, db.hdr, items, false)
	if err == nil || errors.Is(err, ErrFilterFull) {
		if werr := d.writeBloom(key, db, created, deltas); werr != nil {
			err = werr
		}
	}
	if err != nil && !errors.Is(err, ErrFilterFull) {
		// The key's state here may be ahead of the batch: forget it, and
		// have Commit make the cached header stale.
		delete(d.bloom, string(key))
		db.ps.pc.release()
		d.Wrote(bytes.Clone(key))
		return nil, err
	}
	if d.bloom == nil {
		d.bloom = map[string]*deferredBloom{}
	}
	d.bloom[string(key)] = db
	return added, err
}

// writeBloom adds one BFAdd's header operand and page operands.
func (d *Deferred) writeBloom(key []byte, db *deferredBloom, created bool, deltas []int64) error {
	s := d.s
	hop := &pagedBloomOp{layers: len(db.hdr.counts), deltas: deltas}
	if created {
		hop.spec, hop.rb = &db.hdr.spec, db.hdr.rb
	}
	if err := d.b.MergeCF(s.cf, key, appendPagedBloomOp(nil, hop)); err != nil {
		return err
	}
	return db.ps.writeTo(d.b)
}

// commitBloom caches the headers the Deferred's adds left (err nil) or
// drops them (err). REQUIRES: the batch applied or failed.
func (d *Deferred) commitBloom(err error) {
	s := d.s
	for k, db := range d.bloom {
		m := &s.locks[db.stripe]
		m.Lock()
		if err != nil {
			db.ps.pc.release()
			s.invalidate([]byte(k))
		} else {
			// Tagged as of the header's read: any write to the stripe
			// since (a blind Batch's) makes it stale.
			s.putPagedWith(db.stripe, []byte(k), db.hdr, db.ps.pc, db.st, db.gl)
		}
		m.Unlock()
	}
	clear(d.bloom)
}
