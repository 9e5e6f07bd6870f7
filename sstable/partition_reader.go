package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/cache"
)

// This file is the reader's side of partitioned index and filter blocks
// (FORMAT.md "Partitioned index and filter"). The top-level blocks are
// resident in the Reader. Without CacheIndexAndFilter the partitions are
// read at open and held resident too (the index flattened into one entry
// slice, so the read paths are those of a whole index); charged, each
// lookup loads the one partition it needs through the block cache.

// topEntry is one entry of a top-level index or top-level filter index:
// the separator of a partition's last data block, the partition's handle
// and, for index partitions, the number of its first entry in the table.
type topEntry struct {
	indexEntry
	first int
}

// topSearch finds the first separator >= a key in a sorted run of index
// or top-level index entries (searchIndex's answer), faster: the
// separators but the last share lcp, and keys[i] is the 8 bytes of
// separator i that follow it (big-endian, zero-padded), so most steps of
// the binary search compare two integers. The last separator is left out
// of lcp because a table's last separator is a short successor of its
// last key ("l" for "key…"), which would shrink lcp to nothing.
type topSearch struct {
	lcp  []byte
	keys []uint64 // words of the separators sharing lcp: all, or all but the last
}

func newTopSearch(top []topEntry) topSearch {
	return newWordSearch(len(top), func(i int) []byte { return top[i].sepUser })
}

// newIndexWords builds the word search of a resident whole index.
func newIndexWords(index []indexEntry) topSearch {
	return newWordSearch(len(index), func(i int) []byte { return index[i].sepUser })
}

// newWordSearch builds the search over n sorted separators, sep(i) being
// the user key of separator i.
func newWordSearch(n int, sep func(i int) []byte) topSearch {
	if n == 0 {
		return topSearch{}
	}
	lcp := sep(0)
	for i := 1; i < n-1; i++ {
		lcp = lcp[:base.SharedPrefixLen(lcp, sep(i))]
	}
	nw := n
	if !bytes.HasPrefix(sep(n-1), lcp) {
		nw = n - 1 // sorted, so the last is above every key starting with lcp
	}
	keys := make([]uint64, nw)
	for i := range keys {
		keys[i] = word(sep(i)[len(lcp):])
	}
	return topSearch{lcp: lcp, keys: keys}
}

// word is the first 8 bytes of b as a big-endian integer, zero-padded.
func word(b []byte) uint64 {
	if len(b) >= 8 {
		return binary.BigEndian.Uint64(b)
	}
	var w [8]byte
	copy(w[:], b)
	return binary.BigEndian.Uint64(w[:])
}

// wordRange narrows a search for the first of n separators >= (ukey, any
// trailer) to [lo, hi]: every separator before lo is below ukey, every one
// from hi on is above it, and those in between (usually none or one) need
// a full comparison.
func (s *topSearch) wordRange(ukey []byte, n int) (lo, hi int) {
	nw := len(s.keys)
	p := len(s.lcp)
	if len(ukey) < p || !bytes.Equal(ukey[:p], s.lcp) {
		// The first nw separators start with lcp and ukey does not.
		if bytes.Compare(ukey, s.lcp) < 0 {
			return 0, 0
		}
		return nw, n
	}
	w := word(ukey[p:])
	lo = firstWord(s.keys, w, false)
	hi = lo + firstWord(s.keys[lo:], w, true)
	if hi == nw {
		hi = n // the last separator, if left out, may be either side of ukey
	}
	return lo, hi
}

// firstWord returns the first index of keys whose word is >= w (> w when
// above), by halving a window of len(keys)+1 candidates without a
// data-dependent branch (the conditional add compiles to a CMOV), so a
// step the CPU would mispredict costs no pipeline flush.
func firstWord(keys []uint64, w uint64, above bool) int {
	lo := 0
	for m := len(keys) + 1; m > 1; {
		half := m / 2
		k := keys[lo+half-1]
		if k < w || (above && k == w) {
			lo += half
		}
		m -= half
	}
	return lo
}

// search returns the first entry of top (the block the search was built
// from) whose separator is >= (ukey, trailer), or len(top).
func (s *topSearch) search(top []topEntry, ukey []byte, trailer uint64) int {
	lo, hi := s.wordRange(ukey, len(top))
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		e := &top[m]
		c := bytes.Compare(e.sepUser, ukey)
		if c < 0 || (c == 0 && e.sepTrailer > trailer) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// decodeTop decodes a top-level block (index when counted, else filter):
// separators strictly increasing, handles in order inside [lo, hi), and
// for an index the entry counts summing to want.
func decodeTop(data []byte, ctx errCtx, lo, hi uint64, counted bool, want uint64) ([]topEntry, error) {
	var top []topEntry
	total := uint64(0)
	err := forEachHandleEntry(data, ctx, lo, hi, counted, func(e indexEntry, count uint64) {
		top = append(top, topEntry{e, int(total)})
		total += count
	})
	if err != nil {
		return nil, err
	}
	if len(top) == 0 {
		return nil, ctx.corruptf("empty top-level block")
	}
	if counted && total != want {
		return nil, ctx.corruptf("partitions hold %d entries for %d data blocks in the properties", total, want)
	}
	return top, nil
}

// forEachHandleEntry walks an index block, an index partition or a
// top-level block (restart interval 1: every entry a restart point, its
// key stored whole), checking that the separators strictly increase and
// the handles, in order, lie in [lo, hi); counted blocks (the top-level
// index) follow each handle with an entry count. fn gets each entry, its
// separator aliasing data.
func forEachHandleEntry(data []byte, ctx errCtx, lo, hi uint64, counted bool, fn func(e indexEntry, count uint64)) error {
	blk, err := parseBlock(data)
	if err != nil {
		return ctx.corrupt(err)
	}
	var it blockIter
	it.init(blk, true, ctx)
	var prev []byte
	prevEnd := lo
	for ok := it.first(); ok; ok = it.next() {
		e, err := blk.decodeEntry(it.off, 0)
		if err != nil || e.shared != 0 {
			return ctx.corruptf("entry at offset %d is not a restart point", it.off)
		}
		k := it.ikey()
		if prev != nil && base.CompareEncoded(prev, e.delta) >= 0 {
			return ctx.corruptf("separator %s does not follow the previous one", k)
		}
		prev = e.delta
		val, count := it.val, uint64(0)
		if counted {
			var m int
			if count, m = lastUvarint(val); m <= 0 || count == 0 {
				return ctx.corruptf("entry %s: malformed partition entry count", k)
			}
			val = val[:len(val)-m]
		}
		h, ok := decodeHandle(val)
		if !ok {
			return ctx.corruptf("entry %s: malformed block handle %x", k, it.val)
		}
		if end, ok := h.end(); !ok || end > hi || h.offset < prevEnd {
			return ctx.corruptf("entry %s: block %s out of place (previous ends at %d, region [%d, %d))", k, h, prevEnd, lo, hi)
		}
		prevEnd, _ = h.end()
		ulen := len(e.delta) - base.TrailerLen
		fn(indexEntry{sepUser: e.delta[:ulen:ulen], sepTrailer: k.Trailer, h: h}, count)
	}
	return it.err
}

// lastUvarint decodes the uvarint that ends v: a handle's two uvarints are
// followed by the count, so the count is what remains after decoding the
// handle from the front. It returns the count and its length.
func lastUvarint(v []byte) (uint64, int) {
	n := 0
	for range 2 { // the handle's offset and length
		_, m := binary.Uvarint(v[n:])
		if m <= 0 {
			return 0, -1
		}
		n += m
	}
	c, k := binary.Uvarint(v[n:])
	if k <= 0 || n+k != len(v) {
		return 0, -1
	}
	return c, k
}

// readTopIndex reads a partitioned table's top-level index and, unless
// charged, every partition, flattened into r.index.
func (r *Reader) readTopIndex(data []byte, ctx errCtx) error {
	top, err := decodeTop(data, ctx, r.dataEnd, r.metaHandles["sieve.properties"].offset, true, r.props.NumDataBlocks)
	if err != nil {
		return err
	}
	if uint64(len(top)) != r.props.IndexPartitions {
		return ctx.corruptf("%d index partitions, properties say %d", len(top), r.props.IndexPartitions)
	}
	r.indexParts, r.indexTop, r.indexTopData = top, top, data
	if r.charged {
		r.indexSearch = newTopSearch(top)
		r.indexHot = make([]atomic.Pointer[cache.Value], len(top))
		return nil
	}
	index := make([]indexEntry, 0, r.props.NumDataBlocks)
	for p := range top {
		entries, data, err := r.readIndexPartition(p)
		if err != nil {
			return err
		}
		index = append(index, entries...)
		r.indexBytes += len(data)
	}
	r.index, r.indexTop = index, nil
	r.indexWords = newIndexWords(index)
	return nil
}

// readIndexPartition reads and checks index partition p from the file.
func (r *Reader) readIndexPartition(p int) ([]indexEntry, []byte, error) {
	t := &r.indexTop[p]
	data, ctx, err := r.readBlockCtx(t.h, "index partition")
	if err != nil {
		return nil, nil, err
	}
	n := r.partitionLen(p)
	entries, err := r.decodeIndexEntries(data, ctx, n)
	if err != nil {
		return nil, nil, err
	}
	if last := &entries[n-1]; !bytes.Equal(last.sepUser, t.sepUser) || last.sepTrailer != t.sepTrailer {
		return nil, nil, ctx.corruptf("partition ends at separator %s, the top-level index says %s",
			base.InternalKey{UserKey: last.sepUser, Trailer: last.sepTrailer}, base.InternalKey{UserKey: t.sepUser, Trailer: t.sepTrailer})
	}
	return entries, data, nil
}

// flatIndex returns every index entry of the table, reading a charged
// partitioned index's partitions from the file (Verify, Layout); release
// the Value when non-nil.
func (r *Reader) flatIndex() ([]indexEntry, *cache.Value, error) {
	if r.indexTop == nil {
		return r.acquireIndex(nil)
	}
	var index []indexEntry
	for p := range r.indexTop {
		entries, _, err := r.readIndexPartition(p)
		if err != nil {
			return nil, nil, err
		}
		index = append(index, entries...)
	}
	return index, nil, nil
}

// partitionLen is the number of entries of index partition p.
func (r *Reader) partitionLen(p int) int {
	if p+1 < len(r.indexTop) {
		return r.indexTop[p+1].first - r.indexTop[p].first
	}
	return int(r.props.NumDataBlocks) - r.indexTop[p].first
}

// indexPart is a run of a table's index entries: the whole index (num
// -1), or partition num, whose first entry is entry first of the table;
// val is the reference to release (nil: resident or pinned). A whole
// index is a slice of decoded entries; a charged partition is searched in
// place (lazy).
type indexPart struct {
	entries []indexEntry
	words   *topSearch // the resident whole index's, else nil
	lazy    *lazyIndex
	packed  *packedIndex
	first   int
	num     int
	val     *cache.Value
}

func (p *indexPart) len() int {
	if p.packed != nil {
		return p.packed.n
	}
	if p.lazy != nil {
		return p.lazy.blk.numRestarts
	}
	return len(p.entries)
}

// lazyIndex is a charged index partition searched in place: its entries
// are decoded when a cursor lands on them instead of into a slice when it
// is loaded (a partition read for one lookup would otherwise cost more to
// decode than to search). Like a data block's, its entries are checked as
// they are decoded (restart points, internal keys, handles inside the data
// region); their order is checked by Verify.
//
// A partition that stays in the cache long enough to be searched
// denseAfter times gets the word search of the resident whole index
// (words, built once by the search that reaches the count): its binary
// search then halves a dense array of 8-byte words, one or two cache
// lines per step, instead of decoding a restart entry, two lines apart,
// per step. The words are charged to the cache with the partition from
// its insertion (wordsCharge), built or not, so the budget holds either
// way; a partition read for a lookup or two, as when the index does not
// fit the cache, never pays for building them.
type lazyIndex struct {
	blk     block
	dataEnd uint64
	ctx     errCtx
	// searches counts the searches until the one that builds words.
	searches atomic.Int32
	// packing is set by the lookup that packs the partition (packedIndex),
	// or tried to.
	packing atomic.Bool
	words   atomic.Pointer[topSearch]
}

// denseAfter is the search of a cached index partition that builds its
// word search.
const denseAfter = 3

// An index partition is packed (packedIndex) by an iterator's cursor, on
// its first use by one: a seek needs no filter, so with partitioned
// indexes at 10M keys and an 8 MiB cache it finds the whole packed index
// cached (6 MiB for what takes 13 MiB stored) and costs half of what it
// did. Point lookups leave the partitions they read stored: packing costs
// a decode of the partition's ~100 entries, twice its read and checksum,
// and where a Get's filter and index partitions do not fit the cache
// together (12 MiB of filter partitions at 10M keys) it misses its index
// partition every other time; packing on its reads made a Get 1.1-1.4x
// more CPU, packing on its first cache hit about as much. (A partition
// left stored for a seek too until a later use was mostly evicted before
// it: packing on the third use left 5 in 6 stored.)

// storedCharge is what the cache charges for the partition in stored
// form: the block and its word search.
func (l *lazyIndex) storedCharge() int { return len(l.blk.data) + wordsCharge(l.blk.numRestarts) }

// wordsCharge is the memory the word search of a partition of n entries
// takes: the words and the topSearch (its lcp aliases the partition).
func wordsCharge(n int) int { return 8*n + 48 }

// at decodes entry i into e; e's separator aliases the partition.
func (l *lazyIndex) at(i int, e *indexEntry) error {
	off := l.blk.restart(i)
	d, err := l.blk.decodeEntry(off, 0)
	if err == nil && d.shared != 0 {
		err = fmt.Errorf("entry at offset %d is not a restart point", off)
	}
	if err == nil {
		err = checkInternalKey(d.delta)
	}
	if err != nil {
		return l.ctx.corrupt(err)
	}
	h, ok := decodeHandle(d.value)
	if end, okEnd := h.end(); !ok || !okEnd || end > l.dataEnd {
		return l.ctx.corruptf("entry at offset %d: data block %x outside the data region [0, %d)", off, d.value, l.dataEnd)
	}
	n := len(d.delta) - base.TrailerLen
	*e = indexEntry{sepUser: d.delta[:n:n], sepTrailer: binary.LittleEndian.Uint64(d.delta[n:]), h: h}
	return nil
}

// search is searchIndex over the partition's entries: narrowed by the
// word search once built (see lazyIndex).
func (l *lazyIndex) search(ukey []byte, trailer uint64) (int, error) {
	w := l.words.Load()
	if w == nil && l.searches.Add(1) == denseAfter {
		// A corrupt entry leaves the partition searched in place: the
		// error is the lookup's that lands on it.
		if built, err := l.buildWords(); err == nil {
			l.words.Store(built)
			w = built
		}
	}
	if w == nil {
		return l.searchRange(0, l.blk.numRestarts, ukey, trailer)
	}
	lo, hi := w.wordRange(ukey, l.blk.numRestarts)
	return l.searchRange(lo, hi, ukey, trailer)
}

// buildWords decodes (and so checks) every entry of the partition and
// builds the word search over their separators, which alias the
// partition's memory.
func (l *lazyIndex) buildWords() (*topSearch, error) {
	seps := make([][]byte, l.blk.numRestarts)
	var e indexEntry
	for i := range seps {
		if err := l.at(i, &e); err != nil {
			return nil, err
		}
		seps[i] = e.sepUser
	}
	w := newWordSearch(len(seps), func(i int) []byte { return seps[i] })
	return &w, nil
}

// searchRange returns the first entry in [lo, hi) whose separator is >=
// (ukey, trailer), or hi, decoding the entries it compares with.
func (l *lazyIndex) searchRange(lo, hi int, ukey []byte, trailer uint64) (int, error) {
	var e indexEntry
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if err := l.at(m, &e); err != nil {
			return 0, err
		}
		c := bytes.Compare(e.sepUser, ukey)
		if c < 0 || (c == 0 && e.sepTrailer > trailer) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, nil
}

// checkIndexPartition checks what a lookup in index partition p relies on
// beyond what each decoded entry is checked for: the restart array, the
// entry count the top-level index gives, and that its last separator is
// the top-level entry's.
func (r *Reader) checkIndexPartition(p int, data []byte, ctx errCtx) (*lazyIndex, error) {
	blk, err := parseBlock(data)
	if err != nil {
		return nil, ctx.corrupt(err)
	}
	if want := r.partitionLen(p); blk.numRestarts != want {
		return nil, ctx.corruptf("%d entries for %d data blocks", blk.numRestarts, want)
	}
	li := &lazyIndex{blk: blk, dataEnd: r.dataEnd, ctx: ctx}
	var last indexEntry
	if err := li.at(blk.numRestarts-1, &last); err != nil {
		return nil, err
	}
	if t := &r.indexTop[p]; !bytes.Equal(last.sepUser, t.sepUser) || last.sepTrailer != t.sepTrailer {
		return nil, ctx.corruptf("partition ends at separator %s, the top-level index says %s",
			base.InternalKey{UserKey: last.sepUser, Trailer: last.sepTrailer}, base.InternalKey{UserKey: t.sepUser, Trailer: t.sepTrailer})
	}
	return li, nil
}

// acquireIndexPartition returns partition p of a charged partitioned
// index, from the cache or read, checked and cached.
func (r *Reader) acquireIndexPartition(p int, seeks bool, stats *ReadStats) (indexPart, error) {
	t := &r.indexTop[p]
	if stats != nil {
		stats.IndexPartitions++
	}
	if v := r.indexHot[p].Load(); v != nil && v.TryAcquireCached() {
		stats.addIndex(true)
		return r.cachedIndexPart(p, v, seeks), nil
	}
	if v, ok := r.opts.Cache.GetKind(r.opts.FileNum, t.h.offset, cache.KindIndex); ok {
		switch v.Object().(type) {
		case *lazyIndex, *packedIndex:
			stats.addIndex(true)
			v.Remember(&r.indexHot[p])
			return r.cachedIndexPart(p, v, seeks), nil
		}
		v.Release()
	}
	stats.addIndex(false)
	data, ctx, err := r.readBlockCtx(t.h, "index partition")
	if err != nil {
		return indexPart{}, err
	}
	li, err := r.checkIndexPartition(p, data, ctx)
	if err != nil {
		return indexPart{}, err
	}
	v := cache.WrapObject(data, li, li.storedCharge()-len(data))
	return r.cacheIndexPart(p, v, li, true, seeks), nil
}

// cacheIndexPart returns partition p from its stored form v (li its
// object; fresh: just read, to be cached), holding a reference on it, or,
// for an iterator's cursor (seeks), the packed form it caches in v's
// place (see packedIndex).
func (r *Reader) cacheIndexPart(p int, v *cache.Value, li *lazyIndex, fresh, seeks bool) indexPart {
	t := &r.indexTop[p]
	if seeks && li.packing.CompareAndSwap(false, true) {
		if pk := li.pack(); pk != nil && pk.packedBytes < li.storedCharge() {
			nv := cache.WrapObject(nil, pk, pk.packedBytes)
			r.opts.Cache.SetKind(r.opts.FileNum, t.h.offset, nv, cache.KindIndex)
			nv.Remember(&r.indexHot[p])
			v.Release()
			r.indexPacks.Add(1)
			return indexPart{packed: pk, first: t.first, num: p, val: nv}
		}
	}
	if fresh {
		r.opts.Cache.SetKind(r.opts.FileNum, t.h.offset, v, cache.KindIndex)
		v.Remember(&r.indexHot[p])
	}
	return indexPart{lazy: li, first: t.first, num: p, val: v}
}

// cachedIndexPart is partition p from its cached Value v, whose reference
// the part takes over; an iterator's cursor (seeks) packs a stored one in
// its place (cacheIndexPart), the stored block's memory going when the
// lookups using it release it.
func (r *Reader) cachedIndexPart(p int, v *cache.Value, seeks bool) indexPart {
	t := &r.indexTop[p]
	switch o := v.Object().(type) {
	case *packedIndex:
		return indexPart{packed: o, first: t.first, num: p, val: v}
	case *lazyIndex:
		return r.cacheIndexPart(p, v, o, false, seeks)
	}
	panic("sstable: index partition cached as another kind of object")
}

// indexCursor is a position in a table's index, whole or partitioned,
// holding a reference on the partition (or charged index) it is in.
type indexCursor struct {
	r    *Reader
	part indexPart
	i    int // position in part
	// cur and prev hold the decoded current and previous entries of a
	// lazy or packed partition (valid until the cursor moves); a packed
	// partition's separators are rebuilt in curBuf and prevBuf.
	curE, prevE     indexEntry
	curBuf, prevBuf []byte
	// seeks is set for an iterator's cursor: it packs the partitions it
	// uses (see packedIndex).
	seeks bool
}

// init prepares the cursor; a whole index is acquired now.
func (c *indexCursor) init(r *Reader, stats *ReadStats) error {
	*c = indexCursor{r: r, part: indexPart{num: -1}, curBuf: c.curBuf[:0], prevBuf: c.prevBuf[:0], seeks: c.seeks}
	if r.indexTop != nil {
		return nil
	}
	entries, v, err := r.acquireIndex(stats)
	c.part = indexPart{entries: entries, num: -1, val: v}
	if !r.charged && err == nil {
		c.part.words = &r.indexWords // entries is the resident r.index
	}
	return err
}

func (c *indexCursor) release() {
	if c.part.val != nil {
		c.part.val.Release()
		c.part.val = nil
	}
}

// set moves to entry i of the current part; in a lazy partition it
// decodes the entry and the one before it.
func (c *indexCursor) set(i int) error {
	c.i = i
	if pk := c.part.packed; pk != nil && i >= 0 && i < pk.n {
		pk.at(i, &c.curE, &c.curBuf)
		if i > 0 {
			pk.at(i-1, &c.prevE, &c.prevBuf)
		}
		return nil
	}
	if c.part.lazy == nil || i < 0 || i >= c.part.len() {
		return nil
	}
	if err := c.part.lazy.at(i, &c.curE); err != nil {
		return err
	}
	if i > 0 {
		return c.part.lazy.at(i-1, &c.prevE)
	}
	return nil
}

func (c *indexCursor) entry() *indexEntry {
	if c.part.lazy != nil || c.part.packed != nil {
		return &c.curE
	}
	return &c.part.entries[c.i]
}

// pos is the table-wide number of the current entry (its data block).
func (c *indexCursor) pos() int { return c.part.first + c.i }

// prevEntry is the entry before the current one (nil at the first): in
// the same partition, or the previous partition's top-level entry, whose
// separator is that of its last entry.
func (c *indexCursor) prevEntry() *indexEntry {
	switch {
	case c.i > 0 && (c.part.lazy != nil || c.part.packed != nil):
		return &c.prevE
	case c.i > 0:
		return &c.part.entries[c.i-1]
	case c.part.num > 0:
		return &c.r.indexTop[c.part.num-1].indexEntry
	}
	return nil
}

// toPartition moves to partition p (a partitioned index), at entry i
// (-1: its last).
func (c *indexCursor) toPartition(p, i int, stats *ReadStats) error {
	if c.part.num != p || c.part.len() == 0 {
		part, err := c.r.acquireIndexPartition(p, c.seeks, stats)
		if err != nil {
			return err
		}
		c.release()
		c.part = part
	}
	if i < 0 {
		i = c.part.len() - 1
	}
	return c.set(i)
}

// seek positions the cursor at the first entry whose separator is >=
// (ukey, trailer); false when there is none.
func (c *indexCursor) seek(ukey []byte, trailer uint64, stats *ReadStats) (bool, error) {
	if c.r.indexTop == nil {
		if w := c.part.words; w != nil {
			lo, hi := w.wordRange(ukey, len(c.part.entries))
			c.i = lo + searchIndex(c.part.entries[lo:hi], ukey, trailer)
		} else {
			c.i = searchIndex(c.part.entries, ukey, trailer)
		}
		return c.i < len(c.part.entries), nil
	}
	p := c.r.indexSearch.search(c.r.indexTop, ukey, trailer)
	if p == len(c.r.indexTop) {
		return false, nil
	}
	if err := c.toPartition(p, 0, stats); err != nil {
		return false, err
	}
	// The partition's last separator is its top-level one, >= the key.
	var i int
	if pk := c.part.packed; pk != nil {
		i = pk.search(ukey, trailer, &c.curBuf)
	} else {
		var err error
		if i, err = c.part.lazy.search(ukey, trailer); err != nil {
			return false, err
		}
	}
	return true, c.set(min(i, c.part.len()-1))
}

// first and last position the cursor at the table's first or last entry;
// false for a table without data blocks.
func (c *indexCursor) first(stats *ReadStats) (bool, error) {
	if c.r.indexTop == nil {
		c.i = 0
		return len(c.part.entries) > 0, nil
	}
	return true, c.toPartition(0, 0, stats)
}

func (c *indexCursor) last(stats *ReadStats) (bool, error) {
	if c.r.indexTop == nil {
		c.i = len(c.part.entries) - 1
		return c.i >= 0, nil
	}
	return true, c.toPartition(len(c.r.indexTop)-1, -1, stats)
}

// next and prev step to the following or preceding entry; false at the
// end.
func (c *indexCursor) next(stats *ReadStats) (bool, error) {
	if c.i+1 < c.part.len() {
		return true, c.set(c.i + 1)
	}
	if c.part.num < 0 || c.part.num+1 >= len(c.r.indexTop) {
		return false, nil
	}
	return true, c.toPartition(c.part.num+1, 0, stats)
}

func (c *indexCursor) prev(stats *ReadStats) (bool, error) {
	if c.i > 0 {
		return true, c.set(c.i - 1)
	}
	if c.part.num <= 0 {
		return false, nil
	}
	return true, c.toPartition(c.part.num-1, -1, stats)
}

// readTopFilter reads a partitioned filter's top-level block and, unless
// charged, every partition (resident); charged, the first partition is
// decoded (and cached) to learn whether this build can use the filter.
func (r *Reader) readTopFilter(h blockHandle) error {
	data, ctx, err := r.readBlockCtx(h, "filter top-level")
	if err != nil {
		return err
	}
	top, err := decodeTop(data, ctx, r.dataEnd, h.offset, false, 0)
	if err != nil {
		return err
	}
	if uint64(len(top)) != r.props.FilterPartitions {
		return ctx.corruptf("%d filter partitions, properties say %d", len(top), r.props.FilterPartitions)
	}
	r.filterTop, r.filterTopData = top, data
	r.filterSearch = newTopSearch(top)
	n := len(top)
	if r.charged {
		n = 1
		r.filterHot = make([]atomic.Pointer[cache.Value], len(top))
	}
	parts := make([]*filterObj, 0, n)
	for p := 0; p < n; p++ {
		fo, data, err := r.readFilterPartition(p)
		if err != nil {
			if isUnknownFilterType(err) {
				r.filterState, r.filterErr, r.filterTop = FilterUnknown, err, nil
				return nil
			}
			return err
		}
		if p == 0 {
			r.prefixHashes = fo.hr != nil
		}
		if r.charged {
			r.cacheFilterPartition(p, data, fo).Release()
		} else {
			r.filterBytes += len(data)
		}
		parts = append(parts, fo)
	}
	r.filterSize = int(r.props.FilterSize)
	r.filterState = FilterLoaded
	if !r.charged {
		r.filterParts = parts
	}
	return nil
}

// readFilterPartition reads and decodes filter partition p. A partition
// this build cannot decode is filter.ErrUnknownType (unwrapped), a
// malformed one ErrCorruption.
func (r *Reader) readFilterPartition(p int) (*filterObj, []byte, error) {
	h := r.filterTop[p].h
	data, err := r.readBlock(h, "filter partition")
	if err != nil {
		return nil, nil, err
	}
	fo, err := r.decodeFilterPartition(data, h)
	return fo, data, err
}

func (r *Reader) decodeFilterPartition(data []byte, h blockHandle) (*filterObj, error) {
	fr, err := decodeFilter(data, r.props.FilterPolicy, r.opts.Policies)
	if err == nil && fr == nil {
		err = errors.New("empty filter partition")
	}
	switch {
	case err == nil:
		return newFilterObj(fr), nil
	case isUnknownFilterType(err):
		return nil, err
	}
	return nil, blockCtx(r.opts.FileNum, "filter partition", h.offset).corruptf("policy %q: %w", r.props.FilterPolicy, err)
}

func (r *Reader) cacheFilterPartition(p int, data []byte, fo *filterObj) *cache.Value {
	v := cache.WrapObject(data, fo, 0)
	r.opts.Cache.SetKind(r.opts.FileNum, r.filterTop[p].h.offset, v, cache.KindFilter)
	v.Remember(&r.filterHot[p])
	return v
}

// probePartitioned probes a partitioned filter for ukey (whose hash is
// h): the one partition whose key range can hold it (none past the last
// separator: the key is above every key of the table).
func (r *Reader) probePartitioned(ukey []byte, h uint64, stats *ReadStats) (bool, error) {
	p := r.filterSearch.search(r.filterTop, ukey, seekTrailer)
	if p == len(r.filterTop) {
		return false, nil
	}
	return r.probePartition(p, stats, func(fo *filterObj) bool { return fo.may(ukey, h) })
}

// probePrefixPartitioned probes a partitioned filter for a prefix (whose
// filter.HashPrefix is h). A prefix is in the partition of the first key
// that has it: the partition where a seek to the prefix lands, or, when
// that one ends before the first such key, the next one.
func (r *Reader) probePrefixPartitioned(prefix []byte, h uint64, stats *ReadStats) (bool, error) {
	p := r.filterSearch.search(r.filterTop, prefix, seekTrailer)
	for end := min(p+2, len(r.filterTop)); p < end; p++ {
		may, err := r.probePartition(p, stats, func(fo *filterObj) bool { return fo.mayHash(h) })
		if may || err != nil {
			return true, err
		}
	}
	return false, nil
}

// probePartition runs probe on filter partition p. A charged partition
// that cannot be read or decoded fails open (counted); a corrupt one is
// ErrCorruption.
func (r *Reader) probePartition(p int, stats *ReadStats, probe func(*filterObj) bool) (bool, error) {
	if !r.charged {
		return probe(r.filterParts[p]), nil
	}
	if stats != nil {
		stats.FilterPartitions++
	}
	if v := r.filterHot[p].Load(); v != nil && v.PeekCached() {
		// A probe keeps nothing of the partition: no reference.
		stats.addFilter(true)
		return probe(v.Object().(*filterObj)), nil
	}
	off := r.filterTop[p].h.offset
	if v, ok := r.opts.Cache.GetKind(r.opts.FileNum, off, cache.KindFilter); ok {
		if fo, ok := v.Object().(*filterObj); ok {
			stats.addFilter(true)
			v.Remember(&r.filterHot[p])
			may := probe(fo)
			v.Release()
			return may, nil
		}
		v.Release()
	}
	stats.addFilter(false)
	ph := r.filterTop[p].h
	data, err := r.readBlock(ph, "filter partition")
	if err != nil {
		if errors.Is(err, base.ErrCorruption) {
			return true, err
		}
		stats.addFailOpen()
		return true, nil
	}
	fo, err := r.decodeFilterPartition(data, ph)
	if err != nil {
		stats.addFailOpen()
		return true, nil
	}
	r.cacheFilterPartition(p, data, fo).Release()
	return probe(fo), nil
}
