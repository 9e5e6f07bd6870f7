package sieve

import (
	"fmt"
	"path"
	"strings"

	"github.com/sievedb/sieve/internal/base"
)

// WALRecoveryMode is Options.WALRecovery: what Open does with a damaged
// write-ahead log. The modes follow RocksDB's WALRecoveryMode. In every
// mode a torn tail of the newest WAL — the bytes a crash left unsynced,
// which wal/FORMAT.md tells apart from damage to synced bytes — is
// truncated without complaint: no write acknowledged as synced lies there.
type WALRecoveryMode uint8

const (
	// WALRecoveryTolerateCorruptedTail (the default; RocksDB's
	// kTolerateCorruptedTailRecords) tolerates only the torn tail of the
	// newest WAL. Any other damage — a bad record in the middle of a WAL, a
	// WAL that is not the newest cut short, a batch that does not decode —
	// fails Open with ErrCorruption naming the WAL and the offset. Nothing
	// acknowledged is lost silently: the database opens with every write
	// that was synced, or not at all.
	WALRecoveryTolerateCorruptedTail WALRecoveryMode = iota
	// WALRecoveryPointInTime (RocksDB's kPointInTimeRecovery) replays the
	// WALs up to the first damaged record and stops there: the database
	// opens as it was at that moment, a consistent prefix of the history
	// (every batch before the damage, none after it, in that WAL or any
	// later one). Writes after the damage are lost, synced ones included;
	// the WALs that held them are moved to the lost/ folder, and a copy of
	// the damaged WAL is kept there.
	WALRecoveryPointInTime
	// WALRecoverySkipDamaged (RocksDB's kSkipAnyCorruptedRecords) drops
	// each damaged record and replays everything else: the most data, but
	// not a prefix of the history — a batch after the damage may be kept
	// while an earlier one is gone, so a later write may be there without
	// the earlier write it relied on. Only the damaged records are lost
	// (synced ones included); a copy of each damaged WAL is kept in lost/.
	// Salvage mode: read what it kept before writing on.
	WALRecoverySkipDamaged
)

func (m WALRecoveryMode) String() string {
	switch m {
	case WALRecoveryTolerateCorruptedTail:
		return "tolerate-corrupted-tail"
	case WALRecoveryPointInTime:
		return "point-in-time"
	case WALRecoverySkipDamaged:
		return "skip-damaged"
	}
	return fmt.Sprintf("WALRecoveryMode(%d)", uint8(m))
}

// WALRecoveryReport says what Open's WAL replay dropped
// (Metrics.WALRecovery). It is empty when nothing was dropped (a torn
// tail of the newest WAL is not counted: nothing acknowledged as synced
// was there).
type WALRecoveryReport struct {
	Mode WALRecoveryMode
	// Damage lists each damaged range that replay dropped.
	Damage []WALDamage
	// Ignored are the WALs after the point where point-in-time recovery
	// stopped: not replayed, moved to lost/.
	Ignored []string
	// BytesDropped counts the WAL bytes not replayed (damaged ranges and
	// ignored WALs).
	BytesDropped int64
	// RecordsDropped counts the records that were read whole but refused
	// (a batch that does not decode, a sequence number out of order);
	// records inside damaged bytes cannot be counted.
	RecordsDropped int
	// SetAside lists the copies and files put in lost/.
	SetAside []string
}

// WALDamage is one damaged range of a WAL that replay dropped.
type WALDamage struct {
	WAL      string
	From, To int64 // file offsets: [From, To) was not replayed
	Reason   string
}

// Dropped reports whether replay dropped anything.
func (r *WALRecoveryReport) Dropped() bool {
	return len(r.Damage) > 0 || len(r.Ignored) > 0 || r.RecordsDropped > 0
}

func (r WALRecoveryReport) String() string {
	if !r.Dropped() {
		return fmt.Sprintf("WAL recovery (%s): nothing dropped", r.Mode)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "WAL recovery (%s): %d damaged ranges, %d WALs ignored, %d records refused, %d bytes dropped",
		r.Mode, len(r.Damage), len(r.Ignored), r.RecordsDropped, r.BytesDropped)
	for _, d := range r.Damage {
		fmt.Fprintf(&b, "\n  %s [%d, %d): %s", d.WAL, d.From, d.To, d.Reason)
	}
	for _, n := range r.Ignored {
		fmt.Fprintf(&b, "\n  %s: after the stop point, not replayed", n)
	}
	return b.String()
}

// noteDamage records and logs a dropped range of WAL name.
func (db *DB) noteDamage(name string, from, to int64, reason string) {
	r := &db.walRecovery
	r.Damage = append(r.Damage, WALDamage{WAL: path.Base(name), From: from, To: to, Reason: reason})
	r.BytesDropped += max(to-from, 0)
	db.opts.Logger.Warn("WAL recovery dropped damaged records", "mode", db.opts.WALRecovery.String(),
		"wal", name, "from", from, "to", to, "reason", reason)
}

// noteRefused records and logs a whole record that replay refused.
func (db *DB) noteRefused(name string, off int64, n int, err error) {
	db.walRecovery.RecordsDropped++
	db.noteDamage(name, off, off+int64(n), "record refused: "+err.Error())
}

// ignoreWALs moves the WALs after a point-in-time stop into lost/ (read
// only: it only reports them).
func (db *DB) ignoreWALs(logs []uint64) error {
	for _, num := range logs {
		name := base.FileName(base.FileTypeLog, num)
		full := base.MakeFilename(db.dirname, base.FileTypeLog, num)
		if st, err := db.fs.Stat(full); err == nil {
			db.walRecovery.BytesDropped += st.Size()
		}
		db.walRecovery.Ignored = append(db.walRecovery.Ignored, name)
		db.opts.Logger.Warn("point-in-time WAL recovery ignores a WAL after the damage", "wal", full)
		if db.opts.ReadOnly {
			continue
		}
		dst, err := setAside(db.fs, db.dirname, name, false)
		if err != nil {
			return err
		}
		db.walRecovery.SetAside = append(db.walRecovery.SetAside, dst)
	}
	return nil
}

// keepDamagedWAL copies a WAL that replay dropped records of into lost/
// (it stays in place until the flush of what was replayed retires it).
func (db *DB) keepDamagedWAL(num uint64) error {
	if db.opts.ReadOnly {
		return nil
	}
	dst, err := setAside(db.fs, db.dirname, base.FileName(base.FileTypeLog, num), true)
	if err != nil {
		return err
	}
	db.walRecovery.SetAside = append(db.walRecovery.SetAside, dst)
	db.opts.Logger.Warn("kept a copy of a damaged WAL", "copy", dst)
	return nil
}
