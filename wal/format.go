package wal

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"

	"github.com/sievedb/sieve/internal/base"
)

// The layout constants below are specified in FORMAT.md; change them only
// together with a new FormatVersion.
const (
	// BlockSize is the size of a log block. Chunks never cross a block
	// boundary.
	BlockSize = 32 << 10

	// headerSize is the size of a chunk header: checksum (8), payload
	// length (2), type (1), synced offset (8).
	headerSize = 19

	// maxPayload is the largest payload of one chunk.
	maxPayload = BlockSize - headerSize

	// fileHeaderPayloadSize is magic (8), version (1), log number (8).
	fileHeaderPayloadSize = 17

	// fileHeaderSize is the size of the file header chunk at offset 0; the
	// first record starts here.
	fileHeaderSize = headerSize + fileHeaderPayloadSize
)

// FormatVersion numbers the log formats, a linear enum; a value is never
// reused.
type FormatVersion uint8

const (
	// FormatVersion1: 32 KiB blocks, 19-byte chunk headers with synced
	// offsets, FILEHEADER and EOF chunks.
	FormatVersion1 FormatVersion = 1

	formatVersionCurrent = FormatVersion1
)

// magic opens the file header payload.
const magic = "sievelog"

// chunkType is the type byte of a chunk header. The values are on disk.
type chunkType uint8

const (
	chunkZero       chunkType = 0 // never written; what zeroed space reads as
	chunkFull       chunkType = 1
	chunkFirst      chunkType = 2
	chunkMiddle     chunkType = 3
	chunkLast       chunkType = 4
	chunkFileHeader chunkType = 5
	chunkEOF        chunkType = 6
)

var chunkTypeNames = [...]string{chunkFull: "FULL", chunkFirst: "FIRST", chunkMiddle: "MIDDLE", chunkLast: "LAST", chunkFileHeader: "FILEHEADER", chunkEOF: "EOF"}

func (t chunkType) String() string { return base.EnumName(t, chunkTypeNames[:], "UNKNOWN") }

// isBodyType reports whether t may appear after the file header: the
// record chunk types and the EOF trailer.
func (t chunkType) isBodyType() bool { return bodyTypes[t] }

// bodyTypes is isBodyType as a table: the tail search asks it of every
// byte.
var bodyTypes = [256]bool{chunkFull: true, chunkFirst: true, chunkMiddle: true, chunkLast: true, chunkEOF: true}

// Offsets of the header fields.
const (
	offChecksum = 0
	offLength   = 8
	offType     = 10
	offSynced   = 11
)

// header is a decoded chunk header.
type header struct {
	checksum uint64
	length   int
	typ      chunkType
	synced   int64
}

// decodeHeader decodes the first headerSize bytes of b.
// REQUIRES: len(b) >= headerSize.
func decodeHeader(b []byte) header {
	return header{
		checksum: binary.LittleEndian.Uint64(b[offChecksum:]),
		length:   int(binary.LittleEndian.Uint16(b[offLength:])),
		typ:      chunkType(b[offType]),
		synced:   int64(binary.LittleEndian.Uint64(b[offSynced:])),
	}
}

// putHeaderFields writes the length, type and synced offset of a chunk
// header into b; the checksum is filled in by sealChunk.
func putHeaderFields(b []byte, length int, t chunkType, synced int64) {
	binary.LittleEndian.PutUint16(b[offLength:], uint16(length))
	b[offType] = byte(t)
	binary.LittleEndian.PutUint64(b[offSynced:], uint64(synced))
}

// chunkChecksum computes the checksum of chunk, a whole chunk (header and
// payload), over everything after the checksum field. d is scratch state,
// passed in so that callers keep it in their structs and do not allocate.
func chunkChecksum(d *xxhash.Digest, seed uint64, chunk []byte) uint64 {
	d.ResetWithSeed(seed)
	_, _ = d.Write(chunk[offLength:])
	return d.Sum64()
}

// sealChunk stores the checksum of chunk in its header.
func sealChunk(d *xxhash.Digest, seed uint64, chunk []byte) {
	binary.LittleEndian.PutUint64(chunk[offChecksum:], chunkChecksum(d, seed, chunk))
}

// seedFor returns the checksum seed of chunks of type t in log logNum.
func seedFor(t chunkType, logNum uint64) uint64 {
	if t == chunkFileHeader {
		return 0
	}
	return logNum
}
