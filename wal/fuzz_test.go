package wal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// FuzzReader feeds arbitrary bytes to a Reader as a log file. The Reader
// must not panic, and must report what refRead, a direct transcription of
// FORMAT.md's reading rules, reports: the same records in the same order,
// and the same verdict (corruption, or io.EOF with the same valid end).
//
// Seeds: testdata/fuzz/FuzzReader, rewritten by TestFuzzSeedCorpus with
// SIEVE_WRITE_FUZZ_SEEDS=1.
func FuzzReader(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		want := refRead(data, testLogNum)
		r := NewReader(bytes.NewReader(data), int64(len(data)), testLogNum)
		var got [][]byte
		var err error
		for {
			var rec []byte
			if rec, err = r.Next(); err != nil {
				break
			}
			got = append(got, bytes.Clone(rec))
		}
		require.Equal(t, len(want.recs), len(got), "record count (reference verdict: %s)", want)
		for i := range got {
			require.True(t, bytes.Equal(want.recs[i], got[i]), "record %d", i)
		}
		if want.corrupt {
			require.ErrorIs(t, err, base.ErrCorruption)
			return
		}
		require.Equal(t, io.EOF, err, "reference verdict: %s", want)
		tail := r.Tail()
		require.Equal(t, want.validEnd, r.ValidEnd())
		require.Equal(t, want.clean, tail.Clean)
		require.Equal(t, !want.clean && int64(len(data)) > want.validEnd, tail.Torn)
	})
}

// refResult is what FORMAT.md requires a reader to report for a file.
type refResult struct {
	recs     [][]byte
	corrupt  bool
	validEnd int64
	clean    bool
}

func (r refResult) String() string {
	return fmt.Sprintf("%d records, corrupt=%v, validEnd=%d, clean=%v", len(r.recs), r.corrupt, r.validEnd, r.clean)
}

// refRead reads a log held in memory by FORMAT.md's rules 6-13, written
// for clarity over speed and independently of reader.go.
func refRead(data []byte, logNum uint64) refResult {
	r := &refReader{data: data, size: int64(len(data)), logNum: logNum}
	if !r.ok(0, 0) {
		return r.stop(0)
	}
	if !r.headerOK() {
		return r.corrupt()
	}
	r.res.validEnd = 36
	return r.chunks()
}

// refReader is refRead's state: the file and the verdict so far.
type refReader struct {
	data   []byte
	size   int64
	logNum uint64
	res    refResult
}

// ok reports whether a whole chunk, checksum included, is at off.
func (r *refReader) ok(off int64, seed uint64) bool {
	data, size := r.data, r.size
	if off%BlockSize > BlockSize-headerSize || off+headerSize > size {
		return false
	}
	n := int64(binary.LittleEndian.Uint16(data[off+8:]))
	end := off + headerSize + n
	if end > size || end > (off/BlockSize+1)*BlockSize {
		return false
	}
	return checksumOK(data[off:end], seed)
}

// stop applies rule 11 at the first bad byte x.
func (r *refReader) stop(x int64) refResult {
	data, size := r.data, r.size
	for p := x + 1; p+headerSize <= size; p++ {
		t := chunkType(data[p+10])
		s := int64(binary.LittleEndian.Uint64(data[p+11:]))
		isData := t == chunkFull || t == chunkFirst || t == chunkMiddle || t == chunkLast || t == chunkEOF
		if isData && x < s && s <= p && r.ok(p, r.logNum) {
			r.res.corrupt = true
			break
		}
	}
	return r.res
}

func (r *refReader) corrupt() refResult { r.res.corrupt = true; return r.res }

// headerOK reports whether the file header chunk (checksum checked
// already) holds this format and log number.
func (r *refReader) headerOK() bool {
	data := r.data
	return data[10] == byte(chunkFileHeader) && data[8] == 17 && data[9] == 0 &&
		bytes.Equal(data[11:19], make([]byte, 8)) && string(data[19:27]) == "sievelog" && data[27] == 1 &&
		binary.LittleEndian.Uint64(data[28:36]) == r.logNum
}

// chunks reads the chunks after the file header, assembling records,
// until the file ends or a bad byte stops it.
func (r *refReader) chunks() refResult {
	data, size, res := r.data, r.size, &r.res
	var rec []byte
	open, prevSynced := false, int64(0)
	for off := int64(36); ; {
		if off == size {
			return r.stop(size)
		}
		if blockEnd := (off/BlockSize + 1) * BlockSize; blockEnd-off < headerSize {
			for ; off < min(blockEnd, size); off++ {
				if data[off] != 0 {
					return r.stop(off)
				}
			}
			continue
		}
		if !r.ok(off, r.logNum) {
			return r.stop(off)
		}
		t := chunkType(data[off+10])
		n := int64(binary.LittleEndian.Uint16(data[off+8:]))
		s := int64(binary.LittleEndian.Uint64(data[off+11:]))
		payload, end := data[off+headerSize:off+headerSize+n], off+headerSize+n
		if s > off || s < prevSynced {
			return r.corrupt()
		}
		prevSynced = s
		switch {
		case t == chunkFull && !open:
			res.recs, res.validEnd = append(res.recs, payload), end
		case t == chunkFirst && !open:
			open, rec = true, append([]byte(nil), payload...)
		case t == chunkMiddle && open:
			rec = append(rec, payload...)
		case t == chunkLast && open:
			open = false
			res.recs, res.validEnd = append(res.recs, append(rec, payload...)), end
		case t == chunkEOF && !open && end == size:
			res.clean = true
			return *res
		default:
			return r.corrupt()
		}
		off = end
	}
}

func checksumOK(chunk []byte, seed uint64) bool {
	d := xxhash.NewWithSeed(seed)
	d.Write(chunk[8:])
	return binary.LittleEndian.Uint64(chunk) == d.Sum64()
}

// FuzzRoundTrip writes records cut from the fuzz input, with syncs,
// and reads them back; then reads every prefix of the file at a
// fuzzer-chosen cut and checks the records are a prefix.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("hello world"), uint16(3), uint32(10))
	f.Add(bytes.Repeat([]byte{1, 2, 3}, 20000), uint16(40000), uint32(50000))
	f.Fuzz(func(t *testing.T, in []byte, step uint16, cut uint32) {
		step = max(step, 1)
		var ops []op
		for i := 0; i < len(in); i += int(step) {
			ops = append(ops, op{rec: in[i:min(i+int(step), len(in))]})
			if in[i]%4 == 0 {
				ops = append(ops, syncOp)
			}
		}
		wl := writeLog(t, ops, true)
		res := readLog(t, wl.data)
		require.Equal(t, io.EOF, res.err)
		requireRecords(t, wl.recs, res.recs, "whole log")
		c := int(cut) % (len(wl.data) + 1)
		res = readLog(t, wl.data[:c])
		require.Equal(t, io.EOF, res.err)
		requireRecords(t, recordsBefore(wl, int64(c)), res.recs, "cut at %d", c)
		require.Equal(t, len(recordsBefore(wl, int64(c))), len(res.recs))
	})
}

// TestFuzzSeedCorpus (re)writes FuzzReader's seed corpus with
// SIEVE_WRITE_FUZZ_SEEDS=1:
// valid, torn, corrupt and wrong-file logs.
func TestFuzzSeedCorpus(t *testing.T) {
	small := append(recs(0, 10, 200), syncOp, op{rec: pattern(3, 50)}, op{rec: pattern(4, 70)})
	open := writeLog(t, small, false).data
	closed := writeLog(t, small, true).data
	blocks := writeLog(t, append(recs(block0-headerSize-10, 40), syncOp, op{rec: pattern(2, 3000)}), true).data
	seeds := map[string][]byte{
		"empty":                nil,
		"header-only":          writeLog(t, nil, false).data,
		"open":                 open,
		"closed":               closed,
		"multi-block-closed":   blocks,
		"torn-cut":             open[:len(open)-30],
		"torn-zeros":           cat(open, make([]byte, 100)),
		"torn-garbage":         cat(open[:len(open)-5], pattern(9, 200)),
		"corrupt-synced":       flipBit(open, 80, 2),
		"corrupt-closed":       flipBit(closed, int64(len(closed))-40, 5),
		"corrupt-padding":      flipBit(blocks, BlockSize-3, 0),
		"corrupt-header":       flipBit(closed, 5, 1),
		"wrong-log-number":     writeLogNum(t, 8),
		"middle-without-first": appendRawChunk(writeLog(t, nil, false).data, chunkMiddle, 0, []byte("x")),
	}
	for name, data := range seeds {
		testutil.WriteFuzzSeed(t, "FuzzReader", name, data)
	}
}

func writeLogNum(t *testing.T, logNum uint64) []byte {
	f := &testutil.MemFile{}
	w, err := NewWriter(f, logNum)
	require.NoError(t, err)
	_, err = w.WriteRecord([]byte("x"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return f.Data
}
