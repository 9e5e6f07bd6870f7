package sstable

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/cache"
	"github.com/sievedb/sieve/internal/prefetch"
	"github.com/sievedb/sieve/internal/rangedel"
)

// ReadableFile is what a Reader reads from; vfs.File satisfies it. ReadAt
// must be safe for concurrent use.
type ReadableFile interface {
	io.ReaderAt
	io.Closer
}

// ReaderOptions configure a Reader.
type ReaderOptions struct {
	// FileNum names the table in errors ("table 000012.sst: ...": callers
	// need not name it again) and keys its blocks in Cache. It must be
	// unique among the tables that share a Cache: two tables under one
	// number would be served each other's blocks. With 0 the errors name
	// no table, for a caller that names the file by its path.
	FileNum uint64
	// Cache holds data blocks; nil reads every data block from the file.
	Cache *cache.Cache
	// CacheIndexAndFilter keeps the index and filter blocks in Cache
	// (high priority, charged with their decoded forms) instead of
	// resident in the Reader: a lookup takes a reference on them for its
	// duration, and one that finds them evicted reads them again. Pin
	// holds them outside the cache, charged to its reservations. Ignored
	// when Cache is nil.
	CacheIndexAndFilter bool
	// Policies decode the filter block of a table whose recorded policy
	// name matches one of theirs; other filter blocks are decoded by their
	// type byte (filter.OpenBlock).
	Policies []filter.Policy
}

// FilterState tells whether a Reader has a usable filter.
type FilterState uint8

const (
	// FilterNone: the table was written without a filter.
	FilterNone FilterState = iota
	// FilterLoaded: the filter is resident and MayContain consults it.
	FilterLoaded
	// FilterUnknown: the table has a filter of a type this build cannot
	// decode; it is read without one (MayContain always answers true).
	FilterUnknown
)

var filterStateNames = [...]string{FilterNone: "none", FilterLoaded: "loaded", FilterUnknown: "unknown-type"}

// String returns the state's name ("none", "loaded", "unknown-type").
func (s FilterState) String() string {
	return base.EnumName(s, filterStateNames[:], "FilterState")
}

// indexEntry is one decoded index entry: a separator and a data block.
type indexEntry struct {
	sepUser    []byte // aliases Reader.indexData
	sepTrailer uint64
	h          blockHandle
}

// Reader reads one table. It is safe for concurrent use; see the package
// documentation.
type Reader struct {
	f       ReadableFile
	size    int64
	opts    ReaderOptions
	footer  footer
	props   *Properties
	dataEnd uint64 // data blocks lie in [0, dataEnd)

	metaHandles map[string]blockHandle
	// indexData and index are the resident index; both nil when charged
	// (the index is then in the cache or pinned: acquireIndex).
	indexData []byte
	index     []indexEntry

	filterState FilterState
	filterData  []byte        // resident filter block; nil when charged
	filter      filter.Reader // resident filter; nil when charged
	// residentFilter is filter with its HashReader (nil without one).
	residentFilter *filterObj
	filterErr      error
	filterSize     int // length of the filter block (partitions: their total)
	// filterExpected is the false-positive rate the filter block's
	// geometry predicts (filter.BlockExpectedFPR); -1 when unknown (no
	// filter, or a partitioned one).
	filterExpected float64

	// A partitioned index or filter (TableFormatV3): the top-level
	// entries, resident, and the blocks they alias. indexTop is nil when
	// the index is whole or was flattened into index (not charged);
	// filterParts are the resident partitions (not charged). indexBytes
	// and filterBytes count the resident partitions' contents.
	indexTop                    []topEntry
	indexParts                  []topEntry // the top-level index, kept when flattened
	filterTop                   []topEntry
	indexTopData, filterTopData []byte
	filterParts                 []*filterObj
	indexBytes, filterBytes     int
	// indexHot and filterHot remember each charged partition's Value
	// (as hotIndex and hotFilter do for whole blocks): a hit without the
	// cache's lock.
	indexHot, filterHot []atomic.Pointer[cache.Value]
	// indexPacks counts the index partitions packed (packedIndex).
	indexPacks atomic.Int64
	// indexSearch and filterSearch speed up the searches of indexTop and
	// filterTop.
	indexSearch, filterSearch topSearch
	// indexWords speeds up the searches of the resident whole index.
	indexWords topSearch
	// prefixHashes: the filter's reader takes hashes, so prefix entries
	// can be probed (ProbePrefix).
	prefixHashes bool

	// rangeDels are the table's range tombstones (V2), resident; nil
	// without any.
	rangeDels *rangedel.List

	// charged: the index and filter blocks go through the cache
	// (ReaderOptions.CacheIndexAndFilter). pinned holds them when Pin has
	// pinned them; pinTried is set by the first Pin.
	charged  bool
	pinned   atomic.Pointer[pinnedBlocks]
	pinTried atomic.Bool
	pinMu    sync.Mutex
	// hotIndex and hotFilter remember the Values last found or cached,
	// for a hit without the cache's lock (cache.Value.TryAcquireCached);
	// the cache clears them when it lets a block go (Value.Remember), so
	// they do not keep an evicted block alive.
	hotIndex, hotFilter atomic.Pointer[cache.Value]

	getPool sync.Pool // *blockIter for Get
	closed  atomic.Bool

	// mapped is the whole file when it could be memory-mapped; unmap
	// releases it at Close.
	mapped []byte
	unmap  func() error
}

var errReaderClosed = errors.New("sstable: reader closed")

// NewReader opens the table held by f, whose length is size. It reads and
// checks the footer, metaindex, properties, index and filter blocks; the
// index and filter stay resident, or go to the cache with
// ReaderOptions.CacheIndexAndFilter. Its errors name the table (see
// ReaderOptions.FileNum). The Reader owns f from then on and closes it in
// Close (NewReader closes nothing on error).
func NewReader(f ReadableFile, size int64, o ReaderOptions) (*Reader, error) {
	r := &Reader{f: f, size: size, opts: o, charged: o.CacheIndexAndFilter && o.Cache != nil, filterExpected: -1}
	r.tryMap()
	for _, step := range []func() error{r.readFooter, r.readMetaindex, r.readProperties, r.readIndex, r.readFilter, r.readRangeDels} {
		if err := step(); err != nil {
			r.releaseMap()
			return nil, err
		}
	}
	return r, nil
}

// releaseMap drops the mapping of a reader that failed to open.
func (r *Reader) releaseMap() {
	if r.unmap != nil {
		r.unmap()
		r.mapped, r.unmap = nil, nil
	}
}

func (r *Reader) readFooter() error {
	if r.size < footerLen {
		return blockCtx(r.opts.FileNum, "footer", 0).corruptf("file of %d bytes is shorter than the %d-byte footer", r.size, footerLen)
	}
	off := uint64(r.size - footerLen)
	ctx := blockCtx(r.opts.FileNum, "footer", off)
	buf := make([]byte, footerLen)
	if err := r.readAt(buf, off, ctx); err != nil {
		return err
	}
	ft, err := decodeFooter(buf)
	if err != nil {
		return ctx.corrupt(err)
	}
	for _, h := range []blockHandle{ft.metaindex, ft.index} {
		if end, ok := h.end(); !ok || end > off {
			return ctx.corruptf("handle %s points past the footer at %d", h, off)
		}
	}
	r.footer = ft
	return nil
}

// readAt reads exactly len(buf) bytes at off; a short read is corruption
// (the file is truncated), other errors are returned as I/O errors.
func (r *Reader) readAt(buf []byte, off uint64, ctx errCtx) error {
	if r.closed.Load() {
		return errReaderClosed
	}
	n, err := r.f.ReadAt(buf, int64(off))
	if n == len(buf) {
		return nil
	}
	if err == nil || err == io.EOF || err == io.ErrUnexpectedEOF {
		return ctx.corruptf("short read: %d of %d bytes (truncated file?)", n, len(buf))
	}
	return fmt.Errorf("sstable: %sreading %s block at offset %d: %w", tableName(ctx.fileNum), ctx.kind, ctx.offset, err)
}

// readBlock reads the block at h from the file, verifies its checksum and
// returns its decompressed contents, which the caller owns.
func (r *Reader) readBlock(h blockHandle, kind string) ([]byte, error) {
	v, err := r.loadBlock(h, kind, false)
	if err != nil {
		return nil, err
	}
	return v.Bytes(), nil
}

// loadBlock is readBlock returning the contents as a cache.Value holding
// one reference for the caller. With pooled, the memory comes from
// cache.Alloc and returns to its pool when the last reference is released
// (data blocks); otherwise it is ordinary garbage-collected memory.
func (r *Reader) loadBlock(h blockHandle, kind string, pooled bool) (*cache.Value, error) {
	return r.loadBlockVia(h, kind, pooled, nil)
}

// loadBlockVia is loadBlock reading the stored block through ra, a
// compaction's readahead window, when ra is not nil (instead of the
// memory map or a read of the block alone).
func (r *Reader) loadBlockVia(h blockHandle, kind string, pooled bool, ra *readahead) (*cache.Value, error) {
	ctx := blockCtx(r.opts.FileNum, kind, h.offset)
	end, ok := h.end()
	if !ok || end > uint64(r.size) {
		return nil, ctx.corruptf("block of %d bytes runs past the end of the %d-byte file", h.length, r.size)
	}
	if ra != nil {
		stored, err := r.readAhead(ra, h.offset, end, ctx)
		if err != nil {
			return nil, err
		}
		return decodeStored(stored, ctx, pooled)
	}
	if r.mapped != nil {
		if r.closed.Load() {
			return nil, errReaderClosed
		}
		stored := r.mapped[h.offset:end]
		// The stored block is usually in the page cache but in no CPU
		// cache; ask for all its lines at once so the checksum pass
		// does not wait on them one by one.
		prefetch.Read(stored[:min(len(stored), prefetchMax)])
		return decodeStored(stored, ctx, pooled)
	}
	buf, p := getReadBuf(int(h.length + blockTrailerLen))
	defer putReadBuf(p)
	if err := r.readAt(buf, h.offset, ctx); err != nil {
		return nil, err
	}
	return decodeStored(buf, ctx, pooled)
}

// decodeStored verifies a stored block (contents, type byte, checksum) and
// decompresses it into new memory (see loadBlock for pooled).
func decodeStored(stored []byte, ctx errCtx, pooled bool) (*cache.Value, error) {
	n := len(stored) - blockTrailerLen
	t := blockType(stored[n])
	size, sizeErr := decodedLen(t, stored[:n:n])
	var v *cache.Value
	if sizeErr == nil && pooled && size <= earlyAllocMax {
		// A small pooled destination is taken from the (not yet
		// verified) header so that its recycled memory, last touched when
		// the cache evicted it, is fetched while the checksum runs. A
		// larger or unpooled one waits for the checksum: a corrupt header
		// must not cost a large allocation.
		v = cache.Alloc(size)
		prefetch.Write(v.Bytes())
	}
	if got, want := binary.LittleEndian.Uint32(stored[n+1:]), blockChecksum(stored[:n+1]); got != want {
		if v != nil {
			v.Release()
		}
		return nil, ctx.corruptf("checksum mismatch (stored %#08x, computed %#08x)", got, want)
	}
	if sizeErr != nil {
		return nil, ctx.corrupt(sizeErr)
	}
	if v == nil {
		if pooled {
			v = cache.Alloc(size)
		} else {
			v = cache.Wrap(make([]byte, size))
		}
	}
	if err := decompressInto(t, stored[:n:n], v.Bytes()); err != nil {
		v.Release()
		return nil, ctx.corrupt(err)
	}
	return v, nil
}

// earlyAllocMax bounds the destination decodeStored takes before the
// checksum has vouched for the header that sizes it (data blocks are a few
// KiB).
const earlyAllocMax = 64 << 10

// prefetchMax bounds how much of a stored block loadBlock prefetches: the
// lines of a data block, not the tens of thousands of a large index or
// filter block, which would only push other data out of the CPU caches.
const prefetchMax = 32 << 10

// readBlockCtx is readBlock that also returns the context the block's
// corruption errors name (file, block kind, offset).
func (r *Reader) readBlockCtx(h blockHandle, kind string) ([]byte, errCtx, error) {
	data, err := r.readBlock(h, kind)
	return data, blockCtx(r.opts.FileNum, kind, h.offset), err
}

// readMetaindex reads the metaindex block (plain keys naming the meta
// blocks) into r.metaHandles, checking every handle.
func (r *Reader) readMetaindex() error {
	data, ctx, err := r.readBlockCtx(r.footer.metaindex, "metaindex")
	if err != nil {
		return err
	}
	r.metaHandles = make(map[string]blockHandle)
	err = forEachRawEntry(data, func(key, val []byte) error {
		h, ok := decodeHandle(val)
		if !ok {
			return fmt.Errorf("entry %q: malformed block handle %x", key, val)
		}
		if end, ok := h.end(); !ok || end > r.footer.metaindex.offset {
			return fmt.Errorf("entry %q: handle %s reaches past the metaindex", key, h)
		}
		r.metaHandles[string(key)] = h
		return nil
	})
	if err != nil {
		return ctx.corrupt(err)
	}
	ph, ok := r.metaHandles["sieve.properties"]
	if !ok {
		return ctx.corruptf("no properties block")
	}
	r.dataEnd = ph.offset
	fh, whole := r.metaHandles["sieve.filter"]
	th, top := r.metaHandles["sieve.filter.top"]
	if whole && top {
		return ctx.corruptf("both a whole and a partitioned filter")
	}
	if top {
		fh = th
	}
	if whole || top {
		if fe, _ := fh.end(); fe > ph.offset {
			return ctx.corruptf("filter block %s overlaps the properties block %s", fh, ph)
		}
		r.dataEnd = fh.offset
	}
	if rh, ok := r.metaHandles[rangeDelBlockName]; ok {
		if r.footer.format < TableFormatV2 {
			return ctx.corruptf("range-deletion block in a table of format %s", r.footer.format)
		}
		if re, _ := rh.end(); re > ph.offset {
			return ctx.corruptf("range-deletion block %s overlaps the properties block %s", rh, ph)
		}
		if fh, ok := r.metaHandles["sieve.filter"]; ok {
			if fe, _ := fh.end(); rh.offset < fe {
				return ctx.corruptf("range-deletion block %s overlaps the filter block %s", rh, fh)
			}
		}
		r.dataEnd = min(r.dataEnd, rh.offset)
	}
	return nil
}

// rangeDelBlockName names the range-deletion block in the metaindex.
const rangeDelBlockName = "sieve.rangedel"

// readRangeDels reads and decodes the range-deletion block, if any.
func (r *Reader) readRangeDels() error {
	h, ok := r.metaHandles[rangeDelBlockName]
	if !ok {
		return nil
	}
	data, ctx, err := r.readBlockCtx(h, "range-deletion")
	if err != nil {
		return err
	}
	l, err := rangedel.Decode(data)
	if err != nil {
		return ctx.corrupt(err)
	}
	if l.Empty() {
		return ctx.corruptf("no fragments")
	}
	r.rangeDels = l
	return nil
}

// RangeDels returns the table's range tombstones (nil when it has none).
// The list is immutable and stays valid after Close.
func (r *Reader) RangeDels() *rangedel.List { return r.rangeDels }

func (r *Reader) readProperties() error {
	data, ctx, err := r.readBlockCtx(r.metaHandles["sieve.properties"], "properties")
	if err != nil {
		return err
	}
	p, err := decodeProperties(data)
	if err != nil {
		return ctx.corrupt(err)
	}
	if p.FormatVersion != r.footer.format {
		return ctx.corruptf("format version %d disagrees with the footer's %d", uint32(p.FormatVersion), uint32(r.footer.format))
	}
	_, hasFilter := r.metaHandles["sieve.filter"]
	_, hasTop := r.metaHandles["sieve.filter.top"]
	if (hasFilter || hasTop) != (p.FilterPolicy != "") {
		return ctx.corruptf("filter policy %q but filter block present=%v", p.FilterPolicy, hasFilter || hasTop)
	}
	if hasTop != (p.FilterPartitions > 0) {
		return ctx.corruptf("%d filter partitions but top-level filter index present=%v", p.FilterPartitions, hasTop)
	}
	if p.FilterPartitions > 0 || p.IndexPartitions > 0 {
		if p.FormatVersion < TableFormatV3 {
			return ctx.corruptf("partitions in a table of format %s", p.FormatVersion)
		}
		// Partitions lie between the data and the properties, so the
		// data's end is known only from the properties.
		if p.DataSize > r.dataEnd {
			return ctx.corruptf("data size %d runs past the first meta block at %d", p.DataSize, r.dataEnd)
		}
		r.dataEnd = p.DataSize
	}
	r.props = p
	return nil
}

func (r *Reader) readIndex() error {
	data, ctx, err := r.readBlockCtx(r.footer.index, "index")
	if err != nil {
		return err
	}
	if r.props.IndexPartitions > 0 {
		return r.readTopIndex(data, ctx)
	}
	entries, err := r.decodeIndex(data, ctx)
	if err != nil {
		return err
	}
	if r.charged {
		r.cacheIndex(data, entries).Release()
		return nil
	}
	r.indexData, r.index = data, entries
	r.indexBytes = len(data)
	r.indexWords = newIndexWords(entries)
	return nil
}

// decodeIndex decodes and checks the (whole) index block data; the
// entries alias it.
func (r *Reader) decodeIndex(data []byte, ctx errCtx) ([]indexEntry, error) {
	return r.decodeIndexEntries(data, ctx, int(r.props.NumDataBlocks))
}

// decodeIndexEntries decodes and checks an index block or partition of
// want entries; the entries alias data.
func (r *Reader) decodeIndexEntries(data []byte, ctx errCtx, want int) ([]indexEntry, error) {
	// want comes from the properties: a corrupt count must not size an
	// allocation beyond what the block can hold.
	index := make([]indexEntry, 0, min(want, len(data)/4))
	err := forEachHandleEntry(data, ctx, 0, r.dataEnd, false, func(e indexEntry, _ uint64) { index = append(index, e) })
	if err != nil {
		return nil, err
	}
	if len(index) != want {
		return nil, ctx.corruptf("%d entries for %d data blocks", len(index), want)
	}
	return index, nil
}

func (r *Reader) readFilter() error {
	if th, ok := r.metaHandles["sieve.filter.top"]; ok {
		return r.readTopFilter(th)
	}
	h, ok := r.metaHandles["sieve.filter"]
	if !ok {
		return nil
	}
	data, err := r.readBlock(h, "filter")
	if err != nil {
		return err
	}
	r.filterSize = len(data)
	fr, err := decodeFilter(data, r.props.FilterPolicy, r.opts.Policies)
	if err == nil && fr != nil {
		_, r.prefixHashes = fr.(filter.HashReader)
		r.filterExpected = filter.BlockExpectedFPR(data)
	}
	switch {
	case err == nil && fr != nil && r.charged:
		r.filterState = FilterLoaded
		r.cacheFilter(data, fr).Release()
	case err == nil && fr != nil:
		r.filter, r.filterData, r.filterState = fr, data, FilterLoaded
		r.residentFilter = newFilterObj(fr)
		r.filterBytes = len(data)
	case err == nil || isUnknownFilterType(err):
		r.filterState, r.filterErr = FilterUnknown, err
	default:
		return blockCtx(r.opts.FileNum, "filter", h.offset).corruptf("policy %q: %w", r.props.FilterPolicy, err)
	}
	return nil
}

// Properties returns the table's properties. The caller must not modify them.
func (r *Reader) Properties() *Properties { return r.props }

// FilterState reports whether the table's filter is in use.
func (r *Reader) FilterState() FilterState { return r.filterState }

// FilterExpectedFPR returns the false-positive rate the table's filter is
// expected to show from its geometry, and false when that is unknown (no
// usable filter, or a partitioned one).
func (r *Reader) FilterExpectedFPR() (float64, bool) {
	return r.filterExpected, r.filterState == FilterLoaded && r.filterExpected >= 0
}

// FilterError returns why a filter of state FilterUnknown could not be
// decoded, or nil.
func (r *Reader) FilterError() error { return r.filterErr }

// ExcludesResident reports whether the table's resident filter (neither
// charged to the block cache nor partitioned) rules out ukey, whose
// filter.HashKey is h. It reads only what NewReader set and nothing
// changes or frees afterwards: the filter is a garbage-collected copy,
// never the memory map. So a caller may probe without holding the table
// open, and a table that an eviction closes meanwhile still answers right.
func (r *Reader) ExcludesResident(ukey []byte, h uint64) bool {
	fo := r.residentFilter
	return fo != nil && !fo.may(ukey, h)
}

// MayContain probes the table's filter for a user key. It answers true when
// the table has no usable filter (or, charged, when it cannot be read: see
// ProbeFilter). It does not allocate (given a filter Reader that does not).
func (r *Reader) MayContain(ukey []byte) bool {
	if r.charged || r.filterTop != nil {
		ok, _ := r.ProbeFilter(ukey, filter.HashKey(ukey), nil)
		return ok
	}
	if r.filter == nil {
		return true
	}
	return r.filter.MayContain(ukey)
}

// MayContainHash is MayContain for a caller that has h =
// filter.HashKey(ukey) already (a lookup probing several tables hashes its
// key once); a filter that cannot use the hash is given the key.
func (r *Reader) MayContainHash(ukey []byte, h uint64) bool {
	if r.charged || r.filterTop != nil {
		ok, _ := r.ProbeFilter(ukey, h, nil)
		return ok
	}
	return r.residentFilter.may(ukey, h)
}

// indexEntrySize is what a decoded index entry costs beside the block:
// slice header + trailer + handle.
const indexEntrySize = 48

// ResidentSize returns the bytes the Reader keeps in memory for the index
// (block contents plus the decoded entries) and the filter outside the
// block cache's budget: 0 and 0 when charged (see PinnedSize), but for
// the top-level blocks of a partitioned index or filter, which stay
// resident.
func (r *Reader) ResidentSize() (index, filter int) {
	index = r.indexBytes + (indexEntrySize+8)*len(r.index)
	index += len(r.indexTopData) + indexEntrySize*len(r.indexTop)
	filter = r.filterBytes + len(r.filterTopData) + indexEntrySize*len(r.filterTop)
	return index, filter
}

// FilterSize returns the length of the table's filter block (0 without a
// filter), wherever it is held.
func (r *Reader) FilterSize() int { return r.filterSize }

// IndexPacks returns the number of index partitions iterators have packed
// into the cache (charged partitioned indexes: see packedIndex).
func (r *Reader) IndexPacks() int64 { return r.indexPacks.Load() }

// FileNum returns the file number the Reader was opened with.
func (r *Reader) FileNum() uint64 { return r.opts.FileNum }

// Close closes the file. Reads after Close fail with an error (blocks
// already in the cache are still served). Close must not race with reads
// that the caller still expects to succeed.
func (r *Reader) Close() error {
	if r.closed.Swap(true) {
		return errReaderClosed
	}
	r.unpin()
	err := r.f.Close()
	if r.unmap != nil {
		if uerr := r.unmap(); err == nil {
			err = uerr
		}
	}
	return err
}

// mapper is implemented by files that can be memory-mapped (vfs.Mapper).
type mapper interface {
	Mmap(size int64) (data []byte, release func() error, err error)
}

// tryMap maps the table when its file supports it, so that data blocks are
// read without a system call. Blocks handed out are always copies or
// decompressed into fresh memory: nothing aliases the mapping, which Close
// releases.
func (r *Reader) tryMap() {
	m, ok := r.f.(mapper)
	if !ok || r.size <= 0 {
		return
	}
	data, release, err := m.Mmap(r.size)
	if err != nil || int64(len(data)) != r.size {
		if release != nil {
			release()
		}
		return
	}
	r.mapped, r.unmap = data, release
}

// readBufPool recycles the buffers stored blocks are read into when the
// table is not memory-mapped (the contents are decoded into other memory).
var readBufPool sync.Pool

// getReadBuf returns a buffer of n bytes and the pool handle to return it
// with (nil when the buffer is too large to pool).
func getReadBuf(n int) ([]byte, *[]byte) {
	if n > 64<<10 {
		return make([]byte, n), nil
	}
	p, _ := readBufPool.Get().(*[]byte)
	if p == nil || cap(*p) < n {
		b := make([]byte, n, max(n, 8<<10))
		p = &b
	}
	return (*p)[:n], p
}

func putReadBuf(p *[]byte) {
	if p != nil {
		readBufPool.Put(p)
	}
}
