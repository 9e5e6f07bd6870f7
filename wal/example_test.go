package wal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// exampleLog writes the log of FORMAT.md's worked example.
func exampleLog(t testing.TB) []byte {
	f := &testutil.MemFile{}
	w, err := NewWriter(f, 7)
	require.NoError(t, err)
	for i, rec := range [][]byte{[]byte("hello"), nil, []byte("world!"), make([]byte, 40000)} {
		if i == 1 {
			require.NoError(t, w.Sync())
			continue
		}
		_, err := w.WriteRecord(rec)
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	return f.Data
}

// TestWorkedExample checks the bytes and the claims of FORMAT.md's worked
// example against testdata/example.golden.
func TestWorkedExample(t *testing.T) {
	data := exampleLog(t)
	require.Len(t, data, 40142)
	got := dumpLog(data, 24)
	testutil.Golden(t, filepath.Join("testdata", "example.golden"), got, "format changed; review and rerun with -rewrite")

	res := readLog(t, data)
	require.Equal(t, io.EOF, res.err)
	require.Len(t, res.recs, 3)
	require.Equal(t, int64(40123), res.r.ValidEnd())
	require.True(t, res.r.Tail().Clean)

	res = readLog(t, data[:40000])
	require.Equal(t, io.EOF, res.err)
	requireRecords(t, [][]byte{[]byte("hello"), []byte("world!")}, res.recs, "")
	require.Equal(t, int64(85), res.r.ValidEnd())
	require.Equal(t, int64(32768), res.r.Tail().BadOffset)
	require.Equal(t, "truncated chunk payload", res.r.Tail().Reason)

	res = readLog(t, flipBit(data, 36+headerSize+1, 0)) // in "hello"
	requireCorruptionAt(t, res.err, 36)
	require.Empty(t, res.recs)

	res = readLog(t, flipBit(data, 60+headerSize+1, 0)) // in "world!"
	requireCorruptionAt(t, res.err, 60)
	res = readLog(t, flipBit(data[:40123], 60+headerSize+1, 0)) // not closed
	require.Equal(t, io.EOF, res.err)
	require.Equal(t, int64(60), res.r.Tail().BadOffset)
}

// dumpLog prints every chunk of a log field by field, showing at most
// maxShown payload bytes of each.
func dumpLog(data []byte, maxShown int) string {
	var sb strings.Builder
	for off := 0; off < len(data); {
		if room := BlockSize - off%BlockSize; room < headerSize {
			fmt.Fprintf(&sb, "%06d  padding, %d zero bytes\n", off, room)
			off += room
			continue
		}
		h := decodeHeader(data[off:])
		fmt.Fprintf(&sb, "chunk at offset %d: %s\n", off, h.typ)
		field := func(at, n int, what string) {
			line := fmt.Sprintf("  %06d  % x%s  %s", off+at, data[off+at:off+at+n], strings.Repeat("   ", 8-n), what)
			sb.WriteString(strings.TrimRight(line, " ") + "\n")
		}
		field(offChecksum, 8, fmt.Sprintf("checksum 0x%016x", h.checksum))
		field(offLength, 2, fmt.Sprintf("length %d", h.length))
		field(offType, 1, fmt.Sprintf("type %d (%s)", h.typ, h.typ))
		field(offSynced, 8, fmt.Sprintf("synced offset %d", h.synced))
		p := data[off+headerSize : off+headerSize+h.length]
		for i := 0; i < min(len(p), maxShown); i += 8 {
			n := min(8, len(p)-i, maxShown-i)
			what := ""
			if i == 0 {
				what = payloadNote(h.typ, p)
			}
			field(headerSize+i, n, what)
		}
		if len(p) > maxShown {
			fmt.Fprintf(&sb, "  ...     (%d more payload bytes)\n", len(p)-maxShown)
		}
		off += headerSize + h.length
	}
	return sb.String()
}

func payloadNote(t chunkType, p []byte) string {
	if t == chunkFileHeader && len(p) == fileHeaderPayloadSize {
		return fmt.Sprintf("payload: magic %q, version %d, log number %d",
			p[:8], p[8], binary.LittleEndian.Uint64(p[9:]))
	}
	if bytes.IndexFunc(p, func(r rune) bool { return r < ' ' || r > '~' }) < 0 {
		return fmt.Sprintf("payload %q", p)
	}
	return fmt.Sprintf("payload, %d bytes", len(p))
}
