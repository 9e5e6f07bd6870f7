package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/golang/snappy"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/rangedel"
	"github.com/sievedb/sieve/sstable"
	"github.com/sievedb/sieve/vfs"
)

// Table layout constants (sstable/FORMAT.md).
const (
	blockTrailerLen = 5
	footerLen       = 48
	blockTypeNone   = 0
	blockTypeSnappy = 1
)

// table is an open table file.
type table struct {
	name string
	f    vfs.File
	size int64
	r    *sstable.Reader
}

// openTable opens the table at path read-only and reads its footer,
// metaindex, properties, index and filter. Its errors name the file by its
// path, once: the file system's carry it, the Reader's are prefixed with it.
func openTable(fs vfs.FS, path string) (*table, error) {
	return openTableNamed(fs, path, true)
}

// openTableNamed is openTable; without named the Reader's errors name no
// file, for a caller that names the table itself (a row of a report).
func openTableNamed(fs vfs.FS, path string, named bool) (*table, error) {
	var f vfs.File
	var err error
	if ro, ok := fs.(*roFS); ok {
		f, err = ro.openFile(path, "a table")
	} else {
		f, err = fs.Open(path)
	}
	if err != nil {
		return nil, err
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, err
	}
	// FileNum 0: the Reader's errors do not name the table ("table
	// 000012.sst"); the path does.
	r, err := sstable.NewReader(f, size, sstable.ReaderOptions{})
	if err != nil {
		f.Close()
		if named {
			err = fmt.Errorf("%s: %w", path, err)
		}
		return nil, err
	}
	return &table{name: path, f: f, size: size, r: r}, nil
}

func (t *table) Close() error { return t.r.Close() }

// rawBlock is one block read straight from the file, its trailer checked.
type rawBlock struct {
	loc              sstable.BlockLocation
	typ              byte
	stored, computed uint32
	contents         []byte // decompressed; nil when unreadable
	err              error
}

func (b *rawBlock) compression() string {
	switch b.typ {
	case blockTypeNone:
		return "none"
	case blockTypeSnappy:
		return "snappy"
	}
	return fmt.Sprintf("type-%d", b.typ)
}

// readRaw reads the block at loc (its length includes the trailer),
// verifies its checksum and decompresses it, like the reader does, but
// keeps going on a bad block so that dump can show the rest.
func (t *table) readRaw(loc sstable.BlockLocation) *rawBlock {
	b := &rawBlock{loc: loc}
	if loc.Length < blockTrailerLen || loc.Offset+loc.Length > uint64(t.size) || loc.Length > 1<<31 {
		b.err = fmt.Errorf("block [%d, +%d) does not fit in the file of %d bytes", loc.Offset, loc.Length, t.size)
		return b
	}
	buf := make([]byte, loc.Length)
	if _, err := t.f.ReadAt(buf, int64(loc.Offset)); err != nil && !errors.Is(err, io.EOF) {
		b.err = err
		return b
	}
	n := len(buf) - blockTrailerLen
	b.typ = buf[n]
	b.stored = binary.LittleEndian.Uint32(buf[n+1:])
	b.computed = uint32(xxhash.Sum64(buf[:n+1]))
	if b.stored != b.computed {
		b.err = fmt.Errorf("checksum mismatch (stored %#08x, computed %#08x)", b.stored, b.computed)
		return b
	}
	switch b.typ {
	case blockTypeNone:
		b.contents = buf[:n]
	case blockTypeSnappy:
		dl, err := snappy.DecodedLen(buf[:n])
		if err != nil || dl > 32*n+64 {
			b.err = fmt.Errorf("bad snappy header (decoded length %d for %d bytes, %v)", dl, n, err)
			return b
		}
		b.contents, err = snappy.Decode(nil, buf[:n])
		if err != nil {
			b.err = fmt.Errorf("snappy: %w", err)
		}
	default:
		b.err = fmt.Errorf("unknown block type %d", b.typ)
	}
	return b
}

// blockEntries decodes the entries of a block (sstable/FORMAT.md "Block
// contents") and calls fn for each, with the block offset of the entry.
// It returns the number of restart points.
func blockEntries(b []byte, fn func(off int, key, val []byte) bool) (int, error) {
	if len(b) < 4 {
		return 0, fmt.Errorf("block of %d bytes has no restart count", len(b))
	}
	nr := uint64(binary.LittleEndian.Uint32(b[len(b)-4:]))
	if nr*4+4 > uint64(len(b)) {
		return 0, fmt.Errorf("%d restart points do not fit in %d bytes", nr, len(b))
	}
	end := len(b) - 4 - int(nr)*4
	var key []byte
	for off := 0; off < end; {
		p := b[off:end]
		var v [3]uint64
		n := 0
		for i := range v {
			x, m := binary.Uvarint(p[n:])
			if m <= 0 {
				return int(nr), fmt.Errorf("entry at offset %d: bad varint", off)
			}
			v[i], n = x, n+m
		}
		shared, unshared, vlen := v[0], v[1], v[2]
		if shared > uint64(len(key)) || unshared > uint64(len(p)-n) || vlen > uint64(len(p)-n)-unshared {
			return int(nr), fmt.Errorf("entry at offset %d: lengths (shared %d, unshared %d, value %d) do not fit", off, shared, unshared, vlen)
		}
		key = append(key[:shared], p[n:n+int(unshared)]...)
		val := p[n+int(unshared) : n+int(unshared)+int(vlen)]
		if !fn(off, key, val) {
			break
		}
		off += n + int(unshared) + int(vlen)
	}
	return int(nr), nil
}

// filterInfo decodes the table's filter block, if any.
func (t *table) filterInfo() (filter.BlockInfo, bool, error) {
	for _, loc := range t.r.Layout() {
		if loc.Kind != "filter" {
			continue
		}
		b := t.readRaw(loc)
		if b.err != nil {
			return filter.BlockInfo{}, true, fmt.Errorf("filter block at %d: %w", loc.Offset, b.err)
		}
		info, err := filter.Inspect(b.contents)
		return info, true, err
	}
	return filter.BlockInfo{}, false, nil
}

func (t *table) summary(w io.Writer) {
	p := t.r.Properties()
	fmt.Fprintf(w, "%s: %d bytes, format %s, %d entries (%d sets, %d deletions, %d merges), %d data blocks, compression %s\n",
		t.name, t.size, p.FormatVersion, p.NumEntries, p.NumSets, p.NumDeletions, p.NumMerges, p.NumDataBlocks, p.Compression)
}

func (t *table) describeFilter(w io.Writer) {
	info, ok, err := t.filterInfo()
	switch {
	case !ok:
		fmt.Fprintf(w, "filter: none\n")
	case err != nil:
		fmt.Fprintf(w, "filter: policy %q, state %s: %v\n", t.r.Properties().FilterPolicy, t.r.FilterState(), err)
	default:
		fmt.Fprintf(w, "filter: policy %q, state %s: %s, expected FPR %.3f%%\n",
			t.r.Properties().FilterPolicy, t.r.FilterState(), info, 100*info.ExpectedFPR())
	}
}

// openTableCmd parses the arguments of a table command that prints keys
// (its flags in fs, -keys in bf, and FILE), opens the table read-only and
// prints its summary and filter lines: how "sstable dump" and "sstable
// props" start.
func openTableCmd(fs *flag.FlagSet, bf *byteFmt, args []string, w io.Writer) (*table, error) {
	path, err := bf.parse(fs, args)
	if err != nil {
		return nil, err
	}
	t, err := openTable(newROFS(), path)
	if err != nil {
		return nil, err
	}
	t.summary(w)
	t.describeFilter(w)
	return t, nil
}

func sstableDump(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sstable dump", "FILE", stderr)
	d := &sstableDumper{w: stdout}
	d.bf.dumpFlags(fs, &d.n, "print at most `N` entries in all (0: every entry)")
	fs.BoolVar(&d.blocksOnly, "blocks", false, "list the blocks only, no entries")
	t, err := openTableCmd(fs, &d.bf, args, stdout)
	if err != nil {
		return err
	}
	defer t.Close()
	p := t.r.Properties()
	if p.NumEntries > 0 {
		fmt.Fprintf(stdout, "keys: %s .. %s, seqnums %d..%d\n", d.bf.ikey(p.SmallestKey), d.bf.ikey(p.LargestKey), p.SmallestSeq, p.LargestSeq)
	}
	fmt.Fprintf(stdout, "%10s %8s  %-12s %-7s %-10s %s\n", "offset", "length", "block", "comp", "checksum", "contents")
	for _, loc := range t.r.Layout() {
		d.block(t, loc)
	}
	if !d.blocksOnly && d.n > 0 && uint64(d.printed) < p.NumEntries {
		fmt.Fprintf(stdout, "(%d of %d entries printed; -n 0 prints all)\n", d.printed, p.NumEntries)
	}
	if d.bad > 0 {
		return fmt.Errorf("%s: %s", t.name, count(d.bad, "damaged block"))
	}
	return nil
}

// sstableDumper prints a table's blocks, one line each, with the entries
// of its data blocks (at most n in all, 0 for all; none with blocksOnly),
// and counts the damaged blocks.
type sstableDumper struct {
	w                     io.Writer
	bf                    byteFmt
	n                     int
	blocksOnly            bool
	printed, bad, dataIdx int
}

// block prints the line of the block at loc and the entries it holds.
func (d *sstableDumper) block(t *table, loc sstable.BlockLocation) {
	if loc.Kind == "footer" {
		fmt.Fprintf(d.w, "%10d %8d  %-12s %-7s %-10s %s\n", loc.Offset, loc.Length, "footer", "-", t.footerChecksum(), "magic ok")
		return
	}
	b := t.readRaw(loc)
	name := loc.Kind
	if loc.Kind == "data" {
		name = fmt.Sprintf("data #%d", d.dataIdx)
		d.dataIdx++
	}
	if b.err != nil {
		d.bad++
		fmt.Fprintf(d.w, "%10d %8d  %-12s %-7s %-10s DAMAGED: %v\n", loc.Offset, loc.Length, name, b.compression(), fmt.Sprintf("%#08x", b.stored), b.err)
		return
	}
	desc, entries := d.contents(loc, b)
	fmt.Fprintf(d.w, "%10d %8d  %-12s %-7s %-10s %s\n", loc.Offset, loc.Length, name, b.compression(), fmt.Sprintf("%#08x ok", b.stored), desc)
	for _, e := range entries {
		fmt.Fprintf(d.w, "%22s%s = %s\n", "", d.bf.encodedIKey(e[0]), d.bf.value(e[1]))
		d.printed++
	}
}

// contents describes a block that passed its checksum, and returns the
// entries of a data block still to print.
func (d *sstableDumper) contents(loc sstable.BlockLocation, b *rawBlock) (string, [][2][]byte) {
	if loc.Kind == "rangedel" {
		l, err := rangedel.Decode(b.contents)
		if err != nil {
			d.bad++
			return fmt.Sprintf("%d bytes: DAMAGED: %v", len(b.contents), err), nil
		}
		desc := fmt.Sprintf("%d bytes, %d fragments, %d tombstones", len(b.contents), len(l.Frags), l.Len())
		if f := l.Frags; len(f) > 0 {
			desc += fmt.Sprintf(", %s .. %s", d.bf.key(f[0].Start), d.bf.key(f[len(f)-1].End))
		}
		return desc, nil
	}
	if loc.Kind == "filter" {
		desc := fmt.Sprintf("%d bytes", len(b.contents))
		if info, err := filter.Inspect(b.contents); err == nil {
			return desc + ", " + info.String(), nil
		} else {
			return desc + fmt.Sprintf(", undecodable: %v", err), nil
		}
	}
	var entries [][2][]byte
	count := 0
	var first, last []byte
	nr, err := blockEntries(b.contents, func(off int, key, val []byte) bool {
		if count == 0 {
			first = append([]byte(nil), key...)
		}
		last = append(last[:0], key...)
		count++
		if loc.Kind == "data" && !d.blocksOnly && (d.n == 0 || d.printed+len(entries) < d.n) {
			entries = append(entries, [2][]byte{append([]byte(nil), key...), append([]byte(nil), val...)})
		}
		return true
	})
	desc := fmt.Sprintf("%d bytes raw, %d entries, %d restarts", len(b.contents), count, nr)
	if count > 0 && (loc.Kind == "data" || loc.Kind == "index") {
		desc += fmt.Sprintf(", %s .. %s", d.bf.encodedIKey(first), d.bf.encodedIKey(last))
	}
	if err != nil {
		d.bad++
		desc += fmt.Sprintf(": DAMAGED: %v", err)
	}
	return desc, entries
}

// encodedIKey formats an encoded internal key, or hex when it is not one.
func (b *byteFmt) encodedIKey(k []byte) string {
	ik, ok := base.DecodeInternalKey(k)
	if !ok {
		return fmt.Sprintf("<bad internal key 0x%x>", k)
	}
	return b.ikey(ik)
}

func (t *table) footerChecksum() string {
	buf := make([]byte, footerLen)
	if _, err := t.f.ReadAt(buf, t.size-footerLen); err != nil && !errors.Is(err, io.EOF) {
		return "?"
	}
	return fmt.Sprintf("%#08x ok", binary.LittleEndian.Uint32(buf[36:]))
}

func sstableCheck(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sstable check", "FILE", stderr)
	path, err := parse(fs, args)
	if err != nil {
		return err
	}
	t, err := openTable(newROFS(), path)
	if err != nil {
		return err
	}
	defer t.Close()
	if err := t.r.Verify(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	p := t.r.Properties()
	fmt.Fprintf(stdout, "%s: ok: %d blocks checksummed (%d data), %d entries in order, properties match the data", path, len(t.r.Layout())-1, p.NumDataBlocks, p.NumEntries)
	if t.r.FilterState() == sstable.FilterLoaded {
		fmt.Fprintf(stdout, ", filter admits all %d keys", p.FilterKeys)
	}
	fmt.Fprintln(stdout)
	return nil
}

func sstableProps(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sstable props", "FILE", stderr)
	var bf byteFmt
	bf.keyFlags(fs)
	t, err := openTableCmd(fs, &bf, args, stdout)
	if err != nil {
		return err
	}
	defer t.Close()
	p := t.r.Properties()
	for _, line := range strings.Split(strings.TrimSuffix(p.String(), "\n"), "\n") {
		name, val, _ := strings.Cut(line, ": ")
		switch name {
		case "sieve.key.smallest":
			val = bf.ikey(p.SmallestKey)
		case "sieve.key.largest":
			val = bf.ikey(p.LargestKey)
		}
		if p.NumEntries == 0 && (name == "sieve.key.smallest" || name == "sieve.key.largest") {
			val = "-"
		}
		fmt.Fprintf(stdout, "  %-30s %s\n", name, val)
	}
	idx, flt := t.r.ResidentSize()
	fmt.Fprintf(stdout, "resident: index %d bytes, filter %d bytes\n", idx, flt)
	return nil
}
