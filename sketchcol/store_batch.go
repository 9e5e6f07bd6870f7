package sketchcol

import (
	"bytes"
	"errors"

	"github.com/sievedb/sieve"
)

// Batch collects blind sketch writes — merge operands and restores — in a
// sieve.Batch, so that they commit atomically, with one WAL write, and
// possibly together with writes to other column families of the same DB.
// Nothing in a Batch reads, and nothing takes the Store's locks: the
// writes are blind (see Store, "Concurrency").
//
// Call order: (PFAdd | BFAdd | CFAdd | Restore)* then Commit, or hand
// Sieve() to DB.Apply yourself. A Batch is not safe for concurrent use.
type Batch struct {
	s       *Store
	b       *sieve.Batch
	stripes [lockStripes / 64]uint64 // the keys' stripes, made stale by Commit
	pages   map[string]*pageSet      // paged filters' pages as this batch left them
	topk    map[string]*topKPageSet  // paged Top-K sketches as this batch left them
	cms     map[string]CMSSpec       // paged Count-Min sketches' geometry, read once
}

// NewBatch returns an empty Batch with its own sieve.Batch.
func (s *Store) NewBatch() *Batch { return &Batch{s: s, b: s.db.NewBatch()} }

// WrapBatch returns a Batch that adds its writes to b, a batch of the
// Store's DB that may also hold writes to other column families. Since b
// may be applied without Commit, where the Store cannot see it, this turns
// the Store's PFAdd cache of decoded values off for good.
func (s *Store) WrapBatch(b *sieve.Batch) *Batch {
	s.disableCache()
	return &Batch{s: s, b: b}
}

// Sieve returns the underlying sieve.Batch. Like WrapBatch, it turns the
// Store's PFAdd cache off for good.
func (b *Batch) Sieve() *sieve.Batch {
	b.s.disableCache()
	return b.b
}

func (b *Batch) touch(key []byte) {
	i := b.s.stripe(key)
	b.stripes[i/64] |= 1 << (i % 64)
}

// Len returns the number of writes in the underlying sieve.Batch.
func (b *Batch) Len() int { return b.b.Len() }

// PFAdd adds the blind operand of PFADD key elems (see Store.PFAddBlind).
func (b *Batch) PFAdd(key []byte, elems ...[]byte) error {
	return b.merge(key, PFAddOp(elems...), nil)
}

// merge adds operand op (or returns err, the error building it) for key,
// marking key's cache stripe for invalidation at Commit: every blind write
// of a Batch goes through it.
func (b *Batch) merge(key, op []byte, err error) error {
	if err != nil {
		return err
	}
	b.touch(key)
	return b.b.MergeCF(b.s.cf, key, op)
}

// BFAdd adds BF.MADD key items. On a paged filter (every filter this
// version creates, and a missing key, created with the defaults) it reads
// the header and the pages the items touch (the batch's own earlier adds
// included), so that only new items are counted; it takes no lock, so
// BF.CARD may count twice an item that concurrent writers add at once.
// On a filter stored whole it adds the blind operand (see
// Store.BFAddBlind).
func (b *Batch) BFAdd(key []byte, items ...[]byte) error {
	cur, err := b.s.get(key)
	if err != nil && !errors.Is(err, ErrWrongType) {
		return err
	}
	if err == nil && (cur == nil || cur[0] == kindPagedBloom) {
		return b.pagedAdd(key, cur, items)
	}
	op, err := BFAddOp(nil, items...)
	return b.merge(key, op, err) // a value of another kind drops it
}

func (b *Batch) pagedAdd(key, cur []byte, items [][]byte) error {
	if b.pages == nil {
		b.pages = map[string]*pageSet{}
	}
	ps := b.pages[string(key)]
	if ps == nil { // the key's first add in this batch: its header as stored
		h, err := newPagedBloom(DefaultBloomSpec())
		if cur != nil {
			h, err = parsePagedBloom(cur)
		}
		if err != nil {
			return err
		}
		ps = b.s.newPageSet(bytes.Clone(key))
		ps.hdr, ps.create = h, cur == nil
		b.pages[string(key)] = ps
	}
	_, deltas, err := b.s.addItemsTo(ps, key, ps.hdr, items, true)
	if err != nil {
		return err
	}
	b.touch(key)
	hop := &pagedBloomOp{layers: len(ps.hdr.counts), deltas: deltas}
	if ps.create { // the geometry, and how its pages were probed
		hop.spec, hop.rb, ps.create = &ps.hdr.spec, ps.hdr.rb, false
	}
	if err := b.b.MergeCF(b.s.cf, key, appendPagedBloomOp(nil, hop)); err != nil {
		return err
	}
	return ps.writeTo(b.b) // and forgets the positions written
}

// CFAdd adds CF.ADD key of each item. On a paged filter (every filter
// this version creates, and a missing key, created with the defaults) it
// writes the items' hashes to the header as pending adds, without
// reading: the next command on the key (under its lock) places them in
// order, before its own work, as CFAddBlind would have; reads count them
// placed. On a filter stored whole it adds the blind operand of add
// records (see Store.CFAddBlind). On a key of another kind either is
// dropped when merged.
func (b *Batch) CFAdd(key []byte, items ...[]byte) error {
	cur, err := b.s.get(key)
	if err != nil && !errors.Is(err, ErrWrongType) {
		return err
	}
	if err == nil && (cur == nil || cur[0] == kindPagedCuckoo) {
		return b.merge(key, appendPagedCuckooOp(nil, &pagedCuckooOp{appends: itemHashes(items)}), nil)
	}
	op, err := CFAddOp(nil, items...)
	return b.merge(key, op, err)
}

// Restore adds Store.Restore's write of value to key. The value is
// validated now; unlike Store.Restore it does not take the key's lock, so
// a reply-bearing command running while the batch commits may answer
// from the value it replaces.
func (b *Batch) Restore(key, value []byte) error {
	v, err := restoreValue(value)
	if err != nil {
		return err
	}
	b.touch(key)
	return b.b.PutCF(b.s.cf, key, v)
}

// Commit applies the batch with o (nil: the Store's write options, see
// StoreOptions.Sync). Once Commit returns nil the writes are acknowledged
// — durable if o.Sync.
func (b *Batch) Commit(o *sieve.WriteOptions) error {
	if o == nil {
		o = b.s.wo
	}
	err := b.s.db.Apply(b.b, o)
	for w, bits := range b.stripes {
		for i := 0; i < 64; i++ {
			if bits&(1<<i) != 0 {
				b.s.epochs.stripe[w*64+i].Add(1)
			}
		}
	}
	return err
}
