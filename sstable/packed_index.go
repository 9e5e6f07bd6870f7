package sstable

import (
	"bytes"
	"encoding/binary"

	"github.com/sievedb/sieve/internal/base"
)

// packedIndex is a charged index partition in packed form: what a lookup
// needs of its entries in about a third of the memory of the stored
// block and its word search, so that far more of a table set's index
// fits a given cache. An iterator packs the partitions it uses (point
// lookups do not: see cacheIndexPart's caller, acquireIndexPartition, and
// the note there), and the packed form replaces the stored one in the
// cache, charged at its own size.
//
// Per entry it keeps the word of the word search (the 8 bytes of the
// separator after the partition's common prefix, see topSearch), the
// separator's length past the prefix, any bytes past those 8 in one
// arena, and its data block's offset relative to the partition's first
// (the blocks of a table are contiguous, so a block's length is the
// distance to the next one): 13-14 bytes for separators up to 8 bytes
// past the prefix, against the stored entry's ~37 and its word. Trailers
// are kept once when all are equal, as an index into the distinct ones
// when there are at most 256, else per entry. A partition that does not
// fit this shape (a separator more than 255 bytes past the prefix, blocks
// not contiguous or spanning 4 GiB) or that packing would not make
// smaller stays stored and searched in place.
type packedIndex struct {
	n     int
	words topSearch // over all n separators, or all but the last
	lens  []uint8   // len(separator) - len(words.lcp), for entries < len(words.keys)
	// tails holds the bytes of separators past lcp+8, tailEnd[i] the end
	// of entry i's (nil when no separator is that long).
	tails   []byte
	tailEnd []uint32
	// last is the last entry when the word search leaves it out.
	last        indexEntry
	trailer     uint64   // every entry's trailer, when trailers and trailerIdx are nil
	trailerDict []uint64 // the distinct trailers, when there are at most 256 ...
	trailerIdx  []uint8  // ... and each entry's in trailerDict
	trailers    []uint64 // per entry, when there are more
	offset0     uint64   // the first data block's offset
	rel         []uint32 // rel[i]: block i's offset - offset0; rel[n]: the last block's end
	packedBytes int
}

// packedOverhead approximates the struct and slice headers of a
// packedIndex, charged with it.
const packedOverhead = 256

// pack builds the packed form of a lazy partition, decoding (and so
// checking) every entry; nil when the partition does not fit the shape.
// One pass: the separators but the last share the prefix of the first and
// the next-to-last, the entries being sorted (a partition that is not is
// left stored, as is one whose separator lacks that prefix).
func (l *lazyIndex) pack() *packedIndex {
	n := l.blk.numRestarts
	if n == 0 {
		return nil
	}
	var first, e indexEntry
	if l.at(0, &first) != nil || l.at(max(n-2, 0), &e) != nil {
		return nil
	}
	lcp := first.sepUser[:base.SharedPrefixLen(first.sepUser, e.sepUser)]
	if l.at(n-1, &e) != nil {
		return nil
	}
	nw := n
	p := &packedIndex{n: n, rel: make([]uint32, n+1), offset0: first.h.offset}
	if !bytes.HasPrefix(e.sepUser, lcp) {
		nw = n - 1 // sorted, so the last is above every key starting with lcp
		p.last = indexEntry{sepUser: bytes.Clone(e.sepUser), sepTrailer: e.sepTrailer}
	}
	p.words = topSearch{lcp: bytes.Clone(lcp), keys: make([]uint64, nw)}
	p.lens = make([]uint8, nw)
	trailers := make([]uint64, n)
	for i := 0; i < n; i++ {
		if l.at(i, &e) != nil || !p.packEntry(i, nw, &e) {
			return nil
		}
		trailers[i] = e.sepTrailer
	}
	if nw < n {
		p.last.h = p.handle(n - 1)
	}
	p.packTrailers(trailers)
	p.packedBytes = packedOverhead + 8*nw + len(lcp) + len(p.lens) + len(p.tails) + 4*len(p.tailEnd) +
		len(p.last.sepUser) + 8*len(p.trailerDict) + len(p.trailerIdx) + 8*len(p.trailers) + 4*len(p.rel)
	return p
}

// packEntry keeps entry i's block offset and, when the word search covers
// it (i < nw), its word, length and tail; false when it does not fit.
func (p *packedIndex) packEntry(i, nw int, e *indexEntry) bool {
	end, ok := e.h.end()
	if e.h.offset != p.offset0+uint64(p.rel[i]) || !ok || end-p.offset0 > 1<<32-1 {
		return false
	}
	p.rel[i+1] = uint32(end - p.offset0)
	if i >= nw {
		return true
	}
	lcp := p.words.lcp
	if !bytes.HasPrefix(e.sepUser, lcp) || len(e.sepUser)-len(lcp) > 255 {
		return false
	}
	sfx := e.sepUser[len(lcp):]
	p.words.keys[i], p.lens[i] = word(sfx), uint8(len(sfx))
	if len(sfx) > 8 {
		if p.tailEnd == nil {
			p.tailEnd = make([]uint32, nw)
		}
		p.tails = append(p.tails, sfx[8:]...)
	}
	if p.tailEnd != nil {
		p.tailEnd[i] = uint32(len(p.tails))
	}
	return true
}

// packTrailers keeps the trailers: one for all, a dictionary (a table
// written by a compaction to the bottom has sequence numbers zeroed, its
// separators have at most two trailers: the keys' and the shortened
// separators' SeqNumMax one), or one per entry (trailers, kept).
func (p *packedIndex) packTrailers(trailers []uint64) {
	p.trailer = trailers[0]
	var dict []uint64
	idx := make([]uint8, len(trailers))
	for i, tr := range trailers {
		j := 0
		for j < len(dict) && dict[j] != tr {
			j++
		}
		if j == len(dict) {
			if j == 256 {
				p.trailers = trailers
				return
			}
			dict = append(dict, tr)
		}
		idx[i] = uint8(j)
	}
	if len(dict) > 1 {
		p.trailerDict, p.trailerIdx = dict, idx
	}
}

// sep appends separator i's user key to dst.
func (p *packedIndex) sep(dst []byte, i int) []byte {
	if i >= len(p.words.keys) {
		return append(dst, p.last.sepUser...)
	}
	dst = append(dst, p.words.lcp...)
	var w [8]byte
	binary.BigEndian.PutUint64(w[:], p.words.keys[i])
	s := int(p.lens[i])
	dst = append(dst, w[:min(s, 8)]...)
	if s > 8 {
		start := uint32(0)
		if i > 0 {
			start = p.tailEnd[i-1]
		}
		dst = append(dst, p.tails[start:p.tailEnd[i]]...)
	}
	return dst
}

func (p *packedIndex) trailerAt(i int) uint64 {
	switch {
	case p.trailerIdx != nil:
		return p.trailerDict[p.trailerIdx[i]]
	case p.trailers != nil:
		return p.trailers[i]
	}
	return p.trailer
}

// at decodes entry i into e, its separator in *buf (reused).
func (p *packedIndex) at(i int, e *indexEntry, buf *[]byte) {
	*buf = p.sep((*buf)[:0], i)
	*e = indexEntry{sepUser: *buf, sepTrailer: p.trailerAt(i), h: p.handle(i)}
}

// handle is entry i's block handle.
func (p *packedIndex) handle(i int) blockHandle {
	return blockHandle{offset: p.offset0 + uint64(p.rel[i]), length: uint64(p.rel[i+1]-p.rel[i]) - blockTrailerLen}
}

// search returns the first entry whose separator is >= (ukey, trailer),
// or n; buf is scratch for the separators it compares in full.
func (p *packedIndex) search(ukey []byte, trailer uint64, buf *[]byte) int {
	lo, hi := p.words.wordRange(ukey, p.n)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		*buf = p.sep((*buf)[:0], m)
		c := bytes.Compare(*buf, ukey)
		if c < 0 || (c == 0 && p.trailerAt(m) > trailer) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
