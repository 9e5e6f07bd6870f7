package cache

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Value is the memory of one block, shared by the cache and the readers
// using it and counted by reference: Alloc and Wrap return a Value with one
// reference (the caller's), Cache.Get adds one for its caller, Cache.Set
// adds one for the cache, and each holder gives its reference back with
// Release exactly once. When the last reference goes, a Value that came
// from Alloc returns its memory to a pool for the next Alloc: a steady
// stream of block-cache misses then allocates nothing, which keeps the
// garbage collector (and the page faults of a growing heap) off the read
// path.
//
// A holder may also keep a reference forever (never call Release); the
// Value then never returns to the pool and the garbage collector frees it
// once unreachable. That is always safe; calling Release twice, or using
// Bytes after Release, is not.
type Value struct {
	buf   []byte
	refs  atomic.Int32
	class int8 // size class of a pooled buffer; -1 when not pooled
	// obj is a decoded form of buf (a table's index entries, a filter
	// reader) that lives and dies with it; extra is its memory, charged to
	// the cache on top of len(buf).
	obj   any
	extra int64
	// cached is set while the meta pool holds the Value; used is set by
	// Touch and cleared when eviction gives it a second chance (CLOCK).
	cached, used atomic.Bool
	// home is the slot a holder remembers the Value in (Remember); the
	// cache clears it when it lets the Value go, so that the slot does not
	// keep an evicted block alive.
	home atomic.Pointer[atomic.Pointer[Value]]
}

// Remember stores v, an index or filter Value from WrapObject, in slot for
// later TryAcquireCached calls. Once the cache lets v go it sets slot back
// to nil (if slot still holds v): a remembered block is never kept alive by
// the slot, so evicted metadata costs no memory.
func (v *Value) Remember(slot *atomic.Pointer[Value]) {
	if slot.Load() == v {
		return
	}
	slot.Store(v)
	v.home.Store(slot)
	// Either the cache's forget sees home, or this sees the cleared flag.
	if !v.cached.Load() {
		slot.CompareAndSwap(v, nil)
	}
}

// forget marks v no longer cached and clears the slot remembering it.
func (v *Value) forget() {
	v.cached.Store(false)
	if h := v.home.Load(); h != nil {
		h.CompareAndSwap(v, nil)
	}
}

// Size classes: pooled buffers have capacities of 1 KiB multiples up to
// maxPooled; larger blocks are allocated and left to the garbage collector.
const (
	classSize = 1 << 10
	maxPooled = 64 << 10
)

var pools [maxPooled/classSize + 1]sync.Pool

// Alloc returns a Value of n bytes (contents undefined) holding one
// reference.
func Alloc(n int) *Value {
	if n <= 0 || n > maxPooled {
		v := &Value{buf: make([]byte, n), class: -1}
		v.refs.Store(1)
		return v
	}
	c := (n + classSize - 1) / classSize
	v, _ := pools[c].Get().(*Value)
	if v == nil {
		v = &Value{buf: make([]byte, c*classSize), class: int8(c)}
	}
	v.buf = v.buf[:n]
	v.refs.Store(1)
	return v
}

// Wrap returns a Value over b holding one reference. b is never pooled.
func Wrap(b []byte) *Value {
	v := &Value{buf: b, class: -1}
	v.refs.Store(1)
	return v
}

// WrapObject is Wrap for a block that comes with a decoded form obj of
// extra bytes (beyond b) that readers use instead of the bytes: the cache
// charges len(b)+extra for it. b and obj are never pooled.
func WrapObject(b []byte, obj any, extra int) *Value {
	v := Wrap(b)
	v.obj, v.extra = obj, int64(max(extra, 0))
	return v
}

// PeekCached reports whether an index or filter Value (one from
// WrapObject, never pooled) that a holder remembered is still cached, and
// marks it used, without taking a reference: for a caller that reads its
// object briefly and keeps nothing of it. Memory-safe for the same
// reason as TryAcquireCached (an unpooled Value and its object are never
// reused, the garbage collector keeps them while in use); the cache may
// evict it meanwhile, which only means the read was of a block just let
// go.
func (v *Value) PeekCached() bool {
	if v.class >= 0 || !v.cached.Load() {
		return false
	}
	if !v.used.Load() {
		v.used.Store(true)
	}
	return true
}

// TryAcquireCached takes a reference on an index or filter Value (one from
// WrapObject, never pooled) that a holder remembered, if the cache still
// holds it, and marks it used: a hit without the cache's lock. It is
// memory-safe however old the pointer: an unpooled Value is never reused.
func (v *Value) TryAcquireCached() bool {
	if v.class >= 0 || !v.cached.Load() {
		return false
	}
	if !v.tryAcquire() {
		return false
	}
	if !v.used.Load() {
		v.used.Store(true)
	}
	return true
}

// Object returns the decoded form given to WrapObject, or nil.
func (v *Value) Object() any { return v.obj }

// Charge returns what the cache charges for v: its length plus the
// memory of its decoded form.
func (v *Value) Charge() int64 { return int64(len(v.buf)) + v.extra }

// Bytes returns the block's memory, valid while the caller holds its
// reference.
func (v *Value) Bytes() []byte { return v.buf }

// acquire adds a reference. REQUIRES: the caller holds one, or the shard
// lock of a cache holding one.
func (v *Value) acquire() { v.refs.Add(1) }

// tryAcquire adds a reference unless none is left (the Value is free, or
// back in its pool). A pooled Value may have been taken again by Alloc
// for another block: the caller must then find out that it holds the
// wrong block, and Release it, without reading it (see Cache.tryHit).
func (v *Value) tryAcquire() bool {
	for {
		n := v.refs.Load()
		if n <= 0 {
			return false
		}
		if v.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Release gives back one reference.
func (v *Value) Release() {
	switch n := v.refs.Add(-1); {
	case n > 0:
	case n == 0:
		if v.class > 0 {
			if poison {
				b := v.buf[:cap(v.buf)]
				for i := range b {
					b[i] = 0xdb
				}
			}
			pools[v.class].Put(v)
		}
	default:
		panic(fmt.Sprintf("cache: Value released more often than acquired (refs %d)", n))
	}
}
