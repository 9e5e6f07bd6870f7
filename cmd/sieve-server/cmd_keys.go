package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/big"
	"math/rand/v2"

	"github.com/sievedb/sieve"
)

// GETDEL, MSETNX, RENAME, RENAMENX, COPY, INCRBYFLOAT and LCS.

func init() {
	register(
		&command{name: "getdel", arity: 2, fn: cmdGetDel, write: true},
		&command{name: "msetnx", arity: -3, fn: cmdMSetNX, write: true},
		&command{name: "rename", arity: 3, fn: cmdRename, write: true},
		&command{name: "renamenx", arity: 3, fn: cmdRename, write: true},
		&command{name: "copy", arity: -3, fn: cmdCopy, write: true},
		&command{name: "incrbyfloat", arity: 3, fn: cmdIncrByFloat, write: true},
	)
}

func cmdGetDel(s *Server, r *reply, args [][]byte) {
	defer s.ks.lock(args[1])()
	v, exists, ok := s.stringOf(r, args[1])
	switch {
	case !ok:
	case !exists:
		r.null()
	default:
		v = bytes.Clone(v)
		if err := s.ks.del(args[1]); err != nil {
			r.storeErr(err)
			return
		}
		r.bulk(v)
	}
}

func cmdMSetNX(s *Server, r *reply, args [][]byte) {
	if len(args)%2 != 1 {
		r.wrongArgs("msetnx")
		return
	}
	keys := make([][]byte, 0, len(args)/2)
	for i := 1; i < len(args); i += 2 {
		if err := checkSize(args[i], len(args[i+1])+1); err != nil {
			r.storeErr(err)
			return
		}
		keys = append(keys, args[i])
	}
	defer s.ks.lockKeys(keys)()
	for _, k := range keys {
		raw, err := s.ks.raw(k)
		if raw != nil || err != nil { // a key that cannot be read exists
			r.int(0)
			return
		}
	}
	b := s.ks.newBatch()
	for i := 1; i < len(args); i += 2 {
		_ = b.PutCF(s.ks.cf, args[i], encodeString(args[i+1]))
		s.ks.dropMeta(b, args[i])
	}
	if err := s.ks.apply(b, keys); err != nil {
		r.storeErr(err)
		return
	}
	s.ks.forgetMeta(keys...)
	r.int(1)
}

// cmdRename is RENAME and RENAMENX. The value moves whole: a paged
// filter's pages move with its header, and an HLL's Redis cache bytes
// with it, in one batch.
func cmdRename(s *Server, r *reply, args [][]byte) {
	src, dst := args[1], args[2]
	nx := eq(args[0], "renamenx")
	if err := checkSize(dst, 0); err != nil {
		r.storeErr(err)
		return
	}
	defer s.ks.lockKeys([][]byte{src, dst})()
	raw, err := s.ks.raw(src)
	switch {
	case err != nil:
		r.storeErr(err)
		return
	case raw == nil:
		r.err("ERR no such key")
		return
	case bytes.Equal(src, dst):
		if nx {
			r.int(0)
		} else {
			r.ok()
		}
		return
	}
	if nx {
		if d, err := s.ks.raw(dst); d != nil || err != nil {
			r.int(0)
			return
		}
	}
	if err := s.ks.moveKey(src, dst, true); err != nil {
		r.storeErr(err)
		return
	}
	if err := s.ks.moveDeadline(src, dst, true); err != nil {
		r.storeErr(err)
		return
	}
	if nx {
		r.int(1)
	} else {
		r.ok()
	}
}

// cmdCopy is COPY src dst [DB 0] [REPLACE]: sieve has database 0 only.
func cmdCopy(s *Server, r *reply, args [][]byte) {
	src, dst := args[1], args[2]
	replace := false
	for i := 3; i < len(args); i++ {
		switch {
		case eq(args[i], "replace"):
			replace = true
		case eq(args[i], "db") && i+1 < len(args):
			n, ok := parseInt(args[i+1])
			if !ok {
				r.notInt()
				return
			}
			if n != 0 {
				r.err("ERR DB index is out of range (sieve-server has one database, 0)")
				return
			}
			i++
		default:
			r.syntax()
			return
		}
	}
	if bytes.Equal(src, dst) {
		r.err("ERR source and destination objects are the same")
		return
	}
	if err := checkSize(dst, 0); err != nil {
		r.storeErr(err)
		return
	}
	defer s.ks.lockKeys([][]byte{src, dst})()
	if raw, err := s.ks.raw(src); err != nil || raw == nil {
		if err != nil {
			r.storeErr(err)
		} else {
			r.int(0)
		}
		return
	}
	if d, err := s.ks.raw(dst); (d != nil || err != nil) && !replace {
		r.int(0)
		return
	}
	if err := s.ks.moveKey(src, dst, false); err != nil {
		r.storeErr(err)
		return
	}
	if err := s.ks.moveDeadline(src, dst, false); err != nil {
		r.storeErr(err)
		return
	}
	r.int(1)
}

// moveKey makes dst a copy of src (its value, a paged value's pages, an
// HLL's cache bytes), replacing whatever dst held, and with del deletes
// src in the same batch (RENAME). REQUIRES: both keys' locks; src exists.
func (ks *keyspace) moveKey(src, dst []byte, del bool) error {
	if ks.tx != nil {
		// The Store reads a paged value's pages from the DB, not through
		// a transaction's batch (Store.Dump refuses it there).
		raw, err := ks.raw(src)
		if err != nil {
			return err
		}
		switch raw[0] {
		case kindPagedBloom, kindPagedCF, kindPagedCMS, kindPagedTopK, kindPagedString:
			return errors.New("sieve-server cannot RENAME or COPY a paged filter, sketch or bitmap inside MULTI/EXEC (it can outside a transaction)")
		}
	}
	b := ks.newBatch()
	if _, err := ks.st.CopyValue(b, src, dst); err != nil {
		return err
	}
	c, hasMeta := ks.metaOf(src)
	if hasMeta {
		_ = b.PutCF(ks.meta, dst, c[:])
	} else {
		ks.dropMeta(b, dst)
	}
	keys := [][]byte{dst}
	ks.bits.drop(dst)
	if del {
		ks.bits.drop(src)
		_ = b.DeleteCF(ks.cf, src)
		_ = ks.st.DropPages(b, src)
		ks.dropMeta(b, src)
		keys = append(keys, src)
	}
	if err := ks.apply(b, keys); err != nil {
		if ks.tx == nil {
			ks.reloadMeta(keys)
		}
		return err
	}
	if hasMeta {
		ks.noteMeta(dst, c)
	} else {
		ks.forgetMeta(dst)
	}
	if del {
		ks.forgetMeta(src)
	}
	return nil
}

// cmdIncrByFloat adds in Redis's long double precision and stores the
// sum as Redis prints it (numfloat.go).
func cmdIncrByFloat(s *Server, r *reply, args [][]byte) {
	defer s.ks.lock(args[1])()
	v, exists, ok := s.stringOf(r, args[1])
	if !ok {
		return
	}
	cur, curInf := new(big.Float), false
	if exists {
		if cur, curInf, ok = parseLongDouble(v); !ok {
			r.err("ERR value is not a valid float")
			return
		}
	}
	incr, incrInf, ok := parseLongDouble(args[2])
	if !ok {
		r.err("ERR value is not a valid float")
		return
	}
	var sum *big.Float
	if !curInf && !incrInf {
		sum, ok = addLongDouble(cur, incr)
	}
	if curInf || incrInf || !ok {
		r.err("ERR increment would produce NaN or Infinity")
		return
	}
	out := formatLongDouble(sum)
	if err := s.ks.setStringKeepTTL(args[1], []byte(out)); err != nil { // Redis keeps the TTL
		r.storeErr(err)
		return
	}
	r.bulkString(out)
}

func init() {
	register(&command{name: "randomkey", arity: 1, fn: cmdRandomKey})
}

// cmdRandomKey answers a random live key: uniform over the first 1,024
// keys from a random starting point (the whole keyspace when it is no
// larger), wrapping around at the end.
func cmdRandomKey(s *Server, r *reply, args [][]byte) {
	start := make([]byte, 8)
	binary.BigEndian.PutUint64(start, rand.Uint64())
	var pick []byte
	seen := 0
	visit := func(lower, upper []byte) error {
		it := s.ks.cf.NewIter(&sieve.IterOptions{LowerBound: lower, UpperBound: upper})
		for ok := it.First(); ok && seen < 1024; ok = it.Next() {
			if s.ks.expiredNow(it.Key()) {
				continue
			}
			seen++
			if rand.IntN(seen) == 0 {
				pick = append(pick[:0], it.Key()...)
			}
		}
		return it.Close()
	}
	if err := visit(start, nil); err != nil {
		r.storeErr(err)
		return
	}
	if seen < 1024 {
		if err := visit(nil, start); err != nil {
			r.storeErr(err)
			return
		}
	}
	if pick == nil {
		r.null()
		return
	}
	r.bulk(pick)
}
