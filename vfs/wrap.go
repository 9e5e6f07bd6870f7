package vfs

import (
	"errors"
	"io"
	"os"
)

// interceptor decides the fate of each operation passing through a wrapFS.
type interceptor interface {
	// before is called before op on name. A non-nil error is returned to
	// the caller instead of performing op; errSkip makes op a no-op that
	// succeeds (only File.Sync and SyncDir honour it).
	before(op Op, name string) error
	// reserve is called before a Write of n bytes that before let
	// through. It returns how many bytes to write and the error to return
	// after writing them.
	reserve(name string, n int) (int, error)
}

var errSkip = errors.New("vfs: skip")

// wrapFS is an FS whose every operation, and every operation on its files,
// first asks an interceptor.
type wrapFS struct {
	inner FS
	ic    interceptor
}

func (w *wrapFS) file(f File, name string, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	return &wrapFile{inner: f, name: name, ic: w.ic}, nil
}

// Create creates name, unless the wrapper fails it.
func (w *wrapFS) Create(name string) (File, error) {
	if err := w.ic.before(OpCreate, name); err != nil {
		return nil, pathErr("open", name, err)
	}
	f, err := w.inner.Create(name)
	return w.file(f, name, err)
}

// Open opens name for reading, unless the wrapper fails it.
func (w *wrapFS) Open(name string) (File, error) {
	if err := w.ic.before(OpOpen, name); err != nil {
		return nil, pathErr("open", name, err)
	}
	f, err := w.inner.Open(name)
	return w.file(f, name, err)
}

// OpenReadWrite opens name for reading and writing, unless the wrapper
// fails it.
func (w *wrapFS) OpenReadWrite(name string) (File, error) {
	if err := w.ic.before(OpOpen, name); err != nil {
		return nil, pathErr("open", name, err)
	}
	f, err := w.inner.OpenReadWrite(name)
	return w.file(f, name, err)
}

// Remove removes name, unless the wrapper fails it.
func (w *wrapFS) Remove(name string) error {
	if err := w.ic.before(OpRemove, name); err != nil {
		return pathErr("remove", name, err)
	}
	return w.inner.Remove(name)
}

// Rename renames oldname to newname, unless the wrapper fails it.
func (w *wrapFS) Rename(oldname, newname string) error {
	if err := w.ic.before(OpRename, newname); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return w.inner.Rename(oldname, newname)
}

// Link implements Linker when the wrapped FS does (else the error wraps
// ErrLinkUnsupported).
func (w *wrapFS) Link(oldname, newname string) error {
	if err := w.ic.before(OpLink, newname); err != nil {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: err}
	}
	return Link(w.inner, oldname, newname)
}

// MkdirAll creates dir and its parents, unless the wrapper fails it.
func (w *wrapFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := w.ic.before(OpMkdir, dir); err != nil {
		return pathErr("mkdir", dir, err)
	}
	return w.inner.MkdirAll(dir, perm)
}

// List lists dir, unless the wrapper fails it.
func (w *wrapFS) List(dir string) ([]string, error) {
	if err := w.ic.before(OpList, dir); err != nil {
		return nil, pathErr("open", dir, err)
	}
	return w.inner.List(dir)
}

// Stat describes name, unless the wrapper fails it.
func (w *wrapFS) Stat(name string) (os.FileInfo, error) {
	if err := w.ic.before(OpStat, name); err != nil {
		return nil, pathErr("stat", name, err)
	}
	return w.inner.Stat(name)
}

// Lock locks name, unless the wrapper fails it.
func (w *wrapFS) Lock(name string) (io.Closer, error) {
	if err := w.ic.before(OpLock, name); err != nil {
		return nil, pathErr("lock", name, err)
	}
	return w.inner.Lock(name)
}

// SyncDir syncs dir, unless the wrapper fails or skips it.
func (w *wrapFS) SyncDir(dir string) error {
	switch err := w.ic.before(OpSyncDir, dir); err {
	case nil:
		return w.inner.SyncDir(dir)
	case errSkip:
		return nil
	default:
		return pathErr("sync", dir, err)
	}
}

type wrapFile struct {
	inner File
	name  string
	ic    interceptor
}

func (f *wrapFile) Write(p []byte) (int, error) {
	if err := f.ic.before(OpWrite, f.name); err != nil {
		return 0, pathErr("write", f.name, err)
	}
	k, rerr := f.ic.reserve(f.name, len(p))
	var n int
	var err error
	if k > 0 || rerr == nil {
		n, err = f.inner.Write(p[:k])
	}
	if err == nil && rerr != nil {
		err = pathErr("write", f.name, rerr)
	}
	return n, err
}

func (f *wrapFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.ic.before(OpRead, f.name); err != nil {
		return 0, pathErr("read", f.name, err)
	}
	return f.inner.ReadAt(p, off)
}

func (f *wrapFile) Sync() error {
	switch err := f.ic.before(OpSync, f.name); err {
	case nil:
		return f.inner.Sync()
	case errSkip:
		return nil
	default:
		return pathErr("sync", f.name, err)
	}
}

func (f *wrapFile) Size() (int64, error) {
	if err := f.ic.before(OpStat, f.name); err != nil {
		return 0, pathErr("stat", f.name, err)
	}
	return f.inner.Size()
}

func (f *wrapFile) Truncate(size int64) error {
	if err := f.ic.before(OpTruncate, f.name); err != nil {
		return pathErr("truncate", f.name, err)
	}
	return f.inner.Truncate(size)
}

// Close closes the inner file even when it injects an error: like close(2),
// a failed Close still releases the descriptor.
func (f *wrapFile) Close() error {
	ierr := f.ic.before(OpClose, f.name)
	err := f.inner.Close()
	if ierr != nil {
		return pathErr("close", f.name, ierr)
	}
	return err
}
