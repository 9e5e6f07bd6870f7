package sstable

import (
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/sievedb/sieve/internal/base"
)

// DescribeOptions control Reader.Describe.
type DescribeOptions struct {
	// Entries prints every entry of the data, index and meta blocks, with
	// its offset in the block and its prefix sharing; otherwise blocks are
	// summarised in one line each.
	Entries bool
	// MaxValueLen truncates printed values; 0 means 16 bytes.
	MaxValueLen int
}

// Describe prints an annotated dump of the table's layout, block by block in
// file order, like Pebble's sstable layout: offsets, stored sizes,
// compression, checksums and (optionally) the entries of each block. It
// reads the blocks from the file and stops at the first unreadable one.
func (r *Reader) Describe(w io.Writer, o DescribeOptions) error {
	if o.MaxValueLen <= 0 {
		o.MaxValueLen = 16
	}
	d := describer{r: r, w: w, o: o}
	index, iv, err := r.flatIndex()
	if err != nil {
		return err
	}
	if iv != nil {
		defer iv.Release()
	}
	fmt.Fprintf(w, "table %06d: %d bytes, format %s, %d entries, %d data blocks\n",
		r.opts.FileNum, r.size, r.footer.format, r.props.NumEntries, len(index))
	for i := range index {
		if err := d.block(fmt.Sprintf("data #%d", i), index[i].h, true, d.value); err != nil {
			return err
		}
	}
	type meta struct {
		name string
		h    blockHandle
	}
	var metas []meta
	for name, h := range r.metaHandles {
		metas = append(metas, meta{name, h})
	}
	for i := range r.filterTop {
		metas = append(metas, meta{fmt.Sprintf("filter partition #%d", i), r.filterTop[i].h})
	}
	for i := range r.indexParts {
		metas = append(metas, meta{fmt.Sprintf("index partition #%d", i), r.indexParts[i].h})
	}
	sort.Slice(metas, func(i, j int) bool { return metas[i].h.offset < metas[j].h.offset })
	for _, m := range metas {
		var err error
		switch m.name {
		case "sieve.filter":
			err = d.filter(m.h)
		case "sieve.properties":
			err = d.properties(m.h)
		case "sieve.filter.top":
			err = d.block("filter top-level", m.h, true, d.handle)
		case rangeDelBlockName:
			err = d.rangeDels(m.h)
		default:
			if strings.HasPrefix(m.name, "filter partition") {
				_, err = d.header(m.name, m.h, "")
				break
			}
			if strings.HasPrefix(m.name, "index partition") {
				err = d.block(m.name, m.h, true, d.handle)
				break
			}
			err = d.block(m.name, m.h, false, d.value)
		}
		if err != nil {
			return err
		}
	}
	if err := d.block("metaindex", r.footer.metaindex, false, d.handle); err != nil {
		return err
	}
	indexName, indexVal := "index", d.handle
	if r.indexParts != nil {
		indexName, indexVal = "top-level index", d.partitionHandle
	}
	if err := d.block(indexName, r.footer.index, true, indexVal); err != nil {
		return err
	}
	f := r.footer
	fmt.Fprintf(w, "%10d  footer (%d bytes): metaindex %s, index %s, format %s, magic %q\n",
		r.size-footerLen, footerLen, f.metaindex, f.index, f.format, footerMagic)
	fmt.Fprintf(w, "%10d  end of file\n", r.size)
	return nil
}

type describer struct {
	r *Reader
	w io.Writer
	o DescribeOptions
}

// header prints a block's summary line and returns its contents.
func (d *describer) header(name string, h blockHandle, extra string) ([]byte, error) {
	raw, err := d.r.readBlock(h, name)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, blockTrailerLen)
	if err := d.r.readAt(buf, h.offset+h.length, errCtx{}); err != nil {
		return nil, err
	}
	fmt.Fprintf(d.w, "%10d  %s block: %d bytes stored (%s, checksum %#08x), %d bytes raw%s\n",
		h.offset, name, h.length, blockType(buf[0]), binary.LittleEndian.Uint32(buf[1:]), len(raw), extra)
	return raw, nil
}

func (d *describer) block(name string, h blockHandle, internal bool, fmtVal func([]byte) string) error {
	raw, err := d.r.readBlock(h, name)
	if err != nil {
		return err
	}
	blk, err := parseBlock(raw)
	if err != nil {
		return blockCtx(d.r.opts.FileNum, name, h.offset).corrupt(err)
	}
	if _, err := d.header(name, h, fmt.Sprintf(", %d restart points", blk.numRestarts)); err != nil {
		return err
	}
	if !d.o.Entries {
		return nil
	}
	restarts := map[int]int{}
	for i := 0; i < blk.numRestarts; i++ {
		restarts[blk.restart(i)] = i
	}
	var key []byte
	for off := 0; off < blk.restartsOff; {
		e, err := blk.decodeEntry(off, len(key))
		if err != nil {
			return blockCtx(d.r.opts.FileNum, name, h.offset).corrupt(err)
		}
		key = append(key[:e.shared], e.delta...)
		mark := ""
		if r, ok := restarts[off]; ok {
			mark = fmt.Sprintf("  [restart %d]", r)
		}
		fmt.Fprintf(d.w, "%10s  %6d  shared %d, unshared %d: %s = %s%s\n", "", off, e.shared, len(e.delta),
			fmtKey(key, internal), fmtVal(e.value), mark)
		off = e.next
	}
	fmt.Fprintf(d.w, "%10s  %6d  restart array (%d x 4 bytes) + count\n", "", blk.restartsOff, blk.numRestarts)
	return nil
}

func (d *describer) filter(h blockHandle) error {
	_, err := d.header("filter", h, fmt.Sprintf(", policy %q, %d keys, %.2f bits/key, state %s",
		d.r.props.FilterPolicy, d.r.props.FilterKeys, d.r.props.FilterBitsPerKey, d.r.filterState))
	return err
}

func (d *describer) rangeDels(h blockHandle) error {
	l := d.r.rangeDels
	if _, err := d.header("range deletions", h, fmt.Sprintf(", %d fragments, %d tombstones", len(l.Frags), l.Len())); err != nil {
		return err
	}
	if d.o.Entries {
		for _, f := range l.Frags {
			fmt.Fprintf(d.w, "%10s  [%q, %q) seqs %v\n", "", f.Start, f.End, f.Seqs)
		}
	}
	return nil
}

func (d *describer) properties(h blockHandle) error {
	if _, err := d.header("properties", h, ""); err != nil {
		return err
	}
	if d.o.Entries {
		d.r.props.describe(d.w, fmt.Sprintf("%10s  ", ""))
	}
	return nil
}

func fmtKey(key []byte, internal bool) string {
	if !internal {
		return fmt.Sprintf("%q", key)
	}
	k, ok := base.DecodeInternalKey(key)
	if !ok {
		return fmt.Sprintf("<bad key %x>", key)
	}
	return formatIKey(k)
}

// formatIKey prints a key like InternalKey.String, with "max" for the
// sequence number of shortened separators.
func formatIKey(k base.InternalKey) string {
	if k.SeqNum() == base.SeqNumMax {
		return fmt.Sprintf("%q#max,%s", k.UserKey, k.Kind())
	}
	return k.String()
}

func (d *describer) value(v []byte) string {
	if len(v) > d.o.MaxValueLen {
		return fmt.Sprintf("%q...(%d bytes)", v[:d.o.MaxValueLen], len(v))
	}
	return fmt.Sprintf("%q", v)
}

// partitionHandle formats a top-level index value: a handle and the
// partition's entry count.
func (d *describer) partitionHandle(v []byte) string {
	if n, k := lastUvarint(v); k > 0 {
		return fmt.Sprintf("%s, %d entries", d.handle(v[:len(v)-k]), n)
	}
	return fmt.Sprintf("<bad partition entry %x>", v)
}

func (d *describer) handle(v []byte) string {
	if h, ok := decodeHandle(v); ok {
		return "block " + h.String()
	}
	return fmt.Sprintf("<bad handle %x>", v)
}
