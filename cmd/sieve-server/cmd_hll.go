package main

import (
	"errors"

	"github.com/sievedb/sieve/sketchcol"
)

// HyperLogLog: PFADD, PFCOUNT, PFMERGE on the Store, with Redis's
// cached-cardinality bytes kept beside (keyspace.go).

func init() {
	register(
		&command{name: "pfadd", arity: -2, fn: cmdPFAdd, write: true},
		&command{name: "pfcount", arity: -2, fn: cmdPFCount},
		&command{name: "pfmerge", arity: -2, fn: cmdPFMerge, write: true},
		&command{name: "pfdebug", arity: -3, fn: cmdPFDebug},
		&command{name: "pfselftest", arity: 1, fn: cmdPFDebug},
	)
}

const (
	errNotHLL     = "WRONGTYPE Key is not a valid HyperLogLog string value."
	errInvalidHLL = "INVALIDOBJ Corrupted HLL object detected"
)

// hllErr answers a Store error of a PF* command as Redis would.
func (r *reply) hllErr(err error) {
	switch {
	case errors.Is(err, sketchcol.ErrWrongType) && errors.Is(err, sketchcol.ErrCorruption):
		r.err(errNotHLL) // a string that is no HLL
	case errors.Is(err, sketchcol.ErrWrongType):
		r.wrongType() // a Bloom or cuckoo filter
	case errors.Is(err, sketchcol.ErrCorruption):
		r.err(errInvalidHLL)
	default:
		r.storeErr(err)
	}
}

// checkHLLKey checks key's stored value as Redis's isHLLObjectOrReply
// does, and returns it (nil when missing).
func (s *Server) checkHLLKey(r *reply, key []byte) ([]byte, bool) {
	raw, err := s.ks.raw(key)
	if err != nil {
		r.hllErr(err)
		return nil, false
	}
	switch typeOf(raw) {
	case typeNone, typeHLL:
		return raw, true
	case typeString:
		r.err(errNotHLL)
	default:
		r.wrongType()
	}
	return nil, false
}

// hllTypeErr answers the type errors of a PF* command on key as Redis
// would (a string that is no HLL, a filter) and reports whether it did.
func (s *Server) hllTypeErr(r *reply, key []byte) bool {
	raw, err := s.ks.raw(key)
	if err != nil {
		return false
	}
	switch typeOf(raw) {
	case typeString:
		r.err(errNotHLL)
	case typeBloom, typeCuckoo, typeCMS, typeTopK:
		r.wrongType()
	default:
		return false
	}
	return true
}

// staleCache returns the Redis cache bytes of key after a write that
// invalidates its cache: the bytes shown before, top bit set.
func (s *Server) staleCache(key, rawBefore []byte) ([8]byte, bool) {
	c, ok := s.ks.metaOf(key)
	if ok && c[7]&0x80 != 0 {
		return c, false // already stale: nothing to write
	}
	if !ok && rawBefore != nil && len(rawBefore) >= hllHdrLen {
		copy(c[:], rawBefore[8:16])
	}
	c[7] |= 0x80
	return c, true
}

func cmdPFAdd(s *Server, r *reply, args [][]byte) {
	key := args[1]
	defer s.ks.lock(key)()
	var before []byte
	c, hasMeta := s.ks.metaOf(key)
	needBefore := !hasMeta || c[7]&0x80 == 0
	if needBefore {
		raw, ok := s.checkHLLKey(r, key)
		if !ok {
			return
		}
		before = raw
	}
	changed, err := s.ks.st.PFAdd(key, args[2:]...)
	if err != nil {
		r.hllErr(err)
		return
	}
	if changed {
		s.ks.modified(key)
		if stale, write := s.staleCache(key, before); write {
			if err := s.ks.setMeta(key, stale); err != nil {
				r.storeErr(err)
				return
			}
		}
	}
	r.boolInt(changed)
}

func cmdPFCount(s *Server, r *reply, args [][]byte) {
	if len(args) > 2 {
		// Redis checks the keys in order, each one's type and then its
		// registers (merging it): a corrupted HLL before a key of another
		// type answers INVALIDOBJ, after it WRONGTYPE.
		for _, k := range args[1:] {
			raw, ok := s.checkHLLKey(r, k)
			if !ok {
				return
			}
			if raw != nil {
				if _, err := sketchcol.ValidateValue(raw); err != nil {
					r.hllErr(err)
					return
				}
			}
		}
		n, err := s.ks.st.PFCount(args[1:]...)
		if err != nil {
			r.hllErr(err)
			return
		}
		r.int(n)
		return
	}
	key := args[1]
	defer s.ks.lock(key)()
	raw, ok := s.checkHLLKey(r, key)
	if !ok {
		return
	}
	if raw == nil {
		r.int(0)
		return
	}
	c, hasMeta := s.ks.metaOf(key)
	if hasMeta && c[7]&0x80 == 0 {
		// A valid cache Redis would answer from (not written by the
		// server today, but honoured).
		r.int(int64(leUint64(c[:])))
		return
	}
	n, refreshed, err := sketchcol.RefreshHLL(raw)
	if err != nil {
		r.hllErr(err)
		return
	}
	// Redis writes the recomputed cache back: drop the stale bytes kept
	// for a merged value, rewrite a stored value whose own cache is stale.
	if refreshed != nil {
		if err := s.ks.setStringKeepTTL(key, refreshed); err != nil {
			r.storeErr(err)
			return
		}
	} else if hasMeta {
		if err := s.ks.deleteMeta(key); err != nil {
			r.storeErr(err)
			return
		}
		// The Store's mark of key stood for the stale bytes just dropped
		// (cmdPFAddDeferred).
		s.ks.st.ForgetCached(key)
	}
	r.int(n)
}

func cmdPFMerge(s *Server, r *reply, args [][]byte) {
	dst := args[1]
	defer s.ks.lockKeys(args[1:])()
	// Redis merges the destination as a source: a corrupted destination
	// is refused before anything is written.
	for _, k := range args[1:] {
		raw, ok := s.checkHLLKey(r, k)
		if !ok {
			return
		}
		if raw != nil {
			if _, err := sketchcol.ValidateValue(raw); err != nil {
				r.hllErr(err)
				return
			}
		}
	}
	before, _ := s.ks.raw(dst)
	if err := s.ks.st.PFMerge(dst, args[2:]...); err != nil {
		r.hllErr(err)
		return
	}
	s.ks.modified(dst)
	if stale, write := s.staleCache(dst, before); write {
		if err := s.ks.setMeta(dst, stale); err != nil {
			r.storeErr(err)
			return
		}
	}
	r.ok()
}

func cmdPFDebug(s *Server, r *reply, args [][]byte) {
	r.err("ERR PFDEBUG and PFSELFTEST are not supported by sieve-server")
}

func leUint64(b []byte) uint64 {
	var n uint64
	for i := 7; i >= 0; i-- {
		n = n<<8 | uint64(b[i])
	}
	return n
}
