package wal

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

const testLogNum = 7

// op is one step of a test log: a record, or a Sync when sync is set.
type op struct {
	rec  []byte
	sync bool
}

func recs(sizes ...int) []op {
	ops := make([]op, len(sizes))
	for i, n := range sizes {
		ops[i] = op{rec: pattern(i, n)}
	}
	return ops
}

var syncOp = op{sync: true}

// pattern returns n recognisable bytes for record i.
func pattern(i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(i*31 + j*7 + j>>8)
	}
	return b
}

// written is a log built by writeLog: its bytes and, for each record, its
// contents and its [start, end) span (start is its first chunk's offset).
type written struct {
	data   []byte
	recs   [][]byte
	starts []int64
	ends   []int64
	synced int64 // the writer's synced offset at the end (before Close)
}

func writeLog(t testing.TB, ops []op, close bool) written {
	t.Helper()
	f := &testutil.MemFile{}
	w, err := NewWriter(f, testLogNum)
	require.NoError(t, err)
	var wl written
	for _, o := range ops {
		if o.sync {
			require.NoError(t, w.Sync())
			continue
		}
		start := w.Size()
		end, err := w.WriteRecord(o.rec)
		require.NoError(t, err)
		require.Equal(t, w.Size(), end)
		if room := BlockSize - start%BlockSize; room < headerSize {
			start += room
		}
		wl.recs = append(wl.recs, o.rec)
		wl.starts = append(wl.starts, start)
		wl.ends = append(wl.ends, end)
	}
	wl.synced = w.SyncedOffset()
	if close {
		require.NoError(t, w.Close())
	}
	wl.data = f.Data
	return wl
}

// readResult is everything a Reader reported about a file.
type readResult struct {
	recs    [][]byte
	offsets []int64
	err     error
	r       *Reader
}

func readLog(t testing.TB, data []byte) readResult {
	t.Helper()
	r := NewReader(bytes.NewReader(data), int64(len(data)), testLogNum)
	var res readResult
	res.r = r
	for {
		rec, err := r.Next()
		if err != nil {
			res.err = err
			break
		}
		res.recs = append(res.recs, bytes.Clone(rec))
		res.offsets = append(res.offsets, r.Offset())
		require.LessOrEqual(t, len(res.recs), len(data), "more records than bytes")
	}
	// Errors are sticky.
	rec, err := r.Next()
	require.Nil(t, rec)
	require.Equal(t, res.err, err)
	return res
}

// chunkAt decodes the chunk at off in data.
func chunkAt(data []byte, off int64) header { return decodeHeader(data[off:]) }

// reseal recomputes the checksum of the chunk at off after a test edited it.
func reseal(data []byte, off int64, seed uint64) {
	h := decodeHeader(data[off:])
	var d xxhash.Digest
	sealChunk(&d, seed, data[off:off+int64(headerSize+h.length)])
}

// appendRawChunk appends a chunk with arbitrary fields, sealed with the
// log number as seed (whatever the type), padding the block first as the
// writer would.
func appendRawChunk(data []byte, t chunkType, synced int64, payload []byte) []byte {
	if room := BlockSize - len(data)%BlockSize; room < headerSize {
		data = append(data, make([]byte, room)...)
	}
	start := len(data)
	data = append(data, make([]byte, headerSize)...)
	data = append(data, payload...)
	putHeaderFields(data[start:], len(payload), t, synced)
	reseal(data, int64(start), testLogNum)
	return data
}

func flipBit(data []byte, off int64, bit uint) []byte {
	d := bytes.Clone(data)
	d[off] ^= 1 << (bit % 8)
	return d
}

var seedFlag = flag.Uint64("seed", 0, "seed for randomized tests (0: random)")

// newRand returns a seeded source and logs the seed so that a failure can
// be replayed with -seed.
func newRand(t testing.TB) *rand.Rand {
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("random seed %d (replay: go test ./wal -run '%s' -seed %d)", seed, t.Name(), seed)
	return rand.New(rand.NewPCG(seed, seed))
}

func requireCorruptionAt(t testing.TB, err error, off int64) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, base.ErrCorruption)
	require.Containsf(t, err.Error(), "offset "+strconv.FormatInt(off, 10)+":", "error does not name offset %d", off)
}
