package sieve

import (
	"fmt"
	"sync/atomic"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/base"
)

// ColumnFamilyOptions configure a column family. Zero fields take the
// database's options.
type ColumnFamilyOptions struct {
	// Merger resolves the family's merge operands. Its Name is recorded in
	// the manifest; reopening with another name is an error, and a family
	// whose recorded merger is not supplied fails reads of merge operands
	// and is not compacted.
	Merger Merger
	// FilterPolicy builds the family's table filters (default: the DB's).
	FilterPolicy filter.Policy
	// LevelFilterPolicies is Options.LevelFilterPolicies for this family; a
	// nil or missing entry uses the family's FilterPolicy. When both are
	// nil the family uses the DB's FilterPolicy and LevelFilterPolicies;
	// a family with its own FilterPolicy does not inherit the DB's
	// per-level policies.
	LevelFilterPolicies []filter.Policy
	// Prefix and PrefixName are Options.Prefix and PrefixName for this
	// family; when Prefix is nil the family uses the DB's.
	Prefix     func(key []byte) int
	PrefixName string
	// MaxSuccessiveMerges is Options.MaxSuccessiveMerges for this family:
	// 0 uses the DB's, a negative value disables the cap. A family whose
	// hot keys are read from a cache of the caller's (sketchcol's pages)
	// gains nothing from the collapses and pays for them on every write.
	MaxSuccessiveMerges int
	// CompactionFilter removes values of the family during compaction
	// (see CompactionFilter); nil: none. Expired values are removed
	// without one.
	CompactionFilter CompactionFilter
}

// ColumnFamily is a handle on a column family: a keyspace with its own
// memtables, levels, merger and filter policy, sharing the database's WAL
// and manifest. Handles are safe for concurrent use and stay valid until
// the DB is closed or the family dropped (DB.DropColumnFamily; then they
// fail with ErrColumnFamilyDropped).
type ColumnFamily struct {
	db   *DB
	id   uint32
	name string
	// dropped is set once the family is dropped (shared with its state).
	dropped *atomic.Bool
}

// Name returns the family's name.
func (cf *ColumnFamily) Name() string { return cf.name }

// OpenColumnFamily opens the column family name, creating it (durably, in
// the manifest) if it does not exist. "default" is the family the DB
// methods use. Options bind the family's merger, filters, prefixes,
// MaxSuccessiveMerges and CompactionFilter for this process; nil options
// on a family already open here leave those as they are (another handle,
// e.g. for Compact, does not reset them).
func (db *DB) OpenColumnFamily(name string, o *ColumnFamilyOptions) (*ColumnFamily, error) {
	if err := db.checkOpen(); err != nil {
		return nil, err
	}
	if name == "" || len(name) > 255 {
		return nil, fmt.Errorf("sieve: column family name %q: must be 1 to 255 bytes", name)
	}
	var co ColumnFamilyOptions
	if o != nil {
		co = *o
	}
	if err := checkPrefixOptions(co.Prefix, co.PrefixName); err != nil {
		return nil, err
	}
	r := db.cfs
	// Serialize creations and bindings with each other (rank CFCreate,
	// outside the manifest writer).
	r.createMu.Lock()
	defer r.createMu.Unlock()
	st := r.lookupName(name)
	if st == nil {
		if db.opts.ReadOnly {
			return nil, fmt.Errorf("sieve: column family %q does not exist (read-only)", name)
		}
		var err error
		if st, err = r.create(name, co); err != nil {
			return nil, err
		}
	} else if err := r.bindLocked(st, co.Merger, co.FilterPolicy, co.LevelFilterPolicies, prefixOf(co)); err != nil {
		return nil, err
	}
	if o != nil { // nil options leave an open family's settings as they are
		db.setMergeCap(st.id, co.MaxSuccessiveMerges)
		db.setCompactionFilter(st.id, co.CompactionFilter)
	}
	return &ColumnFamily{db: db, id: st.id, name: name, dropped: st.dropped}, nil
}

// Put sets key to value in the family.
func (cf *ColumnFamily) Put(key, value []byte, o *WriteOptions) error {
	if err := cf.check(); err != nil {
		return err
	}
	return cf.db.writeOne(base.KindSet, cf.id, key, value, o)
}

// Delete removes key from the family.
func (cf *ColumnFamily) Delete(key []byte, o *WriteOptions) error {
	if err := cf.check(); err != nil {
		return err
	}
	return cf.db.writeOne(base.KindDelete, cf.id, key, nil, o)
}

// Merge adds a merge operand for key; the family's merger resolves it.
func (cf *ColumnFamily) Merge(key, operand []byte, o *WriteOptions) error {
	if err := cf.check(); err != nil {
		return err
	}
	if err := cf.db.cfs.checkMerge(cf.id); err != nil {
		return err
	}
	return cf.db.writeOne(base.KindMerge, cf.id, key, operand, o)
}

// Get returns a copy of key's value in the family, or ErrNotFound.
func (cf *ColumnFamily) Get(key []byte) ([]byte, error) {
	if err := cf.checkLive(); err != nil {
		return nil, err
	}
	return cf.db.getCF(cf.id, key, nil)
}

// NewIter returns an iterator over the family as of now.
func (cf *ColumnFamily) NewIter(o *IterOptions) *Iterator {
	if err := cf.checkLive(); err != nil {
		return &Iterator{err: err, iter: emptyIter{}}
	}
	return cf.db.newIter(cf.id, o, nil)
}

// Metrics returns the database metrics with this family's own figures where
// a figure has one: its levels and tables, and its mutable memtable
// (MemTable.Size). WAL, flush, compaction and cache figures are the
// database's.
func (cf *ColumnFamily) Metrics() *Metrics { return cf.db.metricsFor(cf.id) }

// checkCF records (as the batch's sticky error, which Apply returns) that
// cf was dropped, so a batch that lost a write applies nothing.
func (b *Batch) checkCF(cf *ColumnFamily) error {
	if b.err != nil {
		return b.err
	}
	if err := cf.checkLive(); err != nil {
		b.err = err
		return err
	}
	return nil
}

// PutCF sets key to value in column family cf. An error (a dropped
// family, a key or value over its limit) is also kept by the batch: Apply
// then fails with it and applies none of the batch's writes.
func (b *Batch) PutCF(cf *ColumnFamily, key, value []byte) error {
	if err := b.checkCF(cf); err != nil {
		return err
	}
	return b.add(base.KindSet, cf.id, key, value)
}

// DeleteCF removes key from column family cf. Errors are kept as PutCF's.
func (b *Batch) DeleteCF(cf *ColumnFamily, key []byte) error {
	if err := b.checkCF(cf); err != nil {
		return err
	}
	return b.add(base.KindDelete, cf.id, key, nil)
}

// MergeCF adds a merge operand for key in column family cf. Errors are
// kept as PutCF's.
func (b *Batch) MergeCF(cf *ColumnFamily, key, operand []byte) error {
	if err := b.checkCF(cf); err != nil {
		return err
	}
	return b.add(base.KindMerge, cf.id, key, operand)
}

// GetCF returns key's value in column family cf as of the snapshot.
func (s *Snapshot) GetCF(cf *ColumnFamily, key []byte) ([]byte, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if err := cf.checkLive(); err != nil {
		return nil, err
	}
	return s.db.getCF(cf.id, key, &s.seq)
}

// NewIterCF returns an iterator over column family cf as of the snapshot.
func (s *Snapshot) NewIterCF(cf *ColumnFamily, o *IterOptions) *Iterator {
	if s.closed.Load() {
		return &Iterator{err: ErrClosed, iter: emptyIter{}}
	}
	if err := cf.checkLive(); err != nil {
		return &Iterator{err: err, iter: emptyIter{}}
	}
	return s.db.newIter(cf.id, o, &s.seq)
}
