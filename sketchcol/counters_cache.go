package sketchcol

import "sync/atomic"

// The counters cache: the decoded header and the pages of paged Count-Min
// and Top-K sketches as the Store's last locked command on them left them,
// so that a command on a hot sketch reads memory instead of the LSM (a
// point lookup that merges every operand the page gathered since its last
// flush). It is exact by the rules of the HLL cache (hll_cache.go): an
// entry is tagged with the epochs of the read it came from and is stale
// once any write to its stripe (a Batch's, a blind command's, a Delete's)
// or to the whole Store moves them; the Store's own reply-bearing commands
// update it in place and tag it past their own write. It is read and
// written only under the key's stripe lock, and never by a view.
//
// Bound: all entries' pages together stay within counterCacheLimit; a page
// that does not fit evicts the other sketches of its stripe, or is not
// cached.

// counterCacheLimit bounds the bytes of every cached page of a Store.
const counterCacheLimit = 64 << 20

// counterCache is a Store's cache, one map per lock stripe.
type counterCache struct {
	stripes [lockStripes]map[string]*counterEntry
	used    atomic.Int64
}

// counterEntry is one sketch's cached state.
type counterEntry struct {
	st, gl uint64     // the epochs it is current at
	cms    *pagedCMS  // the header, for a Count-Min sketch
	topk   *pagedTopK // the header, for a Top-K sketch
	pages  map[int64][]byte
	bytes  int64
}

// counterCached returns key's current entry (nil: none). REQUIRES: the
// stripe's lock.
func (s *Store) counterCached(stripe int, key []byte) *counterEntry {
	m := s.counters.stripes[stripe]
	if m == nil || s.view != nil {
		return nil
	}
	st, gl := s.cacheTag(stripe)
	for k, e := range m { // entries made stale by any write to the stripe
		if e.st != st || e.gl != gl || s.epochs.off.Load() {
			s.dropCounters(stripe, k)
		}
	}
	return m[string(key)]
}

// dropCounters forgets key's entry. REQUIRES: the stripe's lock.
func (s *Store) dropCounters(stripe int, key string) {
	if e := s.counters.stripes[stripe][key]; e != nil {
		s.counters.used.Add(-e.bytes)
		delete(s.counters.stripes[stripe], key)
	}
}

// putCounters caches e as key's state at epochs st, gl (those of the
// command's read, plus one for its own write). REQUIRES: the stripe's
// lock.
// It reports whether it did (a view, or a Store whose cache is off, caches
// nothing).
func (s *Store) putCounters(stripe int, key []byte, e *counterEntry, st, gl uint64) bool {
	if s.view != nil || s.epochs.off.Load() {
		return false
	}
	s.dropCounters(stripe, string(key))
	if s.counters.stripes[stripe] == nil {
		s.counters.stripes[stripe] = map[string]*counterEntry{}
	}
	e.st, e.gl = st, gl
	s.counters.stripes[stripe][string(key)] = e
	return true
}

// cachePage keeps page p's body (nil: zeros) in e, within the bound.
// REQUIRES: the stripe's lock.
func (s *Store) cachePage(stripe int, key []byte, e *counterEntry, p int64, body []byte) {
	if _, ok := e.pages[p]; ok {
		e.pages[p] = body // a page the command changed in place, or replaced
		return
	}
	n := int64(len(body) + 48)
	if s.counters.used.Load()+n > counterCacheLimit {
		for k := range s.counters.stripes[stripe] {
			if k != string(key) {
				s.dropCounters(stripe, k)
			}
		}
		if s.counters.used.Load()+n > counterCacheLimit {
			return
		}
	}
	if e.pages == nil {
		e.pages = map[int64][]byte{}
	}
	e.pages[p] = body
	e.bytes += n
	s.counters.used.Add(n)
}
