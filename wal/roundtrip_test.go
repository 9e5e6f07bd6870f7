package wal

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// Sizes that put the end of a record at interesting places in block 0,
// which has BlockSize-fileHeaderSize bytes for records.
const block0 = BlockSize - fileHeaderSize

func TestRoundTrip(t *testing.T) {
	many := make([]int, 2000)
	for i := range many {
		many[i] = (i * 37) % 300
	}
	tests := []struct {
		name  string
		sizes []int
	}{
		{"no records", nil},
		{"empty record", []int{0}},
		{"empty records", []int{0, 0, 0}},
		{"one byte", []int{1}},
		{"exactly fills block 0", []int{block0 - headerSize, 1}},
		{"leaves 1 byte of padding", []int{block0 - headerSize - 1, 1}},
		{"leaves 18 bytes of padding", []int{block0 - headerSize - 18, 1}},
		{"leaves exactly a header: empty FIRST", []int{block0 - 2*headerSize, 100}},
		{"leaves exactly a header: empty record", []int{block0 - 2*headerSize, 0, 5}},
		{"two chunks", []int{block0}},
		{"exactly two full chunks", []int{block0 - headerSize + maxPayload}},
		{"many blocks", []int{5*BlockSize + 123}},
		{"many blocks then small", []int{3 * BlockSize, 1, 2 * BlockSize, 0}},
		{"many small records", many},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, closed := range []bool{false, true} {
				wl := writeLog(t, recs(tc.sizes...), closed)
				checkFraming(t, wl.data)
				res := readLog(t, wl.data)
				require.Equal(t, io.EOF, res.err)
				require.Equal(t, len(wl.recs), len(res.recs))
				for i := range wl.recs {
					require.True(t, bytes.Equal(wl.recs[i], res.recs[i]), "record %d differs", i)
					require.Equal(t, wl.starts[i], res.offsets[i], "offset of record %d", i)
				}
				end := int64(fileHeaderSize)
				if n := len(wl.ends); n > 0 {
					end = wl.ends[n-1]
				}
				tail := res.r.Tail()
				require.Equal(t, end, res.r.ValidEnd())
				require.Equal(t, closed, tail.Clean, tail.String())
				require.False(t, res.r.TornTail(), tail.String())
				if !closed {
					require.Equal(t, int64(len(wl.data)), end)
				}
			}
		})
	}
}

// checkFraming walks the chunks of a writer's output and checks the rules
// of FORMAT.md that a reader does not need to enforce: no chunk crosses a
// block, padding only where a header does not fit, synced offsets only at
// record ends.
func checkFraming(t *testing.T, data []byte) {
	t.Helper()
	recordEnds := map[int64]bool{0: true, fileHeaderSize: true}
	for off := int64(0); off < int64(len(data)); {
		if room := BlockSize - off%BlockSize; room < headerSize {
			require.Equal(t, make([]byte, room), data[off:off+room], "padding at %d", off)
			off += room
			continue
		}
		h := chunkAt(data, off)
		end := off + headerSize + int64(h.length)
		require.LessOrEqual(t, end, (off/BlockSize+1)*BlockSize, "chunk at %d crosses a block", off)
		require.True(t, recordEnds[h.synced], "chunk at %d: synced offset %d is not a record end", off, h.synced)
		if h.typ == chunkFull || h.typ == chunkLast {
			recordEnds[end] = true
		}
		off = end
	}
}

func TestLargeRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("70 MiB record")
	}
	big := make([]byte, 70<<20)
	for i := 0; i < len(big); i += 4096 {
		big[i] = byte(i >> 12)
	}
	wl := writeLog(t, []op{{rec: []byte("before")}, {rec: big}, syncOp, {rec: []byte("after")}}, true)
	r := NewReader(bytes.NewReader(wl.data), int64(len(wl.data)), testLogNum)
	for _, want := range [][]byte{[]byte("before"), big, []byte("after")} {
		got, err := r.Next()
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), "record of %d bytes differs", len(want))
	}
	_, err := r.Next()
	require.Equal(t, io.EOF, err)
	require.True(t, r.Tail().Clean)

	// The same file with a bit flipped near the end of the big record:
	// the record was synced, so this is corruption.
	off := wl.ends[1] - 10
	_, err = readAll(flipBit(wl.data, off, 3))
	require.ErrorContains(t, err, "checksum mismatch")
}

// readAll reads every record, discarding them, and returns the count and
// the final error.
func readAll(data []byte) (int, error) {
	r := NewReader(bytes.NewReader(data), int64(len(data)), testLogNum)
	for n := 0; ; n++ {
		if _, err := r.Next(); err != nil {
			return n, err
		}
	}
}
