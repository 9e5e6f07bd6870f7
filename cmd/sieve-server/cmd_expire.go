package main

import (
	"math"
)

// Expiry commands (Redis 7.0's; expires.go keeps the deadlines).

func init() {
	register(
		&command{name: "ttl", arity: 2, fn: cmdTTL},
		&command{name: "pttl", arity: 2, fn: cmdTTL},
		&command{name: "expiretime", arity: 2, fn: cmdTTL},
		&command{name: "pexpiretime", arity: 2, fn: cmdTTL},
		&command{name: "persist", arity: 2, fn: cmdPersist, write: true},
		&command{name: "expire", arity: -3, fn: cmdExpire, write: true},
		&command{name: "pexpire", arity: -3, fn: cmdExpire, write: true},
		&command{name: "expireat", arity: -3, fn: cmdExpire, write: true},
		&command{name: "pexpireat", arity: -3, fn: cmdExpire, write: true},
		&command{name: "setex", arity: 4, fn: cmdSetEx, write: true},
		&command{name: "psetex", arity: 4, fn: cmdSetEx, write: true},
		&command{name: "getex", arity: -2, fn: cmdGetEx, write: true},
	)
}

func invalidExpire(r *reply, cmd string) {
	r.err("ERR invalid expire time in '" + cmd + "' command")
}

// toDeadline turns an expiry argument n (seconds unless ms, relative
// unless abs) into a deadline in unix milliseconds, as Redis checks it.
func toDeadline(n int64, ms, abs bool) (int64, bool) {
	if !ms {
		if n > math.MaxInt64/1000 || n < math.MinInt64/1000 {
			return 0, false
		}
		n *= 1000
	}
	if abs {
		return n, true
	}
	now := nowMs()
	if n > math.MaxInt64-now {
		return 0, false
	}
	return n + now, true
}

func cmdTTL(s *Server, r *reply, args [][]byte) {
	raw, err := s.ks.raw(args[1])
	switch {
	case err != nil:
		r.storeErr(err)
		return
	case raw == nil:
		r.int(-2)
		return
	}
	d := s.ks.deadline(args[1])
	if d == 0 {
		r.int(-1)
		return
	}
	switch name := string(lower(args[0])); name {
	case "ttl":
		r.int((max(d-nowMs(), 0) + 500) / 1000)
	case "pttl":
		r.int(max(d-nowMs(), 0))
	case "expiretime":
		r.int(d / 1000)
	default:
		r.int(d)
	}
}

// expireFlags are EXPIRE's NX, XX, GT and LT.
type expireFlags struct{ nx, xx, gt, lt bool }

func parseExpireFlags(r *reply, args [][]byte) (f expireFlags, ok bool) {
	for _, a := range args {
		switch {
		case eq(a, "nx"):
			f.nx = true
		case eq(a, "xx"):
			f.xx = true
		case eq(a, "gt"):
			f.gt = true
		case eq(a, "lt"):
			f.lt = true
		default:
			r.err("ERR Unsupported option " + string(a))
			return f, false
		}
	}
	switch {
	case f.nx && (f.xx || f.gt || f.lt):
		r.err("ERR NX and XX, GT or LT options at the same time are not compatible")
		return f, false
	case f.gt && f.lt:
		r.err("ERR GT and LT options at the same time are not compatible")
		return f, false
	}
	return f, true
}

// allows reports whether the flags let a key whose deadline is cur (0:
// none) take the deadline d.
func (f expireFlags) allows(cur, d int64) bool {
	switch {
	case f.nx && cur != 0, f.xx && cur == 0:
		return false
	case f.gt && (cur == 0 || d <= cur):
		return false
	case f.lt && cur != 0 && d >= cur:
		return false
	}
	return true
}

func cmdExpire(s *Server, r *reply, args [][]byte) {
	name := string(lower(args[0]))
	f, ok := parseExpireFlags(r, args[3:])
	if !ok {
		return
	}
	n, ok := parseInt(args[2])
	if !ok {
		r.notInt()
		return
	}
	d, ok := toDeadline(n, name == "pexpire" || name == "pexpireat", name == "expireat" || name == "pexpireat")
	if !ok {
		invalidExpire(r, name)
		return
	}
	key := args[1]
	defer s.ks.lock(key)()
	raw, err := s.ks.raw(key)
	switch {
	case err != nil:
		r.storeErr(err)
		return
	case raw == nil || !f.allows(s.ks.deadline(key), d):
		r.int(0)
		return
	}
	if err := s.ks.setDeadline(key, d); err != nil {
		r.storeErr(err)
		return
	}
	r.int(1)
}

// setDeadline gives an existing key the deadline d (0: none), deleting
// it if d has come. REQUIRES: key's lock.
func (ks *keyspace) setDeadline(key []byte, d int64) error {
	defer ks.modified(key)
	if d != 0 && d <= nowMs() {
		return ks.del(key)
	}
	v, err := ks.rawEngine(key)
	if err != nil || v == nil {
		return err
	}
	return ks.writeValue(key, v, d)
}

func cmdPersist(s *Server, r *reply, args [][]byte) {
	defer s.ks.lock(args[1])()
	raw, err := s.ks.raw(args[1])
	switch {
	case err != nil:
		r.storeErr(err)
	case raw == nil || s.ks.deadline(args[1]) == 0:
		r.int(0)
	default:
		if err := s.ks.setDeadline(args[1], 0); err != nil {
			r.storeErr(err)
			return
		}
		r.int(1)
	}
}

func cmdSetEx(s *Server, r *reply, args [][]byte) {
	name := string(lower(args[0]))
	n, ok := parseInt(args[2])
	if !ok {
		r.notInt()
		return
	}
	d, ok := toDeadline(n, name == "psetex", false)
	if !ok || n <= 0 {
		invalidExpire(r, name)
		return
	}
	if int64(len(args[3])) > s.lim.maxBulk.Load() {
		r.err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		return
	}
	defer s.ks.lock(args[1])()
	if err := s.ks.setStringDeadline(args[1], args[3], d); err != nil {
		r.storeErr(err)
		return
	}
	r.ok()
}

// setStringDeadline stores a string at key with deadline d (0: none),
// replacing whatever the key held. REQUIRES: key's lock.
func (ks *keyspace) setStringDeadline(key, v []byte, d int64) error {
	if d == 0 {
		return ks.setString(key, v)
	}
	if err := checkSize(key, len(v)+1); err != nil {
		return err
	}
	if _, hasMeta := ks.metaOf(key); hasMeta || ks.isPaged(key) {
		if err := ks.del(key); err != nil {
			return err
		}
	}
	defer ks.modified(key)
	return ks.writeValue(key, encodeString(v), d)
}

// isPaged reports whether key holds a sketch whose pages a new value
// must drop (del drops them).
func (ks *keyspace) isPaged(key []byte) bool {
	v, err := ks.rawEngine(key)
	return err == nil && (typeOf(v).isSketch() || (len(v) > 0 && v[0] == kindPagedString))
}

// ttlOption is one of SET's and GETEX's EX, PX, EXAT, PXAT.
func ttlOption(a []byte) (ms, abs, ok bool) {
	switch {
	case eq(a, "ex"):
		return false, false, true
	case eq(a, "px"):
		return true, false, true
	case eq(a, "exat"):
		return false, true, true
	case eq(a, "pxat"):
		return true, true, true
	}
	return false, false, false
}

// parseTTLArg parses the value of an EX/PX/EXAT/PXAT option into a
// deadline, replying the error Redis gives.
func parseTTLArg(r *reply, cmd string, v []byte, ms, abs bool) (int64, bool) {
	n, ok := parseInt(v)
	if !ok {
		r.notInt()
		return 0, false
	}
	d, ok := toDeadline(n, ms, abs)
	if !ok || n <= 0 {
		invalidExpire(r, cmd)
		return 0, false
	}
	return d, true
}

func cmdGetEx(s *Server, r *reply, args [][]byte) {
	var ttlArg []byte // EX/PX/EXAT/PXAT's value, checked after the lookup (as Redis does)
	var ms, abs, persist bool
	for i := 2; i < len(args); i++ {
		m, a, isTTL := ttlOption(args[i])
		switch {
		case isTTL && ttlArg == nil && !persist && i+1 < len(args):
			ttlArg, ms, abs = args[i+1], m, a
			i++
		case eq(args[i], "persist") && ttlArg == nil && !persist:
			persist = true
		default:
			r.syntax()
			return
		}
	}
	key := args[1]
	defer s.ks.lock(key)()
	v, exists, ok := s.stringOf(r, key)
	switch {
	case !ok:
		return
	case !exists:
		r.null()
		return
	case ttlArg != nil:
		d, ok := parseTTLArg(r, "getex", ttlArg, ms, abs)
		if !ok {
			return
		}
		if err := s.ks.setDeadline(key, d); err != nil {
			r.storeErr(err)
			return
		}
	case persist && s.ks.deadline(key) != 0:
		if err := s.ks.setDeadline(key, 0); err != nil {
			r.storeErr(err)
			return
		}
	}
	r.bulk(v)
}
