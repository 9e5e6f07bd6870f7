package sketchcol

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/sievedb/sieve"
)

// deferredCuckoo is the paged cuckoo filters a Deferred adds to, each
// with its header and pages as the Deferred's earlier adds left them (a
// nil entry: a key whose state was dropped, which CFAdd refuses until
// Commit). They are all of one Store stripe: Commit holds that stripe's
// lock while it applies the batch, as a plain CF.ADD holds it across its
// write, so that no reader of pages (under the lock) sees a kick half
// applied; a goroutine holds one stripe at a time.
type deferredCuckoo struct {
	stripe int
	keys   map[string]*deferredCF
}

// deferredCF is a filter of a Deferred: its state, and the cache's epochs
// before its header was read (pcuckoo_dcache.go).
type deferredCF struct {
	ps     *cuckooPages
	st, gl uint64
}

// errDeferredCuckoo is CFAdd's answer for a key it leaves to the plain
// command: a filter stored whole, one at the most sub-filters allowed,
// a key written otherwise in the batch, a key of another stripe.
var errDeferredCuckoo = fmt.Errorf("%w: the key cannot join the batch: commit, then run the command alone", ErrInvalidArgument)

// deferredCuckooRoom bounds the batch a CFAdd writes into: one that
// would outgrow it is refused (sieve.MaxBatchSize fails the whole batch).
const deferredCuckooRoom = sieve.MaxBatchSize / 4 * 3

// CFJoins reports whether CFAdd and CFAddNX on key may join the batch:
// it holds no paged cuckoo filter of another stripe of the Store's
// (commit first otherwise).
func (d *Deferred) CFJoins(key []byte) bool {
	return len(d.cuckoo.keys) == 0 || d.cuckoo.stripe == d.s.stripe(key)
}

// CFAdd is Store.CFAdd on a paged cuckoo filter with its writes added to
// the batch: the reply is exact, computed from the key's header and pages
// with the batch's earlier adds applied (the first add to a key places
// its pending adds first, as every locked command does). The Deferred's
// contract holds (the caller locks key until Commit). A missing key is
// created with the defaults. On any error nothing of this call is in the
// batch (earlier calls' writes are), and the caller commits and runs
// Store.CFAdd for the key's reply: an error wrapping ErrInvalidArgument
// says CFAdd left the key to it (a filter stored whole, one with the most
// sub-filters allowed, a key of another stripe than the batch's cuckoo
// filters (see CFJoins), a key the batch wrote otherwise); one wrapping
// ErrFilterFull or ErrWrongType is the command's own.
func (d *Deferred) CFAdd(key, item []byte) (bool, error) { return d.cfAdd(key, item, false) }

// CFAddNX is Store.CFAddNX as CFAdd is Store.CFAdd.
func (d *Deferred) CFAddNX(key, item []byte) (bool, error) { return d.cfAdd(key, item, true) }

func (d *Deferred) cfAdd(key, item []byte, nx bool) (bool, error) {
	s := d.s
	if !d.CFJoins(key) {
		return false, errDeferredCuckoo
	}
	stripe := s.stripe(key)
	m := &s.locks[stripe]
	m.Lock()
	defer m.Unlock()
	dc, known := d.cuckoo.keys[string(key)]
	if known && dc == nil {
		return false, errDeferredCuckoo
	}
	if !known {
		var err error
		if dc, err = d.cuckooPagesOf(stripe, key); err != nil {
			return false, err
		}
	}
	ps := dc.ps
	if len(ps.hdr.items) >= maxCuckooFilters {
		return false, errDeferredCuckoo // RedisBloom refuses it: the plain command says so
	}
	added, err := ps.addOne(itemHash(item), nx)
	if err != nil {
		if !errors.Is(err, ErrFilterFull) { // a full filter's pages are as they were
			d.dropCuckoo(ps.key, known)
		}
		return false, err
	}
	if d.b.Size()+ps.writeSize() > deferredCuckooRoom {
		d.dropCuckoo(ps.key, known) // the add is in ps, not in the batch
		return false, errDeferredCuckoo
	}
	if err := ps.writeTo(d.b); err != nil {
		d.dropCuckoo(ps.key, known) // the batch's sticky error fails Commit
		return false, err
	}
	if !known {
		if d.cuckoo.keys == nil {
			d.cuckoo.keys = map[string]*deferredCF{}
		}
		d.cuckoo.keys[string(ps.key)] = dc
		d.cuckoo.stripe = stripe
	}
	return added, nil
}

// cuckooPagesOf returns key's paged filter for a Deferred's first add to
// key: the one an earlier Deferred left if current, else read (a missing
// key: one created with the defaults) with its pending adds placed.
// REQUIRES: the stripe's lock.
func (d *Deferred) cuckooPagesOf(stripe int, key []byte) (*deferredCF, error) {
	s := d.s
	if d.bloom[string(key)] != nil || d.pending(key, s.keyHash(key)) != nil {
		return nil, errDeferredCuckoo // the batch wrote it as another type
	}
	if dc := s.takeCuckoo(stripe, key); dc != nil {
		return dc, nil
	}
	st, gl := s.cacheTag(stripe)
	cur, err := s.get(key)
	if err != nil {
		return nil, err
	}
	var ps *cuckooPages
	if cur == nil {
		spec, err := cuckooSpecOrDefault(nil)
		if err != nil {
			return nil, err
		}
		hdr, err := newPagedCuckoo(spec)
		if err != nil {
			return nil, err
		}
		ps = s.newCuckooPages(bytes.Clone(key), hdr, true)
	} else {
		hdr, err := pagedCuckooHeader(cur)
		switch {
		case err != nil:
			return nil, err
		case hdr == nil:
			return nil, errDeferredCuckoo // stored whole
		}
		ps = s.newCuckooPages(bytes.Clone(key), hdr, false)
	}
	if err := ps.placePending(); err != nil {
		return nil, err
	}
	return &deferredCF{ps: ps, st: st, gl: gl}, nil
}

// addOne is CF.ADD (CF.ADDNX with nx) of hash h: whether it added it.
func (ps *cuckooPages) addOne(h uint64, nx bool) (bool, error) {
	if nx {
		if in, err := ps.exists(h); in || err != nil {
			return false, err
		}
	}
	if err := ps.add(h); err != nil {
		return false, err
	}
	return true, nil
}

// writeSize bounds the bytes writeTo adds to a batch.
func (ps *cuckooPages) writeSize() int {
	n := 2*len(ps.key) + 128 + 16*len(ps.hdr.items)
	for _, k := range ps.order {
		n += len(k) + 48 + 8*len(ps.pages[k].dirty)
	}
	return n
}

// dropCuckoo forgets key's state after a failed CFAdd that changed it:
// a key the batch holds writes of (known) is refused until Commit.
func (d *Deferred) dropCuckoo(key []byte, known bool) {
	if known {
		d.cuckoo.keys[string(key)] = nil
	}
}

// applyCuckoo applies the batch holding the stripe of the cuckoo filters
// it adds to (if any), which it then caches (pcuckoo_dcache.go; a key
// whose state was dropped is made stale instead).
func (d *Deferred) applyCuckoo() error {
	s := d.s
	if len(d.cuckoo.keys) == 0 {
		return s.db.Apply(d.b, s.wo)
	}
	m := &s.locks[d.cuckoo.stripe]
	m.Lock()
	defer m.Unlock()
	err := s.db.Apply(d.b, s.wo)
	for k, dc := range d.cuckoo.keys {
		if err != nil || dc == nil {
			s.invalidate([]byte(k))
		} else {
			s.putCuckoo(d.cuckoo.stripe, dc)
		}
	}
	return err
}

// commitCuckoo forgets the cuckoo filters added to. REQUIRES: the batch
// applied or failed.
func (d *Deferred) commitCuckoo() { clear(d.cuckoo.keys) }
