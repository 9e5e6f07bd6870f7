package sketchcol

import "sync/atomic"

// The page cache: the bits of a paged filter's pages, kept with the
// filter's cached header (hllCacheEntry.pages), so that a command on a hot
// page reads memory instead of the LSM (a point lookup that merges the
// page's operands). It is exact by the header entry's rules (hll_cache.go):
// it lives and dies with the entry, which any write that does not maintain
// it makes stale; the Store's own adds update the cached bits in place and
// hand the pages on to the entry they cache next.
//
// Bound. All entries' pages together stay within StoreOptions.PageCacheSize
// (pageBudget); a page that does not fit evicts pages of its own filter,
// arbitrarily, or is not cached.

// pageBudget counts the bytes of every cached page of a Store.
type pageBudget struct {
	used  atomic.Int64
	limit int64
	hits  atomic.Int64 // pages answered from the cache
}

// pageCache holds pages of one filter: sub-filter<<32 | page → bits, a
// nil value for a page read as never written (zeros).
type pageCache struct {
	m      map[uint64][]byte
	bytes  int64
	budget *pageBudget
}

// pageCacheSlot is what a cached page costs besides its bits (its map slot
// and slice header).
const pageCacheSlot = 48

func pageID(i int, p int64) uint64 { return uint64(i)<<32 | uint64(uint32(p)) }

func (pc *pageCache) get(id uint64) ([]byte, bool) {
	if pc == nil {
		return nil, false
	}
	b, ok := pc.m[id]
	if ok {
		pc.budget.hits.Add(1)
	}
	return b, ok
}

// put caches bits as page id, evicting other pages of pc to fit the
// budget; it caches nothing if they are not enough.
func (pc *pageCache) put(id uint64, bits []byte) {
	if pc == nil {
		return
	}
	n := int64(len(bits) + pageCacheSlot)
	if old, ok := pc.m[id]; ok {
		n -= int64(len(old) + pageCacheSlot)
	}
	for pc.budget.used.Load()+n > pc.budget.limit {
		if !pc.evictOne(id) {
			return
		}
	}
	pc.m[id] = bits
	pc.bytes += n
	pc.budget.used.Add(n)
}

// evictOne drops one page of pc other than keep.
func (pc *pageCache) evictOne(keep uint64) bool {
	for id, b := range pc.m {
		if id == keep {
			continue
		}
		delete(pc.m, id)
		n := int64(len(b) + pageCacheSlot)
		pc.bytes -= n
		pc.budget.used.Add(-n)
		return true
	}
	return false
}

// release returns pc's bytes to the budget; pc is empty after it.
func (pc *pageCache) release() {
	if pc == nil {
		return
	}
	pc.budget.used.Add(-pc.bytes)
	pc.bytes = 0
	clear(pc.m)
}

// newPageCache returns an empty cache on the Store's budget, nil when the
// budget is zero (the cache is off).
func (s *Store) newPageCache() *pageCache {
	if s.pageBudget.limit <= 0 || s.view != nil || s.epochs.off.Load() {
		return nil
	}
	return &pageCache{m: map[uint64][]byte{}, budget: &s.pageBudget}
}

// takePages detaches the page cache of key's current entry (a new one if
// it has none) for a command that will cache the header again with these
// pages (putPagedWith), or release them. REQUIRES: the stripe's lock.
func (s *Store) takePages(stripe int, key []byte) *pageCache {
	if e := s.cachedHLL(stripe, key); e != nil && e.paged != nil && e.pages != nil {
		pc := e.pages
		e.pages = nil
		return pc
	}
	return s.newPageCache()
}

// givePages hands pc back to key's current entry, or to the budget when
// the entry is gone or has pages of its own. REQUIRES: the stripe's lock.
func (s *Store) givePages(stripe int, key []byte, pc *pageCache) {
	if pc == nil {
		return
	}
	if e := s.cachedHLL(stripe, key); e != nil && e.paged != nil && e.pages == nil {
		e.pages = pc
		return
	}
	pc.release()
}

// releaseCached drops key's cache entries (its Bloom header's, with the
// pages it holds, its cuckoo filter's and its Count-Min or Top-K
// sketch's) after a write to key made them stale: their bytes go back to
// the budgets at once, not
// when the key is next read (a deleted filter's pages would otherwise hold
// the budget, which other filters cannot evict). REQUIRES: the stripe's
// lock.
func (s *Store) releaseCached(stripe int, key []byte) {
	if s.view != nil {
		return
	}
	c := &s.hllCache[stripe]
	if e := c.get(s.keyHash(key), key); e != nil && e.pages != nil {
		c.drop(e)
	}
	if cc := &s.cuckooCache[stripe]; cc.ps != nil && string(cc.ps.key) == string(key) {
		s.dropCuckooCache(cc)
	}
	s.dropCounters(stripe, string(key))
}

// releaseAllPages drops every cache entry that holds pages (of Bloom,
// cuckoo, Count-Min and Top-K sketches), after a write
// that made every entry stale; it takes each stripe's lock in turn.
// REQUIRES: no stripe lock held.
func (s *Store) releaseAllPages() {
	if s.view != nil || (s.pageBudget.used.Load() == 0 && s.counters.used.Load() == 0) {
		return
	}
	for i := range s.hllCache {
		m := &s.locks[i]
		m.Lock()
		c := &s.hllCache[i]
		for _, e := range c.m {
			if e.pages != nil {
				c.drop(e)
			}
		}
		s.dropCuckooCache(&s.cuckooCache[i])
		for k := range s.counters.stripes[i] {
			s.dropCounters(i, k)
		}
		m.Unlock()
	}
}
