package sketchcol

import (
	"fmt"
	"math"
)

// Per-command helpers for Count-Min values; see bloom_command.go for the
// Reply/Op pattern.

// CMSInitOp returns the operand of CMS.INITBYDIM/CMS.INITBYPROB: create an
// empty sketch of spec if the key is missing.
//
// Deprecated: the operand is of the whole-value encoding, which the
// Store still reads but no longer creates: merged onto a missing key it
// creates a whole-value Count-Min sketch, and onto a paged one (every Count-Min sketch the Store
// creates) it is dropped. Write through Store.NewBatch or Store.WrapBatch,
// whose adds apply to both encodings.
func CMSInitOp(spec CMSSpec) ([]byte, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return appendCMSOp(nil, &cmsOp{spec: spec}), nil
}

// CMSIncrByOp returns the operand of CMS.INCRBY: add increments[i] to
// items[i]'s count. On a missing key (only a blind write reaches one) it
// first creates a sketch of DefaultCMSSpec. Increments must be ≥ 0.
//
// Deprecated: the operand is of the whole-value encoding, which the
// Store still reads but no longer creates: merged onto a missing key it
// creates a whole-value Count-Min sketch, and onto a paged one (every Count-Min sketch the Store
// creates) it is dropped. Write through Store.NewBatch or Store.WrapBatch,
// whose adds apply to both encodings.
func CMSIncrByOp(items [][]byte, increments []int64) ([]byte, error) {
	recs, err := cmsRecords(items, increments)
	if err != nil {
		return nil, err
	}
	return appendCMSOp(nil, &cmsOp{spec: DefaultCMSSpec(), recs: sumCMSRecords(recs)}), nil
}

func cmsRecords(items [][]byte, increments []int64) ([]cmsRecord, error) {
	if len(items) != len(increments) {
		return nil, fmt.Errorf("%w: %d items and %d increments", ErrInvalidArgument, len(items), len(increments))
	}
	recs := make([]cmsRecord, len(items))
	for i, it := range items {
		if increments[i] < 0 {
			return nil, fmt.Errorf("%w (%d)", ErrCMSNegative, increments[i])
		}
		recs[i] = cmsRecord{hash: itemHash(it), incr: uint64(increments[i])}
	}
	return recs, nil
}

// CMSIncrByReply simulates CMS.INCRBY on cur, which must hold a sketch,
// and returns each item's estimate after its increment, in order. An
// estimate saturated at 2³²−1 makes the error ErrCMSIncrByOverflow (with
// the estimates): RedisBloom applies the increment and replies "CMS:
// INCRBY overflow" for that item. Write CMSIncrByOp of the same arguments.
func CMSIncrByReply(cur []byte, items [][]byte, increments []int64) ([]int64, error) {
	recs, err := cmsRecords(items, increments)
	if err != nil {
		return nil, err
	}
	c, err := parseCMSKey(cur)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(recs))
	err = nil
	for i, r := range recs {
		est := c.incrHash(r.hash, r.incr)
		out[i] = int64(est)
		if est == math.MaxUint32 {
			err = ErrCMSIncrByOverflow
		}
	}
	return out, err
}

// CMSQueryReply returns CMS.QUERY of items on cur, which must hold a
// sketch: a value stored whole, or a paged sketch's dump (Store.Dump; the
// Reply functions of this file build it in memory).
func CMSQueryReply(cur []byte, items ...[]byte) ([]int64, error) {
	c, err := parseCMSKey(cur)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(items))
	for i, it := range items {
		out[i] = int64(c.Query(it))
	}
	return out, nil
}

// CMSInfoReply returns CMS.INFO of cur, which must hold a sketch.
func CMSInfoReply(cur []byte) (CMSInfo, error) {
	c, err := parseCMSKey(cur)
	if err != nil {
		return CMSInfo{}, err
	}
	return c.Info(), nil
}

// CMSMergeOp returns the operand of CMS.MERGE dst srcs WEIGHTS weights:
// a set operand of Σ weights[i]·srcs[i], where dst and every source are
// the values of existing sketches of one geometry. weights nil means all
// 1. Nothing is returned on overflow (ErrCMSMergeOverflow) or mismatched
// dimensions (ErrCMSDimensions).
//
// Deprecated: it takes and returns whole values, which the Store still
// reads but no longer creates; Store.CMSMerge merges paged sketches page
// by page.
func CMSMergeOp(dst []byte, srcs [][]byte, weights []int64) ([]byte, error) {
	if len(srcs) == 0 {
		return nil, ErrCMSNumKeys
	}
	if weights == nil {
		weights = make([]int64, len(srcs))
		for i := range weights {
			weights[i] = 1
		}
	}
	if len(weights) != len(srcs) {
		return nil, ErrCMSKeysWeights
	}
	d, err := parseCMSKey(dst)
	if err != nil {
		return nil, err
	}
	cs := make([]*CountMinSketch, len(srcs))
	for i, v := range srcs {
		if cs[i], err = parseCMSKey(v); err != nil {
			return nil, err
		}
	}
	m, err := mergeCMS(d.spec, cs, weights)
	if err != nil {
		return nil, err
	}
	return appendSetOp(nil, m), nil
}

// parseCMSKey decodes the value of a key that must hold a sketch: a
// missing key is ErrCMSKeyNotFound.
func parseCMSKey(cur []byte) (*CountMinSketch, error) {
	if cur == nil {
		return nil, ErrCMSKeyNotFound
	}
	if c, ok, err := cmsOfPaged(cur); ok {
		return c, err
	}
	return parseValue(cur, KindCMS, ParseCMS)
}
