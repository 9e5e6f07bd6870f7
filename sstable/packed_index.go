package sstable

import (
	"bytes"
	"encoding/binary"
)

// packedIndex is a charged index partition in packed form: what a lookup
// needs of its entries in about a third of the memory of the stored
// block and its word search, so that far more of a table set's index
// fits a given cache. A partition is packed when it is read from the file
// (packAfter), and the packed form is what the cache holds, charged at
// its own size; the stored block goes with the read.
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
func (l *lazyIndex) pack() *packedIndex {
	n := l.blk.numRestarts
	if n == 0 {
		return nil
	}
	es := make([]indexEntry, n)
	for i := range es {
		if l.at(i, &es[i]) != nil {
			return nil
		}
	}
	p := &packedIndex{n: n, words: newIndexWords(es), offset0: es[0].h.offset, trailer: es[0].sepTrailer}
	if !p.packHandles(es) {
		return nil
	}
	nw := len(p.words.keys)
	lcp := len(p.words.lcp)
	p.lens = make([]uint8, nw)
	for i := 0; i < nw; i++ {
		s := len(es[i].sepUser) - lcp
		if s > 255 {
			return nil
		}
		p.lens[i] = uint8(s)
		if s > 8 && p.tailEnd == nil {
			p.tailEnd = make([]uint32, nw)
		}
	}
	if p.tailEnd != nil {
		for i := 0; i < nw; i++ {
			if sep := es[i].sepUser[lcp:]; len(sep) > 8 {
				p.tails = append(p.tails, sep[8:]...)
			}
			p.tailEnd[i] = uint32(len(p.tails))
		}
	}
	if nw < n {
		e := es[n-1]
		e.sepUser = bytes.Clone(e.sepUser)
		p.last = e
	}
	p.packTrailers(es)
	p.packedBytes = packedOverhead + 8*nw + lcp + len(p.lens) + len(p.tails) + 4*len(p.tailEnd) +
		len(p.last.sepUser) + 8*len(p.trailerDict) + len(p.trailerIdx) + 8*len(p.trailers) + 4*len(p.rel)
	return p
}

// packTrailers keeps the trailers: one for all, a dictionary (a table
// written by a compaction to the bottom has sequence numbers zeroed, its
// separators have at most two trailers: the keys' and the shortened
// separators' SeqNumMax one), or one per entry.
func (p *packedIndex) packTrailers(es []indexEntry) {
	var dict []uint64
	idx := make([]uint8, len(es))
	for i := range es {
		j := 0
		for j < len(dict) && dict[j] != es[i].sepTrailer {
			j++
		}
		if j == len(dict) {
			if j == 256 {
				p.trailers = make([]uint64, len(es))
				for k := range es {
					p.trailers[k] = es[k].sepTrailer
				}
				return
			}
			dict = append(dict, es[i].sepTrailer)
		}
		idx[i] = uint8(j)
	}
	if len(dict) > 1 {
		p.trailerDict, p.trailerIdx = dict, idx
	}
}

// packHandles keeps the blocks' offsets relative to the first, checking
// the blocks are contiguous.
func (p *packedIndex) packHandles(es []indexEntry) bool {
	p.rel = make([]uint32, len(es)+1)
	off := p.offset0
	for i := range es {
		h := es[i].h
		end, ok := h.end()
		if h.offset != off || !ok || end-p.offset0 > 1<<32-1 {
			return false
		}
		off = end
		p.rel[i+1] = uint32(end - p.offset0)
	}
	return true
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
