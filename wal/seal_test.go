package wal

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// truncFile is a testutil.MemFile that Seal can truncate.
type truncFile struct {
	testutil.MemFile
	truncErr error
}

func (f *truncFile) Truncate(size int64) error {
	if f.truncErr != nil {
		return f.truncErr
	}
	f.Data = f.Data[:size]
	return nil
}

// A torn log cut anywhere, sealed, reads as a cleanly closed log holding
// exactly the whole records before the cut; damage anywhere before its
// trailer is then corruption, as in a closed log.
func TestSealEveryCut(t *testing.T) {
	ops := append(recs(10, 20, 30), syncOp, op{rec: pattern(9, 300)}, op{rec: pattern(4, BlockSize+50)})
	wl := writeLog(t, ops, false)
	for cut := int64(0); cut <= int64(len(wl.data)); cut++ {
		if raceEnabled && cut%17 != 0 {
			continue
		}
		torn := readLog(t, wl.data[:cut])
		require.Equal(t, io.EOF, torn.err, "cut at %d", cut)
		f := &truncFile{MemFile: testutil.MemFile{Data: bytes.Clone(wl.data[:cut])}}
		require.NoError(t, Seal(f, testLogNum, torn.r.ValidEnd()), "cut at %d", cut)
		require.Equal(t, len(f.Data), f.SyncedLen, "cut at %d: everything synced", cut)

		res := readLog(t, f.Data)
		require.Equal(t, io.EOF, res.err, "cut at %d", cut)
		requireRecords(t, torn.recs, res.recs, "cut at %d", cut)
		require.True(t, res.r.Tail().Clean, "cut at %d: %s", cut, res.r.Tail())
		require.False(t, res.r.TornTail(), "cut at %d", cut)

		// Sealed means vouched for: a flipped bit in a record is now
		// corruption, not a torn tail.
		if len(res.recs) > 0 {
			off := res.offsets[len(res.offsets)-1] + headerSize
			require.Error(t, readLog(t, flipBit(f.Data, off, 3)).err, "cut at %d", cut)
		}
		// Sealing again changes nothing.
		before := bytes.Clone(f.Data)
		require.NoError(t, Seal(f, testLogNum, res.r.ValidEnd()))
		require.Equal(t, before, f.Data, "cut at %d: reseal", cut)
	}
}

func TestSealErrors(t *testing.T) {
	wl := writeLog(t, recs(10, 20), false)
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		f    *truncFile
	}{
		{"truncate", &truncFile{truncErr: boom}},
		{"sync", &truncFile{MemFile: testutil.MemFile{SyncErr: boom}}},
		{"write", &truncFile{MemFile: testutil.MemFile{WriteErr: boom}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.Data = bytes.Clone(wl.data)
			require.ErrorIs(t, Seal(tc.f, testLogNum, wl.ends[1]), boom)
			tc.f.Data = bytes.Clone(wl.data)
			require.ErrorIs(t, Seal(tc.f, testLogNum, 10), boom, "torn header")
		})
	}
}
