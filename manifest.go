package sieve

import (
	"fmt"

	"github.com/sievedb/sieve/internal/manifest"
)

// logAndApply is the one path by which the DB writes its manifest: flushes,
// compactions and moves, column family creation and merger binding, the
// log-number move at recovery, and the sealed-log record at Close.
//
// Locking: it takes versionMu (rank Version: manifest writes are
// serialized) and, once the edit is durable, db.mu (rank DB) to install
// the new version, run retire (if not nil) and publish the read state — one
// step for every reader, so that a flush's table appears exactly when its
// memtable disappears. REQUIRES: the caller holds neither lock (it may
// hold CFCreate or Commit, which rank above).
//
// Error policy: any failure to record the edit puts the DB in read-only
// mode (setBackgroundError) and is returned; it is never retried (after a
// failed fsync the manifest's state is unknown), and retire does not run.
// An error from starting a new manifest after the edit was installed
// counts the same way.
func (db *DB) logAndApply(edit *manifest.VersionEdit, retire func()) error {
	db.versionMu.Lock()
	defer db.versionMu.Unlock()
	return db.logAndApplyLocked(edit, retire)
}

// logAndApplyLocked is logAndApply for a caller that holds versionMu
// (Ingest, which chooses its tables' levels from the version the edit
// applies to). REQUIRES: versionMu held, db.mu not.
func (db *DB) logAndApplyLocked(edit *manifest.VersionEdit, retire func()) error {
	orphans := db.pruneDropped(edit)
	err := db.versions.LogAndApply(edit, func(install func()) {
		db.mu.Lock()
		defer db.mu.Unlock()
		install()
		if retire != nil {
			retire()
		}
		db.updateReadStateLocked()
	})
	if err != nil {
		db.setBackgroundError(fmt.Errorf("manifest write: %w", err))
		return err
	}
	db.removeOrphans(orphans)
	return nil
}
