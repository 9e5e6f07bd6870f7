package sketchcol

import (
	"github.com/sievedb/sieve"
)

// Deferred runs reply-bearing PFAdds whose operands are not written one by
// one but added to a sieve.Batch and committed together: a server
// answering a pipeline of PFADDs writes the pipeline once, and sends the
// replies after Commit. The replies are exact, computed from the cached
// registers (hll_cache.go) with the batch's earlier operands applied.
//
// THE CALLER'S CONTRACT: from a key's first Deferred.PFAdd until Commit
// returns, nothing else writes that key — no other command of this or any
// Store, blind or not — and the batch holds no other write to it (the
// caller holds a lock of its own on the key). Reads of the key meanwhile
// see the value without the pending operands. Writes the caller adds to
// the batch for other keys of the Store's family must be declared with
// Wrote, so that Commit makes their cache entries stale.
//
// A Deferred is not safe for concurrent use.
type Deferred struct {
	s     *Store
	b     *sieve.Batch
	pend  map[string]*hllCacheEntry
	wrote [][]byte
	op    hllOp  // scratch: the operand being built
	buf   []byte // scratch: its encoding (MergeCF copies it)
}

// NewDeferred returns a Deferred adding its operands to b, a batch of the
// Store's DB (it may hold writes of the caller to other families).
func (s *Store) NewDeferred(b *sieve.Batch) *Deferred {
	return &Deferred{s: s, b: b, pend: map[string]*hllCacheEntry{}}
}

// Batch returns the batch the Deferred adds to.
func (d *Deferred) Batch() *sieve.Batch { return d.b }

// Wrote declares a write the caller added to the batch for key.
func (d *Deferred) Wrote(key []byte) { d.wrote = append(d.wrote, key) }

// Pending reports whether there is anything to commit.
func (d *Deferred) Pending() bool { return d.b.Len() > 0 }

// PFAdd is Store.PFAdd with its operand added to the batch. created
// reports that the key was missing (PFADD creates it; changed is then
// true).
func (d *Deferred) PFAdd(key []byte, elems ...[]byte) (changed, created bool, err error) {
	s := d.s
	stripe := s.stripe(key)
	m := &s.locks[stripe]
	m.Lock()
	defer m.Unlock()
	e := d.pend[string(key)]
	if e == nil {
		e = s.cachedHLL(stripe, key)
	}
	if e != nil && e.regs == nil {
		e = nil // a Bloom filter's entry: read, to answer ErrWrongType
	}
	if e == nil {
		st, gl := s.cacheTag(stripe)
		cur, err := s.get(key)
		if err != nil {
			return false, false, err
		}
		var regs *hllRegs
		if cur == nil {
			regs, changed, created = &hllRegs{}, true, true
		} else {
			if err := expectKind(cur, KindHLL); err != nil {
				return false, false, err
			}
			if regs, err = hllRegsOf(cur); err != nil {
				return false, false, err
			}
		}
		e = &hllCacheEntry{regs: regs, stripe: st, global: gl}
	}
	op := &d.op
	op.pairs = op.pairs[:0]
	for _, e := range elems {
		i, r := hllPosition(e)
		op.pairs = append(op.pairs, hllPair{uint16(i), r})
	}
	sortHLLPairs(op)
	for _, p := range op.pairs {
		if p.rank > e.regs.get(int(p.index)) {
			changed = true
			break
		}
	}
	d.pend[string(key)] = e // held here until Commit, whatever the cache evicts
	if !changed {
		return false, false, nil
	}
	d.buf = appendHLLOp(d.buf[:0], op)
	if err := d.b.MergeCF(s.cf, key, d.buf); err != nil {
		return false, false, err
	}
	for _, p := range op.pairs {
		e.regs.raise(int(p.index), p.rank)
	}
	return true, created, nil
}

// Commit applies the batch with the Store's write options. On success the
// registers of the keys added to are cached (still tagged with the epochs
// of the read they came from, so any write to their stripes meanwhile
// makes them stale); on failure nothing is cached. Either way the
// Deferred is empty afterwards (its batch reset).
func (d *Deferred) Commit() error {
	s := d.s
	var err error
	if d.b.Len() > 0 {
		err = s.db.Apply(d.b, s.wo)
	}
	for _, k := range d.wrote {
		s.invalidate(k)
	}
	for k, e := range d.pend {
		key := []byte(k)
		stripe := s.stripe(key)
		m := &s.locks[stripe]
		m.Lock()
		if err != nil {
			if c := &s.hllCache[stripe]; c.m[k] != nil {
				c.drop(key, c.m[k])
			}
		} else if c := &s.hllCache[stripe]; c.m[k] != e {
			s.putHLL(stripe, key, e.regs, e.stripe, e.global)
		} else {
			c.resize(e, key)
		}
		m.Unlock()
		if err != nil {
			s.invalidate(key)
		}
	}
	d.b.Reset() // Apply copied what it needed (WAL buffer, memtable arena)
	clear(d.pend)
	d.wrote = d.wrote[:0]
	return err
}
