package main

import (
	"bytes"
	"math/bits"
)

func cmdBitPos(s *Server, r *reply, args [][]byte) {
	bit, ok := parseInt(args[2])
	if !ok {
		r.notInt()
		return
	}
	if bit != 0 && bit != 1 {
		r.err("ERR The bit argument must be 1 or 0.")
		return
	}
	v, err := s.viewString(args[1])
	defer v.snap()
	switch {
	case err != nil:
		r.storeErr(err)
		return
	case v.t == typeNone:
		r.int(-bit) // an endless run of zeros
		return
	case v.t.isSketch():
		r.wrongType()
		return
	}
	start, end, first, last, endGiven, ok := bitPosRange(r, args, v.length)
	if !ok {
		return
	}
	if start > end {
		r.int(-1)
		return
	}
	buf, err := v.read(start, end-start+1)
	if err != nil {
		r.storeErr(err)
		return
	}
	buf = bytes.Clone(buf)
	if bit == 1 { // the bits outside the range are not the one sought
		buf[0] &^= first
		buf[len(buf)-1] &^= last
	} else {
		buf[0] |= first
		buf[len(buf)-1] |= last
	}
	pos := findBit(buf, bit == 1)
	switch {
	case pos >= 0:
		r.int(start*8 + pos)
	case bit == 1 || endGiven:
		r.int(-1)
	default: // a clear bit right after the string
		r.int((end + 1) * 8)
	}
}

// bitPosRange parses BITPOS's start, end and unit.
func bitPosRange(r *reply, args [][]byte, length int64) (start, end int64, first, last byte, endGiven, ok bool) {
	switch len(args) {
	case 3:
		return 0, length - 1, 0, 0, false, true
	case 4, 5, 6:
	default:
		r.syntax()
		return 0, 0, 0, 0, false, false
	}
	a, ok := parseInt(args[3])
	if !ok {
		r.notInt()
		return 0, 0, 0, 0, false, false
	}
	isBit := false
	if len(args) == 6 {
		if isBit, ok = bitUnit(r, args[5]); !ok {
			return 0, 0, 0, 0, false, false
		}
	}
	b := length - 1
	if isBit {
		b = length<<3 + 7
	}
	if len(args) >= 5 {
		if b, ok = parseInt(args[4]); !ok {
			r.notInt()
			return 0, 0, 0, 0, false, false
		}
	}
	start, end, first, last = bitRange(a, b, length, isBit)
	return start, end, first, last, len(args) >= 5, true
}

// findBit returns the position of the first bit of buf equal to one
// (bit 0 is the top bit of byte 0), or -1.
func findBit(buf []byte, one bool) int64 {
	for i, c := range buf {
		if !one {
			c = ^c
		}
		if c != 0 {
			return int64(i)*8 + int64(bits.LeadingZeros8(c))
		}
	}
	return -1
}

func cmdBitOp(s *Server, r *reply, args [][]byte) {
	op := lower(args[1])
	switch op {
	case "and", "or", "xor", "not":
	default:
		r.syntax()
		return
	}
	if op == "not" && len(args) != 4 {
		r.err("ERR BITOP NOT must be called with a single source key.")
		return
	}
	dest, srcs := args[2], args[3:]
	defer s.ks.lockKeys(args[2:])()
	vals := make([][]byte, len(srcs))
	maxLen := 0
	for i, k := range srcs {
		t, v, err := s.ks.lookup(k)
		switch {
		case err != nil:
			r.storeErr(err)
			return
		case t.isSketch():
			r.wrongType()
			return
		}
		vals[i], maxLen = v, max(maxLen, len(v))
	}
	if maxLen == 0 {
		if err := s.delIfExists(dest); err != nil {
			r.storeErr(err)
			return
		}
		r.int(0)
		return
	}
	res := bitop(op, vals, maxLen)
	if err := s.ks.storeString(dest, res); err != nil {
		r.storeErr(err)
		return
	}
	r.int(int64(maxLen))
}

// bitop computes BITOP op over vals (shorter ones padded with zeros).
func bitop(op string, vals [][]byte, n int) []byte {
	res := make([]byte, n)
	copy(res, vals[0])
	switch op {
	case "not":
		for i := range res {
			res[i] = ^res[i]
		}
	case "and":
		for _, v := range vals[1:] {
			for i := range res {
				if i < len(v) {
					res[i] &= v[i]
				} else {
					res[i] = 0
				}
			}
		}
	case "or":
		for _, v := range vals[1:] {
			for i, c := range v {
				res[i] |= c
			}
		}
	case "xor":
		for _, v := range vals[1:] {
			for i, c := range v {
				res[i] ^= c
			}
		}
	}
	return res
}

// delIfExists deletes key if it exists. REQUIRES: its lock.
func (s *Server) delIfExists(key []byte) error {
	raw, err := s.ks.raw(key)
	if raw == nil && err == nil {
		return nil
	}
	return s.ks.del(key)
}

// storeString replaces key's value with the string v: paged past one
// page (unless it is HyperLogLog bytes, which the PF commands read
// whole), inline otherwise. REQUIRES: key's lock.
func (ks *keyspace) storeString(key, v []byte) error {
	if len(v) <= strPage || isHLLString(v) {
		return ks.setString(key, v)
	}
	st := pstr{replace: true} // not paged: writePaged starts a new paged string
	return ks.writePaged(key, &st, []edit{{off: 0, data: v}}, int64(len(v)))
}
