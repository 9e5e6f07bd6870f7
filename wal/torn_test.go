package wal

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// Truncating a log anywhere inside its last record (a crash while the
// record was being written) loses that record and nothing else.
func TestTornTailEveryOffset(t *testing.T) {
	tests := []struct {
		name string
		ops  []op
	}{
		{"single small record", recs(100)},
		{"after synced records", append(recs(10, 20, 30), syncOp, op{rec: pattern(9, 300)})},
		{"empty last record", append(recs(10), syncOp, op{rec: []byte{}})},
		{"last record after padding", recs(block0-headerSize-10, 50)},
		{"last record starts with an empty FIRST", append(recs(block0-2*headerSize), syncOp, op{rec: pattern(1, 100)})},
		{"last record crosses a block", append(recs(block0-1000), syncOp, op{rec: pattern(1, 3000)})},
		{"last record spans three blocks", append(recs(block0-100), syncOp, op{rec: pattern(1, BlockSize+200)})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wl := writeLog(t, tc.ops, false)
			n := len(wl.recs)
			prevEnd := int64(fileHeaderSize)
			if n > 1 {
				prevEnd = wl.ends[n-2]
			}
			for _, cut := range cuts(wl.data, prevEnd, wl.ends[n-1]) {
				res := readLog(t, wl.data[:cut])
				require.Equal(t, io.EOF, res.err, "cut at %d", cut)
				requireRecords(t, wl.recs[:n-1], res.recs, "cut at %d", cut)
				require.Equal(t, prevEnd, res.r.ValidEnd(), "cut at %d", cut)
				require.Equal(t, cut > prevEnd, res.r.TornTail(), "cut at %d: %s", cut, res.r.Tail())
			}
		})
	}
}

// cuts returns the offsets in [from, to) at which to truncate a log: all of
// them, or under the race detector every offset near a chunk boundary and a
// sample of the rest.
func cuts(data []byte, from, to int64) []int64 {
	var out []int64
	near := int64(-1 << 62)
	next := from // the next chunk boundary at or after from
	for off := from; off < to; off++ {
		if off == next {
			near = off
			if room := BlockSize - off%BlockSize; room < headerSize {
				next = off + room
			} else {
				next = off + headerSize + int64(chunkAt(data, off).length)
			}
		}
		if !raceEnabled || off-near < 2*headerSize || next-off < 8 || off%61 == 0 {
			out = append(out, off)
		}
	}
	return out
}

// requireRecords compares record lists, treating nil and empty alike.
func requireRecords(t *testing.T, want, got [][]byte, msg string, args ...any) {
	t.Helper()
	require.Equalf(t, len(want), len(got), "record count: "+msg, args...)
	for i := range want {
		require.Truef(t, bytes.Equal(want[i], got[i]), "record %d differs: "+msg, append([]any{i}, args...)...)
	}
}

// Bytes after the last record that no later chunk claims were synced are
// a torn tail, whatever they are.
func TestTornTailJunk(t *testing.T) {
	base := writeLog(t, append(recs(100, 200), syncOp, op{rec: pattern(5, 300)}), false)
	end := int64(len(base.data))
	earlyChunk := base.data[base.starts[0]:base.ends[0]] // valid, synced offset 0
	lateChunk := base.data[base.starts[2]:base.ends[2]]  // valid, claims base.ends[1]
	garbage := pattern(99, 5000)
	open := withOpenRecord(t, base)
	openEnd := int64(len(open))
	tests := []struct {
		name   string
		data   []byte
		badOff int64
		reason string
	}{
		{"one zero byte", cat(base.data, make([]byte, 1)), end, "truncated chunk header"},
		{"a zero header", cat(base.data, make([]byte, headerSize)), end, "zeroed chunk header"},
		{"a zeroed block", cat(base.data, make([]byte, BlockSize)), end, "zeroed chunk header"},
		{"garbage", cat(base.data, garbage), end, ""},
		{"zeros then a copy of an early chunk", cat(base.data, make([]byte, 64), earlyChunk), end, "zeroed chunk header"},
		{"garbage then a copy of the last chunk", cat(base.data, garbage[:77], lateChunk), end, ""},
		{"a chunk cut short then a few zeros", cat(base.data, lateChunk[:40], make([]byte, 100)), end, "truncated chunk payload"},
		{"a chunk cut short then many zeros", cat(base.data, lateChunk[:40], make([]byte, 1000)), end, "chunk checksum mismatch"},
		{"a FIRST without its LAST", open, openEnd, "file ends inside the record"},
		{"a FIRST without its LAST, then zeros", cat(open, make([]byte, 500)), openEnd, "zeroed chunk header"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := readLog(t, tc.data)
			require.Equal(t, io.EOF, res.err)
			requireRecords(t, base.recs, res.recs, "")
			require.Equal(t, end, res.r.ValidEnd())
			tail := res.r.Tail()
			require.True(t, tail.Torn, tail.String())
			require.False(t, tail.Clean)
			if tc.reason != "" {
				require.Contains(t, tail.Reason, tc.reason)
			}
			require.Equal(t, tc.badOff, tail.BadOffset, tail.String())
		})
	}
}

// withOpenRecord returns base's log followed by the FIRST and MIDDLE
// chunks of a record whose LAST chunk was lost.
func withOpenRecord(t *testing.T, base written) []byte {
	ops := make([]op, 0, len(base.recs)+1)
	for _, r := range base.recs {
		ops = append(ops, op{rec: r})
	}
	wl := writeLog(t, append(ops, op{rec: pattern(8, 3*BlockSize)}), false)
	lastBlock := wl.ends[len(wl.ends)-1] / BlockSize * BlockSize
	require.Equal(t, chunkLast, chunkAt(wl.data, lastBlock).typ)
	return wl.data[:lastBlock]
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// A crash loses or keeps each sector of the unsynced tail independently,
// and a lost sector may read back as zeros or garbage. Whatever happens,
// the reader must return every synced record, then a prefix of the rest,
// then io.EOF: never corruption.
func TestTornTailSectors(t *testing.T) {
	const sector = 512
	rng := newRand(t)
	for trial := range 300 {
		var ops []op
		for i := range 5 + rng.IntN(40) {
			ops = append(ops, op{rec: pattern(i, rng.IntN(3000))})
			if rng.IntN(8) == 0 {
				ops = append(ops, syncOp)
			}
		}
		wl := writeLog(t, ops, false)
		data := bytes.Clone(wl.data)
		for s := wl.synced / sector * sector; s < int64(len(data)); s += sector {
			lo, hi := max(s, wl.synced), min(s+sector, int64(len(data)))
			switch rng.IntN(4) {
			case 0:
				clear(data[lo:hi])
			case 1:
				for i := lo; i < hi; i++ {
					data[i] = byte(rng.Uint32())
				}
			}
		}
		if rng.IntN(2) == 0 {
			data = data[:wl.synced+rng.Int64N(int64(len(data))-wl.synced+1)]
		}
		res := readLog(t, data)
		require.Equal(t, io.EOF, res.err, "trial %d", trial)
		require.LessOrEqual(t, len(res.recs), len(wl.recs))
		requireRecords(t, wl.recs[:len(res.recs)], res.recs, "trial %d: not a prefix", trial)
		for i, end := range wl.ends {
			if end <= wl.synced {
				require.Greater(t, len(res.recs), i, "trial %d: synced record %d lost", trial, i)
			}
		}
	}
}
