package sieve

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
)

var (
	// ErrColumnFamilyDropped is returned by reads and writes through the
	// handle of a dropped column family, and by a batch that names one.
	ErrColumnFamilyDropped = errors.New("sieve: column family was dropped")
	// ErrDropDefault is returned by DropColumnFamily for the default
	// column family, which every database has.
	ErrDropDefault = errors.New("sieve: the default column family cannot be dropped")
)

// DropColumnFamily removes column family cf durably: one manifest edit,
// after which the family is gone also across a crash (a crash during the
// call recovers to before or after it). Its handles (cf and any other
// handle on it) fail from then on with ErrColumnFamilyDropped, as does a
// batch that names it; a write that raced the drop may have been applied
// before it and is dropped with the family. Its tables are deleted once no
// reader uses them: an iterator or read open on it keeps reading its view.
// Its ID is never reused; OpenColumnFamily with the same name creates a
// new, empty family. The default family cannot be dropped
// (ErrDropDefault).
func (db *DB) DropColumnFamily(cf *ColumnFamily) error {
	if err := db.checkOpen(); err != nil {
		return err
	}
	if cf == nil || cf.db != db {
		return errors.New("sieve: DropColumnFamily: handle of another DB")
	}
	if cf.id == manifest.DefaultCFID {
		return ErrDropDefault
	}
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	if err := db.checkWritable(); err != nil {
		return err
	}
	r := db.cfs
	r.createMu.Lock()
	defer r.createMu.Unlock()
	st := r.get(cf.id)
	if st == nil {
		return fmt.Errorf("%w: %q", ErrColumnFamilyDropped, cf.name)
	}
	e := &manifest.VersionEdit{DroppedCFs: []uint32{st.id}, HasNextCFID: true, NextCFID: r.nextID.Load()}
	err := db.logAndApply(e, func() {
		r.mu.Lock()
		delete(r.byID, st.id)
		delete(r.byName, st.name)
		r.mu.Unlock()
		st.dropped.Store(true)
	})
	if err != nil {
		return err
	}
	db.metrics.cfDrops.Add(1)
	db.opts.Logger.Info("dropped column family", "name", st.name, "id", st.id)
	return nil
}

// checkWritable returns the background error that made the DB read-only.
func (db *DB) checkWritable() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.mu.bgErr
}

// ColumnFamilies returns the names of the column families, sorted, the
// default one included.
func (db *DB) ColumnFamilies() []string {
	r := db.cfs
	r.mu.RLock()
	names := make([]string, 0, len(r.byName))
	for name := range r.byName {
		names = append(names, name)
	}
	r.mu.RUnlock()
	sort.Strings(names)
	return names
}

// check returns ErrClosed after Close and ErrColumnFamilyDropped after
// the family's drop.
func (cf *ColumnFamily) check() error {
	if err := cf.db.checkOpen(); err != nil {
		return err
	}
	return cf.checkLive()
}

// checkLive returns ErrColumnFamilyDropped once the family was dropped.
func (cf *ColumnFamily) checkLive() error {
	if cf.dropped != nil && cf.dropped.Load() {
		return fmt.Errorf("%w: %q", ErrColumnFamilyDropped, cf.name)
	}
	return nil
}

// wasDropped reports whether id is the ID of a dropped column family:
// below every ID ever handed out and no longer registered.
func (r *cfRegistry) wasDropped(id uint32) bool {
	return id != manifest.DefaultCFID && id < r.nextID.Load() && !r.known(id)
}

// unknownCF is the error for a batch entry naming column family id.
func (r *cfRegistry) unknownCF(id uint32) error {
	if r.wasDropped(id) {
		return fmt.Errorf("%w: batch names dropped column family %d", ErrColumnFamilyDropped, id)
	}
	return fmt.Errorf("sieve: batch names unknown column family %d", id)
}

// pruneDropped removes from edit the tables it adds to or deletes from
// dropped column families — a flush or compaction that finished after the
// drop — and returns the tables it wrote for nothing (added, not moved),
// to be removed once the edit is durable. REQUIRES: versionMu held (drops
// are recorded under it, so none can happen between this and the write).
func (db *DB) pruneDropped(edit *manifest.VersionEdit) []uint64 {
	dropped := func(cf uint32) bool { return db.cfs.wasDropped(cf) }
	moved := map[uint64]bool{}
	for _, d := range edit.DeletedFiles {
		moved[d.FileNum] = true
	}
	var orphans []uint64
	for _, n := range edit.NewFiles {
		if dropped(n.CF) && !moved[n.Meta.FileNum] {
			orphans = append(orphans, n.Meta.FileNum)
		}
	}
	edit.NewFiles = slices.DeleteFunc(edit.NewFiles, func(n manifest.NewFile) bool { return dropped(n.CF) })
	edit.DeletedFiles = slices.DeleteFunc(edit.DeletedFiles, func(d manifest.DeletedFile) bool { return dropped(d.CF) })
	return orphans
}

// removeOrphans removes tables written for a dropped family that no edit
// names (best effort: the next Open's scan removes what is left).
func (db *DB) removeOrphans(nums []uint64) {
	if len(nums) == 0 {
		return
	}
	for _, num := range nums {
		db.tables.forget(num)
		if err := db.fs.Remove(base.MakeFilename(db.dirname, base.FileTypeTable, num)); err != nil {
			db.opts.Logger.Warn("removing a table of a dropped column family", "table", num, "err", err)
		}
	}
	if err := db.fs.SyncDir(db.dirname); err != nil {
		db.opts.Logger.Warn("syncing directory after removing tables", "err", err)
	}
}
