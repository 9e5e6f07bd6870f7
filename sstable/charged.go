package sstable

import (
	"errors"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/cache"
)

// This file holds the charged mode (ReaderOptions.CacheIndexAndFilter):
// the index and filter blocks live in the block cache as Values whose
// decoded forms (the index entries, the filter reader) come with them, or
// pinned by the Reader with their bytes reserved in the cache.

// tableIndex is the decoded form of a cached index block.
type tableIndex struct{ entries []indexEntry }

// filterObj is the decoded form of a cached filter block: a concrete type,
// so that a hit asserts it with one comparison, and the filter's
// HashReader found once.
type filterObj struct {
	fr filter.Reader
	hr filter.HashReader // nil when fr cannot take a hash
}

func newFilterObj(fr filter.Reader) *filterObj {
	hr, _ := fr.(filter.HashReader)
	return &filterObj{fr: fr, hr: hr}
}

// may probes fo (nil: no filter, true) for ukey, whose hash is h.
func (fo *filterObj) may(ukey []byte, h uint64) bool {
	switch {
	case fo == nil:
		return true
	case fo.hr != nil:
		return fo.hr.MayContainHash(h)
	}
	return fo.fr.MayContain(ukey)
}

// pinnedBlocks are the index and filter a Reader holds (one reference
// each) after Pin; charge is what it reserved in the cache.
type pinnedBlocks struct {
	index       []indexEntry
	filter      *filterObj
	indexVal    *cache.Value
	filterVal   *cache.Value // nil without a usable filter
	indexBytes  int64
	filterBytes int64
}

// cacheIndex inserts the decoded index block data into the cache and
// returns it with a reference for the caller.
func (r *Reader) cacheIndex(data []byte, entries []indexEntry) *cache.Value {
	v := cache.WrapObject(data, &tableIndex{entries}, indexEntrySize*len(entries))
	r.opts.Cache.SetKind(r.opts.FileNum, r.footer.index.offset, v, cache.KindIndex)
	return v
}

// cacheFilter inserts the decoded filter block data into the cache and
// returns it with a reference for the caller.
func (r *Reader) cacheFilter(data []byte, fr filter.Reader) *cache.Value {
	v := cache.WrapObject(data, newFilterObj(fr), 0)
	r.opts.Cache.SetKind(r.opts.FileNum, r.metaHandles["sieve.filter"].offset, v, cache.KindFilter)
	return v
}

// acquireIndex returns the table's index entries and the Value holding
// them, whose reference the caller must release (nil when the index is
// resident or pinned: the Reader holds those until Close, which no reader
// in use races). A charged index found evicted is read again.
func (r *Reader) acquireIndex(stats *ReadStats) ([]indexEntry, *cache.Value, error) {
	if !r.charged {
		return r.index, nil, nil
	}
	if p := r.pinned.Load(); p != nil {
		return p.index, nil, nil
	}
	if v := r.hotIndex.Load(); v != nil && v.TryAcquireCached() {
		stats.addIndex(true)
		return v.Object().(*tableIndex).entries, v, nil
	}
	if v, ok := r.opts.Cache.GetKind(r.opts.FileNum, r.footer.index.offset, cache.KindIndex); ok {
		if ti, ok := v.Object().(*tableIndex); ok {
			stats.addIndex(true)
			v.Remember(&r.hotIndex)
			return ti.entries, v, nil
		}
		v.Release()
	}
	stats.addIndex(false)
	data, ctx, err := r.readBlockCtx(r.footer.index, "index")
	if err != nil {
		return nil, nil, err
	}
	entries, err := r.decodeIndex(data, ctx)
	if err != nil {
		return nil, nil, err
	}
	v := r.cacheIndex(data, entries)
	v.Remember(&r.hotIndex)
	return entries, v, nil
}

// acquireFilter returns the table's filter (nil: none usable) and the
// Value to release, as acquireIndex. A charged filter block that cannot be
// read (an I/O error) or decoded is reported as none (the lookup reads the
// data: fail open) and counted in stats; a corrupt one (checksum) is
// ErrCorruption.
func (r *Reader) acquireFilter(stats *ReadStats) (*filterObj, *cache.Value, error) {
	if !r.charged || r.filterState != FilterLoaded {
		return r.residentFilter, nil, nil
	}
	if p := r.pinned.Load(); p != nil {
		return p.filter, nil, nil
	}
	if v := r.hotFilter.Load(); v != nil && v.TryAcquireCached() {
		stats.addFilter(true)
		return v.Object().(*filterObj), v, nil
	}
	h := r.metaHandles["sieve.filter"]
	if v, ok := r.opts.Cache.GetKind(r.opts.FileNum, h.offset, cache.KindFilter); ok {
		if fr, ok := v.Object().(*filterObj); ok {
			stats.addFilter(true)
			v.Remember(&r.hotFilter)
			return fr, v, nil
		}
		v.Release()
	}
	stats.addFilter(false)
	data, err := r.readBlock(h, "filter")
	if err != nil {
		if errors.Is(err, base.ErrCorruption) {
			return nil, nil, err
		}
		stats.addFailOpen()
		return nil, nil, nil
	}
	fr, err := decodeFilter(data, r.props.FilterPolicy, r.opts.Policies)
	if err != nil || fr == nil {
		stats.addFailOpen()
		return nil, nil, nil
	}
	v := r.cacheFilter(data, fr)
	v.Remember(&r.hotFilter)
	return v.Object().(*filterObj), v, nil
}

// ProbeFilter probes the table's filter for ukey, whose filter.HashKey is
// h, holding a reference on a charged filter block for the probe. It
// answers true when the table has no usable filter or (charged) its filter
// block cannot be loaded; the error is a corrupt filter block's. It adds
// the filter block's cache hit or miss to stats when non-nil.
func (r *Reader) ProbeFilter(ukey []byte, h uint64, stats *ReadStats) (bool, error) {
	if r.filterTop != nil {
		return r.probePartitioned(ukey, h, stats)
	}
	if !r.charged {
		return r.residentFilter.may(ukey, h), nil
	}
	if r.filterState == FilterLoaded && r.pinned.Load() == nil {
		// A probe keeps nothing of the filter: a cached one needs no
		// reference (PeekCached).
		if v := r.hotFilter.Load(); v != nil && v.PeekCached() {
			stats.addFilter(true)
			return v.Object().(*filterObj).may(ukey, h), nil
		}
	}
	fo, v, err := r.acquireFilter(stats)
	if err != nil {
		return true, err
	}
	ok := fo.may(ukey, h)
	if v != nil {
		v.Release()
	}
	return ok, nil
}

// Pin holds a charged table's index and filter blocks outside the cache
// until Close, their bytes reserved in the cache (which evicts to make
// room), so lookups stop going through the cache for them. Only the first
// call does anything; it pins nothing when the cache refuses the
// reservation (at most half its capacity is pinned) or the blocks cannot
// be read, and returns a corrupt block's error.
//
// A partitioned index or filter is not pinned: its top-level block is
// resident anyway, and its partitions stay in the cache.
func (r *Reader) Pin() error {
	if !r.charged || r.pinTried.Swap(true) || r.indexTop != nil || r.filterTop != nil {
		return nil
	}
	r.pinMu.Lock()
	defer r.pinMu.Unlock()
	if r.closed.Load() {
		return nil
	}
	var stats ReadStats
	entries, iv, err := r.acquireIndex(&stats)
	if err != nil {
		return err
	}
	fr, fv, err := r.acquireFilter(&stats)
	if err != nil || (r.filterState == FilterLoaded && fv == nil) {
		iv.Release()
		return err
	}
	p := &pinnedBlocks{index: entries, filter: fr, indexVal: iv, filterVal: fv, indexBytes: iv.Charge()}
	if fv != nil {
		p.filterBytes = fv.Charge()
	}
	// Out of the cache first, then reserved: never counted twice.
	c, fh := r.opts.Cache, r.metaHandles["sieve.filter"]
	c.Delete(r.opts.FileNum, r.footer.index.offset)
	c.Delete(r.opts.FileNum, fh.offset)
	if !c.Reserve(p.indexBytes + p.filterBytes) {
		c.SetKind(r.opts.FileNum, r.footer.index.offset, iv, cache.KindIndex)
		iv.Release()
		if fv != nil {
			c.SetKind(r.opts.FileNum, fh.offset, fv, cache.KindFilter)
			fv.Release()
		}
		return nil
	}
	r.pinned.Store(p)
	// A lookup that missed meanwhile may have cached them again.
	c.Delete(r.opts.FileNum, r.footer.index.offset)
	c.Delete(r.opts.FileNum, fh.offset)
	return nil
}

// unpin releases what Pin holds and its reservation (at Close).
func (r *Reader) unpin() {
	r.pinMu.Lock()
	defer r.pinMu.Unlock()
	p := r.pinned.Swap(nil)
	if p == nil {
		return
	}
	r.opts.Cache.Unreserve(p.indexBytes + p.filterBytes)
	p.indexVal.Release()
	if p.filterVal != nil {
		p.filterVal.Release()
	}
}

// Pinned reports whether Pin holds the table's index and filter.
func (r *Reader) Pinned() bool { return r.pinned.Load() != nil }

// PinTried reports whether Pin was called.
func (r *Reader) PinTried() bool { return r.pinTried.Load() }

// PinnedSize returns the bytes of the index (with its decoded entries) and
// filter blocks that Pin holds, reserved in the cache.
func (r *Reader) PinnedSize() (index, filter int64) {
	if p := r.pinned.Load(); p != nil {
		return p.indexBytes, p.filterBytes
	}
	return 0, 0
}

// Charged reports whether the index and filter blocks go through the cache.
func (r *Reader) Charged() bool { return r.charged }

func (s *ReadStats) addIndex(hit bool) {
	if s == nil {
		return
	}
	if hit {
		s.IndexHits++
	} else {
		s.IndexMisses++
	}
}

func (s *ReadStats) addFilter(hit bool) {
	if s == nil {
		return
	}
	if hit {
		s.FilterHits++
	} else {
		s.FilterMisses++
	}
}

func (s *ReadStats) addFailOpen() {
	if s != nil {
		s.FilterFailOpen++
	}
}
