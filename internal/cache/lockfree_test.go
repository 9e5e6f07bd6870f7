package cache

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLookupConcurrent races lock-free Lookups (and the Sets they admit)
// against deletes, file evictions, reservations and the index's growth,
// checking every block a hit returns; run it with -race. It checks that
// the cases it is about were reached: hits, first hits that protect a
// block, misses kept out by the doorkeeper, and an index that grew.
func TestLookupConcurrent(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	c := New(numShards * 16 << 10)
	var wg sync.WaitGroup
	var hits, misses atomic.Int64
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			for range 30000 {
				f, off := rng.Uint64N(4), rng.Uint64N(3000)
				switch r := rng.IntN(1000); {
				case r == 0:
					c.EvictFile(f)
				case r < 5:
					c.Delete(f, off)
				case r < 7:
					if c.Reserve(8 << 10) {
						c.Unreserve(8 << 10)
					}
				default:
					v, hit, admit := c.Lookup(f, off)
					if hit {
						hits.Add(1)
						for _, b := range v.Bytes() {
							if b != byte(f+off) {
								panic("a hit returned another block")
							}
						}
						v.Release()
						continue
					}
					misses.Add(1)
					if admit {
						// Small blocks: many entries per shard, so the
						// index grows while Lookups walk it.
						set(c, f, off, 1+int(off%80), byte(f+off))
					}
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d hits, %d misses, %d not admitted", hits.Load(), misses.Load(), c.NotAdmitted())
	require.Positive(t, hits.Load())
	require.Positive(t, c.NotAdmitted(), "no miss was kept out")
	require.Equal(t, hits.Load(), c.Hits())
	require.Equal(t, misses.Load(), c.Misses())
	grown := 0
	var size int64
	for i := range c.shards {
		s := &c.shards[i]
		if len(s.table.Load().buckets) > minBuckets {
			grown++
		}
		n := countIndex(s)
		require.Equal(t, n, countLRU(s))
		require.Equal(t, n, countFiles(s))
		require.LessOrEqual(t, s.size, s.capacity)
		size += s.size
	}
	require.Positive(t, grown, "no index grew")
	require.Equal(t, size, c.Size())
}

// TestTryHitRemoved: a Lookup that found an entry which is removed before
// it takes its reference reports a miss and leaves the block's count as
// it was; the memory, back in its pool, may already serve another block.
func TestTryHitRemoved(t *testing.T) {
	c := New(1 << 20)
	set(c, 1, 0, 100, 7)
	s, h := c.shard(key{1, 0})
	e := s.find(key{1, 0}, h)
	require.NotNil(t, e)
	held, ok := c.Get(1, 0)
	require.True(t, ok)
	c.Delete(1, 0)
	require.EqualValues(t, 1, held.refs.Load(), "the cache still holds its reference")
	require.Nil(t, c.tryHit(s, e), "a removed entry was hit")
	require.EqualValues(t, 1, held.refs.Load(), "tryHit changed the count")
	held.Release()
	// Now free: no reference can be taken.
	require.Nil(t, c.tryHit(s, e))
	// Taken again by Alloc for another block: tryHit takes a reference,
	// finds e removed, and gives it back.
	v := Alloc(100)
	if v == e.val {
		require.Nil(t, c.tryHit(s, e))
		require.EqualValues(t, 1, v.refs.Load())
	}
	v.Release()
}

// TestProtectedClock: a protected block hit by Lookup (which marks it
// instead of moving it) gets a second chance when demotion reaches it, so
// it stays protected while unmarked blocks fall back to probation.
func TestProtectedClock(t *testing.T) {
	c := New(numShards * 1000)
	c.admitAll = true
	target, offs := sameShard(c, 7, 20)
	hit := func(off uint64) {
		v, ok, _ := c.Lookup(7, off)
		require.True(t, ok)
		v.Release()
	}
	// Six blocks protected (2/3 of ten 100-byte blocks), oldest first.
	for _, off := range offs[:6] {
		set(c, 7, off, 100, 1)
		hit(off)
	}
	// Mark the oldest, then protect one more: the oldest gets a second
	// chance and the next oldest is demoted.
	hit(offs[0])
	set(c, 7, offs[6], 100, 1)
	hit(offs[6])
	s, h := c.shard(key{7, offs[0]})
	require.Same(t, target, s)
	require.True(t, s.find(key{7, offs[0]}, h).prot.Load(), "a marked block was demoted")
	_, h1 := c.shard(key{7, offs[1]})
	require.False(t, s.find(key{7, offs[1]}, h1).prot.Load(), "the oldest unmarked block stayed protected")
	require.LessOrEqual(t, target.protSize, target.capacity*protectedNum/protectedDen)
}

// TestIndexGrows: a shard's index doubles as entries outnumber its buckets
// twice, every entry stays findable, and every chain stays ordered newest
// first (the order that keeps a lock-free walk finite).
func TestIndexGrows(t *testing.T) {
	c := New(numShards << 20)
	target, offs := sameShard(c, 3, 8*minBuckets)
	for i, off := range offs {
		set(c, 3, off, 10, byte(off))
		if i == 2*minBuckets+1 {
			require.Greater(t, len(target.table.Load().buckets), minBuckets, "the index did not grow")
		}
	}
	require.Equal(t, 4*minBuckets, len(target.table.Load().buckets))
	require.Equal(t, len(offs), countIndex(target))
	for _, off := range offs {
		v, ok, _ := c.Lookup(3, off)
		require.True(t, ok, "block %d lost by growth", off)
		require.Equal(t, byte(off), v.Bytes()[0])
		v.Release()
	}
}
