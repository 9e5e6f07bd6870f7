package main

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"sort"
	"time"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/sketchcol"
)

// Paged strings. A string that SETBIT, BITFIELD or BITOP (past one page)
// writes is kept as a header at its key (sketchcol's 0x60: length and a
// generation) and pages of 4096 bytes in the pages family
// (sketchcol.StrPageKey), so that SETBIT writes a few bytes of merge
// operand on one page instead of rewriting the string. Every other
// string command sees the same bytes: lookup assembles them (GET,
// GETRANGE, APPEND's reply...), APPEND and SETRANGE on a paged string
// write the pages they touch, and SET, DEL and the other writers of a
// whole value drop the pages with one range deletion.
//
// Commands that read a page under the key's lock (SETBIT, GETBIT,
// BITFIELD) go through a cache of whole pages (bitCache) keyed by key,
// generation and page: a header written anew gets a new generation, so
// no path that replaces a key can leave a cached page that is read as
// the new string's.

const strPage = sketchcol.StrPageSize

// pstr is a string as a bit command sees it: paged (a header) or inline
// (its bytes).
type pstr struct {
	paged  bool
	length int64
	gen    uint64
	inline []byte
	// replace: the write replaces the value (BITOP), which drops the
	// key's deadline as Redis's does
	replace bool
}

// edit is a write of a bit command: data at off, only the bits of mask
// when mask is not nil.
type edit struct {
	off  int64
	data []byte
	mask []byte
}

func (ks *keyspace) pagesCF() *sieve.ColumnFamily { return ks.st.PagesColumnFamily() }

// strState reads key for a bit command: its type and, for a string, how
// it is stored.
func (ks *keyspace) strState(key []byte) (keyType, pstr, error) {
	raw, err := ks.raw(key)
	if err != nil || raw == nil {
		return typeNone, pstr{}, err
	}
	if sketchcol.IsStrHeader(raw) {
		n, gen, err := sketchcol.ParseStrHeader(raw)
		if err != nil {
			return typeNone, pstr{}, err
		}
		return typeString, pstr{paged: true, length: int64(n), gen: gen}, nil
	}
	t, v, err := ks.lookup(key)
	if err != nil || t.isSketch() {
		return t, pstr{}, err
	}
	return t, pstr{length: int64(len(v)), inline: v}, nil
}

// byteAt returns byte i of st (zero past its end). REQUIRES: key's lock.
func (ks *keyspace) byteAt(key []byte, st pstr, i int64) (byte, error) {
	if i >= st.length {
		return 0, nil
	}
	if !st.paged {
		return st.inline[i], nil
	}
	p, err := ks.pageOf(key, st, uint32(i/strPage))
	if err != nil {
		return 0, err
	}
	return p[i%strPage], nil
}

// pageOf returns page p of a paged string, 4096 bytes (zeros past what
// was written), through the cache outside transactions. The caller must
// not change it. REQUIRES: key's lock.
func (ks *keyspace) pageOf(key []byte, st pstr, p uint32) ([]byte, error) {
	if ks.tx == nil {
		if b, ok := ks.bits.get(key, st.gen, p); ok {
			return b, nil
		}
	}
	v, err := ks.getPage(key, p)
	if err != nil {
		return nil, err
	}
	full := make([]byte, strPage)
	copy(full, v)
	if ks.tx == nil {
		ks.bits.put(key, st.gen, p, full)
	}
	return full, nil
}

// getPage reads page p of key's paged string from the database (nil:
// never written).
func (ks *keyspace) getPage(key []byte, p uint32) ([]byte, error) {
	pk := sketchcol.StrPageKey(nil, key, p)
	var v []byte
	var err error
	if ks.tx != nil {
		v, err = ks.tx.b.GetCF(ks.pagesCF(), pk)
	} else {
		v, err = ks.pagesCF().Get(pk)
	}
	if errors.Is(err, sieve.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return sketchcol.StrPageBytes(v)
}

// newGen returns a generation for a new paged string.
func newGen() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// writePaged writes edits to key's string and makes its length newLen
// (at least its length): on a paged string, page operands and (when it
// grows) the header; an inline or missing one becomes paged first (a
// range deletion of any pages left under the key, the header, and its
// bytes as page writes). REQUIRES: key's lock.
func (ks *keyspace) writePaged(key []byte, st *pstr, edits []edit, newLen int64) error {
	newLen = max(newLen, st.length)
	if err := checkSize(key, 20); err != nil {
		return err
	}
	if !st.paged && isHLLString(st.inline) {
		return ks.writeInline(key, st, edits, newLen)
	}
	b := ks.newBatch()
	create := !st.paged
	d := ks.deadline(key) // kept, as by SETBIT, unless the value is replaced (BITOP)
	cleared := st.replace && d != 0
	if cleared {
		ks.putDeadline(b, key, 0)
		d = 0
	}
	if create {
		if st.length > 0 {
			edits = append([]edit{{off: 0, data: st.inline}}, edits...)
		}
		*st = pstr{paged: true, length: st.length, gen: newGen()}
		start, end := sketchcol.StrPageRange(key)
		_ = b.DeleteRangeCF(ks.pagesCF(), start, end)
		ks.dropMeta(b, key)
		ks.bits.drop(key)
	}
	if create || newLen > st.length {
		hdr := sketchcol.AppendStrHeader(nil, uint64(newLen), st.gen)
		if d != 0 { // the key keeps its deadline (expires.go)
			_ = b.PutCFWithExpiry(ks.cf, key, hdr, time.UnixMilli(d))
		} else {
			_ = b.PutCF(ks.cf, key, hdr)
		}
	}
	pages := pageRuns(edits)
	for _, p := range sortedPages(pages) {
		op := sketchcol.AppendStrPageOp(nil, pages[p][0])
		for _, runs := range pages[p][1:] { // several writes to one page: fold them
			var ok bool
			op, ok = sketchcol.PageMerger{}.PartialMerge(nil, [][]byte{op, sketchcol.AppendStrPageOp(nil, runs)})
			if !ok {
				return errors.New("ERR internal: page writes do not fold")
			}
		}
		_ = b.MergeCF(ks.pagesCF(), sketchcol.StrPageKey(nil, key, p), op)
	}
	err := ks.apply(b, [][]byte{key})
	if create {
		ks.forgetMeta(key)
	}
	if err == nil && cleared {
		ks.noteDeadline(key, 0)
	}
	if err != nil || ks.tx != nil {
		ks.bits.drop(key) // a transaction's writes are seen once EXEC applies them
		return err
	}
	st.length = newLen
	for p, list := range pages {
		for _, runs := range list {
			ks.bits.apply(key, st.gen, p, runs)
		}
	}
	return nil
}

// pageRuns cuts edits at page boundaries: for each page, the runs of
// each edit, in order.
func pageRuns(edits []edit) map[uint32][][]sketchcol.StrRun {
	pages := map[uint32][][]sketchcol.StrRun{}
	for _, e := range edits {
		for i := int64(0); i < int64(len(e.data)); {
			off := e.off + i
			p, in := uint32(off/strPage), int(off%strPage)
			n := min(int64(strPage-in), int64(len(e.data))-i)
			r := sketchcol.StrRun{Off: in, Data: e.data[i : i+n]}
			if e.mask != nil {
				r.Mask = e.mask[i : i+n]
			}
			pages[p] = append(pages[p], []sketchcol.StrRun{r})
			i += n
		}
	}
	return pages
}

func sortedPages(m map[uint32][][]sketchcol.StrRun) []uint32 {
	out := make([]uint32, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// readPaged returns bytes [off, off+n) of a paged string (n > 0, within
// its length) as of one moment: from snap, else from the transaction or
// the database.
func (ks *keyspace) readPaged(key []byte, off, n int64, snap *sieve.Snapshot) ([]byte, error) {
	out := make([]byte, n)
	err := ks.forPages(key, off, n, snap, func(p uint32, page []byte) {
		base := int64(p) * strPage
		lo, hi := max(off, base), min(off+n, base+int64(len(page)))
		if lo < hi {
			copy(out[lo-off:], page[lo-base:hi-base])
		}
	})
	return out, err
}

// forPages calls fn with each written page overlapping [off, off+n), in
// order (pages never written are skipped: they are zeros).
func (ks *keyspace) forPages(key []byte, off, n int64, snap *sieve.Snapshot, fn func(p uint32, page []byte)) error {
	p0, p1 := uint32(off/strPage), uint32((off+n-1)/strPage)
	if ks.tx != nil {
		for p := p0; ; p++ {
			v, err := ks.getPage(key, p)
			if err != nil {
				return err
			}
			if v != nil {
				fn(p, v)
			}
			if p == p1 {
				return nil
			}
		}
	}
	o := &sieve.IterOptions{LowerBound: sketchcol.StrPageKey(nil, key, p0)}
	if p1 < 1<<32-1 {
		o.UpperBound = sketchcol.StrPageKey(nil, key, p1+1)
	} else {
		_, o.UpperBound = sketchcol.StrPageRange(key)
	}
	var it *sieve.Iterator
	if snap != nil {
		it = snap.NewIterCF(ks.pagesCF(), o)
	} else {
		it = ks.pagesCF().NewIter(o)
	}
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		page, err := sketchcol.StrPageBytes(it.Value())
		if err != nil || len(k) < 4 {
			_ = it.Close()
			return errors.Join(err, errors.New("ERR bad page key"))
		}
		fn(binary.BigEndian.Uint32(k[len(k)-4:]), page)
	}
	return it.Close()
}

// pagedView returns key's paged string from one snapshot (for readers
// without the key's lock): its length and the snapshot (nil in a
// transaction), which the caller closes with done.
func (ks *keyspace) pagedView(key []byte) (n int64, snap *sieve.Snapshot, done func(), err error) {
	if ks.tx != nil {
		raw, err := ks.raw(key)
		if err != nil {
			return 0, nil, func() {}, err
		}
		l, _, err := sketchcol.ParseStrHeader(raw)
		return int64(l), nil, func() {}, err
	}
	snap = ks.db.NewSnapshot()
	done = func() { _ = snap.Close() }
	raw, err := snap.GetCF(ks.cf, key)
	if errors.Is(err, sieve.ErrNotFound) || (err == nil && !sketchcol.IsStrHeader(raw)) {
		return 0, snap, done, errReread
	}
	if err != nil {
		return 0, snap, done, err
	}
	l, _, err := sketchcol.ParseStrHeader(raw)
	return int64(l), snap, done, err
}

// assemble returns the bytes of key's paged string as of one moment.
func (ks *keyspace) assemble(key []byte) ([]byte, error) {
	n, snap, done, err := ks.pagedView(key)
	defer done()
	if err != nil || n == 0 {
		return []byte{}, err
	}
	return ks.readPaged(key, 0, n, snap)
}

// errReread: the key changed between two reads of a reader without its
// lock; read it again.
var errReread = errors.New("reread")

// isPagedString reports whether key holds a paged string (a writer replacing it
// drops its pages with dropPaged).
func (ks *keyspace) isPagedString(key []byte) (bool, error) {
	raw, err := ks.raw(key)
	if err != nil && raw == nil {
		return false, nil // a failing merge: the value is replaced anyway
	}
	return sketchcol.IsStrHeader(raw), nil
}

// dropPaged adds to b the deletion of key's string pages.
func (ks *keyspace) dropPaged(b *sieve.Batch, key []byte) {
	start, end := sketchcol.StrPageRange(key)
	_ = b.DeleteRangeCF(ks.pagesCF(), start, end)
	ks.bits.drop(key)
}

// writeInline is writePaged for a string kept whole: HyperLogLog bytes,
// which the PF commands read as one value (at most 12304 bytes).
func (ks *keyspace) writeInline(key []byte, st *pstr, edits []edit, newLen int64) error {
	v := make([]byte, newLen)
	copy(v, st.inline)
	for _, e := range edits {
		for i, d := range e.data {
			if e.mask == nil {
				v[e.off+int64(i)] = d
			} else {
				c := &v[e.off+int64(i)]
				*c = *c&^e.mask[i] | d
			}
		}
	}
	if err := ks.setStringKeepTTL(key, v); err != nil {
		return err
	}
	st.inline, st.length = v, newLen
	return nil
}
