package sketchcol

import (
	"sync/atomic"
	"unsafe"

	"github.com/sievedb/sieve/internal/prefetch"
)

// The decoded-value cache of the reply paths of PFAdd and BFAdd (the Bloom
// filters of BFAdd, BFMAdd and BFInsert are cached the same way).
//
// PFAdd's reply needs the key's registers. Without a cache each PFAdd
// reads the value (merging its operands: decode, apply, encode, estimate)
// and decodes it again. The cache keeps, per key, the registers as the
// last reply-bearing PFAdd left them, so a hot key's PFAdd costs its
// elements' hashes and one merge operand.
//
// Exactness. An entry is used only under the key's stripe lock, and only
// while it is current: it is tagged with the stripe's epoch (and the
// Store's global epoch) read before the value it was built from, and every
// write that does not maintain the entry (blind operands, Restore, Put,
// Delete, every other command, a Batch's Commit) bumps the epoch after
// its write is applied. So an entry built before a write applied is stale
// as soon as that write returns; a reply computed from an entry meanwhile
// is that of the serial order in which the unlocked write comes after it
// (the order blind writes already have, Store's doc, "Concurrency").
// Compaction changes no key's value, so it needs nothing. A Batch whose
// sieve.Batch is handed out (Batch.Sieve, WrapBatch) may be applied
// where the Store cannot see it: that turns the cache off for good.
//
// Bound. Each stripe holds at most hllCacheStripeBytes of entries (256
// stripes: 32 MiB in all); a stripe over its budget drops entries
// arbitrarily (Go's map order) until it fits.

const (
	hllCacheStripeBytes = 128 << 10
	hllCacheMaxPairs    = 512 // above this many non-zero registers an entry goes dense
	hllCacheEntryBytes  = 160 // per-entry overhead counted besides the key and registers (the entry, its map slot, its regs)
)

// hllRegs are the registers of one HLL: sorted (index<<8 | rank) pairs of
// the non-zero registers while few, a dense array otherwise.
type hllRegs struct {
	pairs []uint32
	dense *[hllRegisters]uint8
}

func (r *hllRegs) get(i int) uint8 {
	if r.dense != nil {
		return r.dense[i]
	}
	lo, hi := 0, len(r.pairs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if int(r.pairs[m]>>8) < i {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(r.pairs) && int(r.pairs[lo]>>8) == i {
		return uint8(r.pairs[lo])
	}
	return 0
}

// raise sets register i to rank if that raises it.
func (r *hllRegs) raise(i int, rank uint8) {
	if r.dense != nil {
		r.dense[i] = max(r.dense[i], rank)
		return
	}
	lo, hi := 0, len(r.pairs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if int(r.pairs[m]>>8) < i {
			lo = m + 1
		} else {
			hi = m
		}
	}
	p := uint32(i)<<8 | uint32(rank)
	if lo < len(r.pairs) && int(r.pairs[lo]>>8) == i {
		if uint8(r.pairs[lo]) < rank {
			r.pairs[lo] = p
		}
		return
	}
	if len(r.pairs) >= hllCacheMaxPairs {
		d := new([hllRegisters]uint8)
		for _, q := range r.pairs {
			d[q>>8] = uint8(q)
		}
		d[i] = rank
		r.dense, r.pairs = d, nil
		return
	}
	r.pairs = append(r.pairs, 0)
	copy(r.pairs[lo+1:], r.pairs[lo:])
	r.pairs[lo] = p
}

func (r *hllRegs) size() int {
	if r.dense != nil {
		return hllRegisters
	}
	return 4 * cap(r.pairs)
}

// hllRegsOf decodes an HLL value (validated as decodeHLLRegisters does).
func hllRegsOf(v []byte) (*hllRegs, error) {
	hdr, err := parseHLLHeader(v)
	if err != nil {
		return nil, err
	}
	r := &hllRegs{}
	if hdr.encoding == hllEncSparse {
		n := 0
		err := walkSparse(v[hllHeaderLen:], func(start, k int, val uint8) {
			if val != 0 {
				n += k
			}
		})
		if err != nil {
			return nil, err
		}
		if n <= hllCacheMaxPairs {
			r.pairs = make([]uint32, 0, n)
			_ = walkSparse(v[hllHeaderLen:], func(start, k int, val uint8) {
				if val != 0 {
					for i := start; i < start+k; i++ {
						r.pairs = append(r.pairs, uint32(i)<<8|uint32(val))
					}
				}
			})
			return r, nil
		}
	}
	d := new([hllRegisters]uint8)
	if _, err := decodeHLLRegisters(v, d); err != nil {
		return nil, err
	}
	r.dense = d
	return r, nil
}

type hllCacheEntry struct {
	// The fields a lookup reads first, together.
	hinted atomic.Uint64 // the hash it is published in the hint table under (cacheHints)
	regs   *hllRegs      // an HLL's registers (often own), or
	stripe uint64        // the stripe's epoch the entry is current for
	global uint64        // the Store's global epoch likewise
	klen   int           // the key: its length and its bytes, inline
	// cached reports that the entry is its stripe's map's (so a holder
	// of the entry needs no second lookup to know). Guarded like the map.
	cached bool
	// mark is the caller's bit of Deferred.PFAddMarked: set by a PFAdd
	// that changed registers, lost with the entry.
	mark bool
	kinl [hllCacheInlineKey]byte
	own  hllRegs                     // regs, when newHLLEntry made them
	inl  [hllCacheInlinePairs]uint32 // own's first pairs

	h     uint64         // Store.keyHash of the key: the stripe's map key
	kstr  string         // a key longer than kinl
	bloom *ScalableBloom // a Bloom filter (BFAdd's entries)
	paged *pagedBloom    // a paged Bloom filter's header
	pages *pageCache     // and its cached pages (pbloom_pcache.go)
	bytes int
}

// hllCacheInlinePairs is how many register pairs an entry holds in
// itself: a lookup of a small HLL then reads the entry only.
const hllCacheInlinePairs = 16

// newHLLEntry returns an entry of regs (copied into the entry) tagged
// with st and gl.
func newHLLEntry(regs *hllRegs, st, gl uint64) *hllCacheEntry {
	e := &hllCacheEntry{stripe: st, global: gl}
	e.own = *regs
	if regs.dense == nil && len(regs.pairs) <= len(e.inl) {
		e.own.pairs = append(e.inl[:0:len(e.inl)], regs.pairs...)
	}
	e.regs = &e.own
	return e
}

// hllCacheInlineKey is the longest key an entry holds inline: a lookup
// compares it without reading memory of its own.
const hllCacheInlineKey = 32

// setKey records key in e.
func (e *hllCacheEntry) setKey(h uint64, key []byte) {
	e.h, e.klen = h, len(key)
	if len(key) <= hllCacheInlineKey {
		copy(e.kinl[:], key)
	} else {
		e.kstr = string(key)
	}
}

// isKey reports whether e is key's.
func (e *hllCacheEntry) isKey(key []byte) bool {
	if len(key) != e.klen {
		return false
	}
	if len(key) <= hllCacheInlineKey {
		return string(e.kinl[:len(key)]) == string(key)
	}
	return e.kstr == string(key)
}

// hllCacheStripe is one stripe's share of the cache, guarded by the
// stripe's lock (only reply-bearing commands holding it touch it). Its
// map is keyed by the keys' 64-bit hashes, the entries hold the keys: two
// keys of one hash share a slot (the later put drops the other's entry),
// and a lookup checks the key.
type hllCacheStripe struct {
	m     map[uint64]*hllCacheEntry
	bytes int
	hint  *cacheHints // the Store's (shared by its stripes)
}

// cacheHints is a direct-mapped table in front of the stripes' maps: slot
// h%len holds the last entry cached for a key of hash h (or nil). A
// lookup that finds its key there skips the map, whose random probes are
// cache misses, and PrefetchKeys can load a pipeline's entries ahead of their
// commands without any lock.
//
// The table's length is a multiple of lockStripes, so the keys of one
// slot share a stripe and a slot is written only under that stripe's
// lock; slots are atomics for PrefetchKeys, which reads them without a
// lock. An entry's hinted field is the key hash it was published under,
// set (atomically) before the slot store and never changed while the
// entry is in a slot: a reader that finds hinted equal to its h knows the
// entry is its own key's stripe's, whose lock it holds, before touching
// any other field (an entry is never moved to another stripe's key: the
// unpublish before setKey, under the old key's stripe lock, keeps that
// so). A dropped entry leaves its slot (so that the
// table keeps no dropped entry alive); a slot overwritten by another key
// costs that key one map lookup.
type cacheHints [1 << 19]atomic.Pointer[hllCacheEntry]

// The slot of hash h is h%len; its stripe is h%lockStripes.
var _ = [1]struct{}{}[len(cacheHints{})%lockStripes]

func (t *cacheHints) slot(h uint64) *atomic.Pointer[hllCacheEntry] {
	return &t[h%uint64(len(t))]
}

// publish makes e the hint of its hash. REQUIRES: e's stripe lock.
func (t *cacheHints) publish(e *hllCacheEntry) {
	e.hinted.Store(e.h)
	t.slot(e.h).Store(e)
}

// unpublish empties e's slot if e is there. REQUIRES: e's stripe lock.
func (t *cacheHints) unpublish(e *hllCacheEntry) {
	t.slot(e.h).CompareAndSwap(e, nil)
}

// find returns the entry of key (hash h) if its slot has it, cached.
// REQUIRES: the stripe lock of h.
func (t *cacheHints) find(h uint64, key []byte) *hllCacheEntry {
	e := t.slot(h).Load()
	if e == nil || e.hinted.Load() != h || !e.cached || !e.isKey(key) {
		return nil
	}
	return e
}

// PrefetchKeys asks the CPU to load what PFAdds of keys will read first
// from the Store's cache — the keys' hint slots, then the entries they
// hold (their leading lines and inline registers) — without locking and
// without waiting: a server calls it with a pipeline's keys before
// running its commands, so that their cache misses overlap instead of
// coming one command at a time. It changes nothing. At most 32 keys are
// prefetched.
func (s *Store) PrefetchKeys(keys [][]byte) {
	var slots [32]*atomic.Pointer[hllCacheEntry]
	n := min(len(keys), len(slots))
	for i := range n {
		slots[i] = s.hint.slot(s.keyHash(keys[i]))
		prefetch.Object(unsafe.Pointer(slots[i]), unsafe.Sizeof(*slots[i]))
	}
	for i := range n {
		prefetch.Object(unsafe.Pointer(slots[i].Load()), unsafe.Sizeof(hllCacheEntry{}))
	}
}

// get returns key's entry (current or not), nil if none. h is
// Store.keyHash(key).
func (c *hllCacheStripe) get(h uint64, key []byte) *hllCacheEntry {
	if e := c.hint.find(h, key); e != nil {
		return e
	}
	if e := c.m[h]; e != nil && e.isKey(key) {
		return e
	}
	return nil
}

// cacheEpochs are the counters that invalidate entries.
type cacheEpochs struct {
	stripe [lockStripes]atomic.Uint64
	global atomic.Uint64
	off    atomic.Bool
}

// invalidate makes every entry of key's stripe stale. Call it after the
// write to key has been applied.
func (s *Store) invalidate(key []byte) {
	s.epochs.stripe[s.stripe(key)].Add(1)
}

// ForgetCached drops what the Store caches for key (its decoded value,
// and the mark of Deferred.PFAddMarked), for a caller that changed state
// of its own that a mark stands for without writing key. REQUIRES: no
// Deferred has key pending (the caller's lock on key).
func (s *Store) ForgetCached(key []byte) { s.invalidate(key) }

// ForgetAllCached drops everything the Store caches, so that the next
// commands read every key from the DB.
func (s *Store) ForgetAllCached() { s.invalidateAll() }

// invalidateAll makes every entry stale.
func (s *Store) invalidateAll() { s.epochs.global.Add(1) }

// disableCache turns the cache off for good.
func (s *Store) disableCache() {
	s.epochs.off.Store(true)
	s.invalidateAll()
}

// cacheTag returns the epochs to tag an entry built from a read made now.
func (s *Store) cacheTag(stripe int) (uint64, uint64) {
	return s.epochs.stripe[stripe].Load(), s.epochs.global.Load()
}

// cachedHLL returns key's current entry. REQUIRES: the stripe's lock.
func (s *Store) cachedHLL(stripe int, key []byte) *hllCacheEntry {
	return s.cachedEntry(stripe, s.keyHash(key), key)
}

// cachedEntry is cachedHLL with key's hash. REQUIRES: the stripe's lock.
func (s *Store) cachedEntry(stripe int, h uint64, key []byte) *hllCacheEntry {
	if s.view != nil {
		return nil // a view reads its batch
	}
	c := &s.hllCache[stripe]
	e := c.get(h, key)
	if e == nil {
		return nil
	}
	st, gl := s.cacheTag(stripe)
	if e.stripe != st || e.global != gl || s.epochs.off.Load() {
		c.drop(e)
		return nil
	}
	return e
}

// putHLL caches regs for key with the tag taken before they were read.
// REQUIRES: the stripe's lock.
func (s *Store) putHLL(stripe int, key []byte, regs *hllRegs, st, gl uint64) {
	s.putEntry(stripe, key, newHLLEntry(regs, st, gl))
}

// putBloom caches a Bloom filter for key, like putHLL.
// REQUIRES: the stripe's lock.
func (s *Store) putBloom(stripe int, key []byte, b *ScalableBloom, st, gl uint64) {
	s.putEntry(stripe, key, &hllCacheEntry{bloom: b, stripe: st, global: gl})
}

// putPaged caches a paged filter's header for key, like putHLL.
// REQUIRES: the stripe's lock.
func (s *Store) putPaged(stripe int, key []byte, b *pagedBloom, st, gl uint64) {
	s.putPagedWith(stripe, key, b, nil, st, gl)
}

// putPagedWith is putPaged with the filter's cached pages (which it owns
// from then on: they go with the entry, or back to the budget).
// REQUIRES: the stripe's lock.
func (s *Store) putPagedWith(stripe int, key []byte, b *pagedBloom, pc *pageCache, st, gl uint64) {
	e := &hllCacheEntry{paged: b, pages: pc, stripe: st, global: gl}
	s.putEntry(stripe, key, e)
	if !e.cached && e.pages != nil {
		e.pages.release()
		e.pages = nil
	}
}

// putEntry replaces key's entry in its stripe by e and evicts past the
// stripe's budget. REQUIRES: the stripe's lock.
func (s *Store) putEntry(stripe int, key []byte, e *hllCacheEntry) {
	if s.epochs.off.Load() || s.view != nil {
		return
	}
	c := &s.hllCache[stripe]
	if c.m == nil {
		c.m = make(map[uint64]*hllCacheEntry)
	}
	if e.klen == 0 || !e.isKey(key) {
		c.hint.unpublish(e) // before its hash changes
		e.setKey(s.keyHash(key), key)
	}
	if old := c.m[e.h]; old != nil {
		c.drop(old) // key's entry, or another key's of the same hash
	}
	e.bytes = len(key) + e.size() + hllCacheEntryBytes
	c.m[e.h] = e
	e.cached = true
	c.hint.publish(e)
	c.bytes += e.bytes
	c.evict(e)
}

func (e *hllCacheEntry) size() int {
	if e.bloom != nil {
		return int(e.bloom.Info().Size)
	}
	if e.paged != nil {
		return 64 + 8*len(e.paged.counts)
	}
	return e.regs.size()
}

// resize accounts for an entry whose registers grew.
func (c *hllCacheStripe) resize(e *hllCacheEntry, key []byte) {
	n := len(key) + e.size() + hllCacheEntryBytes
	if n == e.bytes {
		return
	}
	c.bytes += n - e.bytes
	e.bytes = n
	c.evict(e)
}

func (c *hllCacheStripe) drop(e *hllCacheEntry) {
	if e.pages != nil {
		e.pages.release()
		e.pages = nil
	}
	c.hint.unpublish(e)
	delete(c.m, e.h)
	e.cached = false
	c.bytes -= e.bytes
}

// evict drops entries other than keep until the stripe fits its budget.
func (c *hllCacheStripe) evict(keep *hllCacheEntry) {
	if c.bytes <= hllCacheStripeBytes {
		return // without starting a map iteration (not free)
	}
	for _, e := range c.m { // each is c.m[e.h]
		if c.bytes <= hllCacheStripeBytes {
			return
		}
		if e != keep {
			c.drop(e)
		}
	}
	if c.bytes > hllCacheStripeBytes { // keep alone is over budget
		for _, e := range c.m {
			c.drop(e)
		}
	}
}
