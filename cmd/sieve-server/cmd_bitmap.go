package main

import (
	"errors"
	"math/bits"
)

// Bitmaps: SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO, on
// strings, with Redis 7.0's replies. Writes go to paged strings
// (bitmap_store.go).

func init() {
	register(
		&command{name: "setbit", arity: 4, fn: cmdSetBit, write: true},
		&command{name: "getbit", arity: 3, fn: cmdGetBit},
		&command{name: "bitcount", arity: -2, fn: cmdBitCount},
		&command{name: "bitpos", arity: -3, fn: cmdBitPos},
		&command{name: "bitop", arity: -4, fn: cmdBitOp, write: true},
		&command{name: "bitfield", arity: -2, fn: cmdBitField, write: true},
		&command{name: "bitfield_ro", arity: -2, fn: cmdBitFieldRO},
	)
}

const errBitOffset = "ERR bit offset is not an integer or out of range"

// bitOffset parses a bit offset as Redis does (with BITFIELD's #n form
// when bits > 0), within proto-max-bulk-len bytes and a paged string's
// limit.
func (s *Server) bitOffset(r *reply, a []byte, bits int64) (int64, bool) {
	hash := bits > 0 && len(a) > 0 && a[0] == '#'
	if hash {
		a = a[1:]
	}
	n, ok := parseInt(a)
	if hash {
		n *= bits
	}
	if !ok || n < 0 || n>>3 >= min(s.lim.maxBulk.Load(), 1<<32) {
		r.err(errBitOffset)
		return 0, false
	}
	return n, true
}

func cmdSetBit(s *Server, r *reply, args [][]byte) {
	key := args[1]
	off, ok := s.bitOffset(r, args[2], 0)
	if !ok {
		return
	}
	v, ok := parseInt(args[3])
	if !ok || v&^1 != 0 {
		r.err("ERR bit is not an integer or out of range")
		return
	}
	defer s.ks.lock(key)()
	t, st, ok := s.stringState(r, key)
	if !ok {
		return
	}
	idx, shift := off>>3, 7-uint(off&7)
	b, err := s.ks.byteAt(key, st, idx)
	if err != nil {
		r.storeErr(err)
		return
	}
	old := int64(b>>shift) & 1
	if t == typeNone || idx >= st.length || old != v {
		e := edit{off: idx, data: []byte{byte(v) << shift}, mask: []byte{1 << shift}}
		if err := s.ks.writePaged(key, &st, []edit{e}, idx+1); err != nil {
			r.storeErr(err)
			return
		}
	}
	r.int(old)
}

func cmdGetBit(s *Server, r *reply, args [][]byte) {
	key := args[1]
	off, ok := s.bitOffset(r, args[2], 0)
	if !ok {
		return
	}
	defer s.ks.lock(key)() // the page cache is read under the key's lock
	_, st, ok := s.stringState(r, key)
	if !ok {
		return
	}
	b, err := s.ks.byteAt(key, st, off>>3)
	if err != nil {
		r.storeErr(err)
		return
	}
	r.int(int64(b>>(7-uint(off&7))) & 1)
}

// strView is a string read for BITCOUNT and BITPOS: its length and a
// reader of its bytes, as of one moment.
type strView struct {
	t      keyType
	length int64
	inline []byte
	paged  bool
	key    []byte
	s      *Server
	snap   func() // closes the snapshot
	read   func(off, n int64) ([]byte, error)
}

// viewString reads key for BITCOUNT/BITPOS without its lock.
func (s *Server) viewString(key []byte) (strView, error) {
	for {
		raw, err := s.ks.raw(key)
		if err != nil || raw == nil || raw[0] != kindPagedString {
			t, v, err := s.ks.lookup(key)
			return strView{t: t, length: int64(len(v)), inline: v, snap: func() {},
				read: func(off, n int64) ([]byte, error) { return v[off : off+n], nil }}, err
		}
		n, snap, done, err := s.ks.pagedView(key)
		if errors.Is(err, errReread) {
			done()
			continue
		}
		return strView{t: typeString, length: n, paged: true, snap: done,
			read: func(off, l int64) ([]byte, error) { return s.ks.readPaged(key, off, l, snap) }}, err
	}
}

// bitRange turns BITCOUNT's and BITPOS's start and end (negative from the
// end; in bits when isBit) into bytes [start, end] and the masks of the
// bits outside the range in the first and last bytes (Redis's order of
// conversions).
func bitRange(start, end, totlen int64, isBit bool) (int64, int64, byte, byte) {
	if isBit {
		totlen <<= 3
	}
	if start < 0 {
		start += totlen
	}
	if end < 0 {
		end += totlen
	}
	start, end = max(start, 0), max(end, 0)
	end = min(end, totlen-1)
	var first, last byte
	if isBit && start <= end {
		first = ^byte(1<<(8-(start&7)) - 1)
		last = byte(1<<(7-(end&7)) - 1)
		start, end = start>>3, end>>3
	}
	return start, end, first, last
}

// bitUnit parses BYTE or BIT.
func bitUnit(r *reply, a []byte) (isBit, ok bool) {
	switch {
	case eq(a, "bit"):
		return true, true
	case eq(a, "byte"):
		return false, true
	}
	r.syntax()
	return false, false
}

func cmdBitCount(s *Server, r *reply, args [][]byte) {
	v, err := s.viewString(args[1])
	defer v.snap()
	switch {
	case err != nil:
		r.storeErr(err)
		return
	case v.t == typeNone:
		r.int(0)
		return
	case v.t.isSketch():
		r.wrongType()
		return
	}
	start, end := int64(0), v.length-1
	var first, last byte
	switch len(args) {
	case 2:
	case 4, 5:
		a, ok1 := parseInt(args[2])
		b, ok2 := parseInt(args[3])
		if !ok1 || !ok2 {
			r.notInt()
			return
		}
		if a < 0 && b < 0 && a > b {
			r.int(0)
			return
		}
		isBit := false
		if len(args) == 5 {
			var ok bool
			if isBit, ok = bitUnit(r, args[4]); !ok {
				return
			}
		}
		start, end, first, last = bitRange(a, b, v.length, isBit)
	default:
		r.syntax()
		return
	}
	if start > end {
		r.int(0)
		return
	}
	buf, err := v.read(start, end-start+1)
	if err != nil {
		r.storeErr(err)
		return
	}
	n := popcount(buf)
	n -= bits.OnesCount8(buf[0]&first) + bits.OnesCount8(buf[len(buf)-1]&last)
	r.int(int64(n))
}

func popcount(b []byte) int {
	n := 0
	for len(b) >= 8 {
		n += bits.OnesCount64(uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56)
		b = b[8:]
	}
	for _, x := range b {
		n += bits.OnesCount8(x)
	}
	return n
}
