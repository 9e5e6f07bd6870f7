package sketchcol

// Blind Count-Min and Top-K writes in a Batch (see store_batch.go).

// CMSIncrBy adds the blind operand of CMS.INCRBY key items increments
// (see Store.CMSIncrByBlind).
func (b *Batch) CMSIncrBy(key []byte, items [][]byte, increments []int64) error {
	op, err := CMSIncrByOp(items, increments)
	return b.merge(key, op, err)
}

// TopKAdd adds the blind operand of TOPK.ADD key items (see
// Store.TopKAddBlind).
func (b *Batch) TopKAdd(key []byte, items ...[]byte) error {
	op, err := TopKIncrByOp(items, nil)
	return b.merge(key, op, err)
}
