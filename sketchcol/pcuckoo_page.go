package sketchcol

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Cuckoo pages live in the pages' family beside the Bloom pages, under
// the same keys (pageKey). A page value is its slots; a page operand is
// a list of slot writes (offset, fingerprint; fingerprint 0 empties the
// slot) applied in order, so operands merge in sequence and never commute:
// every writer of a page holds its key's lock (pcuckoo_store.go).
//
//	page value   : 0x38 | version 1 | slots (the page's bytes)
//	page operand : 0x39 | version 1 | page bytes uvarint | n uvarint |
//	               n × (offset uvarint < page bytes | fingerprint 1 byte)

var (
	errCuckooNoExpand   = fmt.Errorf("%w: cuckoo filter may not expand (expansion 0)", ErrFilterFull)
	errCuckooMaxFilters = fmt.Errorf("%w: cuckoo filter has the most sub-filters allowed (%d)", ErrFilterFull, maxCuckooFilters)
	errCuckooNoRoom     = fmt.Errorf("%w: no room for another cuckoo sub-filter", ErrFilterFull)
)

// cuckooSlotsOf returns the slots of a stored page value (nil: none).
func cuckooSlotsOf(v []byte) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	if err := checkValueKind(v, kindCuckooPage); err != nil {
		return nil, err
	}
	if len(v) < 3 || len(v)-2 > cuckooPageBytes {
		return nil, corruptf("cuckoo page of %d bytes", len(v))
	}
	return v[2:], nil
}

// slotWrite is one write of a page operand.
type slotWrite struct {
	off uint32
	fp  byte
}

// appendCuckooPageOp appends the operand writing ws to a page of n bytes.
func appendCuckooPageOp(dst []byte, n int, ws []slotWrite) []byte {
	dst = append(dst, kindCuckooPageOp, version1)
	dst = binary.AppendUvarint(dst, uint64(n))
	dst = binary.AppendUvarint(dst, uint64(len(ws)))
	for _, w := range ws {
		dst = append(binary.AppendUvarint(dst, uint64(w.off)), w.fp)
	}
	return dst
}

// decodeCuckooPageOp returns an operand's page size and writes.
func decodeCuckooPageOp(op []byte) (int, []slotWrite, error) {
	if err := checkValueKind(op, kindCuckooPageOp); err != nil {
		return 0, nil, err
	}
	b := op[2:]
	n, k := canonicalUvarint(b)
	if k <= 0 || n == 0 || n > cuckooPageBytes {
		return 0, nil, corruptf("cuckoo page operand of %d bytes", n)
	}
	b = b[k:]
	c, k := canonicalUvarint(b)
	if k <= 0 || c > uint64(len(b))/2 {
		return 0, nil, corruptf("cuckoo page operand: bad count")
	}
	b = b[k:]
	ws := make([]slotWrite, c)
	for i := range ws {
		off, k := canonicalUvarint(b)
		if k <= 0 || off >= n || len(b) <= k {
			return 0, nil, corruptf("cuckoo page operand: bad write %d", i)
		}
		ws[i] = slotWrite{off: uint32(off), fp: b[k]}
		b = b[k+1:]
	}
	if len(b) != 0 {
		return 0, nil, corruptf("cuckoo page operand: %d trailing bytes", len(b))
	}
	return int(n), ws, nil
}

// applyCuckooPageOp applies an operand to slots (nil: an empty page of
// the operand's size). Slots of another size are a page an earlier filter
// of the key left: the operand starts from an empty page instead.
func applyCuckooPageOp(slots, op []byte) ([]byte, error) {
	n, ws, err := decodeCuckooPageOp(op)
	if err != nil {
		return nil, err
	}
	if len(slots) != n {
		slots = zeroed(slots, n)
	}
	for _, w := range ws {
		slots[w.off] = w.fp
	}
	return slots, nil
}

// trimForeignPages drops from a page merge what precedes the newest
// operand of another family than the last operand's (a family is a page
// kind and its operand's, 0x28/0x29, 0x38/0x39, ...): a page that a
// filter of another kind left, its key replaced by a Put (which drops no
// pages), is replaced by the new filter's first write, as a page of
// another size is. A merge of one family is returned as it is.
func trimForeignPages(base []byte, hasBase bool, operands [][]byte) ([]byte, bool, [][]byte) {
	if len(operands) == 0 || len(operands[len(operands)-1]) == 0 {
		return base, hasBase, operands
	}
	fam := operands[len(operands)-1][0] &^ 1
	for i := len(operands) - 2; i >= 0; i-- {
		if len(operands[i]) > 0 && operands[i][0]&^1 != fam {
			return nil, false, operands[i+1:]
		}
	}
	if hasBase && len(base) > 0 && base[0]&^1 != fam {
		return nil, false, operands
	}
	return base, hasBase, operands
}

// isCuckooPage reports whether a page merge is of cuckoo pages: by the
// base's kind, else the first operand's.
func isCuckooPage(base []byte, hasBase bool, operands [][]byte) bool {
	if hasBase && len(base) > 0 {
		return base[0] == kindCuckooPage
	}
	return len(operands) > 0 && len(operands[0]) > 0 && operands[0][0] == kindCuckooPageOp
}

// fullMergeCuckooPage applies the operands in order to the base page.
func fullMergeCuckooPage(key, base []byte, hasBase bool, operands [][]byte) ([]byte, error) {
	out := make([]byte, 2, 2+cuckooPageBytes)
	out[0], out[1] = kindCuckooPage, version1
	slots := out[2:2]
	if hasBase {
		b, err := cuckooSlotsOf(base)
		if err != nil {
			return nil, fmt.Errorf("sketchcol: page %x: %w", clip(key), err)
		}
		slots = append(slots, b...)
	}
	for i, o := range operands {
		var err error
		if slots, err = applyCuckooPageOp(slots, o); err != nil {
			return nil, fmt.Errorf("sketchcol: page %x: operand %d of %d: %w", clip(key), i+1, len(operands), err)
		}
	}
	if len(slots) == 0 {
		return nil, fmt.Errorf("sketchcol: page %x: full merge of no base and no operands", clip(key))
	}
	return out[:2+len(slots)], nil // slots never outgrow out's array
}

// partialMergeCuckooPage folds operands of one page size into one: the
// last write of each slot, by offset. It declines operands of two sizes
// (a later one replaces the page only when applied to it) and malformed
// ones.
func partialMergeCuckooPage(operands [][]byte) ([]byte, bool) {
	size := -1
	last := map[uint32]byte{}
	for _, o := range operands {
		n, ws, err := decodeCuckooPageOp(o)
		if err != nil || (size >= 0 && n != size) {
			return nil, false
		}
		size = n
		for _, w := range ws {
			last[w.off] = w.fp
		}
	}
	if size < 0 {
		return nil, false
	}
	ws := make([]slotWrite, 0, len(last))
	for off, fp := range last {
		ws = append(ws, slotWrite{off, fp})
	}
	slices.SortFunc(ws, func(a, b slotWrite) int { return int(a.off) - int(b.off) })
	return appendCuckooPageOp(nil, size, ws), true
}
