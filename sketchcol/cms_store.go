package sketchcol

import (
	"errors"
	"fmt"
)

// Count-Min commands of the Store (RedisBloom's CMS.*).

// CMSInitByDim creates an empty Count-Min sketch of width × depth counters
// at key (CMS.INITBYDIM). An existing key (of any kind) returns
// ErrCMSKeyExists; dimensions below 1 ErrCMSInvalidWidth/Depth, above
// 2²⁷ counters in all ErrCMSTooLarge.
func (s *Store) CMSInitByDim(key []byte, width, depth int) error {
	return s.cmsInit(key, CMSSpec{Width: width, Depth: depth})
}

// CMSInitByProb is CMS.INITBYPROB: CMSInitByDim with width = ⌈2/errorRate⌉
// and depth = ⌈log probability / log ½⌉ (errorRate and probability in
// (0, 1), else ErrCMSInvalidError/ErrCMSInvalidProb).
func (s *Store) CMSInitByProb(key []byte, errorRate, probability float64) error {
	spec, err := CMSSpecByProb(errorRate, probability)
	if err != nil {
		return err
	}
	return s.cmsInit(key, spec)
}

func (s *Store) cmsInit(key []byte, spec CMSSpec) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	defer s.lock(key)()
	if err := s.checkMissing(key, ErrCMSKeyExists); err != nil {
		return err
	}
	return s.cmsInitPaged(key, spec)
}

// checkMissing returns exists when key holds any value (RedisBloom's
// CMS.INITBY* and TOPK.RESERVE refuse any existing key).
func (s *Store) checkMissing(key []byte, exists error) error {
	cur, err := s.get(key)
	if err != nil {
		return err
	}
	if cur != nil {
		k, _ := KindOf(cur)
		return fmt.Errorf("%w (key %q holds a %s)", exists, clip(key), k)
	}
	return nil
}

// CMSIncrBy adds increments[i] (≥ 0, else ErrCMSNegative) to items[i]'s
// count in the sketch at key and returns each item's estimate after its
// increment (CMS.INCRBY). Counters saturate at 2³²−1: an estimate that
// reaches it is reported, after the write, with ErrCMSIncrByOverflow
// beside the estimates, as RedisBloom does. A missing key returns
// ErrCMSKeyNotFound, another kind ErrWrongType; then nothing is written.
func (s *Store) CMSIncrBy(key []byte, items [][]byte, increments []int64) ([]int64, error) {
	op, err := CMSIncrByOp(items, increments)
	if err != nil {
		return nil, err
	}
	stripe := s.stripe(key)
	s.locks[stripe].Lock()
	defer s.locks[stripe].Unlock()
	hdr, c, cur, err := s.cmsLocked(stripe, key)
	if err != nil && !errors.Is(err, ErrCMSKeyNotFound) {
		return nil, err
	}
	if hdr != nil {
		recs, _ := cmsRecords(items, increments) // checked by CMSIncrByOp
		return cmsOverflow(s.cmsPagedIncr(key, hdr, c, recs))
	}
	est, rerr := CMSIncrByReply(cur, items, increments)
	if est == nil {
		return nil, rerr
	}
	if err := s.merge(key, op); err != nil {
		return nil, err
	}
	return est, rerr
}

// CMSIncrByBlind is CMSIncrBy without the read or the reply: one merge
// operand, which compaction adds into the counters (a Count-Min sketch is
// linear: the fold is exact). A key that is missing when the operand is
// merged is created with DefaultCMSSpec (RedisBloom would refuse the
// command); on a key of another kind the operand is dropped.
//
// On an existing sketch it is CMSIncrBy without the reply (and without
// ErrCMSIncrByOverflow), whose locked read of the header comes from the
// cache of hot sketches; on a missing key it reads the default header and
// no page, and writes the header and page operands as one batch.
func (s *Store) CMSIncrByBlind(key []byte, items [][]byte, increments []int64) error {
	_, err := s.CMSIncrBy(key, items, increments)
	switch {
	case err == nil || errors.Is(err, ErrCMSIncrByOverflow):
		return nil
	case !errors.Is(err, ErrCMSKeyNotFound) && !errors.Is(err, ErrWrongType):
		return err
	}
	op, paged, err := s.cmsIncrBlind(key, items, increments)
	if err != nil || paged {
		return err
	}
	return s.merge(key, op)
}

// CMSQuery returns the estimated count of each item (CMS.QUERY). A
// missing key returns ErrCMSKeyNotFound.
func (s *Store) CMSQuery(key []byte, items ...[]byte) ([]int64, error) {
	stripe := s.stripe(key)
	s.locks[stripe].Lock() // a paged sketch's pages are read as one state
	defer s.locks[stripe].Unlock()
	hdr, c, cur, err := s.cmsLocked(stripe, key)
	if err != nil && !errors.Is(err, ErrCMSKeyNotFound) {
		return nil, err
	}
	if hdr != nil {
		return s.cmsQueryPaged(key, hdr, c, items)
	}
	return CMSQueryReply(cur, items...)
}

// CMSMerge sets dst to Σ weights[i]·srcs[i] (CMS.MERGE; weights nil: all
// 1; dst may be among the sources). dst and every source must exist
// (ErrCMSKeyNotFound) and have dst's dimensions (ErrCMSDimensions); a
// counter of the sum outside 0..2³²−1, or a negative total, returns
// ErrCMSMergeOverflow. On any error nothing is written. The sources are
// read from one snapshot.
//
// When dst or a source is paged, dst becomes a paged sketch, written page
// by page: a sketch of more than 1024 pages (4 MiB of counters) is summed
// once to check it, then written in batches of 1024 pages, so it is never
// in memory whole — and a crash between two batches leaves dst partly
// merged.
func (s *Store) CMSMerge(dst []byte, srcs [][]byte, weights []int64) error {
	if len(srcs) == 0 {
		return ErrCMSNumKeys
	}
	defer s.lock(dst)()
	g, pg, release := s.snapshotReaders()
	defer release()
	keys := append([][]byte{dst}, srcs...)
	vs, err := getAll(g, keys)
	if err != nil {
		return err
	}
	if paged, err := s.cmsMergeAnyPaged(keys, vs, weights, pg); paged || err != nil {
		return err
	}
	op, err := CMSMergeOp(vs[0], vs[1:], weights)
	if err != nil {
		return err
	}
	return s.merge(dst, op)
}

// CMSInfo returns CMS.INFO. A missing key returns ErrCMSKeyNotFound.
func (s *Store) CMSInfo(key []byte) (CMSInfo, error) {
	return readReply(s, key, func(cur []byte) (CMSInfo, error) {
		hdr, err := cmsHeaderOf(cur)
		if err != nil || hdr == nil {
			return CMSInfoReply(cur)
		}
		return CMSInfo{Width: hdr.spec.Width, Depth: hdr.spec.Depth, Count: hdr.count}, nil
	})
}
