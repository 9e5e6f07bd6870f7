package sketchcol

import (
	"bytes"
	"errors"
)

// Count-Min and Top-K writes in a Batch (see store_batch.go). On a paged
// sketch (every sketch this version creates, and a missing key, created
// with the defaults) they read the key's header, and Top-K the pages its
// items touch, as Batch.BFAdd does; they take no lock.

// CMSIncrBy adds CMS.INCRBY key items increments without a reply (see
// Store.CMSIncrByBlind).
func (b *Batch) CMSIncrBy(key []byte, items [][]byte, increments []int64) error {
	recs, err := cmsRecords(items, increments)
	if err != nil {
		return err
	}
	if spec, ok := b.cms[string(key)]; ok {
		b.touch(key)
		return b.s.cmsBlindWrite(key, spec, recs, b.b)
	}
	cur, err := b.s.get(key)
	if err != nil && !errors.Is(err, ErrWrongType) {
		return err
	}
	if err != nil || (cur != nil && cur[0] != kindPagedCMS) {
		op, err := CMSIncrByOp(items, increments)
		return b.merge(key, op, err) // legacy; another kind drops it
	}
	hdr := &pagedCMS{spec: DefaultCMSSpec()}
	if cur != nil {
		if hdr, err = parsePagedCMS(cur); err != nil {
			return err
		}
	}
	if b.cms == nil {
		b.cms = map[string]CMSSpec{}
	}
	b.cms[string(key)] = hdr.spec // the geometry this batch's later increments use
	b.touch(key)
	return b.s.cmsBlindWrite(key, hdr.spec, recs, b.b)
}

// TopKAdd adds TOPK.ADD key items without a reply (see
// Store.TopKAddBlind); the Batch's earlier adds to the key count.
func (b *Batch) TopKAdd(key []byte, items ...[]byte) error {
	recs, err := topKRecords(items, nil)
	if err != nil {
		return err
	}
	ps := b.topk[string(key)]
	if ps == nil {
		cur, err := b.s.get(key)
		if err != nil && !errors.Is(err, ErrWrongType) {
			return err
		}
		if err != nil || (cur != nil && cur[0] != kindPagedTopK) {
			op, err := TopKIncrByOp(items, nil)
			return b.merge(key, op, err) // legacy; another kind drops it
		}
		hdr, created, err := topKHeaderOrNew(cur)
		if err != nil {
			return err
		}
		ps = newTopKPageSet(b.s.rawPage, bytes.Clone(key), hdr)
		ps.created = created
		if b.topk == nil {
			b.topk = map[string]*topKPageSet{}
		}
		b.topk[string(key)] = ps
	}
	if _, err := topKAddRecs(ps, recs); err != nil {
		delete(b.topk, string(key))
		return err
	}
	b.touch(key)
	err = ps.writeTo(b.s, b.b, ps.created)
	ps.created = false
	return err
}
