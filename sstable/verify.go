package sstable

import (
	"bytes"
	"strings"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/base"
)

// Verify reads every block of the table from the file (bypassing the cache)
// and checks what the read path trusts or only checks lazily: checksums,
// block structure, key order within and across data blocks, the index
// separators against the blocks they separate, block placement, the
// properties against the data, and that the filter admits every user key.
// It returns the first problem found, wrapping base.ErrCorruption.
func (r *Reader) Verify() error {
	for name, h := range r.metaHandles {
		if _, err := r.readBlock(h, strings.TrimPrefix(name, "sieve.")); err != nil {
			return err
		}
	}
	if _, err := r.readBlock(r.footer.metaindex, "metaindex"); err != nil {
		return err
	}
	idxCtx := blockCtx(r.opts.FileNum, "index", r.footer.index.offset)
	if got := r.storedIndexSize(); r.props.IndexSize != got {
		return idxCtx.corruptf("stored size %d, properties say %d", got, r.props.IndexSize)
	}
	index, iv, err := r.flatIndex()
	if err != nil {
		return err
	}
	if iv != nil {
		defer iv.Release()
	}
	v := verifier{r: r, index: index}
	if r.filterTop != nil {
		v.filter = partitionedFilter{r}
	} else {
		fo, fv, err := r.acquireFilter(nil)
		if err != nil {
			return err
		}
		if fv != nil {
			defer fv.Release()
		}
		if fo != nil {
			v.filter = fo.fr
		}
	}
	for i := range index {
		if err := v.block(i); err != nil {
			return err
		}
	}
	return v.finish()
}

// verifier accumulates what Verify recomputes from the data blocks.
type verifier struct {
	r       *Reader
	index   []indexEntry
	filter  filter.Reader
	prevKey []byte
	got     Properties
	end     uint64 // end of the previous data block
	it      blockIter
}

func (v *verifier) block(i int) error {
	r := v.r
	e := &v.index[i]
	ctx := r.dataCtx(e)
	if e.h.offset != v.end {
		return ctx.corruptf("block starts at %d, previous block ends at %d", e.h.offset, v.end)
	}
	v.end, _ = e.h.end()
	raw, err := r.readBlock(e.h, "data")
	if err != nil {
		return err
	}
	blk, err := parseBlock(raw)
	if err != nil {
		return ctx.corrupt(err)
	}
	if blk.numRestarts == 0 {
		return ctx.corruptf("empty data block")
	}
	v.got.NumDataBlocks++
	v.got.RawDataSize += uint64(len(raw))
	v.got.DataSize += e.h.length + blockTrailerLen
	v.it.init(blk, true, ctx)
	for ok := v.it.first(); ok; ok = v.it.next() {
		k := v.it.ikey()
		if v.prevKey != nil && base.CompareEncoded(v.prevKey, v.it.key) >= 0 {
			prev, _ := base.DecodeInternalKey(v.prevKey)
			return ctx.corruptf("key %s at offset %d does not follow %s", k, v.it.off, prev)
		}
		if i > 0 && v.it.off == 0 {
			p := &v.index[i-1]
			if compareKey(v.it.key, p.sepUser, p.sepTrailer) <= 0 {
				return ctx.corruptf("first key %s is not above the previous separator", k)
			}
		}
		if compareKey(v.it.key, e.sepUser, e.sepTrailer) > 0 {
			return ctx.corruptf("key %s is above the block's separator %s", k, base.InternalKey{UserKey: e.sepUser, Trailer: e.sepTrailer})
		}
		v.count(k, v.it.val)
		if v.filter != nil && (v.prevKey == nil || !bytes.Equal(v.prevKey[:len(v.prevKey)-base.TrailerLen], k.UserKey)) {
			v.got.FilterKeys++
			if !v.filter.MayContain(k.UserKey) {
				return blockCtx(r.opts.FileNum, "filter", r.metaHandles["sieve.filter"].offset).
					corruptf("filter rules out key %q that the table holds", k.UserKey)
			}
		}
		v.prevKey = append(v.prevKey[:0], v.it.key...)
	}
	return v.it.err
}

func (v *verifier) count(k base.InternalKey, val []byte) { v.got.count(k, val) }

func (v *verifier) finish() error {
	r := v.r
	ctx := blockCtx(r.opts.FileNum, "properties", r.metaHandles["sieve.properties"].offset)
	if v.end != r.dataEnd {
		ctx := blockCtx(r.opts.FileNum, "data", 0)
		if n := len(v.index); n > 0 {
			ctx = r.dataCtx(&v.index[n-1])
		}
		return ctx.corruptf("data blocks end at %d, meta blocks start at %d", v.end, r.dataEnd)
	}
	if v.prevKey != nil {
		v.got.LargestKey, _ = base.DecodeInternalKey(v.prevKey)
	}
	p, g := r.props, &v.got
	type check struct {
		name      string
		want, got uint64
	}
	for _, c := range []check{
		{"entries", p.NumEntries, g.NumEntries},
		{"deletions", p.NumDeletions, g.NumDeletions},
		{"sets", p.NumSets, g.NumSets},
		{"merges", p.NumMerges, g.NumMerges},
		{"smallest seqnum", p.SmallestSeq, g.SmallestSeq},
		{"largest seqnum", p.LargestSeq, g.LargestSeq},
		{"raw key size", p.RawKeySize, g.RawKeySize},
		{"raw value size", p.RawValueSize, g.RawValueSize},
		{"data blocks", p.NumDataBlocks, g.NumDataBlocks},
		{"data size", p.DataSize, g.DataSize},
		{"raw data size", p.RawDataSize, g.RawDataSize},
	} {
		if c.want != c.got {
			return ctx.corruptf("%s: properties say %d, data has %d", c.name, c.want, c.got)
		}
	}
	if p.NumEntries > 0 {
		if base.CompareInternal(p.SmallestKey, g.SmallestKey) != 0 || base.CompareInternal(p.LargestKey, g.LargestKey) != 0 {
			return ctx.corruptf("key range [%s, %s], data has [%s, %s]", p.SmallestKey, p.LargestKey, g.SmallestKey, g.LargestKey)
		}
	}
	if v.filter != nil && g.FilterKeys != p.FilterKeys {
		return ctx.corruptf("filter keys: properties say %d, data has %d distinct user keys", p.FilterKeys, g.FilterKeys)
	}
	if size, ok, err := r.storedFilterSize(); err != nil {
		return err
	} else if ok && size != p.FilterSize {
		return ctx.corruptf("filter size: properties say %d, blocks have %d", p.FilterSize, size)
	}
	return nil
}

// storedIndexSize is the index's size as stored: the index block's, or
// the top-level index's and its partitions'.
func (r *Reader) storedIndexSize() uint64 {
	n := r.footer.index.length
	for i := range r.indexParts {
		n += r.indexParts[i].h.length
	}
	return n
}

// storedFilterSize reads the filter block (or every partition) and
// returns its contents' length; ok is false without a filter block.
func (r *Reader) storedFilterSize() (size uint64, ok bool, err error) {
	if fh, ok := r.metaHandles["sieve.filter"]; ok {
		data, err := r.readBlock(fh, "filter")
		return uint64(len(data)), true, err
	}
	for i := range r.filterTop {
		data, err := r.readBlock(r.filterTop[i].h, "filter partition")
		if err != nil {
			return 0, true, err
		}
		size += uint64(len(data))
	}
	return size, r.filterTop != nil, nil
}

// partitionedFilter is a partitioned filter as a filter.Reader, for
// Verify.
type partitionedFilter struct{ r *Reader }

func (f partitionedFilter) MayContain(ukey []byte) bool { return f.r.MayContain(ukey) }
