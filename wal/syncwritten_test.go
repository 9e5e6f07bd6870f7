package wal

import (
	"errors"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// lockedFile is a WritableFile safe for a writing and a syncing goroutine
// at once. It records the length synced by each Sync and, when it can
// preallocate, the reserved end, checking every write lands in it.
type lockedFile struct {
	mu        sync.Mutex
	data      []byte
	syncedLen int
	syncs     int
	syncErr   error
}

func (f *lockedFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.data = append(f.data, p...)
	return len(p), nil
}

func (f *lockedFile) Sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.syncs++
	if f.syncErr != nil {
		return f.syncErr
	}
	f.syncedLen = len(f.data)
	return nil
}

func (f *lockedFile) state() (data []byte, synced int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]byte(nil), f.data...), f.syncedLen
}

// TestSyncWrittenConcurrent syncs with SyncWritten on one goroutine while
// another writes records: the synced offset only grows, never passes what
// the file really synced, and every record reads back.
func TestSyncWrittenConcurrent(t *testing.T) {
	f := &lockedFile{}
	w, err := NewWriter(f, testLogNum)
	require.NoError(t, err)
	const n = 2000
	var (
		wg       sync.WaitGroup
		done     = make(chan struct{})
		syncs    atomic.Int64
		syncErrs []error
	)
	wg.Go(func() {
		var last int64
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := w.SyncWritten(); err != nil {
				syncErrs = append(syncErrs, err)
				return
			}
			off := w.SyncedOffset()
			_, synced := f.state()
			if off < last || off > int64(synced) {
				syncErrs = append(syncErrs, errors.New("synced offset went back or past the file's synced length"))
				return
			}
			if off > last {
				syncs.Add(1)
			}
			last = off
		}
	})
	for i := range n {
		if i == n/2 {
			// Make sure syncs happen while records are still written.
			for deadline := time.Now().Add(10 * time.Second); syncs.Load() == 0 && time.Now().Before(deadline); {
				runtime.Gosched()
			}
		}
		if i%3 == 0 {
			require.NoError(t, w.BufferRecord(pattern(i, 1+i%700)))
		} else {
			_, err := w.WriteRecord(pattern(i, 1+i%700))
			require.NoError(t, err)
		}
	}
	close(done)
	wg.Wait()
	require.Empty(t, syncErrs)
	require.NotZero(t, syncs.Load(), "SyncWritten never synced while records were written")
	require.NoError(t, w.Close())
	data, synced := f.state()
	require.Equal(t, len(data), synced)
	res := readLog(t, data)
	require.ErrorIs(t, res.err, io.EOF)
	require.Len(t, res.recs, n)
	for i, rec := range res.recs {
		require.Equal(t, pattern(i, 1+i%700), rec)
	}
}

// TestSyncWrittenSticky: a failed SyncWritten is not retried by the
// Writer; every later call returns its error.
func TestSyncWrittenSticky(t *testing.T) {
	f := &lockedFile{}
	w, err := NewWriter(f, testLogNum)
	require.NoError(t, err)
	_, err = w.WriteRecord([]byte("a"))
	require.NoError(t, err)
	f.syncErr = errors.New("EIO")
	require.ErrorContains(t, w.SyncWritten(), "EIO")
	f.syncErr = nil
	require.ErrorContains(t, w.SyncWritten(), "EIO")
	_, err = w.WriteRecord([]byte("b"))
	require.ErrorContains(t, err, "EIO")
	require.ErrorContains(t, w.Close(), "EIO")
	require.Equal(t, 1, f.syncs, "the failed sync was retried")
}

// preallocFile is a lockedFile that can preallocate and data-sync.
type preallocFile struct {
	lockedFile
	reserved      int64
	preallocs     int
	dataSyncs     int
	preallocErr   error
	beyondReserve bool // a write went past the reserved blocks
}

func (f *preallocFile) Preallocate(off, n int64) error {
	f.preallocs++
	if f.preallocErr != nil {
		return f.preallocErr
	}
	if off != f.reserved {
		return errors.New("preallocation is not contiguous")
	}
	f.reserved = off + n
	return nil
}

func (f *preallocFile) Write(p []byte) (int, error) {
	if int64(len(f.data)+len(p)) > f.reserved {
		f.beyondReserve = true
	}
	return f.lockedFile.Write(p)
}

func (f *preallocFile) SyncData() error {
	f.dataSyncs++
	return f.lockedFile.Sync()
}

// TestPreallocateAndSyncData: a file that can preallocate gets its blocks
// reserved ahead of every write, a chunk at a time, and a file that can
// data-sync is synced with SyncData only; when preallocation fails the
// Writer stops asking and goes on writing.
func TestPreallocateAndSyncData(t *testing.T) {
	f := &preallocFile{}
	w, err := NewWriter(f, testLogNum)
	require.NoError(t, err)
	rec := make([]byte, 100<<10)
	for range 100 { // 10 MiB: three chunks
		_, err := w.WriteRecord(rec)
		require.NoError(t, err)
		require.NoError(t, w.SyncWritten())
	}
	require.NoError(t, w.Sync())
	require.NoError(t, w.Close())
	require.False(t, f.beyondReserve, "a write went past the preallocated blocks")
	require.Equal(t, 3, f.preallocs)
	require.NotZero(t, f.dataSyncs)
	require.Equal(t, f.dataSyncs, f.syncs, "Sync was called on a file that has SyncData")

	g := &preallocFile{preallocErr: errors.New("EOPNOTSUPP")}
	w, err = NewWriter(g, testLogNum)
	require.NoError(t, err)
	for range 100 {
		_, err := w.WriteRecord(rec)
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	require.Equal(t, 1, g.preallocs, "a failed preallocation was asked again")
	res := readLog(t, g.data)
	require.ErrorIs(t, res.err, io.EOF)
	require.Len(t, res.recs, 100)
}
