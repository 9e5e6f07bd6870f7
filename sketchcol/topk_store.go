package sketchcol

import "errors"

// Top-K commands of the Store (RedisBloom's TOPK.*).

// TopKReserve creates an empty Top-K sketch at key keeping the k heaviest
// items, with width × depth HeavyKeeper buckets and the given decay
// (TOPK.RESERVE key k width depth decay). Zero width, depth and decay take
// RedisBloom's defaults, 8, 7 and 0.9. An existing key (of any kind)
// returns ErrTopKKeyExists; bad parameters ErrTopKInvalidK/Width/Depth/
// Decay.
func (s *Store) TopKReserve(key []byte, k, width, depth int, decay float64) error {
	spec := TopKSpec{K: k, Width: width, Depth: depth, Decay: decay}
	def := DefaultTopKSpec()
	if width == 0 && depth == 0 && decay == 0 {
		spec.Width, spec.Depth, spec.Decay = def.Width, def.Depth, def.Decay
	}
	if err := spec.Validate(); err != nil {
		return err
	}
	defer s.lock(key)()
	if err := s.checkMissing(key, ErrTopKKeyExists); err != nil {
		return err
	}
	return s.topKReservePaged(key, spec)
}

// TopKAdd adds each item once, in order (TOPK.ADD), and returns the item
// each add expelled from the top k, nil when none. A missing key returns
// ErrTopKKeyNotFound, another kind ErrWrongType.
func (s *Store) TopKAdd(key []byte, items ...[]byte) ([][]byte, error) {
	return s.TopKIncrBy(key, items, nil)
}

// TopKIncrBy adds each item its increment (0..100000, else
// ErrTopKInvalidIncr and nothing is written), in order (TOPK.INCRBY;
// increments nil: all 1), and returns the items expelled as TopKAdd.
func (s *Store) TopKIncrBy(key []byte, items [][]byte, increments []int64) ([][]byte, error) {
	op, err := TopKIncrByOp(items, increments)
	if err != nil {
		return nil, err
	}
	stripe := s.stripe(key)
	s.locks[stripe].Lock()
	defer s.locks[stripe].Unlock()
	hdr, c, cur, err := s.topKLocked(stripe, key)
	if err != nil && !errors.Is(err, ErrTopKKeyNotFound) {
		return nil, err
	}
	if hdr != nil {
		recs, _ := topKRecords(items, increments) // checked by TopKIncrByOp
		return s.topKPagedAdd(key, hdr, c, false, recs)
	}
	out, err := TopKIncrByReply(cur, items, increments)
	if err != nil {
		return nil, err
	}
	return out, s.merge(key, op)
}

// TopKAddBlind adds each item once without reading: one merge operand,
// applied in order when merged. A missing key is created with
// DefaultTopKSpec (k 10; RedisBloom would refuse); on a key of another
// kind the operand is dropped.
//
// On an existing sketch it is TopKAdd without the reply: the adds need
// the header and the pages the items touch (to offer the items to the
// heap), which the locked command takes from the cache of hot sketches.
// On a missing key it reads the default header and the pages without the
// key's lock: the buckets' adds are exact (the merge replays them in
// commit order), the heap's offers come from what it read.
func (s *Store) TopKAddBlind(key []byte, items ...[]byte) error {
	if _, err := s.TopKAdd(key, items...); !errors.Is(err, ErrTopKKeyNotFound) && !errors.Is(err, ErrWrongType) {
		return err
	}
	if ok, err := s.topKBlind(key, items); ok || err != nil {
		return err
	}
	return s.mergeOp(key)(TopKIncrByOp(items, nil))
}

// TopKQuery reports whether each item is among the top k (TOPK.QUERY).
// A missing key returns ErrTopKKeyNotFound.
func (s *Store) TopKQuery(key []byte, items ...[]byte) ([]bool, error) {
	r, cur, ok, err := topKReadPaged(s, key, func(ps *topKPageSet) ([]bool, error) {
		return existsAll(ps.hdr.Query, items), nil
	})
	if ok || err != nil {
		return r, err
	}
	return TopKQueryReply(cur, items...)
}

// TopKCount returns each item's estimated count (TOPK.COUNT, deprecated in
// RedisBloom). A missing key returns ErrTopKKeyNotFound.
func (s *Store) TopKCount(key []byte, items ...[]byte) ([]int64, error) {
	r, cur, ok, err := topKReadPaged(s, key, func(ps *topKPageSet) ([]int64, error) {
		out := make([]int64, len(items))
		for i, it := range items {
			var err error
			if out[i], err = ps.count(it); err != nil {
				return nil, err
			}
		}
		return out, nil
	})
	if ok || err != nil {
		return r, err
	}
	return TopKCountReply(cur, items...)
}

// TopKList returns the top k items by count, descending, ties by their
// bytes (TOPK.LIST). A missing key returns ErrTopKKeyNotFound.
func (s *Store) TopKList(key []byte) ([][]byte, error) {
	l, err := s.TopKListWithCount(key)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(l))
	for i, e := range l {
		out[i] = e.Item
	}
	return out, nil
}

// TopKListWithCount is TOPK.LIST WITHCOUNT: TopKList with each item's
// HeavyKeeper count.
func (s *Store) TopKListWithCount(key []byte) ([]TopKItem, error) {
	return readReply(s, key, func(cur []byte) ([]TopKItem, error) {
		if hdr, err := topKHeaderOf(cur); err != nil || hdr != nil {
			if err != nil {
				return nil, err
			}
			return hdr.List(), nil
		}
		return TopKListReply(cur)
	})
}

// TopKInfo returns TOPK.INFO. A missing key returns ErrTopKKeyNotFound.
func (s *Store) TopKInfo(key []byte) (TopKInfo, error) {
	return readReply(s, key, func(cur []byte) (TopKInfo, error) {
		if hdr, err := topKHeaderOf(cur); err != nil || hdr != nil {
			if err != nil {
				return TopKInfo{}, err
			}
			return hdr.Info(), nil
		}
		return TopKInfoReply(cur)
	})
}
