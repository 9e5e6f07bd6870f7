package sieve

import (
	"errors"
	"sync"

	"github.com/sievedb/sieve/internal/base"
)

var errForeignBatch = errors.New("sieve: batch belongs to another DB")

var batchPool = sync.Pool{New: func() any { return new(Batch) }}

// writeOne commits a single-entry batch built from a pooled Batch.
func (db *DB) writeOne(kind base.Kind, cf uint32, key, value []byte, o *WriteOptions) error {
	b := batchPool.Get().(*Batch)
	b.Reset()
	b.db = db
	if err := b.add(kind, cf, key, value); err != nil {
		batchPool.Put(b)
		return err
	}
	err := db.apply(b, o.sync())
	if cap(b.data) <= 64<<10 {
		batchPool.Put(b)
	}
	return err
}

// Put sets key to value. The key and value are copied; the caller may
// reuse them after Put returns. nil o means NoSync.
func (db *DB) Put(key, value []byte, o *WriteOptions) error {
	return db.writeOne(base.KindSet, 0, key, value, o)
}

// Delete removes key (writes a tombstone).
func (db *DB) Delete(key []byte, o *WriteOptions) error {
	return db.writeOne(base.KindDelete, 0, key, nil, o)
}

// Merge adds operand to key's merge stack; the default column family's
// Merger resolves it on reads and in compaction. Without a merger it
// returns ErrNoMerger.
func (db *DB) Merge(key, operand []byte, o *WriteOptions) error {
	if err := db.checkOpen(); err != nil {
		return err
	}
	if err := db.cfs.checkMerge(0); err != nil {
		return err
	}
	return db.writeOne(base.KindMerge, 0, key, operand, o)
}

// Apply commits every write in b atomically: all or nothing, also across
// crashes. b may be reused (after Reset) once Apply returns.
func (db *DB) Apply(b *Batch, o *WriteOptions) error {
	if err := db.checkOpen(); err != nil {
		return err
	}
	if b == nil {
		return nil
	}
	if b.db != nil && b.db != db {
		return errForeignBatch
	}
	if err := db.cfs.checkBatch(b); err != nil {
		return err
	}
	return db.apply(b, o.sync())
}
