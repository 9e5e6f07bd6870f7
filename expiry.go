package sieve

import (
	"time"

	"github.com/sievedb/sieve/internal/base"
)

// Expiry: a value written with a deadline (PutWithExpiry) is stored as an
// entry of its own kind, SetExpiring, whose value starts with the
// deadline. Every read judges the deadline against Options.Now when it
// meets the entry: from the deadline on the entry reads as a Delete, so
// the key is absent (or, under merge operands written after it, their
// base is absent). No background scan is needed for correctness;
// compaction turns an expired entry into a Delete of the same sequence
// number (compaction.GCOptions.Now), which hides whatever older versions
// of the key lie below exactly as the expired entry did, and is itself
// dropped where nothing is below it.
//
// The deadline belongs to the value written with it. Merge operands
// written onto a live expiring value read merged with it (and
// GetWithExpiry reports its deadline); from the deadline on they read as
// operands written onto nothing. Neither the memtable nor compaction
// folds operands into an expiring value, since a merged value could not
// tell them apart again; runs of operands above one are still combined
// (PartialMerge). A caller that wants a key's later updates to share its
// deadline (Redis's semantics) writes them as PutWithExpiry of the new
// value, as sketchcol does.
//
// Why a kind and not a field in every value: values written without a
// deadline (every value written before this version) keep their bytes,
// families that never expire pay nothing, and a merger sees the same
// values it always did.

// A CompactionFilter decides, while compaction rewrites a column family,
// which values to remove (RocksDB's CompactionFilter). Filter is called
// with each full value compaction meets (a Put, or a key's merged value)
// that no open snapshot can see, except values already expired: those
// are removed without asking. A removed value becomes a Delete of the same
// sequence number, so older versions of the key stay hidden. Filter must
// be safe for concurrent use (compactions run in parallel) and must not
// retain its arguments; it may read the DB.
type CompactionFilter interface {
	// Filter reports whether to remove key's value. expiry is the
	// value's deadline (zero: none).
	Filter(key, value []byte, expiry time.Time) (remove bool)
}

// nowNanos is the time expiry is judged by, in unix nanoseconds.
func (db *DB) nowNanos() int64 {
	if db.opts.Now != nil {
		return db.opts.Now().UnixNano()
	}
	return time.Now().UnixNano()
}

// expired reports whether a deadline (unix nanoseconds) has come.
func (db *DB) expired(deadline int64) bool { return db.nowNanos() >= deadline }

// deadlineTime converts a stored deadline (0: none) to a time.
func deadlineTime(d int64) time.Time {
	if d == 0 {
		return time.Time{}
	}
	return time.Unix(0, d)
}

// expiringValue is what a SetExpiring entry stores: the deadline, then
// the value. A zero expiry writes a plain Set.
func expiringValue(value []byte, expiry time.Time) (base.Kind, []byte) {
	if expiry.IsZero() {
		return base.KindSet, value
	}
	d := expiry.UnixNano()
	if d == 0 {
		d = -1 // 0 means "none" in the read paths
	}
	return base.KindSetExpiring, base.AppendExpiring(make([]byte, 0, base.ExpiryLen+len(value)), d, value)
}

// PutWithExpiry sets key to value in the default column family until
// expiry (zero: forever, as Put). From expiry on (judged by Options.Now)
// the key reads as absent; compaction removes it.
func (db *DB) PutWithExpiry(key, value []byte, expiry time.Time, o *WriteOptions) error {
	kind, v := expiringValue(value, expiry)
	return db.writeOne(kind, 0, key, v, o)
}

// PutWithExpiry sets key to value in the family until expiry (see
// DB.PutWithExpiry).
func (cf *ColumnFamily) PutWithExpiry(key, value []byte, expiry time.Time, o *WriteOptions) error {
	if err := cf.check(); err != nil {
		return err
	}
	kind, v := expiringValue(value, expiry)
	return cf.db.writeOne(kind, cf.id, key, v, o)
}

// PutWithExpiry adds a Put of key that expires at expiry (zero: never) in
// the default column family.
func (b *Batch) PutWithExpiry(key, value []byte, expiry time.Time) error {
	kind, v := expiringValue(value, expiry)
	return b.add(kind, 0, key, v)
}

// PutCFWithExpiry adds a Put of key in family cf that expires at expiry
// (zero: never).
func (b *Batch) PutCFWithExpiry(cf *ColumnFamily, key, value []byte, expiry time.Time) error {
	if err := b.checkCF(cf); err != nil {
		return err
	}
	kind, v := expiringValue(value, expiry)
	return b.add(kind, cf.id, key, v)
}

// GetWithExpiry is Get that also returns the value's deadline (zero:
// none). A value made of merge operands written onto an expiring value
// has that value's deadline.
func (db *DB) GetWithExpiry(key []byte) ([]byte, time.Time, error) {
	var d int64
	v, err := db.getCFExpiry(0, key, nil, &d)
	return v, deadlineTime(d), err
}

// GetWithExpiry is DB.GetWithExpiry in the family.
func (cf *ColumnFamily) GetWithExpiry(key []byte) ([]byte, time.Time, error) {
	if err := cf.check(); err != nil {
		return nil, time.Time{}, err
	}
	var d int64
	v, err := cf.db.getCFExpiry(cf.id, key, nil, &d)
	return v, deadlineTime(d), err
}

// setCompactionFilter records family cf's filter (nil: none).
// REQUIRES: the registry's createMu (writers are serialized).
func (db *DB) setCompactionFilter(cf uint32, f CompactionFilter) {
	old := db.cfFilters.Load()
	m := map[uint32]CompactionFilter{}
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	if f == nil {
		delete(m, cf)
	} else {
		m[cf] = f
	}
	db.cfFilters.Store(&m)
}

// compactionFilter returns family cf's filter, or nil.
func (db *DB) compactionFilter(cf uint32) CompactionFilter {
	if m := db.cfFilters.Load(); m != nil {
		return (*m)[cf]
	}
	return nil
}
