package main

import (
	"sync"

	"github.com/sievedb/sieve/sketchcol"
)

// bitCache holds whole pages (4096 bytes) of paged strings that SETBIT,
// GETBIT and BITFIELD read, so that a run of SETBITs on one page reads it
// once. Entries are keyed by key, generation and page; they are read and
// changed only under the key's lock (mu guards the maps alone), and a
// writer applies its runs to a cached page once its batch is applied.
type bitCache struct {
	mu    sync.Mutex
	m     map[string]*bitEntry
	used  int64 // bytes of pages held
	limit int64
}

type bitEntry struct {
	gen   uint64
	pages map[uint32][]byte
}

// size returns the bytes of the pages held.
func (c *bitCache) size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

// defaultBitCacheSize bounds the cache: a 100M-bit bitmap (3052 pages)
// five times over.
const defaultBitCacheSize = 64 << 20

func (c *bitCache) get(key []byte, gen uint64, p uint32) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[string(key)]
	if e == nil || e.gen != gen {
		return nil, false
	}
	b, ok := e.pages[p]
	return b, ok
}

func (c *bitCache) put(key []byte, gen uint64, p uint32, page []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.limit <= 0 {
		return
	}
	if c.m == nil {
		c.m = map[string]*bitEntry{}
	}
	e := c.m[string(key)]
	if e == nil || e.gen != gen {
		if e != nil {
			c.used -= int64(len(e.pages)) * strPage
		}
		e = &bitEntry{gen: gen, pages: map[uint32][]byte{}}
		c.m[string(key)] = e
	}
	if _, ok := e.pages[p]; !ok {
		c.used += strPage
	}
	e.pages[p] = page
	c.evict(e)
}

// evict drops pages (other than those of keep, if it can) until the cache
// is within its limit. REQUIRES: mu.
func (c *bitCache) evict(keep *bitEntry) {
	for k, e := range c.m {
		if c.used <= c.limit {
			return
		}
		for p := range e.pages {
			if c.used <= c.limit || (e == keep && len(e.pages) == 1) {
				break
			}
			delete(e.pages, p)
			c.used -= strPage
		}
		if len(e.pages) == 0 {
			delete(c.m, k)
		}
	}
}

// apply applies runs to page p if it is cached for gen.
func (c *bitCache) apply(key []byte, gen uint64, p uint32, runs []sketchcol.StrRun) {
	if b, ok := c.get(key, gen, p); ok {
		sketchcol.ApplyStrRuns(b, runs) // within its 4096 bytes: in place
	}
}

// drop forgets key's pages.
func (c *bitCache) drop(key []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[string(key)]; e != nil {
		c.used -= int64(len(e.pages)) * strPage
		delete(c.m, string(key))
	}
}

// clear forgets every page (FLUSHALL, DEBUG RELOAD).
func (c *bitCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m, c.used = nil, 0
}
