package sketchcol

import (
	"encoding/binary"
	"slices"
)

// Paged strings (FORMAT.md, "Paged string", v5): a Redis string that
// became a bitmap is a small header at its key in the sketch family and
// pages of StrPageSize bytes in the pages family, so that SETBIT writes a
// few bytes of merge operand on one page instead of rewriting the string.
//
// The header is written by Put (the commands that change it hold the
// key's lock and read it anyway, for their reply); the pages take merge
// operands of masked byte writes, which fold into one operand or apply
// to a page in order.

const (
	kindStrHeader = 0x60 // value: a paged string's header (sketch family)
	kindStrPage   = 0x68 // value: a string page (pages family)
	kindStrPageOp = 0x69 // operand: masked byte writes on a string page

	// StrPageSize is the bytes of a paged string's page: page p holds bytes
	// p·4096 … p·4096+4095 of the string.
	StrPageSize = 4096

	// StrMaxLen bounds a paged string's length (2³² bytes: page numbers fit
	// the key's uint32).
	StrMaxLen = 1 << 32

	strHeaderLen = 18
	strRunWhole  = 0 // a run of whole bytes
	strRunMasked = 1 // a run of (mask, value) pairs
)

// StrRun is one run of byte writes on a page: Data written at Off, every
// bit of it when Mask is nil, else only the bits set in Mask (of Data's
// length).
type StrRun struct {
	Off  int
	Data []byte
	Mask []byte
}

// IsStrHeader reports whether a stored value is a paged string's header
// (from its first byte only; ParseStrHeader checks it).
func IsStrHeader(v []byte) bool { return len(v) > 0 && v[0] == kindStrHeader }

// AppendStrHeader appends the header of a paged string of length bytes
// whose pages were created as generation gen.
func AppendStrHeader(dst []byte, length, gen uint64) []byte {
	dst = append(dst, kindStrHeader, version1)
	dst = binary.LittleEndian.AppendUint64(dst, length)
	return binary.LittleEndian.AppendUint64(dst, gen)
}

// ParseStrHeader decodes a paged string's header.
func ParseStrHeader(v []byte) (length, gen uint64, err error) {
	if err := checkValueKind(v, kindStrHeader); err != nil {
		return 0, 0, err
	}
	if len(v) != strHeaderLen {
		return 0, 0, corruptf("paged string header of %d bytes", len(v))
	}
	length = binary.LittleEndian.Uint64(v[2:])
	if length > StrMaxLen {
		return 0, 0, corruptf("paged string of %d bytes", length)
	}
	return length, binary.LittleEndian.Uint64(v[10:]), nil
}

// StrPageKey returns the key, in the pages family, of page p of the paged
// string at key: uvarint(len(key)) | key | 0x68 | p (uint32 big-endian).
// It lies in key's page range (pageRange), which Store.Delete and
// Store.DropPages drop.
func StrPageKey(dst, key []byte, p uint32) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	dst = append(dst, kindStrPage)
	return binary.BigEndian.AppendUint32(dst, p)
}

// StrPageRange returns [start, end) covering every string page of key.
func StrPageRange(key []byte) (start, end []byte) {
	start = append(pagePrefix(key), kindStrPage)
	end = append(slices.Clone(start[:len(start)-1]), kindStrPage+1)
	return start, end
}

// PageOwner returns the key, in the sketch family, whose header a key of
// the pages family belongs to (Bloom, cuckoo, Count-Min, Top-K and string
// pages alike), and the byte after it (a Bloom or cuckoo sub-filter, or
// the page kind 0x4a, 0x58, 0x68). ok is false for a key no writer of
// this package makes. A compaction filter can drop a page whose owner
// holds no header of the page's sort (an expired or replaced key).
func PageOwner(pageKey []byte) (key []byte, sub byte, ok bool) {
	n, k := binary.Uvarint(pageKey)
	if k <= 0 || k != uvarintLen(n) || uint64(len(pageKey)-k) != n+5 {
		return nil, 0, false
	}
	key = pageKey[k : k+int(n)]
	return key, pageKey[k+int(n)], true
}

// AppendStrPage appends the page value holding b (1..StrPageSize bytes).
func AppendStrPage(dst, b []byte) []byte {
	dst = append(dst, kindStrPage, version1)
	return append(dst, b...)
}

// StrPageBytes returns the bytes a stored string page holds (nil: none;
// bytes past them are zeros).
func StrPageBytes(v []byte) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	if err := checkValueKind(v, kindStrPage); err != nil {
		return nil, err
	}
	if len(v) < 3 || len(v)-2 > StrPageSize {
		return nil, corruptf("string page of %d bytes", len(v))
	}
	return v[2:], nil
}

// AppendStrPageOp appends the operand making runs' writes, which must be
// in ascending order of Off, not overlap, and lie within a page; a
// masked run's Data must have no bit outside Mask.
func AppendStrPageOp(dst []byte, runs []StrRun) []byte {
	dst = append(dst, kindStrPageOp, version1)
	dst = binary.AppendUvarint(dst, uint64(len(runs)))
	for _, r := range runs {
		dst = binary.AppendUvarint(dst, uint64(r.Off))
		dst = binary.AppendUvarint(dst, uint64(len(r.Data)))
		if r.Mask == nil {
			dst = append(dst, strRunWhole)
			dst = append(dst, r.Data...)
			continue
		}
		dst = append(dst, strRunMasked)
		for i, d := range r.Data {
			dst = append(dst, r.Mask[i], d)
		}
	}
	return dst
}

// ApplyStrRuns applies runs to page bytes, growing them (with zeros) as
// far as the runs reach, and returns the page.
func ApplyStrRuns(page []byte, runs []StrRun) []byte {
	for _, r := range runs {
		if end := r.Off + len(r.Data); end > len(page) {
			page = append(page, make([]byte, end-len(page))...)
		}
		if r.Mask == nil {
			copy(page[r.Off:], r.Data)
			continue
		}
		for i, d := range r.Data {
			b := &page[r.Off+i]
			*b = *b&^r.Mask[i] | d
		}
	}
	return page
}

// parseStrPageOp decodes a string page operand into runs (slices of op).
func parseStrPageOp(op []byte) ([]StrRun, error) {
	if err := checkValueKind(op, kindStrPageOp); err != nil {
		return nil, err
	}
	b := op[2:]
	m, err := strUvarint(&b)
	if err != nil || m == 0 || m > uint64(len(b)) {
		return nil, corruptf("string page operand: bad run count")
	}
	runs := make([]StrRun, 0, m)
	next := uint64(0)
	for range m {
		r, end, err := parseStrRun(&b, next)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
		next = end
	}
	if len(b) != 0 {
		return nil, corruptf("string page operand: %d trailing bytes", len(b))
	}
	return runs, nil
}

// parseStrRun decodes one run starting at or after from, and returns it
// and the offset past it.
func parseStrRun(b *[]byte, from uint64) (StrRun, uint64, error) {
	off, err1 := strUvarint(b)
	n, err2 := strUvarint(b)
	if err1 != nil || err2 != nil || len(*b) == 0 {
		return StrRun{}, 0, corruptf("string page operand: truncated run")
	}
	if off < from || n == 0 || n > StrPageSize || off+n > StrPageSize {
		return StrRun{}, 0, corruptf("string page operand: run of %d bytes at %d", n, off)
	}
	flag := (*b)[0]
	*b = (*b)[1:]
	r := StrRun{Off: int(off)}
	switch flag {
	case strRunWhole:
		if uint64(len(*b)) < n {
			return StrRun{}, 0, corruptf("string page operand: truncated run")
		}
		r.Data, *b = (*b)[:n], (*b)[n:]
	case strRunMasked:
		if uint64(len(*b)) < 2*n {
			return StrRun{}, 0, corruptf("string page operand: truncated run")
		}
		r.Mask, r.Data = make([]byte, n), make([]byte, n)
		for i := range int(n) {
			r.Mask[i], r.Data[i] = (*b)[2*i], (*b)[2*i+1]
			if r.Mask[i] == 0 || r.Data[i]&^r.Mask[i] != 0 {
				return StrRun{}, 0, corruptf("string page operand: bad mask")
			}
		}
		*b = (*b)[2*n:]
	default:
		return StrRun{}, 0, corruptf("string page operand: run of form %d", flag)
	}
	return r, off + n, nil
}

// strUvarint reads a canonical uvarint from b.
func strUvarint(b *[]byte) (uint64, error) {
	v, k := binary.Uvarint(*b)
	if k <= 0 || k != uvarintLen(v) {
		return 0, corruptf("bad uvarint")
	}
	*b = (*b)[k:]
	return v, nil
}

// isStrPage reports whether a page merge is of a string page (by the
// newest operand, else the base).
func isStrPage(base []byte, hasBase bool, operands [][]byte) bool {
	if len(operands) > 0 && len(operands[len(operands)-1]) > 0 {
		return operands[len(operands)-1][0] == kindStrPageOp
	}
	return hasBase && len(base) > 0 && base[0] == kindStrPage
}

// fullMergeStrPage applies the operands in order to the base page.
func fullMergeStrPage(base []byte, hasBase bool, operands [][]byte) ([]byte, error) {
	page := make([]byte, 0, StrPageSize)
	if hasBase {
		b, err := StrPageBytes(base)
		if err != nil {
			return nil, err
		}
		page = append(page, b...)
	}
	for _, o := range operands {
		runs, err := parseStrPageOp(o)
		if err != nil {
			return nil, err
		}
		page = ApplyStrRuns(page, runs)
	}
	if len(page) == 0 {
		return nil, corruptf("string page: full merge of no base and no operands")
	}
	return AppendStrPage(nil, page), nil
}

// partialMergeStrPage folds operands into one: each byte's writes
// compose (the later one's mask bits win), which is associative.
func partialMergeStrPage(operands [][]byte) ([]byte, bool) {
	var mask, val [StrPageSize]byte
	for _, o := range operands {
		runs, err := parseStrPageOp(o)
		if err != nil {
			return nil, false
		}
		for _, r := range runs {
			for i, d := range r.Data {
				m := byte(0xff)
				if r.Mask != nil {
					m = r.Mask[i]
				}
				j := r.Off + i
				mask[j] |= m
				val[j] = val[j]&^m | d
			}
		}
	}
	return AppendStrPageOp(nil, strRunsOf(mask[:], val[:])), true
}

// strRunsOf returns the canonical runs of per-byte writes: maximal runs
// of written bytes, split where whole bytes (mask 0xff) and masked ones
// meet.
func strRunsOf(mask, val []byte) []StrRun {
	var runs []StrRun
	for i := 0; i < len(mask); {
		if mask[i] == 0 {
			i++
			continue
		}
		whole := mask[i] == 0xff
		j := i
		for j < len(mask) && mask[j] != 0 && (mask[j] == 0xff) == whole {
			j++
		}
		r := StrRun{Off: i, Data: val[i:j]}
		if !whole {
			r.Mask = mask[i:j]
		}
		runs = append(runs, r)
		i = j
	}
	return runs
}
