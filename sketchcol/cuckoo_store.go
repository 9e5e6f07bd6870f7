package sketchcol

import (
	"errors"
	"fmt"
)

// Cuckoo commands of the Store (RedisBloom's CF.*).

// CFReserveOptions are CF.RESERVE's optional arguments. Zero fields take
// RedisBloom's defaults; nil means all defaults.
type CFReserveOptions struct {
	// BucketSize is the number of fingerprints per bucket, 1..255;
	// 0 means the default, 2.
	BucketSize int
	// MaxIterations is the number of evictions tried before a sub-filter
	// counts as full, 1..65535; 0 means the default, 20.
	MaxIterations int
	// Expansion is the growth factor of each new sub-filter (rounded up
	// to a power of two), 1..32768; 0 means the default, 1.
	Expansion int
	// NonScaling never adds a sub-filter: adds that find no room fail
	// with ErrFilterFull. It is RedisBloom's EXPANSION 0, which a zero
	// Expansion (the default) cannot say; setting Expansion too is an
	// error.
	NonScaling bool
}

// cuckooSpec returns the geometry CF.RESERVE's arguments describe.
func (o *CFReserveOptions) cuckooSpec(capacity int64) (CuckooSpec, error) {
	spec := DefaultCuckooSpec()
	spec.Capacity = capacity
	if o == nil {
		return spec, spec.Validate()
	}
	if o.NonScaling && o.Expansion != 0 {
		return CuckooSpec{}, fmt.Errorf("%w: a non-scaling cuckoo filter cannot expand (expansion %d)", ErrInvalidArgument, o.Expansion)
	}
	if o.BucketSize != 0 {
		spec.BucketSize = o.BucketSize
	}
	if o.MaxIterations != 0 {
		spec.MaxIterations = o.MaxIterations
	}
	if o.Expansion != 0 {
		spec.Expansion = o.Expansion
	}
	if o.NonScaling {
		spec.Expansion = 0
	}
	return spec, spec.Validate()
}

// CFReserve creates an empty cuckoo filter at key sized for capacity
// items (CF.RESERVE). A key that holds a cuckoo filter already returns
// ErrItemExists, one of another kind ErrWrongType; arguments out of
// range return ErrInvalidArgument. The filter is paged (pcuckoo.go): it
// costs its header until items are added, whatever its capacity.
func (s *Store) CFReserve(key []byte, capacity int64, o *CFReserveOptions) error {
	spec, err := o.cuckooSpec(capacity)
	if err != nil {
		return err
	}
	defer s.lock(key)()
	if err := s.checkAbsent(key, KindCuckoo); err != nil {
		return err
	}
	return s.cuckooDo(key, &spec, true, func(*cuckooPages) error { return nil })
}

// CFAdd adds one copy of item to the cuckoo filter at key (CF.ADD;
// duplicates are allowed), creating one with the defaults (capacity 1024,
// bucket size 2, 20 iterations, expansion 1) if missing. It returns true,
// or ErrFilterFull when no sub-filter has room and none may be added
// (then nothing is written).
func (s *Store) CFAdd(key, item []byte) (bool, error) {
	defer s.lock(key)()
	err := s.cuckooDo(key, nil, true, func(ps *cuckooPages) error { return ps.add(itemHash(item)) })
	if errors.Is(err, errLegacyCuckoo) {
		return s.legacyCFAdd(key, item)
	}
	return err == nil, err
}

func (s *Store) legacyCFAdd(key, item []byte) (bool, error) {
	cur, err := s.get(key)
	if err != nil {
		return false, err
	}
	if _, err := CFAddReply(cur, nil, item); err != nil {
		return false, err
	}
	op, err := CFAddOp(nil, item)
	if err != nil {
		return false, err
	}
	return true, s.merge(key, op)
}

// CFAddNX adds item unless it is possibly present (CF.ADDNX) and reports
// whether it added it; it creates a missing key as CFAdd does.
func (s *Store) CFAddNX(key, item []byte) (bool, error) {
	defer s.lock(key)()
	added := false
	err := s.cuckooDo(key, nil, true, func(ps *cuckooPages) error {
		h := itemHash(item)
		if in, err := ps.exists(h); in || err != nil {
			return err
		}
		added = true
		return ps.add(h)
	})
	if errors.Is(err, errLegacyCuckoo) {
		return s.legacyCFAddNX(key, item)
	}
	return added && err == nil, err
}

func (s *Store) legacyCFAddNX(key, item []byte) (bool, error) {
	cur, err := s.get(key)
	if err != nil {
		return false, err
	}
	added, err := CFAddNXReply(cur, nil, item)
	if err != nil || !added[0] {
		return false, err
	}
	op, err := CFAddNXOp(nil, item)
	if err != nil {
		return false, err
	}
	return true, s.merge(key, op)
}

// CFAddBlind adds one copy of each item to the cuckoo filter at key,
// creating one with the defaults if missing; an add that finds the filter
// full is lost and counted in CFInfo.ItemsDropped. On a paged filter (and
// a missing key) it places the items under the key's lock as CFAdd does,
// in one write: a cuckoo filter's placement depends on what it holds, so
// its writes cannot be blind. On a filter stored whole it writes one
// merge operand of add records without reading; on a key of another kind
// that operand is dropped when merged.
func (s *Store) CFAddBlind(key []byte, items ...[]byte) error {
	unlock := s.lock(key)
	err := s.cuckooDo(key, nil, true, func(ps *cuckooPages) error { return ps.addHashes(itemHashes(items)) })
	unlock()
	if errors.Is(err, errLegacyCuckoo) || errors.Is(err, ErrWrongType) {
		return s.mergeOp(key)(CFAddOp(nil, items...))
	}
	return err
}

func itemHashes(items [][]byte) []uint64 {
	hs := make([]uint64, len(items))
	for i, it := range items {
		hs[i] = itemHash(it)
	}
	return hs
}

// CFDel removes one copy of item's fingerprint, from the newest sub-filter
// holding one, and reports whether there was one (CF.DEL). A missing key
// returns an error wrapping sieve.ErrNotFound (RedisBloom: "Not found").
//
// HAZARD: delete only items that were added. Deleting an absent item that
// happens to share a fingerprint and bucket with another removes that
// other item, which then tests negative.
func (s *Store) CFDel(key, item []byte) (bool, error) {
	defer s.lock(key)()
	found := false
	err := s.cuckooDo(key, nil, false, func(ps *cuckooPages) (err error) {
		found, err = ps.del(itemHash(item))
		return err
	})
	if !errors.Is(err, errLegacyCuckoo) {
		return found && err == nil, err
	}
	cur, err := s.get(key)
	if err != nil {
		return false, err
	}
	if found, err = CFDelReply(cur, item); err != nil || !found {
		return false, err
	}
	return true, s.merge(key, CFDelOp(item))
}

// CFExists reports whether item is possibly present (CF.EXISTS); false
// for a missing key.
func (s *Store) CFExists(key, item []byte) (bool, error) {
	return first(s.CFMExists(key, item))
}

// CFMExists is CF.MEXISTS: CFExists of each item. On a paged filter each
// item reads the pages of its two buckets in each sub-filter (under the
// key's lock, so that no add's evictions are seen half done).
func (s *Store) CFMExists(key []byte, items ...[]byte) ([]bool, error) {
	out := make([]bool, len(items))
	unlock := s.lock(key)
	err := s.cuckooRead(key, func(ps *cuckooPages) error {
		for i, it := range items {
			in, err := ps.exists(itemHash(it))
			if err != nil {
				return err
			}
			out[i] = in
		}
		return nil
	})
	unlock()
	if errors.Is(err, errLegacyCuckoo) {
		return readReply(s, key, func(cur []byte) ([]bool, error) { return CFExistsReply(cur, items...) })
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CFCount returns how many copies of item's fingerprint the filter holds
// (CF.COUNT): at least the times it was added and not deleted, possibly
// more. 0 for a missing key.
func (s *Store) CFCount(key, item []byte) (int64, error) {
	var n int64
	unlock := s.lock(key)
	err := s.cuckooRead(key, func(ps *cuckooPages) (err error) {
		n, err = ps.count(itemHash(item), false)
		return err
	})
	unlock()
	if errors.Is(err, errLegacyCuckoo) {
		return readReply(s, key, func(cur []byte) (int64, error) { return CFCountReply(cur, item) })
	}
	return n, err
}

// CFInfo returns CF.INFO (with ItemsDropped, the blind adds lost to a full
// filter). Size is computed from the geometry as RedisBloom counts it. A
// missing key returns an error wrapping sieve.ErrNotFound.
func (s *Store) CFInfo(key []byte) (CFInfo, error) {
	cur, err := s.get(key)
	if err == nil && cur == nil {
		err = notFound(key)
	}
	if err != nil {
		return CFInfo{}, err
	}
	if h, err := pagedCuckooHeader(cur); err == nil && h != nil && len(h.pending) > 0 {
		// A Batch's adds wait to be placed: count them as placed.
		var info CFInfo
		unlock := s.lock(key)
		err := s.cuckooRead(key, func(ps *cuckooPages) error { info = ps.hdr.info(); return nil })
		unlock()
		if err == nil || !errors.Is(err, errLegacyCuckoo) {
			return info, err
		}
	}
	return CFInfoReply(cur)
}
