package sieve

import (
	"errors"
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
	db.walRecovery.Mode = db.opts.WALRecovery
	for i, num := range logs {
		g, stop, err := db.replayWAL(num, i == len(logs)-1)
		if err != nil {
			return err
		}
		if g != nil {
			recovered = append(recovered, g)
		}
		if stop {
			if err := db.ignoreWALs(logs[i+1:]); err != nil {
				return err
			}
			if !db.opts.ReadOnly {
				logs = logs[:i+1]
			}
			break
		}
	}
	db.visibleSeq.Store(db.logSeq)

	db.mu.Lock()
	db.mu.imm = recovered
	db.mu.wals = logs
	if db.opts.ReadOnly {
		db.mu.mem = newMemGroup(0, db.memFilterBits(), db.cfPrefix)
		db.updateReadStateLocked()
		db.mu.Unlock()
		return nil
	}
	if err := db.newWALLocked(d.firstWAL); err != nil {
		db.mu.Unlock()
		return err
	}
	db.mu.mem = newMemGroup(db.log.num, db.memFilterBits(), db.cfPrefix)
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
// record and seals it. Damage anywhere else is ErrCorruption, unless
// Options.WALRecovery says to drop it (replayRecords); stop reports that
// point-in-time recovery stopped in this WAL.
func (db *DB) replayWAL(num uint64, last bool) (g *memGroup, stop bool, err error) {
	name := base.MakeFilename(db.dirname, base.FileTypeLog, num)
	f, err := db.fs.Open(name)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, false, err
	}
	g = newMemGroup(num, db.memFilterBits(), db.cfPrefix)
	r := wal.NewReader(f, size, num)
	dropped := len(db.walRecovery.Damage)
	stop, err = db.replayRecords(g, r, name, size)
	if err != nil {
		return nil, false, err
	}
	if !stop {
		if stop, err = db.replayTail(r.Tail(), name, num, last); err != nil {
			return nil, false, err
		}
	}
	if len(db.walRecovery.Damage) > dropped {
		if err := db.keepDamagedWAL(num); err != nil {
			return nil, false, err
		}
	}
	if g.empty() {
		return nil, stop, nil
	}
	return g, stop, nil
}

// replayRecords applies the records of WAL r (name, size bytes) to g until
// its end. Damage (a corrupt chunk, a record that does not apply) fails in
// the default mode; point-in-time stops there (stop); skip-damaged drops it
// and resynchronizes at the next record.
func (db *DB) replayRecords(g *memGroup, r *wal.Reader, name string, size int64) (stop bool, err error) {
	mode := db.opts.WALRecovery
	for first := true; ; {
		rec, err := r.Next()
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			if mode == WALRecoveryTolerateCorruptedTail || !errors.Is(err, ErrCorruption) {
				return false, db.walDamageError(name, err)
			}
			if mode == WALRecoveryPointInTime {
				db.noteDamage(name, r.ValidEnd(), size, err.Error())
				return true, nil
			}
			from, to, _, rerr := r.Resync()
			if rerr != nil {
				return false, fmt.Errorf("sieve: WAL %s: %w", name, rerr)
			}
			db.noteDamage(name, from, to, err.Error())
			first = true
			continue
		}
		if err := db.applyRecovered(g, rec, !first); err != nil {
			if mode == WALRecoveryTolerateCorruptedTail {
				return false, db.walRecordError(name, r.Offset(), err)
			}
			if mode == WALRecoveryPointInTime {
				db.walRecovery.RecordsDropped++
				db.noteDamage(name, r.Offset(), size, "record refused: "+err.Error())
				return true, nil
			}
			db.noteRefused(name, r.Offset(), len(rec), err)
			first = true
			continue
		}
		first = false
	}
}

// replayTail judges how WAL num (name) ended and seals the newest one.
func (db *DB) replayTail(tail wal.TailInfo, name string, num uint64, last bool) (stop bool, err error) {
	if tail.Clean {
		if last && !db.opts.ReadOnly {
			// The trailer (and records) may have reached the OS but not
			// the disk: a Close whose final sync failed, or a process
			// killed between the two. Sync before a newer WAL makes
			// this one older.
			return false, db.syncWAL(name)
		}
		return false, nil
	}
	var damage string
	switch {
	case !last && tail.Torn:
		damage = fmt.Sprintf("WAL %s is damaged at offset %d (%s), and it is not the newest WAL, so this is not a crash's unsynced tail", name, tail.BadOffset, tail.Reason)
	case !last:
		damage = fmt.Sprintf("WAL %s ends at offset %d without its end-of-log trailer, but it is not the newest WAL: it was cut short", name, tail.ValidEnd)
	case num == db.versions.SealedLog():
		damage = fmt.Sprintf("WAL %s ends at offset %d without the end-of-log trailer that the manifest says a clean close wrote: it was cut short", name, tail.ValidEnd)
	}
	if damage != "" {
		if db.opts.WALRecovery == WALRecoveryTolerateCorruptedTail {
			return false, db.walTailError(damage)
		}
		db.noteDamage(name, tail.ValidEnd, tail.Size, damage)
		if db.opts.WALRecovery == WALRecoveryPointInTime {
			return true, nil
		}
	}
	if tail.Torn && damage == "" {
		db.opts.Logger.Warn("truncating torn WAL tail", "wal", name, "valid_end", tail.ValidEnd, "size", tail.Size, "reason", tail.Reason)
	}
	if last && !db.opts.ReadOnly {
		// The records may have reached the OS but not the disk (the
		// process died before a sync), and new writes go to a newer
		// WAL: sealing syncs them first, so that a power loss cannot
		// keep the new writes and lose these.
		return false, db.sealWAL(name, num, tail.ValidEnd)
	}
	return false, nil
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
		seq, count, err := db.checkRecovered(rec[:n])
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
		br, _, _ := newBatchReader(rec[:n])
		i := uint64(0)
		for e, ok := br.next(); ok; e, ok = br.next() {
			if db.cfs.known(e.cf) {
				g.tableForWrite(e.cf).Add(seq+i, e.kind, e.key, e.value)
			} // else written before (or racing) the family's drop: gone with it.
			i++
		}
		db.logSeq = seq + count - 1
		rec = rec[n:]
	}
	return nil
}

// checkRecovered decodes one batch of a WAL record without applying it,
// so that a batch is applied whole or not at all (a recovery mode that
// drops a damaged record must not keep half of it): it returns the
// batch's first sequence number and its entry count.
func (db *DB) checkRecovered(b []byte) (seq, count uint64, err error) {
	br, seq, err := newBatchReader(b)
	if err != nil {
		return 0, 0, err
	}
	for e, ok := br.next(); ok; e, ok = br.next() {
		if !db.cfs.known(e.cf) && !db.cfs.wasDropped(e.cf) {
			return 0, 0, base.CorruptionErrorf("batch names unknown column family %d", e.cf)
		}
		count++
	}
	if br.Err != nil {
		return 0, 0, br.Err
	}
	return seq, count, nil
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
