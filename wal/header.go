package wal

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
	"github.com/sievedb/sieve/internal/base"
)

// The file header is the chunk at offset 0 (FORMAT.md rules 6 and 7).

// appendFileHeader appends the file header chunk for logNum to b.
func appendFileHeader(d *xxhash.Digest, b []byte, logNum uint64) []byte {
	start := len(b)
	b = append(b, make([]byte, fileHeaderSize)...)
	c := b[start:]
	putHeaderFields(c, fileHeaderPayloadSize, chunkFileHeader, 0)
	p := c[headerSize:]
	copy(p, magic)
	p[len(magic)] = byte(formatVersionCurrent)
	binary.LittleEndian.PutUint64(p[len(magic)+1:], logNum)
	sealChunk(d, seedFor(chunkFileHeader, logNum), c)
	return b
}

// readFileHeader checks the file header chunk at offset 0 (FORMAT.md rules
// 6 and 7).
func (r *Reader) readFileHeader() error {
	if r.size == 0 {
		return r.stop(0, "")
	}
	if err := r.loadBlock(0); err != nil {
		return err
	}
	c, h, failed := r.checkChunk(r.block, 0, seedFor(chunkFileHeader, 0))
	if failed != "" {
		return r.stop(0, "file header: "+failed)
	}
	p := c[headerSize:]
	switch {
	case h.typ != chunkFileHeader || len(p) != fileHeaderPayloadSize || h.synced != 0:
		return corruptionf(0, "bad file header chunk (type %s, length %d, synced offset %d)", h.typ, h.length, h.synced)
	case string(p[:len(magic)]) != magic:
		return corruptionf(0, "bad magic %q in file header", p[:len(magic)])
	case FormatVersion(p[len(magic)]) != FormatVersion1:
		return corruptionf(0, "unsupported log format version %d", p[len(magic)])
	}
	if n := binary.LittleEndian.Uint64(p[len(magic)+1:]); n != r.logNum {
		return corruptionf(0, "file header is for %s, expected %s", base.FileName(base.FileTypeLog, n), base.FileName(base.FileTypeLog, r.logNum))
	}
	r.pos, r.validEnd = fileHeaderSize, fileHeaderSize
	return nil
}
