package main

import (
	"math"
	"slices"
)

// BITFIELD and BITFIELD_RO.

const (
	bfGet = iota
	bfSet
	bfIncr

	owWrap = iota
	owSat
	owFail
)

type bfOp struct {
	code   int
	signed bool
	bits   int64
	off    int64
	arg    int64
	ow     int
}

const errBFType = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."

// parseBitField parses BITFIELD's subcommands in Redis's order of checks.
func (s *Server) parseBitField(r *reply, args [][]byte) (ops []bfOp, highest int64, ok bool) {
	ow := owWrap
	highest = -1
	for j := 2; j < len(args); j++ {
		rem := len(args) - j - 1
		a := args[j]
		var op bfOp
		switch {
		case eq(a, "get") && rem >= 2:
			op.code = bfGet
		case eq(a, "set") && rem >= 3:
			op.code = bfSet
		case eq(a, "incrby") && rem >= 3:
			op.code = bfIncr
		case eq(a, "overflow") && rem >= 1:
			j++
			switch {
			case eq(args[j], "wrap"):
				ow = owWrap
			case eq(args[j], "sat"):
				ow = owSat
			case eq(args[j], "fail"):
				ow = owFail
			default:
				r.err("ERR Invalid OVERFLOW type specified")
				return nil, 0, false
			}
			continue
		default:
			r.syntax()
			return nil, 0, false
		}
		t := args[j+1]
		n, okN := int64(0), false
		if len(t) > 0 && (t[0] == 'i' || t[0] == 'u') {
			n, okN = parseInt(t[1:])
		}
		op.signed = len(t) > 0 && t[0] == 'i'
		if !okN || n < 1 || (op.signed && n > 64) || (!op.signed && n > 63) {
			r.err(errBFType)
			return nil, 0, false
		}
		op.bits, op.ow = n, ow
		if op.off, okN = s.bitOffset(r, args[j+2], n); !okN {
			return nil, 0, false
		}
		if op.code != bfGet {
			highest = max(highest, op.off+n-1)
			if op.arg, okN = parseInt(args[j+3]); !okN {
				r.notInt()
				return nil, 0, false
			}
			j++
		}
		j += 2
		ops = append(ops, op)
	}
	return ops, highest, true
}

func cmdBitFieldRO(s *Server, r *reply, args [][]byte) { bitField(s, r, args, true) }

func cmdBitField(s *Server, r *reply, args [][]byte) { bitField(s, r, args, false) }

func bitField(s *Server, r *reply, args [][]byte, ro bool) {
	key := args[1]
	ops, highest, ok := s.parseBitField(r, args)
	if !ok {
		return
	}
	if highest >= 0 && ro {
		r.err("ERR BITFIELD_RO only supports the GET subcommand")
		return
	}
	defer s.ks.lock(key)()
	t, st, ok := s.stringState(r, key)
	if !ok {
		return
	}
	bv := &bitVec{s: s, key: key, st: st, dirty: map[int64]byte{}}
	newLen := st.length
	if highest >= 0 {
		newLen = max(newLen, highest>>3+1)
	}
	replies := make([]*int64, len(ops))
	for i, op := range ops {
		v, ok := bv.run(op)
		if bv.err != nil {
			r.storeErr(bv.err)
			return
		}
		if ok {
			replies[i] = &v
		}
	}
	if highest >= 0 && (t == typeNone || newLen > st.length || len(bv.dirty) > 0) {
		if err := s.ks.writePaged(key, &st, bv.edits(), newLen); err != nil {
			r.storeErr(err)
			return
		}
	}
	r.array(len(replies))
	for _, v := range replies {
		if v == nil {
			r.null()
		} else {
			r.int(*v)
		}
	}
}

// bitVec is a string with the bytes a BITFIELD changed over it.
type bitVec struct {
	s     *Server
	key   []byte
	st    pstr
	dirty map[int64]byte
	err   error
}

func (b *bitVec) byteAt(i int64) byte {
	if c, ok := b.dirty[i]; ok {
		return c
	}
	c, err := b.s.ks.byteAt(b.key, b.st, i)
	if err != nil && b.err == nil {
		b.err = err
	}
	return c
}

// get reads an unsigned field of n bits at off (bit 0: top bit of byte 0).
func (b *bitVec) get(off, n int64) uint64 {
	var v uint64
	for i := off; i < off+n; i++ {
		v = v<<1 | uint64(b.byteAt(i>>3)>>(7-uint(i&7))&1)
	}
	return v
}

// set writes the low n bits of v at off.
func (b *bitVec) set(off, n int64, v uint64) {
	for i := off; i < off+n; i++ {
		bit := byte(v>>uint(n-1-(i-off))) & 1
		c, sh := b.byteAt(i>>3), 7-uint(i&7)
		nc := c&^(1<<sh) | bit<<sh
		if nc != c {
			b.dirty[i>>3] = nc
		}
	}
}

// run executes one subcommand; ok is false for a FAIL overflow (a null
// reply, nothing written).
func (b *bitVec) run(op bfOp) (int64, bool) {
	raw := b.get(op.off, op.bits)
	if op.code == bfGet {
		if op.signed {
			return signExtend(raw, op.bits), true
		}
		return int64(raw), true
	}
	var newv, ret uint64
	var over bool
	if op.signed {
		old := signExtend(raw, op.bits)
		if op.code == bfIncr {
			nv, o := signedOverflow(old, op.arg, op.bits, op.ow)
			newv, ret, over = uint64(nv), uint64(nv), o
		} else {
			nv, o := signedOverflow(op.arg, 0, op.bits, op.ow)
			newv, ret, over = uint64(nv), uint64(old), o
		}
	} else {
		if op.code == bfIncr {
			newv, over = unsignedOverflow(raw, op.arg, op.bits, op.ow)
			ret = newv
		} else {
			newv, over = unsignedOverflow(uint64(op.arg), 0, op.bits, op.ow)
			ret = raw
		}
	}
	if over && op.ow == owFail {
		return 0, false
	}
	b.set(op.off, op.bits, newv)
	return int64(ret), true
}

func signExtend(v uint64, n int64) int64 {
	if n < 64 && v>>uint(n-1)&1 == 1 {
		v |= math.MaxUint64 << uint(n)
	}
	return int64(v)
}

// unsignedOverflow returns v+incr in n bits, wrapped or saturated as ow
// says, and whether it overflowed (Redis's checkUnsignedBitfieldOverflow).
func unsignedOverflow(v uint64, incr, n int64, ow int) (uint64, bool) {
	maxv := uint64(1)<<uint(n) - 1
	maxIncr, minIncr := int64(maxv-v), -int64(v)
	wrap := (v + uint64(incr)) & maxv
	switch {
	case v > maxv || (incr > 0 && incr > maxIncr):
		if ow == owSat {
			return maxv, true
		}
		return wrap, true
	case incr < 0 && incr < minIncr:
		if ow == owSat {
			return 0, true
		}
		return wrap, true
	}
	return v + uint64(incr), false
}

// signedOverflow is unsignedOverflow for a signed field (Redis's
// checkSignedBitfieldOverflow, with its two's-complement wrap).
func signedOverflow(v, incr, n int64, ow int) (int64, bool) {
	maxv := int64(math.MaxInt64)
	if n < 64 {
		maxv = 1<<uint(n-1) - 1
	}
	minv := -maxv - 1
	maxIncr := int64(uint64(maxv) - uint64(v))
	minIncr := minv - v
	c := uint64(v) + uint64(incr)
	if n < 64 {
		if c>>uint(n-1)&1 == 1 {
			c |= math.MaxUint64 << uint(n)
		} else {
			c &^= math.MaxUint64 << uint(n)
		}
	}
	switch {
	case v > maxv || (n != 64 && incr > maxIncr) || (v >= 0 && incr > 0 && incr > maxIncr):
		if ow == owSat {
			return maxv, true
		}
		return int64(c), true
	case v < minv || (n != 64 && incr < minIncr) || (v < 0 && incr < 0 && incr < minIncr):
		if ow == owSat {
			return minv, true
		}
		return int64(c), true
	}
	return v + incr, false
}

// edits returns the changed bytes as whole-byte edits, by runs.
func (b *bitVec) edits() []edit {
	idx := make([]int64, 0, len(b.dirty))
	for i := range b.dirty {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	var out []edit
	for _, i := range idx {
		if n := len(out); n > 0 && out[n-1].off+int64(len(out[n-1].data)) == i {
			out[n-1].data = append(out[n-1].data, b.dirty[i])
			continue
		}
		out = append(out, edit{off: i, data: []byte{b.dirty[i]}})
	}
	return out
}
