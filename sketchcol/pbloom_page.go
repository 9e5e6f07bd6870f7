package sketchcol

import (
	"encoding/binary"
	"fmt"
	mbits "math/bits"
	"slices"

	"github.com/sievedb/sieve"
)

// The pages of paged Bloom filters live in their own column family, so
// that the keyspace's keys and iteration stay the user's, with their own
// merge operator (PageMerger): a page value is its bits, a page operand
// the bits to set, and merging is a bitwise OR, associative, commutative
// and idempotent.
//
// A page's key is uvarint(len(key)) | key | sub-filter (1 byte) | page
// (uint32 big-endian): the length prefix makes every key's pages one
// contiguous range (pagePrefix) that no other key's pages fall into.

// PagesColumnFamilyName is the column family of the paged filters' pages.
const PagesColumnFamilyName = "sketch-pages"

// PageMergerName is recorded in the manifest for the pages' family.
const PageMergerName = "sieve.sketchcol.pages"

// pagePrefix returns the prefix of every page key of key.
func pagePrefix(key []byte) []byte {
	return append(binary.AppendUvarint(nil, uint64(len(key))), key...)
}

// pageRange returns [start, end) covering every page of key.
func pageRange(key []byte) (start, end []byte) {
	start = pagePrefix(key)
	return start, append(slices.Clone(start), 0xff)
}

// allPagesEnd is above every page key (a key's length takes at most four
// uvarint bytes, below 0xff 0xff 0xff 0xff).
var allPagesEnd = []byte{0xff, 0xff, 0xff, 0xff, 0xff}

// pageKey returns the key of page p of sub-filter i of key.
func pageKey(dst, key []byte, i int, p int64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	dst = append(dst, byte(i))
	return binary.BigEndian.AppendUint32(dst, uint32(p))
}

// Page value: kind 0x28, version 1, then the bits (little-endian within
// each byte; the length is the page's bits / 8). Page operand: kind 0x29,
// version 1, form 1 (positions: page bits uvarint, n uvarint, n uvarint
// bit positions) or form 2 (bits, as in a page value).
const (
	pageFormPositions = 1
	pageFormBits      = 2
)

// pageBitsOf returns the bits of a stored page value (nil: none).
func pageBitsOf(v []byte) ([]byte, error) {
	if v == nil || (len(v) > 0 && v[0] == kindCuckooPage) {
		return nil, nil // none, or a cuckoo filter's page: zeros (trimForeignPages)
	}
	if err := checkValueKind(v, kindBloomPage); err != nil {
		return nil, err
	}
	if len(v) < 2+8 || (len(v)-2)%8 != 0 || len(v)-2 > bloomPageBits/8 {
		return nil, corruptf("Bloom page of %d bytes", len(v))
	}
	return v[2:], nil
}

// appendPageOp appends the operand setting positions in a page of n bits.
func appendPageOp(dst []byte, n int64, positions []uint32) []byte {
	dst = append(dst, kindBloomPageOp, version1, pageFormPositions)
	dst = binary.AppendUvarint(dst, uint64(n))
	dst = binary.AppendUvarint(dst, uint64(len(positions)))
	for _, p := range positions {
		dst = binary.AppendUvarint(dst, uint64(p))
	}
	return dst
}

// orPageOp ORs a page operand into bits (nil: allocates a page of the
// operand's size). Bits of another size than the operand's are a page an
// earlier filter of the key left (pbloom_store.go): the operand replaces
// them.
func orPageOp(bits, op []byte) ([]byte, error) {
	if err := checkValueKind(op, kindBloomPageOp); err != nil {
		return nil, err
	}
	if len(op) < 3 {
		return nil, corruptf("Bloom page operand of %d bytes", len(op))
	}
	switch op[2] {
	case pageFormBits:
		src := op[3:]
		if len(src) == 0 || len(src)%8 != 0 || len(src) > bloomPageBits/8 {
			return nil, corruptf("Bloom page operand of %d bits", 8*len(src))
		}
		if bits == nil || len(bits) != len(src) {
			bits = zeroed(bits, len(src))
		}
		for i, b := range src {
			bits[i] |= b
		}
		return bits, nil
	case pageFormPositions:
		return orPositions(bits, op[3:])
	}
	return nil, corruptf("Bloom page operand of form %d", op[2])
}

func orPositions(bits, b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n == 0 || n%64 != 0 || n > bloomPageBits {
		return nil, corruptf("Bloom page operand of %d bits", n)
	}
	b = b[k:]
	if bits == nil || uint64(len(bits))*8 != n {
		bits = zeroed(bits, int(n/8))
	}
	c, k := binary.Uvarint(b)
	if k <= 0 || c > uint64(len(b)) {
		return nil, corruptf("Bloom page operand: bad count")
	}
	b = b[k:]
	for range c {
		p, k := binary.Uvarint(b)
		if k <= 0 || p >= n {
			return nil, corruptf("Bloom page operand: bad position")
		}
		bits[p>>3] |= 1 << (p & 7)
		b = b[k:]
	}
	if len(b) != 0 {
		return nil, corruptf("Bloom page operand: %d trailing bytes", len(b))
	}
	return bits, nil
}

// PageMerger is the merge operator of the pages' family: stateless,
// deterministic, safe for concurrent use.
type PageMerger struct{}

var _ sieve.Merger = PageMerger{}

// Name returns PageMergerName.
func (PageMerger) Name() string { return PageMergerName }

// FullMerge ORs the operands into the base Bloom page (zeros when
// missing), in the one buffer it returns; on a cuckoo page (kinds 0x38,
// 0x39) it applies the slot writes in order (pcuckoo_page.go).
func (PageMerger) FullMerge(key, base []byte, hasBase bool, operands [][]byte) ([]byte, error) {
	base, hasBase, operands = trimForeignPages(base, hasBase, operands)
	if isStrPage(base, hasBase, operands) { // a paged string's (strpage.go)
		v, err := fullMergeStrPage(base, hasBase, operands)
		if err != nil {
			return nil, fmt.Errorf("sketchcol: page %x: %w", clip(key), err)
		}
		return v, nil
	}
	if isCuckooPage(base, hasBase, operands) {
		return fullMergeCuckooPage(key, base, hasBase, operands)
	}
	if v, ok, err := fullMergeCounterPage(base, hasBase, operands); ok { // Count-Min, Top-K (cms_paged.go)
		if err != nil {
			return nil, fmt.Errorf("sketchcol: page %x: %w", clip(key), err)
		}
		return v, nil
	}
	out := make([]byte, 2, 2+bloomPageBits/8)
	out[0], out[1] = kindBloomPage, version1
	bits := out[2:2]
	if hasBase {
		b, err := pageBitsOf(base)
		if err != nil {
			return nil, fmt.Errorf("sketchcol: page %x: %w", clip(key), err)
		}
		bits = append(bits, b...)
	}
	for i, o := range operands {
		var err error
		if bits, err = orPageOp(bits, o); err != nil {
			return nil, fmt.Errorf("sketchcol: page %x: operand %d of %d: %w", clip(key), i+1, len(operands), err)
		}
	}
	if len(bits) == 0 {
		return nil, fmt.Errorf("sketchcol: page %x: full merge of no base and no operands", clip(key))
	}
	return out[:2+len(bits)], nil
}

// zeroed returns n zero bytes in buf's array when it has room.
func zeroed(buf []byte, n int) []byte {
	if cap(buf) >= n {
		buf = buf[:n]
		clear(buf)
		return buf
	}
	return make([]byte, n)
}

// PartialMerge ORs Bloom operands into one of the bits form, and folds
// cuckoo operands into one (pcuckoo_page.go); it declines a malformed
// one, so the error surfaces on reads of that page alone.
func (PageMerger) PartialMerge(key []byte, operands [][]byte) ([]byte, bool) {
	if isStrPage(nil, false, operands) {
		return partialMergeStrPage(operands)
	}
	if isCuckooPage(nil, false, operands) {
		return partialMergeCuckooPage(operands)
	}
	if k := counterPageKind(nil, false, operands); k != 0 {
		return partialMergeCounterPage(k, operands)
	}
	var bits []byte
	for _, o := range operands {
		n := len(bits)
		var err error
		if bits, err = orPageOp(bits, o); err != nil || (n > 0 && len(bits) != n) {
			// Operands of two page sizes: a later one replaces what came
			// before it only when applied to the value, in order.
			return nil, false
		}
	}
	if len(bits) == 0 {
		return nil, false
	}
	if ones := popcount(bits); ones*3 < len(bits) { // sparse: positions are smaller
		positions := make([]uint32, 0, ones)
		for i, b := range bits {
			for ; b != 0; b &= b - 1 {
				positions = append(positions, uint32(i*8+mbits.TrailingZeros8(b)))
			}
		}
		return appendPageOp(nil, int64(len(bits))*8, positions), true
	}
	return append([]byte{kindBloomPageOp, version1, pageFormBits}, bits...), true
}

func popcount(b []byte) int {
	n := 0
	for _, x := range b {
		n += mbits.OnesCount8(x)
	}
	return n
}
