package sieve

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/wal"
)

// explainedError puts a plain sentence (what is damaged, what the user can
// do) before a corruption error's technical detail, keeping its chain
// (errors.Is(err, ErrCorruption) holds).
type explainedError struct {
	plain string
	err   error
}

func (e *explainedError) Error() string { return e.plain + " Detail: " + e.err.Error() }

func (e *explainedError) Unwrap() error { return e.err }

// repairAdvice says what a user can do about a database dir whose files
// are damaged; withWAL adds the WAL recovery modes.
func repairAdvice(dir string, withWAL bool) string {
	s := fmt.Sprintf("To recover what can be read, run `sieve repair %s` (it keeps every table and log record that checks out, moves unreadable files to %s/%s, and writes a new manifest)", dir, dir, LostDir)
	if withWAL {
		s += ", or open with Options.WALRecovery set to WALRecoveryPointInTime (keep the writes before the damage, lose those after it) or WALRecoverySkipDamaged (lose only the damaged records)"
	}
	return s + "; copy the directory first if the data matters."
}

// walDamageError explains damage found while replaying WAL name.
func (db *DB) walDamageError(name string, err error) error {
	var de *wal.DamageError
	if !errors.Is(err, ErrCorruption) || !errors.As(err, &de) {
		return fmt.Errorf("sieve: WAL %s: %w", name, err)
	}
	return &explainedError{
		plain: fmt.Sprintf("sieve: the write-ahead log %s is damaged at offset %d: bytes that had already been safely written to disk have changed (a disk or file-system fault), so the writes stored there cannot be replayed. %s",
			name, de.Offset, repairAdvice(db.dirname, true)),
		err: fmt.Errorf("WAL %s: %w", name, err),
	}
}

// walRecordError explains a WAL record that passed its checksum but does
// not apply.
func (db *DB) walRecordError(name string, off int64, err error) error {
	return &explainedError{
		plain: fmt.Sprintf("sieve: the write-ahead log %s holds a damaged record at offset %d (it passes its checksum but its contents are wrong), so it cannot be replayed. %s",
			name, off, repairAdvice(db.dirname, true)),
		err: fmt.Errorf("WAL %s, record at offset %d: %w", name, off, err),
	}
}

// walTailError explains a WAL that ends where it must not.
func (db *DB) walTailError(damage string) error {
	return &explainedError{
		plain: "sieve: a write-ahead log was cut short, so writes that had been safely stored in it are gone. " + repairAdvice(db.dirname, true),
		err:   base.CorruptionErrorf("%s", damage),
	}
}

var damagedFile = regexp.MustCompile(`(MANIFEST-\d+|\d{6,}\.sst|\d{6,}\.log|CURRENT)`)

// explainOpenError puts a plain sentence before a corruption error that
// Open returns and that is not explained yet.
func explainOpenError(dir string, err error) error {
	var ex *explainedError
	if err == nil || !errors.Is(err, ErrCorruption) || errors.As(err, &ex) {
		return err
	}
	what := "a file of the database"
	withWAL := false
	if m := damagedFile.FindString(err.Error()); m != "" {
		switch {
		case m == "CURRENT":
			what = "CURRENT (the file naming the live manifest)"
		case m[0] == 'M':
			what = m + " (the manifest: the record of which tables make up the database)"
		case m[len(m)-1] == 'g':
			what, withWAL = "the write-ahead log "+m, true
		default:
			what = "table " + m
		}
	}
	return &explainedError{
		plain: fmt.Sprintf("sieve: cannot open %s: %s is damaged or inconsistent. %s", dir, what, repairAdvice(dir, withWAL)),
		err:   err,
	}
}
