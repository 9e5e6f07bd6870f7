package wal

import (
	"fmt"

	"github.com/sievedb/sieve/internal/base"
)

// TruncatableFile is a log file that Seal can cut back: vfs.File
// satisfies it. Writes must append at the end of the file.
type TruncatableFile interface {
	WritableFile
	Truncate(size int64) error
}

// Seal ends a log that a crashed writer left without its end-of-log
// trailer, so that it reads exactly like a cleanly closed one: it cuts the
// file to validEnd (Reader.ValidEnd after the Reader returned io.EOF: the
// end of the last whole record), syncs, appends the EOF trailer and syncs
// again. A log whose file header is missing or torn (validEnd below the
// header size) is rewritten as an empty log. Recovery seals the newest log
// before starting the next one, which is what lets every log but the
// newest be required to end with a trailer (FORMAT.md, rule 14).
//
// Sealing is idempotent under crashes: until the trailer is synced the log
// still looks torn and is sealed again on the next recovery.
func Seal(f TruncatableFile, logNum uint64, validEnd int64) error {
	if validEnd < fileHeaderSize {
		if err := f.Truncate(0); err != nil {
			return fmt.Errorf("wal: sealing %s: %w", base.FileName(base.FileTypeLog, logNum), err)
		}
		w, err := NewWriter(f, logNum)
		if err != nil {
			return err
		}
		return w.Close()
	}
	if err := f.Truncate(validEnd); err != nil {
		return fmt.Errorf("wal: sealing %s: %w", base.FileName(base.FileTypeLog, logNum), err)
	}
	w := &Writer{f: f, logNum: logNum}
	w.offset.Store(validEnd)
	// The cut must be durable before the trailer vouches for it.
	if err := f.Sync(); err != nil {
		return fmt.Errorf("wal: sealing %s: sync through offset %d: %w", base.FileName(base.FileTypeLog, logNum), validEnd, err)
	}
	w.synced.Store(validEnd)
	return w.Close()
}
