// Package cache is sieve's block cache: a sharded, segmented LRU of
// decompressed SSTable data blocks, keyed by (file number, block offset)
// and bounded by the total length of the blocks it holds.
//
// Concurrency: a *Cache is safe for concurrent use by any number of
// goroutines. Each shard has its own mutex, which every change takes;
// Lookup reads a shard's index without it (see index and tryHit). The
// counters are atomics, the hit and miss counters striped by processor.
//
// Lifetime of cached blocks: blocks are reference-counted Values (see
// Value). Get returns one with a reference for the caller; it stays valid
// and unchanged, even after the entry is evicted or replaced, until the
// caller releases it. Eviction releases the cache's own reference, and a
// pooled block's memory is reused only once every reference is gone.
// Callers must not modify the blocks they get from or give to the cache.
//
// A nil *Cache is a valid cache that holds nothing and counts nothing.
//
// Data blocks: each shard is a segmented LRU (SLRU; Karedla, Love and
// Wherry, 1994). A block enters the probationary segment; a hit there
// moves it to the protected segment, which holds at most protectedShare of
// the shard's limit (its least recently used block falls back to the head
// of the probationary segment; one hit through Lookup since demotion last
// passed it gets a second chance instead, so the protected segment is a
// CLOCK and a hit on a protected block takes no lock). Eviction takes the
// probationary segment's least recently used block first. A block read once — a scan's next
// block, a cold key's — so leaves without pushing out blocks that were
// hit. doc/performance.md's ledger has what it bought in YCSB hit rates
// against plain LRU, and the command that measures them.
//
// Admission: a full data shard caches a block only at its second miss
// within a window on one processor (a doorkeeper per processor stripe;
// see admit), so that a block read once neither evicts a block nor costs
// more than its read.
//
// Priorities: blocks are of a Kind. Index and filter blocks (a table's
// metadata, needed by every lookup in it) are high priority: they live in
// one meta pool with its own LRU list, which may use the whole unreserved
// capacity (RocksDB's high-priority pool, with the pool allowed all of
// it); the data shards' capacities shrink by their share of what the pool
// holds, so caching an index or filter block evicts data blocks, and an
// index or filter block is evicted only by another one (or a
// reservation). Data blocks never push metadata out. The pool is not
// sharded by key, so a table's large index block is bounded by the cache,
// not by one shard's part of it.
//
// Reservations: Reserve takes bytes out of the capacity for memory held
// outside the cache but charged to its budget (the pinned index and filter
// blocks of upper-level tables). Every shard's capacity shrinks by its
// share of what is reserved, so Size()+Reserved() stays within Capacity();
// at most half the capacity can be reserved.
package cache

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/sievedb/sieve/internal/percpu"
)

// numShards is a power of two; the shard is picked from the top bits of a
// mixed hash of the key. 16 shards keep mutex contention low on the small
// machines sieve targets without making per-shard capacity too coarse.
const numShards = 16

type key struct{ file, off uint64 }

// entry is one cached block. It sits in its shard's index (through
// hnext), on its shard's LRU list and on the list of its file's entries
// (for EvictFile). key, hash, kind, val and seq are set before the entry
// is published in the index and never change; an entry is never reused.
type entry struct {
	key   key
	hash  uint64
	kind  Kind
	val   *Value
	seq   uint64                // the shard's insert count when it was inserted (see index)
	hnext atomic.Pointer[entry] // next in the index chain: an older entry
	// removed is set, under the shard's lock, before the cache releases
	// its reference to val (see tryHit).
	removed atomic.Bool
	// prot: a data block in the protected segment (plru); written under
	// the shard's lock, read without it by Lookup.
	prot atomic.Bool
	// ref: a protected data block hit without the lock since demotion
	// last passed it (a second chance; see protect).
	ref          atomic.Bool
	prev, next   *entry // LRU list; shard.lru.next is the most recently used; guarded by mu
	fprev, fnext *entry // per-file list, nil-terminated; guarded by mu
}

type shard struct {
	// Read by every Lookup without the lock, written rarely: the index
	// (replaced by grow), the doorkeepers (one per processor stripe, each
	// on lines of its own), and full (flips when the shard fills or
	// empties, not at every insert).
	table    atomic.Pointer[index]
	doors    []door
	full     atomic.Bool
	capacity int64
	// Pads of a whole line between the groups keep them off each other's
	// lines however the shard is aligned.
	_ [64]byte
	// Written by inserts and evictions (under mu), read by the lock-free
	// size readers (Size, KindSize, Count, limit). Not by Lookup: a
	// shard's inserts come from every core, so these lines are as often
	// as not in another core's cache, and a read fetches them (full is
	// Lookup's room check).
	kindSize   [numKinds]atomic.Int64
	count      atomic.Int64
	lastCharge atomic.Int64 // the charge of the block inserted last (the measure of room for full)
	_          [64]byte
	// Guarded by mu.
	mu       sync.Mutex
	seq      uint64
	files    map[uint64]*entry // file number -> head of that file's list
	lru      entry             // sentinel of the probationary LRU list of data blocks
	plru     entry             // sentinel of the protected LRU list of data blocks
	hlru     entry             // sentinel of the LRU list of high-priority blocks
	protSize int64             // the charges of the blocks on plru
	_        [64]byte          // keep neighbouring shards' hot fields off one cache line
}

// door is a data shard's doorkeeper on one processor stripe (see admit):
// its bits and the count of those set since they were last cleared, both
// written by the Lookups (and SetKind's admission checks) that run on
// that stripe's processor. Padded like stats, and its words allocated
// apart, so that no other stripe's doorkeeper shares its lines.
type door struct {
	words []atomic.Uint64
	set   atomic.Int64
	_     [128 - 32]byte
}

// stats is one stripe of the cache's counters: a Lookup on one processor
// writes its own line (see percpu).
//
// A stripe is two lines long, its counters at the front: however the
// array is aligned, two stripes' counters never share a line.
type stats struct {
	hits, misses atomic.Int64
	passed       atomic.Int64 // data blocks the doorkeeper kept out
	// lost counts Lookups that found an entry removed before they could
	// take its block (tests check that they reach the case).
	lost atomic.Int64
	_    [128 - 32]byte
}

// Cache is a sharded LRU block cache. Create it with New.
type Cache struct {
	capacity int64
	// reserved is what Reserve granted; pending what a Reserve in progress
	// is evicting room for (already taken out of the shards' capacities).
	reserved, pending atomic.Int64
	// gen is odd while Reserve, Unreserve or setMeta changes the shards'
	// limits (under resMu), and moves on each time: Usage sums the shards
	// between two equal even values, so that it never adds up shards
	// trimmed for one limit and shards not yet trimmed.
	gen    atomic.Uint64
	resMu  sync.Mutex // serializes Reserve, Unreserve and setMeta; taken before shard locks
	shards [numShards]shard
	stats  [percpu.MaxStripes]stats
	// meta is the pool of index and filter blocks: one LRU list for the
	// whole cache (so a large block is not bounded by one shard's part),
	// whose size the data shards' capacities give way to.
	meta shard
	// admitAll turns the doorkeeper off (tests of the eviction order).
	admitAll bool
}

// Kind is what a cached block is; it sets its priority.
type Kind uint8

const (
	// KindData blocks are evicted first.
	KindData Kind = iota
	// KindIndex blocks (a table's index) are high priority.
	KindIndex
	// KindFilter blocks (a table's filter) are high priority.
	KindFilter
	numKinds
)

func (k Kind) high() bool { return k != KindData }

// New returns a cache that holds at most capacity bytes of block contents
// (the charge of a block is its length). Each of the shards gets an equal
// part of the capacity; a block larger than one shard's part is not cached.
// A capacity <= 0 makes a cache that stores nothing but still counts misses.
func New(capacity int64) *Cache { return newCache(capacity, percpu.Stripes) }

// newCache is New with doorStripes doorkeepers per data shard (a power of
// two; tests take one, to see every miss in one window whatever processor
// their goroutine runs on).
func newCache(capacity int64, doorStripes int) *Cache {
	if capacity < 0 {
		capacity = 0
	}
	c := &Cache{capacity: capacity}
	doorBits := doorkeeperBits(capacity / numShards)
	for doorBits > 1024 && doorBits*doorStripes > maxDoorBits {
		doorBits >>= 1
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.doors = make([]door, doorStripes)
		for j := range s.doors {
			s.doors[j].words = make([]atomic.Uint64, doorBits/64)
		}
		s.table.Store(newIndex(minBuckets))
		s.files = make(map[uint64]*entry)
		s.lru.next, s.lru.prev = &s.lru, &s.lru
		s.plru.next, s.plru.prev = &s.plru, &s.plru
		s.hlru.next, s.hlru.prev = &s.hlru, &s.hlru
		s.capacity = capacity / numShards
	}
	for _, s := range []*shard{&c.meta} {
		s.table.Store(newIndex(minBuckets))
		s.files = make(map[uint64]*entry)
		s.lru.next, s.lru.prev = &s.lru, &s.lru
		s.plru.next, s.plru.prev = &s.plru, &s.plru
		s.hlru.next, s.hlru.prev = &s.hlru, &s.hlru
		s.capacity = capacity
	}
	return c
}

// hash mixes a block's key; its top bits pick the shard, its low bits the
// index bucket.
func hash(k key) uint64 {
	h := k.file*0x9e3779b97f4a7c15 + k.off*0xc2b2ae3d27d4eb4f
	h ^= h >> 31
	h *= 0x94d049bb133111eb
	return h ^ h>>29
}

// shard returns k's data shard and k's hash.
func (c *Cache) shard(k key) (*shard, uint64) {
	h := hash(k)
	return &c.shards[h>>(64-4)], h
}

// stripe returns the calling processor's counters.
func (c *Cache) stripe() *stats { return &c.stats[percpu.Index()] }

// Get returns the block cached for (file, off) with a reference for the
// caller, who must Release it (or keep it for good), and marks it most
// recently used. It does not allocate.
func (c *Cache) Get(file, off uint64) (*Value, bool) { return c.GetKind(file, off, KindData) }

// GetKind is Get for a block of the given kind (index and filter blocks
// are kept apart from data blocks).
func (c *Cache) GetKind(file, off uint64, kind Kind) (*Value, bool) {
	if c == nil {
		return nil, false
	}
	k := key{file, off}
	s, h := &c.meta, hash(k)
	if !kind.high() {
		s, h = c.shard(k)
	}
	s.mu.Lock()
	e := s.find(k, h)
	if e == nil {
		s.mu.Unlock()
		c.stripe().misses.Add(1)
		return nil, false
	}
	v := c.hitLocked(s, e)
	s.mu.Unlock()
	c.stripe().hits.Add(1)
	return v, true
}

// hitLocked makes e, just found in s, the most recently used block of its
// segment and returns its Value with a reference for the caller.
// REQUIRES: s.mu is held.
func (c *Cache) hitLocked(s *shard, e *entry) *Value {
	s.unlinkLRU(e)
	if !e.kind.high() && !e.prot.Load() {
		c.protect(s, e)
	}
	s.pushFront(e)
	v := e.val
	v.acquire()
	return v
}

// Lookup is Get for a data block that the caller reads from the file on a
// miss: admit then reports whether to give the block to Set, which caches
// it — yes while the shard has room, or at the block's second miss within
// the window of the doorkeeper of the processor it runs on (see admit).
//
// Lookup takes no lock but for a block's first hit after it entered the
// cache (which moves it to the protected segment): a miss, and a hit on a
// protected block, write no line that a Lookup on another processor
// writes too, except, for two Lookups of one block, that block's
// reference count (and a doorkeeper's lines when more processors than
// stripes share one). A hit on a
// protected block marks it referenced instead of moving it to the front
// of its list: the protected segment is a CLOCK, not an LRU list (see
// protect).
func (c *Cache) Lookup(file, off uint64) (v *Value, hit, admit bool) {
	if c == nil {
		return nil, false, false
	}
	k := key{file, off}
	s, h := c.shard(k)
	// A second walk when the entry found was removed meanwhile: the
	// block may have been cached again, and a miss would read it from
	// the file and replace the new entry.
	for range 2 {
		e := s.find(k, h)
		if e == nil {
			break
		}
		if v := c.tryHit(s, e); v != nil {
			c.stripe().hits.Add(1)
			return v, true, false
		}
	}
	c.stripe().misses.Add(1)
	return nil, false, c.admits(s, k, !s.full.Load())
}

// tryHit takes a reference on the block of e, a data entry found in s
// without the lock, and returns it; or nil when e was removed meanwhile.
// The reference is taken before e.removed is checked: if e is still in
// the cache after it, the cache's own reference was held throughout, so
// the Value had not gone back to its pool for another block (entries are
// never reused, and e.val never changes).
func (c *Cache) tryHit(s *shard, e *entry) *Value {
	v := e.val
	if !v.tryAcquire() {
		c.stripe().lost.Add(1)
		return nil
	}
	if e.removed.Load() {
		v.Release()
		c.stripe().lost.Add(1)
		return nil
	}
	if e.prot.Load() {
		if !e.ref.Load() {
			e.ref.Store(true)
		}
		return v
	}
	// A first hit: to the protected segment, under the lock.
	s.mu.Lock()
	if !e.removed.Load() && !e.prot.Load() {
		s.unlinkLRU(e)
		c.protect(s, e)
		s.pushFront(e)
	}
	s.mu.Unlock()
	return v
}

// admits reports whether data shard s caches block k: when it has room
// (SetKind measures it under the lock, Lookup reads full), or else when
// the doorkeeper saw k miss before (admit); a block kept out is counted.
func (c *Cache) admits(s *shard, k key, room bool) bool {
	if c.admitAll || room || s.admit(k) {
		return true
	}
	c.stripe().passed.Add(1)
	return false
}

// protectedShare is the part of a data shard's limit the protected
// segment may hold (a trace simulation of YCSB E and of zipfian point
// reads put the best share between 1/2 and 4/5; 2/3 sits between).
const (
	protectedNum = 2
	protectedDen = 3
)

// protect moves data block e, just hit in the probationary segment (and
// unlinked), to the protected segment, demoting the protected segment's
// least recently used blocks to the head of the probationary one while it
// holds more than its share. A block at the tail that was hit since
// demotion last passed it (e.ref, set by Lookup's lock-free hits) gets a
// second chance at the head of the protected segment instead, once per
// pass. REQUIRES: s.mu is held.
func (c *Cache) protect(s *shard, e *entry) {
	e.prot.Store(true)
	e.ref.Store(false)
	s.protSize += e.val.Charge()
	limit := c.limit(s) * protectedNum / protectedDen
	for chances := s.count.Load(); s.protSize > limit; {
		d := s.plru.prev
		if d == &s.plru {
			break
		}
		s.unlinkLRU(d)
		if chances > 0 && d.ref.Load() {
			chances--
			d.ref.Store(false)
			s.pushFront(d)
			continue
		}
		d.prot.Store(false)
		s.protSize -= d.val.Charge()
		s.pushFront(d)
	}
}

// Peek returns the data block cached for (file, off) with a reference for
// the caller, like Get, but leaves the block's place in the LRU order and
// the hit and miss counters alone: for a reader that passes through a
// table once (a compaction's input, soon deleted), whose visit says
// nothing about what readers will want next.
func (c *Cache) Peek(file, off uint64) (*Value, bool) {
	if c == nil {
		return nil, false
	}
	k := key{file, off}
	s, h := c.shard(k)
	s.mu.Lock()
	e := s.find(k, h)
	if e == nil {
		s.mu.Unlock()
		return nil, false
	}
	v := e.val
	v.acquire()
	s.mu.Unlock()
	return v, true
}

// Set caches v as the data block at (file, off): SetKind with KindData.
func (c *Cache) Set(file, off uint64, v *Value) { c.SetKind(file, off, v, KindData) }

// SetKind caches v as the block at (file, off), of kind kind, replacing any
// block cached there, and evicts blocks (see the package documentation for
// the order) to make room. A data block larger than its shard's capacity,
// or an index or filter block larger than the unreserved capacity, is not
// cached. The cache takes its own reference to v; the caller keeps its
// reference and must not modify the block afterwards.
func (c *Cache) SetKind(file, off uint64, v *Value, kind Kind) {
	if c == nil || kind >= numKinds {
		return
	}
	if kind.high() {
		c.setMeta(key{file, off}, v, kind)
		return
	}
	k := key{file, off}
	s, h := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.find(k, h)
	if old != nil {
		c.remove(s, old)
	}
	charge := v.Charge()
	limit := c.limit(s)
	if charge > limit || (old == nil && !c.admits(s, k, s.held()+charge <= limit)) {
		if old != nil {
			c.noteRoom(s, limit)
		}
		return
	}
	// Room first, then the block: the shard never holds more than its
	// limit, not even for a moment (Size+Reserved is sampled lock-free).
	c.trim(s, limit-charge)
	c.insert(s, k, h, v, kind, charge)
	c.noteRoom(s, limit)
}

// noteRoom sets data shard s's full flag, which Lookup reads instead of
// the sizes: whether s lacks room for a block like the last one inserted
// (a full shard sits just under its limit, blocks differing in size,
// which is not room). It writes the flag only when it changes, so that
// the flag's line stays in every core's cache. It is set after an insert
// and after evictions that do not insert (EvictFile, Delete, a
// reservation's trim), and on every data shard when the limit grows
// (refreshRoom: Unreserve, metadata let go by EvictFile or Delete). The
// meta pool's own evictions for a new index or filter block grow the
// limit by less than that block takes from it, and Lookup races none of
// this: a stale flag sends a miss through the doorkeeper, or lets SetKind
// (which checks the sizes) decide. REQUIRES: s.mu is held.
func (c *Cache) noteRoom(s *shard, limit int64) {
	full := s.held()+s.lastCharge.Load() > limit
	if s.full.Load() != full {
		s.full.Store(full)
	}
}

// refreshRoom sets every data shard's full flag after their limits grew.
func (c *Cache) refreshRoom() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		c.noteRoom(s, c.limit(s))
		s.mu.Unlock()
	}
}

// Admission: a full data shard caches a block only on its second miss
// within a window, remembered by a doorkeeper (the first stage of
// TinyLFU; Einziger, Friedman and Manes, 2017): one bit per hash slot,
// cleared when a quarter of the bits are set, so that the window is about
// twice as many distinct blocks as the shard holds. A block read once — a
// uniform read over data many times the cache, a scan's next block —
// then passes by without evicting a block that was read twice, and the
// miss costs its read alone: not also a map insert, a map delete and the
// list moves of an eviction, on lines the other cores' misses write too
// (BenchmarkReadRandomParallel's profile put the two at 9-17% of a miss
// on a 2-core machine). A block that is read again soon is cached at its
// second miss. While the shard has room, every block is cached.
//
// Each processor stripe (percpu) has its own doorkeeper per shard, and a
// miss asks the one of the processor it runs on: a doorkeeper shared by
// every core is a line that a first miss on one core writes and the next
// miss on another core reads, which costs a transfer between the cores'
// caches (about 100 ns here) at every other miss; BenchmarkReadPath-
// Parallel measured the cache's part of a Get at 2 readers at nearly
// twice what it is at 1. A block is then cached at its second miss on one
// processor: each doorkeeper sees only its processor's misses, in a
// window as long in time as the shared one's (the same bits, filled as
// many times slower as there are processors missing), so that a block
// missed at random by every reader is admitted about as often as before
// — a goroutine that changes processors between two misses of one block
// only sees it admitted at a later one. The memory is the same bits per
// stripe (doorkeeperBits: 8 to 16 bits per 4 KiB of a shard's capacity,
// at least 1024), except that a shard's stripes together hold at most
// the 1<<23 bits one doorkeeper may: with 16 stripes at most 0.8% of the
// capacity, 32 KiB for a small cache, 16 MiB for an unlimited one.

// maxDoorBits bounds a shard's doorkeepers, all stripes together.
const maxDoorBits = 1 << 23

// doorkeeperBits is the size of a data shard's doorkeeper for a shard of
// capacity bytes: 8 bits per 4 KiB of capacity, a power of two, at least
// 1024 and at most 1<<23 (1 MiB: a 4 GiB shard; a larger one, or an
// "unlimited" capacity, gets a window shorter than twice its blocks).
func doorkeeperBits(capacity int64) int {
	n := 1024
	for int64(n) < capacity/4096*8 && n < maxDoorBits {
		n <<= 1
	}
	return n
}

// admit reports whether the full shard s caches block k: whether k's bit
// was already set in the calling processor's doorkeeper. It sets the bit
// otherwise; a Lookup that finds a quarter of the bits set clears them
// all. Safe without s.mu: a bit set or cleared by a racing Lookup (one on
// a processor sharing the stripe, or a goroutine that changed processors
// after picking it) only moves one block's admission by one miss.
func (s *shard) admit(k key) bool {
	return s.admitOn(&s.doors[percpu.Index()&(len(s.doors)-1)], k)
}

// bit returns the word of d that holds k's bit, and the bit's mask.
func (d *door) bit(k key) (*atomic.Uint64, uint64) {
	h := k.file*0xc2b2ae3d27d4eb4f + k.off*0x9e3779b97f4a7c15
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	bit := (h >> 32) & uint64(len(d.words)*64-1)
	return &d.words[bit/64], uint64(1) << (bit % 64)
}

// admitOn is admit with the doorkeeper d.
func (s *shard) admitOn(d *door, k key) bool {
	w, m := d.bit(k)
	if w.Load()&m != 0 || w.Or(m)&m != 0 {
		return true
	}
	// The count is reset in the same step that decides who clears: a
	// Lookup that stalls between the two cannot leave the count past the
	// quarter for good (which would stop the clearing and, once every bit
	// is set, admit every block).
	if n := d.set.Add(1); n >= int64(len(d.words)*64/4) && d.set.CompareAndSwap(n, 0) {
		for i := range d.words {
			d.words[i].Store(0)
		}
	}
	return false
}

// setMeta caches an index or filter block in the meta pool, which may use
// all of the unreserved capacity: the data shards are trimmed first by
// their share of it, as for a reservation.
func (c *Cache) setMeta(k key, v *Value, kind Kind) {
	c.resMu.Lock()
	defer c.resMu.Unlock()
	c.gen.Add(1)
	defer c.gen.Add(1)
	s, h := &c.meta, hash(k)
	s.mu.Lock()
	if old := s.find(k, h); old != nil {
		c.remove(s, old)
	}
	charge := v.Charge()
	limit := c.capacity - c.reserved.Load() - c.pending.Load()
	if charge > limit {
		s.mu.Unlock()
		return
	}
	c.trimMeta(limit - charge)
	s.mu.Unlock()
	c.pending.Add(charge)
	c.trimShards()
	s.mu.Lock()
	c.insert(s, k, h, v, kind, charge)
	s.mu.Unlock()
	c.pending.Add(-charge)
}

// trimMeta evicts from the meta pool until it holds at most limit bytes,
// least recently used first, except that a block hit without the lock
// since eviction last passed it (Value.TryAcquireCached) moves to the front
// instead, once. REQUIRES: c.meta.mu is held.
func (c *Cache) trimMeta(limit int64) {
	s := &c.meta
	for chances := s.count.Load(); s.held() > limit && s.hlru.prev != &s.hlru; {
		victim := s.hlru.prev
		if chances > 0 && victim.val.used.Swap(false) {
			chances--
			s.unlinkLRU(victim)
			s.pushFront(victim)
			continue
		}
		c.remove(s, victim)
	}
}

// trimShards evicts from every data shard down to its limit.
func (c *Cache) trimShards() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		limit := c.limit(s)
		c.trim(s, limit)
		c.noteRoom(s, limit)
		s.mu.Unlock()
	}
}

// insert adds v to s. REQUIRES: s.mu is held, k (of hash h) is not in s.
func (c *Cache) insert(s *shard, k key, h uint64, v *Value, kind Kind, charge int64) {
	v.acquire()
	s.seq++
	e := &entry{key: k, hash: h, kind: kind, val: v, seq: s.seq}
	s.link(e)
	s.pushFront(e)
	if head := s.files[k.file]; head != nil {
		// After the head, not before it: the files map is written only
		// for a file's first block, not on every insert (a map whose
		// lines both cores would otherwise write on every miss).
		e.fprev, e.fnext = head, head.fnext
		if head.fnext != nil {
			head.fnext.fprev = e
		}
		head.fnext = e
	} else {
		s.files[k.file] = e
	}
	if s == &c.meta {
		v.cached.Store(true)
	}
	s.lastCharge.Store(charge)
	s.kindSize[kind].Add(charge)
	s.count.Add(1)
}

// limit is data shard s's capacity less its share of the reservations
// and of the meta pool.
func (c *Cache) limit(s *shard) int64 {
	meta := c.meta.kindSize[KindIndex].Load() + c.meta.kindSize[KindFilter].Load()
	return s.capacity - (c.reserved.Load()+c.pending.Load()+meta)/numShards
}

// trim evicts from s until it holds at most limit bytes: data blocks
// first (the probationary segment's, then the protected one's), least
// recently used first. REQUIRES: s.mu is held.
func (c *Cache) trim(s *shard, limit int64) {
	for s.held() > limit {
		victim := s.lru.prev
		if victim == &s.lru {
			victim = s.plru.prev
		}
		if victim == &s.plru {
			victim = s.hlru.prev
		}
		if victim == &s.hlru {
			return
		}
		c.remove(s, victim)
	}
}

// Delete drops the block cached at (file, off), if any.
func (c *Cache) Delete(file, off uint64) {
	if c == nil {
		return
	}
	k := key{file, off}
	d, h := c.shard(k)
	metaFreed := false
	for _, s := range []*shard{d, &c.meta} {
		s.mu.Lock()
		if e := s.find(k, h); e != nil {
			c.remove(s, e)
			if s == d {
				c.noteRoom(s, c.limit(s))
			} else {
				metaFreed = true
			}
		}
		s.mu.Unlock()
	}
	if metaFreed {
		c.refreshRoom()
	}
}

// Reserve takes n bytes out of the capacity for memory charged to the
// cache's budget but held elsewhere, evicting blocks to make room. It
// refuses (false) when the reservations would pass half the capacity.
// Give the bytes back with Unreserve.
func (c *Cache) Reserve(n int64) bool {
	if c == nil || n < 0 {
		return false
	}
	c.resMu.Lock()
	defer c.resMu.Unlock()
	if c.reserved.Load()+n > c.capacity/2 {
		return false
	}
	c.gen.Add(1)
	defer c.gen.Add(1)
	// Room is made before the reservation is published, so that
	// Size()+Reserved() never passes the capacity meanwhile.
	c.pending.Add(n)
	c.trimShards()
	c.meta.mu.Lock()
	c.trimMeta(c.capacity - c.reserved.Load() - c.pending.Load())
	c.meta.mu.Unlock()
	c.reserved.Add(n)
	c.pending.Add(-n)
	return true
}

// Unreserve gives back n bytes taken by Reserve.
func (c *Cache) Unreserve(n int64) {
	if c != nil && n > 0 {
		c.resMu.Lock()
		c.gen.Add(1)
		c.reserved.Add(-n)
		c.gen.Add(1)
		c.refreshRoom()
		c.resMu.Unlock()
	}
}

// Reserved returns the bytes reserved.
func (c *Cache) Reserved() int64 {
	if c == nil {
		return 0
	}
	return c.reserved.Load()
}

// Usage returns Size and Reserved read consistently: never a size from
// after a reservation was given back with the reservation from before,
// nor a sum of shards some of which were trimmed for a new reservation or
// metadata block and some not yet (the shards are summed between two equal
// even values of gen).
func (c *Cache) Usage() (size, reserved int64) {
	if c == nil {
		return 0, 0
	}
	for {
		g := c.gen.Load()
		if g&1 != 0 {
			runtime.Gosched()
			continue
		}
		r := c.reserved.Load()
		size = c.Size()
		if c.gen.Load() == g {
			return size, r
		}
	}
}

// KindSize returns the bytes cached of one kind.
func (c *Cache) KindSize(k Kind) int64 {
	if c == nil || k >= numKinds {
		return 0
	}
	var n int64
	for i := range c.shards {
		n += c.shards[i].kindSize[k].Load()
	}
	return n + c.meta.kindSize[k].Load()
}

// EvictFile drops every block of the given file. Call it when the table is
// deleted so that its blocks stop taking space; readers still holding one of
// its blocks keep it until they release it.
func (c *Cache) EvictFile(file uint64) {
	if c == nil {
		return
	}
	for i := range c.shards {
		c.evictFileFrom(&c.shards[i], file)
	}
	if c.evictFileFrom(&c.meta, file) {
		c.refreshRoom()
	}
}

// evictFileFrom drops file's blocks from s, reporting whether there were
// any.
func (c *Cache) evictFileFrom(s *shard, file uint64) bool {
	s.mu.Lock()
	evicted := false
	for e := s.files[file]; e != nil; e = s.files[file] {
		c.remove(s, e)
		evicted = true
	}
	if evicted && s != &c.meta {
		c.noteRoom(s, c.limit(s))
	}
	s.mu.Unlock()
	return evicted
}

// remove unlinks e from every structure of s and releases the cache's
// reference to its block. REQUIRES: s.mu is held.
func (c *Cache) remove(s *shard, e *entry) {
	s.unlink(e)
	e.removed.Store(true) // before the Release below (see tryHit)
	s.unlinkLRU(e)
	if e.fprev != nil {
		e.fprev.fnext = e.fnext
	} else if e.fnext != nil {
		s.files[e.key.file] = e.fnext
	} else {
		delete(s.files, e.key.file)
	}
	if e.fnext != nil {
		e.fnext.fprev = e.fprev
	}
	e.fprev, e.fnext = nil, nil
	charge := e.val.Charge()
	if e.prot.Load() {
		s.protSize -= charge
	}
	s.kindSize[e.kind].Add(-charge)
	e.val.forget()
	s.count.Add(-1)
	e.val.Release()
}

// held returns the charges of the blocks s holds (a data shard holds
// data blocks only, the meta pool index and filter blocks).
func (s *shard) held() int64 {
	var n int64
	for k := range numKinds {
		n += s.kindSize[k].Load()
	}
	return n
}

func (s *shard) unlinkLRU(e *entry) {
	e.prev.next = e.next
	e.next.prev = e.prev
	e.prev, e.next = nil, nil
}

// pushFront makes e the most recently used of its kind's list.
func (s *shard) pushFront(e *entry) {
	head := &s.lru
	if e.kind.high() {
		head = &s.hlru
	} else if e.prot.Load() {
		head = &s.plru
	}
	e.prev = head
	e.next = head.next
	head.next.prev = e
	head.next = e
}

// Capacity returns the capacity the cache was created with.
func (c *Cache) Capacity() int64 {
	if c == nil {
		return 0
	}
	return c.capacity
}

// Size returns the total length of the cached blocks.
func (c *Cache) Size() int64 {
	var n int64
	for k := range numKinds {
		n += c.KindSize(k)
	}
	return n
}

// Count returns the number of cached blocks.
func (c *Cache) Count() int64 {
	if c == nil {
		return 0
	}
	n := c.meta.count.Load()
	for i := range c.shards {
		n += c.shards[i].count.Load()
	}
	return n
}

// Hits returns the number of Get and Lookup calls that found their block.
func (c *Cache) Hits() int64 { return c.sum(func(st *stats) *atomic.Int64 { return &st.hits }) }

// Misses returns the number of Get and Lookup calls that did not find
// their block.
func (c *Cache) Misses() int64 { return c.sum(func(st *stats) *atomic.Int64 { return &st.misses }) }

// NotAdmitted returns the number of data blocks a full shard did not cache
// because the doorkeeper had not seen them within its window.
func (c *Cache) NotAdmitted() int64 {
	return c.sum(func(st *stats) *atomic.Int64 { return &st.passed })
}

// sum adds up one counter of every stripe (0 for a nil cache).
func (c *Cache) sum(counter func(*stats) *atomic.Int64) int64 {
	var n int64
	if c != nil {
		for i := range c.stats {
			n += counter(&c.stats[i]).Load()
		}
	}
	return n
}
