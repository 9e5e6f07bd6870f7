package sketchcol

import "fmt"

// HyperLogLog commands of the Store (Redis's PFADD, PFCOUNT, PFMERGE).

// PFAdd adds elems to the HyperLogLog at key, creating it if missing, and
// reports whether the key was created or a register rose (Redis's PFADD
// reply 1). With no elems it only creates the key. When nothing would
// change, nothing is written. A key of another kind returns ErrWrongType.
//
// It reads the key to answer; PFAddBlind writes the same operand without
// reading.
//
// A hot key's registers are cached in memory: PFAdd then neither
// reads nor decodes the value.
func (s *Store) PFAdd(key []byte, elems ...[]byte) (bool, error) {
	stripe := s.stripe(key)
	m := &s.locks[stripe]
	m.Lock()
	defer m.Unlock()
	e := s.cachedHLL(stripe, key)
	if e != nil && e.regs == nil {
		e = nil // a Bloom filter's entry: read, to answer ErrWrongType
	}
	changed := false
	if e == nil {
		st, gl := s.cacheTag(stripe)
		cur, err := s.get(key)
		if err != nil {
			return false, err
		}
		var regs *hllRegs
		if cur == nil {
			regs, changed = &hllRegs{}, true
		} else {
			if err := expectKind(cur, KindHLL); err != nil {
				return false, err
			}
			if regs, err = hllRegsOf(cur); err != nil {
				return false, err
			}
		}
		s.putHLL(stripe, key, regs, st, gl)
		e = s.cachedHLL(stripe, key)
		if e == nil { // not cacheable (too large for a stripe, or cache off)
			e = newHLLEntry(regs, 0, 0)
		}
	}
	op := hllOpOf(elems)
	for _, p := range op.pairs {
		if p.rank > e.regs.get(int(p.index)) {
			changed = true
			break
		}
	}
	if !changed {
		return false, nil
	}
	if err := s.writeMerge(key, appendHLLOp(nil, op)); err != nil {
		s.invalidate(key)
		return false, err
	}
	for _, p := range op.pairs {
		e.regs.raise(int(p.index), p.rank)
	}
	if e.cached {
		c := &s.hllCache[stripe]
		c.resize(e, key)
	}
	return true, nil
}

// PFAddBlind adds elems to the HyperLogLog at key, creating it if missing,
// without reading it: one merge operand of the elements' (register, rank)
// pairs. On a key of another kind the operand is dropped when merged.
func (s *Store) PFAddBlind(key []byte, elems ...[]byte) error {
	return s.merge(key, PFAddOp(elems...))
}

// PFCount returns PFCOUNT: for one key its estimated cardinality (0 when
// missing), for several the cardinality of their union, read from one
// snapshot. Nothing is written.
//
// One key is one read: a value compacted (or restored) carries a valid
// cached cardinality, which is the answer; a key with operands not yet
// compacted is merged by the read, which computes the estimate then. A
// stale cache (only in values written around the Store) is computed and
// not written back: a write-back would have to replace the value, and a
// Put could hide operands written since the read.
func (s *Store) PFCount(keys ...[]byte) (int64, error) {
	switch len(keys) {
	case 0:
		return 0, fmt.Errorf("%w: PFCount needs at least one key", ErrInvalidArgument)
	case 1:
		v, err := s.get(keys[0])
		if err != nil {
			return 0, err
		}
		return PFCountValues(v)
	}
	g, release := s.snapshotGetter()
	defer release()
	vs, err := getAll(g, keys)
	if err != nil {
		return 0, err
	}
	return PFCountValues(vs...)
}

// PFMerge raises the HyperLogLog at dst to the union of itself and srcs,
// creating it if missing (Redis's PFMERGE; dst is a source too). Missing
// sources count as empty; a source or dst of another kind returns
// ErrWrongType and writes nothing. The sources are read from one snapshot.
//
// PFMerge holds dst's lock although its operand (a register-wise max) is
// correct in any order: the lock keeps its type check true until the
// operand is written, against a BFAdd or CFAdd creating dst meanwhile.
func (s *Store) PFMerge(dst []byte, srcs ...[]byte) error {
	defer s.lock(dst)()
	g, release := s.snapshotGetter()
	defer release()
	vs, err := getAll(g, append([][]byte{dst}, srcs...))
	if err != nil {
		return err
	}
	if err := expectKind(vs[0], KindHLL); err != nil {
		return fmt.Errorf("sketchcol: PFMerge destination %q: %w", clip(dst), err)
	}
	op, err := PFMergeOp(vs[1:]...)
	if err != nil {
		return err
	}
	return s.merge(dst, op)
}

// getAll reads keys from g (nil for a missing key).
func getAll(g getter, keys [][]byte) ([][]byte, error) {
	vs := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := getFrom(g, k)
		if err != nil {
			return nil, err
		}
		vs[i] = v
	}
	return vs, nil
}
