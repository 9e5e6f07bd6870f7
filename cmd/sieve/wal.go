package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/vfs"
	"github.com/sievedb/sieve/wal"
)

// logNumber returns the log number a log file (WAL or manifest) should
// carry: from its name when it is one of the database's, otherwise from
// its file header (which the reader then checks against itself).
func logNumber(f vfs.File, path string, want base.FileType) uint64 {
	if t, num, ok := base.ParseFilename(filepath.Base(path)); ok && t == want {
		return num
	}
	// The header payload ("sievelog", version, log number) starts after
	// the 19-byte chunk header (wal/FORMAT.md rule 6).
	var buf [8]byte
	if _, err := f.ReadAt(buf[:], 19+9); err == nil {
		return binary.LittleEndian.Uint64(buf[:])
	}
	return 0
}

// openLog opens a log file and returns a reader over its records.
func openLog(fs *roFS, path string, t base.FileType) (*wal.Reader, vfs.File, uint64, error) {
	f, err := fs.openFile(path, "a log file")
	if err != nil {
		return nil, nil, 0, err
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, nil, 0, err
	}
	num := logNumber(f, path, t)
	return wal.NewReader(f, size, num), f, num, nil
}

// Batch encoding (FORMAT.md "Batch").
const batchHeaderLen = 17

type batchEntry struct {
	kind       base.Kind
	cf         uint32
	key, value []byte
}

type batch struct {
	seq     uint64
	count   uint32
	size    uint32
	entries []batchEntry
}

// decodeBatches splits a WAL record into its batches and decodes them.
func decodeBatches(rec []byte) ([]batch, error) {
	var out []batch
	for off := 0; off < len(rec); {
		p := rec[off:]
		if len(p) < batchHeaderLen {
			return out, fmt.Errorf("batch at record offset %d: %d bytes, shorter than a batch header", off, len(p))
		}
		if p[0] != 1 {
			return out, fmt.Errorf("batch at record offset %d: unknown batch version %d", off, p[0])
		}
		b := batch{
			seq:   binary.LittleEndian.Uint64(p[1:]),
			count: binary.LittleEndian.Uint32(p[9:]),
			size:  binary.LittleEndian.Uint32(p[13:]),
		}
		if b.size < batchHeaderLen || uint64(b.size) > uint64(len(p)) {
			return out, fmt.Errorf("batch at record offset %d: size %d does not fit the %d bytes left", off, b.size, len(p))
		}
		body := p[batchHeaderLen:b.size]
		for i := uint32(0); i < b.count; i++ {
			e, n, err := decodeEntry(body)
			if err != nil {
				return out, fmt.Errorf("batch at record offset %d (seq %d), entry %d: %w", off, b.seq, i, err)
			}
			b.entries = append(b.entries, e)
			body = body[n:]
		}
		if len(body) != 0 {
			return out, fmt.Errorf("batch at record offset %d (seq %d): %d bytes left after its %d entries", off, b.seq, len(body), b.count)
		}
		out = append(out, b)
		off += int(b.size)
	}
	return out, nil
}

func decodeEntry(p []byte) (batchEntry, int, error) {
	var e batchEntry
	if len(p) == 0 {
		return e, 0, errors.New("batch ends early")
	}
	e.kind = base.Kind(p[0])
	if e.kind > base.KindRangeDelete {
		return e, 0, fmt.Errorf("unknown kind %d", p[0])
	}
	n := 1
	cf, m := binary.Uvarint(p[n:])
	if m <= 0 || cf > 1<<32-1 {
		return e, 0, errors.New("bad column family varint")
	}
	e.cf, n = uint32(cf), n+m
	bytesField := func(what string) ([]byte, error) {
		l, m := binary.Uvarint(p[n:])
		if m <= 0 || l > uint64(len(p)-n-m) {
			return nil, fmt.Errorf("bad %s length", what)
		}
		n += m
		b := p[n : n+int(l)]
		n += int(l)
		return b, nil
	}
	var err error
	if e.key, err = bytesField("key"); err != nil {
		return e, 0, err
	}
	if e.kind != base.KindDelete {
		if e.value, err = bytesField("value"); err != nil {
			return e, 0, err
		}
	}
	return e, n, nil
}

func walDump(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("wal dump", "FILE", stderr)
	d := &walDumper{w: stdout}
	d.bf.dumpFlags(fs, &d.n, "print at most `N` entries in all, and the records holding them (0: every entry)")
	path, err := d.bf.parse(fs, args)
	if err != nil {
		return err
	}
	r, f, num, err := openLog(newROFS(), path, base.FileTypeLog)
	if err != nil {
		return err
	}
	defer f.Close()
	size, _ := f.Size()
	fmt.Fprintf(stdout, "%s: log %d, %d bytes\n", path, num, size)
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: after %d records: %w", path, d.records, err)
		}
		if err := d.record(rec, r.Offset()); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	d.summary()
	fmt.Fprintf(stdout, "end: %s\n", r.Tail())
	return nil
}

// walDumper prints a log's records, batches and entries (at most n
// entries, 0 for all) and counts them.
type walDumper struct {
	w                                  io.Writer
	bf                                 byteFmt
	n                                  int
	records, batches, entries, printed int
	firstSeq, lastSeq, seenSeq         uint64
	seen                               bool
}

// record prints (or, past the entry limit, counts) one record at offset
// off, and returns an error wrapping ErrCorruption when it does not
// decode or its sequence numbers do not grow along the log.
func (d *walDumper) record(rec []byte, off int64) error {
	bs, derr := decodeBatches(rec)
	for _, b := range bs {
		if b.count == 0 {
			continue
		}
		if d.seen && b.seq <= d.seenSeq && derr == nil {
			// Recovery refuses this too (FORMAT.md, "Batch").
			derr = fmt.Errorf("batch seq %d does not follow seq %d: sequence numbers must grow along the log", b.seq, d.seenSeq)
		}
		d.seen, d.seenSeq = true, b.seq+uint64(b.count)-1
	}
	// Past the entry limit, records are counted, not printed (an error is
	// printed all the same).
	show := d.n == 0 || d.printed < d.n || derr != nil
	if show {
		fmt.Fprintf(d.w, "record %d at offset %d: %d bytes, %s\n", d.records, off, len(rec), count(len(bs), "batch"))
	}
	d.records++
	for _, b := range bs {
		d.batch(b, show)
	}
	if derr != nil {
		return fmt.Errorf("record at offset %d: %w: %v", off, base.ErrCorruption, derr)
	}
	return nil
}

// batch counts b and prints it and its entries (up to the limit) if show.
func (d *walDumper) batch(b batch, show bool) {
	if d.batches == 0 {
		d.firstSeq = b.seq
	}
	d.batches++
	d.lastSeq = b.seq + uint64(b.count) - 1
	if show {
		fmt.Fprintf(d.w, "  batch seq %d, %d entries, %d bytes\n", b.seq, b.count, b.size)
	}
	for i, e := range b.entries {
		d.entries++
		if !show || (d.n > 0 && d.printed >= d.n) {
			continue
		}
		d.printed++
		cf := ""
		if e.cf != 0 {
			cf = fmt.Sprintf(" cf=%d", e.cf)
		}
		switch e.kind {
		case base.KindDelete:
			fmt.Fprintf(d.w, "    #%d %s%s %s\n", b.seq+uint64(i), e.kind, cf, d.bf.key(e.key))
		case base.KindRangeDelete:
			fmt.Fprintf(d.w, "    #%d %s%s [%s, %s)\n", b.seq+uint64(i), e.kind, cf, d.bf.key(e.key), d.bf.key(e.value))
		default:
			fmt.Fprintf(d.w, "    #%d %s%s %s = %s\n", b.seq+uint64(i), e.kind, cf, d.bf.key(e.key), d.bf.value(e.value))
		}
	}
}

// summary prints the counts and the sequence-number range.
func (d *walDumper) summary() {
	fmt.Fprintf(d.w, "%s, %s, %s", count(d.records, "record"), count(d.batches, "batch"), count(d.entries, "entry"))
	if d.batches > 0 {
		fmt.Fprintf(d.w, ", seqnums %d..%d", d.firstSeq, d.lastSeq)
	}
	fmt.Fprintln(d.w)
	if d.n > 0 && d.printed < d.entries {
		fmt.Fprintf(d.w, "(%d of %d entries printed, and the records holding them; -n 0 prints all)\n", d.printed, d.entries)
	}
}
