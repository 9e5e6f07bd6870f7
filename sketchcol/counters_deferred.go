package sketchcol

import (
	"bytes"
	"errors"
	"fmt"
)

// A Deferred's CMS.INCRBY, TOPK.ADD and TOPK.INCRBY on paged sketches:
// the replies come from the key's header and pages with the Deferred's
// earlier writes applied, which it holds (out of the counters cache)
// until Commit caches them. Their operands are added to the batch at
// Commit, one per page and one header operand per key: a pipeline's
// increments to a page are one merge operand, not one per command.

// deferredCounter is a paged Count-Min or Top-K sketch a Deferred writes:
// its header and pages as the batch's earlier writes left them.
type deferredCounter struct {
	e      *counterEntry // header and cached pages, out of the cache
	cms    *cmsPageSet   // a Count-Min sketch's pages (else nil)
	topk   *topKPageSet  // a Top-K sketch's pages (else nil)
	stripe int
	st, gl uint64 // the cache's epochs before the header was read
	delta  uint64 // a Count-Min sketch's pending increments' sum
	// bad: a call failed midway (not expected: its pages are read first),
	// so the state may be ahead of its operands; later calls on the key
	// are refused and Commit fails.
	bad bool
}

// runPlain wraps err, which the Store's locked command answers (a
// missing key, another kind, a sketch stored whole), as ErrInvalidArgument:
// the caller runs the plain command instead.
func runPlain(err error) error {
	return fmt.Errorf("%w: not deferred, run the plain command: %w", ErrInvalidArgument, err)
}

var errLegacyCounter = errors.New("sketch stored whole")

// CMSIncrBy is Store.CMSIncrBy on a paged Count-Min sketch with its writes
// added to the batch (at Commit): the estimates are exact, computed from
// the key's header and pages with the Deferred's earlier increments
// applied. The
// Deferred's contract holds (the caller locks key until Commit). An
// estimate saturated at 2³²−1 returns ErrCMSIncrByOverflow beside the
// estimates, the increments written, as Store.CMSIncrBy. A missing key,
// another kind or a sketch stored whole returns an error wrapping
// ErrInvalidArgument (and the Store's own error) and adds nothing: run
// Store.CMSIncrBy instead (after Commit). On any other error nothing of
// this call is written (or, not expected, the key's state is dropped:
// later calls on it fail, and so does Commit).
func (d *Deferred) CMSIncrBy(key []byte, items [][]byte, increments []int64) ([]int64, error) {
	recs, err := cmsRecords(items, increments)
	if err != nil {
		return nil, err
	}
	s := d.s
	stripe := s.stripe(key)
	m := &s.locks[stripe]
	m.Lock()
	defer m.Unlock()
	dc, err := d.counterState(stripe, key, true)
	if err != nil {
		return nil, err
	}
	ps := dc.cms
	for _, r := range recs { // every page first: an error changes nothing
		for i := range ps.spec.Depth {
			if _, err := ps.page(cmsPageOf(ps.spec, r.hash, i)); err != nil {
				return nil, err
			}
		}
	}
	out, delta, err := cmsIncrRecs(ps, recs)
	if err != nil {
		dc.bad = true
		return nil, err
	}
	dc.delta = satAdd(dc.delta, delta)
	dc.e.cms.count = satAdd(dc.e.cms.count, delta)
	return cmsOverflow(out, nil)
}

// TopKAdd is TopKIncrBy with every increment 1 (TOPK.ADD).
func (d *Deferred) TopKAdd(key []byte, items ...[]byte) ([][]byte, error) {
	return d.TopKIncrBy(key, items, nil)
}

// TopKIncrBy is Store.TopKIncrBy on a paged Top-K sketch with its writes
// added to the batch (at Commit): the items expelled are exact, computed
// from the key's header and pages with the Deferred's earlier adds
// applied. Errors
// as CMSIncrBy's (a bad increment is the Store's error, nothing added).
func (d *Deferred) TopKIncrBy(key []byte, items [][]byte, increments []int64) ([][]byte, error) {
	recs, err := topKRecords(items, increments)
	if err != nil {
		return nil, err
	}
	s := d.s
	stripe := s.stripe(key)
	m := &s.locks[stripe]
	m.Lock()
	defer m.Unlock()
	dc, err := d.counterState(stripe, key, false)
	if err != nil {
		return nil, err
	}
	ps := dc.topk
	for _, r := range recs { // every page first: an error changes nothing
		h := itemHash(r.item)
		for i := range ps.hdr.spec.Depth {
			p, _ := topKCell(ps.hdr.spec, h, i)
			if _, err := ps.page(p); err != nil {
				return nil, err
			}
		}
	}
	out, err := topKAddRecs(ps, recs)
	if err != nil {
		dc.bad = true
		return nil, err
	}
	return out, nil
}

// counterState returns key's state in the Deferred, taking it from the
// counters cache when current, else reading the header. REQUIRES: the
// stripe's lock.
func (d *Deferred) counterState(stripe int, key []byte, cms bool) (*deferredCounter, error) {
	if dc := d.counters[string(key)]; dc != nil {
		switch {
		case dc.bad:
			return nil, fmt.Errorf("%w: an earlier deferred write to the key failed: commit first", ErrInvalidArgument)
		case (dc.cms != nil) != cms:
			return nil, runPlain(ErrWrongType)
		}
		return dc, nil
	}
	s := d.s
	st, gl := s.cacheTag(stripe)
	e, err := s.takeCounters(stripe, key, cms)
	if err != nil {
		return nil, runPlain(err)
	}
	k := bytes.Clone(key)
	dc := &deferredCounter{e: e, stripe: stripe, st: st, gl: gl}
	var ref *pageCacheRef
	if s.view == nil && !s.epochs.off.Load() {
		ref = &pageCacheRef{s: s, stripe: stripe, key: k, e: e}
	}
	if cms {
		dc.cms = newCMSPageSet(s.rawPage, k, e.cms.spec)
		dc.cms.cache = ref
	} else {
		dc.topk = newTopKPageSet(s.rawPage, k, e.topk)
		dc.topk.cache = ref
	}
	if d.counters == nil {
		d.counters = map[string]*deferredCounter{}
	}
	d.counters[string(k)] = dc
	return dc, nil
}

// takeCounters returns key's paged sketch (Count-Min when cms, else
// Top-K): its current cache entry, removed from the cache (its bytes
// still counted, until commitCounters), or a new entry of the header
// read. REQUIRES: the stripe's lock.
func (s *Store) takeCounters(stripe int, key []byte, cms bool) (*counterEntry, error) {
	if e := s.counterCached(stripe, key); e != nil {
		if (e.cms != nil) != cms {
			return nil, ErrWrongType
		}
		delete(s.counters.stripes[stripe], string(key))
		return e, nil
	}
	cur, err := s.get(key)
	if err != nil {
		return nil, err
	}
	if cms {
		hdr, err := cmsHeaderOf(cur)
		if err == nil && hdr == nil {
			err = errLegacyCounter
		}
		return &counterEntry{cms: hdr}, err
	}
	hdr, err := topKHeaderOf(cur)
	if err == nil && hdr == nil {
		err = errLegacyCounter
	}
	return &counterEntry{topk: hdr}, err
}

// cmsPageOf is the page of row i's counter of hash h.
func cmsPageOf(spec CMSSpec, h uint64, i int) int64 {
	p, _ := cmsCell(spec, h, i)
	return p
}

// writeCounters adds the operands of the Deferred's Count-Min and Top-K
// writes to the batch: per key its header operand and one operand per
// page written. An error (a key whose state was dropped) fails the
// Commit.
func (d *Deferred) writeCounters() error {
	s := d.s
	for _, dc := range d.counters {
		if dc.bad {
			return fmt.Errorf("%w: a deferred Count-Min or Top-K write failed", ErrInvalidArgument)
		}
		switch ps := dc.cms; {
		case ps != nil && len(ps.order) > 0:
			op := &pagedCMSOp{spec: ps.spec, delta: dc.delta}
			if err := d.b.MergeCF(s.cf, ps.key, appendPagedCMSOp(nil, op)); err != nil {
				return err
			}
			if err := ps.writeTo(s, d.b); err != nil {
				return err
			}
		case dc.topk != nil && len(dc.topk.order) > 0:
			if err := dc.topk.writeTo(s, d.b, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// commitCounters caches the states the Deferred's writes left (err nil),
// tagged as of their reads so that any other write to their stripes since
// makes them stale, or drops them (err, or a call that failed midway).
// REQUIRES: the batch applied or failed.
func (d *Deferred) commitCounters(err error) {
	s := d.s
	for k, dc := range d.counters {
		m := &s.locks[dc.stripe]
		m.Lock()
		failed := err != nil || dc.bad
		if failed || !s.putCounters(dc.stripe, []byte(k), dc.e, dc.st, dc.gl) {
			s.counters.used.Add(-dc.e.bytes)
		}
		if failed {
			s.invalidate([]byte(k))
		}
		m.Unlock()
	}
	clear(d.counters)
}
