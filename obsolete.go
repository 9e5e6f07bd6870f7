package sieve

import (
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
)

// onObsoleteTables deletes tables that no version references any more. It
// runs on whichever goroutine dropped the last reference. The manifest edit
// that removed them is durable by then.
func (db *DB) onObsoleteTables(files []*manifest.FileMetadata) {
	if len(files) == 0 || db.opts.ReadOnly {
		return
	}
	for _, f := range files {
		db.tables.forget(f.FileNum)
		name := base.MakeFilename(db.dirname, base.FileTypeTable, f.FileNum)
		if err := db.fs.Remove(name); err != nil {
			db.opts.Logger.Warn("removing obsolete table", "table", f.FileNum, "err", err)
		}
	}
	if err := db.fs.SyncDir(db.dirname); err != nil {
		db.opts.Logger.Warn("syncing directory after removing tables", "err", err)
	}
}

// deleteObsoleteFilesLocked removes, at Open, every file the database no
// longer needs: tables no version names, WALs older than the manifest's log
// number, manifests other than the live one, and temporary files.
// REQUIRES: db.mu held, no flush or compaction running.
func (db *DB) deleteObsoleteFilesLocked() {
	names, err := db.fs.List(db.dirname)
	if err != nil {
		return
	}
	live := map[uint64]bool{}
	v := db.versions.Current()
	for _, lv := range v.CFs {
		for _, files := range lv {
			for _, f := range files {
				live[f.FileNum] = true
			}
		}
	}
	v.Unref()
	minLog := min(db.minLiveWALLocked(), db.versions.LogNum())
	removed := 0
	for _, name := range names {
		t, num, ok := base.ParseFilename(name)
		if !ok {
			continue
		}
		obsolete := false
		switch t {
		case base.FileTypeTable:
			obsolete = !live[num]
		case base.FileTypeLog:
			obsolete = num < minLog
		case base.FileTypeManifest:
			obsolete = num != db.versions.ManifestNum()
		case base.FileTypeTemp:
			obsolete = true
		}
		if obsolete {
			if err := db.fs.Remove(db.dirname + "/" + name); err == nil {
				removed++
			}
		}
	}
	if removed > 0 {
		db.fs.SyncDir(db.dirname)
	}
}

// minLiveWALLocked is the oldest WAL still needed: the oldest immutable
// group's, else the mutable group's. REQUIRES: db.mu held.
func (db *DB) minLiveWALLocked() uint64 {
	if len(db.mu.imm) > 0 {
		return db.mu.imm[0].logNum
	}
	return db.mu.mem.logNum
}

// obsoleteWALsLocked takes the WALs older than every live group off the
// WAL list after a flush made the manifest's log number durable and
// returns their names, for deleteObsoleteWALs. REQUIRES: db.mu held.
func (db *DB) obsoleteWALsLocked() []string {
	minLog := min(db.minLiveWALLocked(), db.versions.LogNum())
	var names []string
	for len(db.mu.wals) > 0 && db.mu.wals[0] < minLog {
		names = append(names, base.MakeFilename(db.dirname, base.FileTypeLog, db.mu.wals[0]))
		db.mu.wals = db.mu.wals[1:]
	}
	return names
}

// deleteObsoleteWALs removes the WALs obsoleteWALsLocked returned. It runs
// without db.mu: unlinking a WAL of a full memtable frees tens of MiB of
// extents and takes milliseconds, which the commit leader (it takes db.mu
// for every group) would otherwise wait out. A WAL off the list is named
// by nothing that reads the list (Checkpoint, Open's scan deletes it if
// a crash leaves it).
func (db *DB) deleteObsoleteWALs(names []string) {
	for _, name := range names {
		if err := db.fs.Remove(name); err != nil {
			db.opts.Logger.Warn("removing obsolete WAL", "wal", name, "err", err)
		}
	}
	if len(names) > 0 {
		db.fs.SyncDir(db.dirname)
	}
}
