package vfs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// Default is the FS of the operating system, through package os.
//
// Files from Create and OpenReadWrite are opened with O_APPEND, so Write
// always appends, also after a Truncate (the same as MemFS). Lock uses
// flock(2) on the lock file and also refuses a second lock of the same path
// from within this process (with a clear error) before asking the kernel.
var Default FS = diskFS{}

type diskFS struct{}

var _ FS = diskFS{}

type diskFile struct{ *os.File }

func (f diskFile) Size() (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (diskFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o666)
	if err != nil {
		return nil, err
	}
	return diskFile{f}, nil
}

func (diskFS) Open(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return diskFile{f}, nil
}

func (diskFS) OpenReadWrite(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, err
	}
	return diskFile{f}, nil
}

func (diskFS) Remove(name string) error { return os.Remove(name) }

func (diskFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// Link implements Linker with link(2): the caller syncs newname's
// directory.
func (diskFS) Link(oldname, newname string) error { return os.Link(oldname, newname) }

func (diskFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }

func (diskFS) List(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

func (diskFS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }

func (diskFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	serr := d.Sync()
	cerr := d.Close()
	return errors.Join(serr, cerr)
}

// heldLocks holds the absolute paths of the files this process has locked
// through Default, so that a second Lock fails with a clear message rather
// than with whatever the kernel says about two descriptors of one process.
var heldLocks struct {
	sync.Mutex
	paths map[string]bool
}

func (diskFS) Lock(name string) (io.Closer, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, err
	}
	heldLocks.Lock()
	defer heldLocks.Unlock()
	if heldLocks.paths[abs] {
		return nil, &os.PathError{Op: "lock", Path: name, Err: &lockHeldError{by: "this process"}}
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	if err := flock(f); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "lock", Path: name, Err: err}
	}
	if heldLocks.paths == nil {
		heldLocks.paths = make(map[string]bool)
	}
	heldLocks.paths[abs] = true
	return &diskLock{f: f, abs: abs}, nil
}

// lockHeldError is the error of a Lock that found the lock held.
type lockHeldError struct {
	by    string // "this process", "another process"
	errno error  // from flock(2), if it said so
}

func (e *lockHeldError) Error() string {
	if e.errno != nil {
		return "vfs: lock already held by " + e.by + ": " + e.errno.Error()
	}
	return "vfs: lock already held by " + e.by
}

func (e *lockHeldError) Unwrap() []error {
	if e.errno == nil {
		return []error{ErrLocked}
	}
	return []error{ErrLocked, e.errno}
}

type diskLock struct {
	mu  sync.Mutex
	f   *os.File
	abs string
}

// Close releases the lock. Closing the descriptor drops the flock.
func (l *diskLock) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return &os.PathError{Op: "unlock", Path: l.abs, Err: os.ErrClosed}
	}
	err := l.f.Close()
	l.f = nil
	heldLocks.Lock()
	delete(heldLocks.paths, l.abs)
	heldLocks.Unlock()
	return err
}
