package cache

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sievedb/sieve/internal/percpu"
	"github.com/stretchr/testify/require"
)

func block(n int, b byte) []byte {
	v := make([]byte, n)
	for i := range v {
		v[i] = b
	}
	return v
}

// set caches a pooled block of n bytes b and gives up the caller's
// reference, as a reader does after inserting a block it has used.
func set(c *Cache, file, off uint64, n int, b byte) {
	v := Alloc(n)
	copy(v.Bytes(), block(n, b))
	c.Set(file, off, v)
	v.Release()
}

// get returns a copy of the cached block and releases the reference.
func get(c *Cache, file, off uint64) ([]byte, bool) {
	v, ok := c.Get(file, off)
	if !ok {
		return nil, false
	}
	b := append([]byte(nil), v.Bytes()...)
	v.Release()
	return b, true
}

func TestGetSetCounters(t *testing.T) {
	c := New(1 << 20)
	_, ok := get(c, 1, 0)
	require.False(t, ok)
	set(c, 1, 0, 100, 'a')
	set(c, 1, 100, 50, 'b')
	v, ok := get(c, 1, 0)
	require.True(t, ok)
	require.Equal(t, block(100, 'a'), v)
	require.EqualValues(t, 1, c.Hits())
	require.EqualValues(t, 1, c.Misses())
	require.EqualValues(t, 150, c.Size())
	require.EqualValues(t, 2, c.Count())

	// Replacing a block adjusts the charge.
	set(c, 1, 0, 10, 'c')
	v, ok = get(c, 1, 0)
	require.True(t, ok)
	require.Equal(t, block(10, 'c'), v)
	require.EqualValues(t, 60, c.Size())
	require.EqualValues(t, 2, c.Count())
}

// sameShard returns the shard of file's block 0 and the first n block
// offsets of file that map to it.
func sameShard(c *Cache, file uint64, n int) (*shard, []uint64) {
	target, _ := c.shard(key{file, 0})
	var offs []uint64
	for off := uint64(0); len(offs) < n; off++ {
		if s, _ := c.shard(key{file, off}); s == target {
			offs = append(offs, off)
		}
	}
	return target, offs
}

func TestLRUEviction(t *testing.T) {
	c := New(numShards * 1000)
	c.admitAll = true // the eviction order without the doorkeeper
	// Fill one shard: find keys that map to the same shard.
	target, offs := sameShard(c, 7, 20)
	for _, off := range offs[:10] {
		set(c, 7, off, 100, byte(off))
	}
	require.EqualValues(t, 1000, target.held())
	// Touch the oldest so that the second oldest is evicted next.
	_, ok := get(c, 7, offs[0])
	require.True(t, ok)
	set(c, 7, offs[10], 100, 1)
	_, ok = get(c, 7, offs[0])
	require.True(t, ok, "recently used block evicted")
	_, ok = get(c, 7, offs[1])
	require.False(t, ok, "least recently used block kept")
	require.LessOrEqual(t, target.held(), target.capacity)

	// A block bigger than a shard is not cached, and replaces nothing stale.
	set(c, 7, offs[0], 2000, 9)
	_, ok = get(c, 7, offs[0])
	require.False(t, ok)
}

func TestEvictFile(t *testing.T) {
	c := New(1 << 20)
	for f := uint64(1); f <= 3; f++ {
		for off := uint64(0); off < 100; off++ {
			set(c, f, off*4096, 10, byte(f))
		}
	}
	require.EqualValues(t, 300, c.Count())
	held, ok := c.Get(2, 0)
	require.True(t, ok)
	defer held.Release()
	c.EvictFile(2)
	require.EqualValues(t, 200, c.Count())
	require.EqualValues(t, 2000, c.Size())
	for off := uint64(0); off < 100; off++ {
		_, ok := get(c, 2, off*4096)
		require.False(t, ok)
		_, ok = get(c, 3, off*4096)
		require.True(t, ok)
	}
	// Other blocks of its size class reuse pooled memory now; the held
	// one must not be among them.
	for i := 0; i < 100; i++ {
		set(c, 4, uint64(i), 10, 0xee)
	}
	require.Equal(t, block(10, 2), held.Bytes(), "evicted block changed under its holder")
	c.EvictFile(4)
	c.EvictFile(2) // idempotent
	c.EvictFile(99)
	require.EqualValues(t, 200, c.Count())
}

func TestNilAndZeroCache(t *testing.T) {
	var c *Cache
	c.Set(1, 1, Wrap([]byte("x")))
	_, ok := get(c, 1, 1)
	require.False(t, ok)
	c.EvictFile(1)
	require.Zero(t, c.Size()+c.Count()+c.Hits()+c.Misses()+c.Capacity())

	z := New(0)
	z.Set(1, 1, Wrap([]byte("x")))
	_, ok = z.Get(1, 1)
	require.False(t, ok)
	require.EqualValues(t, 1, z.Misses())
}

func TestGetDoesNotAllocate(t *testing.T) {
	c := New(1 << 20)
	set(c, 5, 4096, 4096, 1)
	allocs := testing.AllocsPerRun(1000, func() {
		v, ok := c.Get(5, 4096)
		if !ok {
			panic("miss")
		}
		v.Release()
	})
	require.Zero(t, allocs)
}

// TestConcurrent checks invariants under concurrent Get/Set/EvictFile; run
// it with -race.
func TestConcurrent(t *testing.T) {
	c := New(64 << 10)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 0))
			for i := 0; i < 20000; i++ {
				f, off := rng.Uint64N(4), rng.Uint64N(200)
				switch rng.IntN(10) {
				case 0:
					c.EvictFile(f)
				case 1, 2, 3:
					set(c, f, off, 1+rng.IntN(600), byte(f+off))
				default:
					if v, ok := c.Get(f, off); ok {
						for _, b := range v.Bytes() {
							if b != byte(f+off) {
								panic(fmt.Sprintf("block %d/%d holds %d", f, off, b))
							}
						}
						v.Release()
					}
				}
			}
		}(uint64(g))
	}
	wg.Wait()
	var size, count int64
	for i := range c.shards {
		s := &c.shards[i]
		require.LessOrEqual(t, s.held(), s.capacity)
		n := countIndex(s)
		require.Equal(t, n, countLRU(s))
		require.Equal(t, n, countFiles(s))
		require.EqualValues(t, n, s.count.Load())
		size += s.held()
		count += int64(n)
	}
	require.Equal(t, size, c.Size())
	require.Equal(t, count, c.Count())
}

// countIndex counts the entries in s's index, checking that each chain
// holds only its bucket's entries, newest first, none of them removed.
func countIndex(s *shard) int {
	t := s.table.Load()
	n := 0
	for i := range t.buckets {
		var newer *entry
		for e := t.buckets[i].Load(); e != nil; e = e.hnext.Load() {
			if e.hash&t.mask != uint64(i) || e.removed.Load() || (newer != nil && e.seq >= newer.seq) {
				panic(fmt.Sprintf("bucket %d: entry %v misplaced, removed or out of order", i, e.key))
			}
			newer = e
			n++
		}
	}
	return n
}

// countFiles counts the blocks on s's per-file lists, checking that each
// list is linked both ways, holds only its file's blocks, and starts at
// the block the files map names.
func countFiles(s *shard) int {
	n := 0
	for file, head := range s.files {
		if head.fprev != nil {
			panic(fmt.Sprintf("file %d: the head has a predecessor", file))
		}
		for e := head; e != nil; e = e.fnext {
			if e.key.file != file || s.find(e.key, e.hash) != e {
				panic(fmt.Sprintf("file %d: the list holds block %v, not cached as such", file, e.key))
			}
			if e.fnext != nil && e.fnext.fprev != e {
				panic(fmt.Sprintf("file %d: broken back link after %v", file, e.key))
			}
			n++
		}
	}
	return n
}

// countLRU counts the data blocks on s's two segments, checking that the
// protected segment's charges add up to protSize.
func countLRU(s *shard) int {
	n := 0
	for e := s.lru.next; e != &s.lru; e = e.next {
		if e.prot.Load() {
			panic("a protected block on the probationary list")
		}
		n++
	}
	var prot int64
	for e := s.plru.next; e != &s.plru; e = e.next {
		if !e.prot.Load() {
			panic("a probationary block on the protected list")
		}
		prot += e.val.Charge()
		n++
	}
	if prot != s.protSize {
		panic(fmt.Sprintf("protected blocks charge %d, protSize says %d", prot, s.protSize))
	}
	return n
}

func BenchmarkGetHit(b *testing.B) {
	c := New(64 << 20)
	for off := uint64(0); off < 1024; off++ {
		set(c, 1, off*4096, 4096, 0)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		off := uint64(0)
		for pb.Next() {
			if v, ok := c.Get(1, (off%1024)*4096); ok {
				v.Release()
			}
			off++
		}
	})
}

// A released block returns to the pool only when its last reference goes,
// and a second Release is a programming error, reported.
func TestValueReferences(t *testing.T) {
	c := New(1 << 20)
	v := Alloc(3000)
	require.Len(t, v.Bytes(), 3000)
	copy(v.Bytes(), block(3000, 7))
	c.Set(1, 0, v) // the cache's reference
	v.Release()    // the caller's
	got, ok := c.Get(1, 0)
	require.True(t, ok)
	c.EvictFile(1) // the cache lets go; got still holds it
	for i := 0; i < 50; i++ {
		w := Alloc(3000)
		copy(w.Bytes(), block(3000, 9))
		w.Release()
	}
	require.Equal(t, block(3000, 7), got.Bytes())
	got.Release()
	require.Panics(t, func() { got.Release() })

	// Blocks above the largest size class are not pooled, and Wrap never is.
	big := Alloc(maxPooled + 1)
	require.EqualValues(t, -1, big.class)
	big.Release()
	w := Wrap([]byte("abc"))
	require.EqualValues(t, -1, w.class)
	w.Release()
}

// A steady stream of misses (Alloc, Set, Release, evictions) reuses block
// memory: an insert allocates its entry (entries are never reused, so that
// Lookup can read them without the lock), not its block.
func TestMissStreamDoesNotAllocate(t *testing.T) {
	c := New(numShards * 16 << 10)
	c.admitAll = true // every miss is inserted and evicts
	off := uint64(0)
	fill := func() {
		v := Alloc(4000)
		c.Set(1, off, v)
		v.Release()
		off += 4096
	}
	for i := 0; i < 1000; i++ {
		fill()
	}
	allocs := testing.AllocsPerRun(2000, fill)
	require.LessOrEqual(t, allocs, 1.05)
}

// BenchmarkMissChurn is the read path of a cache far smaller than the data
// (peerbench: 8 MiB over ~60 MiB of tables): Get misses, a block is
// allocated, inserted, released; inserts evict the coldest blocks.
func BenchmarkMissChurn(b *testing.B) {
	c := New(8 << 20)
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for b.Loop() {
		file, off := uint64(rng.IntN(16)), uint64(rng.IntN(4000))*3072
		if v, ok := c.Get(file, off); ok {
			v.Release()
			continue
		}
		v := Alloc(3072)
		c.Set(file, off, v)
		v.Release()
	}
}

// TestPeek: Peek returns a cached block with a reference, like Get, but
// neither counts a hit or miss nor makes the block most recently used.
func TestPeek(t *testing.T) {
	c := New(numShards * 1000)
	c.admitAll = true // the eviction order without the doorkeeper
	_, offs := sameShard(c, 7, 11)
	for _, off := range offs[:10] {
		set(c, 7, off, 100, byte(off))
	}
	_, ok := c.Peek(7, 12345678)
	require.False(t, ok)
	v, ok := c.Peek(7, offs[0])
	require.True(t, ok)
	require.Equal(t, block(100, byte(offs[0])), v.Bytes())
	require.EqualValues(t, 0, c.Hits())
	require.EqualValues(t, 0, c.Misses())
	// The peeked block is still the least recently used: the next insert
	// evicts it, and the reference Peek gave keeps its memory valid.
	set(c, 7, offs[10], 100, 1)
	_, ok = get(c, 7, offs[0])
	require.False(t, ok, "Peek promoted the block")
	require.Equal(t, block(100, byte(offs[0])), v.Bytes())
	v.Release()
	var nilCache *Cache
	_, ok = nilCache.Peek(1, 0)
	require.False(t, ok)
}

// TestSegmentedLRU: a data block hit once moves to the protected segment
// and outlives a stream of blocks read once, which with plain LRU would
// push it out; the protected segment holds at most its share of the
// shard, its least recently used blocks falling back to probation.
func TestSegmentedLRU(t *testing.T) {
	c := New(numShards * 1000)
	c.admitAll = true // the eviction order without the doorkeeper
	target, offs := sameShard(c, 7, 60)
	set(c, 7, offs[0], 100, 1)
	_, ok := get(c, 7, offs[0]) // protected
	require.True(t, ok)
	for _, off := range offs[1:31] { // 30 blocks read once: 3 shards' worth
		set(c, 7, off, 100, 2)
	}
	_, ok = get(c, 7, offs[0])
	require.True(t, ok, "a block hit once was evicted by blocks read once")
	require.LessOrEqual(t, target.held(), target.capacity)

	// Hit 10 blocks: the protected segment keeps at most 2/3 of the
	// shard (6 blocks of 100 bytes), the rest fall back to probation,
	// and a stream of blocks read once then evicts those.
	for _, off := range offs[31:41] {
		set(c, 7, off, 100, 3)
		_, ok := get(c, 7, off)
		require.True(t, ok)
	}
	require.LessOrEqual(t, target.protSize, target.capacity*protectedNum/protectedDen)
	for _, off := range offs[41:60] {
		set(c, 7, off, 100, 4)
	}
	kept := 0
	for _, off := range offs[31:41] {
		if v, ok := c.Peek(7, off); ok {
			v.Release()
			kept++
		}
	}
	require.Equal(t, 6, kept, "protected blocks kept")
	require.LessOrEqual(t, target.held(), target.capacity)
	// Removing a protected block gives its charge back.
	c.EvictFile(7)
	require.Zero(t, target.protSize)
	require.Zero(t, target.held())
}

// TestDoorkeeper: a full shard caches a block at its second miss within
// the window, not at its first, so that blocks read once do not evict the
// blocks read twice; while the shard has room every block is cached; and
// the window ends (the bits clear) after a quarter of them are set.
func TestDoorkeeper(t *testing.T) {
	c := newCache(numShards*1000, 1)
	target, offs := sameShard(c, 7, 2000)
	for _, off := range offs[:10] { // room: cached at once
		set(c, 7, off, 100, 1)
	}
	require.EqualValues(t, 1000, target.held())
	require.EqualValues(t, 10, c.Count())
	// Full: the first miss of a new block passes by.
	set(c, 7, offs[10], 100, 2)
	_, ok := get(c, 7, offs[10])
	require.False(t, ok, "a full shard cached a block at its first miss")
	for _, off := range offs[:10] {
		_, ok := c.Peek(7, off)
		require.True(t, ok, "a block read once evicted a cached one")
	}
	// The second miss caches it, evicting the least recently used.
	set(c, 7, offs[10], 100, 2)
	b, ok := get(c, 7, offs[10])
	require.True(t, ok, "the second miss did not cache the block")
	require.Equal(t, byte(2), b[0])
	require.LessOrEqual(t, target.held(), target.capacity)
	_, ok = c.Peek(7, offs[0])
	require.False(t, ok, "the least recently used block was not the one evicted")

	// A stream of blocks read once is mostly not cached (a block is when
	// its bit was set by another: at most a quarter of the bits are set);
	// the bits clear after a quarter are set, so the window is bounded.
	bits := len(target.doors[0].words) * 64
	stream := offs[11 : 11+bits/4-1]
	admitted := 0
	for _, off := range stream {
		set(c, 7, off, 100, 3)
		if v, ok := c.Peek(7, off); ok {
			v.Release()
			admitted++
		}
	}
	t.Logf("%d of %d blocks read once cached (false positives of %d bits)", admitted, len(stream), bits)
	require.Less(t, admitted, len(stream)/4, "blocks read once were cached")
	require.Positive(t, target.doors[0].set.Load(), "the stream set bits")
	require.EqualValues(t, 1+len(stream)-admitted, c.NotAdmitted(), "blocks kept out are counted")
	for _, off := range offs[11+bits/4-1 : 11+bits/2] {
		set(c, 7, off, 100, 3)
	}
	require.Less(t, target.doors[0].set.Load(), int64(bits/4), "the doorkeeper cleared")
}

// TestLookupAdmits: Lookup says on a miss whether Set would cache the
// block — always while the shard has room; when it is full, at the
// block's second miss — and counts a hit as Get does.
func TestLookupAdmits(t *testing.T) {
	c := newCache(numShards*1000, 1)
	_, offs := sameShard(c, 7, 20)
	for _, off := range offs[:10] {
		_, hit, admit := c.Lookup(7, off)
		require.False(t, hit)
		require.True(t, admit, "a shard with room admits every block")
		set(c, 7, off, 100, 1)
	}
	v, hit, _ := c.Lookup(7, offs[0])
	require.True(t, hit)
	v.Release()
	_, hit, admit := c.Lookup(7, offs[10])
	require.False(t, hit)
	require.False(t, admit, "a full shard admitted a block at its first miss")
	require.EqualValues(t, 1, c.NotAdmitted())
	_, _, admit = c.Lookup(7, offs[10])
	require.True(t, admit, "a full shard did not admit a block at its second miss")
	set(c, 7, offs[10], 100, 2)
	v, hit, _ = c.Lookup(7, offs[10])
	require.True(t, hit, "the admitted block was cached")
	v.Release()
	require.EqualValues(t, 2, c.Hits())
	require.EqualValues(t, 12, c.Misses())
	var nilCache *Cache
	_, hit, admit = nilCache.Lookup(1, 2)
	require.False(t, hit || admit)
}

// TestLookupFullShardAsksDoorkeeper: a shard filled by blocks of
// different sizes sits just under its limit; Lookup must treat it as
// full (ask the doorkeeper), not as having room, so that a block kept out
// takes the lock once.
func TestLookupFullShardAsksDoorkeeper(t *testing.T) {
	c := newCache(numShards*1000, 1)
	target, offs := sameShard(c, 7, 200)
	for i, off := range offs[:100] { // 90..129 bytes each: the shard ends just under 1000
		set(c, 7, off, 90+i%40, 1)
	}
	require.Less(t, target.held(), target.capacity, "the shard is just under its limit")
	before := c.NotAdmitted()
	kept := 0
	for _, off := range offs[100:] {
		if _, _, admit := c.Lookup(7, off); !admit {
			kept++
		}
	}
	require.Equal(t, kept, int(c.NotAdmitted()-before))
	require.Greater(t, kept, len(offs[100:])/2, "Lookup admitted most first misses of a full shard")
}

func TestDoorkeeperBitsBounded(t *testing.T) {
	require.Equal(t, 1024, doorkeeperBits(0))
	require.Equal(t, 1<<23, doorkeeperBits(1<<62), "an unlimited capacity does not allocate without bound")
}

// BenchmarkReadPathParallel is a block cache's part of a random Get over
// data many times the cache (peerbench: 8 MiB over ~120 MiB of blocks),
// from GOMAXPROCS goroutines: Lookup; on a miss Alloc, fill the block (as
// the decompression would), Set it if admitted; Release. Between two Gets
// each goroutine works alone for about 3 µs (a Get's other work), so that
// -cpu=1,2 shows what sharing the cache costs a Get at 2 readers
// (cache-ns/op, the time spent in the cache) rather than contention of a
// loop that does nothing else. Blocks are read uniformly or by a scrambled
// zipfian key (YCSB's); sets/op and hit-rate are the admission's results.
func BenchmarkReadPathParallel(b *testing.B) {
	b.Run("uniform", func(b *testing.B) { benchReadPath(b, false) })
	b.Run("zipf", func(b *testing.B) { benchReadPath(b, true) })
}

func benchReadPath(b *testing.B, zipf bool) {
	c := New(8 << 20)
	const (
		blocks = 30000
		keys   = 1000000
		work   = 1000
	)
	var seed, sets atomic.Uint64
	var inCache atomic.Int64
	defer func() {
		b.ReportMetric(float64(sets.Load())/float64(b.N), "sets/op")
		b.ReportMetric(float64(c.Hits())/float64(c.Hits()+c.Misses()), "hit-rate")
		b.ReportMetric(float64(inCache.Load())/float64(b.N), "cache-ns/op")
	}()
	b.RunParallel(func(pb *testing.PB) {
		// The generators are the goroutine's own, on lines of their own:
		// two goroutines' generators sharing a line would be measured.
		type gen struct {
			_   [64]byte
			src rand.PCG
			z   *rand.Zipf
			_   [64]byte
		}
		g := &gen{}
		g.src.Seed(seed.Add(1), 7)
		g.z = rand.NewZipf(rand.New(&g.src), 1.01, 1, keys-1)
		var tab [512]uint64
		var spent time.Duration
		var mySets uint64
		for pb.Next() {
			y := g.src.Uint64()
			for range work {
				y = y*6364136223846793005 + 1442695040888963407
				y ^= tab[y>>55]
			}
			tab[y&511] = y
			var n uint64
			if zipf {
				k := g.z.Uint64()
				n = (k * 0x9e3779b97f4a7c15 >> 20) % blocks
			} else {
				n = g.src.Uint64() % blocks
			}
			t0 := time.Now()
			file, off := n/2000, (n%2000)*4096
			v, hit, admit := c.Lookup(file, off)
			if !hit {
				v = Alloc(4000)
				buf := v.Bytes()
				for i := 0; i < len(buf); i += 64 {
					buf[i] = byte(i)
				}
				if admit {
					mySets++
					c.Set(file, off, v)
				}
			}
			v.Release()
			spent += time.Since(t0)
		}
		inCache.Add(int64(spent))
		sets.Add(mySets)
	})
}

// TestDoorkeeperPerProcessor: each processor stripe has its own
// doorkeeper, so a block is admitted at its second miss on one stripe,
// not at a miss on another stripe after one here; the flag Lookup reads
// for room follows the shard filling and emptying.
func TestDoorkeeperPerProcessor(t *testing.T) {
	c := newCache(numShards*1000, 2)
	target, offs := sameShard(c, 7, 20)
	require.NotSame(t, &target.doors[0].words[0], &target.doors[1].words[0])
	for _, off := range offs[:10] {
		set(c, 7, off, 100, 1)
	}
	require.True(t, target.full.Load(), "a shard at its limit is full")
	k := key{7, offs[10]}
	require.False(t, target.admitOn(&target.doors[0], k), "a first miss")
	require.False(t, target.admitOn(&target.doors[1], k), "a first miss on the other stripe")
	require.True(t, target.admitOn(&target.doors[0], k), "a second miss on one stripe")
	require.True(t, target.admitOn(&target.doors[1], k))

	// Emptied (the file's blocks evicted), the shard has room again and
	// Lookup admits at once; a reservation's trim leaves it full.
	c.EvictFile(7)
	require.False(t, target.full.Load())
	_, _, admit := c.Lookup(7, offs[11])
	require.True(t, admit, "an empty shard admits at the first miss")
	for _, off := range offs[:10] {
		set(c, 7, off, 100, 1)
	}
	require.True(t, target.full.Load())
	c.Delete(7, offs[0])
	require.False(t, target.full.Load(), "a deleted block leaves room")
	set(c, 7, offs[0], 100, 1)
	require.True(t, target.full.Load())

	// A reservation's trim leaves the shard full (at its smaller limit);
	// giving the bytes back leaves it room, and Lookup admits at once.
	require.True(t, c.Reserve(numShards*300))
	require.True(t, target.full.Load())
	require.Less(t, target.held(), int64(1000))
	c.Unreserve(numShards * 300)
	require.False(t, target.full.Load(), "Unreserve left the shard's flag full")
	_, _, admit = c.Lookup(7, offs[12])
	require.True(t, admit)
	// So does metadata let go: an index block takes its share of every
	// data shard's limit, and EvictFile of its table gives it back.
	for _, off := range offs[:10] {
		set(c, 7, off, 100, 1)
	}
	require.True(t, target.full.Load())
	ix := Alloc(numShards * 200)
	c.SetKind(99, 0, ix, KindIndex)
	ix.Release()
	require.True(t, target.full.Load())
	c.EvictFile(99)
	require.False(t, target.full.Load(), "metadata let go left the shard's flag full")
}

// TestAdmitUsesProcessorStripe: admit asks the doorkeeper of the stripe
// of the processor it runs on (percpu.Index): the bit it sets is in that
// stripe's doorkeeper. Goroutines on the processors of a cache with
// several stripes admit distinct blocks; each call whose goroutine stayed
// on one processor across it is checked. The doorkeepers are large enough
// that none clears during the test.
func TestAdmitUsesProcessorStripe(t *testing.T) {
	if percpu.Stripes < 2 {
		t.Skip("one processor stripe")
	}
	c := New(numShards * 64 << 20) // 131072 bits a doorkeeper: no clearing below 32768 bits set
	target, offs := sameShard(c, 7, 4000)
	var mu sync.Mutex
	seen := map[int]int{}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(offs); i += 4 {
				if i%64 < 4 {
					runtime.Gosched() // let the goroutines spread over the processors
				}
				k := key{7, offs[i]}
				before := percpu.Index()
				target.admit(k)
				if percpu.Index() != before {
					continue
				}
				mu.Lock()
				seen[before]++
				mu.Unlock()
				if !target.doors[before].bitSet(k) {
					t.Errorf("admit on stripe %d did not set the bit in that stripe's doorkeeper", before)
					return
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("admits checked per stripe: %v", seen)
	for j := range target.doors {
		if seen[j] > 0 {
			require.Positive(t, target.doors[j].ones(), "stripe %d's doorkeeper was never written", j)
		}
	}
	if len(seen) < 2 {
		t.Skip("every checked admit ran on one processor (a busy or 1-core machine)")
	}
}

// bitSet reports whether k's bit is set in d (tests).
func (d *door) bitSet(k key) bool {
	w, m := d.bit(k)
	return w.Load()&m != 0
}

// ones counts d's set bits (tests).
func (d *door) ones() int {
	n := 0
	for i := range d.words {
		n += bits.OnesCount64(d.words[i].Load())
	}
	return n
}
