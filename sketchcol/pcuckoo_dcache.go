package sketchcol

// The cuckoo filter a Deferred's Commit left last in each stripe: its
// header and the pages its adds read and wrote, as committed, so that the
// next Deferred adding to the key (a pipeline of another connection)
// starts from them instead of the LSM. Exact by the cache's rules
// (hll_cache.go): an entry is tagged with the epochs of its header's
// read, and any write to the stripe since (every other writer of a key
// makes its stripe's entries stale, a Batch at its Commit) drops it. Its
// pages count in the page cache's budget (pbloom_pcache.go), at most
// cuckooPageBytes each; those beyond it are dropped, and read again.

// cuckooCacheSlot is a stripe's entry (nil ps: none).
type cuckooCacheSlot struct {
	ps     *cuckooPages
	st, gl uint64
	bytes  int64
}

// cuckooPageCost is what a cached cuckoo page counts in the budget.
const cuckooPageCost = cuckooPageBytes + pageCacheSlot

// takeCuckoo returns key's cached filter with its tags, detached from the
// cache, or nil. REQUIRES: the stripe's lock.
func (s *Store) takeCuckoo(stripe int, key []byte) *deferredCF {
	c := &s.cuckooCache[stripe]
	if c.ps == nil || string(c.ps.key) != string(key) {
		return nil
	}
	st, gl := s.cacheTag(stripe)
	valid := c.st == st && c.gl == gl && !s.epochs.off.Load() && s.view == nil
	dc := &deferredCF{ps: c.ps, st: c.st, gl: c.gl}
	s.dropCuckooCache(c)
	if !valid {
		return nil
	}
	return dc
}

// dropCuckooCache empties c. REQUIRES: the stripe's lock.
func (s *Store) dropCuckooCache(c *cuckooCacheSlot) {
	s.pageBudget.used.Add(-c.bytes)
	*c = cuckooCacheSlot{}
}

// putCuckoo caches dc, a filter whose writes are applied, in its stripe
// (replacing the entry there), its pages cut to the budget's room.
// REQUIRES: the stripe's lock.
func (s *Store) putCuckoo(stripe int, dc *deferredCF) {
	c := &s.cuckooCache[stripe]
	s.dropCuckooCache(c)
	if s.pageBudget.limit <= 0 || s.view != nil || s.epochs.off.Load() {
		return
	}
	ps := dc.ps
	ps.fresh = false // a page not kept is read from the LSM, which has them all now
	room := (s.pageBudget.limit - s.pageBudget.used.Load()) / cuckooPageCost
	for k := range ps.pages {
		if int64(len(ps.pages)) <= room {
			break
		}
		delete(ps.pages, k)
	}
	*c = cuckooCacheSlot{ps: ps, st: dc.st, gl: dc.gl, bytes: int64(len(ps.pages)) * cuckooPageCost}
	s.pageBudget.used.Add(c.bytes)
}
