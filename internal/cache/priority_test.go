package cache

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCachePriorityEvictsDataFirst fills one file's blocks past the
// capacity: the high-priority (index, filter) blocks stay, data blocks go.
func TestCachePriorityEvictsDataFirst(t *testing.T) {
	c := New(numShards * 32 << 10)
	for off := uint64(0); off < 32; off++ {
		v := WrapObject(block(1<<10, 1), "meta", 0)
		c.SetKind(1, off, v, KindFilter)
		v.Release()
	}
	for off := uint64(100); off < 100+2048; off++ {
		set(c, 1, off, 1<<10, 2)
	}
	for off := uint64(0); off < 32; off++ {
		_, ok := c.Get(1, off)
		require.False(t, ok, "a filter block served as a data block")
		v, ok := c.GetKind(1, off, KindFilter)
		require.True(t, ok, "filter block %d evicted by data blocks", off)
		require.Equal(t, "meta", v.Object())
		v.Release()
	}
	require.Equal(t, int64(32<<10), c.KindSize(KindFilter))
	require.Greater(t, c.KindSize(KindData), int64(0))
	require.LessOrEqual(t, c.Size(), c.Capacity())
	require.Equal(t, c.Size(), c.KindSize(KindData)+c.KindSize(KindFilter)+c.KindSize(KindIndex))
	// A metadata block larger than one shard's part is cached.
	big := WrapObject(block(64<<10, 4), nil, 64<<10)
	c.SetKind(2, 0, big, KindIndex)
	big.Release()
	v, ok := c.GetKind(2, 0, KindIndex)
	require.True(t, ok, "a 128 KiB index block was not cached in a 512 KiB cache")
	v.Release()
	require.LessOrEqual(t, c.Size(), c.Capacity())
	c.EvictFile(1)
	c.EvictFile(2)
	require.Zero(t, c.Size())
	require.Zero(t, c.KindSize(KindFilter))
}

// TestCacheReserveShrinksCapacity checks that reserved bytes are evicted
// from the shards and that Size+Reserved stays within the capacity.
func TestCacheReserveShrinksCapacity(t *testing.T) {
	c := New(numShards * 16 << 10)
	for off := uint64(0); off < 1024; off++ {
		set(c, 1, off, 1<<10, 3)
	}
	require.Greater(t, c.Size(), c.Capacity()*3/4)
	require.True(t, c.Reserve(c.Capacity()/4))
	size, res := c.Usage()
	require.Equal(t, c.Capacity()/4, res)
	require.LessOrEqual(t, size+res, c.Capacity())
	for off := uint64(1024); off < 2048; off++ {
		set(c, 1, off, 1<<10, 3)
	}
	size, res = c.Usage()
	require.LessOrEqual(t, size+res, c.Capacity())
	require.False(t, c.Reserve(c.Capacity()/2), "reservations past half the capacity must be refused")
	c.Unreserve(c.Capacity() / 4)
	require.Zero(t, c.Reserved())
	c.Delete(1, 2047)
	_, ok := c.Get(1, 2047)
	require.False(t, ok)
	var nilCache *Cache
	require.False(t, nilCache.Reserve(1))
	nilCache.Delete(1, 1)
}

// TestCacheTryAcquireCached: a remembered index or filter Value is hit
// without the lock while cached, and refused once evicted.
func TestCacheTryAcquireCached(t *testing.T) {
	c := New(1 << 20)
	v := WrapObject(block(100, 1), "idx", 0)
	c.SetKind(3, 0, v, KindIndex)
	require.True(t, v.TryAcquireCached())
	v.Release()
	c.EvictFile(3)
	require.False(t, v.TryAcquireCached(), "evicted block hit")
	v.Release()
	require.False(t, v.TryAcquireCached(), "released block hit")
	d := Alloc(100)
	require.False(t, d.TryAcquireCached(), "pooled data block hit without the lock")
	d.Release()
}

// TestCachePeekCached: PeekCached answers as TryAcquireCached does, takes
// no reference, and marks the Value used.
func TestCachePeekCached(t *testing.T) {
	c := New(1 << 20)
	v := WrapObject(block(100, 1), "filter", 0)
	c.SetKind(3, 0, v, KindFilter)
	v.used.Store(false)
	refs := v.refs.Load()
	require.True(t, v.PeekCached())
	require.Equal(t, refs, v.refs.Load(), "PeekCached took a reference")
	require.True(t, v.used.Load())
	v.Release()
	c.EvictFile(3)
	require.False(t, v.PeekCached(), "evicted block peeked")
	d := Alloc(100)
	require.False(t, d.PeekCached(), "pooled data block peeked without the lock")
	d.Release()
}

// TestCacheRememberClearedOnEvict: the slot remembering a Value is cleared
// when the cache lets it go, and a Value remembered after its eviction is
// not kept.
func TestCacheRememberClearedOnEvict(t *testing.T) {
	c := New(1 << 20)
	v := WrapObject(block(100, 1), "f", 0)
	c.SetKind(4, 0, v, KindFilter)
	var slot atomic.Pointer[Value]
	v.Remember(&slot)
	require.Same(t, v, slot.Load())
	c.Delete(4, 0)
	require.Nil(t, slot.Load(), "evicted block still remembered")
	v.Remember(&slot)
	require.Nil(t, slot.Load(), "block remembered after its eviction")
	v.Release()
}
