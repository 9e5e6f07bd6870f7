package sketchcol

import (
	"errors"
	"fmt"
)

// Bloom commands of the Store (RedisBloom's BF.*).

// BFReserveOptions are BF.RESERVE's optional arguments. nil means the
// defaults.
type BFReserveOptions struct {
	// Expansion is the growth factor of each new sub-filter, 1..32768;
	// 0 means RedisBloom's default, 2. A Bloom filter cannot have
	// expansion 0: use NonScaling.
	Expansion int
	// NonScaling keeps one sub-filter: adds past the capacity fail with
	// ErrFilterFull. Setting Expansion too is an error, as in RedisBloom
	// ("Nonscaling filters cannot expand").
	NonScaling bool
}

// BFInsertOptions are BF.INSERT's optional arguments; the geometry
// (Capacity, ErrorRate, Expansion, NonScaling) is used only when the
// filter is created. nil means the defaults.
type BFInsertOptions struct {
	// Capacity of the first sub-filter; 0 means the default, 100.
	Capacity int64
	// ErrorRate of the first sub-filter, in (0, 1); 0 means the default,
	// 0.01.
	ErrorRate float64
	// Expansion as in BFReserveOptions; 0 means the default, 2.
	Expansion int
	// NonScaling as in BFReserveOptions.
	NonScaling bool
	// NoCreate fails with an error wrapping sieve.ErrNotFound, writing
	// nothing, when the key is missing. With Capacity or ErrorRate it is
	// an error (RedisBloom: "NOCREATE cannot be used together with
	// CAPACITY or ERROR").
	NoCreate bool
}

// bloomSpec returns the geometry BF.RESERVE's arguments describe.
func (o *BFReserveOptions) bloomSpec(errorRate float64, capacity int64) (BloomSpec, error) {
	var opts BFReserveOptions
	if o != nil {
		opts = *o
	}
	return newBloomSpec(errorRate, capacity, opts.Expansion, opts.NonScaling)
}

func newBloomSpec(errorRate float64, capacity int64, expansion int, nonScaling bool) (BloomSpec, error) {
	if nonScaling && expansion != 0 {
		return BloomSpec{}, fmt.Errorf("%w: a non-scaling Bloom filter cannot expand (expansion %d)", ErrInvalidArgument, expansion)
	}
	spec := BloomSpec{ErrorRate: errorRate, Capacity: capacity, Expansion: expansion, NonScaling: nonScaling}
	if !nonScaling && expansion == 0 {
		spec.Expansion = DefaultBloomSpec().Expansion
	}
	return spec, spec.Validate()
}

// bloomSpec returns the geometry BF.INSERT creates a missing key with.
func (o *BFInsertOptions) bloomSpec() (BloomSpec, error) {
	if o == nil {
		return DefaultBloomSpec(), nil
	}
	if o.NoCreate && (o.Capacity != 0 || o.ErrorRate != 0) {
		return BloomSpec{}, fmt.Errorf("%w: NoCreate cannot be used with Capacity or ErrorRate", ErrInvalidArgument)
	}
	def := DefaultBloomSpec()
	rate, capacity := o.ErrorRate, o.Capacity
	if rate == 0 {
		rate = def.ErrorRate
	}
	if capacity == 0 {
		capacity = def.Capacity
	}
	return newBloomSpec(rate, capacity, o.Expansion, o.NonScaling)
}

// BFReserve creates an empty Bloom filter at key for capacity items at
// errorRate (BF.RESERVE). A key that holds a Bloom filter already returns
// ErrItemExists, one of another kind ErrWrongType; arguments out of
// RedisBloom's ranges return ErrInvalidArgument.
func (s *Store) BFReserve(key []byte, errorRate float64, capacity int64, o *BFReserveOptions) error {
	spec, err := o.bloomSpec(errorRate, capacity)
	if err != nil {
		return err
	}
	defer s.lock(key)()
	if err := s.checkAbsent(key, KindBloom); err != nil {
		return err
	}
	return s.pagedReserve(key, spec)
}

// reserve writes op, the reserve operand of a new kind value (or the error
// building it), on key unless the key exists (checkAbsent).
func (s *Store) reserve(key []byte, kind Kind, op []byte, err error) error {
	if err != nil {
		return err
	}
	defer s.lock(key)()
	if err := s.checkAbsent(key, kind); err != nil {
		return err
	}
	return s.merge(key, op)
}

// checkAbsent is the check of BF.RESERVE and CF.RESERVE: nil for a
// missing key, ErrItemExists for a key of kind k, ErrWrongType otherwise.
func (s *Store) checkAbsent(key []byte, k Kind) error {
	cur, err := s.get(key)
	if err != nil || cur == nil {
		return err
	}
	if err := expectKind(cur, k); err != nil {
		return err
	}
	return fmt.Errorf("%w: key %q holds a %s already", ErrItemExists, clip(key), k)
}

// BFAdd adds item to the Bloom filter at key, creating one with the
// defaults (error rate 0.01, capacity 100, expansion 2) if missing, and
// reports whether it was added: false when it is possibly present already
// (then nothing is written). A non-scaling filter at capacity returns
// ErrFilterFull.
func (s *Store) BFAdd(key, item []byte) (bool, error) {
	added, err := s.bfAdd(key, nil, true, item)
	if err != nil {
		return false, err
	}
	return added[0], nil
}

// BFMAdd adds items in order (BF.MADD) and returns one answer per item as
// BFAdd does; an item repeated in items is added once. When a non-scaling
// filter fills, it returns the answers of the items before the one that
// did not fit, with an error wrapping ErrFilterFull: those items are
// written, the rest are not.
func (s *Store) BFMAdd(key []byte, items ...[]byte) ([]bool, error) {
	return s.bfAdd(key, nil, true, items...)
}

// BFInsert is BF.INSERT: BFMAdd, creating a missing key with the geometry
// of o (or failing with sieve.ErrNotFound if o.NoCreate). With no items it
// creates the filter and returns no answers.
func (s *Store) BFInsert(key []byte, o *BFInsertOptions, items ...[]byte) ([]bool, error) {
	spec, err := o.bloomSpec()
	if err != nil {
		return nil, err
	}
	return s.bfAdd(key, &spec, o == nil || !o.NoCreate, items...)
}

// bfAdd adds items, creating a missing key with spec (nil: the defaults)
// if create, failing with sieve.ErrNotFound otherwise.
func (s *Store) bfAdd(key []byte, spec *BloomSpec, create bool, items ...[]byte) ([]bool, error) {
	return s.bfAddOver(key, spec, create, false, items...)
}

// bfAddOver is bfAdd; with overfill, a full paged filter takes the items
// anyway (BFAddBlind).
func (s *Store) bfAddOver(key []byte, spec *BloomSpec, create, overfill bool, items ...[]byte) ([]bool, error) {
	stripe := s.stripe(key)
	m := &s.locks[stripe]
	m.Lock()
	defer m.Unlock()
	if e := s.cachedHLL(stripe, key); e == nil || e.bloom == nil {
		added, err := s.pagedAdd(stripe, key, spec, create, overfill, items)
		if !errors.Is(err, errLegacyBloom) {
			return added, err
		}
	}
	// A filter stored whole (before paging): cached (hll_cache.go), or
	// read and decoded.
	var b *ScalableBloom
	exists, cached := false, false
	var st, gl uint64
	if e := s.cachedHLL(stripe, key); e != nil && e.bloom != nil {
		b, exists, cached = e.bloom, true, true
	} else {
		st, gl = s.cacheTag(stripe)
		cur, err := s.get(key)
		if err != nil {
			return nil, err
		}
		if cur == nil && !create {
			return nil, notFound(key)
		}
		if b, err = bloomOrNew(cur, spec); err != nil {
			return nil, err
		}
		exists = cur != nil
	}
	// BFAddReply on b itself: b becomes the value the operand makes (the
	// items reported added, in order, are the operand's).
	added := make([]bool, 0, len(items))
	var toAdd [][]byte
	var fullErr error
	for _, it := range items {
		a, err := b.addHash(itemHash(it), false)
		if err != nil && !errors.Is(err, ErrFilterFull) {
			s.invalidate(key) // b may be ahead of the DB; nothing is written
			c := &s.hllCache[stripe]
			if e := c.get(s.keyHash(key), key); e != nil {
				c.drop(e)
			}
			return nil, err
		}
		if err != nil {
			fullErr = err
			break
		}
		added = append(added, a)
		if a {
			toAdd = append(toAdd, it)
		}
	}
	if len(toAdd) > 0 || !exists {
		op, err := BFAddOp(spec, toAdd...)
		if err == nil {
			err = s.writeMerge(key, op)
		}
		if err != nil {
			s.invalidate(key) // b is ahead of the DB
			return nil, err
		}
	}
	c := &s.hllCache[stripe]
	if !cached {
		s.putBloom(stripe, key, b, st, gl)
	} else if e := c.get(s.keyHash(key), key); e != nil && e.bloom == b {
		c.resize(e, key)
	}
	return added, fullErr
}

// BFAddBlind adds items to the Bloom filter at key, creating one with the
// defaults if missing, without reading it: one merge operand of the item
// hashes. An item that does not fit a non-scaling filter overfills it
// (more false positives, never a false negative); on a key of another
// kind the operand is dropped when merged.
//
// On a paged filter (every filter this version creates) the count of
// items must know which items are new, so BFAddBlind reads the pages its
// items touch and takes the key's lock, as BFMAdd does.
func (s *Store) BFAddBlind(key []byte, items ...[]byte) error {
	if legacy, err := s.isLegacyBloom(key); err != nil || !legacy {
		if err != nil && !errors.Is(err, ErrWrongType) {
			return err
		}
		if errors.Is(err, ErrWrongType) {
			return nil // dropped, as a blind operand on another kind is
		}
		_, err = s.bfAddOver(key, nil, true, true, items...)
		return err
	}
	return s.mergeOp(key)(BFAddOp(nil, items...))
}

// isLegacyBloom reports whether key holds a Bloom filter stored whole.
func (s *Store) isLegacyBloom(key []byte) (bool, error) {
	cur, err := s.get(key)
	if err != nil || cur == nil {
		return false, err
	}
	if err := expectKind(cur, KindBloom); err != nil {
		return false, err
	}
	return cur[0] == kindBloomValue, nil
}

// BFExists reports whether item is possibly present (BF.EXISTS); false for
// a missing key.
func (s *Store) BFExists(key, item []byte) (bool, error) {
	return first(s.BFMExists(key, item))
}

// BFMExists is BF.MEXISTS: BFExists of each item, from one read. Every
// read decodes the whole value, so probing many items of a large filter
// costs far less this way than one BFExists each.
func (s *Store) BFMExists(key []byte, items ...[]byte) ([]bool, error) {
	stripe := s.stripe(key)
	m := &s.locks[stripe]
	m.Lock()
	b, err := s.pagedHeaderLocked(stripe, key)
	switch {
	case err == nil && b == nil:
		m.Unlock()
		return make([]bool, len(items)), nil // missing
	case err == nil:
		defer m.Unlock()
		return s.pagedExists(stripe, key, b, s.takePages(stripe, key), items)
	}
	m.Unlock()
	if !errors.Is(err, errLegacyBloom) {
		return nil, err
	}
	cur, err := s.get(key)
	if err != nil {
		return nil, err
	}
	return BFExistsReply(cur, items...)
}

// BFCard returns the number of items added (BF.CARD); 0 for a missing key.
func (s *Store) BFCard(key []byte) (int64, error) {
	return readReply(s, key, func(cur []byte) (int64, error) {
		if cur != nil && cur[0] == kindPagedBloom {
			b, err := parsePagedBloom(cur)
			if err != nil {
				return 0, err
			}
			return b.card(), nil
		}
		return BFCardReply(cur)
	})
}

// BFInfo returns BF.INFO: capacity (summed over sub-filters), size in
// bytes of the stored value, sub-filters, items inserted and expansion
// (0 when non-scaling). A missing key returns an error wrapping
// sieve.ErrNotFound.
func (s *Store) BFInfo(key []byte) (BFInfo, error) {
	cur, err := s.get(key)
	if err == nil && cur == nil {
		err = notFound(key)
	}
	if err != nil {
		return BFInfo{}, err
	}
	if cur[0] == kindPagedBloom {
		b, err := parsePagedBloom(cur)
		if err != nil {
			return BFInfo{}, err
		}
		return b.info(), nil
	}
	return BFInfoReply(cur)
}
