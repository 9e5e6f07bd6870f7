//go:build linux

package vfs

import (
	"path/filepath"
	"testing"
)

// TestDiskSyncDataPreallocate: Default's files on Linux preallocate
// without changing their size and sync their data.
func TestDiskSyncDataPreallocate(t *testing.T) {
	f, err := Default.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pa, ok := f.(interface{ Preallocate(off, n int64) error })
	if !ok {
		t.Fatal("disk file cannot preallocate")
	}
	ds, ok := f.(interface{ SyncData() error })
	if !ok {
		t.Fatal("disk file cannot SyncData")
	}
	if err := pa.Preallocate(0, 1<<20); err != nil {
		t.Skipf("fallocate not supported here: %v", err)
	}
	if size, err := f.Size(); err != nil || size != 0 {
		t.Fatalf("size after Preallocate: %d, %v; want 0", size, err)
	}
	if _, err := f.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := ds.SyncData(); err != nil {
		t.Fatal(err)
	}
	if size, err := f.Size(); err != nil || size != 5 {
		t.Fatalf("size after a write: %d, %v; want 5", size, err)
	}
}
