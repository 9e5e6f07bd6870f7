package main

import (
	"bytes"

	"github.com/sievedb/sieve/sketchcol"
	"math"
	"strconv"
)

// Keys and strings.

func init() {
	register(
		&command{name: "get", arity: 2, fn: cmdGet},
		&command{name: "set", arity: -3, fn: cmdSet, write: true},
		&command{name: "setnx", arity: 3, fn: cmdSetNX, write: true},
		&command{name: "getset", arity: 3, fn: cmdGetSet, write: true},
		&command{name: "mget", arity: -2, fn: cmdMGet},
		&command{name: "mset", arity: -3, fn: cmdMSet, write: true},
		&command{name: "del", arity: -2, fn: cmdDel, write: true},
		&command{name: "unlink", arity: -2, fn: cmdDel, write: true},
		&command{name: "exists", arity: -2, fn: cmdExists},
		&command{name: "type", arity: 2, fn: cmdType},
		&command{name: "strlen", arity: 2, fn: cmdStrlen},
		&command{name: "append", arity: 3, fn: cmdAppend, write: true},
		&command{name: "setrange", arity: 4, fn: cmdSetRange, write: true},
		&command{name: "getrange", arity: 4, fn: cmdGetRange},
		&command{name: "substr", arity: 4, fn: cmdGetRange},
		&command{name: "incr", arity: 2, fn: cmdIncr, write: true},
		&command{name: "decr", arity: 2, fn: cmdIncr, write: true},
		&command{name: "incrby", arity: 3, fn: cmdIncr, write: true},
		&command{name: "decrby", arity: 3, fn: cmdIncr, write: true},
		&command{name: "scan", arity: -2, fn: cmdScan},
		&command{name: "keys", arity: 2, fn: cmdKeys},
		&command{name: "dbsize", arity: 1, fn: cmdDBSize},
		&command{name: "flushall", arity: -1, fn: cmdFlush, write: true},
		&command{name: "flushdb", arity: -1, fn: cmdFlush, write: true},
	)
}

func (r *reply) storeErr(err error) { r.err("ERR " + err.Error()) }

// stringOf returns key's string bytes, or replies WRONGTYPE/an error and
// returns ok=false.
func (s *Server) stringOf(r *reply, key []byte) (v []byte, exists, ok bool) {
	t, v, err := s.ks.lookup(key)
	switch {
	case err != nil:
		r.storeErr(err)
		return nil, false, false
	case t.isSketch():
		r.wrongType()
		return nil, false, false
	}
	return v, t != typeNone, true
}

func cmdGet(s *Server, r *reply, args [][]byte) {
	v, exists, ok := s.stringOf(r, args[1])
	r.hit(exists || !ok)
	switch {
	case !ok:
	case !exists:
		r.null()
	default:
		r.bulk(v)
	}
}

func cmdSet(s *Server, r *reply, args [][]byte) {
	key, val := args[1], args[2]
	var nx, xx, get, keep, ttl bool
	var d int64
	for i := 3; i < len(args); i++ {
		ms, abs, isTTL := ttlOption(args[i])
		switch a := args[i]; {
		case eq(a, "nx") && !xx:
			nx = true
		case eq(a, "xx") && !nx:
			xx = true
		case eq(a, "get"):
			get = true
		case eq(a, "keepttl") && !ttl:
			keep = true
		case isTTL && !ttl && !keep && i+1 < len(args):
			var ok bool
			if d, ok = parseTTLArg(r, "set", args[i+1], ms, abs); !ok {
				return
			}
			ttl = true
			i++
		default:
			r.syntax()
			return
		}
	}
	write := s.ks.setString
	switch {
	case keep:
		write = s.ks.setStringKeepTTL
	case ttl:
		write = func(k, v []byte) error { return s.ks.setStringDeadline(k, v, d) }
	}
	if int64(len(val)) > s.lim.maxBulk.Load() {
		r.err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		return
	}
	if !nx && !xx && !get {
		defer s.ks.lock(key)()
		if err := write(key, val); err != nil {
			r.storeErr(err)
			return
		}
		r.ok()
		return
	}
	defer s.ks.lock(key)()
	t, old, err := s.ks.lookup(key)
	if err != nil {
		r.storeErr(err)
		return
	}
	if get && t.isSketch() {
		r.wrongType()
		return
	}
	if (nx && t != typeNone) || (xx && t == typeNone) {
		if get {
			s.bulkOrNull(r, t, old)
		} else {
			r.null()
		}
		return
	}
	if err := write(key, val); err != nil {
		r.storeErr(err)
		return
	}
	if get {
		s.bulkOrNull(r, t, old)
	} else {
		r.ok()
	}
}

func (s *Server) bulkOrNull(r *reply, t keyType, v []byte) {
	if t == typeNone {
		r.null()
	} else {
		r.bulk(v)
	}
}

func cmdSetNX(s *Server, r *reply, args [][]byte) {
	defer s.ks.lock(args[1])()
	t, _, err := s.ks.lookup(args[1])
	if err != nil {
		r.storeErr(err)
		return
	}
	if t != typeNone {
		r.int(0)
		return
	}
	if err := s.ks.setString(args[1], args[2]); err != nil {
		r.storeErr(err)
		return
	}
	r.int(1)
}

func cmdGetSet(s *Server, r *reply, args [][]byte) {
	defer s.ks.lock(args[1])()
	old, exists, ok := s.stringOf(r, args[1])
	if !ok {
		return
	}
	if err := s.ks.setString(args[1], args[2]); err != nil {
		r.storeErr(err)
		return
	}
	if exists {
		r.bulk(old)
	} else {
		r.null()
	}
}

func cmdMGet(s *Server, r *reply, args [][]byte) {
	type res struct {
		v  []byte
		ok bool
	}
	out := make([]res, 0, len(args)-1)
	for _, k := range args[1:] {
		t, v, err := s.ks.lookup(k)
		if err != nil {
			r.storeErr(err)
			return
		}
		out = append(out, res{v, t == typeString || t == typeHLL})
		r.hit(t != typeNone)
	}
	r.array(len(out))
	for _, x := range out {
		if x.ok {
			r.bulk(x.v)
		} else {
			r.null()
		}
	}
}

func cmdMSet(s *Server, r *reply, args [][]byte) {
	if len(args)%2 != 1 {
		r.wrongArgs("mset")
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
	b := s.ks.newBatch()
	var timed [][]byte // keys whose deadline MSET drops, as Redis's SET does
	for i := 1; i < len(args); i += 2 {
		_ = b.PutCF(s.ks.cf, args[i], encodeString(args[i+1]))
		s.ks.dropMeta(b, args[i])
		if paged, _ := s.ks.isPagedString(args[i]); paged {
			s.ks.dropPaged(b, args[i])
		}
		if s.ks.deadline(args[i]) != 0 {
			s.ks.putDeadline(b, args[i], 0)
			timed = append(timed, args[i])
		}
	}
	if err := s.ks.apply(b, keys); err != nil {
		r.storeErr(err)
		return
	}
	for _, k := range timed {
		s.ks.noteDeadline(k, 0)
	}
	s.ks.forgetMeta(keys...)
	r.ok()
}

func cmdDel(s *Server, r *reply, args [][]byte) {
	keys := args[1:]
	defer s.ks.lockKeys(keys)()
	var present [][]byte
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[string(k)] {
			continue
		}
		seen[string(k)] = true
		raw, err := s.ks.raw(k)
		if err != nil && raw == nil {
			// A key whose value cannot be read (a failing merge) still exists.
			raw = []byte{0}
		}
		if raw != nil {
			present = append(present, k)
		}
	}
	if len(present) > 0 {
		if err := s.ks.del(present...); err != nil {
			r.storeErr(err)
			return
		}
	}
	r.int(int64(len(present)))
}

func cmdExists(s *Server, r *reply, args [][]byte) {
	n := int64(0)
	for _, k := range args[1:] {
		raw, err := s.ks.raw(k)
		if raw != nil || err != nil {
			n++
		}
		r.hit(raw != nil || err != nil)
	}
	r.int(n)
}

func cmdType(s *Server, r *reply, args [][]byte) {
	raw, err := s.ks.raw(args[1])
	if err != nil {
		r.storeErr(err)
		return
	}
	r.hit(raw != nil)
	r.status(typeOf(raw).redisType())
}

func cmdStrlen(s *Server, r *reply, args [][]byte) {
	t, st, err := s.ks.strState(args[1]) // a paged string's header only
	r.hit(err != nil || t != typeNone)
	switch {
	case err != nil:
		r.storeErr(err)
	case t.isSketch():
		r.wrongType()
	default:
		r.int(st.length)
	}
}

// stringState returns key's type and string state (a paged string's
// header, or the inline bytes), replying WRONGTYPE or the error and returning
// ok=false when there is none to use.
func (s *Server) stringState(r *reply, key []byte) (keyType, pstr, bool) {
	t, st, err := s.ks.strState(key)
	switch {
	case err != nil:
		r.storeErr(err)
		return t, st, false
	case t.isSketch():
		r.wrongType()
		return t, st, false
	}
	return t, st, true
}

// pagedState returns key's state when it is a paged string (ok=false:
// answered with an error).
func (s *Server) pagedState(r *reply, key []byte) (st pstr, ok bool) {
	t, st, err := s.ks.strState(key)
	if err != nil {
		r.storeErr(err)
		return st, false
	}
	_ = t // a sketch is not paged: the caller's string path answers WRONGTYPE
	return st, true
}

func cmdAppend(s *Server, r *reply, args [][]byte) {
	defer s.ks.lock(args[1])()
	if st, ok := s.pagedState(r, args[1]); !ok || st.paged {
		if ok {
			s.writeRange(r, args[1], &st, st.length, args[2])
		}
		return
	}
	v, _, ok := s.stringOf(r, args[1])
	if !ok {
		return
	}
	if int64(len(v)+len(args[2])) > s.lim.maxBulk.Load() {
		r.err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		return
	}
	nv := append(bytes.Clone(v), args[2]...)
	if err := s.ks.setStringKeepTTL(args[1], nv); err != nil {
		r.storeErr(err)
		return
	}
	r.int(int64(len(nv)))
}

func cmdSetRange(s *Server, r *reply, args [][]byte) {
	off, ok := parseInt(args[2])
	if !ok {
		r.notInt()
		return
	}
	if off < 0 {
		r.err("ERR offset is out of range")
		return
	}
	defer s.ks.lock(args[1])()
	if st, ok := s.pagedState(r, args[1]); !ok || st.paged {
		if ok && len(args[3]) == 0 {
			r.int(st.length)
		} else if ok {
			s.writeRange(r, args[1], &st, off, args[3])
		}
		return
	}
	v, exists, ok := s.stringOf(r, args[1])
	if !ok {
		return
	}
	val := args[3]
	if len(val) == 0 {
		r.int(int64(len(v))) // nothing written, not even a missing key
		return
	}
	if off+int64(len(val)) > s.lim.maxBulk.Load() {
		r.err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		return
	}
	_ = exists
	n := max(int64(len(v)), off+int64(len(val)))
	nv := make([]byte, n)
	copy(nv, v)
	copy(nv[off:], val)
	if err := s.ks.setStringKeepTTL(args[1], nv); err != nil {
		r.storeErr(err)
		return
	}
	r.int(n)
}

func cmdGetRange(s *Server, r *reply, args [][]byte) {
	start, ok1 := parseInt(args[2])
	end, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		r.notInt()
		return
	}
	v, _, ok := s.stringOf(r, args[1])
	if !ok {
		return
	}
	n := int64(len(v))
	if start < 0 && end < 0 && start > end {
		r.bulk(nil)
		return
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	end = min(end, n-1)
	if start > end || n == 0 {
		r.bulk(nil)
		return
	}
	r.bulk(v[start : end+1])
}

// cmdIncr is INCR, DECR, INCRBY and DECRBY. The counter is read and
// written under the key's lock (the reply is the new value, so it reads
// anyway); it is stored as a string, as Redis shows it.
func cmdIncr(s *Server, r *reply, args [][]byte) {
	name := lower(args[0])
	by := int64(1)
	if len(args) == 3 {
		n, ok := parseInt(args[2])
		if !ok {
			r.notInt()
			return
		}
		by = n
	}
	if name == "decr" || name == "decrby" {
		if by == math.MinInt64 {
			r.err("ERR decrement would overflow")
			return
		}
		by = -by
	}
	defer s.ks.lock(args[1])()
	v, exists, ok := s.stringOf(r, args[1])
	if !ok {
		return
	}
	cur := int64(0)
	if exists {
		n, ok := parseInt(v)
		if !ok || (len(v) > 1 && v[0] == '0') || (len(v) > 1 && v[0] == '-' && v[1] == '0') {
			r.notInt()
			return
		}
		cur = n
	}
	if (by > 0 && cur > math.MaxInt64-by) || (by < 0 && cur < math.MinInt64-by) {
		r.err("ERR increment or decrement would overflow")
		return
	}
	cur += by
	if err := s.ks.setStringKeepTTL(args[1], strconv.AppendInt(nil, cur, 10)); err != nil {
		r.storeErr(err)
		return
	}
	r.int(cur)
}

// scanOpts are SCAN's MATCH, COUNT and TYPE options.
type scanOpts struct {
	pattern []byte
	count   int64
	typ     string
}

func cmdScan(s *Server, r *reply, args [][]byte) {
	c, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		r.err("ERR invalid cursor")
		return
	}
	o, ok := parseScanOpts(r, args[2:])
	if !ok {
		return
	}
	var from []byte
	if c != 0 {
		k, ok := s.ks.resume(c)
		if !ok {
			// An unknown (or expired) cursor: the scan ends, as a Redis
			// cursor past the end would.
			r.array(2)
			r.bulkString("0")
			r.array(0)
			return
		}
		from = k
	}
	keys, next, err := s.scanKeys(from, o)
	if err != nil {
		r.storeErr(err)
		return
	}
	r.array(2)
	r.bulkString(strconv.FormatUint(next, 10))
	r.array(len(keys))
	for _, k := range keys {
		r.bulk(k)
	}
}

// parseScanOpts parses SCAN's option pairs; on an error it replies and
// returns false.
func parseScanOpts(r *reply, args [][]byte) (scanOpts, bool) {
	o := scanOpts{count: 10}
	for i := 0; i < len(args); i += 2 {
		if i+1 >= len(args) {
			r.syntax()
			return o, false
		}
		switch {
		case eq(args[i], "match"):
			o.pattern = args[i+1]
		case eq(args[i], "count"):
			n, ok := parseInt(args[i+1])
			if !ok {
				r.notInt()
				return o, false
			}
			if n < 1 {
				r.syntax()
				return o, false
			}
			o.count = n
		case eq(args[i], "type"):
			o.typ = lower(args[i+1])
		default:
			r.syntax()
			return o, false
		}
	}
	return o, true
}

// scanKeys visits up to o.count keys from from (nil: the first key) and
// returns those that match o, and the cursor of the next key (0 at the
// end).
func (s *Server) scanKeys(from []byte, o scanOpts) (keys [][]byte, next uint64, err error) {
	it := s.ks.cf.NewIter(nil)
	defer it.Close()
	ok := it.First()
	if from != nil {
		ok = it.SeekGE(from)
	}
	visited := int64(0)
	for ; ok && visited < o.count; ok = it.Next() {
		visited++
		k := it.Key()
		if o.pattern != nil && !globMatch(o.pattern, k, false) {
			continue
		}
		if o.typ != "" && !scanTypeMatch(typeOf(it.Value()), o.typ) {
			continue
		}
		keys = append(keys, bytes.Clone(k))
	}
	if ok {
		next = s.ks.cursor(it.Key())
	}
	if err := it.Error(); err != nil {
		return nil, 0, err
	}
	return keys, next, nil
}

// scanTypeMatch reports whether a value of type t passes SCAN's TYPE typ;
// an HLL is a string to Redis.
func scanTypeMatch(t keyType, typ string) bool {
	return t.redisType() == typ || (typ == "string" && t == typeHLL)
}

func cmdKeys(s *Server, r *reply, args [][]byte) {
	it := s.ks.cf.NewIter(nil)
	defer it.Close()
	var keys [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		if globMatch(args[1], it.Key(), false) {
			keys = append(keys, bytes.Clone(it.Key()))
		}
	}
	if err := it.Error(); err != nil {
		r.storeErr(err)
		return
	}
	r.array(len(keys))
	for _, k := range keys {
		r.bulk(k)
	}
}

func cmdDBSize(s *Server, r *reply, args [][]byte) {
	n, err := s.dbsize()
	if err != nil {
		r.storeErr(err)
		return
	}
	r.int(n)
}

func (s *Server) dbsize() (int64, error) {
	it := s.ks.cf.NewIter(nil)
	n := int64(0)
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	err := it.Close()
	return n, err
}

func cmdFlush(s *Server, r *reply, args [][]byte) {
	for _, a := range args[1:] {
		if !eq(a, "async") && !eq(a, "sync") {
			r.syntax()
			return
		}
	}
	defer s.ks.lockAll()()
	if err := s.ks.flush(); err != nil {
		r.storeErr(err)
		return
	}
	r.ok()
}

// globMatch is Redis's stringmatchlen: * ? [set] [^set] [a-z] and \x.
// It backtracks only to the last star (the classic wildcard algorithm), so
// a pattern like "*a*a*a*b" costs O(len(p)·len(s)), not exponential time.
func globMatch(p, s []byte, nocase bool) bool {
	pi, si := 0, 0
	star, starSi := -1, 0
	for si < len(s) {
		if pi < len(p) && p[pi] == '*' {
			for pi < len(p) && p[pi] == '*' {
				pi++
			}
			star, starSi = pi, si
			continue
		}
		if pi < len(p) {
			if n := globOne(p, pi, s[si], nocase); n > 0 {
				pi += n
				si++
				continue
			}
		}
		if star < 0 {
			return false
		}
		starSi++
		pi, si = star, starSi
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// globFold lower-cases an ASCII letter when nocase.
func globFold(c byte, nocase bool) byte {
	if nocase && c >= 'A' && c <= 'Z' {
		return c + 32
	}
	return c
}

// globOne matches the pattern element at p[pi] (not a star) against c and
// returns the length of the element, or 0 when it does not match.
func globOne(p []byte, pi int, c byte, nocase bool) int {
	switch p[pi] {
	case '?':
		return 1
	case '[':
		return globClass(p, pi, c, nocase)
	case '\\':
		if pi+1 < len(p) {
			if globFold(p[pi+1], nocase) == globFold(c, nocase) {
				return 2
			}
			return 0
		}
	}
	if globFold(p[pi], nocase) == globFold(c, nocase) {
		return 1
	}
	return 0
}

// globClass matches the [set], [^set] or [a-z] at p[pi] against c and
// returns its length (an unclosed set runs to the end), or 0 when it does
// not match.
func globClass(p []byte, pi int, c byte, nocase bool) int {
	fc := globFold(c, nocase)
	j := pi + 1
	not := j < len(p) && p[j] == '^'
	if not {
		j++
	}
	match := false
	for j < len(p) && p[j] != ']' {
		switch {
		case p[j] == '\\' && j+1 < len(p):
			j++
			if globFold(p[j], nocase) == fc {
				match = true
			}
		case j+2 < len(p) && p[j+1] == '-' && p[j+2] != ']':
			lo, hi := globFold(p[j], nocase), globFold(p[j+2], nocase)
			if lo > hi {
				lo, hi = hi, lo
			}
			if fc >= lo && fc <= hi {
				match = true
			}
			j += 2
		default:
			if globFold(p[j], nocase) == fc {
				match = true
			}
		}
		j++
	}
	if j < len(p) {
		j++ // the ]
	}
	if match != not {
		return j - pi
	}
	return 0
}

// writeRange writes data at off in the paged string at key (APPEND,
// SETRANGE) and answers the new length. REQUIRES: key's lock.
func (s *Server) writeRange(r *reply, key []byte, st *pstr, off int64, data []byte) {
	end := off + int64(len(data))
	if end > s.lim.maxBulk.Load() || end > sketchcol.StrMaxLen {
		r.err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		return
	}
	if err := s.ks.writePaged(key, st, []edit{{off: off, data: data}}, end); err != nil {
		r.storeErr(err)
		return
	}
	r.int(st.length)
}
