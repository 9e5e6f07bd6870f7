package testutil

import (
	"errors"
	"io"
)

// MemFile is an in-memory file for tests of the file formats: it can be
// appended to and synced (wal.WritableFile) and read (sstable.ReadableFile),
// counts its writes and syncs, and fails on demand.
type MemFile struct {
	Data      []byte // the contents
	Syncs     int    // Sync calls
	Writes    int    // Write calls
	WriteErr  error  // returned by every Write once set
	SyncErr   error  // returned by every Sync once set
	ShortBy   int    // Write reports this many bytes fewer than given
	SyncedLen int    // len(Data) at the last successful Sync
}

// NewMemFile returns a MemFile holding data.
func NewMemFile(data []byte) *MemFile { return &MemFile{Data: data} }

// Write appends p (less ShortBy bytes), or fails with WriteErr.
func (f *MemFile) Write(p []byte) (int, error) {
	f.Writes++
	if f.WriteErr != nil {
		return 0, f.WriteErr
	}
	n := max(len(p)-f.ShortBy, 0)
	f.Data = append(f.Data, p[:n]...)
	return n, nil
}

// Sync records len(Data) as synced, or fails with SyncErr.
func (f *MemFile) Sync() error {
	f.Syncs++
	if f.SyncErr != nil {
		return f.SyncErr
	}
	f.SyncedLen = len(f.Data)
	return nil
}

// ReadAt reads Data at off.
func (f *MemFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= int64(len(f.Data)) {
		return 0, io.EOF
	}
	n := copy(p, f.Data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Close does nothing.
func (f *MemFile) Close() error { return nil }
