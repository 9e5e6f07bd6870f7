package sketchcol

import "fmt"

// Per-command helpers for Top-K values; see bloom_command.go for the
// Reply/Op pattern.

// TopKReserveOp returns the operand of TOPK.RESERVE: create an empty
// sketch of spec if the key is missing.
//
// Deprecated: the operand is of the whole-value encoding, which the
// Store still reads but no longer creates: merged onto a missing key it
// creates a whole-value Top-K sketch, and onto a paged one (every Top-K sketch the Store
// creates) it is dropped. Write through Store.NewBatch or Store.WrapBatch,
// whose adds apply to both encodings.
func TopKReserveOp(spec TopKSpec) ([]byte, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return appendTopKOp(nil, &topKOp{spec: spec}), nil
}

// TopKIncrByOp returns the operand of TOPK.INCRBY (TOPK.ADD: increments
// nil, all 1): add each item its increment (0..100000) in order. On a
// missing key (only a blind write reaches one) it first creates a sketch
// of DefaultTopKSpec.
//
// Deprecated: the operand is of the whole-value encoding, which the
// Store still reads but no longer creates: merged onto a missing key it
// creates a whole-value Top-K sketch, and onto a paged one (every Top-K sketch the Store
// creates) it is dropped. Write through Store.NewBatch or Store.WrapBatch,
// whose adds apply to both encodings.
func TopKIncrByOp(items [][]byte, increments []int64) ([]byte, error) {
	recs, err := topKRecords(items, increments)
	if err != nil {
		return nil, err
	}
	return appendTopKOp(nil, &topKOp{spec: DefaultTopKSpec(), recs: recs}), nil
}

func topKRecords(items [][]byte, increments []int64) ([]topKRecord, error) {
	if increments != nil && len(increments) != len(items) {
		return nil, fmt.Errorf("%w: %d items, %d increments", ErrTopKItemsMismatch, len(items), len(increments))
	}
	recs := make([]topKRecord, len(items))
	for i, it := range items {
		incr := int64(1)
		if increments != nil {
			incr = increments[i]
		}
		if incr < 0 || incr > maxTopKIncr {
			return nil, fmt.Errorf("%w (%d)", ErrTopKInvalidIncr, incr)
		}
		recs[i] = topKRecord{incr: uint32(incr), item: it}
	}
	return recs, nil
}

// TopKIncrByReply simulates TOPK.INCRBY (increments nil: TOPK.ADD) on cur,
// which must hold a sketch, and returns the item each add expelled from
// the heap (nil when none). Write TopKIncrByOp of the same arguments.
// Unlike RedisBloom, which answers the items before a bad increment and
// then fails, every increment is checked before anything is added.
func TopKIncrByReply(cur []byte, items [][]byte, increments []int64) ([][]byte, error) {
	recs, err := topKRecords(items, increments)
	if err != nil {
		return nil, err
	}
	t, err := parseTopKKey(cur)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(recs))
	for i, r := range recs {
		out[i] = t.Add(r.item, r.incr)
	}
	return out, nil
}

// TopKQueryReply returns TOPK.QUERY of items on cur: whether each is in
// the heap.
func TopKQueryReply(cur []byte, items ...[]byte) ([]bool, error) {
	t, err := parseTopKKey(cur)
	if err != nil {
		return nil, err
	}
	return existsAll(t.Query, items), nil
}

// TopKCountReply returns TOPK.COUNT of items in cur.
func TopKCountReply(cur []byte, items ...[]byte) ([]int64, error) {
	t, err := parseTopKKey(cur)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(items))
	for i, it := range items {
		out[i] = t.Count(it)
	}
	return out, nil
}

// TopKListReply returns TOPK.LIST WITHCOUNT of cur.
func TopKListReply(cur []byte) ([]TopKItem, error) {
	t, err := parseTopKKey(cur)
	if err != nil {
		return nil, err
	}
	return t.List(), nil
}

// TopKInfoReply returns TOPK.INFO of cur.
func TopKInfoReply(cur []byte) (TopKInfo, error) {
	t, err := parseTopKKey(cur)
	if err != nil {
		return TopKInfo{}, err
	}
	return t.Info(), nil
}

// parseTopKKey decodes the value of a key that must hold a Top-K sketch:
// a missing key is ErrTopKKeyNotFound.
func parseTopKKey(cur []byte) (*TopK, error) {
	if cur == nil {
		return nil, ErrTopKKeyNotFound
	}
	if t, ok, err := topKOfPaged(cur); ok {
		return t, err
	}
	return parseValue(cur, KindTopK, ParseTopK)
}
