package wal

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

func TestWriterSyncedOffsets(t *testing.T) {
	f := &testutil.MemFile{}
	w, err := NewWriter(f, testLogNum)
	require.NoError(t, err)
	require.Equal(t, int64(fileHeaderSize), w.Size())
	require.Equal(t, int64(0), w.SyncedOffset())
	require.Equal(t, 0, f.Syncs, "NewWriter must not sync")

	end1, err := w.WriteRecord([]byte("a"))
	require.NoError(t, err)
	require.NoError(t, w.Sync())
	require.Equal(t, end1, w.SyncedOffset())
	require.NoError(t, w.Sync())
	require.Equal(t, 1, f.Syncs, "a Sync with nothing new to sync must not fsync")

	end2, err := w.WriteRecord([]byte("b"))
	require.NoError(t, err)
	require.Equal(t, end1, chunkAt(f.Data, end1).synced, "a chunk records the synced offset at the time it was written")
	require.NoError(t, w.Close())
	require.Equal(t, 3, f.Syncs, "Close syncs before and after the trailer")
	trailer := chunkAt(f.Data, end2)
	require.Equal(t, chunkEOF, trailer.typ)
	require.Equal(t, end2, trailer.synced)
	require.Equal(t, int64(len(f.Data)), w.Size())
	require.Equal(t, w.Size(), w.SyncedOffset())
	require.Equal(t, 4, f.Writes, "one Write per header, record and trailer")
}

func TestWriterErrorsAreSticky(t *testing.T) {
	boom := errors.New("boom")
	calls := func(w *Writer) []error {
		_, errWrite := w.WriteRecord([]byte("x"))
		return []error{errWrite, w.Sync(), w.Close()}
	}
	t.Run("sync", func(t *testing.T) {
		f := &testutil.MemFile{}
		w, err := NewWriter(f, testLogNum)
		require.NoError(t, err)
		_, err = w.WriteRecord([]byte("a"))
		require.NoError(t, err)
		f.SyncErr = boom
		require.ErrorIs(t, w.Sync(), boom)
		f.SyncErr = nil // a retry would now "succeed": the writer must not try
		size := len(f.Data)
		for _, err := range calls(w) {
			require.ErrorIs(t, err, boom)
		}
		require.Equal(t, 1, f.Syncs, "fsync is never retried")
		require.Len(t, f.Data, size, "nothing is written after a failed sync")
		require.ErrorIs(t, w.Close(), ErrClosed)
	})
	t.Run("write", func(t *testing.T) {
		f := &testutil.MemFile{}
		w, err := NewWriter(f, testLogNum)
		require.NoError(t, err)
		f.WriteErr = boom
		_, err = w.WriteRecord([]byte("a"))
		require.ErrorIs(t, err, boom)
		f.WriteErr = nil
		for _, err := range calls(w) {
			require.ErrorIs(t, err, boom)
		}
		require.Equal(t, 0, f.Syncs)
	})
	t.Run("short write", func(t *testing.T) {
		f := &testutil.MemFile{ShortBy: 1}
		_, err := NewWriter(f, testLogNum)
		require.ErrorIs(t, err, io.ErrShortWrite)
	})
	t.Run("after close", func(t *testing.T) {
		w, err := NewWriter(&testutil.MemFile{}, testLogNum)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		for _, err := range calls(w) {
			require.ErrorIs(t, err, ErrClosed)
		}
	})
}

// A failed Sync inside Close leaves a log that reads back with all its
// records: the trailer may be missing or torn, the records are not.
func TestCloseWithFailingFinalSync(t *testing.T) {
	f := &testutil.MemFile{}
	w, err := NewWriter(f, testLogNum)
	require.NoError(t, err)
	_, err = w.WriteRecord([]byte("a"))
	require.NoError(t, err)
	require.NoError(t, w.Sync())
	f.SyncErr = errors.New("boom")
	require.Error(t, w.Close())
	for cut := len(f.Data) - headerSize; cut <= len(f.Data); cut++ {
		res := readLog(t, f.Data[:cut])
		require.Equal(t, io.EOF, res.err)
		requireRecords(t, [][]byte{[]byte("a")}, res.recs, "cut at %d", cut)
	}
}

// Size and SyncedOffset may be read while the writer's goroutine works
// (run with -race).
func TestWriterConcurrentSize(t *testing.T) {
	w, err := NewWriter(&testutil.MemFile{}, testLogNum)
	require.NoError(t, err)
	var wg sync.WaitGroup
	var stop atomic.Bool
	var bad atomic.Int64
	wg.Go(func() {
		last := int64(0)
		for !stop.Load() {
			synced := w.SyncedOffset()
			size := w.Size()
			if size < last || synced > size {
				bad.Add(1)
			}
			last = size
		}
	})
	for i := range 2000 {
		_, err := w.WriteRecord(pattern(i, 100))
		require.NoError(t, err)
		if i%100 == 0 {
			require.NoError(t, w.Sync())
		}
	}
	stop.Store(true)
	wg.Wait()
	require.Zero(t, bad.Load(), "Size went back or SyncedOffset passed Size")
	require.NoError(t, w.Close())
}

func TestWriteRecordDoesNotAllocate(t *testing.T) {
	w, err := NewWriter(discard{}, testLogNum)
	require.NoError(t, err)
	for _, n := range []int{0, 100, 4096, 3 * BlockSize} {
		rec := make([]byte, n)
		_, err := w.WriteRecord(rec) // grow the buffer once
		require.NoError(t, err)
		allocs := testing.AllocsPerRun(100, func() {
			_, _ = w.WriteRecord(rec)
			_ = w.Sync()
		})
		require.Zero(t, allocs, "record of %d bytes", n)
	}
}

// discard is a WritableFile that drops everything.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) Sync() error                 { return nil }

// A huge record's buffer is not kept for the life of the log.
func TestWriterDropsHugeBuffer(t *testing.T) {
	w, err := NewWriter(discard{}, testLogNum)
	require.NoError(t, err)
	_, err = w.WriteRecord(make([]byte, 2*maxRetainedBuffer))
	require.NoError(t, err)
	require.LessOrEqual(t, cap(w.buf), maxRetainedBuffer)
}

type errReaderAt struct{ err error }

func (r errReaderAt) ReadAt([]byte, int64) (int, error) { return 0, r.err }

// Errors reading the file are returned as they are, not as corruption.
func TestReaderIOErrors(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(errReaderAt{boom}, 1000, testLogNum)
	_, err := r.Next()
	require.ErrorIs(t, err, boom)
	require.NotErrorIs(t, err, base.ErrCorruption)

	data := writeLog(t, recs(10, 20), false).data
	r = NewReader(bytes.NewReader(data), int64(len(data))+100, testLogNum)
	_, err = r.Next()
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "file shorter than the size given")
}

// TestBufferRecord checks that buffered records reach the file in order
// on Flush, Sync, WriteRecord and Close, and read back like written ones.
func TestBufferRecord(t *testing.T) {
	var f testutil.MemFile
	w, err := NewWriter(&f, 7)
	require.NoError(t, err)
	var want [][]byte
	for i := 0; i < 3000; i++ {
		rec := bytes.Repeat([]byte{byte(i)}, i%200)
		want = append(want, rec)
		switch i % 500 {
		case 499:
			_, err = w.WriteRecord(rec)
		default:
			err = w.BufferRecord(rec)
		}
		require.NoError(t, err)
		if i == 1000 {
			require.NoError(t, w.Flush())
			require.Zero(t, w.Buffered())
		}
		if i == 2000 {
			require.NoError(t, w.Sync())
			require.Zero(t, w.Buffered())
			require.Equal(t, int64(len(f.Data)), w.SyncedOffset())
		}
	}
	require.NoError(t, w.Close())
	r := NewReader(bytes.NewReader(f.Data), int64(len(f.Data)), 7)
	for i, rec := range want {
		got, err := r.Next()
		require.NoError(t, err, "record %d", i)
		require.Equal(t, rec, got, "record %d", i)
	}
	_, err = r.Next()
	require.ErrorIs(t, err, io.EOF)
	require.False(t, r.TornTail())
}
