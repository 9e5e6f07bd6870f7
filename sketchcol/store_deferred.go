package sketchcol

import (
	"github.com/sievedb/sieve"
)

// Deferred runs reply-bearing PFAdds whose operands are not written one by
// one but added to a sieve.Batch and committed together: a server
// answering a pipeline of PFADDs writes the pipeline once, and sends the
// replies after Commit. The replies are exact, computed from the cached
// registers (the Store's cache) with the batch's earlier operands applied.
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
	pend  []pendHLL      // the keys added to, in order
	index map[string]int // pend's index by key, once pend is long
	keys  []byte         // the bytes of pend's keys
	wrote [][]byte
	bloom map[string]*deferredBloom // paged Bloom filters added to (BFAdd)
	op    hllOp                     // scratch: the operand being built
	buf   []byte                    // scratch: its encoding (MergeCF copies it)

	cuckoo deferredCuckoo // paged cuckoo filters added to (CFAdd)

	counters map[string]*deferredCounter // paged Count-Min and Top-K sketches written (CMSIncrBy, TopKIncrBy)
}

// pendHLL is a key of a Deferred and the registers its replies come from
// (held here until Commit, whatever the cache evicts).
type pendHLL struct {
	key    []byte // in Deferred.keys
	h      uint64 // Store.keyHash(key)
	stripe int
	e      *hllCacheEntry
}

// pendScan is how many keys a Deferred searches one by one (a pipeline's
// worth, typically) before it indexes them in a map.
const pendScan = 32

// NewDeferred returns a Deferred adding its operands to b, a batch of the
// Store's DB (it may hold writes of the caller to other families).
func (s *Store) NewDeferred(b *sieve.Batch) *Deferred {
	return &Deferred{s: s, b: b}
}

// pending returns key's entry in d.pend, or nil.
func (d *Deferred) pending(key []byte, h uint64) *pendHLL {
	if d.index != nil {
		if i, ok := d.index[string(key)]; ok {
			return &d.pend[i]
		}
		return nil
	}
	for i := range d.pend {
		if p := &d.pend[i]; p.h == h && string(p.key) == string(key) {
			return p
		}
	}
	return nil
}

// addPending records key's entry (key not yet in d.pend).
func (d *Deferred) addPending(key []byte, h uint64, stripe int, e *hllCacheEntry) {
	n := len(d.keys)
	d.keys = append(d.keys, key...)
	k := d.keys[n:len(d.keys):len(d.keys)]
	d.pend = append(d.pend, pendHLL{key: k, h: h, stripe: stripe, e: e})
	switch {
	case d.index != nil:
		d.index[string(k)] = len(d.pend) - 1
	case len(d.pend) > pendScan:
		d.index = make(map[string]int, 2*len(d.pend))
		for i, p := range d.pend {
			d.index[string(p.key)] = i
		}
	}
}

// Batch returns the batch the Deferred adds to.
func (d *Deferred) Batch() *sieve.Batch { return d.b }

// Wrote declares a write the caller added to the batch for key.
func (d *Deferred) Wrote(key []byte) { d.wrote = append(d.wrote, key) }

// Pending reports whether there is anything to commit.
func (d *Deferred) Pending() bool { return d.b.Len() > 0 || len(d.counters) > 0 }

// PFAdd is Store.PFAdd with its operand added to the batch. created
// reports that the key was missing (PFADD creates it; changed is then
// true).
func (d *Deferred) PFAdd(key []byte, elems ...[]byte) (changed, created bool, err error) {
	changed, created, _, err = d.PFAddMarked(key, elems...)
	return changed, created, err
}

// PFAddMarked is PFAdd for a caller that keeps state of its own beside an
// HLL it changes (a server's Redis cache bytes): marked reports the key's
// mark as it was, and a PFAdd that changes registers sets it. A mark
// lives with the registers the Store caches for the key, so it is lost
// (reported false) whenever they are dropped: on every write to the key
// but a Deferred's PFAdd (and on writes to other keys of its stripe, on
// eviction, on a failed Commit) and on ForgetCached. A caller that brings
// its state up to date on every change not marked, and calls ForgetCached
// when it changes that state without a write of the Store, may skip the
// work when marked.
func (d *Deferred) PFAddMarked(key []byte, elems ...[]byte) (changed, created, marked bool, err error) {
	s := d.s
	stripe, h := s.hashKey(key)
	m := &s.locks[stripe]
	m.Lock()
	defer m.Unlock()
	var e *hllCacheEntry
	p := d.pending(key, h)
	if p != nil {
		e = p.e
	} else {
		e = s.cachedEntry(stripe, h, key)
	}
	if e != nil && e.regs == nil {
		e = nil // a Bloom filter's entry: read, to answer ErrWrongType
	}
	if e == nil {
		st, gl := s.cacheTag(stripe)
		cur, err := s.get(key)
		if err != nil {
			return false, false, false, err
		}
		var regs *hllRegs
		if cur == nil {
			regs, changed, created = &hllRegs{}, true, true
		} else {
			if err := expectKind(cur, KindHLL); err != nil {
				return false, false, false, err
			}
			if regs, err = hllRegsOf(cur); err != nil {
				return false, false, false, err
			}
		}
		e = newHLLEntry(regs, st, gl)
		e.setKey(h, key)
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
	if p == nil {
		d.addPending(key, h, stripe, e)
	}
	marked = e.mark
	if !changed {
		return false, false, marked, nil
	}
	d.buf = appendHLLOp(d.buf[:0], op)
	if err := d.b.MergeCF(s.cf, key, d.buf); err != nil {
		return false, false, false, err
	}
	for _, p := range op.pairs {
		e.regs.raise(int(p.index), p.rank)
	}
	e.mark = true
	return true, created, marked, nil
}

// Commit applies the batch with the Store's write options. On success the
// registers of the keys added to are cached (still tagged with the epochs
// of the read they came from, so any write to their stripes meanwhile
// makes them stale); on failure nothing is cached. Either way the
// Deferred is empty afterwards (its batch reset).
func (d *Deferred) Commit() error {
	s := d.s
	err := d.writeCounters()
	if err != nil {
		s.invalidateAll() // nothing is applied, and no cached state holds
	} else if d.b.Len() > 0 {
		err = d.applyCuckoo()
	}
	for _, k := range d.wrote {
		s.invalidate(k)
	}
	for i := range d.pend {
		p := &d.pend[i]
		m := &s.locks[p.stripe]
		m.Lock()
		c := &s.hllCache[p.stripe]
		switch {
		case err != nil:
			if cur := c.get(p.h, p.key); cur != nil {
				c.drop(cur)
			}
		case !p.e.cached:
			s.putEntry(p.stripe, p.key, p.e)
		default:
			c.resize(p.e, p.key)
		}
		m.Unlock()
		if err != nil {
			s.invalidate(p.key)
		}
	}
	d.commitCounters(err)
	d.commitBloom(err)
	d.commitCuckoo()
	d.b.Reset() // Apply copied what it needed (WAL buffer, memtable arena)
	clear(d.pend)
	d.pend, d.keys, d.index = d.pend[:0], d.keys[:0], nil
	clear(d.wrote) // drop the references to the caller's keys
	d.wrote = d.wrote[:0]
	return err
}
