package sstable

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"
	"github.com/sievedb/sieve/internal/base"
)

// TableFormat is the on-disk format version of a table, recorded in its
// footer. Versions form a linear sequence; see "Format versions" in
// FORMAT.md. A number is never reused.
type TableFormat uint32

const (
	// TableFormatV1 is the initial format: xxhash64 block checksums
	// (32 bits kept), per-block snappy, whole-table filter, properties.
	TableFormatV1 TableFormat = 1

	// TableFormatV2 adds the range-deletion meta block ("sieve.rangedel").
	// A writer uses it only for a table that holds range tombstones, so
	// tables without any stay readable by readers of V1.
	TableFormatV2 TableFormat = 2

	// TableFormatV3 adds partitioned index and filter blocks
	// (WriterOptions.PartitionSize): a top-level index and a top-level
	// filter index. A writer uses it only for a table it partitioned.
	TableFormatV3 TableFormat = 3

	// TableFormatLatest is the newest format this build reads and writes.
	TableFormatLatest = TableFormatV3
)

// String returns the format as "v1", "v2", ...
func (f TableFormat) String() string { return fmt.Sprintf("v%d", uint32(f)) }

const (
	// blockTrailerLen is the compression type byte plus a 4-byte checksum.
	blockTrailerLen = 5
	// footerLen is the fixed footer size.
	footerLen = 48
	// footerMagic ends every table. See FORMAT.md "Footer".
	footerMagic = "\x89sieve\r\n"
)

// blockType is the compression byte of a block trailer.
type blockType uint8

const (
	blockTypeNone   blockType = 0
	blockTypeSnappy blockType = 1
)

var blockTypeNames = [...]string{blockTypeNone: "none", blockTypeSnappy: "snappy"}

func (t blockType) String() string { return base.EnumName(t, blockTypeNames[:], "type") }

// blockChecksum is the checksum stored in a block trailer: the low 32 bits
// of xxhash64 over the stored contents followed by the type byte. buf is
// exactly contents||type.
func blockChecksum(buf []byte) uint32 { return uint32(xxhash.Sum64(buf)) }

// blockHandle locates a block: its offset in the file and the length of its
// contents, not counting the trailer.
type blockHandle struct {
	offset, length uint64
}

// end returns the offset just past the block's trailer, and false if it
// overflows.
func (h blockHandle) end() (uint64, bool) {
	e := h.offset + h.length + blockTrailerLen
	return e, e >= h.offset && h.length <= e
}

func (h blockHandle) String() string { return fmt.Sprintf("%d/%d", h.offset, h.length) }

func appendHandle(dst []byte, h blockHandle) []byte {
	dst = binary.AppendUvarint(dst, h.offset)
	return binary.AppendUvarint(dst, h.length)
}

// decodeHandle decodes a handle that must occupy all of src.
func decodeHandle(src []byte) (blockHandle, bool) {
	off, n := binary.Uvarint(src)
	if n <= 0 {
		return blockHandle{}, false
	}
	length, m := binary.Uvarint(src[n:])
	if m <= 0 || n+m != len(src) {
		return blockHandle{}, false
	}
	return blockHandle{off, length}, true
}

// footer is the decoded fixed-size end of a table.
type footer struct {
	metaindex blockHandle
	index     blockHandle
	format    TableFormat
}

func (f footer) encode() []byte {
	buf := make([]byte, footerLen)
	binary.LittleEndian.PutUint64(buf[0:], f.metaindex.offset)
	binary.LittleEndian.PutUint64(buf[8:], f.metaindex.length)
	binary.LittleEndian.PutUint64(buf[16:], f.index.offset)
	binary.LittleEndian.PutUint64(buf[24:], f.index.length)
	binary.LittleEndian.PutUint32(buf[32:], uint32(f.format))
	binary.LittleEndian.PutUint32(buf[36:], uint32(xxhash.Sum64(buf[:36])))
	copy(buf[40:], footerMagic)
	return buf
}

// decodeFooter checks and decodes the last footerLen bytes of a table. It
// does not check the handles against the file size; the reader does.
func decodeFooter(buf []byte) (footer, error) {
	if len(buf) != footerLen {
		return footer{}, fmt.Errorf("footer is %d bytes, want %d", len(buf), footerLen)
	}
	if string(buf[40:]) != footerMagic {
		return footer{}, fmt.Errorf("bad magic %q", buf[40:])
	}
	if got, want := binary.LittleEndian.Uint32(buf[36:]), uint32(xxhash.Sum64(buf[:36])); got != want {
		return footer{}, fmt.Errorf("footer checksum mismatch (stored %#08x, computed %#08x)", got, want)
	}
	f := footer{
		metaindex: blockHandle{binary.LittleEndian.Uint64(buf[0:]), binary.LittleEndian.Uint64(buf[8:])},
		index:     blockHandle{binary.LittleEndian.Uint64(buf[16:]), binary.LittleEndian.Uint64(buf[24:])},
		format:    TableFormat(binary.LittleEndian.Uint32(buf[32:])),
	}
	if f.format < TableFormatV1 || f.format > TableFormatLatest {
		return footer{}, fmt.Errorf("unknown format version %d (this build reads %d..%d)",
			uint32(f.format), uint32(TableFormatV1), uint32(TableFormatLatest))
	}
	return f, nil
}

// separatorTrailer is the trailer of a shortened index separator: with
// the largest sequence number it sorts before every entry of user key u
// (entries never carry SeqNumMax), so (u, separatorTrailer) is the
// smallest internal key with user key u. Its kind stays MERGE, the
// largest kind when the format was defined, so that tables keep their
// bytes.
var separatorTrailer = base.MakeTrailer(base.SeqNumMax, base.KindMerge)

// seekTrailer sorts before every trailer, valid or not, for the same user
// key; seeking to (ukey, seekTrailer) finds the first entry of ukey.
const seekTrailer = ^uint64(0)

// compareKey compares an encoded internal key (len >= 8) with (ukey, trailer).
func compareKey(encoded []byte, ukey []byte, trailer uint64) int {
	n := len(encoded) - base.TrailerLen
	if c := bytes.Compare(encoded[:n], ukey); c != 0 {
		return c
	}
	t := binary.LittleEndian.Uint64(encoded[n:])
	switch {
	case t > trailer:
		return -1
	case t < trailer:
		return 1
	}
	return 0
}
