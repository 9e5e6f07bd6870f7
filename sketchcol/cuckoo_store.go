package sketchcol

import "fmt"

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
// range return ErrInvalidArgument.
func (s *Store) CFReserve(key []byte, capacity int64, o *CFReserveOptions) error {
	spec, err := o.cuckooSpec(capacity)
	if err != nil {
		return err
	}
	op, err := CFReserveOp(spec)
	return s.reserve(key, KindCuckoo, op, err)
}

// CFAdd adds one copy of item to the cuckoo filter at key (CF.ADD;
// duplicates are allowed), creating one with the defaults (capacity 1024,
// bucket size 2, 20 iterations, expansion 1) if missing. It returns true,
// or ErrFilterFull when no sub-filter has room and none may be added
// (then nothing is written).
func (s *Store) CFAdd(key, item []byte) (bool, error) {
	defer s.lock(key)()
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
// creating one with the defaults if missing, without reading it: one
// merge operand of add records. An add that finds the filter full when
// merged is lost and counted in CFInfo.ItemsDropped; on a key of another
// kind the operand is dropped when merged.
func (s *Store) CFAddBlind(key []byte, items ...[]byte) error {
	return s.mergeOp(key)(CFAddOp(nil, items...))
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
	cur, err := s.get(key)
	if err != nil {
		return false, err
	}
	if cur == nil {
		return false, notFound(key)
	}
	found, err := CFDelReply(cur, item)
	if err != nil || !found {
		return false, err
	}
	return true, s.merge(key, CFDelOp(item))
}

// CFExists reports whether item is possibly present (CF.EXISTS); false
// for a missing key.
func (s *Store) CFExists(key, item []byte) (bool, error) {
	return first(s.CFMExists(key, item))
}

// CFMExists is CF.MEXISTS: CFExists of each item, from one read. Every
// read decodes the whole value, so probing many items of a large filter
// costs far less this way than one CFExists each.
func (s *Store) CFMExists(key []byte, items ...[]byte) ([]bool, error) {
	return readReply(s, key, func(cur []byte) ([]bool, error) { return CFExistsReply(cur, items...) })
}

// CFCount returns how many copies of item's fingerprint the filter holds
// (CF.COUNT): at least the times it was added and not deleted, possibly
// more. 0 for a missing key.
func (s *Store) CFCount(key, item []byte) (int64, error) {
	return readReply(s, key, func(cur []byte) (int64, error) { return CFCountReply(cur, item) })
}

// CFInfo returns CF.INFO (with ItemsDropped, the blind adds lost to a full
// filter). Size is the stored value's length. A missing key returns an
// error wrapping sieve.ErrNotFound.
func (s *Store) CFInfo(key []byte) (CFInfo, error) {
	cur, err := s.get(key)
	if err == nil && cur == nil {
		err = notFound(key)
	}
	if err != nil {
		return CFInfo{}, err
	}
	return CFInfoReply(cur)
}
