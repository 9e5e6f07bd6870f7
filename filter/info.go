package filter

import (
	"encoding/binary"
	"fmt"
	"math"
)

// BlockInfo describes a filter block: what Inspect decodes from its
// trailer. Tools print it next to a table's measured false positives.
type BlockInfo struct {
	Format    Format // 0 for the empty block of None
	SizeBytes int    // the whole block, trailer included
	Keys      uint64 // keys added, after skipping repeats of the previous key
	// FilterBits is the size of the bit array (Bloom) or bucket table
	// (cuckoo) in bits, without the trailer.
	FilterBits uint64

	Probes       int    // Bloom: k
	Lines        uint32 // blocked Bloom: 64-byte lines
	SelectorBits int    // blocked Bloom: pattern-selector bits per line

	Buckets         uint32 // cuckoo
	FingerprintBits int    // cuckoo, binary fuse: f
	Entries         uint64 // cuckoo: fingerprints stored (≤ Keys)

	SegmentLength uint32 // binary fuse: L
	Segments      uint32 // binary fuse: S (the array has S+2 segments)

	Slots       uint64 // Ribbon: m, a multiple of 64
	ResultBits  int    // Ribbon: r, columns of every block
	UpperBlocks uint32 // Ribbon: u, blocks whose keys use r+1 columns
}

// Inspect validates a filter block as OpenBlock does and returns its
// parameters.
func Inspect(data []byte) (BlockInfo, error) {
	if _, err := OpenBlock(data); err != nil {
		return BlockInfo{}, err
	}
	return inspect(data), nil
}

// BlockExpectedFPR is Inspect(data).ExpectedFPR() for a block that
// OpenBlock has already accepted: it reads the trailer only (the engine
// keeps it per table for Metrics' expected false-positive rates).
func BlockExpectedFPR(data []byte) float64 { return inspect(data).ExpectedFPR() }

// inspect decodes the parameters of a block OpenBlock accepted.
func inspect(data []byte) BlockInfo {
	info := BlockInfo{SizeBytes: len(data)}
	if len(data) == 0 {
		return info
	}
	info.Format = blockFormat(data)
	le := binary.LittleEndian
	switch info.Format {
	case FormatBlockedBloom:
		t := data[len(data)-blockedTrailerLen:]
		info.Keys = le.Uint64(t[0:])
		info.Lines = le.Uint32(t[8:])
		info.Probes, info.SelectorBits = int(t[12]), int(t[13])
		info.FilterBits = uint64(info.Lines) * lineBits
	case FormatStandardBloom:
		t := data[len(data)-standardTrailerLen:]
		info.Keys = le.Uint64(t[0:])
		info.FilterBits = le.Uint64(t[8:])
		info.Probes = int(t[16])
	case FormatCuckoo:
		t := data[len(data)-cuckooTrailerLen:]
		info.Keys = le.Uint64(t[0:])
		info.Entries = le.Uint64(t[8:])
		info.Buckets = le.Uint32(t[16:])
		info.FingerprintBits = int(t[20])
		info.FilterBits = 8 * uint64(info.Buckets) * newCuckooLayout(info.FingerprintBits).stride
	case FormatBinaryFuse:
		t := data[len(data)-fuseTrailerLen:]
		info.Keys = le.Uint64(t[0:])
		info.SegmentLength = le.Uint32(t[24:])
		info.Segments = le.Uint32(t[28:])
		info.FingerprintBits = int(t[32])
		info.FilterBits = 8 * uint64(len(data)-fuseTrailerLen)
	case FormatRibbon:
		inspectRibbon(data, &info)
	}
	return info
}

// BitsPerKey returns the filter's size per key, trailer excluded.
func (b BlockInfo) BitsPerKey() float64 {
	if b.Keys == 0 {
		return 0
	}
	return float64(b.FilterBits) / float64(b.Keys)
}

// ExpectedFPR returns the false-positive rate the block is expected to show
// for keys that were not added, from its own geometry: the blocked-Bloom
// model of BloomFPR, (1 − e^(−kn/m))^k, or the cuckoo rate at the block's
// load. It is 1 for the empty block of None.
func (b BlockInfo) ExpectedFPR() float64 {
	switch {
	case b.Format == 0:
		return 1
	case b.Keys == 0:
		return 0
	}
	switch b.Format {
	case FormatBlockedBloom:
		return blockedFPR(float64(b.Keys)/float64(b.Lines), b.Probes, b.SelectorBits)
	case FormatStandardBloom:
		return StandardFPR(b.BitsPerKey(), b.Probes)
	case FormatCuckoo:
		return CuckooFPR(b.FingerprintBits, float64(b.Entries)/float64(bucketSlots*uint64(b.Buckets)))
	case FormatBinaryFuse:
		return math.Exp2(-float64(b.FingerprintBits))
	case FormatRibbon:
		return ribbonFPR(b.Slots, b.ResultBits, b.UpperBlocks)
	}
	return 1
}

// String describes the block in one line: its format and parameters.
func (b BlockInfo) String() string {
	switch b.Format {
	case 0:
		return "no filter"
	case FormatBlockedBloom:
		return fmt.Sprintf("blocked-bloom: %d keys, %d lines, k=%d, %d selector bits, %.2f bits/key, %d bytes",
			b.Keys, b.Lines, b.Probes, b.SelectorBits, b.BitsPerKey(), b.SizeBytes)
	case FormatStandardBloom:
		return fmt.Sprintf("standard-bloom: %d keys, m=%d, k=%d, %.2f bits/key, %d bytes",
			b.Keys, b.FilterBits, b.Probes, b.BitsPerKey(), b.SizeBytes)
	case FormatCuckoo:
		return fmt.Sprintf("cuckoo: %d keys, %d entries, %d buckets, f=%d, load %.1f%%, %.2f bits/key, %d bytes",
			b.Keys, b.Entries, b.Buckets, b.FingerprintBits,
			100*float64(b.Entries)/float64(bucketSlots*max(1, uint64(b.Buckets))), b.BitsPerKey(), b.SizeBytes)
	case FormatBinaryFuse:
		return fmt.Sprintf("binary-fuse: %d keys, f=%d, %d+2 segments of %d, %.2f bits/key, %d bytes",
			b.Keys, b.FingerprintBits, b.Segments, b.SegmentLength, b.BitsPerKey(), b.SizeBytes)
	case FormatRibbon:
		return fmt.Sprintf("ribbon: %d keys, m=%d, r=%d, %d blocks of r+1, %.2f bits/key, %d bytes",
			b.Keys, b.Slots, b.ResultBits, b.UpperBlocks, b.BitsPerKey(), b.SizeBytes)
	}
	return b.Format.String()
}
