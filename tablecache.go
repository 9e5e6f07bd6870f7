package sieve

import (
	"container/list"
	"fmt"
	"sync/atomic"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/cache"
	"github.com/sievedb/sieve/internal/lockrank"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/internal/percpu"
	"github.com/sievedb/sieve/sstable"
)

// tableCache keeps up to MaxOpenFiles table readers open, the least
// recently used evicted first. A reader in use is reference counted and
// closed only when its last user releases it, even if evicted meanwhile.
//
// The hot path takes no lock: an open table's entry is published in its
// FileMetadata (TableCache), and get takes a reference on it in the
// caller's processor's stripe (percpu.Ref), which fails once the entry is
// evicted, in which case it falls back to the locked path. Such hits do
// not move the entry in the LRU list; they mark it used, and eviction
// gives a used entry a second chance (CLOCK) instead.
type tableCache struct {
	db    *DB
	cache *cache.Cache // the block cache; nil when disabled

	// opens counts readers opened (tests check eviction happens).
	opens atomic.Int64

	mu      lockrank.Mutex // rank TableCache
	entries map[uint64]*tableEntry
	lru     list.List // of *tableEntry, most recent at the front
	closed  bool      // close ran: no table is opened again
}

type tableEntry struct {
	num   uint64
	cache *tableCache // the cache the entry belongs to (ReleaseIter)
	// refs counts the users; the cache's own reference is implicit until
	// eviction retires it (under mu). Taken under mu while the entry is
	// in entries (not retired), or by TryAcquire from a published entry.
	// When the retired entry's last user lets go, the reader is closed
	// (on a goroutine of its own: the retire happens under mu).
	refs  percpu.Ref
	used  atomic.Bool // hit since eviction last passed it (second chance)
	elem  *list.Element
	ready chan struct{}
	r     *sstable.Reader
	err   error
	// evicted and metas are guarded by tableCache.mu. metas are the
	// FileMetadata the entry is published in (a table can have several:
	// one per version edit that names it).
	evicted bool
	metas   []*manifest.FileMetadata
}

// ReleaseIter implements sstable.Releaser: a table iterator opened on the
// entry's reader gives back the reference its opener took.
func (e *tableEntry) ReleaseIter() { e.cache.release(e) }

// newTableEntry returns an entry for table num, held by the cache.
func (c *tableCache) newTableEntry(num uint64) *tableEntry {
	e := &tableEntry{num: num, cache: c, ready: make(chan struct{})}
	e.refs.Init(func() { go c.closeEntry(e) })
	return e
}

// markUsed gives e a second chance at the next eviction pass (CLOCK).
// Only a change writes: Gets on other cores keep sharing the line.
func (e *tableEntry) markUsed() {
	if !e.used.Load() {
		e.used.Store(true)
	}
}

func newTableCache(db *DB) *tableCache {
	c := &tableCache{db: db, entries: map[uint64]*tableEntry{}}
	c.mu.Init(lockrank.TableCache)
	if db.opts.BlockCacheSize > 0 {
		c.cache = cache.New(db.opts.BlockCacheSize)
	}
	return c
}

// get returns the open reader of a table with a reference; the caller must
// call release.
func (c *tableCache) get(meta *manifest.FileMetadata) (*tableEntry, error) {
	return c.getAt(percpu.Index(), meta)
}

// getAt is get taking the reference on stripe p (percpu.Index); give it
// back with releaseAt(p, e).
func (c *tableCache) getAt(p int, meta *manifest.FileMetadata) (*tableEntry, error) {
	if e, _ := meta.TableCache.Load().(*tableEntry); e != nil && e.refs.TryAcquire(p) {
		e.markUsed()
		return e, nil
	}
	c.mu.Lock()
	e, ok := c.entries[meta.FileNum]
	if ok {
		e.refs.Acquire(p)
		c.lru.MoveToFront(e.elem)
		c.mu.Unlock()
		<-e.ready
		if e.err != nil {
			c.release(e)
			return nil, e.err
		}
		c.publish(e, meta)
		return e, nil
	}
	if c.closed {
		// A read that loaded its read state before DB.Close: an entry
		// opened now would never be closed.
		c.mu.Unlock()
		return nil, ErrClosed
	}
	e = c.newTableEntry(meta.FileNum)
	e.refs.Acquire(p) // the opener's
	e.elem = c.lru.PushFront(e)
	c.entries[meta.FileNum] = e
	c.evictLocked()
	c.mu.Unlock()

	c.opens.Add(1)
	e.r, e.err = c.open(meta)
	close(e.ready)
	if e.err != nil {
		c.mu.Lock()
		c.removeLocked(e)
		c.mu.Unlock()
		c.release(e)
		return nil, e.err
	}
	c.publish(e, meta)
	return e, nil
}

// publish makes e, open, the entry get finds in meta without the lock,
// unless it is already or e was evicted meanwhile.
func (c *tableCache) publish(e *tableEntry, meta *manifest.FileMetadata) {
	if cur, _ := meta.TableCache.Load().(*tableEntry); cur == e {
		return
	}
	c.mu.Lock()
	if !e.evicted {
		meta.TableCache.Store(e)
		e.metas = append(e.metas, meta)
	}
	c.mu.Unlock()
}

func (c *tableCache) open(meta *manifest.FileMetadata) (*sstable.Reader, error) {
	name := base.MakeFilename(c.db.dirname, base.FileTypeTable, meta.FileNum)
	f, err := c.db.fs.Open(name)
	if err != nil {
		return nil, fmt.Errorf("sieve: opening table %s named by the manifest: %w", base.FileName(base.FileTypeTable, meta.FileNum), err)
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, err
	}
	if uint64(size) != meta.Size {
		f.Close()
		return nil, base.CorruptionErrorf("table %s: %d bytes on disk, manifest records %d", base.FileName(base.FileTypeTable, meta.FileNum), size, meta.Size)
	}
	r, err := sstable.NewReader(f, size, sstable.ReaderOptions{
		FileNum: meta.FileNum, Cache: c.cache, Policies: c.db.cfs.policies(),
		CacheIndexAndFilter: c.db.opts.CacheIndexAndFilterBlocks,
	})
	if err != nil {
		f.Close()
		return nil, err // it names the table (ReaderOptions.FileNum)
	}
	if r.FilterState() == sstable.FilterUnknown {
		c.db.metrics.filterUnknown.Add(1)
		c.db.opts.Logger.Warn("table filter of unknown type; reading without it", "table", meta.FileNum, "err", r.FilterError())
	}
	return r, nil
}

// evictLocked closes least recently used readers beyond MaxOpenFiles; an
// entry used since it was last passed moves to the front instead, once.
// REQUIRES: c.mu held.
func (c *tableCache) evictLocked() {
	for chances := len(c.entries); len(c.entries) > c.db.opts.MaxOpenFiles; chances-- {
		back := c.lru.Back()
		if back == nil {
			return
		}
		e := back.Value.(*tableEntry)
		if chances > 0 && e.used.Swap(false) {
			c.lru.MoveToFront(back)
			continue
		}
		c.removeLocked(e)
	}
}

// removeLocked drops the cache's reference to e and unpublishes it.
// REQUIRES: c.mu held.
func (c *tableCache) removeLocked(e *tableEntry) {
	if e.evicted {
		return
	}
	e.evicted = true
	c.lru.Remove(e.elem)
	delete(c.entries, e.num)
	for _, m := range e.metas {
		m.TableCache.CompareAndSwap(e, (*tableEntry)(nil))
	}
	e.metas = nil
	e.refs.Retire()
}

func (c *tableCache) closeEntry(e *tableEntry) {
	<-e.ready
	if e.r != nil {
		e.r.Close()
	}
}

// release drops a reference taken by get.
func (c *tableCache) release(e *tableEntry) { e.refs.Release(percpu.Index()) }

// releaseAt drops a reference taken by getAt(p).
func (c *tableCache) releaseAt(p int, e *tableEntry) { e.refs.Release(p) }

// forget drops a table that is being deleted, and its cached blocks, from
// the cache (unlike evictLocked, which trims the least recently used
// readers to MaxOpenFiles).
func (c *tableCache) forget(num uint64) {
	c.mu.Lock()
	if e, ok := c.entries[num]; ok {
		c.removeLocked(e)
	}
	c.mu.Unlock()
	if c.cache != nil {
		c.cache.EvictFile(num)
	}
}

// close closes every reader not in use.
func (c *tableCache) close() {
	c.mu.Lock()
	c.closed = true
	for _, e := range c.entries {
		c.removeLocked(e)
	}
	c.mu.Unlock()
}

// filterStats sums the filter bytes and filtered keys of those of files
// whose tables are open (a table not open holds no filter memory).
func (c *tableCache) filterStats(files []*manifest.FileMetadata) levelFilterStats {
	var st levelFilterStats
	policyKeys := map[string]int64{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range files {
		e := c.entries[f.FileNum]
		if e == nil {
			continue
		}
		select {
		case <-e.ready:
		default:
			continue
		}
		if e.r == nil || e.r.FilterState() != sstable.FilterLoaded {
			continue
		}
		props := e.r.Properties()
		keys := int64(props.FilterKeys + props.FilterPrefixes)
		st.bytes += int64(e.r.FilterSize())
		st.keys += keys
		policyKeys[props.FilterPolicy] += keys
		if fpr, ok := e.r.FilterExpectedFPR(); ok {
			st.expectedSum += fpr * float64(keys)
			st.expectedKeys += keys
		}
	}
	for name, k := range policyKeys {
		if k > policyKeys[st.policy] || (k == policyKeys[st.policy] && name < st.policy) || st.policy == "" {
			st.policy = name
		}
	}
	return st
}

// levelFilterStats describe the filters of a level's open tables:
// their bytes and keys, the sum over the tables whose expected
// false-positive rate is known of that rate times their keys (and those
// keys), and the policy holding the most keys.
type levelFilterStats struct {
	bytes, keys, expectedKeys int64
	expectedSum               float64
	policy                    string
}

// tableMemory is the index and filter memory of open tables: resident
// (outside the block cache's budget) and pinned (reserved in it).
type tableMemory struct {
	residentIndex, residentFilter, pinnedIndex, pinnedFilter int64
	indexPacks                                               int64
}

// memory sums the index and filter blocks held by open tables.
func (c *tableCache) memory() tableMemory {
	c.mu.Lock()
	defer c.mu.Unlock()
	var m tableMemory
	for _, e := range c.entries {
		select {
		case <-e.ready:
		default:
			continue
		}
		if e.r != nil {
			i, f := e.r.ResidentSize()
			m.residentIndex += int64(i)
			m.residentFilter += int64(f)
			pi, pf := e.r.PinnedSize()
			m.pinnedIndex += pi
			m.pinnedFilter += pf
			m.indexPacks += e.r.IndexPacks()
		}
	}
	return m
}
