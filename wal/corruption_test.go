package wal

import (
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// chunkContaining returns the offset of the first bad byte a reader sees
// when byte off of a writer's log is damaged: the start of the chunk that
// holds off, or off itself when it lies in block padding.
func chunkContaining(t *testing.T, data []byte, off int64) int64 {
	for c := int64(0); c < int64(len(data)); {
		if room := BlockSize - c%BlockSize; room < headerSize {
			if off < c+room {
				return off
			}
			c += room
			continue
		}
		end := c + headerSize + int64(chunkAt(data, c).length)
		if off < end {
			return c
		}
		c = end
	}
	t.Fatalf("offset %d is past the log", off)
	return 0
}

// recordsBefore returns the records of wl that end at or before off.
func recordsBefore(wl written, off int64) [][]byte {
	n := 0
	for n < len(wl.ends) && wl.ends[n] <= off {
		n++
	}
	return wl.recs[:n]
}

// A bit flip in a record that had been synced, in a log with chunks
// written after that sync, is corruption; the reader returns the records
// before the damage first.
func TestMiddleCorruption(t *testing.T) {
	ops := append(recs(100, 40000, 50), syncOp, op{rec: pattern(3, 60)}, op{rec: pattern(4, 70)})
	wl := writeLog(t, ops, false)
	a, b, c := wl.starts[0], wl.starts[1], wl.starts[2]
	tests := []struct {
		name   string
		off    int64
		reason string
	}{
		{"file header magic", 20, "file header: chunk checksum mismatch"},
		{"file header log number", 30, "file header: chunk checksum mismatch"},
		{"checksum field", a + 3, "chunk checksum mismatch"},
		{"length field", a + offLength, ""},
		{"type field", a + offType, "chunk checksum mismatch"},
		{"synced field", a + offSynced + 7, "chunk checksum mismatch"},
		{"payload", a + headerSize + 50, "chunk checksum mismatch"},
		{"FIRST chunk of a multi-block record", b + 1000, "chunk checksum mismatch"},
		{"LAST chunk of a multi-block record", BlockSize + headerSize + 5, "chunk checksum mismatch"},
		{"last synced record", c + headerSize, "chunk checksum mismatch"},
	}
	for _, tc := range tests {
		for bit := range uint(8) {
			res := readLog(t, flipBit(wl.data, tc.off, bit))
			x := chunkContaining(t, wl.data, tc.off)
			requireCorruptionAt(t, res.err, x)
			require.Contains(t, res.err.Error(), tc.reason, tc.name)
			require.Contains(t, res.err.Error(), fmt.Sprintf("synced through offset %d", wl.ends[2]), tc.name)
			requireRecords(t, recordsBefore(wl, x), res.recs, "%s, bit %d", tc.name, bit)
		}
	}
}

// The same damage after the last sync is a torn tail: nothing claims the
// bytes were durable.
func TestUnsyncedDamageIsTorn(t *testing.T) {
	ops := append(recs(100, 200), syncOp, op{rec: pattern(3, 60)}, op{rec: pattern(4, 70)})
	wl := writeLog(t, ops, false)
	for off := wl.starts[2]; off < int64(len(wl.data)); off++ {
		res := readLog(t, flipBit(wl.data, off, uint(off)))
		require.Equal(t, io.EOF, res.err, "flip at %d", off)
		x := chunkContaining(t, wl.data, off)
		requireRecords(t, recordsBefore(wl, x), res.recs, "flip at %d", off)
		require.True(t, res.r.TornTail())
		require.Equal(t, x, res.r.Tail().BadOffset)
	}
}

// A cleanly closed log has its whole body claimed by the end-of-log
// trailer: a bit flip anywhere before the trailer is corruption. A flip in
// the trailer itself loses nothing and reads as a torn tail.
func TestClosedLogBitFlips(t *testing.T) {
	small := writeLog(t, recs(0, 1, 100, 300, 7, 500), true)
	multi := writeLog(t, recs(block0-headerSize-10, 5000, 2*BlockSize, 1000), true)
	rng := newRand(t)
	for _, tc := range []struct {
		name string
		wl   written
		all  bool
	}{{"small", small, true}, {"multi-block", multi, false}} {
		data := tc.wl.data
		trailer := int64(len(data) - headerSize)
		var offs []int64
		if tc.all {
			for off := range trailer {
				offs = append(offs, off)
			}
		} else {
			for off := int64(0); off < 2*headerSize; off++ { // header, padding at the end of block 0
				offs = append(offs, off, BlockSize-40+off)
			}
			for range 300 {
				offs = append(offs, rng.Int64N(trailer))
			}
		}
		for _, off := range offs {
			res := readLog(t, flipBit(data, off, uint(off)))
			x := chunkContaining(t, data, off)
			requireCorruptionAt(t, res.err, x)
			requireRecords(t, recordsBefore(tc.wl, x), res.recs, "%s: flip at %d", tc.name, off)
		}
		for off := trailer; off < int64(len(data)); off++ {
			res := readLog(t, flipBit(data, off, uint(off)))
			require.Equal(t, io.EOF, res.err, "%s: flip at %d", tc.name, off)
			requireRecords(t, tc.wl.recs, res.recs, "%s: flip at %d", tc.name, off)
			require.True(t, res.r.TornTail())
			require.Equal(t, trailer, res.r.ValidEnd())
		}
	}
}

func TestFileHeader(t *testing.T) {
	good := writeLog(t, append(recs(10), syncOp, op{rec: pattern(1, 20)}), false).data
	unsynced := writeLog(t, recs(10, 20), false).data
	edit := func(off int64, b ...byte) []byte {
		d := cat(good)
		copy(d[off:], b)
		reseal(d, 0, 0)
		return d
	}
	tests := []struct {
		name    string
		data    []byte
		corrupt string // "" means a torn tail at offset 0
	}{
		{"wrong log number", edit(headerSize+9, 8), "file header is for 000008.log, expected 000007.log"},
		{"bad magic", edit(headerSize, 'S'), "bad magic"},
		{"unknown version", edit(headerSize+8, 2), "unsupported log format version 2"},
		{"synced offset set", edit(offSynced, 1), "bad file header chunk"},
		{"wrong type", edit(offType, byte(chunkFull)), "bad file header chunk"},
		{"checksum mismatch, synced body", flipBit(good, 25, 0), "file header: chunk checksum mismatch"},
		{"zeroed, synced body", cat(make([]byte, fileHeaderSize), good[fileHeaderSize:]), "file header: zeroed chunk header"},
		{"checksum mismatch, nothing synced", flipBit(unsynced, 25, 0), ""},
		{"zeroed, nothing synced", cat(make([]byte, fileHeaderSize), unsynced[fileHeaderSize:]), ""},
		{"garbage", pattern(3, 100), ""},
		{"empty file", nil, ""},
	}
	for i := 1; i < fileHeaderSize; i++ {
		tests = append(tests, struct {
			name    string
			data    []byte
			corrupt string
		}{fmt.Sprintf("cut at %d", i), good[:i], ""})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := readLog(t, tc.data)
			require.Empty(t, res.recs)
			if tc.corrupt != "" {
				requireCorruptionAt(t, res.err, 0)
				require.Contains(t, res.err.Error(), tc.corrupt)
				return
			}
			require.Equal(t, io.EOF, res.err)
			require.Equal(t, int64(0), res.r.ValidEnd())
			require.Equal(t, len(tc.data) > 0, res.r.TornTail(), res.r.Tail().String())
		})
	}
}

// Chunks with valid checksums that no writer produces are corruption at
// once, with no search for a synced claim.
func TestContradictions(t *testing.T) {
	hdr := writeLog(t, nil, false).data
	closed := writeLog(t, recs(10), true).data
	x := []byte("x")
	chunks := func(cs ...func([]byte) []byte) []byte {
		d := cat(hdr)
		for _, c := range cs {
			d = c(d)
		}
		return d
	}
	raw := func(t chunkType, synced int64) func([]byte) []byte {
		return func(d []byte) []byte { return appendRawChunk(d, t, synced, x) }
	}
	tests := []struct {
		name string
		data []byte
		off  int64
		want string
	}{
		{"MIDDLE without FIRST", chunks(raw(chunkMiddle, 0)), 36, "MIDDLE chunk with no record open"},
		{"LAST without FIRST", chunks(raw(chunkLast, 0)), 36, "LAST chunk with no record open"},
		{"FULL inside a record", chunks(raw(chunkFirst, 0), raw(chunkFull, 0)), 56, "FULL chunk inside the record that starts at offset 36"},
		{"FIRST inside a record", chunks(raw(chunkFirst, 0), raw(chunkFirst, 0)), 56, "FIRST chunk inside the record"},
		{"EOF inside a record", chunks(raw(chunkFirst, 0), raw(chunkEOF, 0)), 56, "EOF chunk inside the record"},
		{"synced offset past the chunk", chunks(raw(chunkFull, 37)), 36, "past the chunk itself"},
		{"synced offset going back", chunks(raw(chunkFull, 36), raw(chunkFull, 0)), 56, "below the previous chunk's 36"},
		{"unknown type", chunks(raw(9, 0)), 36, "unexpected chunk type UNKNOWN(9)"},
		{"a second file header", chunks(raw(chunkFileHeader, 0)), 36, "unexpected chunk type FILEHEADER"},
		{"a byte after the trailer", cat(closed, []byte{0}), int64(len(closed)), "1 bytes after the end-of-log trailer"},
		{"a chunk after the trailer", appendRawChunk(cat(closed), chunkFull, 0, x), int64(len(closed)), "20 bytes after the end-of-log trailer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := readLog(t, tc.data)
			requireCorruptionAt(t, res.err, tc.off)
			require.Contains(t, res.err.Error(), tc.want)
		})
	}
}
