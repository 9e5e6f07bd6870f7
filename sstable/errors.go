package sstable

import (
	"fmt"

	"github.com/sievedb/sieve/internal/base"
)

// errCtx names a block for error messages. The zero errCtx adds nothing: the
// standalone decoders (properties, metaindex) return bare errors that the
// reader wraps with its own context.
//
// The Reader is the one layer that names the table in its errors (as
// "table 000012.sst", from ReaderOptions.FileNum), so that its callers
// add what they were doing but not the file again. A Reader opened with
// FileNum 0 (an external table, a file given by path) names no table: its
// caller names the file by its path.
type errCtx struct {
	set     bool
	fileNum uint64
	kind    string // "data", "index", "filter", "properties", "metaindex", "footer"
	offset  uint64
}

func blockCtx(fileNum uint64, kind string, offset uint64) errCtx {
	return errCtx{set: true, fileNum: fileNum, kind: kind, offset: offset}
}

// corrupt marks err as corruption of the block c names.
func (c errCtx) corrupt(err error) error {
	if !c.set {
		return err
	}
	return base.CorruptionErrorf("sstable: %s%s block at offset %d: %w", tableName(c.fileNum), c.kind, c.offset, err)
}

// tableName is the "table 000012.sst: " that starts a Reader's error
// messages, and "" for file number 0 (see errCtx).
func tableName(fileNum uint64) string {
	if fileNum == 0 {
		return ""
	}
	return "table " + base.FileName(base.FileTypeTable, fileNum) + ": "
}

func (c errCtx) corruptf(format string, args ...any) error {
	return c.corrupt(fmt.Errorf(format, args...))
}
