package sieve

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sievedb/sieve/internal/base"
)

// An indexed batch can be read as well as written: Get and GetCF return
// what the database would hold for a key if the batch were applied now —
// the batch's own writes to the key (puts, deletes, merge operands, range
// deletions) over the database's current value. It is what a transaction
// that reads its own writes needs (Pebble's NewIndexedBatch): build the
// transaction's writes in the batch, read through it, and Apply it at the
// end as one atomic write.
//
// Reads through the batch see the database's latest state, not a
// snapshot: a caller that needs the base not to change between reads
// excludes other writers itself.

// batchIndex maps each (family, key) of an indexed batch to its entries.
type batchIndex struct {
	points map[string][]idxEntry // by cfKey(cf, key), oldest first
	ranges []idxRange            // range deletions, oldest first
	n      int                   // entries indexed (their ordinals)
}

// idxEntry is one point entry: its ordinal in the batch and where its
// value lies in Batch.data (values are read from there, never copied).
type idxEntry struct {
	ord      int
	kind     base.Kind
	off, len int
}

type idxRange struct {
	ord        int
	cf         uint32
	start, end []byte
}

// NewIndexedBatch returns an empty batch for db that Get and GetCF can
// read (see Batch.GetCF).
func (db *DB) NewIndexedBatch() *Batch {
	return &Batch{db: db, index: &batchIndex{points: map[string][]idxEntry{}}}
}

func cfKey(cf uint32, key []byte) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], cf)
	return string(b[:]) + string(key)
}

// noteIndexed records the entry just appended to b.data (value last).
func (b *Batch) noteIndexed(kind base.Kind, cf uint32, key, value []byte) {
	x := b.index
	if kind == base.KindRangeDelete {
		x.ranges = append(x.ranges, idxRange{ord: x.n, cf: cf, start: bytes.Clone(key), end: bytes.Clone(value)})
	} else {
		k := cfKey(cf, key)
		x.points[k] = append(x.points[k], idxEntry{ord: x.n, kind: kind, off: len(b.data) - len(value), len: len(value)})
	}
	x.n++
}

// Get is GetCF on the default column family.
func (b *Batch) Get(key []byte) ([]byte, error) { return b.get(0, key) }

// GetCF returns key's value in column family cf as it would be with the
// batch applied to the database now: the batch's latest Put or Delete of
// the key (or a range deletion covering it) replaces what the database
// holds, and its merge operands apply on top with the family's merger.
// It returns ErrNotFound for a key with no value, and an error for a batch
// that is not indexed (NewIndexedBatch) or holds a sticky error.
func (b *Batch) GetCF(cf *ColumnFamily, key []byte) ([]byte, error) {
	if err := cf.checkLive(); err != nil {
		return nil, err
	}
	return b.get(cf.id, key)
}

var errNotIndexed = errors.New("sieve: Get on a batch that is not indexed (use DB.NewIndexedBatch)")

func (b *Batch) get(cf uint32, key []byte) ([]byte, error) {
	switch {
	case b.index == nil:
		return nil, errNotIndexed
	case b.err != nil:
		return nil, b.err
	case b.db == nil:
		return nil, errNotIndexed
	}
	cover := -1 // the newest range deletion covering key
	for _, r := range b.index.ranges {
		if r.cf == cf && bytes.Compare(r.start, key) <= 0 && bytes.Compare(key, r.end) < 0 {
			cover = r.ord
		}
	}
	ents := b.index.points[cfKey(cf, key)]
	var ops [][]byte // merge operands, newest first
	i := len(ents) - 1
	for ; i >= 0 && ents[i].ord > cover; i-- {
		e := ents[i]
		v := b.data[e.off : e.off+e.len]
		switch e.kind {
		case base.KindSet:
			return b.resolve(cf, key, v, true, ops)
		case base.KindSetExpiring:
			d, val, _ := base.SplitExpiring(v)
			return b.resolve(cf, key, val, !b.db.expired(d), ops)
		case base.KindDelete:
			return b.resolve(cf, key, nil, false, ops)
		case base.KindMerge:
			ops = append(ops, v)
		}
	}
	if cover >= 0 {
		return b.resolve(cf, key, nil, false, ops)
	}
	base, err := b.db.getCF(cf, key, nil)
	switch {
	case errors.Is(err, ErrNotFound):
		return b.resolve(cf, key, nil, false, ops)
	case err != nil:
		return nil, err
	}
	return b.resolve(cf, key, base, true, ops)
}

// resolve applies ops (newest first) to the base value.
func (b *Batch) resolve(cf uint32, key, baseVal []byte, hasBase bool, ops [][]byte) ([]byte, error) {
	if len(ops) == 0 {
		if !hasBase {
			return nil, ErrNotFound
		}
		return bytes.Clone(baseVal), nil
	}
	oldest := make([][]byte, len(ops))
	for i, op := range ops {
		oldest[len(ops)-1-i] = op
	}
	v, err := b.db.fullMerge(cf, key, baseVal, hasBase, oldest)
	if err != nil {
		return nil, fmt.Errorf("sieve: batch read: %w", err)
	}
	return v, nil
}
