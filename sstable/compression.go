package sstable

import (
	"fmt"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/s2"

	"github.com/sievedb/sieve/internal/base"
)

// Compression selects how the writer compresses blocks. The root package
// re-exports it as sieve.Compression, with the same constants.
type Compression uint8

const (
	// DefaultCompression is the zero value; it means SnappyCompression.
	DefaultCompression Compression = iota
	// NoCompression stores every block raw.
	NoCompression
	// SnappyCompression stores a block in the Snappy format when that
	// saves at least 1/8 of its size. The encoder is s2's Snappy-compatible
	// "better" mode (smaller output than golang/snappy's encoder, same
	// format: any Snappy decoder reads it).
	SnappyCompression
)

var compressionNames = [...]string{DefaultCompression: "default", NoCompression: "none", SnappyCompression: "snappy"}

// String returns the compression's name ("default", "none", "snappy").
func (c Compression) String() string {
	return base.EnumName(c, compressionNames[:], "Compression")
}

// compressBlock returns the stored form of raw and its type (fast: s2's
// fast Snappy encoder rather than "better"). buf is scratch space the
// result may live in.
func compressBlock(c Compression, fast bool, raw, buf []byte) ([]byte, blockType) {
	if c != SnappyCompression {
		return raw, blockTypeNone
	}
	var out []byte
	if fast {
		out = s2.EncodeSnappy(buf[:cap(buf)], raw)
	} else {
		out = s2.EncodeSnappyBetter(buf[:cap(buf)], raw)
	}
	if len(out) > len(raw)-len(raw)/8 {
		return raw, blockTypeNone
	}
	return out, blockTypeSnappy
}

// maxSnappyExpansion bounds decoded/encoded for any valid snappy stream (a
// 3-byte copy tag emits at most 64 bytes); a larger declared length is a
// corrupt header, refused before allocating.
const maxSnappyExpansion = 32

// decodedLen returns the length of a stored block's contents.
func decodedLen(t blockType, stored []byte) (int, error) {
	switch t {
	case blockTypeNone:
		return len(stored), nil
	case blockTypeSnappy:
		n, err := snappy.DecodedLen(stored)
		if err != nil {
			return 0, fmt.Errorf("snappy header: %v", err)
		}
		if n > maxSnappyExpansion*len(stored)+64 {
			return 0, fmt.Errorf("snappy decoded length %d implausible for %d stored bytes", n, len(stored))
		}
		return n, nil
	}
	return 0, fmt.Errorf("unknown compression type %d", uint8(t))
}

// decompressInto writes the contents of a stored block into dst, whose
// length decodedLen returned.
func decompressInto(t blockType, stored, dst []byte) error {
	switch t {
	case blockTypeNone:
		copy(dst, stored)
		return nil
	case blockTypeSnappy:
		out, err := snappy.Decode(dst, stored)
		if err != nil {
			return fmt.Errorf("snappy: %v", err)
		}
		if len(out) != len(dst) || (len(out) > 0 && &out[0] != &dst[0]) {
			return fmt.Errorf("snappy: decoded %d bytes, header said %d", len(out), len(dst))
		}
		return nil
	}
	return fmt.Errorf("unknown compression type %d", uint8(t))
}
