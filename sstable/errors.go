package sstable

import (
	"fmt"

	"github.com/sievedb/sieve/internal/base"
)

// errCtx names a block for error messages. The zero errCtx adds nothing: the
// standalone decoders (properties, metaindex) return bare errors that the
// reader wraps with its own context.
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
	return base.CorruptionErrorf("sstable: table %s: %s block at offset %d: %w", base.FileName(base.FileTypeTable, c.fileNum), c.kind, c.offset, err)
}

func (c errCtx) corruptf(format string, args ...any) error {
	return c.corrupt(fmt.Errorf(format, args...))
}
