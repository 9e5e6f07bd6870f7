package sieve

import (
	"fmt"
	"io"
	"sort"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/vfs"
	"github.com/sievedb/sieve/wal"
)

// dirState is what checkDir found in the directory, for recover.
type dirState struct {
	// logs are the WALs at or after the manifest's log number, ascending.
	logs []uint64
	// firstWAL is the number for the first WAL of a new database (see
	// checkWALsPresent), else 0.
	firstWAL uint64
}

// checkDir lists the directory once, marks every file number in it used,
// checks the loaded manifest against it — every table it names is present,
// and the WALs it relies on (checkWALsPresent) — and then, unless
// read-only, starts a new manifest (a snapshot of the loaded state). It
// runs before anything is written, so that a manifest found inconsistent is
// left as it was found.
func (db *DB) checkDir() (dirState, error) {
	var d dirState
	names, err := db.fs.List(db.dirname)
	if err != nil {
		return d, err
	}
	for _, name := range names {
		t, num, ok := base.ParseFilename(name)
		if !ok {
			continue
		}
		db.versions.MarkFileNumUsed(num)
		if t == base.FileTypeLog && num >= db.versions.LogNum() {
			d.logs = append(d.logs, num)
		}
	}
	sort.Slice(d.logs, func(i, j int) bool { return d.logs[i] < d.logs[j] })
	if err := db.checkTablesPresent(names); err != nil {
		return d, err
	}
	if d.firstWAL, err = db.checkWALsPresent(d.logs); err != nil {
		return d, err
	}
	if !db.opts.ReadOnly && !db.versions.Writable() {
		if err := db.versions.Rotate(); err != nil {
			return d, err
		}
	}
	return d, nil
}

// recover replays the WALs the manifest does not cover into immutable
// memtable groups, truncates a torn tail of the newest WAL, starts a new
// WAL, publishes the read state, removes obsolete files and schedules the
// flush of what was recovered.
func (db *DB) recover(d dirState) error {
	logs := d.logs
	db.logSeq = db.versions.LastSeq()
	var recovered []*memGroup
	for i, num := range logs {
		g, err := db.replayWAL(num, i == len(logs)-1)
		if err != nil {
			return err
		}
		if g != nil {
			recovered = append(recovered, g)
		}
	}
	db.visibleSeq.Store(db.logSeq)

	db.mu.Lock()
	db.mu.imm = recovered
	db.mu.wals = logs
	if db.opts.ReadOnly {
		db.mu.mem = newMemGroup(0, db.memFilterBits(), db.memHugePages(), db.cfPrefix)
		db.updateReadStateLocked()
		db.mu.Unlock()
		return nil
	}
	if err := db.newWALLocked(d.firstWAL); err != nil {
		db.mu.Unlock()
		return err
	}
	db.mu.mem = newMemGroup(db.log.num, db.memFilterBits(), db.memHugePages(), db.cfPrefix)
	minLive := db.minLiveWALLocked()
	db.updateReadStateLocked()
	db.mu.Unlock()
	// WALs that held nothing to replay are about to be deleted: move the
	// log number past them first, so that the manifest never names a WAL
	// that is gone (checkWALsPresent). No background work runs yet.
	if minLive > db.versions.LogNum() {
		if err := db.logAndApply(&manifest.VersionEdit{HasLogNum: true, LogNum: minLive}, nil); err != nil {
			return err
		}
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	db.deleteObsoleteFilesLocked()
	db.maybeScheduleFlushLocked()
	// A database closed with L0 (or a level) over its trigger compacts now,
	// not only after the next flush.
	db.maybeScheduleCompactionLocked()
	return nil
}

// checkWALsPresent fails Open when a WAL the manifest relies on is gone:
// the one its log number names (created, and its directory entry synced,
// before any edit named it; deleted only after a later edit moved the log
// number past it), and the one a clean close sealed, unless flushed since.
// A missing one means a lost manifest edit — the manifest cut at a record
// boundary, which reads like a crash — or a WAL removed by hand.
//
// One WAL may legitimately be missing: the first, whose number a new
// database's manifest reserves (manifest.FirstLogNum) before the WAL is
// created, if the process died in between. Then the directory holds no WAL
// and the manifest no table and no sequence number, and firstWAL returns
// the number for recovery to create it with.
func (db *DB) checkWALsPresent(logs []uint64) (firstWAL uint64, err error) {
	have := func(num uint64) bool {
		i := sort.Search(len(logs), func(i int) bool { return logs[i] >= num })
		return i < len(logs) && logs[i] == num
	}
	logNum, sealed := db.versions.LogNum(), db.versions.SealedLog()
	if logNum != 0 && !have(logNum) {
		if len(logs) == 0 && db.versions.LastSeq() == 0 && db.versionEmpty() {
			return logNum, nil
		}
		return 0, base.CorruptionErrorf("%s names WAL %s as the oldest holding unflushed writes, but it is missing from %s (a lost manifest edit or a removed WAL)",
			base.FileName(base.FileTypeManifest, db.versions.ManifestNum()), base.FileName(base.FileTypeLog, logNum), db.dirname)
	}
	if sealed != 0 && sealed >= logNum && !have(sealed) {
		return 0, base.CorruptionErrorf("%s says a clean close sealed WAL %s, but it is missing from %s",
			base.FileName(base.FileTypeManifest, db.versions.ManifestNum()), base.FileName(base.FileTypeLog, sealed), db.dirname)
	}
	return 0, nil
}

// versionEmpty reports whether the current version holds no table.
func (db *DB) versionEmpty() bool {
	v := db.versions.Current()
	defer v.Unref()
	for _, lv := range v.CFs {
		for _, files := range lv {
			if len(files) > 0 {
				return false
			}
		}
	}
	return true
}

// replayWAL reads one WAL into a new memtable group. Every WAL but the
// newest (last) must end with its end-of-log trailer: rotation closes a WAL
// before the next one starts, and recovery seals the newest before it
// starts the next (wal/FORMAT.md, rule 14). So must the WAL that the
// manifest says a clean close sealed. The newest WAL may end torn or
// without a trailer (a crash); recovery truncates it to its last whole
// record and seals it.
func (db *DB) replayWAL(num uint64, last bool) (*memGroup, error) {
	name := base.MakeFilename(db.dirname, base.FileTypeLog, num)
	f, err := db.fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	g := newMemGroup(num, db.memFilterBits(), db.memHugePages(), db.cfPrefix)
	r := wal.NewReader(f, size, num)
	for first := true; ; first = false {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("sieve: WAL %s: %w", name, err)
		}
		if err := db.applyRecovered(g, rec, !first); err != nil {
			return nil, fmt.Errorf("sieve: WAL %s, record at offset %d: %w", name, r.Offset(), err)
		}
	}
	tail := r.Tail()
	if !tail.Clean {
		switch {
		case !last && tail.Torn:
			return nil, base.CorruptionErrorf("WAL %s: damaged at offset %d (%s), but it is not the newest WAL", name, tail.BadOffset, tail.Reason)
		case !last:
			return nil, base.CorruptionErrorf("WAL %s: ends at offset %d without its end-of-log trailer, but it is not the newest WAL (cut short)", name, tail.ValidEnd)
		case num == db.versions.SealedLog():
			return nil, base.CorruptionErrorf("WAL %s: ends at offset %d without the end-of-log trailer that the manifest says a clean close wrote (cut short)", name, tail.ValidEnd)
		}
		if tail.Torn {
			db.opts.Logger.Warn("truncating torn WAL tail", "wal", name, "valid_end", tail.ValidEnd, "size", size, "reason", tail.Reason)
		}
		if !db.opts.ReadOnly {
			// The records may have reached the OS but not the disk (the
			// process died before a sync), and new writes go to a newer
			// WAL: sealing syncs them first, so that a power loss cannot
			// keep the new writes and lose these.
			if err := db.sealWAL(name, num, tail.ValidEnd); err != nil {
				return nil, err
			}
		}
	} else if last && !db.opts.ReadOnly {
		// The trailer (and records) may have reached the OS but not the
		// disk: a Close whose final sync failed, or a process killed
		// between the two. Sync before a newer WAL makes this one older.
		if err := db.syncWAL(name); err != nil {
			return nil, err
		}
	}
	if g.empty() {
		return nil, nil
	}
	return g, nil
}

// withWAL opens the WAL file name read-write, runs op on it and closes it;
// op's error comes first.
func (db *DB) withWAL(name string, op func(f vfs.File) error) error {
	f, err := db.fs.OpenReadWrite(name)
	if err != nil {
		return err
	}
	if err := op(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (db *DB) syncWAL(name string) error {
	return db.withWAL(name, func(f vfs.File) error { return f.Sync() })
}

func (db *DB) sealWAL(name string, num uint64, validEnd int64) error {
	return db.withWAL(name, func(f vfs.File) error {
		if err := wal.Seal(f, num, validEnd); err != nil {
			return fmt.Errorf("sieve: sealing WAL %s: %w", name, err)
		}
		return nil
	})
}

// applyRecovered applies one WAL record (a batch, or a group of batches
// committed together) to g. The batches of one WAL have consecutive
// sequence numbers: contiguous says that rec is not the WAL's first
// record, so its first batch must follow the last one replayed exactly (a
// gap means a record from elsewhere in the log, which passes its checksum).
func (db *DB) applyRecovered(g *memGroup, rec []byte, contiguous bool) error {
	for len(rec) > 0 {
		n, err := batchLen(rec)
		if err != nil {
			return err
		}
		br, seq, err := newBatchReader(rec[:n])
		if err != nil {
			return err
		}
		if seq <= db.logSeq {
			return base.CorruptionErrorf("batch sequence number %d not after %d", seq, db.logSeq)
		}
		if contiguous && seq != db.logSeq+1 {
			return base.CorruptionErrorf("batch sequence number %d does not follow %d", seq, db.logSeq)
		}
		contiguous = true
		count := uint64(0)
		for e, ok := br.next(); ok; e, ok = br.next() {
			switch {
			case db.cfs.known(e.cf):
				g.tableForWrite(e.cf).Add(seq+count, e.kind, e.key, e.value)
			case db.cfs.wasDropped(e.cf):
				// Written before (or racing) the family's drop: gone with it.
			default:
				return base.CorruptionErrorf("batch names unknown column family %d", e.cf)
			}
			count++
		}
		if br.Err != nil {
			return br.Err
		}
		db.logSeq = seq + count - 1
		rec = rec[n:]
	}
	return nil
}

// checkTablesPresent fails Open when a table the manifest names is missing
// from the directory.
func (db *DB) checkTablesPresent(names []string) error {
	onDisk := map[uint64]bool{}
	for _, name := range names {
		if t, num, ok := base.ParseFilename(name); ok && t == base.FileTypeTable {
			onDisk[num] = true
		}
	}
	v := db.versions.Current()
	defer v.Unref()
	for cf, lv := range v.CFs {
		for level, files := range lv {
			for _, f := range files {
				if !onDisk[f.FileNum] {
					return base.CorruptionErrorf("table %s (column family %d, L%d) named by the manifest is missing from %s",
						base.FileName(base.FileTypeTable, f.FileNum), cf, level, db.dirname)
				}
			}
		}
	}
	return nil
}
